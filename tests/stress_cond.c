/* stress_cond.c: no lost wake-ups in sqf_cond.
 *
 * 1. Broadcast rounds with 1,000 waiters: every waiter must see every round
 *    (a waiter left asleep after a broadcast hangs the round; the watchdog
 *    reports it).
 * 2. Producers and consumers on a bounded count with one signal per item,
 *    consumers using untimed and very short timed waits at random: every
 *    item is consumed exactly once and nobody stays asleep.
 * 3. No wake-up from nowhere: waiters with deadlines and tokens (some
 *    cancelled, some expiring) against a notifier that signals or
 *    broadcasts under the mutex and counts each under it.  A wait that
 *    returns 0 must find the count moved since it began: cond.h allows a
 *    return of 0 only after a signal or broadcast made since the wait
 *    began.  (A broadcast's requeue moves every sleeper it finds, also
 *    those that arrived after it; such a waiter must sleep again.) */
#include <squarefree/cancel.h>
#include <squarefree/cond.h>

#include "atomic.h"
#include "check.h"

enum { WAITERS = 1000, ROUNDS = 5 };

static sqf_mutex mu = SQF_MUTEX_INIT;
static sqf_cond cv = SQF_COND_INIT;
static sqf_cond done_cv = SQF_COND_INIT;
static long generation; /* guarded by mu */
static int arrived;     /* guarded by mu: waiters that saw this generation */

static void *round_waiter(void *arg)
{
    (void)arg;
    CHECK_EQ(sqf_mutex_lock(&mu), 0);
    for (long seen = 0; seen < ROUNDS;) {
        while (generation == seen)
            CHECK_EQ(sqf_cond_wait(&cv, &mu), 0);
        seen = generation;
        if (++arrived == WAITERS) CHECK_EQ(sqf_cond_signal(&done_cv), 0);
    }
    CHECK_EQ(sqf_mutex_unlock(&mu), 0);
    return NULL;
}

static void broadcast_rounds(void)
{
    generation = 0; /* called again per soak round: start each afresh */
    pthread_t *t = calloc(WAITERS, sizeof *t);
    int started = 0;
    for (; started < WAITERS; started++)
        if (start_small_thread(&t[started], round_waiter, NULL) != 0) break;
    CHECK_EQ(started, WAITERS);
    for (int r = 1; r <= ROUNDS && started == WAITERS; r++) {
        CHECK_EQ(sqf_mutex_lock(&mu), 0);
        arrived = 0;
        generation = r;
        CHECK_EQ(sqf_cond_broadcast(&cv), 0);
        while (arrived < WAITERS)
            CHECK_EQ(sqf_cond_wait(&done_cv, &mu), 0);
        CHECK_EQ(sqf_mutex_unlock(&mu), 0);
    }
    if (started < WAITERS) { /* release whoever started, so the join ends */
        sqf_mutex_lock(&mu);
        generation = ROUNDS;
        sqf_cond_broadcast(&cv);
        sqf_mutex_unlock(&mu);
    }
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    free(t);
}

enum { PRODUCERS = 4, CONSUMERS = 6 };
static long items;     /* guarded by mu: produced, not yet consumed */
static long remaining; /* guarded by mu: items still to be produced or consumed */
static long per_producer;
static sqf_word consumed_total, timed_out;

static void *producer(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    for (long i = 0; i < per_producer; i++) {
        CHECK_EQ(sqf_mutex_lock(&mu), 0);
        items++;
        bool inside = (seed = seed * 1103515245u + 12345u) & 0x10000;
        if (inside) CHECK_EQ(sqf_cond_signal(&cv), 0);
        CHECK_EQ(sqf_mutex_unlock(&mu), 0);
        if (!inside) CHECK_EQ(sqf_cond_signal(&cv), 0);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg * 7919u;
    CHECK_EQ(sqf_mutex_lock(&mu), 0);
    for (;;) {
        while (items == 0 && remaining > 0) {
            seed = seed * 1103515245u + 12345u;
            if (seed & 0x30000) {
                CHECK_EQ(sqf_cond_wait(&cv, &mu), 0);
            } else {
                int e = sqf_cond_timedwait(&cv, &mu, sqf_after((seed >> 20) % 50 * SQF_US));
                CHECK(e == 0 || e == ETIMEDOUT);
                if (e == ETIMEDOUT) at_add(&timed_out, 1, RLX);
            }
        }
        if (remaining == 0) break;
        items--;
        if (--remaining == 0) CHECK_EQ(sqf_cond_broadcast(&cv), 0); /* release the rest */
        at_add(&consumed_total, 1, RLX);
    }
    CHECK_EQ(sqf_mutex_unlock(&mu), 0);
    return NULL;
}

static void producers_consumers(void)
{
    per_producer = soak(50000);
    remaining = PRODUCERS * per_producer;
    pthread_t p[PRODUCERS], c[CONSUMERS];
    for (int i = 0; i < CONSUMERS; i++)
        pthread_create(&c[i], NULL, consumer, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < PRODUCERS; i++)
        pthread_create(&p[i], NULL, producer, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(p[i], NULL);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(c[i], NULL);
    CHECK_EQ(at_load(&consumed_total, SC), PRODUCERS * per_producer);
    CHECK_EQ(items, 0);
    CHECK_EQ(sqf_cond_destroy(&cv), 0);
    printf("timed waits that expired: %u\n", at_load(&timed_out, RLX));
}

enum { NOWHERE_WAITERS = 6 };
static long notes; /* guarded by mu: signals and broadcasts made */
static sqf_word nowhere_stop;
static sqf_word nowhere_zeros, nowhere_spurious, nowhere_stops;

static void *nowhere_waiter(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u;
    while (!at_load(&nowhere_stop, ACQ)) {
        seed = seed * 1103515245u + 12345u;
        unsigned r = seed >> 16;
        sqf_cancel tok;
        const sqf_cancel *t = NULL;
        sqf_deadline d = sqf_after((r & 1 ? r % 200 : 300) * SQF_US);
        if (r & 2) {
            sqf_cancel_init(&tok, NULL, r & 4 ? sqf_after(r % 150 * SQF_US) : SQF_FOREVER);
            t = &tok;
        }
        CHECK_EQ(sqf_mutex_lock(&mu), 0);
        long before = notes;
        if (t && (r & 8)) sqf_cancel_cancel(&tok); /* cancelled before it sleeps */
        int e = sqf_cond_wait_until(&cv, &mu, d, t);
        CHECK(e == 0 || e == ETIMEDOUT || (t && e == ECANCELED));
        if (e == 0) {
            at_add(&nowhere_zeros, 1, RLX);
            if (notes == before) at_add(&nowhere_spurious, 1, RLX);
        } else {
            at_add(&nowhere_stops, 1, RLX);
        }
        CHECK_EQ(sqf_mutex_unlock(&mu), 0);
    }
    return NULL;
}

static void no_wake_from_nowhere(void)
{
    at_store(&nowhere_stop, 0, RLX);
    pthread_t w[NOWHERE_WAITERS];
    for (int i = 0; i < NOWHERE_WAITERS; i++)
        pthread_create(&w[i], NULL, nowhere_waiter, (void *)(uintptr_t)(i + 1));
    unsigned seed = 99;
    sqf_deadline end = sqf_after(soak(2) * SQF_SEC);
    while (sqf_now() < end) {
        seed = seed * 1103515245u + 12345u;
        for (volatile unsigned spin = (seed >> 16) % 20000; spin > 0; spin--) {
        }
        CHECK_EQ(sqf_mutex_lock(&mu), 0);
        notes++;
        if ((seed >> 8) % 3 == 0)
            CHECK_EQ(sqf_cond_broadcast(&cv), 0);
        else
            CHECK_EQ(sqf_cond_signal(&cv), 0);
        CHECK_EQ(sqf_mutex_unlock(&mu), 0);
    }
    CHECK_EQ(sqf_mutex_lock(&mu), 0);
    notes++;
    at_store(&nowhere_stop, 1, REL);
    CHECK_EQ(sqf_cond_broadcast(&cv), 0);
    CHECK_EQ(sqf_mutex_unlock(&mu), 0);
    for (int i = 0; i < NOWHERE_WAITERS; i++)
        pthread_join(w[i], NULL);
    printf("waits that returned 0: %u (from nowhere: %u); stopped: %u\n",
           at_load(&nowhere_zeros, RLX), at_load(&nowhere_spurious, RLX),
           at_load(&nowhere_stops, RLX));
    CHECK_EQ(at_load(&nowhere_spurious, RLX), 0);
    CHECK(at_load(&nowhere_zeros, RLX) > 0 && at_load(&nowhere_stops, RLX) > 0);
    CHECK_EQ(sqf_cond_destroy(&cv), 0);
}

int main(void)
{
    watchdog(120);
    for (long i = 0, n = soak(1); i < n; i++)
        broadcast_rounds();
    producers_consumers();
    no_wake_from_nowhere();
    return check_done();
}
