/* squarefree/barrier.h: a cyclic barrier for a fixed number of parties.
 *
 * What it is for: lock-step phases.  N threads each do a part of phase k,
 * wait at the barrier until all N have arrived, and only then start phase
 * k+1 (as pthread_barrier_t, C++20 std::barrier and Java's CyclicBarrier).
 * - sixteen bytes, no destructor needed, no heap, no pointer stored (so it
 *   may live in memory shared between processes);
 * - each wait tells its arrival index (0 first .. N-1 last); the last to
 *   arrive is the "serial thread", and with sqf_barrier_wait_fn it runs a
 *   completion function once per phase, after every party has arrived and
 *   before any is released;
 * - the last arrival releases the whole phase with ONE kernel call; woken
 *   threads wake straight into running code (no mutex to re-acquire), so a
 *   phase of N parties costs O(N) in total, and no woken thread waits for
 *   another (the cure for the square problem);
 * - sqf_barrier_abort breaks the barrier (every waiter gets EPIPE) so that
 *   one failed party cannot strand the rest; sqf_barrier_reset repairs it.
 *
 *     static sqf_barrier step = SQF_BARRIER_INIT(NTHREADS);
 *
 *     static void swap_grids(void *arg) { swap(arg); }   // runs once per step
 *
 *     // each of NTHREADS threads
 *     for (int i = 0; i < steps; i++) {
 *         compute_my_rows(cur, next);
 *         if (sqf_barrier_wait_fn(&step, swap_grids, grids, NULL) != 0) break;   // EPIPE
 *     }
 *
 * Requires: exactly `parties` threads wait in each phase, each at most once
 * (as with every barrier, an extra thread joins phases in an unspecified
 * way; one that comes while the phase's completion runs waits to arrive in
 * the next phase).  The completion function must not wait on the same
 * barrier (it would wait for itself: deadlock); it may abort it.  It runs
 * in the last arriver's thread, so give every party the same completion:
 * the last arriver's is the one that runs (a plain sqf_barrier_wait by the
 * last arriver runs none).  sqf_barrier_init must not run while other
 * threads use the barrier, and its memory may be reused once no thread is
 * inside a call on it (destroy returns 0 exactly then).  The thread that
 * releases a phase, and a thread whose time-out breaks it, touch the
 * barrier no more once they wake the others (only the release word's
 * address goes to the wake-up call).
 *
 * Time-outs break the barrier (as in Java's CyclicBarrier).  A thread whose
 * deadline passes before its phase is released does not silently withdraw
 * its arrival (the phase would then complete with a party missing, or
 * never): it breaks the barrier exactly as sqf_barrier_abort does, and
 * returns ETIMEDOUT; every other thread of the phase returns EPIPE, and so
 * does every later wait until sqf_barrier_reset.  This includes a deadline
 * that passes while the completion function runs: the phase is released only
 * when the completion returns, so the completion's thread then returns
 * EPIPE too, although its completion ran.  A deadline already past still
 * arrives: the last arriver releases the phase and returns 0; any other
 * breaks the barrier at once and returns ETIMEDOUT.  (An extra thread that
 * times out while waiting for a full phase to end has not arrived, and just
 * returns ETIMEDOUT.)
 *
 * Errors (every function returns 0 or one of these; a failed call changes
 * nothing, except that a failing wait or timedwait may break the barrier as
 * described above):
 * - EINVAL: NULL; flags other than SQF_PRIVATE/SQF_SHARED; init with
 *   parties 0 or above SQF_BARRIER_MAX; a wait on a barrier with such a
 *   party count (zeroed memory has 0 parties: call init first, or use
 *   SQF_BARRIER_INIT).
 * - ENOTSUP: SQF_SHARED with the portable wait backend.
 * - ETIMEDOUT: timedwait's deadline passed before the phase was released
 *   (the barrier is now broken).
 * - EPIPE: the barrier is broken (the library-wide code for a broken latch
 *   or barrier): by sqf_barrier_abort or by another thread's time-out, before
 *   this thread's phase was released.  Every wait returns EPIPE at once until
 *   sqf_barrier_reset.  *index is then not written.
 * - EBUSY: destroy or reset while a thread is inside a wait on the barrier
 *   (asleep, woken but not yet returned, or running the completion).
 *
 * Memory ordering: as std::barrier.  Everything each party wrote before its
 * arrival in a phase happens-before the completion of that phase runs and
 * before every wait of that phase returns 0; everything the completion wrote
 * happens-before every wait of the phase returns 0.  A break (abort or
 * time-out) is a release operation and a wait that returns EPIPE an acquire
 * operation synchronising with it.  EINVAL, EBUSY and ETIMEDOUT order
 * nothing.
 *
 * Processes: with SQF_SHARED it works between processes in shared memory.
 * A party that dies while it waits has arrived: its phase completes when
 * the others arrive (they are released), but it will not arrive in the
 * next phase, which then waits for ever for its last party, or until a
 * deadline breaks it (every waiter gets EPIPE, the one whose deadline
 * passed ETIMEDOUT).  Across processes, wait with a deadline
 * (sqf_barrier_timedwait) or abort the barrier when you learn a party died.
 * The dead party also stays counted in `waiters`, so reset and destroy
 * return EBUSY until the barrier is initialised again (once no live process
 * uses it).  A last arriver (or a breaker) killed between its change of the
 * arrival word and its write of the release word (the two words a phase
 * ends with)
 * leaves the phase released (broken) but its sleepers asleep: a sleeper
 * whose deadline passes then returns 0 (EPIPE), as the arrival word says.
 *
 * Fairness: a phase releases all its parties at once; there is no order
 * among them.  The arrival index is the order in which the arrivals changed
 * the arrival word.
 *
 * Wake-ups: the last arrival of a phase wakes every sleeper with one
 * FUTEX_WAKE (portable backend: one call that signals each in turn) and makes
 * no system call when nobody sleeps; a break does the same.  Every other
 * arrival is one atomic add on the arrival word and, if the phase is not yet
 * released, one sleep on the release word, which arrivals never change (the
 * first sleeper of a phase also sets WAITERS there with one CAS).  A sleep is
 * re-tried at once only if its phase is released or broken just as it goes to
 * sleep.  So a phase of N parties costs the waker O(1) kernel calls, and the
 * whole phase O(N).  Before its first sleep a blocking wait yields its CPU
 * (sched_yield) up to 12 times, looking at the release word after each:
 * with more parties than CPUs the ones still to arrive run meanwhile, and a
 * waiter that sees the release never sleeps.  With nothing else runnable
 * the yields return at once, a few microseconds of CPU in all.  Waits from
 * an event loop never yield.
 */
#ifndef SQUAREFREE_BARRIER_H
#define SQUAREFREE_BARRIER_H

#include <squarefree/bits/common.h>
#include <squarefree/time.h>

SQF_BEGIN_DECLS

typedef struct sqf_barrier {
    SQF_WORD word;    /* the arrival word: its layout is internal; touch it only through this API */
    SQF_WORD parties; /* fixed by init */
    SQF_WORD waiters; /* threads inside a wait */
    SQF_WORD release; /* the release word: sleepers sleep on it */
} sqf_barrier;

/** A statically initialised, process-private barrier for `parties` threads
 *  (1..SQF_BARRIER_MAX). */
#define SQF_BARRIER_INIT(parties)                                                                  \
    {                                                                                              \
        0, (parties), 0, 0                                                                         \
    }

/** The largest party count: 2^20 - 1. */
#define SQF_BARRIER_MAX 0xFFFFFu

/** Initialise *b for `parties` threads (1..SQF_BARRIER_MAX), phase 0, not
 *  broken.  flags: SQF_PRIVATE (0) or SQF_SHARED.  Errors: EINVAL, ENOTSUP. */
SQF_API int sqf_barrier_init(sqf_barrier *b, unsigned parties, unsigned flags);

/** Check that nobody waits on *b.  Errors: EINVAL; EBUSY while a thread is
 *  inside a wait on it. */
SQF_API int sqf_barrier_destroy(sqf_barrier *b);

/** Arrive at *b and sleep until all parties of this phase have arrived.
 *  On 0, *index (if index is not NULL) is this thread's arrival index,
 *  0..parties-1; parties-1 is the last arriver, the serial thread.
 *  Errors: EINVAL, EPIPE. */
SQF_API int sqf_barrier_wait(sqf_barrier *b, unsigned *index);

/** As sqf_barrier_wait, but a deadline that passes before the phase is
 *  released breaks the barrier (see "Time-outs" above).
 *  Errors: EINVAL, EPIPE, ETIMEDOUT. */
SQF_API int sqf_barrier_timedwait(sqf_barrier *b, sqf_deadline deadline, unsigned *index);

/** As sqf_barrier_wait; if this thread is the last to arrive, it first runs
 *  completion(arg) (if completion is not NULL), and only then releases the
 *  phase.  A completion that aborts the barrier breaks this phase: everyone,
 *  this thread included, returns EPIPE.  Errors: EINVAL, EPIPE. */
SQF_API int sqf_barrier_wait_fn(sqf_barrier *b, void (*completion)(void *arg), void *arg,
                                unsigned *index);

struct sqf_cancel;

/** The general form: as sqf_barrier_wait_fn with a deadline (completion may
 *  be NULL), and gives up with ECANCELED when `cancel` (may be NULL) or an
 *  ancestor is cancelled or past its deadline (see cancel.h).  A cancelled
 *  wait breaks the barrier exactly as a timed-out one does: the cancelled
 *  thread returns ECANCELED, the rest of its phase and later waits EPIPE
 *  until sqf_barrier_reset (a withdrawn arrival would let the phase
 *  complete short-handed).  Errors: as sqf_barrier_timedwait, plus
 *  ECANCELED, ENOTSUP. */
SQF_API int sqf_barrier_wait_until(sqf_barrier *b, sqf_deadline deadline,
                                   const struct sqf_cancel *cancel, void (*completion)(void *arg),
                                   void *arg, unsigned *index);

/** Break *b: every thread waiting in the current phase, and every later
 *  wait, returns EPIPE until sqf_barrier_reset.  Aborting a broken barrier
 *  changes nothing.  Errors: EINVAL. */
SQF_API int sqf_barrier_abort(sqf_barrier *b);

/** A snapshot of *b for reports: *parties (if not NULL) gets its number of
 *  parties, *arrived (if not NULL) how many have arrived in the current
 *  phase.  Returns 0, EPIPE if the barrier is broken (*arrived is then 0),
 *  or EINVAL (NULL b).  Another thread may change it at once; it orders
 *  nothing. */
SQF_API int sqf_barrier_state(sqf_barrier *b, unsigned *parties, unsigned *arrived);

/** Make a broken barrier usable again: a fresh phase with no arrivals.  On a
 *  barrier that is not broken it changes nothing.
 *  Errors: EINVAL; EBUSY while a thread is inside a wait on it (including
 *  broken-out threads that have not yet returned: retry once they have). */
SQF_API int sqf_barrier_reset(sqf_barrier *b);

SQF_END_DECLS

#endif
