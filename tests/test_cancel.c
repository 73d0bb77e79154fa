/* test_cancel.c: cancellation tokens: errors, chains, deadlines, and
 * waking blocked calls (through sqf_event_wait_until) without consuming
 * anything. */
#include <squarefree/cancel.h>
#include <squarefree/barrier.h>
#include <squarefree/cond.h>
#include <squarefree/latch.h>
#include <squarefree/countdown.h>
#include <squarefree/event.h>
#include <squarefree/once.h>
#include <squarefree/rwlock.h>
#include <squarefree/sem.h>

#include "atomic.h"
#include "check.h"

static void test_tokens(void)
{
    sqf_cancel a = SQF_CANCEL_INIT, chain[SQF_CANCEL_MAX_DEPTH + 1];
    CHECK_EQ(sqf_cancel_init(NULL, NULL, SQF_FOREVER), EINVAL);
    CHECK_EQ(sqf_cancel_init(&a, &a, SQF_FOREVER), EINVAL);
    CHECK_EQ(sqf_cancel_cancel(NULL), EINVAL);
    CHECK_EQ(sqf_cancel_is_cancelled(NULL), 0);
    CHECK_EQ(sqf_cancel_is_cancelled(&a), 0); /* all zero: live */

    CHECK_EQ(sqf_cancel_init(&chain[0], NULL, SQF_FOREVER), 0);
    for (int i = 1; i < SQF_CANCEL_MAX_DEPTH; i++)
        CHECK_EQ(sqf_cancel_init(&chain[i], &chain[i - 1], SQF_FOREVER), 0);
    /* One more would be too deep; it must leave the token untouched. */
    chain[SQF_CANCEL_MAX_DEPTH] = (sqf_cancel)SQF_CANCEL_INIT;
    CHECK_EQ(sqf_cancel_init(&chain[SQF_CANCEL_MAX_DEPTH], &chain[SQF_CANCEL_MAX_DEPTH - 1],
                             SQF_FOREVER),
             EINVAL);
    CHECK(chain[SQF_CANCEL_MAX_DEPTH].parent == NULL);

    /* Cancelling an ancestor cancels the descendants, not the other way. */
    CHECK_EQ(sqf_cancel_is_cancelled(&chain[SQF_CANCEL_MAX_DEPTH - 1]), 0);
    CHECK_EQ(sqf_cancel_cancel(&chain[2]), 0);
    CHECK_EQ(sqf_cancel_cancel(&chain[2]), 0); /* twice: nothing more */
    CHECK_EQ(sqf_cancel_is_cancelled(&chain[SQF_CANCEL_MAX_DEPTH - 1]), 1);
    CHECK_EQ(sqf_cancel_is_cancelled(&chain[2]), 1);
    CHECK_EQ(sqf_cancel_is_cancelled(&chain[1]), 0);

    /* Deadlines. */
    sqf_cancel d;
    CHECK_EQ(sqf_cancel_init(&d, NULL, sqf_now() - 1), 0);
    CHECK_EQ(sqf_cancel_is_cancelled(&d), 1);
    CHECK_EQ(sqf_cancel_init(&d, NULL, 0), 0);
    CHECK_EQ(sqf_cancel_is_cancelled(&d), 1); /* 0 is in the past too */
    CHECK_EQ(sqf_cancel_init(&d, NULL, sqf_after(SQF_SEC)), 0);
    CHECK_EQ(sqf_cancel_is_cancelled(&d), 0);
}

struct waiter {
    sqf_event *e;
    const sqf_cancel *tok;
    sqf_deadline deadline;
    int result;
    sqf_deadline returned;
};

static void *wait_thread(void *arg)
{
    struct waiter *w = arg;
    w->result = sqf_event_wait_until(w->e, w->deadline, w->tok);
    w->returned = sqf_now();
    return NULL;
}

static void wait_until_sleeping(sqf_event *e, uint32_t n)
{
    WAIT_ASLEEP(at_load((sqf_word *)&e->waiters, SC) >= n);
}

static void test_waking(void)
{
    sqf_event e = SQF_EVENT_INIT;
    sqf_cancel root, mid, leaf, other;
    CHECK_EQ(sqf_cancel_init(&root, NULL, SQF_FOREVER), 0);
    CHECK_EQ(sqf_cancel_init(&mid, &root, SQF_FOREVER), 0);
    CHECK_EQ(sqf_cancel_init(&leaf, &mid, SQF_FOREVER), 0);
    CHECK_EQ(sqf_cancel_init(&other, NULL, SQF_FOREVER), 0);

    /* Four waiters: on leaf, on mid, on an unrelated token, on none.
     * Cancelling root must wake exactly the first two, promptly. */
    struct waiter w[4] = {{&e, &leaf, sqf_after(5 * SQF_SEC), -1, 0},
                          {&e, &mid, sqf_after(5 * SQF_SEC), -1, 0},
                          {&e, &other, sqf_after(5 * SQF_SEC), -1, 0},
                          {&e, NULL, sqf_after(5 * SQF_SEC), -1, 0}};
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, wait_thread, &w[i]);
    wait_until_sleeping(&e, 4);
    CHECK_EQ(sqf_cancel_cancel(&root), 0);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    CHECK_EQ(w[0].result, ECANCELED);
    CHECK_EQ(w[1].result, ECANCELED);
    CHECK(w[0].returned < w[0].deadline && w[1].returned < w[1].deadline);
    usleep(20 * 1000);
    CHECK_EQ(at_load((sqf_word *)&e.waiters, SC), 2); /* the other two still wait */
    CHECK_EQ(sqf_event_set(&e), 0);
    pthread_join(t[2], NULL);
    pthread_join(t[3], NULL);
    CHECK_EQ(w[2].result, 0);
    CHECK_EQ(w[3].result, 0);

    /* A set event completes at once, cancelled token or not. */
    CHECK_EQ(sqf_event_wait_until(&e, SQF_FOREVER, &leaf), 0);
    /* An unset event with a cancelled token: ECANCELED without sleeping. */
    CHECK_EQ(sqf_event_clear(&e), 0);
    CHECK_EQ(sqf_event_wait_until(&e, SQF_FOREVER, &leaf), ECANCELED);

    /* A token deadline gives ECANCELED; an earlier call deadline ETIMEDOUT. */
    sqf_cancel soon;
    sqf_deadline t0 = sqf_now();
    CHECK_EQ(sqf_cancel_init(&soon, NULL, t0 + 30 * SQF_MS), 0);
    CHECK_EQ(sqf_event_wait_until(&e, sqf_after(5 * SQF_SEC), &soon), ECANCELED);
    CHECK(sqf_now() - t0 >= 30 * SQF_MS);
    CHECK(sqf_now() - t0 < 4 * SQF_SEC);
    CHECK_EQ(sqf_cancel_init(&soon, NULL, sqf_after(5 * SQF_SEC)), 0);
    CHECK_EQ(sqf_event_wait_until(&e, sqf_after(20 * SQF_MS), &soon), ETIMEDOUT);
    CHECK_EQ(sqf_event_wait_until(NULL, SQF_FOREVER, &soon), EINVAL);
    CHECK_EQ(sqf_event_destroy(&e), 0);
}

/* Cancel racing set: every waiter returns 0 or ECANCELED, never hangs, and
 * an ECANCELED waiter's token was really cancelled. */
enum { RACERS = 32 };
static sqf_cancel racer_tok[RACERS];

static void test_races(void)
{
    for (long round = 0; round < soak(20); round++) {
        sqf_event e = SQF_EVENT_INIT;
        struct waiter w[RACERS];
        pthread_t t[RACERS];
        for (int i = 0; i < RACERS; i++) {
            sqf_cancel_init(&racer_tok[i], NULL, SQF_FOREVER);
            w[i] = (struct waiter){&e, &racer_tok[i], SQF_FOREVER, -1, 0};
            pthread_create(&t[i], NULL, wait_thread, &w[i]);
        }
        for (int i = 0; i < RACERS; i += 2)
            sqf_cancel_cancel(&racer_tok[i]);
        sqf_event_set(&e);
        for (int i = 0; i < RACERS; i++) {
            pthread_join(t[i], NULL);
            CHECK(w[i].result == 0 || (w[i].result == ECANCELED && i % 2 == 0));
        }
    }
}

/* Semaphore: a cancelled acquirer takes no permit, and permits are exactly
 * conserved when cancellations race with releases. */
struct sem_waiter {
    sqf_sem *s;
    sqf_cancel tok;
    int result; /* written by the waiter thread as it finishes */
};

static void *sem_thread(void *arg)
{
    struct sem_waiter *w = arg;
    int r = sqf_sem_acquire_until(w->s, SQF_FOREVER, &w->tok);
    at_store((sqf_word *)&w->result, (uint32_t)r, SC);
    return NULL;
}

static void test_sem(void)
{
    sqf_sem s = SQF_SEM_INIT;
    struct sem_waiter one = {&s, SQF_CANCEL_INIT, -1};
    pthread_t t;
    pthread_create(&t, NULL, sem_thread, &one);
    usleep(50 * 1000);
    CHECK_EQ(sqf_sem_destroy(&s), EBUSY); /* it sleeps */
    CHECK_EQ(sqf_cancel_cancel(&one.tok), 0);
    pthread_join(t, NULL);
    CHECK_EQ(one.result, ECANCELED);
    CHECK_EQ(sqf_sem_destroy(&s), 0); /* no longer counted */
    CHECK_EQ(sqf_sem_release(&s, 1), 0);
    CHECK_EQ(sqf_sem_acquire_until(&s, SQF_FOREVER, &one.tok), 0); /* a permit is there: taken */
    CHECK_EQ(sqf_sem_acquire_until(&s, SQF_FOREVER, &one.tok), ECANCELED);
    CHECK_EQ(sqf_sem_acquire_until(NULL, SQF_FOREVER, NULL), EINVAL);

    enum { N = 24 };
    for (long round = 0; round < soak(20); round++) {
        sqf_sem r = SQF_SEM_INIT;
        struct sem_waiter w[N];
        pthread_t th[N];
        for (int i = 0; i < N; i++) {
            w[i] = (struct sem_waiter){&r, SQF_CANCEL_INIT, -1};
            at_store((sqf_word *)&w[i].result, (uint32_t)-1, SC);
            pthread_create(&th[i], NULL, sem_thread, &w[i]);
        }
        for (int i = 0; i < N; i += 2)
            sqf_cancel_cancel(&w[i].tok);
        CHECK_EQ(sqf_sem_release(&r, N / 2), 0);
        /* A cancelled acquirer that finds a permit may take it, so top up
         * one at a time until every uncancelled one has returned. */
        int released = N / 2;
        for (int i = 1; i < N; i += 2) {
            while (at_load((sqf_word *)&w[i].result, SC) == (uint32_t)-1) {
                usleep(1000);
                unsigned v = 1;
                sqf_sem_getvalue(&r, &v);
                if (v == 0) {
                    CHECK_EQ(sqf_sem_release(&r, 1), 0);
                    released++;
                }
            }
        }
        for (int i = 0; i < N; i++)
            pthread_join(th[i], NULL);
        int got = 0;
        for (int i = 0; i < N; i++) {
            CHECK(w[i].result == 0 || (w[i].result == ECANCELED && i % 2 == 0));
            got += w[i].result == 0;
        }
        unsigned left = 99;
        sqf_sem_getvalue(&r, &left);
        CHECK_EQ(got + (int)left, released); /* every permit accounted for */
        CHECK_EQ(sqf_sem_destroy(&r), 0);
    }
}

/* Once: a caller waiting for another's run gives up when cancelled; the
 * run itself is unaffected and later callers see it done. */
static sqf_event release_fn = SQF_EVENT_INIT;
static sqf_once slow_once = SQF_ONCE_INIT;
static sqf_word fn_runs;

static int slow_fn(void *arg)
{
    (void)arg;
    at_add(&fn_runs, 1, SC);
    sqf_event_wait(&release_fn);
    return 0;
}

static void *once_runner(void *arg)
{
    (void)arg;
    CHECK_EQ(sqf_once_run(&slow_once, slow_fn, NULL), 0);
    return NULL;
}

struct once_waiter {
    sqf_cancel tok;
    int result;
};

static void *once_waiter(void *arg)
{
    struct once_waiter *w = arg;
    w->result = sqf_once_run_until(&slow_once, slow_fn, NULL, SQF_FOREVER, &w->tok);
    return NULL;
}

static void test_once(void)
{
    pthread_t r, t;
    pthread_create(&r, NULL, once_runner, NULL);
    while (at_load(&fn_runs, SC) == 0)
        usleep(200);
    struct once_waiter w = {SQF_CANCEL_INIT, -1};
    pthread_create(&t, NULL, once_waiter, &w);
    usleep(50 * 1000);
    CHECK_EQ(sqf_cancel_cancel(&w.tok), 0);
    pthread_join(t, NULL);
    CHECK_EQ(w.result, ECANCELED);
    CHECK_EQ(sqf_once_done(&slow_once), 0);
    sqf_event_set(&release_fn);
    pthread_join(r, NULL);
    CHECK_EQ(sqf_once_done(&slow_once), 1);
    CHECK_EQ(sqf_once_run_until(&slow_once, slow_fn, NULL, SQF_FOREVER, &w.tok), 0); /* done */
    CHECK_EQ(at_load(&fn_runs, SC), 1);
}

/* Cond: a cancelled waiter returns ECANCELED with the mutex held and never
 * swallows a signal meant for another: with one item and one signal per
 * uncancelled consumer, every one of them gets an item. */
static sqf_mutex cmu = SQF_MUTEX_INIT;
static sqf_cond ccv = SQF_COND_INIT;
static int items;

struct cond_consumer {
    sqf_cancel tok;
    int result;
};

static void *cond_consumer(void *arg)
{
    struct cond_consumer *c = arg;
    CHECK_EQ(sqf_mutex_lock(&cmu), 0);
    int e = 0;
    while (items == 0) {
        e = sqf_cond_wait_until(&ccv, &cmu, SQF_FOREVER, &c->tok);
        CHECK_EQ(sqf_mutex_trylock(&cmu), EBUSY); /* held on every return */
        if (e == ECANCELED) break;
        CHECK_EQ(e, 0);
    }
    if (e != ECANCELED) items--;
    c->result = e;
    CHECK_EQ(sqf_mutex_unlock(&cmu), 0);
    return NULL;
}

static void test_cond(void)
{
    enum { N = 16 };
    for (long round = 0; round < soak(20); round++) {
        struct cond_consumer c[N];
        pthread_t t[N];
        for (int i = 0; i < N; i++) {
            c[i] = (struct cond_consumer){SQF_CANCEL_INIT, -1};
            pthread_create(&t[i], NULL, cond_consumer, &c[i]);
        }
        /* Cancel the even ones while signalling, so that cancellations race
         * with signals. */
        int produced = 0;
        for (int i = 1; i < N; i += 2) {
            sqf_cancel_cancel(&c[i - 1].tok);
            sqf_mutex_lock(&cmu);
            items++;
            produced++;
            sqf_cond_signal(&ccv);
            sqf_mutex_unlock(&cmu);
        }
        /* No signal may be swallowed: an item left over while an
         * uncancelled consumer still sleeps must not last. */
        sqf_deadline stop = sqf_after(2 * SQF_SEC);
        for (;;) {
            sqf_mutex_lock(&cmu);
            int waiting = 0;
            for (int i = 1; i < N; i += 2)
                waiting += c[i].result == -1;
            int stuck = waiting > 0 && items > 0;
            sqf_mutex_unlock(&cmu);
            if (!stuck) break;
            if (sqf_now() > stop) {
                CHECK(!"an item is left while a consumer sleeps: a lost signal");
                break;
            }
            usleep(1000);
        }
        /* Cancelled consumers may have taken items too (they saw one before
         * being cancelled): top up until every uncancelled one is done. */
        for (int i = 1; i < N; i += 2) {
            for (;;) {
                sqf_mutex_lock(&cmu);
                int done = c[i].result != -1;
                if (!done && items == 0) {
                    items++;
                    produced++;
                    sqf_cond_signal(&ccv);
                }
                sqf_mutex_unlock(&cmu);
                if (done) break;
                usleep(1000);
            }
        }
        int taken = 0;
        for (int i = 0; i < N; i++) {
            pthread_join(t[i], NULL);
            CHECK(c[i].result == 0 || (c[i].result == ECANCELED && i % 2 == 0));
            taken += c[i].result == 0;
        }
        CHECK_EQ(taken + items, produced);
        items = 0;
        CHECK_EQ(sqf_cond_destroy(&ccv), 0);
    }
}

/* Mutex: cancelled lockers leave without the lock and without stranding
 * the plain lockers queued with them. */
static sqf_mutex mmu = SQF_MUTEX_INIT;
static long mcount; /* guarded by mmu */

struct locker {
    sqf_cancel tok;
    int result;
};

static void *locker(void *arg)
{
    struct locker *l = arg;
    int e = sqf_mutex_lock_until(&mmu, SQF_FOREVER, &l->tok);
    if (e == 0) {
        mcount++;
        CHECK_EQ(sqf_mutex_unlock(&mmu), 0);
    }
    at_store((sqf_word *)&l->result, (uint32_t)e, SC);
    return NULL;
}

static void test_mutex(void)
{
    enum { N = 16 };
    for (long round = 0; round < soak(20); round++) {
        struct locker l[N];
        pthread_t t[N];
        mcount = 0;
        CHECK_EQ(sqf_mutex_lock(&mmu), 0);
        for (int i = 0; i < N; i++) {
            l[i] = (struct locker){SQF_CANCEL_INIT, -1};
            at_store((sqf_word *)&l[i].result, (uint32_t)-1, SC);
            pthread_create(&t[i], NULL, locker, &l[i]);
        }
        usleep(round == 0 ? 50 * 1000 : 1000);
        for (int i = 0; i < N; i += 2)
            sqf_cancel_cancel(&l[i].tok);
        if (round == 0) { /* all were asleep: the cancelled ones leave now */
            for (int i = 0; i < N; i += 2) {
                sqf_deadline stop = sqf_after(5 * SQF_SEC);
                while (at_load((sqf_word *)&l[i].result, SC) == (uint32_t)-1 && sqf_now() < stop)
                    usleep(200);
                CHECK_EQ(at_load((sqf_word *)&l[i].result, SC), ECANCELED);
            }
        }
        CHECK_EQ(sqf_mutex_unlock(&mmu), 0);
        int got = 0;
        for (int i = 0; i < N; i++) {
            pthread_join(t[i], NULL);
            CHECK(l[i].result == 0 || (l[i].result == ECANCELED && i % 2 == 0));
            got += l[i].result == 0;
        }
        CHECK_EQ(mcount, got);
        CHECK_EQ(sqf_mutex_trylock(&mmu), 0);
        CHECK_EQ(sqf_mutex_unlock(&mmu), 0);
    }
    sqf_cancel done;
    sqf_cancel_init(&done, NULL, SQF_FOREVER);
    sqf_cancel_cancel(&done);
    CHECK_EQ(sqf_mutex_lock_until(&mmu, SQF_FOREVER, &done), 0); /* free: taken anyway */
    CHECK_EQ(sqf_mutex_lock_until(&mmu, SQF_FOREVER, &done), ECANCELED);
    CHECK_EQ(sqf_mutex_unlock(&mmu), 0);
    CHECK_EQ(sqf_mutex_lock_until(NULL, SQF_FOREVER, NULL), EINVAL);
}

/* Countdown: a cancelled waiter leaves; the others are released at zero. */
struct cd_waiter {
    sqf_countdown *c;
    sqf_cancel tok;
    int result;
};

static void *cd_thread(void *arg)
{
    struct cd_waiter *w = arg;
    w->result = sqf_countdown_wait_until(w->c, SQF_FOREVER, &w->tok);
    return NULL;
}

static void test_countdown(void)
{
    sqf_countdown c = SQF_COUNTDOWN_INIT;
    CHECK_EQ(sqf_countdown_up(&c, 1), 0);
    struct cd_waiter w[2] = {{&c, SQF_CANCEL_INIT, -1}, {&c, SQF_CANCEL_INIT, -1}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, cd_thread, &w[i]);
    usleep(50 * 1000);
    CHECK_EQ(sqf_cancel_cancel(&w[0].tok), 0);
    pthread_join(t[0], NULL);
    CHECK_EQ(w[0].result, ECANCELED);
    CHECK_EQ(sqf_countdown_down(&c), 0);
    pthread_join(t[1], NULL);
    CHECK_EQ(w[1].result, 0);
    CHECK_EQ(sqf_countdown_wait_until(&c, SQF_FOREVER, &w[0].tok), 0); /* zero: at once */
    CHECK_EQ(sqf_countdown_destroy(&c), 0);
}

/* Latch: a cancelled waiter leaves, the latch stays pending for others.
 * Barrier: a cancelled party breaks the phase (others EPIPE). */
struct lb_waiter {
    sqf_latch *l;
    sqf_barrier *b;
    sqf_cancel tok;
    int result;
};

static void *lb_thread(void *arg)
{
    struct lb_waiter *w = arg;
    if (w->l)
        w->result = sqf_latch_wait_until(w->l, SQF_FOREVER, &w->tok);
    else
        w->result = sqf_barrier_wait_until(w->b, SQF_FOREVER, &w->tok, NULL, NULL, NULL);
    return NULL;
}

static void test_latch_barrier(void)
{
    sqf_latch l;
    CHECK_EQ(sqf_latch_init(&l, 1, 0), 0);
    struct lb_waiter w[2] = {{&l, NULL, SQF_CANCEL_INIT, -1}, {&l, NULL, SQF_CANCEL_INIT, -1}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, lb_thread, &w[i]);
    usleep(50 * 1000);
    CHECK_EQ(sqf_cancel_cancel(&w[0].tok), 0);
    pthread_join(t[0], NULL);
    CHECK_EQ(w[0].result, ECANCELED);
    CHECK_EQ(sqf_latch_try_wait(&l), EBUSY); /* still pending */
    CHECK_EQ(sqf_latch_count_down(&l, 1), 0);
    pthread_join(t[1], NULL);
    CHECK_EQ(w[1].result, 0);
    CHECK_EQ(sqf_latch_wait_until(&l, SQF_FOREVER, &w[0].tok), 0); /* open: at once */

    sqf_barrier b;
    CHECK_EQ(sqf_barrier_init(&b, 3, 0), 0);
    struct lb_waiter p[2] = {{NULL, &b, SQF_CANCEL_INIT, -1}, {NULL, &b, SQF_CANCEL_INIT, -1}};
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, lb_thread, &p[i]);
    usleep(50 * 1000);
    CHECK_EQ(sqf_cancel_cancel(&p[0].tok), 0);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    CHECK_EQ(p[0].result, ECANCELED);
    CHECK_EQ(p[1].result, EPIPE);
    CHECK_EQ(sqf_barrier_wait(&b, NULL), EPIPE);
    CHECK_EQ(sqf_barrier_reset(&b), 0);
    CHECK_EQ(sqf_barrier_destroy(&b), 0);
}

/* Rwlock: a cancelled writer that had taken the turn gives it up, letting
 * the readers queued behind it in; a cancelled writer queued behind another
 * writer leaves; a cancelled reader leaves. */
static sqf_rwlock rw = SQF_RWLOCK_INIT;

struct rw_waiter {
    int write;
    sqf_cancel tok;
    sqf_word result;
};

static void *rw_thread(void *arg)
{
    struct rw_waiter *w = arg;
    int e = w->write ? sqf_rwlock_wrlock_until(&rw, SQF_FOREVER, &w->tok)
                     : sqf_rwlock_rdlock_until(&rw, SQF_FOREVER, &w->tok);
    if (e == 0)
        e = w->write ? sqf_rwlock_wrunlock(&rw) : sqf_rwlock_rdunlock(&rw);
    else
        at_store(&w->result, (uint32_t)e, SC);
    if (at_load(&w->result, SC) == (uint32_t)-1) at_store(&w->result, (uint32_t)e, SC);
    return NULL;
}

static uint32_t wait_result(struct rw_waiter *w)
{
    sqf_deadline stop = sqf_after(5 * SQF_SEC);
    while (at_load(&w->result, SC) == (uint32_t)-1 && sqf_now() < stop)
        usleep(200);
    return at_load(&w->result, SC);
}

static void test_rwlock(void)
{
    struct rw_waiter wr = {1, SQF_CANCEL_INIT, 0}, rd = {0, SQF_CANCEL_INIT, 0};
    at_store(&wr.result, (uint32_t)-1, SC);
    at_store(&rd.result, (uint32_t)-1, SC);
    CHECK_EQ(sqf_rwlock_rdlock(&rw), 0);
    pthread_t tw, tr;
    pthread_create(&tw, NULL, rw_thread, &wr);
    usleep(50 * 1000); /* the writer has the turn, waiting for our read lock */
    CHECK_EQ(sqf_rwlock_tryrdlock(&rw), EBUSY);
    pthread_create(&tr, NULL, rw_thread, &rd); /* queued behind the writer */
    usleep(50 * 1000);
    CHECK_EQ(at_load(&rd.result, SC), (uint32_t)-1);
    CHECK_EQ(sqf_cancel_cancel(&wr.tok), 0);
    CHECK_EQ(wait_result(&wr), ECANCELED);
    CHECK_EQ(wait_result(&rd), 0); /* let in although we still read */
    CHECK_EQ(sqf_rwlock_rdunlock(&rw), 0);
    pthread_join(tw, NULL);
    pthread_join(tr, NULL);

    /* A writer queued behind a writer, and a reader queued behind it. */
    struct rw_waiter w2 = {1, SQF_CANCEL_INIT, 0}, r2 = {0, SQF_CANCEL_INIT, 0};
    at_store(&w2.result, (uint32_t)-1, SC);
    at_store(&r2.result, (uint32_t)-1, SC);
    CHECK_EQ(sqf_rwlock_wrlock(&rw), 0);
    pthread_create(&tw, NULL, rw_thread, &w2);
    pthread_create(&tr, NULL, rw_thread, &r2);
    usleep(50 * 1000);
    CHECK_EQ(sqf_cancel_cancel(&w2.tok), 0);
    CHECK_EQ(sqf_cancel_cancel(&r2.tok), 0);
    CHECK_EQ(wait_result(&w2), ECANCELED);
    CHECK_EQ(wait_result(&r2), ECANCELED);
    CHECK_EQ(sqf_rwlock_wrunlock(&rw), 0);
    pthread_join(tw, NULL);
    pthread_join(tr, NULL);
    CHECK_EQ(sqf_rwlock_trywrlock(&rw), 0); /* nothing left behind */
    CHECK_EQ(sqf_rwlock_wrunlock(&rw), 0);
    CHECK_EQ(sqf_rwlock_destroy(&rw), 0);
}

int main(void)
{
    watchdog(60);
    test_tokens();
    test_waking();
    test_races();
    test_sem();
    test_once();
    test_cond();
    test_mutex();
    test_countdown();
    test_latch_barrier();
    test_rwlock();
    return check_done();
}
