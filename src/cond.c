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
    /* RLX: SHARED is set by sqf_cond_init and never changes; no data rides on it */
    return at_load(cv_waiters(c), RLX) & CV_SHARED;
}

int sqf_cond_init(sqf_cond *c, unsigned flags)
{
    if (!c || (flags & ~SQF_SHARED)) return EINVAL;
    if ((flags & SQF_SHARED) && !sqf_wait_shared_supported()) return ENOTSUP;
    /* RLX, and REL more than needed: c reaches other threads only through their own synchronization */
    at_store(cv_seq(c), 0, RLX);
    at_store(cv_waiters(c), (flags & SQF_SHARED) ? CV_SHARED : 0, REL);
    return 0;
}

int sqf_cond_destroy(sqf_cond *c)
{
    if (!c) return EINVAL;
    /* ACQ: pairs with the REL at_sub of waiters in cv_relock, so that the caller may free c */
    return (at_load(cv_waiters(c), ACQ) & CV_COUNT) ? EBUSY : 0;
}

/* A broadcast left its waiters asleep on seq: move them all onto the mutex,
 * whose unlocks will then wake them one at a time, then clear REQUEUE.  In
 * that order: a waiter never sleeps on seq while REQUEUE is set (it
 * finishes the broadcast first, see the wait's first step), so the requeue,
 * which moves whoever sleeps on seq while it still holds the broadcast's
 * value, moves only waiters that were there before the broadcast, never
 * one that arrived after it (which would then return with no signal since
 * it began).  Any number of threads may finish one broadcast at once: each
 * requeue moves whoever sleeps there then, and the first to clear REQUEUE
 * ends it.  The caller holds m or relocks it afterwards: an unlock that
 * races ahead of the move wakes nobody, and what saves the moved sleepers
 * then is PARKED, set before the move, seen by the caller's own unlock. */
static void finish_broadcast(sqf_cond *c, sqf_mutex *m, bool shared)
{
    sqf_word *seq = cv_seq(c);
    /* ACQ: pairs with the SC CAS setting REQUEUE in sqf_cond_broadcast */
    uint32_t s = at_load(seq, ACQ);
    if (!(s & CV_REQUEUE)) return;
    at_or(mu_word(m), MU_PARKED, SC);
    int r = sqf_requeue(seq, s, 0, mu_word(m), INT_MAX, shared);
    /* -EAGAIN: seq moved: REQUEUE cleared by another finisher, or a newer
     * broadcast set it again (whose own finishing moves everyone). */
    if (r == -EAGAIN) return;
    if (r < 0) sqf_wake(seq, INT_MAX, shared); /* requeue refused: wake them all */
    /* AR: ACQ pairs with sqf_cond_broadcast's SC CAS; REL with sqf_cond_wait_step_'s SC seq read */
    at_cas(seq, &s, s & ~CV_REQUEUE, AR); /* fails only if seq moved meanwhile */
}

/* The wait protocol (waitop.h): sleep on seq until it moves (a signal or a
 * broadcast since we began) or a stop, then relock m, which is the mutex's
 * own protocol and cannot be stopped (m is held again whatever the wait
 * returns).  A wait returns 0 when seq has moved since it began, or when a
 * wake-up dequeued it with seq unchanged: that is a signal whose seq bump
 * came before our arrival and whose wake came after (it may have been the
 * only waiter to reach), and serving it cannot lose it.  EINTR (a signal
 * handler, a loop backend's "look again") and EAGAIN with seq unchanged
 * sleep again, with m still released. */
enum { CV_WAIT, CV_RELOCK };

/* Whether seq has not moved since s; *now is the value read. */
static bool cv_quiet(sqf_word *seq, uint32_t s, uint32_t *now)
{
    *now = at_load(seq, SC);
    return *now == s;
}

/* Set up the relock of m after a sleep on seq that ends the wait with
 * `result`; the relock's first step follows. */
static void cv_relock(struct sqf_waitop *op, int result, bool woken)
{
    struct sqf_cond_wait_ *cw = &op->u.cond;
    cw->stage = CV_RELOCK;
    cw->result = result;
    /* REL: pairs with the ACQ load in sqf_cond_destroy; from here on c may be gone */
    at_sub(cv_waiters(cw->c), 1, REL);
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
        /* An unlocked m fails here, before anything changes: below, a
         * broadcast's waiters may be moved onto m, and only our unlock of
         * it would then wake them. */
        /* RLX: we hold m (or fail): LOCKED is ours to see; nothing is read on the strength of it */
        if (!(at_load(mu_word(m), RLX) & MU_LOCKED)) return EPERM;
        /* Count ourselves in before reading seq, so that a signaller who
         * bumps seq after our read sees us and wakes us.  A broadcast still
         * to be finished is finished first (we hold m, whose unlock below
         * then wakes one of the moved): we sleep only on a seq without
         * REQUEUE, which no requeue of an older broadcast can match. */
        at_add(cv_waiters(c), 1, SC);
        uint32_t s;
        while ((s = at_load(seq, SC)) & CV_REQUEUE)
            finish_broadcast(c, m, shared);
        cw->s = s;
        cw->stage = CV_WAIT;
        op->word = seq;
        op->expected = s;
        op->shared = shared;
        int e = sqf_mutex_unlock(m);
        /* REL: pairs with the ACQ load in sqf_cond_destroy */
        if (e) at_sub(cv_waiters(c), 1, REL); /* EPERM: m unlocked meanwhile by another */
        return e ? e : SQF_OP_SLEEP;
    }
    /* Only while we are counted in `waiters` may we touch c: once we
     * uncount, a signaller may destroy and free it (the relock touches
     * only m). */
    if (cw->stage == CV_WAIT) {
        finish_broadcast(c, m, cv_shared(c)); /* before our relock: see there */
        int stop = sqf_op_stop(op);           /* before the look at seq: see waitop.h */
        uint32_t v;
        bool woken = how == SQF_WAIT_WOKEN;
        if (!cv_quiet(seq, cw->s, &v) || woken) {
            cv_relock(op, 0, woken);
        } else if (stop) {
            /* No signal since we began, and none dequeued us: a stop
             * without a wake-up consumed nothing. */
            cv_relock(op, stop, false);
        } else {
            /* EINTR or EAGAIN with seq unchanged (so without REQUEUE, and
             * nothing to finish): sleep again, m still released. */
            op->word = seq;
            op->expected = v;
            return SQF_OP_SLEEP;
        }
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
    /* RLX: a hint; the SC CAS below re-reads */
    uint32_t s = at_load(seq, RLX);
    while (!at_cas(seq, &s, (s + CV_STEP) | CV_REQUEUE, SC)) {
    }
    /* If this wakes nobody, REQUEUE stays set until the next waiter to
     * return clears it: harmless, and c is not touched after the wake. */
    sqf_wake(seq, 1, waiters & CV_SHARED);
    return 0;
}
