/* stress_loop.c: threads and two event loops (each driven by its own
 * thread) wait on the same primitives at once.
 *
 * - mutex: a plain counter incremented by threads and by loop callbacks
 *   (a loop op that completes with 0 holds the lock); exclusion and the
 *   total are checked;
 * - sem: permits conserved, with random deadlines, tokens and
 *   sqf_loop_cancel racing releases;
 * - latch and event: 1,000 mixed waiters (threads and loop ops), all woken
 *   by one call each;
 * - barrier: phases with threads and loop ops as parties;
 * - cond: producers signal and broadcast; threads and loop ops consume;
 *   items conserved;
 * - sqf_loop_cancel racing a release: a permit either taken or left.
 * A lost wake-up shows as a hang, reported by the bounded waits below (and
 * the watchdog).  Everything runs on the fallback backend, then on
 * io_uring; on a kernel without io_uring's futex operations the test
 * reports itself skipped (exit 77), never passed. */
#include <poll.h>
#include <string.h>
#include <time.h>

#include <squarefree.h>

#include "atomic.h"
#include "check.h"

#define LOOPS 2

/* --- a loop thread ------------------------------------------------------------ */

/* A loop thread runs `kick` once, then dispatches until `finished` says so
 * and nothing is pending.  Each test keeps its own op pools. */
struct looper {
    pthread_t t;
    sqf_loop *loop;
    int id;
    void (*kick)(struct looper *);
    bool (*finished)(struct looper *);
    unsigned seed;
};

static unsigned rnd(unsigned *seed, unsigned n)
{
    *seed = *seed * 1103515245u + 12345u;
    return (*seed >> 16) % n;
}

static void *looper_main(void *arg)
{
    struct looper *L = arg;
    L->kick(L);
    sqf_deadline stop = sqf_after(20 * SQF_SEC);
    while (!(L->finished(L) && sqf_loop_pending(L->loop) == 0)) {
        if (sqf_now() > stop) {
            fprintf(stderr, "loop %d: still %u pending after 20 s (a lost wake-up?)\n", L->id,
                    sqf_loop_pending(L->loop));
            check_done();
            _exit(1);
        }
        struct pollfd p = {sqf_loop_fd(L->loop), POLLIN, 0};
        poll(&p, 1, 5);
        CHECK(sqf_loop_dispatch(L->loop) >= 0);
    }
    return NULL;
}

static struct looper loopers[LOOPS];

static void run_loops(void (*kick)(struct looper *), bool (*finished)(struct looper *))
{
    for (int i = 0; i < LOOPS; i++) {
        loopers[i].kick = kick;
        loopers[i].finished = finished;
        loopers[i].id = i;
        loopers[i].seed = 77u + (unsigned)i;
        CHECK_EQ(pthread_create(&loopers[i].t, NULL, looper_main, &loopers[i]), 0);
    }
}

static void join_loops(void)
{
    for (int i = 0; i < LOOPS; i++)
        pthread_join(loopers[i].t, NULL);
}

/* Start an op; if it completed at once, deliver its result as a callback
 * would (the tests treat both ways alike). */
#define START(call, cb, op, arg)                                                                   \
    do {                                                                                           \
        int start_r_ = (call);                                                                     \
        if (start_r_ != EINPROGRESS) cb(op, start_r_, arg);                                        \
    } while (0)

/* --- mutex ---------------------------------------------------------------------- */
#define MU_OPS   4
#define MU_ITERS 3000
static sqf_mutex mu;
static long counter; /* guarded by mu */
static int inside;   /* guarded by mu */
static sqf_loop_op mu_ops[LOOPS][MU_OPS];
static int mu_left[LOOPS];

static void mu_cb(sqf_loop_op *op, int r, void *arg);

static void mu_issue(struct looper *L, sqf_loop_op *op)
{
    if (mu_left[L->id] <= 0) return;
    mu_left[L->id]--;
    START(sqf_loop_mutex_lock(L->loop, op, &mu, SQF_FOREVER, NULL, mu_cb, L), mu_cb, op, L);
}

static void mu_cb(sqf_loop_op *op, int r, void *arg)
{
    CHECK_EQ(r, 0);
    CHECK_EQ(inside++, 0);
    counter++;
    inside--;
    CHECK_EQ(rnd(&((struct looper *)arg)->seed, 4) ? sqf_mutex_unlock(&mu)
                                                   : sqf_mutex_unlock_fair(&mu),
             0);
    mu_issue(arg, op);
}

static void mu_kick(struct looper *L)
{
    mu_left[L->id] = MU_ITERS;
    for (int i = 0; i < MU_OPS; i++)
        mu_issue(L, &mu_ops[L->id][i]);
}

static bool mu_finished(struct looper *L)
{
    return mu_left[L->id] <= 0;
}

static void *mu_thread(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    for (int i = 0; i < MU_ITERS; i++) {
        CHECK_EQ(sqf_mutex_lock(&mu), 0);
        CHECK_EQ(inside++, 0);
        counter++;
        if (rnd(&seed, 64) == 0) sched_yield();
        inside--;
        CHECK_EQ(rnd(&seed, 4) ? sqf_mutex_unlock(&mu) : sqf_mutex_unlock_fair(&mu), 0);
    }
    return NULL;
}

static void test_mutex(void)
{
    sqf_mutex_init(&mu, SQF_PRIVATE);
    counter = 0;
    run_loops(mu_kick, mu_finished);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, mu_thread, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    join_loops();
    CHECK_EQ(counter, (long)(4 + LOOPS) * MU_ITERS);
    CHECK_EQ(sqf_mutex_destroy(&mu), 0);
    printf("mutex: %ld increments by 4 threads and %d loops\n", counter, LOOPS);
}

/* --- sem ------------------------------------------------------------------------ */
#define SEM_OPS     8
#define SEM_ITERS   4000
#define SEM_PERMITS 2
static sqf_sem sem;
static sqf_word held, sem_got, sem_gaveup;
static sqf_loop_op sem_ops[LOOPS][SEM_OPS];
static sqf_cancel sem_tok[LOOPS];
static int sem_left[LOOPS];

static void sem_cb(sqf_loop_op *op, int r, void *arg);
static void race_cb(sqf_loop_op *op, int r, void *arg);

static void sem_issue(struct looper *L, sqf_loop_op *op)
{
    if (sem_left[L->id] <= 0) return;
    sem_left[L->id]--;
    sqf_cancel *tok = &sem_tok[L->id];
    if (sqf_cancel_is_cancelled(tok)) sqf_cancel_init(tok, NULL, SQF_FOREVER);
    unsigned how = rnd(&L->seed, 4);
    sqf_deadline d = how == 0 ? sqf_after((int64_t)rnd(&L->seed, 500) * SQF_US) : SQF_FOREVER;
    START(sqf_loop_sem_acquire(L->loop, op, &sem, d, how == 1 ? tok : NULL, sem_cb, L), sem_cb, op,
          L);
    /* Now and then cancel a pending op, or the token, right away. */
    if (rnd(&L->seed, 8) == 0) {
        int e = sqf_loop_cancel(L->loop, &sem_ops[L->id][rnd(&L->seed, SEM_OPS)]);
        CHECK(e == 0 || e == ENOENT);
    }
    if (rnd(&L->seed, 8) == 0) sqf_cancel_cancel(tok);
}

static void sem_cb(sqf_loop_op *op, int r, void *arg)
{
    if (r == 0) {
        CHECK(at_add(&held, 1, SC) < SEM_PERMITS);
        at_add(&sem_got, 1, RLX);
        at_sub(&held, 1, SC);
        CHECK_EQ(sqf_sem_release(&sem, 1), 0);
    } else {
        CHECK(r == ETIMEDOUT || r == ECANCELED);
        at_add(&sem_gaveup, 1, RLX);
    }
    sem_issue(arg, op);
}

static void sem_kick(struct looper *L)
{
    sem_left[L->id] = SEM_ITERS;
    sqf_cancel_init(&sem_tok[L->id], NULL, SQF_FOREVER);
    for (int i = 0; i < SEM_OPS; i++)
        sem_issue(L, &sem_ops[L->id][i]);
}

static bool sem_finished(struct looper *L)
{
    return sem_left[L->id] <= 0;
}

/* Threads contend until the loops have done their share. */
static sqf_word sem_stop;
static void *sem_thread(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    while (!at_load(&sem_stop, RLX)) {
        sqf_deadline d = rnd(&seed, 3) ? SQF_FOREVER : sqf_after((int64_t)rnd(&seed, 300) * SQF_US);
        int r = sqf_sem_acquire_until(&sem, d, NULL);
        if (r) {
            CHECK_EQ(r, ETIMEDOUT);
            continue;
        }
        CHECK(at_add(&held, 1, SC) < SEM_PERMITS);
        /* Hold it a while, so that loop ops must wait (and give up). */
        for (unsigned k = rnd(&seed, 2000); k > 0; k--)
            at_relax();
        if (rnd(&seed, 32) == 0) sched_yield();
        at_sub(&held, 1, SC);
        CHECK_EQ(sqf_sem_release(&sem, 1), 0);
    }
    return NULL;
}

static void test_sem(void)
{
    sqf_sem_init(&sem, SEM_PERMITS, 0, SQF_PRIVATE);
    at_store(&sem_stop, 0, RLX);
    at_store(&sem_got, 0, RLX);
    at_store(&sem_gaveup, 0, RLX);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, sem_thread, (void *)(uintptr_t)(i + 9));
    run_loops(sem_kick, sem_finished);
    join_loops();
    at_store(&sem_stop, 1, RLX);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    unsigned v = 0;
    sqf_sem_getvalue(&sem, &v);
    CHECK_EQ(v, SEM_PERMITS);
    printf("sem: loops took %u permits and gave up %u waits while contended\n",
           at_load(&sem_got, RLX), at_load(&sem_gaveup, RLX));
    /* How many waits gave up above depends on timing; make sure both ways
     * of giving up ran, with every permit held: a deadline and a token. */
    for (int i = 0; i < SEM_PERMITS; i++)
        CHECK_EQ(sqf_sem_acquire(&sem), 0);
    sqf_loop *loop = loopers[0].loop;
    sqf_cancel tok;
    sqf_cancel_init(&tok, NULL, SQF_FOREVER);
    int r[2] = {-1, -1};
    CHECK_EQ(sqf_loop_sem_acquire(loop, &sem_ops[0][0], &sem, sqf_after(2 * SQF_MS), NULL, race_cb,
                                  &r[0]),
             EINPROGRESS);
    CHECK_EQ(sqf_loop_sem_acquire(loop, &sem_ops[0][1], &sem, SQF_FOREVER, &tok, race_cb, &r[1]),
             EINPROGRESS);
    CHECK_EQ(sqf_cancel_cancel(&tok), 0);
    sqf_deadline stop = sqf_after(5 * SQF_SEC);
    while ((r[0] < 0 || r[1] < 0) && sqf_now() < stop) {
        struct pollfd p = {sqf_loop_fd(loop), POLLIN, 0};
        poll(&p, 1, 10);
        sqf_loop_dispatch(loop);
    }
    CHECK_EQ(r[0], ETIMEDOUT);
    CHECK_EQ(r[1], ECANCELED);
    CHECK_EQ(sqf_sem_release(&sem, SEM_PERMITS), 0);
    sqf_sem_getvalue(&sem, &v);
    CHECK_EQ(v, SEM_PERMITS); /* nothing taken by the waits that gave up */
    CHECK_EQ(sqf_sem_destroy(&sem), 0);
}

/* --- latch and event: 1,000 mixed waiters ------------------------------------------ */
#define MIX_THREADS 500
#define MIX_OPS     250 /* per loop */
static sqf_latch latch;
static sqf_event event;
static sqf_loop_op mix_ops[LOOPS][2][MIX_OPS];
static int mix_done[LOOPS];
static sqf_word mix_thread_done;

static void mix_cb(sqf_loop_op *op, int r, void *arg)
{
    (void)op;
    CHECK_EQ(r, 0);
    mix_done[((struct looper *)arg)->id]++;
}

static void mix_kick(struct looper *L)
{
    for (int i = 0; i < MIX_OPS; i++) {
        START(sqf_loop_latch_wait(L->loop, &mix_ops[L->id][0][i], &latch, SQF_FOREVER, NULL, mix_cb,
                                  L),
              mix_cb, &mix_ops[L->id][0][i], L);
        START(sqf_loop_event_wait(L->loop, &mix_ops[L->id][1][i], &event, SQF_FOREVER, NULL, mix_cb,
                                  L),
              mix_cb, &mix_ops[L->id][1][i], L);
    }
}

static bool mix_finished(struct looper *L)
{
    return mix_done[L->id] == 2 * MIX_OPS;
}

static void *mix_thread(void *arg)
{
    CHECK_EQ(arg ? sqf_event_wait(&event) : sqf_latch_wait(&latch), 0);
    at_add(&mix_thread_done, 1, RLX);
    return NULL;
}

static void test_mixed_wake(void)
{
    sqf_latch_init(&latch, 1, SQF_PRIVATE);
    sqf_event_init(&event, SQF_PRIVATE);
    at_store(&mix_thread_done, 0, RLX);
    memset(mix_done, 0, sizeof mix_done);
    pthread_t t[MIX_THREADS];
    int started = 0;
    for (int i = 0; i < MIX_THREADS; i++)
        if (start_small_thread(&t[i], mix_thread, i % 2 ? &event : NULL) == 0) started++;
    run_loops(mix_kick, mix_finished);
    /* Let them all queue, then one call each wakes threads and loop ops. */
    sqf_deadline stop = sqf_after(5 * SQF_SEC);
    while (at_load((sqf_word *)&latch.waiters, RLX) < (unsigned)(started / 2 + LOOPS * MIX_OPS) &&
           sqf_now() < stop)
        sched_yield();
    CHECK_EQ(sqf_latch_count_down(&latch, 1), 0);
    CHECK_EQ(sqf_event_set(&event), 0);
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    join_loops();
    CHECK_EQ(started, MIX_THREADS);
    CHECK_EQ(at_load(&mix_thread_done, RLX), (unsigned)started);
    CHECK_EQ(sqf_latch_destroy(&latch), 0);
    CHECK_EQ(sqf_event_destroy(&event), 0);
    printf("latch and event: %d threads and %d loop ops woken\n", started, 2 * LOOPS * MIX_OPS);
}

/* --- barrier: threads and loop ops as parties ------------------------------------- */
#define BA_THREADS 3
#define BA_PHASES  200
static sqf_barrier bar;
static sqf_loop_op ba_ops[LOOPS];
static int ba_phase[LOOPS];

static void ba_cb(sqf_loop_op *op, int r, void *arg)
{
    struct looper *L = arg;
    CHECK_EQ(r, 0);
    if (++ba_phase[L->id] < BA_PHASES)
        START(sqf_loop_barrier_wait(L->loop, op, &bar, SQF_FOREVER, NULL, ba_cb, L), ba_cb, op, L);
}

static void ba_kick(struct looper *L)
{
    ba_phase[L->id] = 0;
    START(sqf_loop_barrier_wait(L->loop, &ba_ops[L->id], &bar, SQF_FOREVER, NULL, ba_cb, L), ba_cb,
          &ba_ops[L->id], L);
}

static bool ba_finished(struct looper *L)
{
    return ba_phase[L->id] == BA_PHASES;
}

static void *ba_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < BA_PHASES; i++)
        CHECK_EQ(sqf_barrier_wait(&bar, NULL), 0);
    return NULL;
}

static void test_barrier(void)
{
    sqf_barrier_init(&bar, BA_THREADS + LOOPS, SQF_PRIVATE);
    pthread_t t[BA_THREADS];
    for (int i = 0; i < BA_THREADS; i++)
        pthread_create(&t[i], NULL, ba_thread, NULL);
    run_loops(ba_kick, ba_finished);
    for (int i = 0; i < BA_THREADS; i++)
        pthread_join(t[i], NULL);
    join_loops();
    CHECK_EQ(sqf_barrier_destroy(&bar), 0);
    printf("barrier: %d phases, %d threads and %d loop parties\n", BA_PHASES, BA_THREADS, LOOPS);
}

/* --- cond: producers signal and broadcast; threads and loop ops consume ---------- */
#define CV_ITEMS 3000 /* per producer */
#define CV_OPS   3
static sqf_mutex cm;
static sqf_cond cv;
static long items, consumed; /* guarded by cm */
static int producers_left;   /* guarded by cm */
static sqf_loop_op cv_ops[LOOPS][CV_OPS];

static void cv_locked(sqf_loop_op *op, int r, void *arg);

/* Holding cm (from a lock or a cond op): consume, or wait, or finish. */
static void cv_consume(struct looper *L, sqf_loop_op *op)
{
    if (items > 0) {
        items--;
        consumed++;
    } else if (producers_left > 0) {
        START(sqf_loop_cond_wait(L->loop, op, &cv, &cm, SQF_FOREVER, NULL, cv_locked, L), cv_locked,
              op, L);
        return;
    } else {
        CHECK_EQ(sqf_mutex_unlock(&cm), 0);
        return; /* nothing more will come: this op is done */
    }
    CHECK_EQ(sqf_mutex_unlock(&cm), 0);
    START(sqf_loop_mutex_lock(L->loop, op, &cm, SQF_FOREVER, NULL, cv_locked, L), cv_locked, op, L);
}

static void cv_locked(sqf_loop_op *op, int r, void *arg)
{
    CHECK_EQ(r, 0); /* a cond op's 0 also means cm is held again */
    cv_consume(arg, op);
}

static void cv_kick(struct looper *L)
{
    for (int i = 0; i < CV_OPS; i++)
        START(sqf_loop_mutex_lock(L->loop, &cv_ops[L->id][i], &cm, SQF_FOREVER, NULL, cv_locked, L),
              cv_locked, &cv_ops[L->id][i], L);
}

static bool cv_finished(struct looper *L)
{
    (void)L;
    return true; /* ops end on their own once producers are gone */
}

static void *cv_producer(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    for (int i = 0; i < CV_ITEMS; i++) {
        CHECK_EQ(sqf_mutex_lock(&cm), 0);
        items++;
        CHECK_EQ(rnd(&seed, 8) ? sqf_cond_signal(&cv) : sqf_cond_broadcast(&cv), 0);
        CHECK_EQ(sqf_mutex_unlock(&cm), 0);
    }
    CHECK_EQ(sqf_mutex_lock(&cm), 0);
    producers_left--;
    CHECK_EQ(sqf_cond_broadcast(&cv), 0); /* the consumers that wait must see it */
    CHECK_EQ(sqf_mutex_unlock(&cm), 0);
    return NULL;
}

static void *cv_consumer(void *arg)
{
    (void)arg;
    CHECK_EQ(sqf_mutex_lock(&cm), 0);
    for (;;) {
        while (items == 0 && producers_left > 0)
            CHECK_EQ(sqf_cond_wait(&cv, &cm), 0);
        if (items == 0) break;
        items--;
        consumed++;
    }
    CHECK_EQ(sqf_mutex_unlock(&cm), 0);
    return NULL;
}

static void test_cond(void)
{
    sqf_mutex_init(&cm, SQF_PRIVATE);
    sqf_cond_init(&cv, SQF_PRIVATE);
    producers_left = 2;
    items = consumed = 0;
    run_loops(cv_kick, cv_finished);
    pthread_t p[2], c[2];
    for (int i = 0; i < 2; i++) {
        pthread_create(&c[i], NULL, cv_consumer, NULL);
        pthread_create(&p[i], NULL, cv_producer, (void *)(uintptr_t)(i + 3));
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(p[i], NULL);
        pthread_join(c[i], NULL);
    }
    join_loops();
    CHECK_EQ(consumed + items, 2L * CV_ITEMS);
    CHECK_EQ(items, 0);
    CHECK_EQ(sqf_cond_destroy(&cv), 0);
    CHECK_EQ(sqf_mutex_destroy(&cm), 0);
    printf("cond: %ld items consumed by threads and loop ops\n", consumed);
}

/* --- sqf_loop_cancel racing a release ------------------------------------------------ */
static void race_cb(sqf_loop_op *op, int r, void *arg)
{
    (void)op;
    *(int *)arg = r;
}

/* Release after a spin of a few microseconds: sometimes before the loop's
 * cancel, sometimes after, sometimes while its wait completes. */
static sqf_sem race_sem;
static void *race_noop(void *arg)
{
    return arg;
}
static void *race_release(void *arg)
{
    for (uintptr_t i = (uintptr_t)arg; i > 0; i--)
        at_relax();
    CHECK_EQ(sqf_sem_release(&race_sem, 1), 0);
    return NULL;
}

static void test_cancel_race(unsigned flags)
{
    sqf_loop *loop;
    CHECK_EQ(sqf_loop_create(&loop, flags), 0);
    int took = 0, cancelled = 0;
    for (int k = 0; k < 2000; k++) {
        sqf_sem *s = &race_sem;
        sqf_sem_init(s, 0, 0, SQF_PRIVATE);
        sqf_loop_op op;
        int result = -1;
        CHECK_EQ(sqf_loop_sem_acquire(loop, &op, s, SQF_FOREVER, NULL, race_cb, &result),
                 EINPROGRESS);
        pthread_t t;
        /* Every 10th round the release surely comes first (the op must
         * then take the permit); otherwise they race. */
        if (k % 10 == 0) CHECK_EQ(sqf_sem_release(s, 1), 0);
        pthread_create(&t, NULL, k % 10 == 0 ? race_noop : race_release,
                       (void *)(uintptr_t)(k % 40 * 100));
        for (unsigned i = 0, n = (unsigned)k % 7 * 500; i < n; i++)
            at_relax();
        int e = sqf_loop_cancel(loop, &op);
        CHECK(e == 0 || e == ENOENT);
        sqf_deadline stop = sqf_after(5 * SQF_SEC);
        while (result < 0 && sqf_now() < stop) {
            struct pollfd p = {sqf_loop_fd(loop), POLLIN, 0};
            poll(&p, 1, 10);
            sqf_loop_dispatch(loop);
        }
        pthread_join(t, NULL);
        unsigned v = 9;
        sqf_sem_getvalue(s, &v);
        if (result == 0) {
            took++;
            CHECK_EQ(v, 0); /* the permit is the op's */
        } else {
            CHECK_EQ(result, ECANCELED);
            cancelled++;
            CHECK_EQ(v, 1); /* the permit was left for others */
        }
        CHECK_EQ(sqf_sem_destroy(s), 0);
    }
    CHECK_EQ(sqf_loop_destroy(loop), 0);
    printf("cancel racing a release: %d took the permit, %d cancelled\n", took, cancelled);
    CHECK(took > 0 && cancelled > 0); /* both sides of the race happened */
}

/* Everything above with both loops on one backend; 77 if it cannot run. */
static int on_backend(unsigned flags, const char *name)
{
    for (int i = 0; i < LOOPS; i++) {
        int e = sqf_loop_create(&loopers[i].loop, flags);
        if (e == ENOTSUP) {
            for (int j = 0; j < i; j++)
                sqf_loop_destroy(loopers[j].loop);
            return 77;
        }
        CHECK_EQ(e, 0);
        if (e) return 0;
    }
    printf("== %s backend\n", name);
    test_mutex();
    test_sem();
    test_mixed_wake();
    test_barrier();
    test_cond();
    test_cancel_race(flags);
    for (int i = 0; i < LOOPS; i++)
        CHECK_EQ(sqf_loop_destroy(loopers[i].loop), 0);
    return 0;
}

int main(void)
{
    watchdog(240);
    CHECK_EQ(on_backend(SQF_LOOP_FALLBACK, "fallback"), 0);
    if (!SQF_TEST_URING_EXPECTED) {
        printf("stress_loop: this build has no io_uring backend (no liburing, or the portable "
               "wait backend): the fallback was the one to check\n");
        return check_done();
    }
    if (on_backend(SQF_LOOP_URING, "io_uring") == 77) {
        printf("stress_loop: the io_uring backend SKIPPED: this kernel refuses io_uring futex "
               "operations\n");
        check_done();
        return 77;
    }
    return check_done();
}
