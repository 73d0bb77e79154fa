/* stress_countdown.c: no waiter is ever stranded, and no count is lost.
 * 1. Churn: workers loop up(k) ... work ... down (one by one or down_n)
 *    while waiters loop on untimed and short timed waits.  Every waiter
 *    finishes (a stranded one hangs; the watchdog reports it); at the end
 *    the value is 0 and the ups counted by the test equal the downs.
 *    1b. Rounds in which sleepers are released by helpers counting down
 *    concurrently (untimed waits: a missed wake-up hangs).
 *    1c. Pulses: with every sleeper inside its wait, the count goes to zero
 *    and straight back up; the generation rule says every sleeper returns
 *    (one that missed the zero would sleep on, and the round would hang).
 * 2. The seeds' mutex case, 1,000 threads a round: each counts up before a
 *    critical section under an sqf_mutex and down after it, then waits for
 *    the batch; the main thread waits too.  One zero must release all of
 *    them, and each must see every critical section of its batch done. */
#include <squarefree/countdown.h>
#include <squarefree/mutex.h>

#include "atomic.h"
#include "check.h"

/* --- 1. churn ---------------------------------------------------------------- */

enum { WORKERS = 4, WAITERS = 8 };

static sqf_countdown churn = SQF_COUNTDOWN_INIT;
static sqf_word workers_done;
static sqf_word64 total_up, total_down;
static long iterations;
static long work_done[WORKERS]; /* each written only by its worker */

/* A little work, of varying length, with no system call. */
static void spin(unsigned n)
{
    for (volatile unsigned i = 0; i < n; i++) {
    }
}

static void *churn_worker(void *arg)
{
    int id = (int)(uintptr_t)arg;
    unsigned seed = (unsigned)id * 2654435761u + 1;
    for (long i = 0; i < iterations; i++) {
        seed = seed * 1103515245u + 12345u;
        unsigned k = 1 + (seed >> 16) % 3;
        CHECK_EQ(sqf_countdown_up(&churn, k), 0);
        at_add64(&total_up, k, RLX);
        work_done[id]++;
        /* Mostly a short spin; now and then a sleep that holds the count
         * up long enough for waiters to go to sleep on it. */
        if ((seed & 0x7000000) == 0)
            usleep(10 + (seed >> 8) % 50);
        else
            spin((seed >> 8) % 1024);
        if (seed & 0x200000) {
            at_add64(&total_down, k, RLX);
            CHECK_EQ(sqf_countdown_down_n(&churn, k), 0);
        } else {
            for (unsigned j = 0; j < k; j++) {
                at_add64(&total_down, 1, RLX);
                CHECK_EQ(sqf_countdown_down(&churn), 0);
            }
        }
        /* Outside, as long on average: the count reaches zero whenever
         * every worker is outside at once. */
        if ((seed & 0x38000000) == 0)
            usleep(10 + (seed >> 4) % 50);
        else
            spin((seed >> 22) % 1024);
    }
    at_add(&workers_done, 1, REL);
    return NULL;
}

static sqf_word waits_returned;
static sqf_word64 waits_zero, waits_timedout, waits_nonzero; /* reported, to show what ran */

static void *churn_waiter(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    /* Loop until the workers are done, then one last wait.  A quarter of
     * the waits are untimed: only a zero releases them, and the last down
     * of all (the count ends at zero) must release any still asleep. */
    while (at_load(&workers_done, ACQ) < WORKERS) {
        seed = seed * 1103515245u + 12345u;
        /* Sleep a little between waits: spinning waiters would take the
         * CPUs from the workers. */
        usleep((seed >> 24) % 32);
        unsigned v;
        CHECK_EQ(sqf_countdown_value(&churn, &v), 0);
        if (v) at_add64(&waits_nonzero, 1, RLX);
        int e;
        switch ((seed >> 16) & 3) {
        case 0:
            e = sqf_countdown_wait(&churn);
            break;
        case 1:
            e = sqf_countdown_timedwait(&churn, sqf_after(2 * SQF_MS));
            break;
        default:
            e = sqf_countdown_timedwait(&churn, sqf_after((seed >> 20) % 50 * SQF_US));
            break;
        }
        CHECK(e == 0 || e == ETIMEDOUT);
        at_add64(e == 0 ? &waits_zero : &waits_timedout, 1, RLX);
    }
    CHECK_EQ(sqf_countdown_wait(&churn), 0);
    at_add(&waits_returned, 1, RLX);
    return NULL;
}

static void churn_round(void)
{
    iterations = soak(40000);
    sqf_deadline t0 = sqf_now();
    pthread_t wk[WORKERS], wt[WAITERS];
    for (int i = 0; i < WAITERS; i++)
        pthread_create(&wt[i], NULL, churn_waiter, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < WORKERS; i++)
        pthread_create(&wk[i], NULL, churn_worker, (void *)(uintptr_t)i);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(wk[i], NULL);
    /* The workers are done: the count is zero, so every waiter returns. */
    CHECK_EQ(sqf_countdown_wait(&churn), 0);
    for (int i = 0; i < WAITERS; i++)
        pthread_join(wt[i], NULL);
    CHECK_EQ(at_load(&waits_returned, SC), WAITERS);
    printf("churn: %.2fs, %llu zeros, %llu ups, waits: %llu began non-zero, %llu returned 0, %llu "
           "timed out\n",
           (sqf_now() - t0) / 1e9,
           (unsigned long long)(at_load64((sqf_word64 *)&churn.state, SC) >> 34),
           (unsigned long long)at_load64(&total_up, SC),
           (unsigned long long)at_load64(&waits_nonzero, SC),
           (unsigned long long)at_load64(&waits_zero, SC),
           (unsigned long long)at_load64(&waits_timedout, SC));
    unsigned v = 1;
    CHECK_EQ(sqf_countdown_value(&churn, &v), 0);
    CHECK_EQ(v, 0);
    CHECK_EQ(at_load64(&total_up, SC), at_load64(&total_down, SC));
    CHECK(at_load64(&total_up, SC) >= (uint64_t)WORKERS * (uint64_t)iterations);
    for (int i = 0; i < WORKERS; i++)
        CHECK_EQ(work_done[i], iterations);
    CHECK_EQ(sqf_countdown_destroy(&churn), 0);
}

/* --- 1b. sleepers released by one zero, many times ------------------------------ */

/* Rounds of: the main thread counts up, the waiters go to sleep, helpers
 * count down concurrently, the last reaching zero.  Untimed waits: a
 * missed wake-up hangs the round. */
enum { SLEEPERS = 16, HELPERS = 4 };
static sqf_countdown rounds_cd = SQF_COUNTDOWN_INIT;
static sqf_countdown round_in = SQF_COUNTDOWN_INIT; /* sleepers not yet in the round */
static long round_payload[HELPERS];
static long nrounds;
static sqf_word open_round; /* r + 1 once round r is open */

static void *round_sleeper(void *arg)
{
    (void)arg;
    for (long r = 0; r < nrounds; r++) {
        /* Wait for the main thread to open round r.  (up is relaxed and
         * publishes nothing: the round number is the release.) */
        while (at_load(&open_round, ACQ) < (uint32_t)r + 1)
            sched_yield();
        CHECK_EQ(sqf_countdown_down(&round_in), 0);
        CHECK_EQ(sqf_countdown_wait(&rounds_cd), 0);
        for (int h = 0; h < HELPERS; h++)
            CHECK_EQ(round_payload[h], r + 1);
        CHECK_EQ(sqf_countdown_down(&round_in), 0); /* out of round r */
    }
    return NULL;
}

static void *round_helper(void *arg)
{
    int h = (int)(uintptr_t)arg;
    round_payload[h]++;
    CHECK_EQ(sqf_countdown_down(&rounds_cd), 0);
    return NULL;
}

static void sleeper_rounds(void)
{
    nrounds = soak(200);
    pthread_t s[SLEEPERS];
    for (int i = 0; i < SLEEPERS; i++)
        pthread_create(&s[i], NULL, round_sleeper, NULL);
    for (long r = 0; r < nrounds; r++) {
        CHECK_EQ(sqf_countdown_up(&round_in, SLEEPERS), 0);
        CHECK_EQ(sqf_countdown_up(&rounds_cd, HELPERS), 0);
        at_store(&open_round, (uint32_t)r + 1, REL);
        CHECK_EQ(sqf_countdown_wait(&round_in), 0); /* all sleepers in the round */
        CHECK_EQ(sqf_countdown_up(&round_in, SLEEPERS), 0);
        pthread_t h[HELPERS];
        for (int i = 0; i < HELPERS; i++)
            pthread_create(&h[i], NULL, round_helper, (void *)(uintptr_t)i);
        for (int i = 0; i < HELPERS; i++)
            pthread_join(h[i], NULL);
        CHECK_EQ(sqf_countdown_wait(&round_in), 0); /* all sleepers released */
    }
    for (int i = 0; i < SLEEPERS; i++)
        pthread_join(s[i], NULL);
    CHECK_EQ(sqf_countdown_destroy(&rounds_cd), 0);
    CHECK_EQ(sqf_countdown_destroy(&round_in), 0);
}

/* --- 1c. zero-and-up pulses ------------------------------------------------------ */

enum { PULSED = 16 };
static sqf_countdown pulse;       /* 1 between pulses */
static sqf_countdown pulsed_back; /* sleepers not yet back from this pulse */
static long pulse_payload, npulses;
static sqf_word armed; /* r once the count is back up for pulse r */

static void *pulse_sleeper(void *arg)
{
    (void)arg;
    for (long r = 0; r < npulses; r++) {
        /* Between the last pulse's zero and its up, a wait would return at
         * once (rightly): begin only once the count is back up. */
        while (at_load(&armed, ACQ) < (uint32_t)r)
            sched_yield();
        CHECK_EQ(sqf_countdown_wait(&pulse), 0);
        CHECK_EQ(pulse_payload, r + 1); /* written before the pulse's down */
        CHECK_EQ(sqf_countdown_down(&pulsed_back), 0);
    }
    return NULL;
}

static void zero_and_up_pulses(void)
{
    npulses = soak(300);
    CHECK_EQ(sqf_countdown_init(&pulse, 1, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_countdown_init(&pulsed_back, 0, SQF_PRIVATE), 0);
    pthread_t s[PULSED];
    for (int i = 0; i < PULSED; i++)
        pthread_create(&s[i], NULL, pulse_sleeper, NULL);
    for (long r = 0; r < npulses; r++) {
        CHECK_EQ(sqf_countdown_up(&pulsed_back, PULSED), 0);
        /* Every sleeper has begun its wait (it counts itself in `waiters`
         * after its first look at the count): white box, test only. */
        while (at_load((sqf_word *)&pulse.waiters, SC) < PULSED)
            sched_yield();
        pulse_payload = r + 1;
        CHECK_EQ(sqf_countdown_down(&pulse), 0);  /* zero ... */
        CHECK_EQ(sqf_countdown_up(&pulse, 1), 0); /* ... and up at once */
        at_store(&armed, (uint32_t)r + 1, REL);
        CHECK_EQ(sqf_countdown_wait(&pulsed_back), 0);
    }
    for (int i = 0; i < PULSED; i++)
        pthread_join(s[i], NULL);
    CHECK_EQ(sqf_countdown_down(&pulse), 0);
    CHECK_EQ(sqf_countdown_destroy(&pulse), 0);
    CHECK_EQ(sqf_countdown_destroy(&pulsed_back), 0);
}

/* --- 2. the mutex case, 1,000 threads ------------------------------------------- */

enum { BATCH = 1000, BATCH_ROUNDS = 3 };

static sqf_countdown batch = SQF_COUNTDOWN_INIT;
static sqf_mutex mu = SQF_MUTEX_INIT;
static long in_critical_section; /* guarded by mu, read after the wait */
static sqf_word arrived, released;

static void *batch_thread(void *arg)
{
    (void)arg;
    CHECK_EQ(sqf_countdown_up(&batch, 1), 0); /* before the operation */
    at_add(&arrived, 1, RLX);
    sqf_mutex_lock(&mu);
    in_critical_section++;
    sqf_mutex_unlock(&mu);
    CHECK_EQ(sqf_countdown_down(&batch), 0); /* after it */
    CHECK_EQ(sqf_countdown_wait(&batch), 0); /* until the batch is through */
    CHECK_EQ(in_critical_section, BATCH);    /* every down happens-before */
    at_add(&released, 1, RLX);
    return NULL;
}

static void thousand_thread_batches(void)
{
    pthread_t *t = calloc(BATCH, sizeof *t);
    for (int r = 0; r < BATCH_ROUNDS; r++) {
        in_critical_section = 0;
        at_store(&arrived, 0, SC);
        at_store(&released, 0, SC);
        /* The main thread holds one count until every thread has counted
         * itself up, so the count cannot reach zero before the batch is
         * through (a thread that counted up late would start a new batch). */
        CHECK_EQ(sqf_countdown_up(&batch, 1), 0);
        int started = 0;
        for (; started < BATCH; started++)
            if (start_small_thread(&t[started], batch_thread, NULL) != 0) break;
        CHECK_EQ(started, BATCH);
        while (at_load(&arrived, SC) < (uint32_t)started)
            usleep(100);
        CHECK_EQ(sqf_countdown_down(&batch), 0);
        CHECK_EQ(sqf_countdown_wait(&batch), 0);
        CHECK_EQ(in_critical_section, started);
        for (int i = 0; i < started; i++)
            pthread_join(t[i], NULL);
        CHECK_EQ(at_load(&released, SC), started);
        unsigned v = 1;
        CHECK_EQ(sqf_countdown_value(&batch, &v), 0);
        CHECK_EQ(v, 0);
        CHECK_EQ(sqf_countdown_destroy(&batch), 0);
    }
    free(t);
}

int main(void)
{
    watchdog(120);
    churn_round();
    sleeper_rounds();
    zero_and_up_pulses();
    thousand_thread_batches();
    return check_done();
}
