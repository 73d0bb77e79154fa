/* squarefree/once.h: run a function exactly once, however many threads ask.
 *
 * What it is for: lazy initialisation, as pthread_once_t does, but
 * - four bytes, zero-initialised, no destructor needed, no heap;
 * - the function takes an argument and may fail: a nonzero result is handed
 *   back to its caller and the once goes back to "not run", so a later call
 *   retries (pthread_once has no way to report failure);
 * - once the function has succeeded, every call costs one acquire load
 *   (inline);
 * - callers that arrive while the function runs sleep in the kernel (they
 *   never spin or poll), and ALL of them are woken by one system call when
 *   it finishes, so n callers cost O(n) in total, not O(n^2) (no waiter is
 *   woken one per scheduler pass; see the square problem in the README).
 *
 *     static sqf_once table_once = SQF_ONCE_INIT;
 *     static struct table *table;
 *
 *     static int load_table(void *path) {
 *         table = table_read((const char *)path);
 *         return table ? 0 : errno;             // nonzero: not done, retry later
 *     }
 *
 *     int lookup(const char *key, int *value) {
 *         int e = sqf_once_run(&table_once, load_table, "/etc/table");
 *         if (e) return e;                      // this call ran load_table and it failed
 *         return table_get(table, key, value);  // table is fully visible here
 *     }
 *
 * Requires: fn must not call sqf_once_run or sqf_once_timedrun on the same
 * once, directly or indirectly.  That deadlocks (timedrun: times out), and is
 * not detected, because who runs fn is not recorded (that would cost a
 * thread-id load on every call).  A run of fn that is cancelled
 * (pthread_cancel, fn at a cancellation point) counts as a failed run, as
 * with pthread_once: the once returns to "not run" and a sleeper runs fn.
 * Otherwise fn must return: a thread that exits or longjmps out of fn
 * leaves the once running for good, and every later caller waits
 * forever.  sqf_once_init must not be called while other threads use the
 * once, and its memory may be reused only after every call on it has
 * returned (the caller that ran fn touches the word last).
 *
 * Errors (every function returns 0 or one of these, and a failed call
 * changes nothing):
 * - EINVAL: a NULL once or a NULL fn (even on a once that is done), or
 *   flags other than SQF_PRIVATE/SQF_SHARED.
 * - ENOTSUP: SQF_SHARED with a wait backend that cannot share (portable).
 * - ETIMEDOUT: timedrun's deadline passed while another caller was running
 *   fn.  A deadline already past means "try once": if fn is done the call
 *   returns 0; if nobody runs it the call runs it (and waits for nothing);
 *   if another caller runs it the call returns ETIMEDOUT at once.  A caller
 *   that has started fn always runs it to the end: the deadline bounds the
 *   waiting, never fn itself.  So does a waiter whose deadline passes just
 *   as a run fails and leaves fn to be run again: it finds nobody running
 *   fn, and may be the one that runs it.
 * - Any nonzero value fn returns, unchanged, to the one caller that ran it
 *   (only that caller: the others sleep on and retry).  Give fn results that
 *   cannot be mistaken for the errors above if the caller must tell them
 *   apart (EINVAL and ETIMEDOUT are ambiguous).
 *
 * Failure and retry: when fn returns nonzero the once returns to "not run"
 * and every sleeper is woken.  Then one caller (a woken sleeper or a newly
 * arriving one: which is unspecified) runs fn again, and the others sleep
 * again.  So fn runs at most once at a time, and runs again only after a
 * failure; it succeeds at most once in the once's lifetime (until
 * sqf_once_init resets it).  A caller returns either 0 (fn has succeeded,
 * whoever ran it) or the result of its own failed run of fn, or ETIMEDOUT.
 *
 * Memory ordering: everything fn wrote (and everything its caller wrote
 * before calling) happens-before every return of 0 from sqf_once_run and
 * sqf_once_timedrun, and every sqf_once_done that returns 1: fn's success is
 * a release operation and each of those is an acquire operation on the once.
 * Runs of fn are also ordered among themselves, as critical sections of a
 * mutex are: a failed run, including what it wrote, happens-before the next
 * run.  ETIMEDOUT and EINVAL order nothing.
 *
 * Fairness: who runs fn after a failed run is unspecified; a caller that has
 * waited longest has no priority over one that just arrived.  Each failed run
 * lets every sleeper compete once.  A caller of sqf_once_run therefore
 * returns as soon as any run succeeds, but with a function that keeps failing
 * a particular caller may never be the one that runs it (it keeps sleeping;
 * use sqf_once_timedrun to bound that).
 *
 * Wake-ups: the end of a run wakes every sleeper with one kernel call (one
 * FUTEX_WAKE of all), and makes no system call at all when nobody sleeps.  A
 * sleeper woken by success does nothing but one load and return, so no woken
 * thread waits for another to run: waking n sleepers costs the runner one
 * call and the whole batch O(n).  A failed run also wakes everyone; all but
 * the next runner go back to sleep, so each failure costs O(n) wake-ups.
 * (With the portable wait backend the one call signals each sleeper in turn:
 * O(n) work for the waker, still no scheduler pass per sleeper.)
 *
 * Processes: with SQF_SHARED it works between processes in shared memory.
 * A process killed while it sleeps waiting for another's fn leaves at most
 * a stale SLEEPERS (one futile wake-up).  A process that dies while RUNNING
 * fn leaves the once RUNNING for good: every later call waits for ever, or
 * until its deadline with sqf_once_timedrun (which then returns ETIMEDOUT
 * and runs nothing).
 *
 * Why the once does not recover a dead runner itself: to tell a dead runner
 * from a slow one it would have to record the runner (the kernel's robust
 * list needs its thread id in the word and a list entry beside it: a once
 * of 40 bytes instead of 4, and a thread-id load on every run), and a time-
 * out that let another caller take over would run fn twice at once whenever
 * the runner is merely slow.  And a re-run after a death must know that the
 * last run died midway, to undo what it left half-done, which a once that
 * simply runs fn again cannot say.  The robust mutex says exactly that, so
 * across processes that may be killed, build the once on it:
 *
 *     struct shared { sqf_robust_mutex lock; int done; struct table t; };
 *
 *     int shared_init_once(struct shared *s) {     // s->lock: init SQF_SHARED
 *         int e = sqf_robust_mutex_lock(&s->lock);
 *         if (e == EOWNERDEAD) {                   // the last runner died in it
 *             table_discard_partial(&s->t);
 *             sqf_robust_mutex_consistent(&s->lock);
 *         } else if (e) {
 *             return e;
 *         }
 *         if (!s->done) {                          // first run, or a re-run
 *             e = table_build(&s->t);
 *             if (e == 0) s->done = 1;
 *         }
 *         sqf_robust_mutex_unlock(&s->lock);
 *         return e;
 *     }
 *
 * Every call then takes the lock (an uncontended robust lock and unlock,
 * see robust.h's Costs, against the once's one load).
 * tests/process_robust.c runs this pattern with a runner killed midway.
 */
#ifndef SQUAREFREE_ONCE_H
#define SQUAREFREE_ONCE_H

#include <squarefree/bits/common.h>
#include <squarefree/bits/fastpath.h>
#include <squarefree/time.h>

SQF_BEGIN_DECLS

typedef struct sqf_once {
    SQF_WORD state; /* its layout is internal; touch it only through this API */
} sqf_once;

/** A statically initialised, not-yet-run, process-private once (all zero). */
#define SQF_ONCE_INIT                                                                              \
    {                                                                                              \
        0                                                                                          \
    }

/** Initialise *o as not run.  flags: SQF_PRIVATE (0) or SQF_SHARED.  Needed
 *  only for SQF_SHARED or to reset memory for reuse; zeroed memory is a valid
 *  once.  Errors: EINVAL, ENOTSUP. */
SQF_API int sqf_once_init(sqf_once *o, unsigned flags);

/* The out-of-line half of the inline functions below; not for direct use. */
struct sqf_cancel;

/** As sqf_once_timedrun, and gives up with ECANCELED when `cancel` (may be
 *  NULL) or an ancestor is cancelled or past its deadline (see cancel.h)
 *  while another caller runs fn.  It still runs fn itself if nobody runs
 *  it (cancellation stops waiting, not work), and returns 0 if fn is done.
 *  Errors: as sqf_once_timedrun, plus ECANCELED, ENOTSUP. */
SQF_API int sqf_once_run_until(sqf_once *o, int (*fn)(void *arg), void *arg, sqf_deadline deadline,
                               const struct sqf_cancel *cancel);

SQF_API int sqf_once_run_slow_(sqf_once *o, int (*fn)(void *arg), void *arg, sqf_deadline deadline);

#if SQF_INLINE_FAST_PATH

/** Run fn(arg) unless it has already succeeded on *o; if another caller is
 *  running it, sleep until that run ends (and retry it if it failed).
 *  Returns 0 once fn has succeeded (by this call or any other), or the
 *  nonzero result of this call's own run of fn.  Errors: EINVAL. */
static inline int sqf_once_run(sqf_once *o, int (*fn)(void *arg), void *arg)
{
    /* acquire: pairs with the REL exchange in once.c's finish_run that sets DONE */
    if (SQF_LIKELY(o != NULL) && SQF_LIKELY(fn != NULL) &&
        SQF_LIKELY(atomic_load_explicit(&o->state, memory_order_acquire) & SQF_ONCE_DONE_))
        return 0;
    return sqf_once_run_slow_(o, fn, arg, SQF_FOREVER);
}

/** As sqf_once_run, but waits for another caller's run only until the
 *  deadline.  Errors: EINVAL; ETIMEDOUT (fn is not done, and this call did
 *  not run it). */
static inline int sqf_once_timedrun(sqf_once *o, int (*fn)(void *arg), void *arg,
                                    sqf_deadline deadline)
{
    /* acquire: pairs with the REL exchange in once.c's finish_run that sets DONE */
    if (SQF_LIKELY(o != NULL) && SQF_LIKELY(fn != NULL) &&
        SQF_LIKELY(atomic_load_explicit(&o->state, memory_order_acquire) & SQF_ONCE_DONE_))
        return 0;
    return sqf_once_run_slow_(o, fn, arg, deadline);
}

/** 1 if a run of fn on *o has succeeded (then fn's writes are visible to the
 *  caller), 0 if not or if o is NULL.  Never waits. */
static inline int sqf_once_done(sqf_once *o)
{
    /* acquire: pairs with the REL exchange in once.c's finish_run that sets DONE */
    return o != NULL && (atomic_load_explicit(&o->state, memory_order_acquire) & SQF_ONCE_DONE_);
}

#else

SQF_API int sqf_once_run(sqf_once *o, int (*fn)(void *arg), void *arg);
SQF_API int sqf_once_timedrun(sqf_once *o, int (*fn)(void *arg), void *arg, sqf_deadline deadline);
SQF_API int sqf_once_done(sqf_once *o);

#endif

SQF_END_DECLS

#endif
