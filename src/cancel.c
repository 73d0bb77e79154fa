/* cancel.c: sqf_cancel tokens, and sleeping with one (see cancel_wait.h).
 * The token's state is documented as invariants below. */

/* State (invariants):
 *   word      bit 0 CANCELLED: set by sqf_cancel_cancel, never cleared.
 *             bit 1 WAITERS: a thread may sleep on the word; cancel wakes
 *                   all.  Stale after time-outs (one futile wake-up).
 *   deadline  0: none; otherwise the instant after which the token counts
 *             as cancelled (set by init only).
 *   parent    NULL or the parent token (set by init only).
 */
#include <limits.h>

#include <squarefree/cancel.h>

#include "atomic.h"
#include "cancel_wait.h"
#include "waitop.h"

#define TOK_CANCELLED 1u
#define TOK_WAITERS   2u

static inline sqf_word *tok_word(const sqf_cancel *t)
{
    return (sqf_word *)&t->word;
}

int sqf_cancel_init(sqf_cancel *t, const sqf_cancel *parent, sqf_deadline deadline)
{
    if (!t || parent == t) return EINVAL;
    int depth = 1;
    for (const sqf_cancel *p = parent; p; p = p->parent)
        if (++depth > SQF_CANCEL_MAX_DEPTH || p == t) return EINVAL;
    t->parent = parent;
    t->reserved_ = 0;
    /* 0 means "no deadline", so a deadline at or before 0 becomes 1: past. */
    t->deadline = deadline == SQF_FOREVER ? 0 : deadline > 0 ? deadline : 1;
    /* REL: more than needed: t (deadline, parent) reaches other threads through their own sync */
    at_store(tok_word(t), 0, REL);
    return 0;
}

int sqf_cancel_cancel(sqf_cancel *t)
{
    if (!t) return EINVAL;
    /* AR: REL pairs with the ACQ reads of CANCELLED (below); the ACQ half pairs with nothing */
    uint32_t old = at_or(tok_word(t), TOK_CANCELLED, AR);
    /* Only the address after this: a woken waiter may end t's lifetime. */
    if ((old & (TOK_CANCELLED | TOK_WAITERS)) == TOK_WAITERS) sqf_wake(tok_word(t), INT_MAX, false);
    return 0;
}

int sqf_cancel_is_cancelled(const sqf_cancel *t)
{
    sqf_deadline now = 0;
    for (; t; t = t->parent) {
        /* ACQ: pairs with the AR OR in sqf_cancel_cancel */
        if (at_load(tok_word(t), ACQ) & TOK_CANCELLED) return 1;
        if (t->deadline) {
            if (!now) now = sqf_now();
            if (now >= t->deadline) return 1;
        }
    }
    return 0;
}

int sqf_op_stop_now_(const struct sqf_waitop *op)
{
    sqf_deadline tok_deadline = SQF_FOREVER;
    for (const sqf_cancel *t = op->tok; t; t = t->parent) {
        /* ACQ: pairs with the AR OR in sqf_cancel_cancel */
        if (at_load(tok_word(t), ACQ) & TOK_CANCELLED) return ECANCELED;
        if (t->deadline && t->deadline < tok_deadline) tok_deadline = t->deadline;
    }
    /* Both passed: the earlier one took effect first (a tie goes to the
     * token, as in sqf_sleep_prepare). */
    sqf_deadline first = tok_deadline <= op->deadline ? tok_deadline : op->deadline;
    if (first == SQF_FOREVER || sqf_now() < first) return 0;
    return first == tok_deadline ? ECANCELED : ETIMEDOUT;
}

int sqf_sleep_prepare(struct sqf_sleep *s, sqf_word *word, uint32_t expected, bool shared,
                      sqf_deadline deadline, const sqf_cancel *tok)
{
    /* The token words first, the primitive's word last: see cancel_wait.h
     * for why the order is the whole of the correctness argument. */
    int n = 0;
    sqf_deadline tok_deadline = SQF_FOREVER;
    for (const sqf_cancel *t = tok; t && n < SQF_WAIT_MAX_WORDS - 1; t = t->parent) {
        sqf_word *tw = tok_word(t);
        /* ACQ: pairs with the AR OR in sqf_cancel_cancel (we return ECANCELED on it) */
        uint32_t v = at_load(tw, ACQ);
        /* ACQ: for the failure ordering: a failed CAS may read CANCELLED, and we return on it */
        /* Announce ourselves so that cancel wakes us (it then sees WAITERS). */
        while (!(v & (TOK_CANCELLED | TOK_WAITERS)) && !at_cas(tw, &v, v | TOK_WAITERS, ACQ)) {
        }
        if (v & TOK_CANCELLED) return ECANCELED;
        if (t->deadline && t->deadline < tok_deadline) tok_deadline = t->deadline;
        s->w[n++] = (struct sqf_wait_word){tw, v | TOK_WAITERS, false};
    }
    s->w[n++] = (struct sqf_wait_word){word, expected, shared};
    s->n = n;
    s->tok_first = tok_deadline < deadline;
    s->deadline = s->tok_first ? tok_deadline : deadline;
    if (tok_deadline == SQF_FOREVER && deadline == SQF_FOREVER) return 0;
    sqf_deadline now = sqf_now();
    if (tok_deadline <= now) return ECANCELED;
    return deadline <= now ? ETIMEDOUT : 0;
}

int sqf_sleep_result(const struct sqf_sleep *s, const sqf_cancel *tok, int r)
{
    if (r == s->n - 1) return SQF_WAIT_WOKEN;
    /* Woken through a token word only (a wake on ours would have been
     * reported instead), or not woken at all: nothing of ours consumed. */
    if (r >= 0) return sqf_cancel_is_cancelled(tok) ? ECANCELED : EINTR;
    switch (-r) {
    case ENOSYS:
        return ENOTSUP;
    case ETIMEDOUT:
        return s->tok_first ? ECANCELED : ETIMEDOUT;
    case EAGAIN:
        return sqf_cancel_is_cancelled(tok) ? ECANCELED : EAGAIN;
    default:
        return EINTR;
    }
}

int sqf_wait_cancellable(sqf_word *word, uint32_t expected, sqf_deadline deadline, bool shared,
                         const sqf_cancel *tok)
{
    if (!tok) return sqf_wait(word, expected, deadline, shared);
    struct sqf_sleep s;
    int e = sqf_sleep_prepare(&s, word, expected, shared, deadline, tok);
    if (e) return e;
    return sqf_sleep_result(&s, tok, sqf_wait_any(s.w, s.n, s.deadline));
}
