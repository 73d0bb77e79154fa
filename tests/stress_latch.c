/* stress_latch.c: no waiter is ever stranded, and every latch has one
 * outcome.
 * 1. 1,000 threads each arrive_and_wait(1) on a latch of 1,000, for several
 *    fresh latches in turn: every latch releases all of them (a stranded
 *    thread hangs the test; the watchdog reports it), and each sees what all
 *    the others wrote before arriving.
 * 2. Races: on fresh latches, counters count down, waiters wait (untimed,
 *    timed, arriving) and an aborter aborts at a random moment.  Every call
 *    returns 0 or EPIPE (or ETIMEDOUT for a short timed wait), and they agree
 *    with the latch's outcome: if it opened, every count_down succeeded and
 *    every wait returned 0; if it broke, every wait returned EPIPE and the
 *    successful count_downs fell short of the count.
 *
 * Built with SQF_NO_INLINE so that it exercises the library's out-of-line
 * definitions of the inline fast paths (test_latch.c covers the inline ones). */
#define SQF_NO_INLINE
#include <squarefree/latch.h>

#include "atomic.h"
#include "check.h"

enum { THREADS = 1000, LATCHES = 5 };

static sqf_latch latches[LATCHES];
static unsigned char arrived[LATCHES][THREADS];

static void *arriver(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (int r = 0; r < LATCHES; r++) {
        arrived[r][me] = 1;
        CHECK_EQ(sqf_latch_arrive_and_wait(&latches[r], 1), 0);
        int seen = 0;
        for (int i = 0; i < THREADS; i++)
            seen += arrived[r][i];
        CHECK_EQ(seen, THREADS); /* count_down happens-before the wait's return */
    }
    return NULL;
}

static void thousand_arrivers(void)
{
    for (int r = 0; r < LATCHES; r++)
        CHECK_EQ(sqf_latch_init(&latches[r], THREADS, 0), 0);
    pthread_t *t = calloc(THREADS, sizeof *t);
    int started = 0;
    for (; started < THREADS; started++)
        if (start_small_thread(&t[started], arriver, (void *)(intptr_t)started) != 0) break;
    CHECK_EQ(started, THREADS);
    if (started < THREADS) {
        /* Stand in for the threads that could not start, so the rest end. */
        for (int r = 0; r < LATCHES; r++)
            sqf_latch_abort(&latches[r]);
    }
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    free(t);
    for (int r = 0; r < LATCHES; r++) {
        CHECK_EQ(sqf_latch_try_wait(&latches[r]), 0);
        CHECK_EQ(sqf_latch_destroy(&latches[r]), 0);
    }
}

/* ---- count_down vs waiters vs abort -------------------------------------- */

enum { COUNTERS = 8, PER_COUNTER = 8, WAITERS = 12, COUNT = COUNTERS * PER_COUNTER };

struct race {
    sqf_latch l;
    sqf_word go;         /* start line */
    sqf_word counted;    /* successful count_downs (units) */
    sqf_word epipe_cd;   /* count_downs that returned EPIPE */
    sqf_word zero_wait;  /* waits that returned 0 */
    sqf_word epipe_wait; /* waits that returned EPIPE */
    sqf_word timed_out;  /* short timed waits that returned ETIMEDOUT */
    sqf_word bad;        /* any other result */
    uint32_t abort_at;
};

static struct race race;

static void start_line(void)
{
    while (!at_load(&race.go, ACQ))
        sched_yield();
}

static void tally(int e, sqf_word *zero, sqf_word *pipe)
{
    if (e == 0)
        at_add(zero, 1, RLX);
    else if (e == EPIPE)
        at_add(pipe, 1, RLX);
    else if (e == ETIMEDOUT && zero != &race.counted)
        at_add(&race.timed_out, 1, RLX);
    else
        at_add(&race.bad, 1, RLX);
}

static void *race_counter(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    start_line();
    for (int i = 0; i < PER_COUNTER; i++) {
        seed = seed * 1103515245u + 12345u;
        if (seed & 0x10000) sched_yield();
        tally(sqf_latch_count_down(&race.l, 1), &race.counted, &race.epipe_cd);
    }
    return NULL;
}

static void *race_waiter(void *arg)
{
    int kind = (int)(uintptr_t)arg % 3;
    start_line();
    int e;
    if (kind == 0) {
        e = sqf_latch_wait(&race.l);
    } else if (kind == 1) {
        e = sqf_latch_timedwait(&race.l, sqf_after(50 * SQF_US));
        if (e == ETIMEDOUT) e = sqf_latch_timedwait(&race.l, SQF_FOREVER);
    } else {
        e = sqf_latch_timedwait(&race.l, sqf_after(20 * SQF_US));
        if (e == ETIMEDOUT) {
            at_add(&race.timed_out, 1, RLX);
            return NULL;
        }
    }
    tally(e, &race.zero_wait, &race.epipe_wait);
    return NULL;
}

/* Aborts once `abort_at` count_downs have succeeded (at most COUNT - 1, so
 * that the last ones race the abort), or at once when they start failing. */
static void *race_aborter(void *arg)
{
    (void)arg;
    start_line();
    while (at_load(&race.counted, RLX) < race.abort_at && !at_load(&race.epipe_cd, RLX))
        sched_yield();
    CHECK_EQ(sqf_latch_abort(&race.l), 0);
    return NULL;
}

static void count_wait_abort_race(void)
{
    long rounds = soak(300);
    long opened = 0, broken = 0;
    unsigned seed = 7;
    for (long round = 0; round < rounds; round++) {
        memset(&race, 0, sizeof race);
        seed = seed * 1103515245u + 12345u;
        race.abort_at = (seed >> 8) % (COUNT + 16);
        if (race.abort_at > COUNT - 1) race.abort_at = COUNT - 1;
        CHECK_EQ(sqf_latch_init(&race.l, COUNT, 0), 0);
        pthread_t c[COUNTERS], w[WAITERS], a;
        for (int i = 0; i < COUNTERS; i++)
            pthread_create(&c[i], NULL, race_counter, (void *)(uintptr_t)(seed + (unsigned)i));
        for (int i = 0; i < WAITERS; i++)
            pthread_create(&w[i], NULL, race_waiter, (void *)(uintptr_t)i);
        pthread_create(&a, NULL, race_aborter, NULL);
        at_store(&race.go, 1, REL);
        for (int i = 0; i < COUNTERS; i++)
            pthread_join(c[i], NULL);
        for (int i = 0; i < WAITERS; i++)
            pthread_join(w[i], NULL);
        pthread_join(a, NULL);

        int outcome = sqf_latch_try_wait(&race.l);
        CHECK(outcome == 0 || outcome == EPIPE);
        uint32_t counted = at_load(&race.counted, RLX);
        uint32_t waits = at_load(&race.zero_wait, RLX) + at_load(&race.epipe_wait, RLX) +
                         at_load(&race.timed_out, RLX);
        CHECK_EQ(at_load(&race.bad, RLX), 0);
        CHECK_EQ(waits, WAITERS);
        CHECK_EQ(counted + at_load(&race.epipe_cd, RLX), COUNT);
        if (outcome == 0) {
            opened++;
            CHECK_EQ(counted, COUNT);
            CHECK_EQ(at_load(&race.epipe_cd, RLX), 0);
            CHECK_EQ(at_load(&race.epipe_wait, RLX), 0);
        } else {
            broken++;
            CHECK(counted < COUNT);
            CHECK_EQ(at_load(&race.zero_wait, RLX), 0);
        }
        CHECK_EQ(sqf_latch_destroy(&race.l), 0);
    }
    printf("race: %ld rounds opened, %ld broken\n", opened, broken);
    CHECK(opened + broken == rounds);
}

int main(void)
{
    watchdog(120);
    thousand_arrivers();
    count_wait_abort_race();
    return check_done();
}
