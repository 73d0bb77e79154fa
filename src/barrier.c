/* barrier.c: sqf_barrier.  The state words are documented as invariants in
 * include/squarefree/barrier.h; the comments here say why each step is safe.
 *
 * Two words.  The arrival word decides everything: arrivals are one atomic
 * add each (no CAS retry loop, however many arrive together); the add that
 * brings the count to parties makes its thread the last arriver, which runs
 * the completion (the count stays at parties meanwhile, so nobody is
 * released) and then releases the phase with one CAS that advances the
 * phase and zeroes the count.  Breaks (abort, a party giving up) and resets
 * are single atomic changes of the same word.
 *
 * Sleepers sleep on the release word, which no arrival touches: so an
 * arrival neither makes a sleeper's futex check fail (EAGAIN) nor changes
 * the word sleepers CAS.  Whoever changes the arrival word's phase or
 * BROKEN then publishes that change to the release word (one CAS that also
 * clears WAITERS) and, if WAITERS was set, wakes all with one call.
 * Sleepers set WAITERS there with a CAS and sleep only while the word still
 * holds what they saw, WAITERS included (as in once.c and event.c): either
 * the publish comes first and the CAS or the futex check fails, or the
 * publish sees WAITERS and wakes.
 *
 * The `waiters` count keeps reset (and destroy) away from threads that have
 * yet to learn their phase's outcome.  Every thread counts itself before its
 * first change of the arrival word (its add), so a reset that reads that
 * word (ACQ, through the release sequence of RMWs on it) sees that thread
 * counted, and a reset's CAS cannot succeed on a word that changed since
 * that read.  A thread uncounts itself after its last use of the words, and
 * before its wake-up call, which uses only the release word's address.
 */
#include <squarefree/barrier.h>

#include "atomic.h"
#include "barrier_word.h"
#include "tunables.h"
#include "waitop.h"

/* Times a blocking wait offers its CPU (sched_yield) before its first
 * sleep.  With more parties than CPUs, the parties still to arrive are
 * runnable: yielding lets them run, and a waiter that finds its phase
 * released on its return never sleeps, so the last arriver wakes fewer.
 * With nothing else runnable a yield returns at once: a dozen cost a
 * few microseconds of CPU per wait. */
#define BA_YIELDS SQF_BARRIER_YIELDS

static inline uint32_t phase_of(uint32_t v)
{
    return v >> BA_PHASE_SHIFT;
}

/* Whether phase a is after phase b, by 1..127 (mod 256). */
static inline bool phase_after(uint32_t a, uint32_t b)
{
    return ((a - b - 1) & 0xFFu) < 0x7Fu;
}

/* The arrival word of the next phase: phase + 1 (mod 256), no arrivals,
 * not broken. */
static inline uint32_t next_phase(uint32_t v)
{
    return (v & BA_PHASE) + (1u << BA_PHASE_SHIFT);
}

/* Publish t, a value this thread just wrote to the arrival word, to the
 * release word: its PHASE and BROKEN, unless the release word already shows
 * them or a later state (a later phase, or this phase broken), as when a
 * release is published after the break or reset that followed it.  Returns
 * the release word's value that the publish replaced (wake all if it has
 * WAITERS, shared if SHARED), or 0 if it wrote nothing. */
static uint32_t publish(sqf_barrier *b, uint32_t t)
{
    sqf_word *rw = ba_release(b);
    /* RLX: a hint; the REL CAS below re-reads (a failed one only makes us publish nothing) */
    uint32_t r = at_load(rw, RLX);
    for (;;) {
        bool later = phase_after(phase_of(t), phase_of(r)) ||
                     (phase_of(t) == phase_of(r) && (t & BA_BROKEN) && !(r & BA_BROKEN));
        if (!later) return 0; /* its writer publishes, and wakes */
        /* REL: a sleeper that reads this (ACQ) and returns on it acquires
         * what our change of the arrival word acquired (the arrivals, a
         * break) and what we did before (the completion). */
        if (at_cas(rw, &r, (t & (BA_PHASE | BA_BROKEN)) | (r & BA_SHARED), REL)) return r;
    }
}

int sqf_barrier_init(sqf_barrier *b, unsigned parties, unsigned flags)
{
    if (!b || (flags & ~SQF_SHARED) || parties == 0 || parties > SQF_BARRIER_MAX) return EINVAL;
    if ((flags & SQF_SHARED) && !sqf_wait_shared_supported()) return ENOTSUP;
    /* RLX, and REL more than needed: b reaches other threads through their own synchronization */
    at_store(ba_waiters(b), 0, RLX);
    at_store(ba_parties(b), parties, RLX);
    at_store(ba_release(b), (flags & SQF_SHARED) ? BA_SHARED : 0, RLX);
    at_store(ba_word(b), 0, REL);
    return 0;
}

int sqf_barrier_destroy(sqf_barrier *b)
{
    if (!b) return EINVAL;
    /* ACQ: pairs with the REL at_sub of waiters in ba_leave, so the caller may free b */
    return at_load(ba_waiters(b), ACQ) ? EBUSY : 0;
}

/* The wait protocol (waitop.h).  Stages of a barrier wait: */
enum {
    BA_FULL,   /* found the phase full (an extra thread: see "Requires"):
                  waiting for its release, to arrive in the next one */
    BA_ARRIVED /* arrived (not last): waiting for the phase's release */
};

/* Wake every sleeper on the release word rw if the publish that replaced
 * `replaced` cleared WAITERS.  Uses only the address. */
static void wake_waiters(sqf_word *rw, uint32_t replaced)
{
    if (replaced & BA_WAITERS) sqf_wake(rw, INT32_MAX, (replaced & BA_SHARED) != 0);
}

/* The end of every wait that counted itself: uncount, then wake if our
 * publish cleared WAITERS (the address only: a released thread may free *b
 * once we are uncounted). */
static int ba_leave(struct sqf_waitop *op, int result)
{
    sqf_barrier *b = op->u.barrier.b;
    sqf_word *rw = ba_release(b);
    uint32_t r = op->u.barrier.replaced;
    /* REL: pairs with destroy's and reset's ACQ loads. */
    at_sub(ba_waiters(b), 1, REL);
    wake_waiters(rw, r);
    return result;
}

/* An arrived party whose deadline passed or whose token fired gives up:
 * the arrival word says whether its phase was released meanwhile (0), or
 * broken by another (EPIPE); if neither, the party breaks it (a withdrawn
 * arrival would let the phase complete short-handed) and returns err. */
static int give_up(struct sqf_waitop *op, int err)
{
    struct sqf_barrier_wait_ *s = &op->u.barrier;
    sqf_word *w = ba_word(s->b);
    /* ACQ: pairs with the AR release or break in arrive, give_up, abort: we return on it */
    uint32_t c = at_load(w, ACQ);
    for (;;) {
        /* A changed phase means ours was released: resets cannot happen
         * while we are counted, and the next phase needs us to complete. */
        if (phase_of(c) != s->phase) return 0;
        if (c & BA_BROKEN) return EPIPE;
        /* AR: the break is a release (EPIPE returns acquire it); ACQ on
         * failure, as we decide again on the value seen. */
        if (at_cas(w, &c, c | BA_BROKEN, AR)) break;
    }
    s->replaced = publish(s->b, c | BA_BROKEN);
    return err;
}

/* One look at the awaited phase: 0 (released), EPIPE (broken), the stop
 * (then, if we had arrived, see give_up), or SQF_OP_SLEEP. */
static int await_step(struct sqf_waitop *op)
{
    struct sqf_barrier_wait_ *s = &op->u.barrier;
    sqf_word *rw = ba_release(s->b);
    int stop = sqf_op_stop(op);    /* before the reads: see waitop.h */
    uint32_t r = at_load(rw, ACQ); /* ACQ: pairs with publish's REL CAS: we may return on it */
    for (;;) {
        if (phase_after(phase_of(r), s->phase)) return 0;
        if (phase_of(r) == s->phase && (r & BA_BROKEN)) return EPIPE;
        if (stop) return s->stage == BA_ARRIVED ? give_up(op, stop) : stop;
        if (op->may_spin && s->yields > 0) {
            s->yields--;
            sqf_wait_yield();
            r = at_load(rw, ACQ); /* ACQ: pairs with publish's REL CAS: we may return on it */
            continue;
        }
        /* ACQ: pairs with publish's REL CAS: a failed CAS's r may show the release */
        if (!(r & BA_WAITERS) && !at_cas(rw, &r, r | BA_WAITERS, ACQ)) continue;
        op->word = rw;
        op->expected = r | BA_WAITERS;
        op->shared = (r & BA_SHARED) != 0;
        return SQF_OP_SLEEP;
    }
}

/* Arrive in the phase of u.barrier.v, a recent value of the arrival word
 * (waiting first for a full phase's release), then wait for our phase's
 * release, or release it if last. */
static int arrive(struct sqf_waitop *op)
{
    struct sqf_barrier_wait_ *s = &op->u.barrier;
    sqf_word *w = ba_word(s->b);
    uint32_t v = s->v, pos;
    for (;;) {
        if ((v & BA_COUNT) >= s->n) {
            s->stage = BA_FULL;
            s->phase = phase_of(v);
            int r = await_step(op);
            if (r) return r == SQF_OP_SLEEP ? r : ba_leave(op, r);
            /* RLX: await_step's ACQ read of the release word ordered us after the zeroing CAS */
            v = at_load(w, RLX); /* released: the count was zeroed first */
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
        int r = await_step(op);
        if (r == SQF_OP_SLEEP) return r;
        if (r == 0 && s->index) *s->index = pos;
        return ba_leave(op, r);
    }

    /* The last arriver: every party of the phase has arrived, and the count
     * (now n) keeps them asleep until we release the phase. */
    if (s->completion) s->completion(s->arg);
    for (;;) {
        if (v & BA_BROKEN)
            return ba_leave(op, EPIPE); /* aborted (or a time-out) while completing */
        /* AR: acquire the arrivals (for the completion, done above by the
         * add) and release them and the completion's writes to everyone
         * who acquires this value (publish, give_up). */
        if (at_cas(w, &v, next_phase(v), AR)) break;
        /* Failed: a break, or an extra thread's add (erased by ours). */
    }
    s->replaced = publish(s->b, next_phase(v));
    if (s->index) *s->index = pos;
    return ba_leave(op, 0);
}

int sqf_barrier_wait_step_(struct sqf_waitop *op, int how)
{
    struct sqf_barrier_wait_ *s = &op->u.barrier;
    sqf_barrier *b = s->b;
    sqf_word *w = ba_word(b);
    if (how == SQF_OP_START) {
        /* RLX: parties is fixed by sqf_barrier_init; no data rides on it */
        s->n = at_load(ba_parties(b), RLX);
        if (s->n == 0 || s->n > SQF_BARRIER_MAX) return EINVAL;
        uint32_t v = at_load(w, ACQ);
        if (v & BA_BROKEN) return EPIPE; /* ACQ: pairs with the break's AR (give_up, abort) */
        /* RLX: our AR add below carries the count to sqf_barrier_reset's ACQ loads (see the top) */
        at_add(ba_waiters(b), 1, RLX); /* before our first change of the word */
        s->v = v;
        s->replaced = 0;
        s->yields = BA_YIELDS;
        return arrive(op);
    }
    int r = await_step(op);
    if (r == SQF_OP_SLEEP) return r;
    if (s->stage == BA_ARRIVED || r != 0) {
        if (r == 0 && s->stage == BA_ARRIVED && s->index) *s->index = s->pos;
        return ba_leave(op, r);
    }
    /* RLX: await_step's ACQ read of the release word ordered us after the zeroing CAS */
    s->v = at_load(w, RLX); /* the full phase was released: arrive in the next */
    return arrive(op);
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

int sqf_barrier_state(sqf_barrier *b, unsigned *parties, unsigned *arrived)
{
    if (!b) return EINVAL;
    /* The arrival word decides both: a broken phase counts nobody. */
    /* RLX: a snapshot for the caller; nothing is read on the strength of it */
    uint32_t v = at_load(ba_word(b), RLX);
    if (parties) *parties = at_load(ba_parties(b), RLX);
    if (arrived) *arrived = (v & BA_BROKEN) ? 0 : (v & BA_COUNT);
    return (v & BA_BROKEN) ? EPIPE : 0;
}

int sqf_barrier_abort(sqf_barrier *b)
{
    if (!b) return EINVAL;
    /* AR: the break is a release (EPIPE returns acquire it); acquire, so
     * that a release we publish late is published with what it acquired. */
    uint32_t old = at_or(ba_word(b), BA_BROKEN, AR);
    if (old & BA_BROKEN) return 0; /* broken already: its breaker publishes */
    wake_waiters(ba_release(b), publish(b, old | BA_BROKEN));
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
        /* ACQ: pairs with the REL at_sub of waiters in ba_leave */
        if (at_load(ba_waiters(b), ACQ)) return EBUSY;
        if (!(v & BA_BROKEN)) return 0;
        /* Succeeds only if nobody changed the word since the read that
         * preceded the count check (AR: ACQ on failure, for the re-check). */
        if (at_cas(w, &v, next_phase(v), AR)) break;
    }
    /* Arrivals of the fresh phase may already sleep on the release word,
     * which shows the old phase (not theirs) until this publish wakes them. */
    wake_waiters(ba_release(b), publish(b, next_phase(v)));
    return 0;
}
