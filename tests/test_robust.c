/* test_robust.c: sqf_robust_mutex within one process: every errno, mutual
 * exclusion under contention (threads sleep on it), a thread that exits
 * holding it (the kernel's robust list releases it: EOWNERDEAD, consistent,
 * or ENOTRECOVERABLE and every sleeper told so), and sharing the thread's
 * robust list with glibc's robust pthread mutexes in any order.  With the
 * portable wait backend init must return ENOTSUP. */
#include <errno.h>
#include <pthread.h>

#include <squarefree.h>

#include "check.h"

static sqf_robust_mutex m;

static void test_bad_input(void)
{
    CHECK_EQ(sqf_robust_mutex_init(NULL, 0), EINVAL);
    CHECK_EQ(sqf_robust_mutex_init(&m, 8u), EINVAL);
    CHECK_EQ(sqf_robust_mutex_lock(NULL), EINVAL);
    CHECK_EQ(sqf_robust_mutex_trylock(NULL), EINVAL);
    CHECK_EQ(sqf_robust_mutex_timedlock(NULL, SQF_FOREVER), EINVAL);
    CHECK_EQ(sqf_robust_mutex_unlock(NULL), EINVAL);
    CHECK_EQ(sqf_robust_mutex_consistent(NULL), EINVAL);
    CHECK_EQ(sqf_robust_mutex_destroy(NULL), EINVAL);
}

static void test_basic(void)
{
    CHECK_EQ(sqf_robust_mutex_init(&m, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_robust_mutex_unlock(&m), EPERM); /* not held */
    CHECK_EQ(sqf_robust_mutex_consistent(&m), EPERM);
    CHECK_EQ(sqf_robust_mutex_lock(&m), 0);
    CHECK_EQ(sqf_robust_mutex_lock(&m), EDEADLK);
    CHECK_EQ(sqf_robust_mutex_trylock(&m), EDEADLK);
    CHECK_EQ(sqf_robust_mutex_consistent(&m), EINVAL); /* nothing to repair */
    CHECK_EQ(sqf_robust_mutex_destroy(&m), EBUSY);
    CHECK_EQ(sqf_robust_mutex_unlock(&m), 0);
    CHECK_EQ(sqf_robust_mutex_unlock(&m), EPERM);
    CHECK_EQ(sqf_robust_mutex_trylock(&m), 0);
    CHECK_EQ(sqf_robust_mutex_unlock(&m), 0);
    CHECK_EQ(sqf_robust_mutex_timedlock(&m, 0), 0); /* free: past deadline still takes it */
    CHECK_EQ(sqf_robust_mutex_unlock(&m), 0);
    CHECK_EQ(sqf_robust_mutex_destroy(&m), 0);
    sqf_robust_mutex z = SQF_ROBUST_MUTEX_INIT; /* zeroed memory is a mutex */
    CHECK_EQ(sqf_robust_mutex_lock(&z), 0);
    CHECK_EQ(sqf_robust_mutex_unlock(&z), 0);
}

/* Another thread holds it: trylock EBUSY, timedlock ETIMEDOUT, unlock EPERM. */
static sqf_latch held, release_it;
static void *hold(void *arg)
{
    (void)arg;
    CHECK_EQ(sqf_robust_mutex_lock(&m), 0);
    sqf_latch_count_down(&held, 1);
    sqf_latch_wait(&release_it);
    CHECK_EQ(sqf_robust_mutex_unlock(&m), 0);
    return NULL;
}

static void test_held_elsewhere(void)
{
    CHECK_EQ(sqf_robust_mutex_init(&m, SQF_PRIVATE), 0);
    sqf_latch_init(&held, 1, SQF_PRIVATE);
    sqf_latch_init(&release_it, 1, SQF_PRIVATE);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, hold, NULL), 0);
    sqf_latch_wait(&held);
    CHECK_EQ(sqf_robust_mutex_trylock(&m), EBUSY);
    CHECK_EQ(sqf_robust_mutex_timedlock(&m, 0), ETIMEDOUT);
    sqf_deadline begin = sqf_now();
    CHECK_EQ(sqf_robust_mutex_timedlock(&m, sqf_after(20 * SQF_MS)), ETIMEDOUT);
    CHECK(sqf_now() - begin >= 19 * SQF_MS);
    sqf_cancel tok;
    sqf_cancel_init(&tok, NULL, SQF_FOREVER);
    sqf_cancel_cancel(&tok);
    CHECK_EQ(sqf_robust_mutex_lock_until(&m, SQF_FOREVER, &tok), ECANCELED);
    CHECK_EQ(sqf_robust_mutex_unlock(&m), EPERM);
    CHECK_EQ(sqf_robust_mutex_consistent(&m), EPERM);
    sqf_latch_count_down(&release_it, 1);
    CHECK_EQ(sqf_robust_mutex_lock(&m), 0); /* sleeps until the holder lets go */
    CHECK_EQ(sqf_robust_mutex_unlock(&m), 0);
    pthread_join(t, NULL);
}

/* Mutual exclusion: threads add to a plain counter under it. */
#define THREADS 8
#define ADDS    20000
static long counter;
static void *adder(void *arg)
{
    (void)arg;
    for (int i = 0; i < ADDS; i++) {
        CHECK_EQ(sqf_robust_mutex_lock(&m), 0);
        long c = counter;
        if (i % 512 == 0) sched_yield();
        counter = c + 1;
        CHECK_EQ(sqf_robust_mutex_unlock(&m), 0);
    }
    return NULL;
}

static void test_exclusion(void)
{
    CHECK_EQ(sqf_robust_mutex_init(&m, SQF_PRIVATE), 0);
    counter = 0;
    run_threads(THREADS, adder, NULL, 0);
    CHECK_EQ(counter, (long)THREADS * ADDS);
    CHECK_EQ(sqf_robust_mutex_destroy(&m), 0);
}

/* A thread that exits holding the lock (and a glibc robust mutex, locked
 * before and after it, so the list mixes both kinds). */
static pthread_mutex_t pm;
static void *exit_holding(void *arg)
{
    int order = *(int *)arg;
    if (order == 0) {
        CHECK_EQ(pthread_mutex_lock(&pm), 0);
        CHECK_EQ(sqf_robust_mutex_lock(&m), 0);
    } else {
        CHECK_EQ(sqf_robust_mutex_lock(&m), 0);
        CHECK_EQ(pthread_mutex_lock(&pm), 0);
    }
    return NULL; /* exits holding both */
}

static void *hold_then_exit(void *arg)
{
    (void)arg;
    CHECK_EQ(sqf_robust_mutex_lock(&m), 0);
    sqf_latch_count_down(&held, 1);
    sqf_latch_wait(&release_it);
    return NULL; /* exits holding m */
}

static void *sleeper(void *arg)
{
    int *result = arg;
    *result = sqf_robust_mutex_lock(&m);
    if (*result == EOWNERDEAD || *result == 0) {
        if (*result == EOWNERDEAD) sqf_robust_mutex_consistent(&m);
        sqf_robust_mutex_unlock(&m);
    }
    return NULL;
}

static void test_owner_exits(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    for (int order = 0; order < 2; order++) {
        CHECK_EQ(sqf_robust_mutex_init(&m, SQF_PRIVATE), 0);
        CHECK_EQ(pthread_mutex_init(&pm, &a), 0);
        pthread_t t;
        CHECK_EQ(pthread_create(&t, NULL, exit_holding, &order), 0);
        pthread_join(t, NULL);
        /* Both released by the kernel, each telling its next locker. */
        CHECK_EQ(pthread_mutex_lock(&pm), EOWNERDEAD);
        CHECK_EQ(pthread_mutex_consistent(&pm), 0);
        CHECK_EQ(sqf_robust_mutex_lock(&m), EOWNERDEAD);
        CHECK_EQ(sqf_robust_mutex_consistent(&m), 0);
        CHECK_EQ(sqf_robust_mutex_consistent(&m), EINVAL); /* once is enough */
        /* Unlock in the order that leaves glibc's entry between ours and the head. */
        CHECK_EQ(sqf_robust_mutex_unlock(&m), 0);
        CHECK_EQ(pthread_mutex_unlock(&pm), 0);
        CHECK_EQ(sqf_robust_mutex_lock(&m), 0); /* repaired: plain 0 now */
        CHECK_EQ(sqf_robust_mutex_unlock(&m), 0);
        CHECK_EQ(pthread_mutex_destroy(&pm), 0);
    }

    /* A sleeper is woken by the death and gets EOWNERDEAD. */
    CHECK_EQ(sqf_robust_mutex_init(&m, SQF_PRIVATE), 0);
    sqf_latch_init(&held, 1, SQF_PRIVATE);
    sqf_latch_init(&release_it, 1, SQF_PRIVATE);
    int result = -1;
    pthread_t h, s;
    CHECK_EQ(pthread_create(&h, NULL, hold_then_exit, NULL), 0);
    sqf_latch_wait(&held);
    CHECK_EQ(pthread_create(&s, NULL, sleeper, &result), 0);
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);              /* the sleeper sleeps */
    sqf_latch_count_down(&release_it, 1); /* the holder exits, holding m */
    pthread_join(h, NULL);
    pthread_join(s, NULL);
    CHECK_EQ(result, EOWNERDEAD);
    CHECK_EQ(sqf_robust_mutex_lock(&m), 0);
    CHECK_EQ(sqf_robust_mutex_unlock(&m), 0);
}

/* Unlocked without consistent: unrecoverable, every sleeper told, and
 * init repairs it. */
static void *lock_once(void *arg)
{
    int *result = arg;
    *result = sqf_robust_mutex_lock(&m);
    return NULL;
}

static void test_unrecoverable(void)
{
    CHECK_EQ(sqf_robust_mutex_init(&m, SQF_PRIVATE), 0);
    int order = 1;
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    CHECK_EQ(pthread_mutex_init(&pm, &a), 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, exit_holding, &order), 0);
    pthread_join(t, NULL);
    CHECK_EQ(pthread_mutex_lock(&pm), EOWNERDEAD); /* (the exited thread held it too) */
    CHECK_EQ(pthread_mutex_consistent(&pm), 0);
    CHECK_EQ(pthread_mutex_unlock(&pm), 0);
    CHECK_EQ(sqf_robust_mutex_lock(&m), EOWNERDEAD);
    int results[4];
    pthread_t s[4];
    for (int i = 0; i < 4; i++)
        CHECK_EQ(pthread_create(&s[i], NULL, lock_once, &results[i]), 0);
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);                  /* they sleep */
    CHECK_EQ(sqf_robust_mutex_unlock(&m), 0); /* not repaired */
    for (int i = 0; i < 4; i++) {
        pthread_join(s[i], NULL);
        CHECK_EQ(results[i], ENOTRECOVERABLE);
    }
    CHECK_EQ(sqf_robust_mutex_lock(&m), ENOTRECOVERABLE);
    CHECK_EQ(sqf_robust_mutex_trylock(&m), ENOTRECOVERABLE);
    CHECK_EQ(sqf_robust_mutex_init(&m, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_robust_mutex_lock(&m), 0);
    CHECK_EQ(sqf_robust_mutex_unlock(&m), 0);
    CHECK_EQ(pthread_mutex_destroy(&pm), 0);
}

int main(void)
{
    watchdog(60);
    test_bad_input();
    if (!SQF_TEST_ROBUST_EXPECTED) { /* no robust list: the portable backend, qemu-user */
        CHECK_EQ(sqf_robust_mutex_init(&m, SQF_PRIVATE), ENOTSUP);
        CHECK_EQ(sqf_robust_mutex_lock(&m), ENOTSUP);
        return check_done();
    }
    test_basic();
    test_held_elsewhere();
    test_exclusion();
    test_owner_exits();
    test_unrecoverable();
    return check_done();
}
