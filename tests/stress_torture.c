/* stress_torture.c: a randomized, oversubscribed torture on the real
 * kernel, with deadlines and cancellation tokens firing everywhere.
 *
 * Why: the deterministic scheduler explores a model of the futex, and a
 * model can be kinder than the kernel (it once counted a sleeper woken at
 * most once, and missed a real hang).  Here 24 threads on however few CPUs
 * share one mutex (lock, timed, cancellable, try; unlock and unlock_fair),
 * a condition variable on that mutex (signal, broadcast, timed and
 * cancellable waits), a semaphore, a readers/writer lock and an event.
 * Every wait gets a random deadline (past, a few microseconds, a
 * millisecond, never) and often a token, chained to a per-op child with a
 * deadline of its own; threads cancel each other's tokens at random.
 *
 * What it catches:
 * - broken exclusion: an `inside` count that is not 0 on entry (mutex,
 *   rwlock writers), readers beside a writer, more permits held than exist;
 * - a lost or duplicated permit or item: the semaphore's value and the
 *   cond's item books are checked at the end;
 * - a lost wake-up or a swallowed hand-off: untimed waits are mixed in
 *   wherever progress is guaranteed (plain lock, acquire, rdlock/wrlock,
 *   and cond waits that the final broadcast ends), so a lost wake-up is a
 *   hang, which the watchdog reports; and every primitive must be free and
 *   destroyable at the end;
 * - a wrong result: each call may return only its documented outcomes.
 *
 * Two event loops join in (one on io_uring where it runs, one on the
 * fallback), each on its own thread with several ops pending on the same
 * mutex, cond, semaphore, rwlock and event, with their own deadlines and
 * tokens (which the threads cancel at random too) and sqf_loop_cancel.
 *
 * SQF_SOAK=k runs k times longer (SQF_SOAK=1: 100 times). */
#include <errno.h>
#include <poll.h>
#include <time.h>

#include <squarefree/cancel.h>
#include <squarefree/cond.h>
#include <squarefree/event.h>
#include <squarefree/loop.h>
#include <squarefree/mutex.h>
#include <squarefree/rwlock.h>
#include <squarefree/sem.h>

#include "atomic.h"
#include "check.h"

#define THREADS 24
#define PERMITS 3

static sqf_mutex mu;
static sqf_cond cv;
static sqf_sem sem;
static sqf_rwlock rw;
static sqf_event ev;

static int inside;                     /* guarded by mu */
static long items, produced, consumed; /* guarded by mu */
static int stop;                       /* guarded by mu; also read racily as a hint */
static sqf_word held;                  /* permits held now */
static sqf_word writers, readers;

static sqf_cancel toks[THREADS]; /* each thread's token; anyone may cancel it */

/* Outcomes, for the report and for "the test exercised what it claims". */
static sqf_word n_ok, n_timedout, n_cancelled, n_busy;

struct rng {
    uint64_t s;
};
static unsigned rnd(struct rng *r, unsigned n)
{
    r->s = r->s * 6364136223846793005u + 1442695040888963407u;
    return (unsigned)(r->s >> 33) % n;
}

/* A deadline: past, a few microseconds, a millisecond, or never. */
static sqf_deadline any_deadline(struct rng *r)
{
    switch (rnd(r, 6)) {
    case 0:
        return sqf_now() - 1;
    case 1:
        return sqf_after((int64_t)rnd(r, 20) * SQF_US);
    case 2:
    case 3:
        return sqf_after((int64_t)(200 + rnd(r, 1500)) * SQF_US);
    default:
        return SQF_FOREVER;
    }
}

/* Outcome of a wait that could give up: anything else is a failure. */
static bool tally(int e, bool may_give_up)
{
    if (e == 0) {
        at_add(&n_ok, 1, RLX);
        return true;
    }
    if (may_give_up && e == ETIMEDOUT) {
        at_add(&n_timedout, 1, RLX);
    } else if (may_give_up && e == ECANCELED) {
        at_add(&n_cancelled, 1, RLX);
    } else if (e == EBUSY) {
        at_add(&n_busy, 1, RLX);
    } else {
        CHECK_EQ(e, 0);
    }
    return false;
}

static void critical_mu(struct rng *r)
{
    CHECK_EQ(inside++, 0);
    if (rnd(r, 16) == 0) sched_yield(); /* preempted while holding it */
    inside--;
}

static void unlock_mu(struct rng *r)
{
    CHECK_EQ(rnd(r, 4) == 0 ? sqf_mutex_unlock_fair(&mu) : sqf_mutex_unlock(&mu), 0);
}

/* Lock mu by any means; returns whether it is held.  Untimed and
 * untokened sometimes: progress is guaranteed, so a lost wake-up hangs. */
static bool lock_mu(struct rng *r, const sqf_cancel *tok)
{
    switch (rnd(r, 4)) {
    case 0:
        return tally(sqf_mutex_lock(&mu), false);
    case 1:
        return tally(sqf_mutex_trylock(&mu), false);
    default: {
        sqf_deadline d = any_deadline(r);
        return tally(sqf_mutex_lock_until(&mu, d, tok), true);
    }
    }
}

static void op_mutex(struct rng *r, const sqf_cancel *tok)
{
    if (!lock_mu(r, tok)) return;
    critical_mu(r);
    unlock_mu(r);
}

static void op_cond_wait(struct rng *r, const sqf_cancel *tok)
{
    CHECK_EQ(sqf_mutex_lock(&mu), 0);
    critical_mu(r);
    bool plain = rnd(r, 3) == 0; /* ended by a signal, or by the final broadcast */
    sqf_deadline d = plain ? SQF_FOREVER : any_deadline(r);
    int e = 0;
    while (items == 0 && !stop && e == 0)
        e = plain ? sqf_cond_wait(&cv, &mu) : sqf_cond_wait_until(&cv, &mu, d, tok);
    if (plain)
        CHECK_EQ(e, 0);
    else
        tally(e, true);
    critical_mu(r); /* m is held again whatever the wait returned */
    if (items > 0) {
        items--;
        consumed++;
    }
    unlock_mu(r);
}

static void op_cond_post(struct rng *r)
{
    CHECK_EQ(sqf_mutex_lock(&mu), 0);
    critical_mu(r);
    unsigned k = 1 + rnd(r, 3);
    items += k;
    produced += k;
    if (rnd(r, 3) == 0) {
        CHECK_EQ(sqf_cond_broadcast(&cv), 0);
    } else {
        for (unsigned i = 0; i < k; i++)
            CHECK_EQ(sqf_cond_signal(&cv), 0);
    }
    unlock_mu(r);
}

static void op_sem(struct rng *r, const sqf_cancel *tok)
{
    int e;
    switch (rnd(r, 4)) {
    case 0:
        e = sqf_sem_acquire(&sem);
        if (!tally(e, false)) return;
        break;
    case 1:
        e = sqf_sem_tryacquire(&sem);
        if (!tally(e, false)) return;
        break;
    default:
        e = sqf_sem_acquire_until(&sem, any_deadline(r), tok);
        if (!tally(e, true)) return;
    }
    CHECK(at_add(&held, 1, SC) < PERMITS);
    if (rnd(r, 8) == 0) sched_yield();
    at_sub(&held, 1, SC);
    CHECK_EQ(sqf_sem_release(&sem, 1), 0);
}

static void op_rwlock(struct rng *r, const sqf_cancel *tok)
{
    bool write = rnd(r, 3) == 0;
    int e;
    unsigned how = rnd(r, 3);
    if (write)
        e = how == 0 ? sqf_rwlock_wrlock(&rw)
                     : sqf_rwlock_wrlock_until(&rw, any_deadline(r), how == 1 ? tok : NULL);
    else
        e = how == 0 ? sqf_rwlock_rdlock(&rw)
                     : sqf_rwlock_rdlock_until(&rw, any_deadline(r), how == 1 ? tok : NULL);
    if (!tally(e, how != 0)) return;
    if (write) {
        CHECK_EQ(at_add(&writers, 1, SC), 0);
        CHECK_EQ(at_load(&readers, SC), 0);
        if (rnd(r, 8) == 0) sched_yield();
        at_sub(&writers, 1, SC);
        CHECK_EQ(sqf_rwlock_wrunlock(&rw), 0);
    } else {
        at_add(&readers, 1, SC);
        CHECK_EQ(at_load(&writers, SC), 0);
        if (rnd(r, 8) == 0) sched_yield();
        at_sub(&readers, 1, SC);
        CHECK_EQ(sqf_rwlock_rdunlock(&rw), 0);
    }
}

static void op_event(struct rng *r, const sqf_cancel *tok)
{
    switch (rnd(r, 4)) {
    case 0:
        CHECK_EQ(sqf_event_set(&ev), 0);
        break;
    case 1:
        CHECK_EQ(sqf_event_clear(&ev), 0);
        break;
    default: /* timed or cancellable only: nobody promises a set */
        tally(sqf_event_wait_until(&ev, sqf_after((int64_t)rnd(r, 2000) * SQF_US), tok), true);
    }
}

/* --- the event loops ------------------------------------------------------------ */
#define LOOPS    2
#define LOOP_OPS 6
enum { L_MUTEX, L_COND_LOCK, L_COND_WAIT, L_SEM, L_READ, L_WRITE, L_EVENT, L_KINDS };

struct looper;
struct lslot {
    sqf_loop_op op;
    int kind;
    sqf_cancel tok; /* this slot's: re-armed only while no op of the slot waits */
    struct looper *L;
};
struct looper {
    pthread_t t;
    sqf_loop *loop;
    struct rng r;
    struct lslot s[LOOP_OPS];
};
static struct looper lps[LOOPS];

static bool stopping(void)
{
    return __atomic_load_n(&stop, __ATOMIC_RELAXED);
}

/* What a slot's op completing with r means (its critical section, its
 * release).  Returns true if it started a follow-up op (the cond wait that
 * follows taking mu). */
static bool l_complete(struct lslot *s, int r)
{
    struct rng *rg = &s->L->r;
    switch (s->kind) {
    case L_MUTEX:
        if (tally(r, true)) {
            critical_mu(rg);
            unlock_mu(rg);
        }
        return false;
    case L_COND_LOCK:
        if (!tally(r, true)) return false;
        critical_mu(rg);
        if (items == 0 && !stop) { /* under mu: the stop broadcast comes after */
            s->kind = L_COND_WAIT;
            return true; /* the caller starts the cond wait */
        }
        if (items > 0) {
            items--;
            consumed++;
        }
        unlock_mu(rg);
        return false;
    case L_COND_WAIT:
        tally(r, true);
        critical_mu(rg); /* mu is held again whatever the wait returned */
        if (items > 0) {
            items--;
            consumed++;
        }
        unlock_mu(rg);
        return false;
    case L_SEM:
        if (tally(r, true)) {
            CHECK(at_add(&held, 1, SC) < PERMITS);
            at_sub(&held, 1, SC);
            CHECK_EQ(sqf_sem_release(&sem, 1), 0);
        }
        return false;
    case L_READ:
        if (tally(r, true)) {
            at_add(&readers, 1, SC);
            CHECK_EQ(at_load(&writers, SC), 0);
            at_sub(&readers, 1, SC);
            CHECK_EQ(sqf_rwlock_rdunlock(&rw), 0);
        }
        return false;
    case L_WRITE:
        if (tally(r, true)) {
            CHECK_EQ(at_add(&writers, 1, SC), 0);
            CHECK_EQ(at_load(&readers, SC), 0);
            at_sub(&writers, 1, SC);
            CHECK_EQ(sqf_rwlock_wrunlock(&rw), 0);
        }
        return false;
    default:
        tally(r, true);
        return false;
    }
}

static void l_cb(sqf_loop_op *op, int r, void *arg);

/* Start ops in slot s until one is pending (or the run stops). */
static void l_issue(struct lslot *s)
{
    struct rng *rg = &s->L->r;
    sqf_loop *loop = s->L->loop;
    while (!stopping()) {
        CHECK_EQ(
            sqf_cancel_init(&s->tok, NULL,
                            rnd(rg, 2) ? SQF_FOREVER : sqf_after((int64_t)rnd(rg, 2000) * SQF_US)),
            0);
        const sqf_cancel *tok = rnd(rg, 2) ? &s->tok : NULL;
        sqf_deadline d = any_deadline(rg);
        int e;
        s->kind = (int)rnd(rg, L_KINDS);
        switch (s->kind) {
        case L_MUTEX:
            e = sqf_loop_mutex_lock(loop, &s->op, &mu, d, tok, l_cb, s);
            break;
        case L_COND_LOCK:
        case L_COND_WAIT:
            s->kind = L_COND_LOCK;
            e = sqf_loop_mutex_lock(loop, &s->op, &mu, d, tok, l_cb, s);
            break;
        case L_SEM:
            e = sqf_loop_sem_acquire(loop, &s->op, &sem, d, tok, l_cb, s);
            break;
        case L_READ:
            e = sqf_loop_rwlock_rdlock(loop, &s->op, &rw, d, tok, l_cb, s);
            break;
        case L_WRITE:
            e = sqf_loop_rwlock_wrlock(loop, &s->op, &rw, d, tok, l_cb, s);
            break;
        default: /* timed: nobody promises a set */
            e = sqf_loop_event_wait(loop, &s->op, &ev, sqf_after((int64_t)rnd(rg, 2000) * SQF_US),
                                    tok, l_cb, s);
            break;
        }
        if (e == EINPROGRESS) return;
        while (l_complete(s, e)) { /* the cond wait after the lock */
            e = sqf_loop_cond_wait(loop, &s->op, &cv, &mu, any_deadline(rg),
                                   rnd(rg, 2) ? &s->tok : NULL, l_cb, s);
            if (e == EINPROGRESS) return;
        }
    }
}

static void l_cb(sqf_loop_op *op, int r, void *arg)
{
    (void)op;
    struct lslot *s = arg;
    struct rng *rg = &s->L->r;
    while (l_complete(s, r)) {
        r = sqf_loop_cond_wait(s->L->loop, &s->op, &cv, &mu, any_deadline(rg),
                               rnd(rg, 2) ? &s->tok : NULL, l_cb, s);
        if (r == EINPROGRESS) return;
    }
    l_issue(s);
}

static void *looper_main(void *arg)
{
    struct looper *L = arg;
    for (int i = 0; i < LOOP_OPS; i++) {
        L->s[i].L = L;
        l_issue(&L->s[i]);
    }
    sqf_deadline hang = SQF_FOREVER;
    for (;;) {
        if (stopping()) {
            if (sqf_loop_pending(L->loop) == 0) break;
            if (hang == SQF_FOREVER) hang = sqf_after(15 * SQF_SEC);
            if (sqf_now() > hang) {
                fprintf(stderr,
                        "torture: a %s loop still has %u waits pending 15 s after the "
                        "stop (a lost wake-up?)\n",
                        sqf_loop_backend(L->loop), sqf_loop_pending(L->loop));
                check_done();
                _exit(1);
            }
        } else if (rnd(&L->r, 8) == 0) {
            int e = sqf_loop_cancel(L->loop, &L->s[rnd(&L->r, LOOP_OPS)].op);
            CHECK(e == 0 || e == ENOENT);
        }
        struct pollfd p = {sqf_loop_fd(L->loop), POLLIN, 0};
        poll(&p, 1, 2);
        CHECK(sqf_loop_dispatch(L->loop) >= 0);
    }
    return NULL;
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    struct rng r = {0x9e3779b97f4a7c15u * (uint64_t)(id + 1)};
    for (;;) {
        if (__atomic_load_n(&stop, __ATOMIC_RELAXED)) break;
        /* Our token: renewed once cancelled, sometimes with a deadline of
         * its own.  Others only cancel it, which is safe at any time. */
        sqf_cancel *mine = &toks[id];
        if (sqf_cancel_is_cancelled(mine))
            CHECK_EQ(sqf_cancel_init(mine, NULL,
                                     rnd(&r, 2) ? SQF_FOREVER
                                                : sqf_after((int64_t)rnd(&r, 3000) * SQF_US)),
                     0);
        /* Often a per-op child with a deadline of its own: a chain of two. */
        sqf_cancel child;
        const sqf_cancel *tok = NULL;
        switch (rnd(&r, 3)) {
        case 0:
            tok = mine;
            break;
        case 1:
            CHECK_EQ(sqf_cancel_init(&child, mine, sqf_after((int64_t)rnd(&r, 1000) * SQF_US)), 0);
            tok = &child;
            break;
        default:
            break;
        }
        switch (rnd(&r, 12)) {
        case 0:
        case 1:
        case 2:
            op_mutex(&r, tok);
            break;
        case 3:
        case 4:
            op_cond_wait(&r, tok);
            break;
        case 5:
            op_cond_post(&r);
            break;
        case 6:
        case 7:
            op_sem(&r, tok);
            break;
        case 8:
        case 9:
            op_rwlock(&r, tok);
            break;
        case 10:
            op_event(&r, tok);
            break;
        default: /* a thread's token, or a loop op's */
            if (rnd(&r, 2))
                CHECK_EQ(sqf_cancel_cancel(&toks[rnd(&r, THREADS)]), 0);
            else
                CHECK_EQ(sqf_cancel_cancel(&lps[rnd(&r, LOOPS)].s[rnd(&r, LOOP_OPS)].tok), 0);
            break;
        }
    }
    return NULL;
}

int main(void)
{
    watchdog(120);
    CHECK_EQ(sqf_mutex_init(&mu, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_cond_init(&cv, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_sem_init(&sem, PERMITS, 0, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_rwlock_init(&rw, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_event_init(&ev, SQF_PRIVATE), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(sqf_cancel_init(&toks[i], NULL, SQF_FOREVER), 0);

    for (int i = 0; i < LOOPS; i++) {
        lps[i].r.s = 0x51ed + (uint64_t)i;
        for (int j = 0; j < LOOP_OPS; j++)
            CHECK_EQ(sqf_cancel_init(&lps[i].s[j].tok, NULL, SQF_FOREVER), 0);
        /* One loop on io_uring where it runs, one on the fallback. */
        int e = sqf_loop_create(&lps[i].loop, i == 0 ? 0 : SQF_LOOP_FALLBACK);
        CHECK_EQ(e, 0);
        if (e) return check_done();
    }
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i), 0);
    for (int i = 0; i < LOOPS; i++)
        CHECK_EQ(pthread_create(&lps[i].t, NULL, looper_main, &lps[i]), 0);
    struct timespec ts = {0, 0};
    long ms = soak(3000);
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = ms % 1000 * 1000000;
    nanosleep(&ts, NULL);

    /* Stop: under mu, so that no cond waiter checks `stop` and then sleeps
     * after the broadcast; the plain waiters need this broadcast to leave. */
    if (sqf_mutex_timedlock(&mu, sqf_after(15 * SQF_SEC)) != 0) {
        fprintf(stderr, "torture: the mutex cannot be taken in 15 s (word 0x%x)\n",
                at_load((sqf_word *)&mu.word, RLX));
        check_done();
        _exit(1);
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    CHECK_EQ(sqf_cond_broadcast(&cv), 0);
    CHECK_EQ(sqf_mutex_unlock(&mu), 0);
    /* Every op ends within milliseconds once stop is set: a thread still
     * out after 15 s sleeps for ever (a lost wake-up, a swallowed hand-off). */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 15;
    for (int i = 0; i < THREADS; i++)
        if (pthread_timedjoin_np(t[i], NULL, &until) != 0) {
            fprintf(stderr,
                    "torture: thread %d never returned: mutex word 0x%x, rwlock state 0x%x\n", i,
                    at_load((sqf_word *)&mu.word, RLX), at_load((sqf_word *)&rw.state, RLX));
            check_done();
            _exit(1);
        }
    for (int i = 0; i < LOOPS; i++) { /* each reports its own hang */
        pthread_join(lps[i].t, NULL);
        CHECK_EQ(sqf_loop_destroy(lps[i].loop), 0);
    }

    /* The books. */
    CHECK_EQ(consumed + items, produced);
    unsigned v = 0;
    CHECK_EQ(sqf_sem_getvalue(&sem, &v), 0);
    CHECK_EQ(v, PERMITS);
    /* Everything free, nobody left waiting. */
    CHECK_EQ(sqf_mutex_trylock(&mu), 0);
    CHECK_EQ(sqf_mutex_unlock(&mu), 0);
    CHECK_EQ(sqf_rwlock_trywrlock(&rw), 0);
    CHECK_EQ(sqf_rwlock_wrunlock(&rw), 0);
    CHECK_EQ(sqf_cond_destroy(&cv), 0);
    CHECK_EQ(sqf_mutex_destroy(&mu), 0);
    CHECK_EQ(sqf_sem_destroy(&sem), 0);
    CHECK_EQ(sqf_rwlock_destroy(&rw), 0);
    CHECK_EQ(sqf_event_destroy(&ev), 0);

    printf("torture: %u completed, %u timed out, %u cancelled, %u busy; %ld items produced\n",
           at_load(&n_ok, RLX), at_load(&n_timedout, RLX), at_load(&n_cancelled, RLX),
           at_load(&n_busy, RLX), produced);
    /* The run exercised what it claims: both ways of giving up happened. */
    CHECK(at_load(&n_timedout, RLX) > 0);
    CHECK(at_load(&n_cancelled, RLX) > 0);
    return check_done();
}
