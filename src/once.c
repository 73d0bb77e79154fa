/* once.c: sqf_once's slow path: claiming the run, sleeping while another
 * caller runs fn, and waking every sleeper when the run ends.  The state
 * word's invariants are documented below; the comments in the code say why
 * each step is safe.
 *
 * The whole protocol lives in one word, so it needs no Dekker-style fences:
 * a caller about to sleep sets SLEEPERS with a CAS on the very word the
 * runner later exchanges, and the futex check (sleep only while the word
 * still holds RUNNING|SLEEPERS) closes the gap between that CAS and the
 * sleep.  Either the runner's exchange comes first (then the CAS or the
 * futex check fails and the caller re-reads), or it sees SLEEPERS and wakes.
 */

/* State word invariants (bit, meaning):
 *   RUNNING  (1<<0)  a caller is running fn.  Set by the CAS that claims the
 *                    run (only from not-run), cleared only by that caller
 *                    when fn returns.
 *   SLEEPERS (1<<1)  only with RUNNING: a caller may be asleep waiting for
 *                    this run, so its end must wake all sleepers.  Set by a
 *                    caller about to sleep; cleared with RUNNING.  May be
 *                    stale (a sleeper timed out): that costs one futile
 *                    wake-up, never a lost one.
 *   DONE     (1<<2)  fn has returned 0.  Never cleared (except by
 *                    sqf_once_init); never with RUNNING or SLEEPERS.
 *   SHARED   (1<<3)  set by sqf_once_init(SQF_SHARED); every transition
 *                    preserves it: sleep on a process-shared futex.
 *   Not run is 0 (or SHARED); the all-zero initialiser is valid.
 */
#include <squarefree/once.h>

#include <pthread.h>

#include "atomic.h"
#include "waitop.h"

#define ONCE_RUNNING  (1u << 0)
#define ONCE_SLEEPERS (1u << 1)
#define ONCE_DONE     SQF_ONCE_DONE_
#define ONCE_SHARED   (1u << 3)

_Static_assert(ONCE_DONE == (1u << 2), "the header's DONE bit moved");

static inline sqf_word *once_word(sqf_once *o)
{
    return (sqf_word *)&o->state;
}

/* End this caller's run of fn: publish its result and wake every sleeper
 * with one call, if anyone announced that it sleeps. */
static void finish_run(sqf_word *w, uint32_t to)
{
    /* REL: on success, fn's writes happen-before every acquire load that
     * sees DONE (sqf_once_run, sqf_once_done, sqf_once_run_step_); on
     * failure, before the next run's claiming CAS. */
    uint32_t old = at_xchg(w, to, REL);
    if (old & ONCE_SLEEPERS) sqf_wake(w, INT32_MAX, (old & ONCE_SHARED) != 0);
}

struct run_end {
    sqf_word *w;
    uint32_t shared;
};

static void run_cancelled(void *arg)
{
    struct run_end *end = arg;
    finish_run(end->w, end->shared);
}

/* The wait protocol (waitop.h).  The caller that finds the run unclaimed
 * runs fn inside its step: the one step that does not return promptly, and
 * the reason no event-loop form of once exists. */
int sqf_once_run_step_(struct sqf_waitop *op, int how)
{
    (void)how; /* every end of a sleep means: look again */
    sqf_word *w = once_word(op->u.once.o);
    int stop = sqf_op_stop(op); /* before the read: see waitop.h */
    /* ACQ: pairs with the REL exchange in finish_run (DONE, or a failed run's reset) */
    uint32_t v = at_load(w, ACQ);
    for (;;) {
        if (v & ONCE_DONE) return 0; /* ACQ load: fn's writes are visible */
        if (!(v & ONCE_RUNNING)) {
            /* Not run (or the last run failed): claim the run.  ACQ orders
             * us after a failed run's reset (finish_run's REL exchange), as a
             * mutex would. */
            if (!at_cas(w, &v, v | ONCE_RUNNING, ACQ)) continue;
            struct run_end end = {w, v & ONCE_SHARED};
            int r;
            /* A run that is cancelled (fn reached a cancellation point) is a
             * failed run, as with pthread_once: the next caller runs fn. */
            pthread_cleanup_push(run_cancelled, &end);
            r = op->u.once.fn(op->u.once.arg);
            pthread_cleanup_pop(0);
            /* Nobody else changes the word while we run, except to add
             * SLEEPERS, which the exchange clears (and reports). */
            finish_run(w, r == 0 ? (end.shared | ONCE_DONE) : end.shared);
            return r;
        }
        /* Another caller runs fn.  Stopped: give up waiting (a stop ends
         * only the waiting: a stopped caller that finds the run unclaimed
         * still runs fn).  The end of a run wakes every sleeper, so leaving
         * consumes nothing. */
        if (stop) return stop;
        if (!(v & ONCE_SLEEPERS)) {
            /* Announce that we will sleep, so that the run's end wakes us.
             * ACQ, for the failure ordering: a failed CAS may have read
             * DONE, and the loop then returns 0 on that value. */
            if (!at_cas(w, &v, v | ONCE_SLEEPERS, ACQ)) continue;
            v |= ONCE_SLEEPERS;
        }
        /* Sleep only while the word still holds v: an exchange by the
         * runner in between makes the sleep end at once (EAGAIN).  Whatever
         * it returns (woken, EAGAIN, a stop, a signal), re-read and decide
         * again. */
        op->word = w;
        op->expected = v;
        op->shared = (v & ONCE_SHARED) != 0;
        return SQF_OP_SLEEP;
    }
}

static int run(sqf_once *o, int (*fn)(void *arg), void *arg, sqf_deadline deadline,
               const sqf_cancel *tok)
{
    if (!o || !fn) return EINVAL;
    struct sqf_waitop op = sqf_op_blocking(deadline, tok);
    op.u.once.o = o;
    op.u.once.fn = fn;
    op.u.once.arg = arg;
    return sqf_op_block(&op, sqf_once_run_step_);
}

int sqf_once_run_slow_(sqf_once *o, int (*fn)(void *arg), void *arg, sqf_deadline deadline)
{
    return run(o, fn, arg, deadline, NULL);
}

int sqf_once_run_until(sqf_once *o, int (*fn)(void *arg), void *arg, sqf_deadline deadline,
                       const sqf_cancel *cancel)
{
    return run(o, fn, arg, deadline, cancel);
}

int sqf_once_init(sqf_once *o, unsigned flags)
{
    if (!o || (flags & ~SQF_SHARED)) return EINVAL;
    if ((flags & SQF_SHARED) && !sqf_wait_shared_supported()) return ENOTSUP;
    /* REL: more than needed: o reaches other threads through their own synchronization */
    at_store(once_word(o), (flags & SQF_SHARED) ? ONCE_SHARED : 0, REL);
    return 0;
}

/* The out-of-line forms of the header's inline fast paths (used from C++,
 * with SQF_NO_INLINE, and by the library itself). */
int sqf_once_run(sqf_once *o, int (*fn)(void *arg), void *arg)
{
    /* ACQ: pairs with the REL exchange in finish_run that sets DONE */
    if (o && fn && (at_load(once_word(o), ACQ) & ONCE_DONE)) return 0;
    return sqf_once_run_slow_(o, fn, arg, SQF_FOREVER);
}

int sqf_once_timedrun(sqf_once *o, int (*fn)(void *arg), void *arg, sqf_deadline deadline)
{
    /* ACQ: pairs with the REL exchange in finish_run that sets DONE */
    if (o && fn && (at_load(once_word(o), ACQ) & ONCE_DONE)) return 0;
    return sqf_once_run_slow_(o, fn, arg, deadline);
}

int sqf_once_done(sqf_once *o)
{
    /* ACQ: pairs with the REL exchange in finish_run that sets DONE */
    return o && (at_load(once_word(o), ACQ) & ONCE_DONE) ? 1 : 0;
}
