/* squarefree/latch.h: a single-use countdown latch (C++20 std::latch), plus
 * abort.
 *
 * What it is for: "wait until n things have happened" for any number of
 * threads: n workers have started, n parts of a job are done, n threads have
 * reached a starting line.  The latch opens when its count reaches zero and
 * stays open; it cannot be re-armed (use sqf_barrier for phases).
 * - eight bytes, no destructor needed, no heap; zeroed memory is a latch
 *   that is already open (count 0);
 * - checking an open latch costs one acquire load (inline);
 * - the count_down that opens the latch wakes every sleeper with ONE kernel
 *   call, and sleepers wake straight into running code (there is no mutex to
 *   re-acquire), so n waiters cost O(n) in total and no woken thread waits
 *   for another (the cure for the square problem);
 * - sqf_latch_abort breaks the latch instead: every current and future
 *   waiter returns EPIPE, so one failed worker cannot strand the others.
 *
 *     static sqf_latch started;                  // sqf_latch_init(&started, NWORKERS, 0)
 *
 *     // each of NWORKERS workers                // the coordinator
 *     set_up_my_part();                          sqf_latch_wait(&started);
 *     sqf_latch_count_down(&started, 1);         use_all_parts();   // all set up
 *     work();
 *
 * or, as a starting line every thread waits at:
 *
 *     if (sqf_latch_arrive_and_wait(&line, 1) == EPIPE) return;   // aborted
 *
 * Outcome: a latch ends either OPEN (its count reached zero) or BROKEN
 * (sqf_latch_abort was called first), whichever happens first, and never
 * changes afterwards.  So every wait on one latch reports the same outcome:
 * all return 0, or all return EPIPE (or ETIMEDOUT, for time-outs).  Aborting
 * an open latch changes nothing.
 *
 * Requires: sqf_latch_init must not run while other threads use the latch.
 *
 * Lifetime: a count_down or abort is done with the latch as soon as its CAS
 * on the state word has succeeded: the one that opens (or breaks) the latch
 * then hands only the word's address to the wake-up call.  So once the latch
 * is open, only threads inside a wait still use it, and when every waiter
 * has returned its memory may be destroyed and freed, even though the
 * opener may not have returned yet: the usual "wait for the workers, then
 * return" with a latch on the stack is safe.  (test_latch holds the opener
 * just after its CAS while a waiter frees the memory.)  destroy returns 0
 * exactly when no thread is inside a wait.  Calls that come after the
 * opening (a count_down that fails with EINVAL, an abort that changes
 * nothing) still read the word, so none may race with the freeing.
 *
 * Errors (every function returns 0 or one of these; a failed call changes
 * nothing):
 * - EINVAL: NULL; flags other than SQF_PRIVATE/SQF_SHARED; init with a count
 *   above SQF_LATCH_MAX; count_down (or arrive_and_wait) with n == 0 or n
 *   greater than the current count (the count is left unchanged, and
 *   arrive_and_wait then does not wait).
 * - ENOTSUP: SQF_SHARED with the portable wait backend.
 * - EBUSY: try_wait found the latch neither open nor broken; destroy while
 *   threads wait (it counts them exactly).
 * - ETIMEDOUT: timedwait's deadline passed first.  A deadline already past
 *   means "check once": 0 if open, EPIPE if broken, else ETIMEDOUT at once.
 * - EPIPE: the latch is broken (the library-wide code for a broken latch or
 *   barrier): every wait, try_wait, count_down and arrive_and_wait returns it
 *   once sqf_latch_abort has broken the latch, including waits that were
 *   asleep.  A count_down on a broken latch changes nothing.
 *   An aborted latch stays broken until sqf_latch_init.
 *
 * Memory ordering: as std::latch.  count_down (also inside arrive_and_wait)
 * is a release operation and every wait, timedwait, try_wait or
 * arrive_and_wait that returns 0 is an acquire operation: everything written
 * before every count_down happens-before every return of 0.  abort is a
 * release operation and every call that returns EPIPE an acquire operation
 * synchronising with it (so a reason stored before the abort is visible).
 * EINVAL, EBUSY and ETIMEDOUT order nothing.
 *
 * Fairness: opening releases every waiter at once; there is no order among
 * them.
 *
 * Wake-ups: the count_down that reaches zero, and an abort, wake all sleepers
 * with one FUTEX_WAKE (portable backend: one call that signals each in turn),
 * and make no system call when nobody sleeps; other count_downs never make
 * one.  The waker never waits for a woken thread, and no woken thread waits
 * for another: n waiters cost the waker O(1) kernel calls and the whole
 * batch O(n).
 *
 * Processes: with SQF_SHARED it works between processes in shared memory;
 * the opening count_down wakes every waiting process with one call.  A
 * process killed while it waits stays counted in `waiters` (destroy returns
 * EBUSY until the latch is initialised again, once no live process uses
 * it); opening still wakes every live waiter.  A process that dies before
 * its count_down leaves the latch closed: abort it when you learn that.
 */
#ifndef SQUAREFREE_LATCH_H
#define SQUAREFREE_LATCH_H

#include <squarefree/bits/common.h>
#include <squarefree/bits/fastpath.h>
#include <squarefree/time.h>

SQF_BEGIN_DECLS

typedef struct sqf_latch {
    SQF_WORD word;    /* its layout is internal; touch it only through this API */
    SQF_WORD waiters; /* threads inside a wait */
} sqf_latch;

/** A statically initialised latch with count 0 (already open), private. */
#define SQF_LATCH_INIT                                                                             \
    {                                                                                              \
        0, 0                                                                                       \
    }

/** The largest count a latch can hold: 2^28 - 1. */
#define SQF_LATCH_MAX 0x0FFFFFFFu

/** Initialise *l with `count` (0..SQF_LATCH_MAX; 0 = open at once).
 *  flags: SQF_PRIVATE (0) or SQF_SHARED.  Errors: EINVAL, ENOTSUP. */
SQF_API int sqf_latch_init(sqf_latch *l, unsigned count, unsigned flags);

/** Check that nobody waits on *l.  Errors: EINVAL; EBUSY while threads wait. */
SQF_API int sqf_latch_destroy(sqf_latch *l);

/** Decrease the count by n (>= 1); the call that brings it to zero opens the
 *  latch and wakes every waiter.  Does not wait.
 *  Errors: EINVAL (n == 0, or n > the current count: nothing changes);
 *  EPIPE (broken: nothing changes). */
SQF_API int sqf_latch_count_down(sqf_latch *l, unsigned n);

/** sqf_latch_count_down(l, n), then sqf_latch_wait(l); if the count_down
 *  fails, its error is returned at once and nothing changes.
 *  Errors: EINVAL, EPIPE. */
SQF_API int sqf_latch_arrive_and_wait(sqf_latch *l, unsigned n);

/** Break *l unless it is open: every thread waiting on it, and every later
 *  wait and count_down, returns EPIPE.  Aborting an open or already broken
 *  latch changes nothing (and returns 0: use try_wait to learn which).
 *  Errors: EINVAL. */
SQF_API int sqf_latch_abort(sqf_latch *l);

/* Out-of-line half of the inline functions below; not for direct use. */
struct sqf_cancel;

/** As sqf_latch_timedwait, and gives up with ECANCELED when `cancel` (may be
 *  NULL) or an ancestor is cancelled or past its deadline (see cancel.h); an
 *  open or broken latch answers at once whatever the token says.
 *  Errors: EINVAL, ETIMEDOUT, EPIPE, ECANCELED, ENOTSUP. */
SQF_API int sqf_latch_wait_until(sqf_latch *l, sqf_deadline deadline,
                                 const struct sqf_cancel *cancel);

SQF_API int sqf_latch_wait_slow_(sqf_latch *l, sqf_deadline deadline);

#if SQF_INLINE_FAST_PATH

/** 0 if *l is open, EBUSY if not yet, EPIPE if broken (one acquire load).
 *  Errors: EINVAL. */
static inline int sqf_latch_try_wait(sqf_latch *l)
{
    if (SQF_UNLIKELY(l == NULL)) return EINVAL;
    /* acquire: pairs with latch.c's count_down AR CAS and sqf_latch_abort's REL CAS */
    uint32_t v = atomic_load_explicit(&l->word, memory_order_acquire);
    if (SQF_UNLIKELY(v & SQF_LATCH_BROKEN_)) return EPIPE;
    return (v >> SQF_LATCH_COUNT_SHIFT_) != 0 ? EBUSY : 0;
}

/* Open is the word 0 (or SHARED): one acquire load and one compare. */
static inline int sqf_latch_open_(sqf_latch *l)
{
    /* acquire: pairs with latch.c's count_down AR CAS and sqf_latch_abort's REL CAS */
    return (atomic_load_explicit(&l->word, memory_order_acquire) & ~SQF_LATCH_SHARED_) == 0;
}

/** Return once *l is open (at once if it is).  Errors: EINVAL, EPIPE. */
static inline int sqf_latch_wait(sqf_latch *l)
{
    if (SQF_LIKELY(l != NULL) && SQF_LIKELY(sqf_latch_open_(l))) return 0;
    return sqf_latch_wait_slow_(l, SQF_FOREVER);
}

/** As sqf_latch_wait, giving up at the deadline.
 *  Errors: EINVAL, EPIPE, ETIMEDOUT. */
static inline int sqf_latch_timedwait(sqf_latch *l, sqf_deadline deadline)
{
    if (SQF_LIKELY(l != NULL) && SQF_LIKELY(sqf_latch_open_(l))) return 0;
    return sqf_latch_wait_slow_(l, deadline);
}

#else

SQF_API int sqf_latch_try_wait(sqf_latch *l);
SQF_API int sqf_latch_wait(sqf_latch *l);
SQF_API int sqf_latch_timedwait(sqf_latch *l, sqf_deadline deadline);

#endif

SQF_END_DECLS

#endif
