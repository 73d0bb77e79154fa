/* event.c: sqf_event's slow paths.  The state words are documented as
 * invariants in include/squarefree/event.h. */
#include <limits.h>

#include <squarefree/event.h>

#include "atomic.h"
#include "waitop.h"

#define EV_SET     SQF_EVENT_SET_
#define EV_WAITERS (1u << 1)
#define EV_SHARED  (1u << 2)
#define EV_GEN     (1u << 3)

static inline sqf_word *ev_word(sqf_event *e)
{
    return (sqf_word *)&e->word;
}
static inline sqf_word *ev_waiters(sqf_event *e)
{
    return (sqf_word *)&e->waiters;
}

int sqf_event_init(sqf_event *e, unsigned flags)
{
    if (!e || (flags & ~SQF_SHARED)) return EINVAL;
    if ((flags & SQF_SHARED) && !sqf_wait_shared_supported()) return ENOTSUP;
    at_store(ev_waiters(e), 0, RLX);
    at_store(ev_word(e), (flags & SQF_SHARED) ? EV_SHARED : 0, REL);
    return 0;
}

int sqf_event_destroy(sqf_event *e)
{
    if (!e) return EINVAL;
    return at_load(ev_waiters(e), ACQ) ? EBUSY : 0;
}

int sqf_event_set(sqf_event *e)
{
    if (!e) return EINVAL;
    sqf_word *w = ev_word(e);
    uint32_t v = at_load(w, ACQ);
    do {
        if (v & EV_SET) return 0; /* one load when already set */
    } while (!at_cas(w, &v, ((v + EV_GEN) | EV_SET) & ~EV_WAITERS, AR));
    /* From here on a woken waiter may free *e: pass only the address. */
    if (v & EV_WAITERS) sqf_wake(w, INT_MAX, v & EV_SHARED);
    return 0;
}

int sqf_event_clear(sqf_event *e)
{
    if (!e) return EINVAL;
    sqf_word *w = ev_word(e);
    uint32_t v = at_load(w, RLX);
    while ((v & EV_SET) && !at_cas(w, &v, v & ~EV_SET, REL)) {
    }
    return 0;
}

/* A wait that began at generation gen is over: set now, or set since it
 * began (and cleared again). */
static inline bool ev_reached(uint32_t v, uint32_t gen)
{
    return (v & EV_SET) || (v >> 3) != gen;
}

/* The wait protocol (waitop.h).  Counted in `waiters` from the first step
 * to the last, so that destroy sees us. */
static int ev_leave(sqf_event *e, int result)
{
    /* REL: pairs with destroy's ACQ load; after this we touch nothing. */
    at_sub(ev_waiters(e), 1, REL);
    return result;
}

int sqf_event_wait_step_(struct sqf_waitop *op, int how)
{
    sqf_event *e = op->u.event.e;
    sqf_word *w = ev_word(e);
    uint32_t v = at_load(w, ACQ);
    if (how == SQF_OP_START) {
        if (v & EV_SET) return 0;
        op->u.event.gen = v >> 3;
        at_add(ev_waiters(e), 1, RLX);
    }
    const uint32_t gen = op->u.event.gen;
    /* Cancelled before the event was set: leave (a set wakes everyone, so
     * leaving consumes nothing). */
    if ((how == ECANCELED || how == ENOTSUP) && !ev_reached(v, gen)) return ev_leave(e, how);
    for (;;) {
        if (ev_reached(v, gen)) return ev_leave(e, 0);
        if (sqf_op_expired(op)) {
            /* v may be older than the deadline (a set may have come between
             * our read and it): decide on a read made after it. */
            v = at_load(w, ACQ);
            return ev_leave(e, ev_reached(v, gen) ? 0 : ETIMEDOUT);
        }
        if (!(v & EV_WAITERS) && !at_cas(w, &v, v | EV_WAITERS, ACQ)) continue;
        op->word = w;
        op->expected = v | EV_WAITERS;
        op->shared = v & EV_SHARED;
        return SQF_OP_SLEEP;
    }
}

static int wait_slow(sqf_event *e, sqf_deadline deadline, const sqf_cancel *tok)
{
    if (!e) return EINVAL;
    struct sqf_waitop op = sqf_op_blocking(deadline, tok);
    op.u.event.e = e;
    return sqf_op_block(&op, sqf_event_wait_step_);
}

int sqf_event_wait_slow_(sqf_event *e, sqf_deadline deadline)
{
    return wait_slow(e, deadline, NULL);
}

int sqf_event_wait_until(sqf_event *e, sqf_deadline deadline, const sqf_cancel *cancel)
{
    if (e && (at_load(ev_word(e), ACQ) & EV_SET)) return 0;
    return wait_slow(e, deadline, cancel);
}

/* Out-of-line forms of the inline functions (C++, SQF_NO_INLINE). */
int sqf_event_is_set(sqf_event *e)
{
    return e && (at_load(ev_word(e), ACQ) & EV_SET);
}

int sqf_event_wait(sqf_event *e)
{
    return sqf_event_wait_slow_(e, SQF_FOREVER);
}

int sqf_event_timedwait(sqf_event *e, sqf_deadline deadline)
{
    return sqf_event_wait_slow_(e, deadline);
}
