/* level.h: the level-triggered wait, written once for every primitive whose
 * waiters wait for a state to be reached and are all woken together: the
 * event (set), the latch (open or broken) and the countdown (zero).
 *
 * The algorithm, one step of the wait protocol (waitop.h):
 * - ask sqf_op_stop, then read the state (so a stop is decided on a read
 *   made after it);
 * - reached: return its result (leaving the waiter count if counted in);
 * - on the first step only, stopped already (a deadline already past, a
 *   token already cancelled): return the stop without counting ourselves,
 *   so that destroy never sees a waiter that never waited;
 * - else count ourselves in `waiters` (destroy's EBUSY), remember the
 *   generation, and from then on:
 * - stopped: leave (uncount) with the stop.  The reaching wake wakes every
 *   sleeper, so leaving consumes nothing and passes nothing on;
 * - set the WAITERS bit with a CAS on the word the reaching change writes,
 *   and sleep only while the word still holds what we saw, WAITERS
 *   included.  Either the reaching change comes first (our CAS or the
 *   futex check fails, and we look again), or it sees WAITERS and wakes.
 * Whatever a sleep ends with (a wake-up, EAGAIN, EINTR, a stop), the next
 * step looks again: a wake carries nothing here, the state says it all.
 *
 * A generation lets a wait that began before a reset-and-reach (a reusable
 * event set and cleared, a countdown reaching zero and counted up again)
 * still see that it was reached.
 */
#ifndef SQF_SRC_LEVEL_H
#define SQF_SRC_LEVEL_H

#include "atomic.h"
#include "waitop.h"

/* What the algorithm needs to know of a primitive (obj is the primitive). */
struct sqf_level_kind {
    /* The state, with an acquire load (a reached state's writes become
     * visible). */
    uint64_t (*load)(void *obj);
    /* The wait's result in state st for a wait that began in generation
     * gen: -1 while it must go on waiting, else 0 or an errno. */
    int (*outcome)(uint64_t st, uint32_t gen);
    /* The generation in st (0 where there is none). */
    uint32_t (*gen)(uint64_t st);
    /* Set WAITERS in the state if st lacks it: true if st (updated) has it
     * now, false if the CAS failed (st is then the state it found, read
     * with acquire). */
    bool (*announce)(void *obj, uint64_t *st);
    /* The waiter count destroy reads. */
    sqf_word *(*waiters)(void *obj);
    /* Fill op's word, expected and shared to sleep while the state is st. */
    void (*sleep_on)(void *obj, uint64_t st, struct sqf_waitop *op);
};

/* `announce` and `sleep_on` for a kind whose state is one 32-bit word that
 * sleepers also sleep on (the event, the latch): WAITERS and SHARED are
 * its bits. */
static inline bool sqf_level_announce32(sqf_word *w, uint32_t waiters, uint64_t *st)
{
    uint32_t v = (uint32_t)*st;
    /* ACQ: pairs with the reaching change's REL: on failure v may show the state reached */
    bool ok = (v & waiters) || at_cas(w, &v, v | waiters, ACQ);
    *st = ok ? (v | waiters) : v;
    return ok;
}
static inline void sqf_level_sleep_on32(struct sqf_waitop *op, sqf_word *w, uint64_t st,
                                        uint32_t shared)
{
    op->word = w;
    op->expected = (uint32_t)st;
    op->shared = (st & shared) != 0;
}

/* One step of the wait on obj; *gen is the wait's own (kept in the op). */
int sqf_level_wait_step_(struct sqf_waitop *op, int how, const struct sqf_level_kind *kind,
                         void *obj, uint32_t *gen);

#endif
