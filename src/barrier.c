/* barrier.c: sqf_barrier.  The state words are documented as invariants in
 * include/squarefree/barrier.h; the comments here say why each step is safe.
 *
 * A phase in one word: arrivals are one atomic add each (no CAS retry loop,
 * however many arrive together); the add that brings the count to parties
 * makes its thread the last arriver, which runs the completion (the count
 * stays at parties meanwhile, so nobody is released) and then releases the
 * phase with one CAS that advances the phase and zeroes the count, and wakes
 * every sleeper with one call.
 *
 * Sleepers set WAITERS with a CAS on the same word and sleep only while the
 * word still holds what they saw, WAITERS included (as in once.c and
 * event.c): either the release comes first and the CAS or the futex check
 * fails, or the release sees WAITERS and wakes.
 *
 * The `waiters` count keeps reset (and destroy) away from threads that have
 * yet to learn their phase's outcome.  Every thread counts itself before its
 * first change of the word, so a reset that reads the word (ACQ, through the
 * release sequence of RMWs on it) sees that thread counted, and a reset's
 * CAS cannot succeed on a word that changed since that read.  A thread
 * uncounts itself after its last change of the word, and before its wake-up
 * call, which uses only the address.
 */
#include <squarefree/barrier.h>

#include "atomic.h"
#include "barrier_word.h"
#include "waitop.h"

static inline uint32_t phase_of(uint32_t v)
{
    return v >> BA_PHASE_SHIFT;
}

/* The word of the next phase: phase + 1 (mod 256), no arrivals, no flags
 * but SHARED. */
static inline uint32_t next_phase(uint32_t v)
{
    return ((v & BA_PHASE) + (1u << BA_PHASE_SHIFT)) | (v & BA_SHARED);
}

int sqf_barrier_init(sqf_barrier *b, unsigned parties, unsigned flags)
{
    if (!b || (flags & ~SQF_SHARED) || parties == 0 || parties > SQF_BARRIER_MAX) return EINVAL;
    if ((flags & SQF_SHARED) && !sqf_wait_shared_supported()) return ENOTSUP;
    at_store(ba_waiters(b), 0, RLX);
    at_store(ba_parties(b), parties, RLX);
    at_store(ba_word(b), (flags & SQF_SHARED) ? BA_SHARED : 0, REL);
    return 0;
}

int sqf_barrier_destroy(sqf_barrier *b)
{
    if (!b) return EINVAL;
    return at_load(ba_waiters(b), ACQ) ? EBUSY : 0;
}

/* Set BROKEN in *v's word (clearing WAITERS).  Returns 1 if this call broke
 * it, with *v the word before; 0 if it was broken already; -1 if the CAS
 * lost to another change (then *v holds the new value: decide again). */
static int try_break(sqf_word *w, uint32_t *v)
{
    if (*v & BA_BROKEN) return 0;
    /* AR: the break is a release (EPIPE returns acquire it); ACQ on
     * failure, as callers act on the value seen. */
    return at_cas(w, v, (*v | BA_BROKEN) & ~BA_WAITERS, AR) ? 1 : -1;
}

/* The wait protocol (waitop.h).  Stages of a barrier wait: */
enum {
    BA_FULL,   /* found the phase full (an extra thread: see "Requires"):
                  waiting for its release, to arrive in the next one */
    BA_ARRIVED /* arrived (not last): waiting for the phase's release */
};

/* The end of every wait that counted itself: uncount, then wake (the
 * address only: a released thread may free *b once we are uncounted). */
static int ba_leave(struct sqf_waitop *op, int result)
{
    sqf_barrier *b = op->u.barrier.b;
    sqf_word *w = ba_word(b);
    uint32_t v = op->u.barrier.v;
    /* REL: pairs with destroy's and reset's ACQ loads. */
    at_sub(ba_waiters(b), 1, REL);
    if (op->u.barrier.wake) sqf_wake(w, INT32_MAX, (v & BA_SHARED) != 0);
    return result;
}

/* One look at the awaited phase, x a recent value of the word: 0 (released),
 * EPIPE (broken), ETIMEDOUT or the token's error (then, if we had arrived,
 * the barrier is broken, as a withdrawn arrival would complete the phase
 * short-handed, and `wake` says whether sleepers must be woken), or
 * SQF_OP_SLEEP.  Leaves the last value seen in u.barrier.v. */
static int await_step(struct sqf_waitop *op, uint32_t x)
{
    sqf_word *w = ba_word(op->u.barrier.b);
    const bool arrived = op->u.barrier.stage == BA_ARRIVED;
    int r;
    for (;;) {
        /* A changed phase means ours was released: resets cannot happen
         * while we are counted, and the next phase needs us to complete. */
        if (phase_of(x) != op->u.barrier.phase) {
            r = 0;
            break;
        }
        if (x & BA_BROKEN) {
            r = EPIPE;
            break;
        }
        if (op->u.barrier.stop || sqf_op_expired(op)) {
            r = op->u.barrier.stop ? op->u.barrier.stop : ETIMEDOUT;
            if (!arrived) break;
            /* The break's CAS fails on a word that changed since x (a
             * release before the deadline, say): then decide again. */
            int broke = try_break(w, &x);
            if (broke < 0) continue;
            op->u.barrier.wake = broke && (x & BA_WAITERS);
            break;
        }
        /* ACQ: on failure x may show the release, and we return on it. */
        if (!(x & BA_WAITERS) && !at_cas(w, &x, x | BA_WAITERS, ACQ)) continue;
        op->u.barrier.v = x;
        op->word = w;
        op->expected = x | BA_WAITERS;
        op->shared = (x & BA_SHARED) != 0;
        return SQF_OP_SLEEP;
    }
    op->u.barrier.v = x;
    return r;
}

/* Arrive in the phase of u.barrier.v (waiting first for a full phase's
 * release), then wait for our phase's release, or release it if last. */
static int arrive(struct sqf_waitop *op)
{
    struct sqf_barrier_wait_ *s = &op->u.barrier;
    sqf_word *w = ba_word(s->b);
    uint32_t v = s->v, pos;
    for (;;) {
        if ((v & BA_COUNT) >= s->n) {
            s->stage = BA_FULL;
            s->phase = phase_of(v);
            int r = await_step(op, v);
            if (r) return r == SQF_OP_SLEEP ? r : ba_leave(op, r);
            v = s->v;
            continue;
        }
        /* AR: release our writes to the last arriver and, through it, to
         * everyone; acquire the earlier arrivals (if we are last) or the
         * break (if we return EPIPE). */
        uint32_t old = at_add(w, 1, AR);
        if (old & BA_BROKEN) return ba_leave(op, EPIPE); /* our add to a broken word is harmless */
        v = old + 1;
        pos = old & BA_COUNT;
        if (pos < s->n) break;
        /* Added to a full phase: its release zeroes the count, erasing our
         * add; wait for that and try again. */
    }
    s->pos = pos;
    if (pos < s->n - 1) {
        s->stage = BA_ARRIVED;
        s->phase = phase_of(v);
        int r = await_step(op, v);
        if (r == SQF_OP_SLEEP) return r;
        if (r == 0 && s->index) *s->index = pos;
        return ba_leave(op, r);
    }

    /* The last arriver: every party of the phase has arrived, and the count
     * (now n) keeps them asleep until we release the phase. */
    if (s->completion) s->completion(s->arg);
    for (;;) {
        if (v & BA_BROKEN) {
            s->v = v;
            return ba_leave(op, EPIPE); /* aborted (or a time-out) while completing */
        }
        /* AR: acquire the arrivals (for the completion, done above by the
         * add) and release them and the completion's writes to everyone. */
        if (at_cas(w, &v, next_phase(v), AR)) break;
    }
    s->v = v;
    s->wake = (v & BA_WAITERS) != 0;
    if (s->index) *s->index = pos;
    return ba_leave(op, 0);
}

int sqf_barrier_wait_step_(struct sqf_waitop *op, int how)
{
    struct sqf_barrier_wait_ *s = &op->u.barrier;
    sqf_barrier *b = s->b;
    sqf_word *w = ba_word(b);
    if (how == SQF_OP_START) {
        s->n = at_load(ba_parties(b), RLX);
        if (s->n == 0 || s->n > SQF_BARRIER_MAX) return EINVAL;
        uint32_t v = at_load(w, ACQ);
        if (v & BA_BROKEN) return EPIPE; /* ACQ: synchronises with the break */
        at_add(ba_waiters(b), 1, RLX);   /* before our first change of the word */
        s->v = v;
        s->wake = 0;
        s->stop = 0;
        return arrive(op);
    }
    if (how == ECANCELED || how == ENOTSUP) s->stop = how;
    int r = await_step(op, at_load(w, ACQ));
    if (r == SQF_OP_SLEEP) return r;
    if (s->stage == BA_ARRIVED || r != 0) {
        if (r == 0 && s->stage == BA_ARRIVED && s->index) *s->index = s->pos;
        return ba_leave(op, r);
    }
    return arrive(op); /* the full phase was released: arrive in the next */
}

static int barrier_wait(sqf_barrier *b, sqf_deadline deadline, const sqf_cancel *tok,
                        void (*completion)(void *), void *arg, unsigned *index)
{
    if (!b) return EINVAL;
    struct sqf_waitop op = sqf_op_blocking(deadline, tok);
    op.u.barrier.b = b;
    op.u.barrier.completion = completion;
    op.u.barrier.arg = arg;
    op.u.barrier.index = index;
    return sqf_op_block(&op, sqf_barrier_wait_step_);
}

int sqf_barrier_wait(sqf_barrier *b, unsigned *index)
{
    return barrier_wait(b, SQF_FOREVER, NULL, NULL, NULL, index);
}

int sqf_barrier_timedwait(sqf_barrier *b, sqf_deadline deadline, unsigned *index)
{
    return barrier_wait(b, deadline, NULL, NULL, NULL, index);
}

int sqf_barrier_wait_fn(sqf_barrier *b, void (*completion)(void *arg), void *arg, unsigned *index)
{
    return barrier_wait(b, SQF_FOREVER, NULL, completion, arg, index);
}

int sqf_barrier_wait_until(sqf_barrier *b, sqf_deadline deadline, const sqf_cancel *cancel,
                           void (*completion)(void *arg), void *arg, unsigned *index)
{
    return barrier_wait(b, deadline, cancel, completion, arg, index);
}

int sqf_barrier_abort(sqf_barrier *b)
{
    if (!b) return EINVAL;
    sqf_word *w = ba_word(b);
    uint32_t v = at_load(w, RLX);
    int broke;
    while ((broke = try_break(w, &v)) < 0) {
    }
    /* After the CAS only the address is used. */
    if (broke && (v & BA_WAITERS)) sqf_wake(w, INT32_MAX, (v & BA_SHARED) != 0);
    return 0;
}

int sqf_barrier_reset(sqf_barrier *b)
{
    if (!b) return EINVAL;
    sqf_word *w = ba_word(b);
    /* ACQ: a thread that changed the word before the value we read counted
     * itself first; the read makes that count visible to the load below. */
    uint32_t v = at_load(w, ACQ);
    for (;;) {
        if (at_load(ba_waiters(b), ACQ)) return EBUSY;
        if (!(v & BA_BROKEN)) return 0;
        /* Succeeds only if nobody changed the word since the read that
         * preceded the count check (AR: ACQ on failure, for the re-check). */
        if (at_cas(w, &v, next_phase(v), AR)) return 0;
    }
}
