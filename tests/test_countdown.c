/* test_countdown.c: sqf_countdown's contract: errors (a failed call changes
 * nothing), value snapshots, time-outs, waking every waiter when the count
 * reaches zero, the generation rule (a wait that began before the count
 * reached zero returns 0 even if an up follows at once), destroy with
 * waiters, ordering (writes before the downs are seen after the wait), and
 * freeing the countdown as soon as a wait returns. */
#include <squarefree/countdown.h>

#include <semaphore.h>

#include "atomic.h"
#include "check.h"
#include "park.h"

/* The whole state word (white box: the layout is documented in the header). */
static uint64_t state_of(sqf_countdown *c)
{
    return at_load64((sqf_word64 *)&c->state, SC);
}
static uint32_t high_of(sqf_countdown *c)
{
    return (uint32_t)(state_of(c) >> 32);
}
static unsigned value_of(sqf_countdown *c)
{
    unsigned v = 12345;
    CHECK_EQ(sqf_countdown_value(c, &v), 0);
    return v;
}

#define HI_WAITERS 1u
#define HI_SHARED  2u
#define HI_GEN     4u

static void test_bad_input(void)
{
    sqf_countdown c = SQF_COUNTDOWN_INIT;
    unsigned v;
    CHECK_EQ(sizeof(sqf_countdown), 16);
    CHECK_EQ(_Alignof(sqf_countdown), 8);
    CHECK_EQ(sqf_countdown_init(NULL, 0, 0), EINVAL);
    CHECK_EQ(sqf_countdown_init(&c, 0, 2), EINVAL);
    CHECK_EQ(sqf_countdown_init(&c, 5, ~SQF_SHARED), EINVAL);
    CHECK_EQ(state_of(&c), 0); /* the failed inits changed nothing */
    CHECK_EQ(sqf_countdown_destroy(NULL), EINVAL);
    CHECK_EQ(sqf_countdown_up(NULL, 1), EINVAL);
    CHECK_EQ(sqf_countdown_down(NULL), EINVAL);
    CHECK_EQ(sqf_countdown_down_n(NULL, 1), EINVAL);
    CHECK_EQ(sqf_countdown_wait(NULL), EINVAL);
    CHECK_EQ(sqf_countdown_timedwait(NULL, SQF_FOREVER), EINVAL);
    CHECK_EQ(sqf_countdown_timedwait(NULL, 0), EINVAL);
    CHECK_EQ(sqf_countdown_value(NULL, &v), EINVAL);
    CHECK_EQ(sqf_countdown_value(&c, NULL), EINVAL);

    /* up(0), down at 0, down_n(0), down_n(n > count): EINVAL, no change. */
    CHECK_EQ(sqf_countdown_up(&c, 0), EINVAL);
    CHECK_EQ(state_of(&c), 0);
    CHECK_EQ(sqf_countdown_down(&c), EINVAL);
    CHECK_EQ(sqf_countdown_down_n(&c, 1), EINVAL);
    CHECK_EQ(state_of(&c), 0);
    CHECK_EQ(sqf_countdown_up(&c, 3), 0);
    uint64_t st = state_of(&c);
    CHECK_EQ(sqf_countdown_down_n(&c, 0), EINVAL);
    CHECK_EQ(sqf_countdown_down_n(&c, 4), EINVAL);
    CHECK_EQ(sqf_countdown_down_n(&c, SQF_COUNTDOWN_MAX), EINVAL);
    CHECK_EQ(sqf_countdown_up(&c, 0), EINVAL);
    CHECK_EQ(state_of(&c), st);
    CHECK_EQ(value_of(&c), 3);
    CHECK_EQ(sqf_countdown_down_n(&c, 3), 0);
    CHECK_EQ(value_of(&c), 0);
    st = state_of(&c);
    CHECK_EQ(sqf_countdown_down(&c), EINVAL);
    CHECK_EQ(state_of(&c), st);

    /* Near the bound: up past MAX is EOVERFLOW and changes nothing. */
    CHECK_EQ(sqf_countdown_init(&c, SQF_COUNTDOWN_MAX - 1, 0), 0);
    CHECK_EQ(value_of(&c), SQF_COUNTDOWN_MAX - 1);
    st = state_of(&c);
    CHECK_EQ(sqf_countdown_up(&c, 2), EOVERFLOW);
    CHECK_EQ(sqf_countdown_up(&c, SQF_COUNTDOWN_MAX), EOVERFLOW);
    CHECK_EQ(state_of(&c), st);
    CHECK_EQ(value_of(&c), SQF_COUNTDOWN_MAX - 1);
    CHECK_EQ(sqf_countdown_up(&c, 1), 0);
    CHECK_EQ(value_of(&c), SQF_COUNTDOWN_MAX);
    CHECK_EQ(high_of(&c), 0); /* no carry into the high half */
    st = state_of(&c);
    CHECK_EQ(sqf_countdown_up(&c, 1), EOVERFLOW);
    CHECK_EQ(state_of(&c), st);
    CHECK_EQ(sqf_countdown_timedwait(&c, sqf_now() - 1), ETIMEDOUT);
    CHECK_EQ(sqf_countdown_down_n(&c, SQF_COUNTDOWN_MAX), 0);
    CHECK_EQ(value_of(&c), 0);
    CHECK_EQ(sqf_countdown_wait(&c), 0);
    CHECK_EQ(sqf_countdown_destroy(&c), 0);

    /* Up from zero to the bound in one step. */
    CHECK_EQ(sqf_countdown_init(&c, 0, 0), 0);
    CHECK_EQ(sqf_countdown_up(&c, SQF_COUNTDOWN_MAX), 0);
    CHECK_EQ(value_of(&c), SQF_COUNTDOWN_MAX);
    CHECK_EQ(sqf_countdown_up(&c, 1), EOVERFLOW);
    CHECK_EQ(sqf_countdown_down_n(&c, SQF_COUNTDOWN_MAX), 0);

    if (SQF_TEST_SHARED_EXPECTED) {
        CHECK_EQ(sqf_countdown_init(&c, 2, SQF_SHARED), 0);
        CHECK_EQ(high_of(&c), HI_SHARED);
        CHECK_EQ(value_of(&c), 2);
        CHECK_EQ(sqf_countdown_down_n(&c, 2), 0);
        CHECK_EQ(high_of(&c), HI_SHARED | HI_GEN); /* SHARED survives reaching zero */
    } else {
        st = state_of(&c);
        CHECK_EQ(sqf_countdown_init(&c, 2, SQF_SHARED), ENOTSUP);
        CHECK_EQ(state_of(&c), st);
    }
}

static void test_basic(void)
{
    sqf_countdown c = SQF_COUNTDOWN_INIT;
    CHECK_EQ(value_of(&c), 0);
    /* At zero: every wait returns at once, whatever the deadline. */
    sqf_deadline t0 = sqf_now();
    CHECK_EQ(sqf_countdown_wait(&c), 0);
    CHECK_EQ(sqf_countdown_timedwait(&c, sqf_now() - 1), 0);
    CHECK_EQ(sqf_countdown_timedwait(&c, 0), 0);
    CHECK_EQ(sqf_countdown_timedwait(&c, sqf_after(10 * SQF_SEC)), 0);
    CHECK(sqf_now() - t0 < SQF_SEC);

    /* Ups and downs that do not reach zero leave the high half (the
     * sleepers' futex word) alone; reaching zero advances the generation. */
    CHECK_EQ(sqf_countdown_up(&c, 1), 0);
    CHECK_EQ(sqf_countdown_up(&c, 4), 0);
    CHECK_EQ(value_of(&c), 5);
    CHECK_EQ(high_of(&c), 0);
    CHECK_EQ(sqf_countdown_down(&c), 0);
    CHECK_EQ(sqf_countdown_down_n(&c, 2), 0);
    CHECK_EQ(value_of(&c), 2);
    CHECK_EQ(high_of(&c), 0);

    /* Non-zero: a past deadline checks once; a future one is waited out. */
    CHECK_EQ(sqf_countdown_timedwait(&c, sqf_now() - 1), ETIMEDOUT);
    CHECK_EQ(sqf_countdown_timedwait(&c, INT64_MIN), ETIMEDOUT);
    t0 = sqf_now();
    CHECK_EQ(sqf_countdown_timedwait(&c, t0 + 30 * SQF_MS), ETIMEDOUT);
    CHECK(sqf_now() - t0 >= 30 * SQF_MS);
    CHECK_EQ(value_of(&c), 2); /* timing out changed nothing */
    CHECK_EQ(sqf_countdown_destroy(&c), 0);

    CHECK_EQ(sqf_countdown_down(&c), 0);
    CHECK_EQ(sqf_countdown_down(&c), 0);
    CHECK_EQ(value_of(&c), 0);
    /* The timed-out waiter left WAITERS behind (stale: one futile wake);
     * the down to zero cleared it and advanced the generation. */
    CHECK_EQ(high_of(&c), HI_GEN);
    CHECK_EQ(sqf_countdown_wait(&c), 0);
    CHECK_EQ(sqf_countdown_up(&c, 1), 0);
    CHECK_EQ(sqf_countdown_down(&c), 0);
    CHECK_EQ(high_of(&c), 2 * HI_GEN);
    CHECK_EQ(sqf_countdown_destroy(&c), 0);
}

struct waiter {
    sqf_countdown *c;
    sqf_deadline deadline;
    int result;
    sqf_deadline returned;
    long payload_seen;
};

/* Written (non-atomically) by several threads before their downs; read by
 * the waiters after their waits.  Under TSan a missing release or acquire
 * shows up as a race; elsewhere as a wrong sum (rarely). */
enum { WRITERS = 4 };
static long payload[WRITERS];

static void *wait_thread(void *arg)
{
    struct waiter *w = arg;
    w->result = sqf_countdown_timedwait(w->c, w->deadline);
    w->returned = sqf_now();
    if (w->result == 0) {
        long sum = 0;
        for (int i = 0; i < WRITERS; i++)
            sum += payload[i];
        w->payload_seen = sum;
    }
    return NULL;
}

struct writer {
    sqf_countdown *c;
    int index;
    long value;
};

static void *write_then_down(void *arg)
{
    struct writer *wr = arg;
    payload[wr->index] = wr->value;
    CHECK_EQ(sqf_countdown_down(wr->c), 0);
    return NULL;
}

static void wait_until_sleeping(sqf_countdown *c, uint32_t n)
{
    WAIT_ASLEEP(at_load((sqf_word *)&c->waiters, SC) >= n && (high_of(c) & HI_WAITERS));
}

/* Parking: a signal handler holds each waiter still (out of its futex wait)
 * while the main thread takes the count to zero and straight up again, so
 * that every waiter can only see a non-zero count when it resumes: only the
 * generation can tell it that the count reached zero meanwhile. */

static void zero_then_up_while_parked(sqf_countdown *c, pthread_t *t, int n)
{
    park_threads(t, n);
    for (int i = 0; i < WRITERS; i++)
        payload[i] = 10 * (i + 1);
    CHECK_EQ(sqf_countdown_down_n(c, WRITERS), 0); /* to zero ... */
    CHECK_EQ(sqf_countdown_up(c, 1), 0);           /* ... and up before anyone runs */
    unpark_threads(n);
}

/* Reaching zero wakes all (round 0: WRITERS threads each write and count
 * down, the last one reaching zero); a zero immediately undone by an up
 * still releases the waits that had begun (round 1: the generation rule);
 * destroy sees the waiters; downs that do not reach zero wake nobody. */
static void test_wakes_and_generations(void)
{
    enum { N = 8 };
    sqf_countdown c = SQF_COUNTDOWN_INIT;
    struct waiter w[N];
    pthread_t t[N];
    for (int round = 0; round < 2; round++) {
        memset(payload, 0, sizeof payload);
        CHECK_EQ(sqf_countdown_up(&c, WRITERS), 0);
        for (int i = 0; i < N; i++) {
            w[i] = (struct waiter){&c, sqf_after(3 * SQF_SEC), -1, 0, 0};
            pthread_create(&t[i], NULL, wait_thread, &w[i]);
        }
        wait_until_sleeping(&c, N);
        CHECK_EQ(sqf_countdown_destroy(&c), EBUSY);
        uint32_t high = high_of(&c);
        long expect = 0;
        if (round == 0) {
            struct writer wr[WRITERS];
            pthread_t wt[WRITERS];
            for (int i = 0; i < WRITERS; i++) {
                wr[i] = (struct writer){&c, i, i + 1};
                expect += i + 1;
                pthread_create(&wt[i], NULL, write_then_down, &wr[i]);
            }
            for (int i = 0; i < WRITERS; i++)
                pthread_join(wt[i], NULL);
        } else {
            /* A down that does not reach zero changes nothing sleepers see. */
            CHECK_EQ(sqf_countdown_up(&c, 1), 0);
            CHECK_EQ(sqf_countdown_down(&c), 0);
            CHECK_EQ(high_of(&c), high);
            CHECK_EQ(sqf_countdown_destroy(&c), EBUSY);
            for (int i = 0; i < WRITERS; i++)
                expect += 10 * (i + 1);
            zero_then_up_while_parked(&c, t, N);
        }
        for (int i = 0; i < N; i++) {
            pthread_join(t[i], NULL);
            CHECK_EQ(w[i].result, 0);
            CHECK(w[i].returned < w[i].deadline); /* woken, not timed out */
            CHECK_EQ(w[i].payload_seen, expect);  /* down is a release */
        }
        CHECK_EQ(sqf_countdown_destroy(&c), 0);
        CHECK_EQ(high_of(&c) >> 2, (high >> 2) + 1); /* one generation per zero */
        CHECK_EQ(high_of(&c) & HI_WAITERS, 0);
        CHECK_EQ(value_of(&c), round == 0 ? 0 : 1);
    }
    /* After that up, a new wait waits for the next zero. */
    CHECK_EQ(sqf_countdown_timedwait(&c, sqf_after(10 * SQF_MS)), ETIMEDOUT);
    CHECK_EQ(sqf_countdown_down(&c), 0);
    CHECK_EQ(sqf_countdown_wait(&c), 0);
    CHECK_EQ(sqf_countdown_destroy(&c), 0);
}

/* A woken waiter may free the countdown at once, while the down that woke
 * it may still be inside its call (ASan reports a down that touches the
 * countdown after counting down).  One round with the waiter asleep, the
 * rest racing. */
struct freer {
    sqf_countdown *c;
    sqf_word sleeping;
    int result;
};

static void *wait_and_free(void *arg)
{
    struct freer *f = arg;
    at_store(&f->sleeping, 1, SC);
    f->result = sqf_countdown_wait(f->c);
    CHECK_EQ(sqf_countdown_destroy(f->c), 0);
    free(f->c);
    return NULL;
}

static void test_free_after_wake(void)
{
    for (int i = 0; i < 200; i++) {
        struct freer f = {malloc(sizeof(sqf_countdown)), 0, -1};
        CHECK_EQ(sqf_countdown_init(f.c, 1, SQF_PRIVATE), 0);
        pthread_t t;
        pthread_create(&t, NULL, wait_and_free, &f);
        if (i == 0) {
            wait_until_sleeping(f.c, 1);
        } else {
            while (!at_load(&f.sleeping, SC))
                sched_yield();
        }
        CHECK_EQ(sqf_countdown_down(f.c), 0);
        pthread_join(t, NULL);
        CHECK_EQ(f.result, 0);
    }
}

int main(void)
{
    watchdog(60);
    park_init();
    test_bad_input();
    test_basic();
    test_wakes_and_generations();
    test_free_after_wake();
    return check_done();
}
