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
#include "cancel_wait.h"

#define BA_COUNT       ((1u << 21) - 1)
#define BA_WAITERS     (1u << 21)
#define BA_BROKEN      (1u << 22)
#define BA_SHARED      (1u << 23)
#define BA_PHASE_SHIFT 24
#define BA_PHASE       (~0u << BA_PHASE_SHIFT)

_Static_assert(SQF_BARRIER_MAX <= BA_COUNT / 2, "the count needs room for arrivals racing a break");

static inline sqf_word *ba_word(sqf_barrier *b)
{
    return (sqf_word *)&b->word;
}
static inline sqf_word *ba_parties(sqf_barrier *b)
{
    return (sqf_word *)&b->parties;
}
static inline sqf_word *ba_waiters(sqf_barrier *b)
{
    return (sqf_word *)&b->waiters;
}

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

/* Sleep until the phase of `v` (a recent value of the word) is released.
 * Returns 0 (released), EPIPE (broken), or ETIMEDOUT.  `arrived`: this
 * thread has arrived in that phase, so a time-out breaks the barrier, and
 * *wake tells whether sleepers must then be woken (by the caller, after it
 * has uncounted itself).  *v is left at the last value seen. */
static int await_release(sqf_word *w, uint32_t *v, sqf_deadline deadline, const sqf_cancel *tok,
                         int arrived, int *wake)
{
    int stop = 0; /* ECANCELED or ENOTSUP once the token stops us */
    uint32_t phase = phase_of(*v);
    uint32_t x = *v;
    int r;
    for (;;) {
        /* A changed phase means ours was released: resets cannot happen
         * while we are counted, and the next phase needs us to complete. */
        if (phase_of(x) != phase) {
            r = 0;
            break;
        }
        if (x & BA_BROKEN) {
            r = EPIPE;
            break;
        }
        if (stop || (deadline != SQF_FOREVER && deadline <= sqf_now())) {
            /* A time-out or a cancellation breaks the barrier, as a
             * withdrawn arrival would complete the phase short-handed. */
            r = stop ? stop : ETIMEDOUT;
            if (!arrived) break;
            int broke = try_break(w, &x);
            if (broke < 0) continue; /* the word changed: released, maybe */
            *wake = broke && (x & BA_WAITERS);
            break;
        }
        /* ACQ: on failure x may show the release, and we return on it. */
        if (!(x & BA_WAITERS) && !at_cas(w, &x, x | BA_WAITERS, ACQ)) continue;
        int rw = sqf_wait_cancellable(w, x | BA_WAITERS, deadline, (x & BA_SHARED) != 0, tok);
        if (rw == ECANCELED || rw == ENOTSUP) stop = rw;
        x = at_load(w, ACQ);
    }
    *v = x;
    return r;
}

static int barrier_wait(sqf_barrier *b, sqf_deadline deadline, const sqf_cancel *tok,
                        void (*completion)(void *), void *arg, unsigned *index)
{
    if (!b) return EINVAL;
    uint32_t n = at_load(ba_parties(b), RLX);
    if (n == 0 || n > SQF_BARRIER_MAX) return EINVAL;
    sqf_word *w = ba_word(b);
    uint32_t v = at_load(w, ACQ);
    if (v & BA_BROKEN) return EPIPE; /* ACQ: synchronises with the break */
    at_add(ba_waiters(b), 1, RLX);   /* before our first change of the word */
    int result, wake = 0;
    uint32_t pos;
    for (;;) {
        if ((v & BA_COUNT) >= n) {
            /* The phase is full (an extra thread: see "Requires"): wait
             * until it is released, then arrive in the next one. */
            result = await_release(w, &v, deadline, tok, 0, &wake);
            if (result) goto out;
            continue;
        }
        /* AR: release our writes to the last arriver and, through it, to
         * everyone; acquire the earlier arrivals (if we are last) or the
         * break (if we return EPIPE). */
        uint32_t old = at_add(w, 1, AR);
        if (old & BA_BROKEN) {
            result = EPIPE; /* our add to a broken word is harmless */
            goto out;
        }
        v = old + 1;
        pos = old & BA_COUNT;
        if (pos < n) break;
        /* Added to a full phase: its release zeroes the count, erasing our
         * add; wait for that and try again. */
    }
    if (pos < n - 1) {
        result = await_release(w, &v, deadline, tok, 1, &wake);
        if (result == 0 && index) *index = pos;
        goto out;
    }

    /* The last arriver: every party of the phase has arrived, and the count
     * (now n) keeps them asleep until we release the phase. */
    if (completion) completion(arg);
    for (;;) {
        if (v & BA_BROKEN) {
            result = EPIPE; /* aborted (or a time-out) while completing */
            goto out;
        }
        /* AR: acquire the arrivals (for the completion, done above by the
         * add) and release them and the completion's writes to everyone. */
        if (at_cas(w, &v, next_phase(v), AR)) break;
    }
    /* We touch only the word's address after uncounting ourselves. */
    wake = (v & BA_WAITERS) != 0;
    result = 0;
    if (index) *index = pos;
out:
    /* REL: pairs with destroy's and reset's ACQ loads. */
    at_sub(ba_waiters(b), 1, REL);
    if (wake) sqf_wake(w, INT32_MAX, (v & BA_SHARED) != 0);
    return result;
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
