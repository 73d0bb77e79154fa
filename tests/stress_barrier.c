/* stress_barrier.c: every phase releases all its parties, with exact
 * arrival indexes, and the completion runs exactly once per phase.
 * 1. 1,000 threads pass one barrier 10 times: each round the indexes are
 *    exactly {0..999}, every thread is released (a stranded one hangs the
 *    test; the watchdog reports it), none before all have arrived, and each
 *    sees what all the others wrote before arriving.
 * 2. A few threads pass many phases back to back with a completion that
 *    bumps a plain counter: after phase p every thread sees exactly p + 1,
 *    and the completion always finds all parties arrived and none gone.
 *    Untimed waits, far-deadline timed waits and waits with a completion
 *    are mixed in a third run (indexes checked, no completion count).
 *
 * Built with SQF_NO_INLINE, as the other stress tests (the barrier has no
 * inline paths; this keeps the builds alike). */
#define SQF_NO_INLINE
#include <squarefree/barrier.h>

#include "atomic.h"
#include "check.h"

enum { THREADS = 1000, ROUNDS = 10 };

static sqf_barrier big;
static sqf_word big_arrived[ROUNDS];
static sqf_word big_index[ROUNDS][THREADS];
static unsigned char wrote[ROUNDS][THREADS];

static void *big_party(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (int r = 0; r < ROUNDS; r++) {
        wrote[r][me] = 1;
        at_add(&big_arrived[r], 1, RLX);
        unsigned idx = THREADS;
        CHECK_EQ(sqf_barrier_wait(&big, &idx), 0);
        CHECK(idx < THREADS);
        if (idx < THREADS) at_add(&big_index[r][idx], 1, RLX);
        CHECK_EQ(at_load(&big_arrived[r], RLX), THREADS);
        if (me % 50 == 0) { /* a sample checks every arrival's write */
            int seen = 0;
            for (int i = 0; i < THREADS; i++)
                seen += wrote[r][i];
            CHECK_EQ(seen, THREADS);
        }
    }
    return NULL;
}

static void thousand_parties(void)
{
    CHECK_EQ(sqf_barrier_init(&big, THREADS, 0), 0);
    pthread_t *t = calloc(THREADS, sizeof *t);
    int started = 0;
    for (; started < THREADS; started++)
        if (start_small_thread(&t[started], big_party, (void *)(intptr_t)started) != 0) break;
    CHECK_EQ(started, THREADS);
    if (started < THREADS) sqf_barrier_abort(&big); /* let the others go (and fail) */
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    free(t);
    for (int r = 0; r < ROUNDS; r++) {
        int exact = 0;
        for (int i = 0; i < THREADS; i++)
            exact += at_load(&big_index[r][i], RLX) == 1;
        CHECK_EQ(exact, THREADS);
    }
    CHECK_EQ(sqf_barrier_destroy(&big), 0);
}

/* ---- many phases with a completion --------------------------------------- */

enum { PARTIES = 12 };

static sqf_barrier pb;
static long phases;
static long counter; /* plain: written only by the completion */
static sqf_word arrivals, departures;
static sqf_word *seen; /* [phases][PARTIES]: index counts */
static int mode;       /* 0: all wait_fn; 1: mixed */

static void bump(void *arg)
{
    (void)arg;
    long p = counter;
    /* All parties of phase p have arrived... */
    CHECK_EQ(at_load(&arrivals, RLX), (uint32_t)((p + 1) * PARTIES));
    /* ... and none of it leaves before we return (now and then take long
     * enough for a thread released too early to be seen leaving). */
    if (p % 8 == 0) usleep(p % 16 ? 50 : 500);
    CHECK_EQ(at_load(&departures, RLX), (uint32_t)(p * PARTIES));
    counter = p + 1;
}

/* For the mixed run, where the last arriver may run no completion. */
static void check_full(void *arg)
{
    (void)arg;
    uint32_t a = at_load(&arrivals, RLX);
    if (a % (8 * PARTIES) == 0) usleep(100);
    uint32_t d = at_load(&departures, RLX);
    CHECK_EQ(a % PARTIES, 0);
    CHECK_EQ(a, d + PARTIES);
}

static void *phase_party(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (long p = 0; p < phases; p++) {
        at_add(&arrivals, 1, RLX);
        unsigned idx = PARTIES;
        int e;
        int how = mode == 0 ? 0 : (int)((p + me) % 3);
        if (how == 0)
            e = sqf_barrier_wait_fn(&pb, mode == 0 ? bump : check_full, NULL, &idx);
        else if (how == 1)
            e = sqf_barrier_wait(&pb, &idx);
        else
            e = sqf_barrier_timedwait(&pb, sqf_after(60 * SQF_SEC), &idx);
        CHECK_EQ(e, 0);
        if (e) return NULL;
        if (mode == 0) CHECK_EQ(counter, p + 1);
        CHECK(idx < PARTIES);
        if (idx < PARTIES) at_add(&seen[p * PARTIES + idx], 1, RLX);
        at_add(&departures, 1, RLX);
    }
    return NULL;
}

static void many_phases(int m, long n)
{
    mode = m;
    phases = n;
    counter = 0;
    at_store(&arrivals, 0, RLX);
    at_store(&departures, 0, RLX);
    seen = calloc((size_t)(phases * PARTIES), sizeof *seen);
    CHECK_EQ(sqf_barrier_init(&pb, PARTIES, 0), 0);
    pthread_t t[PARTIES];
    for (int i = 0; i < PARTIES; i++)
        pthread_create(&t[i], NULL, phase_party, (void *)(intptr_t)i);
    for (int i = 0; i < PARTIES; i++)
        pthread_join(t[i], NULL);
    if (mode == 0) CHECK_EQ(counter, phases);
    long exact = 0;
    for (long i = 0; i < phases * PARTIES; i++)
        exact += at_load(&seen[i], RLX) == 1;
    CHECK_EQ(exact, phases * PARTIES);
    CHECK_EQ(sqf_barrier_destroy(&pb), 0);
    free(seen);
}

int main(void)
{
    watchdog(120);
    thousand_parties();
    many_phases(0, soak(3000));
    many_phases(1, soak(3000));
    return check_done();
}
