/* event.c: sqf_event's slow paths.  The state words are documented as
 * invariants below. */

/* State words (invariants):
 *   word     bit 0 SET: the event is set.
 *            bit 1 WAITERS: only while not set: a thread may sleep on the
 *                  word, so the next set must wake all.  Cleared by set; may
 *                  be stale (a waiter timed out): one futile wake-up.
 *            bit 2 SHARED: set by init, never changed.
 *            bits 3..31 generation: advanced by every set that finds the
 *                  event unset; waits compare it to tell a set-then-clear
 *                  from no set at all (wraps after 2^29 sets: a waiter
 *                  preempted for exactly that many may miss one).
 *   waiters  threads inside a wait, for destroy's EBUSY only: wakers never
 *            read it.
 */
#include <limits.h>

#include <squarefree/event.h>

#include "atomic.h"
#include "level.h"

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
    /* RLX, and REL more than needed: e reaches other threads through their own synchronization */
    at_store(ev_waiters(e), 0, RLX);
    at_store(ev_word(e), (flags & SQF_SHARED) ? EV_SHARED : 0, REL);
    return 0;
}

int sqf_event_destroy(sqf_event *e)
{
    if (!e) return EINVAL;
    /* ACQ: pairs with the REL at_sub of waiters in level.c's leave, so the caller may free e */
    return at_load(ev_waiters(e), ACQ) ? EBUSY : 0;
}

int sqf_event_set(sqf_event *e)
{
    if (!e) return EINVAL;
    sqf_word *w = ev_word(e);
    /* ACQ: pairs with the AR CAS of the set we may find (it returns "already set" on it) */
    uint32_t v = at_load(w, ACQ);
    /* AR: REL pairs with ev_load / sqf_event_is_set's ACQ; ACQ with the set or clear before */
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
    /* RLX: a hint; the REL CAS below re-reads */
    uint32_t v = at_load(w, RLX);
    /* REL: pairs with ev_load's ACQ: a waiter that sees the moved generation sees what preceded */
    while ((v & EV_SET) && !at_cas(w, &v, v & ~EV_SET, REL)) {
    }
    return 0;
}

/* The wait (level.h): over once the event is set, or has been set since
 * the wait began (and cleared again: the generation moved). */
static uint64_t ev_load(void *obj)
{
    /* ACQ: pairs with the AR CAS in sqf_event_set (and the REL CAS in sqf_event_clear) */
    return at_load(ev_word(obj), ACQ);
}
static int ev_outcome(uint64_t v, uint32_t gen)
{
    return (v & EV_SET) || (uint32_t)(v >> 3) != gen ? 0 : -1;
}
static uint32_t ev_gen(uint64_t v)
{
    return (uint32_t)(v >> 3);
}
static bool ev_announce(void *obj, uint64_t *st)
{
    return sqf_level_announce32(ev_word(obj), EV_WAITERS, st);
}
static sqf_word *ev_waiters_of(void *obj)
{
    return ev_waiters(obj);
}
static void ev_sleep_on(void *obj, uint64_t st, struct sqf_waitop *op)
{
    sqf_level_sleep_on32(op, ev_word(obj), st, EV_SHARED);
}
static const struct sqf_level_kind ev_kind = {ev_load,     ev_outcome,    ev_gen,
                                              ev_announce, ev_waiters_of, ev_sleep_on};

int sqf_event_wait_step_(struct sqf_waitop *op, int how)
{
    return sqf_level_wait_step_(op, how, &ev_kind, op->u.event.e, &op->u.event.gen);
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
    /* ACQ: pairs with the AR CAS in sqf_event_set */
    if (e && (at_load(ev_word(e), ACQ) & EV_SET)) return 0;
    return wait_slow(e, deadline, cancel);
}

/* Out-of-line forms of the inline functions (C++, SQF_NO_INLINE). */
int sqf_event_is_set(sqf_event *e)
{
    /* ACQ: pairs with the AR CAS in sqf_event_set */
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
