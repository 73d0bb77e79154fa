/* squarefree/mutex.h: a 32-bit mutual-exclusion lock.
 *
 * What it is for: protecting shared state, as pthread_mutex_t does, but
 * - four bytes, zero-initialised, no destructor needed, no heap;
 * - the uncontended lock+unlock is two inline atomic operations;
 * - when contended it spins briefly, then sleeps in the kernel (never
 *   polls), and wakes sleepers one at a time (never a thundering herd);
 * - it is eventually fair: a thread that has slept on it for more than about
 *   a millisecond is handed the lock directly, so barging threads cannot
 *   starve it.
 *
 *     static sqf_mutex mu = SQF_MUTEX_INIT;
 *     static long counter;
 *
 *     void bump(void) {
 *         sqf_mutex_lock(&mu);
 *         counter++;
 *         sqf_mutex_unlock(&mu);
 *     }
 *
 * Errors (every function returns 0 or one of these, and a failed call
 * changes nothing):
 * - EINVAL: a NULL mutex, or flags other than SQF_PRIVATE/SQF_SHARED.
 * - ENOTSUP: SQF_SHARED with a wait backend that cannot share (portable).
 * - EBUSY: trylock found the mutex held, or free but reserved for a starving
 *   sleeper (see Fairness); destroy found it held.
 * - ETIMEDOUT: timedlock's deadline passed before the lock was taken.  A
 *   deadline already past means "try once" (a trylock that waits for
 *   nothing).
 * - EPERM: unlock of a mutex that is not locked.  Ownership is not recorded
 *   (that would cost a thread-id load on every lock), so an unlock by a
 *   thread that does not hold a locked mutex is not detected: it releases
 *   the lock, exactly as with a PTHREAD_MUTEX_NORMAL mutex.
 * The mutex is not recursive: locking it twice from one thread deadlocks.
 *
 * Memory ordering: a successful lock (any form) is an acquire operation and
 * unlock (either form) is a release operation on the mutex: everything the
 * previous holder wrote before unlocking is visible to the next holder after
 * locking.  Failed calls order nothing.
 *
 * Fairness: by default the lock goes to whoever takes it first after an
 * unlock: a running thread may "barge" ahead of sleeping ones.  That is what
 * makes a contended lock fast (nobody waits for a sleeper to be scheduled),
 * but on its own it lets an unlucky thread starve.  So a sleeper that has
 * waited longer than about 1 ms sets STARVING, which switches the lock into
 * hand-off mode: every unlock passes the lock directly to the sleeper the
 * kernel queued first (FIFO among equal priorities), and no arriving thread
 * may take it (trylock returns EBUSY, spinners stop).  Only the thread that
 * set STARVING clears it, when it gets the lock or gives up, so hand-off
 * mode lasts until that thread has been served: it waits about 1 ms plus the
 * critical sections of the sleepers queued ahead of it, never unboundedly.
 * sqf_mutex_unlock_fair() hands off whenever anyone sleeps.  A thread
 * returning from sqf_cond_wait competes with the mutex's sleepers for a
 * hand-off (it cannot be told from them); nothing is lost, but the hand-off
 * may serve it first.
 *
 * Lifetime: zero-initialised memory is a mutex, and destroy is optional.
 * An unlock that hands off (unlock_fair, or hand-off mode) may still touch
 * the lock word for a moment after the next owner has it, when the sleeper
 * it meant to wake had just left the queue.  So free or reuse a mutex's
 * memory only once no thread can still be inside an unlock call on it (for
 * example, after joining the threads that used it), not merely once you
 * hold it.
 *
 * How it waits: a contended locker first spins, re-reading the word with a
 * CPU pause, for a bounded time (SQF_MUTEX_SPIN_NS, tens of microseconds).
 * Spinning pays when the holder is running on another CPU and will release
 * soon: the lock then changes hands in nanoseconds rather than the
 * microseconds of a sleep and a wake-up.  It wastes a CPU when threads
 * outnumber CPUs, so the number of threads spinning at once (on all
 * sqf_mutexes of the process) is capped at half the CPUs the process may
 * use (at least one), there is no spinning at all on one CPU, and a spinner
 * stops once its budget is spent and sleeps.  The holder's lock word tells
 * the unlocker whether anyone sleeps, so an unlock makes a system call only
 * when it has someone to wake.
 *
 * Wake-ups: an unlock wakes at most one sleeper (one FUTEX_WAKE of 1).  n
 * threads contending for the lock cost O(n) wake-ups in total; no operation
 * wakes more threads than can make progress.  sqf_cond_broadcast moves its
 * waiters onto the mutex instead of waking them (see cond.h).
 *
 * Lock word invariants (bit, meaning):
 *   LOCKED   (1<<0)  held.  Set by a lock; cleared only by an unlock that
 *                    does not hand off (or revokes a hand-off nobody took).
 *   PARKED   (1<<1)  a thread may be asleep on the word: an unlock that sees
 *                    it must wake one.  May be stale (set with no sleeper);
 *                    that costs one futile wake-up, never a lost one.  A thread
 *                    that has slept acquires with PARKED set, as it cannot
 *                    know whether others still sleep.
 *   HANDOFF  (1<<2)  only with LOCKED: the lock has been passed to a thread
 *                    that was woken and has not run yet.  Only a thread
 *                    returning from a wake-up may clear it, and so own the lock.
 *   STARVING (1<<3)  a sleeper has waited more than ~1 ms: every unlock hands
 *                    off rather than releasing, and no one may barge.  Set
 *                    and cleared only by that sleeper.
 *   SHARED   (1<<4)  set by sqf_mutex_init(SQF_SHARED) and never changed:
 *                    sleep on a process-shared futex.
 *   Unlocked and idle is 0 (or SHARED); the all-zero initialiser is valid.
 */
#ifndef SQUAREFREE_MUTEX_H
#define SQUAREFREE_MUTEX_H

#include <squarefree/bits/common.h>
#include <squarefree/time.h>

SQF_BEGIN_DECLS

typedef struct sqf_mutex {
    SQF_WORD word; /* see the invariants above; touch only through this API */
} sqf_mutex;

/** A statically initialised, unlocked, process-private mutex (all zero). */
#define SQF_MUTEX_INIT                                                                             \
    {                                                                                              \
        0                                                                                          \
    }

/* Lock word values the inline paths need (the full table is above). */
#define SQF_MUTEX_LOCKED_ 1u
#define SQF_MUTEX_SHARED_ 16u

/** How long a contended locker spins before sleeping, in nanoseconds. */
#define SQF_MUTEX_SPIN_NS 25000

/** Initialise *m unlocked.  flags: SQF_PRIVATE (0) or SQF_SHARED.  Needed
 *  only for SQF_SHARED or to reuse memory; zeroed memory is a valid mutex.
 *  Errors: EINVAL, ENOTSUP. */
SQF_API int sqf_mutex_init(sqf_mutex *m, unsigned flags);

/** Check that *m is unlocked, so that its memory may be reused.
 *  Errors: EINVAL; EBUSY if it is locked (nothing changes). */
SQF_API int sqf_mutex_destroy(sqf_mutex *m);

/* Out-of-line halves of the inline functions below; not for direct use. */
SQF_API int sqf_mutex_lock_slow_(sqf_mutex *m, sqf_deadline deadline);
SQF_API int sqf_mutex_trylock_slow_(sqf_mutex *m);
SQF_API int sqf_mutex_unlock_slow_(sqf_mutex *m, int fair);

/** Release *m, handing it directly to a sleeping waiter if there is one
 *  (FIFO among sleepers), rather than letting a running thread barge in.
 *  Slower than sqf_mutex_unlock; use it where latency fairness matters.
 *  Errors: EINVAL; EPERM if *m is not locked. */
SQF_API int sqf_mutex_unlock_fair(sqf_mutex *m);

#if SQF_INLINE_FAST_PATH

/* One CAS from "unlocked" to "locked"; for a shared mutex a second one,
 * as its idle value is SHARED rather than 0. */
static inline int sqf_mutex_take_(sqf_mutex *m)
{
    uint32_t v = 0;
    return atomic_compare_exchange_strong_explicit(&m->word, &v, SQF_MUTEX_LOCKED_,
                                                   memory_order_acquire, memory_order_relaxed) ||
           (v == SQF_MUTEX_SHARED_ &&
            atomic_compare_exchange_strong_explicit(&m->word, &v, v | SQF_MUTEX_LOCKED_,
                                                    memory_order_acquire, memory_order_relaxed));
}

/** Acquire *m, sleeping as long as it takes.  Errors: EINVAL. */
static inline int sqf_mutex_lock(sqf_mutex *m)
{
    if (SQF_LIKELY(m != NULL) && sqf_mutex_take_(m)) return 0;
    return sqf_mutex_lock_slow_(m, SQF_FOREVER);
}

/** Acquire *m if that needs no waiting.  Errors: EINVAL; EBUSY if held. */
static inline int sqf_mutex_trylock(sqf_mutex *m)
{
    if (SQF_LIKELY(m != NULL) && sqf_mutex_take_(m)) return 0;
    return sqf_mutex_trylock_slow_(m);
}

/** Acquire *m, waiting until the deadline at most.
 *  Errors: EINVAL; ETIMEDOUT (the mutex is then not held). */
static inline int sqf_mutex_timedlock(sqf_mutex *m, sqf_deadline deadline)
{
    if (SQF_LIKELY(m != NULL) && sqf_mutex_take_(m)) return 0;
    return sqf_mutex_lock_slow_(m, deadline);
}

/** Release *m; wakes one sleeper if any sleeps.  Errors: EINVAL; EPERM if
 *  *m is not locked (nothing changes). */
static inline int sqf_mutex_unlock(sqf_mutex *m)
{
    uint32_t v = SQF_MUTEX_LOCKED_;
    if (SQF_LIKELY(m != NULL) &&
        (atomic_compare_exchange_strong_explicit(&m->word, &v, 0, memory_order_release,
                                                 memory_order_relaxed) ||
         (v == (SQF_MUTEX_LOCKED_ | SQF_MUTEX_SHARED_) &&
          atomic_compare_exchange_strong_explicit(&m->word, &v, SQF_MUTEX_SHARED_,
                                                  memory_order_release, memory_order_relaxed))))
        return 0;
    return sqf_mutex_unlock_slow_(m, 0);
}

#else

SQF_API int sqf_mutex_lock(sqf_mutex *m);
SQF_API int sqf_mutex_trylock(sqf_mutex *m);
SQF_API int sqf_mutex_timedlock(sqf_mutex *m, sqf_deadline deadline);
SQF_API int sqf_mutex_unlock(sqf_mutex *m);

#endif

SQF_END_DECLS

#endif
