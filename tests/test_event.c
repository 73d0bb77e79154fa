/* test_event.c: sqf_event's contract: errors, set/clear, time-outs, the
 * generation rule (a wait that began before a set returns even if a clear
 * follows at once), destroy with waiters. */
#include <squarefree/event.h>

#include <semaphore.h>

#include "atomic.h"
#include "check.h"
#include "park.h"

static uint32_t word_of(sqf_event *e)
{
    return at_load((sqf_word *)&e->word, SC);
}

static void test_bad_input(void)
{
    sqf_event e = SQF_EVENT_INIT;
    CHECK_EQ(sqf_event_init(NULL, 0), EINVAL);
    CHECK_EQ(sqf_event_init(&e, 2), EINVAL);
    CHECK_EQ(sqf_event_destroy(NULL), EINVAL);
    CHECK_EQ(sqf_event_set(NULL), EINVAL);
    CHECK_EQ(sqf_event_clear(NULL), EINVAL);
    CHECK_EQ(sqf_event_wait(NULL), EINVAL);
    CHECK_EQ(sqf_event_timedwait(NULL, SQF_FOREVER), EINVAL);
    CHECK_EQ(sqf_event_is_set(NULL), 0);
    CHECK_EQ(word_of(&e), 0);
    if (SQF_TEST_SHARED_EXPECTED) {
        CHECK_EQ(sqf_event_init(&e, SQF_SHARED), 0);
        CHECK_EQ(word_of(&e), 4);
    } else {
        CHECK_EQ(sqf_event_init(&e, SQF_SHARED), ENOTSUP);
    }
}

static void test_basic(void)
{
    sqf_event e = SQF_EVENT_INIT;
    CHECK_EQ(sqf_event_is_set(&e), 0);
    CHECK_EQ(sqf_event_timedwait(&e, sqf_now() - 1), ETIMEDOUT);
    sqf_deadline t0 = sqf_now();
    CHECK_EQ(sqf_event_timedwait(&e, t0 + 30 * SQF_MS), ETIMEDOUT);
    CHECK(sqf_now() - t0 >= 30 * SQF_MS);
    CHECK_EQ(sqf_event_clear(&e), 0); /* clearing an unset event: nothing */
    CHECK_EQ(sqf_event_is_set(&e), 0);
    CHECK_EQ(sqf_event_set(&e), 0);
    uint32_t after_set = word_of(&e);
    CHECK_EQ(sqf_event_set(&e), 0); /* setting a set event: nothing */
    CHECK_EQ(word_of(&e), after_set);
    CHECK_EQ(sqf_event_is_set(&e), 1);
    CHECK_EQ(sqf_event_wait(&e), 0);
    CHECK_EQ(sqf_event_timedwait(&e, sqf_now() - 1), 0); /* set: a past deadline still passes */
    CHECK_EQ(sqf_event_clear(&e), 0);
    CHECK_EQ(sqf_event_is_set(&e), 0);
    CHECK_EQ(sqf_event_timedwait(&e, sqf_now() - 1), ETIMEDOUT);
    CHECK_EQ(sqf_event_destroy(&e), 0);
}

struct waiter {
    sqf_event *e;
    sqf_deadline deadline;
    int result;
    int payload_seen;
    sqf_deadline returned;
};
static int payload;

static void *wait_thread(void *arg)
{
    struct waiter *w = arg;
    w->result = sqf_event_timedwait(w->e, w->deadline);
    w->returned = sqf_now();
    w->payload_seen = payload;
    return NULL;
}

static void wait_until_sleeping(sqf_event *e, uint32_t n)
{
    WAIT_ASLEEP(at_load((sqf_word *)&e->waiters, SC) >= n && (word_of(e) & 2));
}

/* Parking: a signal handler that holds a waiter still (out of its futex
 * wait) while the main thread sets and clears, so that every waiter can
 * only see the cleared event when it resumes: only the generation count can
 * tell it that a set happened. */

static void set_while_parked(sqf_event *e, pthread_t *t, int n)
{
    park_threads(t, n);
    CHECK_EQ(sqf_event_set(e), 0);
    CHECK_EQ(sqf_event_clear(e), 0);
    unpark_threads(n);
}

/* Set wakes all; a set immediately undone by clear still releases the
 * waits that had begun (the generation rule); destroy sees the waiters. */
static void test_wakes_and_generations(void)
{
    enum { N = 8 };
    sqf_event e = SQF_EVENT_INIT;
    struct waiter w[N];
    pthread_t t[N];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++) {
            w[i] = (struct waiter){&e, sqf_after(3 * SQF_SEC), -1, 0, 0};
            pthread_create(&t[i], NULL, wait_thread, &w[i]);
        }
        wait_until_sleeping(&e, N);
        CHECK_EQ(sqf_event_destroy(&e), EBUSY);
        payload = round + 1;
        if (round == 0)
            CHECK_EQ(sqf_event_set(&e), 0);
        else
            set_while_parked(&e, t, N); /* set, then clear before anyone runs */
        for (int i = 0; i < N; i++) {
            pthread_join(t[i], NULL);
            CHECK_EQ(w[i].result, 0);
            CHECK(w[i].returned < w[i].deadline);   /* woken, not timed out */
            CHECK_EQ(w[i].payload_seen, round + 1); /* set is a release */
        }
        CHECK_EQ(sqf_event_destroy(&e), 0);
        sqf_event_clear(&e);
    }
    /* After the clear, a new wait waits for the next set. */
    CHECK_EQ(sqf_event_timedwait(&e, sqf_after(10 * SQF_MS)), ETIMEDOUT);
}

int main(void)
{
    watchdog(60);
    park_init();
    test_bad_input();
    test_basic();
    test_wakes_and_generations();
    return check_done();
}
