/* cond.c: sqf_cond, a futex-sequence condition variable whose broadcast
 * requeues.  The state words are documented below. */

/* State words (invariants):
 *   seq      bit 0: REQUEUE: a broadcast's waiters still sleep on the
 *            condition variable and must be moved onto the mutex by the
 *            first waiter to wake.  bits 1..31: a counter bumped by every
 *            signal and broadcast that finds waiters; the futex word waiters
 *            sleep on, so a bump between unlocking and sleeping is noticed.
 *   waiters  bits 0..30: threads inside wait.  bit 31: SHARED (set by init).
 */
#include <limits.h>

#include <squarefree/cond.h>

#include "atomic.h"
#include "mutex_word.h"
#include "waitop.h"

#define CV_REQUEUE 1u
#define CV_STEP    2u
#define CV_SHARED  (1u << 31)
#define CV_COUNT   (~CV_SHARED)

static inline sqf_word *cv_seq(sqf_cond *c)
{
    return (sqf_word *)&c->seq;
}
static inline sqf_word *cv_waiters(sqf_cond *c)
{
    return (sqf_word *)&c->waiters;
}
static inline bool cv_shared(sqf_cond *c)
{
    return at_load(cv_waiters(c), RLX) & CV_SHARED;
}

int sqf_cond_init(sqf_cond *c, unsigned flags)
{
    if (!c || (flags & ~SQF_SHARED)) return EINVAL;
    if ((flags & SQF_SHARED) && !sqf_wait_shared_supported()) return ENOTSUP;
    at_store(cv_seq(c), 0, RLX);
    at_store(cv_waiters(c), (flags & SQF_SHARED) ? CV_SHARED : 0, REL);
    return 0;
}

int sqf_cond_destroy(sqf_cond *c)
{
    if (!c) return EINVAL;
    return (at_load(cv_waiters(c), ACQ) & CV_COUNT) ? EBUSY : 0;
}

/* A broadcast left its waiters asleep on seq: move them all onto the mutex,
 * whose unlocks will then wake them one at a time. */
static void finish_broadcast(sqf_cond *c, sqf_mutex *m, bool shared)
{
    sqf_word *seq = cv_seq(c);
    uint32_t s = at_load(seq, ACQ);
    if (!(s & CV_REQUEUE) || !at_cas(seq, &s, s & ~CV_REQUEUE, AR)) return;
    /* PARKED, so that unlocks wake the moved sleepers.  (An unlock that
     * races ahead of the move wakes nobody; what saves the moved ones then
     * is that this thread relocks with PARKED set and wakes one when it
     * unlocks.) */
    at_or(mu_word(m), MU_PARKED, SC);
    for (;;) {
        s = at_load(seq, ACQ);
        int r = sqf_requeue(seq, s, 0, mu_word(m), INT_MAX, shared);
        if (r >= 0) return;
        if (r != -EAGAIN) { /* requeue refused: wake them all rather than strand them */
            sqf_wake(seq, INT_MAX, shared);
            return;
        }
    }
}

/* The wait protocol (waitop.h): sleep on seq until it moves (a signal or
 * a broadcast since we began) or a stop, then relock m, which is the
 * mutex's own protocol and cannot be stopped (m is held again whatever the
 * wait returns).
 *
 * A wait returns 0 only when seq has moved since it began.  Every other end
 * of a sleep is looked at again: EINTR (a signal, a loop backend's "look
 * again") and EAGAIN with seq unchanged go back to sleep; a wake-up with
 * seq unchanged comes from a broadcast older than this wait, whose requeue
 * (run by the first of its waiters to return) moved every sleeper on seq
 * onto m, this one too: it may carry a hand-off of m, so it relocks, then
 * releases m and sleeps on seq again if seq has still not moved. */
enum { CV_WAIT, CV_RELOCK };

/* Whether seq has not moved since s (REQUEUE aside: a requeue's clearing of
 * it is no signal); *now is the value read. */
static bool cv_quiet(sqf_word *seq, uint32_t s, uint32_t *now)
{
    *now = at_load(seq, SC);
    return (*now | CV_REQUEUE) == (s | CV_REQUEUE);
}

/* Release m and sleep on seq while it holds v, a value read after we were
 * counted in `waiters` and that shows no signal since we began: a signal
 * after that read changes seq, and our sleep then ends at once. */
static int cv_sleep(struct sqf_waitop *op, sqf_cond *c, sqf_mutex *m, uint32_t v)
{
    op->stoppable = true;
    op->u.cond.stage = CV_WAIT;
    op->word = cv_seq(c);
    op->expected = v;
    int e = sqf_mutex_unlock(m);
    return e ? e : SQF_OP_SLEEP;
}

/* Set up the relock of m after a sleep on seq that ends the wait with
 * `result`, or that moved us without a signal (`again`: then look at seq
 * once m is ours).  The relock's first step follows. */
static void cv_relock(struct sqf_waitop *op, int result, bool again, bool woken)
{
    struct sqf_cond_wait_ *cw = &op->u.cond;
    cw->stage = CV_RELOCK;
    cw->result = result;
    cw->again = again;
    if (!again) at_sub(cv_waiters(cw->c), 1, REL); /* from here on c may be gone */
    /* Relock as a thread that has slept: a wake-up on seq may have been
     * requeued onto m and be a hand-off of m. */
    op->stoppable = false;
    cw->relock.m = cw->m;
    cw->relock.woken = woken;
}

int sqf_cond_wait_step_(struct sqf_waitop *op, int how)
{
    struct sqf_cond_wait_ *cw = &op->u.cond;
    sqf_cond *c = cw->c;
    sqf_mutex *m = cw->m;
    sqf_word *seq = cv_seq(c); /* an address: no access */
    if (how == SQF_OP_START) {
        bool shared = cv_shared(c);
        if (shared != mu_shared(m)) return EINVAL;
        /* Count ourselves in before reading seq, so that a signaller who
         * bumps seq after our read sees us and wakes us. */
        at_add(cv_waiters(c), 1, SC);
        cw->s = at_load(seq, SC);
        op->shared = shared;
        int r = cv_sleep(op, c, m, cw->s);
        if (r != SQF_OP_SLEEP) at_sub(cv_waiters(c), 1, REL); /* EPERM: m not held */
        return r;
    }
    /* Only while we are counted in `waiters` may we touch c: once we
     * uncount, a signaller may destroy and free it (the relock touches
     * only m). */
    if (cw->stage == CV_WAIT) {
        finish_broadcast(c, m, cv_shared(c));
        int stop = sqf_op_stop(op); /* before the look at seq: see waitop.h */
        uint32_t v;
        bool woken = how == SQF_WAIT_WOKEN;
        if (!cv_quiet(seq, cw->s, &v)) {
            cv_relock(op, 0, false, woken);
        } else if (stop) {
            /* Seq unchanged: no signal was ours (a stop without a wake-up
             * consumed none). */
            cv_relock(op, stop, false, woken);
        } else if (woken) {
            cv_relock(op, 0, true, true);
        } else {
            /* EINTR, or EAGAIN from the requeue's clearing of REQUEUE:
             * sleep again, m still released. */
            op->word = seq;
            op->expected = v;
            return SQF_OP_SLEEP;
        }
        how = SQF_OP_START;
    }
    int r = sqf_mutex_sleep_step_(op, &cw->relock, how);
    if (r != 0 || !cw->again) return r == SQF_OP_SLEEP ? r : cw->result;
    /* m is ours again after a move without a signal; still counted. */
    op->stoppable = true;
    int stop = sqf_op_stop(op);
    uint32_t v;
    bool quiet = cv_quiet(seq, cw->s, &v);
    if (!quiet || stop) {
        at_sub(cv_waiters(c), 1, REL);
        return quiet ? stop : 0;
    }
    return cv_sleep(op, c, m, v);
}

static int cond_wait(sqf_cond *c, sqf_mutex *m, sqf_deadline deadline, const sqf_cancel *tok)
{
    if (!c || !m) return EINVAL;
    struct sqf_waitop op = sqf_op_blocking(deadline, tok);
    op.u.cond.c = c;
    op.u.cond.m = m;
    return sqf_op_block(&op, sqf_cond_wait_step_);
}

int sqf_cond_timedwait(sqf_cond *c, sqf_mutex *m, sqf_deadline deadline)
{
    return cond_wait(c, m, deadline, NULL);
}

int sqf_cond_wait_until(sqf_cond *c, sqf_mutex *m, sqf_deadline deadline, const sqf_cancel *cancel)
{
    return cond_wait(c, m, deadline, cancel);
}

int sqf_cond_wait(sqf_cond *c, sqf_mutex *m)
{
    return cond_wait(c, m, SQF_FOREVER, NULL);
}

int sqf_cond_signal(sqf_cond *c)
{
    if (!c) return EINVAL;
    uint32_t waiters = at_load(cv_waiters(c), SC);
    if (!(waiters & CV_COUNT)) return 0;
    /* After the bump a woken waiter may return and destroy c: read what we
     * need first, and after it only pass the address to the kernel. */
    at_add(cv_seq(c), CV_STEP, SC);
    sqf_wake(cv_seq(c), 1, waiters & CV_SHARED);
    return 0;
}

int sqf_cond_broadcast(sqf_cond *c)
{
    if (!c) return EINVAL;
    uint32_t waiters = at_load(cv_waiters(c), SC);
    if (!(waiters & CV_COUNT)) return 0;
    sqf_word *seq = cv_seq(c);
    uint32_t s = at_load(seq, RLX);
    while (!at_cas(seq, &s, (s + CV_STEP) | CV_REQUEUE, SC)) {
    }
    /* If this wakes nobody, REQUEUE stays set until the next waiter to
     * return clears it: harmless, and c is not touched after the wake. */
    sqf_wake(seq, 1, waiters & CV_SHARED);
    return 0;
}
