/* stress_event.c: no waiter is ever stranded.
 * 1. Rounds of 1,000 threads waiting on a one-shot event each round: one set
 *    must release all of them (a stranded waiter hangs the round; the
 *    watchdog reports it), and each must see the data published before set.
 * 2. Set/clear storms on one reusable event while waiters loop on it with
 *    untimed and short timed waits: every waiter finishes its waits. */
#include <squarefree/event.h>

#include "atomic.h"
#include "check.h"

enum { WAITERS = 1000, ROUNDS = 5 };

static sqf_event go[ROUNDS];
static sqf_event all_in[ROUNDS];
static long published[ROUNDS];
static sqf_word arrived[ROUNDS];

static void *round_waiter(void *arg)
{
    (void)arg;
    for (int r = 0; r < ROUNDS; r++) {
        CHECK_EQ(sqf_event_wait(&go[r]), 0);
        CHECK_EQ(published[r], r + 1);
        if (at_add(&arrived[r], 1, AR) + 1 == WAITERS) CHECK_EQ(sqf_event_set(&all_in[r]), 0);
    }
    return NULL;
}

static void thousand_waiters(void)
{
    pthread_t *t = calloc(WAITERS, sizeof *t);
    int started = 0;
    for (; started < WAITERS; started++)
        if (start_small_thread(&t[started], round_waiter, NULL) != 0) break;
    CHECK_EQ(started, WAITERS);
    for (int r = 0; r < ROUNDS; r++) {
        published[r] = r + 1;
        CHECK_EQ(sqf_event_set(&go[r]), 0);
        if (started == WAITERS) CHECK_EQ(sqf_event_wait(&all_in[r]), 0);
    }
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    free(t);
    for (int r = 0; r < ROUNDS; r++)
        CHECK_EQ(at_load(&arrived[r], SC), started);
}

static sqf_event storm = SQF_EVENT_INIT;
static sqf_word storm_over;
static long waits_per_thread;

static void *storm_waiter(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    for (long i = 0; i < waits_per_thread; i++) {
        seed = seed * 1103515245u + 12345u;
        int e;
        if (seed & 0x10000)
            e = sqf_event_wait(&storm);
        else
            e = sqf_event_timedwait(&storm, sqf_after((seed >> 20) % 20 * SQF_US));
        CHECK(e == 0 || e == ETIMEDOUT);
    }
    return NULL;
}

static void *stormer(void *arg)
{
    (void)arg;
    unsigned seed = 99;
    while (!at_load(&storm_over, ACQ)) {
        sqf_event_set(&storm);
        seed = seed * 1103515245u + 12345u;
        if (seed & 0x30000) sched_yield();
        sqf_event_clear(&storm);
    }
    return NULL;
}

static void set_clear_storm(void)
{
    enum { N = 16 };
    waits_per_thread = soak(2000);
    pthread_t w[N], s;
    pthread_create(&s, NULL, stormer, NULL);
    for (int i = 0; i < N; i++)
        pthread_create(&w[i], NULL, storm_waiter, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < N; i++)
        pthread_join(w[i], NULL);
    at_store(&storm_over, 1, REL);
    pthread_join(s, NULL);
    CHECK_EQ(sqf_event_destroy(&storm), 0);
}

int main(void)
{
    watchdog(120);
    thousand_waiters();
    set_clear_storm();
    return check_done();
}
