/* cond.c: sqf_cond, a futex-sequence condition variable whose broadcast
 * requeues.  The state words are documented in include/squarefree/cond.h. */
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

/* The wait protocol (waitop.h): one sleep on seq (any end of it ends the
 * wait: spurious wake-ups are allowed), then the relock of m, which is the
 * mutex's own protocol, untimed and without the token (m is held again
 * whatever the wait returns). */
enum { CV_WAIT, CV_RELOCK };

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
        int e = sqf_mutex_unlock(m);
        if (e) {
            at_sub(cv_waiters(c), 1, REL);
            return e;
        }
        cw->stage = CV_WAIT;
        op->word = seq;
        op->expected = cw->s;
        op->shared = shared;
        return SQF_OP_SLEEP;
    }
    /* Only while we are counted in `waiters` may we touch c: once we
     * uncount, a signaller may destroy and free it (the relock below
     * touches only m). */
    if (cw->stage == CV_WAIT) {
        finish_broadcast(c, m, cv_shared(c));
        /* A time-out or cancellation with seq unchanged saw no signal;
         * otherwise one may have been meant for us, and returning 0 cannot
         * lose it.  (ECANCELED also means no signal's wake-up dequeued
         * us.) */
        bool quiet = (at_load(seq, ACQ) | CV_REQUEUE) == (cw->s | CV_REQUEUE);
        cw->result = (how == ETIMEDOUT || how == ECANCELED || how == ENOTSUP) && quiet ? how : 0;
        at_sub(cv_waiters(c), 1, REL);
        /* Relock as a thread that has slept: a wake-up on seq may have been
         * requeued onto m and be a hand-off of m. */
        cw->stage = CV_RELOCK;
        op->deadline = SQF_FOREVER;
        op->tok = NULL;
        op->cancellable = false;
        cw->relock.m = m;
        cw->relock.woken = how == SQF_WAIT_WOKEN;
        how = SQF_OP_START;
    }
    int r = sqf_mutex_sleep_step_(op, &cw->relock, how);
    return r == SQF_OP_SLEEP ? r : cw->result;
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
