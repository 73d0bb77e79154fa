/* squarefree/sem.h: a counting semaphore, optionally bounded.
 *
 * What it is for: handing out a limited number of permits (a pool of N
 * connections, the free and the filled slots of a bounded queue), or
 * counting events that producers signal to consumers, as POSIX sem_t does,
 * but
 * - sixteen bytes, zero-initialised, no destructor needed, no heap;
 * - an acquire that finds a permit is an inline load and one
 *   compare-and-swap; a release when nobody waits is two inline loads and
 *   one compare-and-swap, and makes no system call;
 * - a release stops touching the semaphore once its permits are published,
 *   so the thread that takes the last permit may destroy and free it at
 *   once, even while the release is still returning (see Lifetime);
 * - release(n) adds n permits at once and wakes up to n sleepers with one
 *   kernel call;
 * - an optional bound: a release that would push the value past it fails
 *   with EOVERFLOW and changes nothing (a double release shows up as an
 *   error instead of a silently larger pool).
 *
 *     static sqf_sem slots;   // at start-up: sqf_sem_init(&slots, 4, 4, SQF_PRIVATE);
 *
 *     void use_device(void) {          // at most four threads in here at once
 *         sqf_sem_acquire(&slots);
 *         talk_to_device();
 *         sqf_sem_release(&slots, 1);
 *     }
 *
 * Errors (every function returns 0 or one of these, and a failed call
 * changes nothing: no permit and no wake-up is lost):
 * - sqf_sem_init: EINVAL for a NULL semaphore, flags other than
 *   SQF_PRIVATE/SQF_SHARED, max > SQF_SEM_VALUE_MAX, or value > max (with
 *   max == 0, the bound, SQF_SEM_VALUE_MAX); ENOTSUP for SQF_SHARED with a
 *   wait backend that cannot share (portable).
 * - sqf_sem_destroy: EINVAL; EBUSY while a thread is inside a blocking
 *   acquire (asleep or about to be).
 * - sqf_sem_acquire: EINVAL.
 * - sqf_sem_tryacquire: EINVAL; EBUSY when the value is 0 (the library's
 *   rule: a try that would have to wait returns EBUSY).  It never fails
 *   merely because another thread changed the value at the same moment.
 * - sqf_sem_timedacquire: EINVAL; ETIMEDOUT when the deadline passed and no
 *   permit was taken.  A deadline already past means "try once" (it never
 *   sleeps).  A call whose deadline passes just as a permit arrives may
 *   take the permit and return 0 slightly after the deadline rather than
 *   leave the permit to nobody.
 * - sqf_sem_tryacquire_n: EINVAL for NULL pointers or n == 0; EBUSY when
 *   the value is 0.
 * - sqf_sem_release: EINVAL for NULL, n == 0 or n > SQF_SEM_VALUE_MAX;
 *   EOVERFLOW when value + n would exceed the bound.
 * - sqf_sem_getvalue, sqf_sem_getwaiters: EINVAL for either pointer NULL.
 *
 * Memory ordering: release is a release operation and a successful acquire
 * (any form) is an acquire operation on the semaphore: everything a thread
 * wrote before sqf_sem_release happens-before everything done after the
 * acquire that takes one of those permits (indeed after any acquire that
 * succeeds later, since every change of the value is a read-modify-write).
 * Failed calls order nothing, and sqf_sem_getvalue is a snapshot that
 * orders nothing (the value may have changed by the time it returns).
 *
 * Fairness: none beyond what follows, and no starvation guarantee.  A
 * permit goes to whichever thread takes it first: a running thread may
 * "barge" ahead of sleeping ones.  That keeps permits in use without
 * waiting for a sleeper to be scheduled.  Sleepers are woken in the order
 * they went to sleep (the kernel's FIFO queue; the portable backend keeps
 * FIFO too), but a woken sleeper that finds its permit already taken by a
 * barger sleeps again, at the back of the queue.  So under sustained
 * contention one thread may, in principle, wait indefinitely.  Unlike
 * sqf_mutex there is no direct hand-off to a starving waiter; build FIFO
 * admission on top (a ticket per waiter) if you need it.
 *
 * How it waits: an acquire that finds the value 0 does not spin; it counts
 * itself in `waiters` (in the same word as the value) and sleeps on the
 * value until it is non-zero.
 *
 * Wake-ups: release(n) makes at most one kernel call, a FUTEX_WAKE of
 * min(n, waiters - value), so handing n permits to n sleepers costs the
 * releaser O(1) system calls and the n threads O(n) wake-ups in total; it
 * never wakes more threads than it adds permits.  A release that finds
 * nobody in a blocking acquire makes no system call, nor does one that
 * finds at least as many permits as waiters (those waiters were woken for
 * the permits already there, and take them when they run), nor an acquire
 * that finds a permit.  A woken thread that loses its permit to a barger goes back to
 * sleep; each permit causes at most one such futile wake-up.  A waiter
 * leaves (timed out, or with a permit) in the same atomic step in which it
 * last looks at the value, so it can never leave a permit behind that its
 * wake-up was meant for.
 *
 * Lifetime: sqf_sem_release touches the semaphore's memory only up to the
 * atomic step that publishes its permits.  After that it only hands the
 * value's address to the wake call (FUTEX_WAKE), which does not read or
 * write the memory.  So the memory may be freed or reused (after
 * sqf_sem_destroy, which is optional, returned 0) as soon as
 * - no other call on it is running: acquire, tryacquire, timedacquire,
 *   getvalue and destroy touch it until they return, and so does a release
 *   that fails (it publishes nothing); and
 * - every release still running on it has published its permits (you
 *   know that of a release once you have taken one of its permits).
 * For example, a thread that waits in sqf_sem_acquire for a single release
 * may destroy and free the semaphore as soon as its acquire returns, even
 * though the releasing thread may still be inside sqf_sem_release.  (POSIX
 * requires this of sem_destroy; glibc bug 12674 was this bug.)  The late
 * wake-up goes to whatever uses the address by then.  It finds nobody (on
 * unmapped memory, FUTEX_WAKE fails harmlessly), or it spuriously wakes a
 * thread waiting on a futex now at that address; every squarefree
 * primitive tolerates that, as every futex user must.  With the portable
 * backend it only hashes the address.
 *
 * Processes: with SQF_SHARED it works between processes in shared memory,
 * with the same wake-up costs.  A process killed while it sleeps in an
 * acquire takes no permit: releases after its death reach the live
 * sleepers (the kernel drops the dead one from its queue).  It stays counted
 * in `waiters`, so each release may make one futile wake-up call, and
 * destroy returns EBUSY until the semaphore is initialised again (once no
 * live process uses it).  A process that dies holding permits does not
 * give them back: the semaphore does not know who holds what.
 */
#ifndef SQUAREFREE_SEM_H
#define SQUAREFREE_SEM_H

#include <squarefree/bits/common.h>
#include <squarefree/time.h>

SQF_BEGIN_DECLS

/* The state word is 8-byte aligned in C and C++ alike (a plain uint64_t is
 * only 4-byte aligned in some 32-bit ABIs), so that both see one layout and
 * the 64-bit atomics are naturally aligned. */
#if defined(__cplusplus)
#define SQF_SEM_ALIGN_ alignas(8)
#else
#define SQF_SEM_ALIGN_ _Alignas(8)
#endif

typedef struct sqf_sem {
    SQF_SEM_ALIGN_ SQF_WORD64 state; /* its layout is internal; touch it only through this API */
    SQF_WORD max;
} sqf_sem;

/** A statically initialised semaphore: value 0, unbounded, process-private
 *  (all zero). */
#define SQF_SEM_INIT                                                                               \
    {                                                                                              \
        0, 0                                                                                       \
    }

/** The largest value any semaphore may hold, and the bound of an unbounded one. */
#define SQF_SEM_VALUE_MAX 0x7fffffffu

/** Initialise *s with `value` permits and the bound `max` (0: unbounded,
 *  that is SQF_SEM_VALUE_MAX).  flags: SQF_PRIVATE (0) or SQF_SHARED.
 *  Needed only for a non-zero value, a bound, SQF_SHARED or to reuse
 *  memory; zeroed memory is a valid semaphore.  Must not race with any other
 *  call on *s.  Errors: EINVAL, ENOTSUP. */
SQF_API int sqf_sem_init(sqf_sem *s, unsigned value, unsigned max, unsigned flags);

/** Check that no thread waits on *s, so that its memory may be reused (see
 *  "Lifetime" above: a release that has published its permits does not
 *  count).  Errors: EINVAL; EBUSY while threads wait (nothing changes). */
SQF_API int sqf_sem_destroy(sqf_sem *s);

/** Store the number of permits available now in *value.  Errors: EINVAL. */
SQF_API int sqf_sem_getvalue(sqf_sem *s, unsigned *value);

/** Store the number of threads and loop ops inside an acquire that found
 *  no permit (asleep, or about to sleep, or woken and not yet out) in
 *  *waiters: a snapshot, as sqf_sem_getvalue.  Errors: EINVAL. */
SQF_API int sqf_sem_getwaiters(sqf_sem *s, unsigned *waiters);

/** Take up to n of the permits available now, without waiting, in one
 *  atomic step; *taken is how many (min(n, value)).  For a caller that
 *  withdraws permits from circulation (a pool that shrinks), at a cost
 *  independent of n.  Errors: EINVAL (NULL, or n == 0); EBUSY if the value
 *  is 0 (*taken is then 0).  Memory ordering: as sqf_sem_tryacquire. */
SQF_API int sqf_sem_tryacquire_n(sqf_sem *s, unsigned n, unsigned *taken);

/* Out-of-line halves of the inline functions below; not for direct use. */
struct sqf_cancel;

/** As sqf_sem_timedacquire, and gives up with ECANCELED, taking no permit,
 *  when `cancel` (may be NULL) or an ancestor is cancelled or past its
 *  deadline (see cancel.h).  A permit that is there is taken (returns 0)
 *  whatever the token says.  Errors: EINVAL, ETIMEDOUT, ECANCELED, ENOTSUP. */
SQF_API int sqf_sem_acquire_until(sqf_sem *s, sqf_deadline deadline,
                                  const struct sqf_cancel *cancel);

SQF_API int sqf_sem_acquire_slow_(sqf_sem *s, sqf_deadline deadline);
SQF_API int sqf_sem_tryacquire_slow_(sqf_sem *s);
SQF_API int sqf_sem_release_slow_(sqf_sem *s, unsigned n);
/* Wakes sleepers on s's value; reads nothing of *s (it may be gone). */
SQF_API void sqf_sem_wake_(sqf_sem *s, unsigned nwake, int shared);

#if SQF_INLINE_FAST_PATH

/* One attempt at taking a permit: a load and, if there is a permit, one
 * compare-and-swap that takes 1 from the value (the low 32 bits of the
 * state word).  Failure (value 0, or a lost race) goes to the slow path,
 * which retries while the value is non-zero. */
static inline int sqf_sem_take_inline_(sqf_sem *s)
{
    /* relaxed: a hint; the CAS below re-reads, and on failure the slow path re-reads */
    uint64_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
    /* acquire: pairs with the release CAS adding permits in sqf_sem_release(_slow_) */
    return (uint32_t)st != 0 &&
           atomic_compare_exchange_strong_explicit(&s->state, &st, st - 1, memory_order_acquire,
                                                   memory_order_relaxed);
}

/** Take a permit, sleeping as long as it takes.  Errors: EINVAL. */
static inline int sqf_sem_acquire(sqf_sem *s)
{
    if (SQF_LIKELY(s != NULL) && sqf_sem_take_inline_(s)) return 0;
    return sqf_sem_acquire_slow_(s, SQF_FOREVER);
}

/** Take a permit if one is available now.  Errors: EINVAL; EBUSY if the
 *  value is 0. */
static inline int sqf_sem_tryacquire(sqf_sem *s)
{
    if (SQF_LIKELY(s != NULL) && sqf_sem_take_inline_(s)) return 0;
    return sqf_sem_tryacquire_slow_(s);
}

/** Take a permit, waiting until the deadline at most.
 *  Errors: EINVAL; ETIMEDOUT (no permit taken). */
static inline int sqf_sem_timedacquire(sqf_sem *s, sqf_deadline deadline)
{
    if (SQF_LIKELY(s != NULL) && sqf_sem_take_inline_(s)) return 0;
    return sqf_sem_acquire_slow_(s, deadline);
}

/** Add n permits and wake up to n sleepers (one kernel call; none if nobody
 *  waits).  Errors: EINVAL; EOVERFLOW if value + n would exceed the bound
 *  (nothing changes).  Once its permits are published it no longer touches
 *  *s (see Lifetime). */
static inline int sqf_sem_release(sqf_sem *s, unsigned n)
{
    if (SQF_LIKELY(s != NULL)) {
        /* Everything needed after the compare-and-swap is read before it:
         * afterwards *s may already be freed. */
        /* relaxed: max is written only by sqf_sem_init; no data rides on it */
        uint32_t m = atomic_load_explicit(&s->max, memory_order_relaxed);
        uint32_t bound = m & SQF_SEM_VALUE_MAX;
        if (bound == 0) bound = SQF_SEM_VALUE_MAX;
        /* relaxed: a hint; the CAS below re-reads, and on failure the slow path re-reads */
        uint64_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
        uint32_t v = (uint32_t)st;
        /* n - 1 < bound: 1 <= n <= bound, so bound - n cannot wrap; and
         * v + n <= bound < 2^31 cannot carry into the waiter count. */
        /* release: pairs with the ACQ CAS taking a permit (sqf_sem_take_inline_, sem.c's take) */
        if (SQF_LIKELY(n - 1u < bound && v <= bound - n) &&
            atomic_compare_exchange_strong_explicit(&s->state, &st, st + n, memory_order_release,
                                                    memory_order_relaxed)) {
            /* The waiters that the permits already there do not cover, as
             * of our add: see sem.c. */
            uint32_t w = (uint32_t)(st >> 32);
            if (SQF_LIKELY(w <= v)) return 0;
            sqf_sem_wake_(s, n < w - v ? n : w - v, (int)(m >> 31)); /* only the address s */
            return 0;
        }
    }
    return sqf_sem_release_slow_(s, n);
}

#else

SQF_API int sqf_sem_acquire(sqf_sem *s);
SQF_API int sqf_sem_tryacquire(sqf_sem *s);
SQF_API int sqf_sem_timedacquire(sqf_sem *s, sqf_deadline deadline);
SQF_API int sqf_sem_release(sqf_sem *s, unsigned n);

#endif

SQF_END_DECLS

#endif
