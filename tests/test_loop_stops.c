/* test_loop_stops.c: how a loop op ends when it is stopped, for every op,
 * on both loop backends, with nobody releasing what it waits for:
 *
 *   its own deadline passes           ETIMEDOUT
 *   its token's deadline passes       ECANCELED
 *   its token is cancelled            ECANCELED
 *   sqf_loop_cancel                   ECANCELED
 *   sqf_loop_cancel, then its deadline passes before the next dispatch
 *                                     ECANCELED (the first stop wins)
 *   its deadline passes, then sqf_loop_cancel before the next dispatch
 *                                     ETIMEDOUT (the first stop wins)
 *
 * the results the blocking calls give (loop.h: "0 or the errno the blocking
 * call would have returned").  After each, what the op waited on is
 * unchanged: nothing consumed, nobody left counted.  A cond op in the usual
 * predicate loop reads 0 as a wake-up and waits again, so a 0 here would
 * lose the stop. */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <squarefree.h>
#include <squarefree/loop.h>

#include "check.h"

static sqf_loop *loop;
static sqf_loop_op op;
static int result, done;

static void cb(sqf_loop_op *o, int r, void *arg)
{
    CHECK(o == &op && arg == &op);
    result = r;
    done++;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, ms % 1000 * 1000000};
    nanosleep(&ts, NULL);
}

/* Dispatch until the op's callback has run (5 s at most). */
static void run_until_done(void)
{
    sqf_deadline stop = sqf_after(5 * SQF_SEC);
    while (!done && sqf_now() < stop) {
        struct pollfd p = {sqf_loop_fd(loop), POLLIN, 0};
        poll(&p, 1, 20);
        CHECK(sqf_loop_dispatch(loop) >= 0);
    }
    CHECK_EQ(done, 1);
}

enum kind {
    K_SEM,
    K_EVENT,
    K_LATCH,
    K_COUNTDOWN,
    K_MUTEX,
    K_RDLOCK,
    K_WRLOCK,
    K_POP,
    K_PUSH,
    K_BARRIER,
    K_COND,
    K_KINDS
};
static const char *const kind_name[K_KINDS] = {"sem",   "event",   "latch",  "countdown",
                                               "mutex", "rdlock",  "wrlock", "pop",
                                               "push",  "barrier", "cond"};

/* One of each primitive, set up so that the op must wait. */
static sqf_sem sem;
static sqf_event ev;
static sqf_latch la;
static sqf_countdown cd;
static sqf_mutex mu, cmu;
static sqf_rwlock rw;
static sqf_queue *q;
static sqf_barrier ba;
static sqf_cond cv;
static int item, slot;

static void setup(enum kind k)
{
    switch (k) {
    case K_SEM:
        CHECK_EQ(sqf_sem_init(&sem, 0, 0, SQF_PRIVATE), 0);
        break;
    case K_EVENT:
        CHECK_EQ(sqf_event_init(&ev, SQF_PRIVATE), 0);
        break;
    case K_LATCH:
        CHECK_EQ(sqf_latch_init(&la, 1, SQF_PRIVATE), 0);
        break;
    case K_COUNTDOWN:
        CHECK_EQ(sqf_countdown_init(&cd, 1, SQF_PRIVATE), 0);
        break;
    case K_MUTEX:
        CHECK_EQ(sqf_mutex_init(&mu, SQF_PRIVATE), 0);
        CHECK_EQ(sqf_mutex_lock(&mu), 0);
        break;
    case K_RDLOCK:
        CHECK_EQ(sqf_rwlock_init(&rw, SQF_PRIVATE), 0);
        CHECK_EQ(sqf_rwlock_wrlock(&rw), 0);
        break;
    case K_WRLOCK:
        CHECK_EQ(sqf_rwlock_init(&rw, SQF_PRIVATE), 0);
        CHECK_EQ(sqf_rwlock_rdlock(&rw), 0);
        break;
    case K_POP:
        CHECK_EQ(sqf_queue_init(q, 1, sizeof(int), SQF_PRIVATE), 0);
        break;
    case K_PUSH:
        CHECK_EQ(sqf_queue_init(q, 1, sizeof(int), SQF_PRIVATE), 0);
        item = 7;
        CHECK_EQ(sqf_queue_push(q, &item), 0);
        break;
    case K_BARRIER:
        CHECK_EQ(sqf_barrier_init(&ba, 2, SQF_PRIVATE), 0);
        break;
    case K_COND:
        CHECK_EQ(sqf_mutex_init(&cmu, SQF_PRIVATE), 0);
        CHECK_EQ(sqf_cond_init(&cv, SQF_PRIVATE), 0);
        CHECK_EQ(sqf_mutex_lock(&cmu), 0); /* the op's task holds it */
        break;
    default:
        break;
    }
}

static int start(enum kind k, sqf_deadline d, const sqf_cancel *t)
{
    switch (k) {
    case K_SEM:
        return sqf_loop_sem_acquire(loop, &op, &sem, d, t, cb, &op);
    case K_EVENT:
        return sqf_loop_event_wait(loop, &op, &ev, d, t, cb, &op);
    case K_LATCH:
        return sqf_loop_latch_wait(loop, &op, &la, d, t, cb, &op);
    case K_COUNTDOWN:
        return sqf_loop_countdown_wait(loop, &op, &cd, d, t, cb, &op);
    case K_MUTEX:
        return sqf_loop_mutex_lock(loop, &op, &mu, d, t, cb, &op);
    case K_RDLOCK:
        return sqf_loop_rwlock_rdlock(loop, &op, &rw, d, t, cb, &op);
    case K_WRLOCK:
        return sqf_loop_rwlock_wrlock(loop, &op, &rw, d, t, cb, &op);
    case K_POP:
        return sqf_loop_queue_pop(loop, &op, q, &slot, 1, NULL, d, t, cb, &op);
    case K_PUSH:
        return sqf_loop_queue_push(loop, &op, q, &item, 1, NULL, d, t, cb, &op);
    case K_BARRIER:
        return sqf_loop_barrier_wait(loop, &op, &ba, d, t, cb, &op);
    case K_COND:
        return sqf_loop_cond_wait(loop, &op, &cv, &cmu, d, t, cb, &op);
    default:
        return EINVAL;
    }
}

/* Nothing was taken and nobody is left counted; then tear down. */
static void check_untouched(enum kind k)
{
    int v = 0;
    switch (k) {
    case K_SEM:
        CHECK_EQ(sqf_sem_tryacquire(&sem), EBUSY);
        CHECK_EQ(sqf_sem_destroy(&sem), 0);
        break;
    case K_EVENT:
        CHECK_EQ(sqf_event_destroy(&ev), 0);
        break;
    case K_LATCH:
        CHECK_EQ(sqf_latch_try_wait(&la), EBUSY);
        CHECK_EQ(sqf_latch_destroy(&la), 0);
        break;
    case K_COUNTDOWN:
        CHECK_EQ(sqf_countdown_destroy(&cd), 0);
        break;
    case K_MUTEX:
        CHECK_EQ(sqf_mutex_unlock(&mu), 0);
        CHECK_EQ(sqf_mutex_trylock(&mu), 0); /* nobody else took it */
        CHECK_EQ(sqf_mutex_unlock(&mu), 0);
        CHECK_EQ(sqf_mutex_destroy(&mu), 0);
        break;
    case K_RDLOCK:
    case K_WRLOCK:
        /* Our own hold (the other side) goes; then nobody else holds it. */
        CHECK_EQ(k == K_RDLOCK ? sqf_rwlock_wrunlock(&rw) : sqf_rwlock_rdunlock(&rw), 0);
        CHECK_EQ(sqf_rwlock_trywrlock(&rw), 0);
        CHECK_EQ(sqf_rwlock_wrunlock(&rw), 0);
        CHECK_EQ(sqf_rwlock_destroy(&rw), 0);
        break;
    case K_POP:
        CHECK_EQ(sqf_queue_trypop(q, &v), EBUSY);
        CHECK_EQ(sqf_queue_destroy(q), 0);
        break;
    case K_PUSH:
        CHECK_EQ(sqf_queue_trypop(q, &v), 0);
        CHECK_EQ(v, 7);
        CHECK_EQ(sqf_queue_trypop(q, &v), EBUSY); /* the push put nothing */
        CHECK_EQ(sqf_queue_destroy(q), 0);
        break;
    case K_BARRIER:
        /* A stopped barrier wait breaks the barrier (barrier.h). */
        CHECK_EQ(sqf_barrier_wait(&ba, NULL), EPIPE);
        CHECK_EQ(sqf_barrier_destroy(&ba), 0);
        break;
    case K_COND:
        /* The op ends holding the mutex, whatever it returns. */
        CHECK_EQ(sqf_mutex_trylock(&cmu), EBUSY);
        CHECK_EQ(sqf_mutex_unlock(&cmu), 0);
        CHECK_EQ(sqf_cond_destroy(&cv), 0);
        CHECK_EQ(sqf_mutex_destroy(&cmu), 0);
        break;
    default:
        break;
    }
}

enum how {
    OWN_DEADLINE,
    TOKEN_DEADLINE,
    TOKEN_CANCEL,
    LOOP_CANCEL,
    CANCEL_THEN_DEADLINE,
    DEADLINE_THEN_CANCEL,
    HOWS
};
static const char *const how_name[HOWS] = {"own deadline",          "token deadline",
                                           "token cancelled",       "sqf_loop_cancel",
                                           "cancel, then deadline", "deadline, then cancel"};
static const int want[HOWS] = {ETIMEDOUT, ECANCELED, ECANCELED, ECANCELED, ECANCELED, ETIMEDOUT};

static void one(enum kind k, enum how h)
{
    setup(k);
    sqf_cancel tok;
    const sqf_cancel *t = NULL;
    sqf_deadline d = SQF_FOREVER;
    switch (h) {
    case OWN_DEADLINE:
        d = sqf_after(20 * SQF_MS);
        break;
    case TOKEN_DEADLINE:
        sqf_cancel_init(&tok, NULL, sqf_after(20 * SQF_MS));
        t = &tok;
        break;
    case TOKEN_CANCEL:
        sqf_cancel_init(&tok, NULL, SQF_FOREVER);
        t = &tok;
        break;
    case CANCEL_THEN_DEADLINE:
    case DEADLINE_THEN_CANCEL:
        d = sqf_after(20 * SQF_MS);
        break;
    default:
        break;
    }
    done = 0;
    result = -1;
    CHECK_EQ(start(k, d, t), EINPROGRESS);
    switch (h) {
    case TOKEN_CANCEL:
        CHECK_EQ(sqf_cancel_cancel(&tok), 0);
        break;
    case LOOP_CANCEL:
        CHECK_EQ(sqf_loop_cancel(loop, &op), 0);
        break;
    case CANCEL_THEN_DEADLINE:
        /* The deadline passes after the cancel and before any dispatch. */
        CHECK_EQ(sqf_loop_cancel(loop, &op), 0);
        sleep_ms(40);
        break;
    case DEADLINE_THEN_CANCEL:
        sleep_ms(40);
        CHECK_EQ(sqf_loop_cancel(loop, &op), 0);
        break;
    default:
        break;
    }
    run_until_done();
    if (result != want[h])
        fprintf(stderr, "test_loop_stops: %s backend, %s, %s: %d, want %d\n",
                sqf_loop_backend(loop), kind_name[k], how_name[h], result, want[h]);
    CHECK_EQ(result, want[h]);
    CHECK_EQ(sqf_loop_pending(loop), 0);
    check_untouched(k);
}

static int on_backend(unsigned flags)
{
    int e = sqf_loop_create(&loop, flags);
    if (e == ENOTSUP) return 77;
    CHECK_EQ(e, 0);
    if (e) return 0;
    for (int k = 0; k < K_KINDS; k++)
        for (int h = 0; h < HOWS; h++)
            one((enum kind)k, (enum how)h);
    CHECK_EQ(sqf_loop_destroy(loop), 0);
    return 0;
}

int main(void)
{
    watchdog(60);
    size_t bytes = (sqf_queue_bytes(1, sizeof(int)) + 63) & ~(size_t)63;
    q = aligned_alloc(64, bytes);
    CHECK_EQ(on_backend(SQF_LOOP_FALLBACK), 0);
    int u = on_backend(SQF_LOOP_URING);
    free(q);
    if (u == 77 && SQF_TEST_URING_EXPECTED) {
        printf("test_loop_stops: the io_uring backend SKIPPED: this kernel refuses io_uring futex "
               "operations (Linux 6.7+)\n");
        check_done();
        return 77;
    }
    return check_done();
}
