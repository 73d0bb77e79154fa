/* test_cond.c: sqf_cond's contract: errors, time-outs, signal, broadcast. */
#include <squarefree/cond.h>

#include <sys/mman.h>

#include "atomic.h"
#include "check.h"
#include "mutex_word.h"
#include "park.h"

static sqf_mutex mu = SQF_MUTEX_INIT;
static sqf_cond cv = SQF_COND_INIT;
static int tokens;        /* guarded by mu */
static sqf_word consumed; /* threads that took a token */
static sqf_word sleeping; /* threads inside wait */

static void test_bad_input(void)
{
    sqf_mutex m = SQF_MUTEX_INIT;
    sqf_cond c = SQF_COND_INIT;
    CHECK_EQ(sqf_cond_init(NULL, 0), EINVAL);
    CHECK_EQ(sqf_cond_init(&c, 4), EINVAL);
    CHECK_EQ(sqf_cond_destroy(NULL), EINVAL);
    CHECK_EQ(sqf_cond_wait(NULL, &m), EINVAL);
    CHECK_EQ(sqf_cond_wait(&c, NULL), EINVAL);
    CHECK_EQ(sqf_cond_timedwait(NULL, &m, SQF_FOREVER), EINVAL);
    CHECK_EQ(sqf_cond_signal(NULL), EINVAL);
    CHECK_EQ(sqf_cond_broadcast(NULL), EINVAL);

    /* Waiting with a mutex not held: EPERM, no waiter counted, no sleep. */
    CHECK_EQ(sqf_cond_wait(&c, &m), EPERM);
    CHECK_EQ(sqf_cond_timedwait(&c, &m, sqf_after(SQF_SEC)), EPERM);
    CHECK_EQ(at_load((sqf_word *)&c.waiters, SC), 0);
    CHECK_EQ(at_load(mu_word(&m), SC), 0);

    if (SQF_TEST_SHARED_EXPECTED) {
        /* A shared condition variable with a private mutex is refused. */
        sqf_cond sc;
        CHECK_EQ(sqf_cond_init(&sc, SQF_SHARED), 0);
        CHECK_EQ(sqf_mutex_lock(&m), 0);
        CHECK_EQ(sqf_cond_timedwait(&sc, &m, sqf_after(SQF_SEC)), EINVAL);
        CHECK(at_load(mu_word(&m), SC) & MU_LOCKED); /* still held */
        CHECK_EQ(sqf_mutex_unlock(&m), 0);
    } else {
        CHECK_EQ(sqf_cond_init(&c, SQF_SHARED), ENOTSUP);
    }
}

static void test_timeouts(void)
{
    sqf_mutex m = SQF_MUTEX_INIT;
    sqf_cond c = SQF_COND_INIT;
    CHECK_EQ(sqf_mutex_lock(&m), 0);
    CHECK_EQ(sqf_cond_timedwait(&c, &m, sqf_now() - 1), ETIMEDOUT);
    CHECK_EQ(sqf_mutex_trylock(&m), EBUSY); /* held again on return */
    sqf_deadline t0 = sqf_now();
    CHECK_EQ(sqf_cond_timedwait(&c, &m, t0 + 30 * SQF_MS), ETIMEDOUT);
    CHECK(sqf_now() - t0 >= 30 * SQF_MS);
    CHECK_EQ(sqf_mutex_trylock(&m), EBUSY);
    CHECK_EQ(at_load((sqf_word *)&c.waiters, SC), 0);
    CHECK_EQ(sqf_mutex_unlock(&m), 0);
    CHECK_EQ(sqf_cond_signal(&c), 0); /* nobody waits: nothing happens */
    CHECK_EQ(sqf_cond_broadcast(&c), 0);
    CHECK_EQ(at_load((sqf_word *)&c.seq, SC), 0);
    CHECK_EQ(sqf_cond_destroy(&c), 0);
}

static void *consumer(void *arg)
{
    (void)arg;
    CHECK_EQ(sqf_mutex_lock(&mu), 0);
    at_add(&sleeping, 1, SC);
    while (tokens == 0)
        CHECK_EQ(sqf_cond_wait(&cv, &mu), 0);
    at_sub(&sleeping, 1, SC);
    tokens--;
    at_add(&consumed, 1, SC);
    CHECK_EQ(sqf_mutex_unlock(&mu), 0);
    return NULL;
}

static void wait_consumed(uint32_t n)
{
    sqf_deadline stop = sqf_after(10 * SQF_SEC);
    while (at_load(&consumed, SC) < n && sqf_now() < stop)
        usleep(500);
}

/* One token and one signal per consumer: each signal must release one. */
static void test_signal_and_destroy(void)
{
    enum { N = 5 };
    pthread_t t[N];
    for (int i = 0; i < N; i++)
        pthread_create(&t[i], NULL, consumer, NULL);
    while (at_load(&sleeping, SC) < N)
        usleep(500);
    usleep(20 * 1000);
    CHECK_EQ(sqf_cond_destroy(&cv), EBUSY);
    for (int i = 0; i < N; i++) {
        CHECK_EQ(sqf_mutex_lock(&mu), 0);
        tokens++;
        CHECK_EQ(sqf_mutex_unlock(&mu), 0);
        CHECK_EQ(sqf_cond_signal(&cv), 0);
        wait_consumed((uint32_t)i + 1);
        CHECK_EQ(at_load(&consumed, SC), i + 1);
    }
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(sqf_cond_destroy(&cv), 0);
}

/* Broadcast wakes all: they pass through the mutex one by one. */
static void test_broadcast(void)
{
    enum { N = 50 };
    at_store(&consumed, 0, SC);
    pthread_t t[N];
    for (int i = 0; i < N; i++)
        pthread_create(&t[i], NULL, consumer, NULL);
    while (at_load(&sleeping, SC) < N)
        usleep(500);
    usleep(20 * 1000);
    CHECK_EQ(sqf_mutex_lock(&mu), 0);
    tokens = N;
    CHECK_EQ(sqf_cond_broadcast(&cv), 0);
    CHECK_EQ(sqf_mutex_unlock(&mu), 0);
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(at_load(&consumed, SC), N);
    CHECK_EQ(tokens, 0);
    CHECK_EQ(at_load((sqf_word *)&cv.waiters, SC), 0);
}

/* A waiter that was signalled and now sleeps to retake the mutex has left
 * the cond: the signaller may destroy the cond and free its memory before
 * the waiter runs again (here: unmap it, so that a late access faults).
 * Regression: the relock step once re-read the cond's flags. */
static sqf_mutex free_m;
static sqf_cond *free_c;
static sqf_word free_flag, free_entered;

static void *free_waiter(void *arg)
{
    (void)arg;
    CHECK_EQ(sqf_mutex_lock(&free_m), 0);
    at_store(&free_entered, 1, REL);
    while (!at_load(&free_flag, ACQ))
        CHECK_EQ(sqf_cond_wait(free_c, &free_m), 0);
    CHECK_EQ(sqf_mutex_unlock(&free_m), 0);
    return NULL;
}

static void test_destroy_while_relocking(void)
{
    for (int round = 0; round < 5; round++) {
        free_c = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(free_c != MAP_FAILED);
        CHECK_EQ(sqf_cond_init(free_c, SQF_PRIVATE), 0);
        CHECK_EQ(sqf_mutex_init(&free_m, SQF_PRIVATE), 0);
        at_store(&free_flag, 0, RLX);
        at_store(&free_entered, 0, RLX);
        pthread_t t;
        CHECK_EQ(pthread_create(&t, NULL, free_waiter, NULL), 0);
        while (!at_load(&free_entered, ACQ))
            usleep(100);
        usleep(20000); /* asleep on the cond */
        CHECK_EQ(sqf_mutex_lock(&free_m), 0);
        at_store(&free_flag, 1, REL);
        CHECK_EQ(sqf_cond_signal(free_c), 0);
        /* Until the waiter has left the cond and sleeps on the mutex. */
        for (int i = 0; i < 2000; i++) {
            if ((at_load((sqf_word *)&free_c->waiters, ACQ) & 0x7fffffffu) == 0 &&
                (at_load(mu_word(&free_m), RLX) & MU_PARKED))
                break;
            usleep(1000);
        }
        usleep(5000);
        CHECK_EQ(sqf_cond_destroy(free_c), 0);
        CHECK_EQ(munmap(free_c, 4096), 0);
        CHECK_EQ(sqf_mutex_unlock(&free_m), 0);
        pthread_join(t, NULL);
    }
}

/* A wait with a mutex not held fails with EPERM and changes nothing, also
 * while a broadcast's waiters are still to be moved onto the mutex (its
 * one waiter parked out of its sleep, so that nobody has moved them): the
 * move would leave them asleep on a mutex that nobody will unlock. */
static sqf_mutex pm = SQF_MUTEX_INIT;
static sqf_cond pc = SQF_COND_INIT;
static sqf_word p_asleep;
static void *parked_waiter(void *arg)
{
    (void)arg;
    CHECK_EQ(sqf_mutex_lock(&pm), 0);
    at_store(&p_asleep, 1, SC);
    CHECK_EQ(sqf_cond_wait(&pc, &pm), 0); /* returns after the broadcast */
    CHECK_EQ(sqf_mutex_unlock(&pm), 0);
    return NULL;
}

static void test_eperm_with_a_broadcast_pending(void)
{
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, parked_waiter, NULL), 0);
    WAIT_ASLEEP(at_load(&p_asleep, SC) && at_load((sqf_word *)&pc.waiters, SC) == 1 &&
                !(at_load(mu_word(&pm), SC) & MU_LOCKED));
    park_threads(&t, 1);
    CHECK_EQ(sqf_cond_broadcast(&pc), 0); /* its wake finds nobody asleep */
    uint32_t seq = at_load((sqf_word *)&pc.seq, SC);
    CHECK(seq & 1); /* REQUEUE: the move is still to be made */
    CHECK_EQ(sqf_cond_wait(&pc, &pm), EPERM);
    CHECK_EQ(at_load((sqf_word *)&pc.seq, SC), seq); /* nothing changed */
    CHECK_EQ(at_load(mu_word(&pm), SC), 0);
    CHECK_EQ(at_load((sqf_word *)&pc.waiters, SC), 1);
    unpark_threads(1);
    pthread_join(t, NULL);
    CHECK_EQ(sqf_cond_destroy(&pc), 0);
}

int main(void)
{
    watchdog(60);
    test_bad_input();
    test_timeouts();
    test_signal_and_destroy();
    test_broadcast();
    test_destroy_while_relocking();
    park_init();
    test_eperm_with_a_broadcast_pending();
    return check_done();
}
