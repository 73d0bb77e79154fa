/* stress_sem.c: sqf_sem under contention.
 *
 * 1. Permit conservation: acquirers using try, past and very short
 *    deadlines (so that time-outs race with releases all the time) against
 *    releasers adding random n; every permit is counted, and at the end
 *    value == initial + released - acquired.  Unbounded and bounded (where
 *    releases also meet EOVERFLOW, and the value must never pass the bound).
 * 2. No lost wake-up: N threads block in acquire while one thread releases
 *    N permits in random batches; all N must return.
 * 3. Producers and consumers, all blocking: every item is taken exactly
 *    once, and every consumer wakes for its stop permit.
 * 4. No wake-up lost to a time-out: timed waiters queued first, blocking
 *    ones behind them, and single releases sent right around the timed
 *    waiters' common deadline, so that some are woken just as they time
 *    out.  A timed waiter that gets a permit gives it back.  A waiter that
 *    took the wake-up but left without the permit would strand it, and a
 *    blocking thread would never return.
 * Hangs are caught by a watchdog (the test fails with a message instead of
 * running into CTest's time-out).  SQF_SOAK scales the iteration counts.
 */
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include <squarefree/sem.h>

#include "check.h"

#define WATCHDOG_MS 20000

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
    nanosleep(&ts, NULL);
}

static void spin_until(sqf_deadline t)
{
    while (sqf_now() < t) {
    }
}

/* The waiter count: the high half of the state word (see sem.h). */
static unsigned waiters_of(sqf_sem *s)
{
    return (unsigned)(atomic_load(&s->state) >> 32);
}

static void hang(const char *what, sqf_sem *s, int returned, int expected)
{
    unsigned v = 0;
    sqf_sem_getvalue(s, &v);
    fprintf(stderr,
            "FAILED (watchdog, %d s): %s: %d of %d threads returned; value %u, waiters %u\n",
            WATCHDOG_MS / 1000, what, returned, expected, v, waiters_of(s));
    CHECK(0);
    exit(check_done());
}

/* Wait until *n reaches want, or fail the whole test after the watchdog. */
static void watch(atomic_int *n, int want, const char *what, sqf_sem *s)
{
    sqf_deadline end = sqf_after(WATCHDOG_MS * SQF_MS);
    while (atomic_load(n) < want) {
        if (sqf_now() >= end) hang(what, s, atomic_load(n), want);
        sleep_us(200);
    }
}

/* --- 1. permit conservation ------------------------------------------------ */

#define CONS_ACQUIRERS 8
#define CONS_RELEASERS 4

struct cons {
    sqf_sem *s;
    unsigned bound; /* 0: unbounded */
    atomic_int *releasers_left;
    uint64_t seed;
    long count; /* permits acquired or released by this thread */
    long timeouts, overflows;
    long bad; /* unexpected results */
};

static void *cons_acquirer(void *p)
{
    struct cons *c = p;
    while (atomic_load(c->releasers_left) > 0) {
        int e;
        switch (rnd(&c->seed) % 8) {
        case 0:
            e = sqf_sem_tryacquire(c->s);
            if (e == EBUSY) e = ETIMEDOUT;
            break;
        case 1:
            e = sqf_sem_timedacquire(c->s, sqf_now() - 1);
            break;
        case 2:
            e = sqf_sem_timedacquire(c->s, sqf_after(200 * SQF_US));
            break;
        default: /* very short: time-outs race with wake-ups */
            e = sqf_sem_timedacquire(c->s, sqf_after((int64_t)(rnd(&c->seed) % 30) * SQF_US));
            break;
        }
        if (e == 0)
            c->count++;
        else if (e == ETIMEDOUT)
            c->timeouts++;
        else
            c->bad++;
        if (c->bound && (rnd(&c->seed) & 63) == 0) {
            unsigned v;
            if (sqf_sem_getvalue(c->s, &v) != 0 || v > c->bound) c->bad++;
        }
    }
    return NULL;
}

static void *cons_releaser(void *p)
{
    struct cons *c = p;
    long iters = soak(4000);
    for (long i = 0; i < iters; i++) {
        unsigned n = 1 + (unsigned)(rnd(&c->seed) % 4);
        int e = sqf_sem_release(c->s, n);
        if (e == 0)
            c->count += n;
        else if (e == EOVERFLOW && c->bound)
            c->overflows++;
        else
            c->bad++;
        /* Let the acquirers run dry now and then, so that they sleep. */
        uint64_t r = rnd(&c->seed) % 16;
        if (r == 0)
            sleep_us(50);
        else if (r < 4)
            sched_yield();
    }
    atomic_fetch_sub(c->releasers_left, 1);
    return NULL;
}

static void test_conservation(unsigned initial, unsigned bound)
{
    sqf_sem s;
    CHECK_EQ(sqf_sem_init(&s, initial, bound, SQF_PRIVATE), 0);
    atomic_int releasers_left = CONS_RELEASERS;
    struct cons c[CONS_ACQUIRERS + CONS_RELEASERS];
    pthread_t t[CONS_ACQUIRERS + CONS_RELEASERS];
    for (int i = 0; i < CONS_ACQUIRERS + CONS_RELEASERS; i++) {
        c[i] = (struct cons){.s = &s,
                             .bound = bound,
                             .releasers_left = &releasers_left,
                             .seed = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1) + bound};
        void *(*fn)(void *) = i < CONS_ACQUIRERS ? cons_acquirer : cons_releaser;
        if (pthread_create(&t[i], NULL, fn, &c[i]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            exit(1);
        }
    }
    for (int i = 0; i < CONS_ACQUIRERS + CONS_RELEASERS; i++)
        pthread_join(t[i], NULL);

    long acquired = 0, released = 0, timeouts = 0, overflows = 0, bad = 0;
    for (int i = 0; i < CONS_ACQUIRERS + CONS_RELEASERS; i++) {
        if (i < CONS_ACQUIRERS)
            acquired += c[i].count;
        else
            released += c[i].count;
        timeouts += c[i].timeouts;
        overflows += c[i].overflows;
        bad += c[i].bad;
    }
    unsigned v = 0;
    CHECK_EQ(sqf_sem_getvalue(&s, &v), 0);
    CHECK_EQ(v, (long)initial + released - acquired);
    CHECK_EQ(bad, 0);
    CHECK_EQ(waiters_of(&s), 0);
    CHECK_EQ(sqf_sem_destroy(&s), 0);
    if (bound) CHECK(v <= bound);
    printf("conservation (initial %u, bound %u): released %ld, acquired %ld, %ld time-outs, "
           "%ld overflows, final value %u\n",
           initial, bound, released, acquired, timeouts, overflows, v);
}

/* --- 2. no lost wake-up: N blocked, N permits in random batches ------------- */

#define BATCH_THREADS 32

struct blocker {
    sqf_sem *s;
    sqf_deadline deadline; /* SQF_FOREVER: acquire; else timedacquire */
    atomic_int *returned;
    int result;
    /* A start gate, so that threads can be queued in a chosen order. */
    pthread_mutex_t *mu;
    pthread_cond_t *cv;
    int *go;
};

static void gate_wait(struct blocker *b)
{
    if (!b->go) return;
    pthread_mutex_lock(b->mu);
    while (!*b->go)
        pthread_cond_wait(b->cv, b->mu);
    pthread_mutex_unlock(b->mu);
}

static void gate_open(pthread_mutex_t *mu, pthread_cond_t *cv, int *go)
{
    pthread_mutex_lock(mu);
    *go = 1;
    pthread_cond_broadcast(cv);
    pthread_mutex_unlock(mu);
}

static void *blocker_main(void *p)
{
    struct blocker *b = p;
    gate_wait(b);
    if (b->deadline == SQF_FOREVER) {
        b->result = sqf_sem_acquire(b->s);
    } else {
        b->result = sqf_sem_timedacquire(b->s, b->deadline);
        /* A timed waiter gives its permit back: only blockers keep one. */
        if (b->result == 0 && sqf_sem_release(b->s, 1) != 0) b->result = -2;
    }
    atomic_fetch_add(b->returned, 1);
    return NULL;
}

static void start(pthread_t *t, struct blocker *b)
{
    if (start_small_thread(t, blocker_main, b) != 0) {
        fprintf(stderr, "pthread_create failed\n");
        exit(1);
    }
}

static void test_batches(void)
{
    uint64_t seed = 0x2545F4914F6CDD1Dull;
    long rounds = soak(20);
    long early_total = 0;
    for (long round = 0; round < rounds; round++) {
        sqf_sem s = SQF_SEM_INIT;
        atomic_int returned = 0;
        struct blocker b[BATCH_THREADS];
        pthread_t t[BATCH_THREADS];
        int released = 0;
        for (int i = 0; i < BATCH_THREADS; i++) {
            b[i] = (struct blocker){
                .s = &s, .deadline = SQF_FOREVER, .returned = &returned, .result = -1};
            start(&t[i], &b[i]);
            /* Sometimes release while threads are still arriving. */
            if ((rnd(&seed) & 7) == 0) {
                CHECK_EQ(sqf_sem_release(&s, 1), 0);
                released++;
                early_total++;
            }
        }
        /* Let most of them fall asleep, then hand out the rest in random
         * batches with random pauses. */
        sleep_us(2000);
        while (released < BATCH_THREADS) {
            int n = 1 + (int)(rnd(&seed) % 8);
            if (n > BATCH_THREADS - released) n = BATCH_THREADS - released;
            CHECK_EQ(sqf_sem_release(&s, (unsigned)n), 0);
            released += n;
            uint64_t r = rnd(&seed) % 4;
            if (r == 0)
                sleep_us((long)(rnd(&seed) % 100));
            else if (r == 1)
                sched_yield();
        }
        watch(&returned, BATCH_THREADS, "N blocked acquirers, N permits in batches", &s);
        for (int i = 0; i < BATCH_THREADS; i++) {
            pthread_join(t[i], NULL);
            CHECK_EQ(b[i].result, 0);
        }
        unsigned v = 1;
        CHECK_EQ(sqf_sem_getvalue(&s, &v), 0);
        CHECK_EQ(v, 0);
        CHECK_EQ(waiters_of(&s), 0);
    }
    printf("batches: %ld rounds of %d threads (%ld permits released early)\n", rounds,
           BATCH_THREADS, early_total);
}

/* --- 3. producers and consumers, all blocking ----------------------------- */

#define PIPE_PRODUCERS 4
#define PIPE_CONSUMERS 12

struct pipe {
    sqf_sem *s;
    uint64_t seed;
    long items;           /* a producer's share */
    atomic_long *taken;   /* permits acquired by all consumers */
    atomic_int *finished; /* consumers that have seen their stop permit */
    long total;           /* items produced in all */
    long got;             /* a consumer's items */
    int bad;
};

static void *pipe_producer(void *p)
{
    struct pipe *c = p;
    for (long left = c->items; left > 0;) {
        unsigned n = 1 + (unsigned)(rnd(&c->seed) % 3);
        if (n > left) n = (unsigned)left;
        if (sqf_sem_release(c->s, n) != 0) c->bad++;
        left -= n;
        if ((rnd(&c->seed) & 3) == 0) sched_yield();
    }
    return NULL;
}

static void *pipe_consumer(void *p)
{
    struct pipe *c = p;
    for (;;) {
        if (sqf_sem_acquire(c->s) != 0) {
            c->bad++;
            break;
        }
        /* The first `total` permits are items; each later one tells one
         * consumer to stop. */
        if (atomic_fetch_add(c->taken, 1) >= c->total) break;
        c->got++;
    }
    atomic_fetch_add(c->finished, 1);
    return NULL;
}

static void test_pipeline(void)
{
    sqf_sem s = SQF_SEM_INIT;
    atomic_long taken = 0;
    atomic_int finished = 0;
    long per_producer = soak(10000);
    struct pipe c[PIPE_PRODUCERS + PIPE_CONSUMERS];
    pthread_t t[PIPE_PRODUCERS + PIPE_CONSUMERS];
    for (int i = 0; i < PIPE_PRODUCERS + PIPE_CONSUMERS; i++) {
        c[i] = (struct pipe){.s = &s,
                             .seed = 0xBF58476D1CE4E5B9ull * (uint64_t)(i + 7),
                             .items = per_producer,
                             .taken = &taken,
                             .finished = &finished,
                             .total = per_producer * PIPE_PRODUCERS};
        void *(*fn)(void *) = i < PIPE_PRODUCERS ? pipe_producer : pipe_consumer;
        if (pthread_create(&t[i], NULL, fn, &c[i]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            exit(1);
        }
    }
    for (int i = 0; i < PIPE_PRODUCERS; i++)
        pthread_join(t[i], NULL);
    /* One stop permit per consumer, one release each: a lost wake-up among
     * them leaves a consumer asleep for the watchdog to find. */
    for (int i = 0; i < PIPE_CONSUMERS; i++)
        CHECK_EQ(sqf_sem_release(&s, 1), 0);
    watch(&finished, PIPE_CONSUMERS, "consumers blocked in acquire", &s);
    long got = 0;
    int bad = 0;
    for (int i = 0; i < PIPE_PRODUCERS + PIPE_CONSUMERS; i++) {
        if (i >= PIPE_PRODUCERS) pthread_join(t[i], NULL);
        got += c[i].got;
        bad += c[i].bad;
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(got, per_producer * PIPE_PRODUCERS);
    CHECK_EQ(atomic_load(&taken), per_producer * PIPE_PRODUCERS + PIPE_CONSUMERS);
    unsigned v = 1;
    CHECK_EQ(sqf_sem_getvalue(&s, &v), 0);
    CHECK_EQ(v, 0);
    CHECK_EQ(sqf_sem_destroy(&s), 0);
    printf("pipeline: %d producers, %d consumers, %ld items\n", PIPE_PRODUCERS, PIPE_CONSUMERS,
           got);
}

/* --- 4. no wake-up lost to a time-out ---------------------------------------- */

#define RACE_TIMED    8
#define RACE_BLOCKING 8

static void test_timeout_race(void)
{
    uint64_t seed = 0xD1B54A32D192ED03ull;
    long rounds = soak(100);
    long timed_got = 0, timed_out = 0;
    for (long round = 0; round < rounds; round++) {
        sqf_sem s = SQF_SEM_INIT;
        atomic_int timed_returned = 0, blocking_returned = 0;
        pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
        pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
        int go_timed = 0, go_blocking = 0;
        struct blocker b[RACE_TIMED + RACE_BLOCKING];
        pthread_t t[RACE_TIMED + RACE_BLOCKING];
        sqf_deadline d = SQF_FOREVER;
        for (int i = 0; i < RACE_TIMED + RACE_BLOCKING; i++) {
            int timed = i < RACE_TIMED;
            b[i] = (struct blocker){.s = &s,
                                    .deadline = SQF_FOREVER,
                                    .returned = timed ? &timed_returned : &blocking_returned,
                                    .result = -1,
                                    .mu = &mu,
                                    .cv = &cv,
                                    .go = timed ? &go_timed : &go_blocking};
            start(&t[i], &b[i]);
        }
        /* The timed waiters go first, so that they are at the head of the
         * kernel's FIFO queue and get the first wake-ups. */
        d = sqf_after(4 * SQF_MS);
        for (int i = 0; i < RACE_TIMED; i++)
            b[i].deadline = d;
        gate_open(&mu, &cv, &go_timed);
        while (waiters_of(&s) < RACE_TIMED && sqf_now() < d - SQF_MS)
            sched_yield();
        gate_open(&mu, &cv, &go_blocking);
        while (waiters_of(&s) < RACE_TIMED + RACE_BLOCKING && sqf_now() < d - SQF_MS)
            sched_yield();
        /* Single releases from around d - 150 us to d + 450 us. */
        spin_until(d - 150 * SQF_US + (int64_t)(rnd(&seed) % 300) * SQF_US);
        for (int i = 0; i < RACE_BLOCKING; i++) {
            CHECK_EQ(sqf_sem_release(&s, 1), 0);
            spin_until(sqf_now() + (int64_t)(rnd(&seed) % 40) * SQF_US);
        }
        /* The timed waiters all return by their deadline (or with a permit,
         * which they give back). */
        watch(&timed_returned, RACE_TIMED, "timed waiters", &s);
        watch(&blocking_returned, RACE_BLOCKING,
              "blocking acquirers behind timed ones (a time-out stranded a permit?)", &s);
        for (int i = 0; i < RACE_TIMED + RACE_BLOCKING; i++) {
            pthread_join(t[i], NULL);
            if (i < RACE_TIMED) {
                CHECK(b[i].result == 0 || b[i].result == ETIMEDOUT);
                timed_got += b[i].result == 0;
                timed_out += b[i].result == ETIMEDOUT;
            } else {
                CHECK_EQ(b[i].result, 0);
            }
        }
        unsigned v = 1;
        CHECK_EQ(sqf_sem_getvalue(&s, &v), 0);
        CHECK_EQ(v, 0);
        CHECK_EQ(waiters_of(&s), 0);
        pthread_cond_destroy(&cv);
        pthread_mutex_destroy(&mu);
    }
    printf("timeout race: %ld rounds; timed waiters took %ld permits, timed out %ld times\n",
           rounds, timed_got, timed_out);
}

int main(void)
{
    test_conservation(0, 0);
    test_conservation(3, 0);
    test_conservation(0, 8);
    test_conservation(2, 2);
    test_batches();
    test_pipeline();
    test_timeout_race();
    return check_done();
}
