/* squarefree/cond.h: a condition variable for sqf_mutex.
 *
 * What it is for: sleeping until a predicate over state protected by an
 * sqf_mutex becomes true, as pthread_cond_t does with pthread_mutex_t.
 *
 *     sqf_mutex mu = SQF_MUTEX_INIT;
 *     sqf_cond  cv = SQF_COND_INIT;
 *     int ready;
 *
 *     // waiter                          // setter
 *     sqf_mutex_lock(&mu);               sqf_mutex_lock(&mu);
 *     while (!ready)                     ready = 1;
 *         sqf_cond_wait(&cv, &mu);       sqf_cond_broadcast(&cv);
 *     sqf_mutex_unlock(&mu);             sqf_mutex_unlock(&mu);
 *
 * Requires: the caller of wait holds the mutex, and all threads waiting on
 * one sqf_cond at the same time pass the same mutex.  Signal and broadcast
 * may be called with or without the mutex held; a predicate change must be
 * made under the mutex for a waiter to be guaranteed to see it.
 *
 * Errors (0 or one of these; a failed call changes nothing):
 * - EINVAL: NULL arguments; flags other than SQF_PRIVATE/SQF_SHARED; a
 *   mutex whose sharedness differs from the condition variable's.
 * - ENOTSUP: SQF_SHARED with the portable wait backend.
 * - EPERM: wait with a mutex that is not locked (it does not wait).
 * - ETIMEDOUT: timedwait's deadline passed with no signal received.  The
 *   mutex is held again on return, whatever the result (except EINVAL and
 *   EPERM, where it was never released).
 * - EBUSY: destroy while threads wait.  After a broadcast, waiters count
 *   until they have re-acquired the mutex and returned, so destroy right
 *   after a broadcast may say EBUSY: join or otherwise hear from the
 *   waiters first.
 *
 * Guarantees:
 * - No lost wake-ups: a signal wakes at least one thread that was waiting
 *   when it was called, if there is one; a broadcast wakes every thread
 *   that was waiting when it was called.  A waiter whose deadline passes at
 *   the moment it is signalled either returns 0 (it took the signal) or
 *   ETIMEDOUT (the signal went to another waiter), never both lost.
 * - Wake-ups from nowhere: none.  Wait returns 0 only after a signal or
 *   broadcast: one made since it began, or a signal made just before it
 *   began whose wake-up, still on its way, reached it (signal and broadcast
 *   may be called without the mutex; the signal is then served, not lost).
 *   It may be one meant for another waiter (an event loop's waits on one
 *   word are woken together).  A signal handler, a loop backend's early end
 *   of a sleep, or a broadcast made before the wait began never makes it
 *   return: it sleeps again (a waiter that finds a broadcast's waiters
 *   still to be moved onto the mutex moves them before it sleeps).  Still
 *   wait in a loop on the predicate: a signal does not say it holds.
 * - Stops: a deadline or a token ends the wait with ETIMEDOUT or ECANCELED
 *   only when no signal or broadcast came since it began and no wake-up
 *   reached it; otherwise it returns 0, which cannot lose a signal meant
 *   for it.
 * - Wrap-around: a waiter that is descheduled between releasing the mutex
 *   and sleeping for exactly 2^31 signals may miss one; no other case does.
 *
 * Memory ordering: wait releases the mutex and re-acquires it, with the
 * mutex's orderings; signal and broadcast are release operations and a wait
 * that returns after them is ordered after them, but rely on the mutex for
 * the predicate.
 *
 * Fairness: sleepers are woken in the order they went to sleep (the
 * kernel's FIFO queue), then contend for the mutex as any locker does (see
 * mutex.h: eventual fairness).
 *
 * Wake-ups, and why broadcast has no herd: broadcast wakes ONE waiter.  That
 * waiter, which knows the mutex (a condition variable stores no pointer, so
 * it can live in shared memory), moves every other sleeper from the
 * condition variable's queue onto the mutex's queue in one FUTEX_CMP_REQUEUE,
 * and marks the mutex PARKED.  From there each unlock wakes exactly one of
 * them, which is the most that can make progress anyway.  So a broadcast to
 * n waiters costs the broadcaster one wake-up, and the whole batch O(n)
 * wake-ups in total, never n threads at once fighting for one mutex.
 * Signal and broadcast make no system call when nobody waits.
 *
 * Processes: with SQF_SHARED (on both the cond and its mutex) it works
 * between processes in shared memory.  A process killed while it waits
 * stays counted in `waiters`: later signals and broadcasts still reach the
 * live waiters (the kernel drops the dead one from its queue), but each may
 * make one futile wake-up call, and destroy returns EBUSY until the cond is
 * initialised again (once no live process uses it).  If it dies after being
 * woken but before it has the mutex back, see the mutex's note on a holder
 * that dies.
 */
#ifndef SQUAREFREE_COND_H
#define SQUAREFREE_COND_H

#include <squarefree/bits/common.h>
#include <squarefree/mutex.h>
#include <squarefree/time.h>

SQF_BEGIN_DECLS

typedef struct sqf_cond {
    SQF_WORD seq;
    SQF_WORD waiters;
} sqf_cond;

/** A statically initialised, process-private condition variable (all zero). */
#define SQF_COND_INIT                                                                              \
    {                                                                                              \
        0, 0                                                                                       \
    }

/** Initialise *c.  flags: SQF_PRIVATE (0) or SQF_SHARED; a shared condition
 *  variable must be used with a shared mutex.  Errors: EINVAL, ENOTSUP. */
SQF_API int sqf_cond_init(sqf_cond *c, unsigned flags);

/** Check that nobody waits on *c, so that its memory may be reused.
 *  Errors: EINVAL; EBUSY while threads wait. */
SQF_API int sqf_cond_destroy(sqf_cond *c);

/** Release m, sleep until signalled, re-acquire m.  Returns 0 after a
 *  signal or broadcast made since it began (see above).
 *  Errors: EINVAL, EPERM. */
SQF_API int sqf_cond_wait(sqf_cond *c, sqf_mutex *m);

/** As sqf_cond_wait, but gives up at the deadline with ETIMEDOUT (m held).
 *  Errors: EINVAL, EPERM, ETIMEDOUT. */
SQF_API int sqf_cond_timedwait(sqf_cond *c, sqf_mutex *m, sqf_deadline deadline);

struct sqf_cancel;

/** As sqf_cond_timedwait, and gives up with ECANCELED (m held again, no
 *  signal consumed) when `cancel` (may be NULL) or an ancestor is cancelled
 *  or past its deadline (see cancel.h).  A cancelled token does not stop
 *  the wait from releasing and re-acquiring m, nor a waiter that a
 *  broadcast moved onto m from taking m when it is handed to it.
 *  Errors: EINVAL, EPERM, ETIMEDOUT, ECANCELED, ENOTSUP. */
SQF_API int sqf_cond_wait_until(sqf_cond *c, sqf_mutex *m, sqf_deadline deadline,
                                const struct sqf_cancel *cancel);

/** Wake at least one waiter, if any waits.  Errors: EINVAL. */
SQF_API int sqf_cond_signal(sqf_cond *c);

/** Wake every current waiter: one now, the rest through the mutex.
 *  Errors: EINVAL. */
SQF_API int sqf_cond_broadcast(sqf_cond *c);

SQF_END_DECLS

#endif
