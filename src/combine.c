/* combine.c: sqf_mutex_combine, flat combining on an sqf_mutex.
 *
 * The contract and the COMBINE bit are documented in
 * include/squarefree/mutex.h.  How it works:
 *
 * A mutex word has no room for a pointer, and must not hold one (it may be
 * shared between processes), so queued requests live in a process-local side
 * table: NBUCKETS buckets hashed by the mutex's address.  Each bucket has
 * - a lock (an sqf_mutex, held only for a few pointer moves),
 * - a FIFO list of requests, each a node on its requester's stack,
 * - `gen`, the word every requester of that bucket sleeps on.
 *
 * A requester that finds the mutex held queues its node under the bucket
 * lock and, still under it, sets COMBINE in the lock word with a CAS that
 * requires LOCKED.  So COMBINE is set only while LOCKED is, it changes only
 * under the bucket lock, and while it is set at least one node for the mutex
 * is queued.  The holder's unlock sees COMBINE (the inline unlock's CAS
 * expects the word to be exactly LOCKED, so it fails and calls the slow path)
 * and calls sqf_mutex_drain_ before anything else.  The drain, under the
 * bucket lock, detaches every node for the mutex and clears COMBINE; then,
 * still holding the mutex but not the bucket lock, runs each fn, marks each
 * node done, and wakes the bucket's sleepers with one wake.  The unlock then
 * re-reads the word: a request queued after the drain set COMBINE again
 * (it saw LOCKED), and every CAS that releases or hands off the lock expects
 * COMBINE clear, so it fails and the unlock drains again.
 *
 * gen's bit 0 (SLEEPERS) says that a requester may be asleep on it; the rest
 * is a generation counter that every drain advances (so a requester that
 * read gen before the drain never sleeps through it).  Requesters of other
 * mutexes that hash to the same bucket are woken too: they find their own
 * node not done and sleep again.
 *
 * Once the holder marks a node done, the node's stack frame may be gone: the
 * holder reads everything it needs (next, fn, arg) before.
 */
#include <limits.h>
#include <pthread.h>

#include <squarefree/mutex.h>

#include "atomic.h"
#include "mutex_word.h"
#include "wait.h"

/* A request's state: queued; fn ran; or "the mutex is now yours" (the
 * holder passed it on instead of running more requests: the requester runs
 * its own fn and unlocks). */
#define REQ_QUEUED 0u
#define REQ_DONE   1u
#define REQ_YOURS  2u

struct request {
    sqf_mutex *m;
    void (*fn)(void *);
    void *arg;
    struct request *next; /* guarded by the bucket lock while queued */
    sqf_word state;
};

#define GEN_SLEEPERS 1u
#define GEN_STEP     2u

struct bucket {
    _Alignas(64) sqf_mutex lock;
    sqf_word gen;
    struct request *head, *tail; /* guarded by lock */
};

#define BUCKET_BITS 6
#define NBUCKETS    (1 << BUCKET_BITS)

static struct bucket table[NBUCKETS];

static struct bucket *bucket_of(sqf_mutex *m)
{
    uint64_t a = (uint64_t)((uintptr_t)m >> 2);
    return &table[(a * 0x9E3779B97F4A7C15ull) >> (64 - BUCKET_BITS)];
}

/* Run fn as an ordinary critical section. */
static int run_locked(sqf_mutex *m, void (*fn)(void *), void *arg)
{
    sqf_mutex_lock(m);
    fn(arg);
    sqf_mutex_unlock(m);
    return 0;
}

/* Advance b's generation and wake every requester asleep on it: one
 * system call, none if nobody has gone to sleep since the last wake.  The
 * nodes' states were stored before (REL), so a requester that sees the new
 * generation (ACQ) also sees its state. */
static void wake_bucket(struct bucket *b)
{
    /* RLX: a hint; the REL CAS below re-reads */
    uint32_t g = at_load(&b->gen, RLX);
    /* REL: pairs with the ACQ load of gen in sqf_mutex_combine (the nodes' states come with it) */
    while (!at_cas(&b->gen, &g, (g + GEN_STEP) & ~GEN_SLEEPERS, REL)) {
    }
    if (g & GEN_SLEEPERS) sqf_wake(&b->gen, INT_MAX, false);
}

bool sqf_mutex_drain_(sqf_mutex *m, sqf_deadline *since)
{
    struct bucket *b = bucket_of(m);
    bool pass = false;
    if (*since == 0)
        *since = sqf_now();
    else
        pass = sqf_now() - *since > MU_COMBINE_NS;

    /* Split the bucket's list into the nodes for m that we take (all of
     * them, or when passing only the oldest) and the rest, keeping order. */
    sqf_mutex_lock(&b->lock);
    struct request *take = NULL, **take_end = &take;
    struct request *keep = NULL, **keep_end = &keep, *keep_last = NULL;
    bool left = false;
    for (struct request *r = b->head, *next; r; r = next) {
        next = r->next;
        if (r->m == m && !(pass && take)) {
            *take_end = r;
            take_end = &r->next;
        } else {
            left |= r->m == m;
            *keep_end = r;
            keep_end = &r->next;
            keep_last = r;
        }
    }
    *take_end = NULL;
    *keep_end = NULL;
    b->head = keep;
    b->tail = keep_last;
    /* No request for m is left queued: COMBINE goes, under the bucket lock
     * as every change of it does.  The holder's word may change meanwhile
     * (PARKED, STARVING), hence an atomic and. */
    /* RLX: COMBINE changes only under the bucket lock, whose unlock and lock order it */
    if (!left) at_and(mu_word(m), ~MU_COMBINE, RLX);

    if (pass && take) {
        /* Enough combining for this unlock: the oldest requester gets the
         * lock itself (LOCKED never drops, so nothing can barge) and the
         * rest stay queued for it.  From the REL store on, m is not ours. */
        at_store(&take->state, REQ_YOURS, REL);
        sqf_mutex_unlock(&b->lock);
        wake_bucket(b);
        return false;
    }
    sqf_mutex_unlock(&b->lock);
    if (!take) return true;

    /* Other threads' sections must not act on a cancellation aimed at this
     * thread: unwinding here would strand every request still in `take`. */
    int cancel_state;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
    for (struct request *r = take, *next; r; r = next) {
        next = r->next;
        r->fn(r->arg);
        /* REL: fn's effects are visible to the requester once it sees
         * DONE.  After this store the node may be gone. */
        at_store(&r->state, REQ_DONE, REL);
    }
    pthread_setcancelstate(cancel_state, NULL);
    wake_bucket(b);
    return true;
}

int sqf_mutex_combine(sqf_mutex *m, void (*fn)(void *arg), void *arg)
{
    if (!m || !fn) return EINVAL;
    /* The side table is process-local: requests queued here could not be
     * seen by a holder in another process. */
    if (mu_shared(m)) return run_locked(m, fn, arg);

    sqf_word *w = mu_word(m);
    struct bucket *b = bucket_of(m);
    struct request req = {.m = m, .fn = fn, .arg = arg, .next = NULL};
    /* RLX: the node is not yet shared; the bucket lock publishes it */
    at_store(&req.state, REQ_QUEUED, RLX);
    for (;;) {
        if (sqf_mutex_trylock(m) == 0) {
            fn(arg);
            sqf_mutex_unlock(m); /* runs whatever was queued meanwhile */
            return 0;
        }
        sqf_mutex_lock(&b->lock);
        /* RLX: a hint; the CAS below re-reads */
        uint32_t v = at_load(w, RLX);
        /* RLX: COMBINE changes only under the bucket lock; it publishes the node to the drain */
        while ((v & MU_LOCKED) && !(v & (MU_STARVING | MU_COMBINE)) &&
               !at_cas(w, &v, v | MU_COMBINE, RLX)) {
        }
        if (v & MU_STARVING) {
            /* Hand-off mode: a sleeper has waited too long for the lock.
             * Queueing would keep the lock from it (the holder runs queued
             * requests before it hands off, and they could keep coming):
             * line up behind it instead. */
            sqf_mutex_unlock(&b->lock);
            return run_locked(m, fn, arg);
        }
        if (!(v & MU_LOCKED)) { /* released since the trylock: try again */
            sqf_mutex_unlock(&b->lock);
            continue;
        }
        /* COMBINE is set and m is held: its holder will see our node.  The
         * bucket unlock publishes the node (and what our caller wrote before
         * calling) to the holder, which takes the bucket lock to drain. */
        if (b->tail)
            b->tail->next = &req;
        else
            b->head = &req;
        b->tail = &req;
        sqf_mutex_unlock(&b->lock);
        break;
    }

    /* Sleep until the holder has run fn (or passed us the lock).  Read gen
     * before the state: a drain that marks us after the state read advances
     * gen after marking, so the wait below sees the change and returns. */
    uint32_t state;
    for (;;) {
        /* ACQ: pairs with wake_bucket's REL CAS, so the state load below sees the drain's mark */
        uint32_t g = at_load(&b->gen, ACQ);
        /* ACQ: pairs with the REL store of REQ_DONE / REQ_YOURS in sqf_mutex_drain_ */
        state = at_load(&req.state, ACQ);
        if (state != REQ_QUEUED) break;
        if (!(g & GEN_SLEEPERS)) {
            /* RLX: only this word's value matters; the futex check on gen orders the rest */
            if (!at_cas(&b->gen, &g, g | GEN_SLEEPERS, RLX)) continue;
            g |= GEN_SLEEPERS;
        }
        sqf_wait(&b->gen, g, SQF_FOREVER, false);
    }
    if (state == REQ_YOURS) { /* we hold m, with LOCKED never dropped */
        fn(arg);
        sqf_mutex_unlock(m);
    }
    return 0;
}

int sqf_mutex_combine_queued_(sqf_mutex *m)
{
    struct bucket *b = bucket_of(m);
    int n = 0;
    sqf_mutex_lock(&b->lock);
    for (struct request *r = b->head; r; r = r->next)
        n += r->m == m;
    sqf_mutex_unlock(&b->lock);
    return n;
}
