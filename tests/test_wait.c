/* test_wait.c: the wait seam (src/wait.h) keeps futex semantics on every
 * backend: value check, time-outs, exact wake counts, requeue. */
#include <limits.h>

#include "check.h"
#include "wait.h"

static sqf_word a, b;
static sqf_word returned;

static void *sleeper(void *arg)
{
    (void)arg;
    int r;
    do {
        r = sqf_wait(&a, 0, SQF_FOREVER, false);
    } while (r != SQF_WAIT_WOKEN);
    at_add(&returned, 1, SC);
    return NULL;
}

/* Wake threads on w until `total` have been woken, or give up after 10 s. */
static int wake_until(sqf_word *w, int total)
{
    int woken = 0;
    sqf_deadline stop = sqf_after(10 * SQF_SEC);
    while (woken < total && sqf_now() < stop) {
        woken += sqf_wake(w, total - woken, false);
        if (woken < total) usleep(1000);
    }
    return woken;
}

/* sqf_wait_any: sleep on a and b; report which woke it. */
static sqf_word any_result = 0xffff;

static void *any_sleeper(void *arg)
{
    (void)arg;
    struct sqf_wait_word w[2] = {{&a, 0, false}, {&b, 0, false}};
    int r;
    do {
        r = sqf_wait_any(w, 2, sqf_after(10 * SQF_SEC));
    } while (r == -EINTR);
    at_store(&any_result, (uint32_t)r, SC);
    return NULL;
}

static void test_wait_any(void)
{
    at_store(&a, 0, SC);
    at_store(&b, 0, SC);
    struct sqf_wait_word w[2] = {{&a, 0, false}, {&b, 1, false}};
    CHECK_EQ(sqf_wait_any(w, 2, SQF_FOREVER), -EAGAIN); /* b is not 1 */
    w[1].expected = 0;
    CHECK_EQ(sqf_wait_any(w, 2, sqf_now() - 1), -ETIMEDOUT);
    CHECK_EQ(sqf_wait_any(w, 2, sqf_after(10 * SQF_MS)), -ETIMEDOUT);
    CHECK_EQ(sqf_wait_any(w, 0, SQF_FOREVER), -EINVAL);
    CHECK_EQ(sqf_wait_any(w, SQF_WAIT_MAX_WORDS + 1, SQF_FOREVER), -EINVAL);

    /* Woken through the second word: index 1, and it has left the first
     * word's queue too, so one wake-up is consumed, not two. */
    for (int which = 0; which < 2; which++) {
        pthread_t t;
        at_store(&any_result, 0xffff, SC);
        pthread_create(&t, NULL, any_sleeper, NULL);
        usleep(100 * 1000);
        sqf_word *first = which ? &b : &a, *second = which ? &a : &b;
        CHECK_EQ(wake_until(first, 1), 1);
        pthread_join(t, NULL);
        CHECK_EQ(at_load(&any_result, SC), which);
        CHECK_EQ(sqf_wake(second, INT_MAX, false), 0);
    }
}

int main(void)
{
    watchdog(60);

    /* The value check: a mismatch returns at once without sleeping. */
    at_store(&a, 7, SC);
    CHECK_EQ(sqf_wait(&a, 6, SQF_FOREVER, false), EAGAIN);
    at_store(&a, 0, SC);

    /* Deadlines: past returns at once; future ones are honoured. */
    CHECK_EQ(sqf_wait(&a, 0, sqf_now() - 1, false), ETIMEDOUT);
    CHECK_EQ(sqf_wait(&a, 0, -5, false), ETIMEDOUT);
    sqf_deadline t0 = sqf_now();
    CHECK_EQ(sqf_wait(&a, 0, t0 + 20 * SQF_MS, false), ETIMEDOUT);
    CHECK(sqf_now() - t0 >= 20 * SQF_MS);

    /* Nobody sleeps: wake and requeue report 0. */
    CHECK_EQ(sqf_wake(&a, 1, false), 0);
    CHECK_EQ(sqf_requeue(&a, 0, 1, &b, INT_MAX, false), 0);
    CHECK_EQ(sqf_requeue(&a, 1, 1, &b, INT_MAX, false), -EAGAIN);

    /* Exact wake counts: 4 sleepers, wake 1 then the rest. */
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, sleeper, NULL);
    usleep(100 * 1000);
    int first = wake_until(&a, 1);
    CHECK_EQ(first, 1);
    int rest = wake_until(&a, 3);
    CHECK_EQ(rest, 3);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(at_load(&returned, SC), 4);

    /* Requeue: wake one, move the others onto b, where a wake finds them. */
    at_store(&returned, 0, SC);
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, sleeper, NULL);
    usleep(100 * 1000);
    int moved = 0;
    sqf_deadline stop = sqf_after(10 * SQF_SEC);
    while (moved < 4 && sqf_now() < stop) {
        int r = sqf_requeue(&a, 0, moved == 0 ? 1 : 0, &b, INT_MAX, false);
        CHECK(r >= 0);
        moved += r;
        if (moved < 4) usleep(1000);
    }
    CHECK_EQ(moved, 4);
    usleep(20 * 1000);
    CHECK_EQ(at_load(&returned, SC), 1);       /* only the one woken */
    CHECK_EQ(sqf_wake(&a, INT_MAX, false), 0); /* a is empty now */
    CHECK_EQ(wake_until(&b, 3), 3);            /* the moved ones sleep on b */
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(at_load(&returned, SC), 4);

    test_wait_any();
    CHECK_EQ(sqf_wait_shared_supported(), SQF_TEST_SHARED_EXPECTED);
    return check_done();
}
