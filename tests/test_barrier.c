/* test_barrier.c: sqf_barrier's contract: bad inputs change nothing; exact
 * arrival indexes every phase (the set {0..N-1}, one serial thread) and no
 * thread leaving before all have arrived; the completion runs exactly once
 * per phase, after every arrival's writes and before any thread of the phase
 * returns; abort (sleepers EPIPE promptly, later waits EPIPE until reset,
 * reset and destroy EBUSY while threads are inside, a full phase after
 * reset); the chosen time-out rule (a time-out breaks the barrier: the
 * timed-out thread gets ETIMEDOUT, the others EPIPE); an extra thread
 * arriving while the completion runs waits for the next phase.
 *
 * Timing bounds are generous (the machine may be loaded): they separate
 * "returned promptly" from "slept until a multi-second deadline". */
#include <squarefree/barrier.h>

#include <semaphore.h>

#include "atomic.h"
#include "check.h"
#include "park.h"

#define B_COUNT   ((1u << 21) - 1) /* the words' bits (see barrier.h) */
#define B_WAITERS (1u << 21)
#define B_BROKEN  (1u << 22)
#define B_SHARED  (1u << 23)

/* The arrival word. */
static uint32_t word_of(sqf_barrier *b)
{
    return at_load((sqf_word *)&b->word, SC);
}

/* The release word. */
static uint32_t release_of(sqf_barrier *b)
{
    return at_load((sqf_word *)&b->release, SC);
}

static uint32_t waiters_of(sqf_barrier *b)
{
    return at_load((sqf_word *)&b->waiters, SC);
}

/* Wait until n threads are inside a wait on *b and WAITERS is set (on the
 * release word), then a little longer so that the last of them is asleep
 * in the kernel. */
static void wait_until_sleeping(sqf_barrier *b, uint32_t n)
{
    WAIT_ASLEEP(waiters_of(b) == n && (release_of(b) & B_WAITERS));
}

static int calls;
static void count_call(void *arg)
{
    (void)arg;
    calls++;
}

static void test_bad_input(void)
{
    sqf_barrier b;
    memset(&b, 0, sizeof b);
    unsigned idx = 77;
    CHECK_EQ(sqf_barrier_init(NULL, 1, 0), EINVAL);
    CHECK_EQ(sqf_barrier_init(&b, 0, 0), EINVAL);
    CHECK_EQ(sqf_barrier_init(&b, SQF_BARRIER_MAX + 1, 0), EINVAL);
    CHECK_EQ(sqf_barrier_init(&b, ~0u, 0), EINVAL);
    CHECK_EQ(sqf_barrier_init(&b, 2, 2), EINVAL);
    CHECK_EQ(sqf_barrier_init(&b, 2, ~0u), EINVAL);
    CHECK_EQ(word_of(&b), 0);
    CHECK_EQ(release_of(&b), 0);
    CHECK_EQ(at_load((sqf_word *)&b.parties, SC), 0); /* failed inits changed nothing */
    CHECK_EQ(sqf_barrier_destroy(NULL), EINVAL);
    CHECK_EQ(sqf_barrier_wait(NULL, &idx), EINVAL);
    CHECK_EQ(sqf_barrier_timedwait(NULL, SQF_FOREVER, &idx), EINVAL);
    CHECK_EQ(sqf_barrier_wait_fn(NULL, count_call, NULL, &idx), EINVAL);
    CHECK_EQ(sqf_barrier_abort(NULL), EINVAL);
    CHECK_EQ(sqf_barrier_reset(NULL), EINVAL);
    /* Zeroed memory: 0 parties, every wait EINVAL without a change. */
    CHECK_EQ(sqf_barrier_wait(&b, &idx), EINVAL);
    CHECK_EQ(sqf_barrier_timedwait(&b, 0, &idx), EINVAL);
    CHECK_EQ(sqf_barrier_wait_fn(&b, count_call, NULL, &idx), EINVAL);
    CHECK_EQ(word_of(&b), 0);
    CHECK_EQ(release_of(&b), 0);
    CHECK_EQ(waiters_of(&b), 0);
    CHECK_EQ(idx, 77);
    CHECK_EQ(calls, 0);
    /* A party count written past the maximum (static initialiser misuse). */
    sqf_barrier big = SQF_BARRIER_INIT(SQF_BARRIER_MAX + 1);
    CHECK_EQ(sqf_barrier_wait(&big, &idx), EINVAL);
    CHECK_EQ(word_of(&big), 0);
    CHECK_EQ(release_of(&big), 0);

    CHECK_EQ(sqf_barrier_init(&b, SQF_BARRIER_MAX, 0), 0);
    CHECK_EQ(sqf_barrier_destroy(&b), 0);
    if (SQF_TEST_SHARED_EXPECTED) {
        CHECK_EQ(sqf_barrier_init(&b, 1, SQF_SHARED), 0);
        CHECK_EQ(word_of(&b), 0);
        CHECK_EQ(release_of(&b), B_SHARED); /* SHARED is on the word futexes use */
        CHECK_EQ(sqf_barrier_wait(&b, &idx), 0);
        CHECK_EQ(idx, 0);
        CHECK_EQ(word_of(&b), 1u << 24);                 /* phase moved */
        CHECK_EQ(release_of(&b), (1u << 24) | B_SHARED); /* followed, SHARED kept */
    } else {
        CHECK_EQ(sqf_barrier_init(&b, 1, SQF_SHARED), ENOTSUP);
    }
}

/* One party: every wait is the last arrival; it never sleeps. */
/* sqf_barrier_state: parties, arrivals in the phase, EPIPE once broken. */
static void *arrive_one(void *b)
{
    CHECK_EQ(sqf_barrier_wait(b, NULL), 0);
    return NULL;
}

static void test_state(void)
{
    sqf_barrier b;
    unsigned parties = 9, arrived = 9;
    CHECK_EQ(sqf_barrier_state(NULL, &parties, &arrived), EINVAL);
    CHECK_EQ(sqf_barrier_init(&b, 3, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_barrier_state(&b, NULL, NULL), 0);
    CHECK_EQ(sqf_barrier_state(&b, &parties, &arrived), 0);
    CHECK_EQ(parties, 3);
    CHECK_EQ(arrived, 0);
    pthread_t t[2];
    pthread_create(&t[0], NULL, arrive_one, &b);
    WAIT_ASLEEP(sqf_barrier_state(&b, NULL, &arrived) == 0 && arrived == 1);
    CHECK_EQ(arrived, 1);
    pthread_create(&t[1], NULL, arrive_one, &b);
    WAIT_ASLEEP(sqf_barrier_state(&b, NULL, &arrived) == 0 && arrived == 2);
    CHECK_EQ(sqf_barrier_wait(&b, NULL), 0); /* the third: the phase is released */
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    CHECK_EQ(sqf_barrier_state(&b, &parties, &arrived), 0);
    CHECK_EQ(arrived, 0);
    CHECK_EQ(sqf_barrier_abort(&b), 0);
    CHECK_EQ(sqf_barrier_state(&b, &parties, &arrived), EPIPE);
    CHECK_EQ(parties, 3);
    CHECK_EQ(arrived, 0);
    CHECK_EQ(sqf_barrier_destroy(&b), 0);
}

static void test_one_party(void)
{
    sqf_barrier b = SQF_BARRIER_INIT(1);
    calls = 0;
    for (unsigned i = 0; i < 600; i++) { /* more than 256: the phase wraps */
        unsigned idx = 99;
        CHECK_EQ(word_of(&b) >> 24, i % 256);
        CHECK_EQ(release_of(&b), word_of(&b)); /* published, nobody asleep */
        if (i % 3 == 0)
            CHECK_EQ(sqf_barrier_wait(&b, &idx), 0);
        else if (i % 3 == 1)
            CHECK_EQ(sqf_barrier_timedwait(&b, sqf_now() - 1, &idx), 0); /* last: past is fine */
        else
            CHECK_EQ(sqf_barrier_wait_fn(&b, count_call, NULL, &idx), 0);
        CHECK_EQ(idx, 0);
    }
    CHECK_EQ(sqf_barrier_wait(&b, NULL), 0);
    CHECK_EQ(calls, 200);
    CHECK_EQ(waiters_of(&b), 0);
    CHECK_EQ(sqf_barrier_destroy(&b), 0);
    /* Reset of a healthy, idle barrier changes nothing. */
    uint32_t w = word_of(&b);
    CHECK_EQ(sqf_barrier_reset(&b), 0);
    CHECK_EQ(word_of(&b), w);
}

/* ---- phases: indexes, release only when all arrived, completion -------- */

enum { N = 8, PHASES = 60 };

static sqf_barrier pb;
/* Relaxed counters, so that only the barrier orders the plain data below
 * (TSan then reports a missing release or acquire in it). */
static sqf_word arrived[PHASES];  /* incremented just before each wait */
static sqf_word returned[PHASES]; /* incremented just after each wait */
static sqf_word index_seen[PHASES][N];
static long part[PHASES][N]; /* plain data: written before arriving */
static long total[PHASES];   /* plain data: written by the completion */
static int completions[PHASES];
static int use_fn;

static int cphase; /* the completion's own count of phases */

static void completion(void *arg)
{
    (void)arg;
    int p = cphase++;
    CHECK(p < PHASES);
    if (p >= PHASES) return;
    /* Runs once per phase, after every arrival of the phase (and nobody can
     * have arrived at the next)... */
    CHECK_EQ(at_load(&arrived[p], RLX), N);
    if (p + 1 < PHASES) CHECK_EQ(at_load(&arrived[p + 1], RLX), 0);
    completions[p]++;
    /* ... and before any thread of it returns (give early ones a chance). */
    if (p % 4 == 0) usleep(2000);
    CHECK_EQ(at_load(&returned[p], RLX), 0);
    long sum = 0;
    for (int i = 0; i < N; i++)
        sum += part[p][i]; /* the arrivals' plain writes */
    total[p] = sum;        /* everyone reads this after the phase */
}

static void *phase_thread(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (int p = 0; p < PHASES; p++) {
        part[p][me] = p * 100 + me;
        at_add(&arrived[p], 1, RLX);
        unsigned idx = 1000;
        int e;
        if (use_fn)
            e = sqf_barrier_wait_fn(&pb, completion, NULL, &idx);
        else if (me % 2)
            e = sqf_barrier_timedwait(&pb, sqf_after(20 * SQF_SEC), &idx);
        else
            e = sqf_barrier_wait(&pb, &idx);
        CHECK_EQ(e, 0);
        CHECK(idx < N);
        if (idx < N) at_add(&index_seen[p][idx], 1, RLX);
        CHECK_EQ(at_load(&arrived[p], RLX), N); /* nobody leaves before all arrive */
        at_add(&returned[p], 1, RLX);
        if (use_fn) {
            CHECK_EQ(completions[p], 1);
            CHECK_EQ(total[p], p * 100L * N + N * (N - 1) / 2);
        }
    }
    return NULL;
}

static void run_phases(int with_fn)
{
    use_fn = with_fn;
    memset(arrived, 0, sizeof arrived);
    memset(returned, 0, sizeof returned);
    memset(index_seen, 0, sizeof index_seen);
    memset(completions, 0, sizeof completions);
    memset(total, 0, sizeof total);
    cphase = 0;
    CHECK_EQ(sqf_barrier_init(&pb, N, 0), 0);
    pthread_t t[N];
    for (int i = 0; i < N; i++)
        pthread_create(&t[i], NULL, phase_thread, (void *)(intptr_t)i);
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    for (int p = 0; p < PHASES; p++) {
        CHECK_EQ(at_load(&returned[p], SC), N);
        for (int i = 0; i < N; i++)
            CHECK_EQ(at_load(&index_seen[p][i], SC), 1); /* exactly {0..N-1} */
        CHECK_EQ(completions[p], with_fn ? 1 : 0);
    }
    CHECK_EQ(word_of(&pb) >> 24, PHASES % 256);
    CHECK_EQ(word_of(&pb) & (B_COUNT | B_BROKEN | B_WAITERS), 0);
    CHECK_EQ(release_of(&pb), word_of(&pb)); /* the last publish cleared WAITERS */
    CHECK_EQ(sqf_barrier_destroy(&pb), 0);
}

/* ---- abort, reset, time-outs ------------------------------------------- */

struct waiter {
    sqf_barrier *b;
    sqf_deadline deadline;
    void (*fn)(void *);
    void *arg;
    int result;
    unsigned idx;
    sqf_deadline returned;
};

static void *wait_thread(void *arg)
{
    struct waiter *w = arg;
    w->idx = 1000;
    if (w->fn)
        w->result = sqf_barrier_wait_fn(w->b, w->fn, w->arg, &w->idx);
    else
        w->result = sqf_barrier_timedwait(w->b, w->deadline, &w->idx);
    w->returned = sqf_now();
    return NULL;
}

static void start_waiters(sqf_barrier *b, struct waiter *w, pthread_t *t, int n,
                          sqf_deadline deadline)
{
    for (int i = 0; i < n; i++) {
        w[i] = (struct waiter){b, deadline, NULL, NULL, -1, 0, 0};
        pthread_create(&t[i], NULL, wait_thread, &w[i]);
    }
}

/* A full phase of n parties (this thread and n-1 others) works. */
static void check_full_phase(sqf_barrier *b, int n)
{
    struct waiter w[16];
    pthread_t t[16];
    start_waiters(b, w, t, n - 1, SQF_FOREVER);
    wait_until_sleeping(b, (uint32_t)n - 1);
    unsigned idx = 1000, seen = 0;
    CHECK_EQ(sqf_barrier_wait(b, &idx), 0);
    CHECK_EQ(idx, (unsigned)n - 1);
    for (int i = 0; i < n - 1; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ(w[i].result, 0);
        if (w[i].idx < 16) seen |= 1u << w[i].idx;
    }
    CHECK_EQ(seen, (1u << (n - 1)) - 1);
    CHECK_EQ(sqf_barrier_destroy(b), 0);
}

static void park_all(pthread_t *t, int n)
{
    park_threads(t, n);
}

static void test_abort_reset(void)
{
    enum { P = 5 };
    sqf_barrier b;
    struct waiter w[P];
    pthread_t t[P];
    CHECK_EQ(sqf_barrier_init(&b, P, 0), 0);
    /* Pass one phase first, so the abort hits a later one. */
    check_full_phase(&b, P);

    start_waiters(&b, w, t, P - 1, sqf_after(5 * SQF_SEC));
    wait_until_sleeping(&b, P - 1);
    CHECK_EQ(word_of(&b) & B_COUNT, P - 1);
    /* The arrivals changed only the arrival word; the sleepers only set
     * WAITERS on the release word, which shows the same phase. */
    CHECK_EQ(release_of(&b), (word_of(&b) & ~B_COUNT) | B_WAITERS);
    CHECK_EQ(sqf_barrier_destroy(&b), EBUSY);
    CHECK_EQ(sqf_barrier_reset(&b), EBUSY); /* healthy, with sleepers */
    /* Park them, abort, and they are still inside: reset and destroy EBUSY. */
    park_all(t, P - 1);
    sqf_deadline aborted = sqf_now();
    CHECK_EQ(sqf_barrier_abort(&b), 0);
    uint32_t broken = word_of(&b);
    CHECK(broken & B_BROKEN);
    CHECK_EQ(release_of(&b), broken & ~B_COUNT); /* published, WAITERS cleared (woken) */
    CHECK_EQ(sqf_barrier_reset(&b), EBUSY);
    CHECK_EQ(sqf_barrier_destroy(&b), EBUSY);
    CHECK_EQ(word_of(&b), broken);
    unpark_threads(P - 1);
    for (int i = 0; i < P - 1; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ(w[i].result, EPIPE);
        CHECK_EQ(w[i].idx, 1000); /* not written on failure */
        CHECK(w[i].returned - aborted < 2 * SQF_SEC);
    }
    /* Later waits: EPIPE at once, until reset; abort again: no change. */
    unsigned idx = 1000;
    CHECK_EQ(sqf_barrier_wait(&b, &idx), EPIPE);
    CHECK_EQ(sqf_barrier_timedwait(&b, sqf_after(5 * SQF_SEC), &idx), EPIPE);
    CHECK_EQ(sqf_barrier_timedwait(&b, 0, &idx), EPIPE);
    CHECK_EQ(sqf_barrier_wait_fn(&b, count_call, NULL, &idx), EPIPE);
    CHECK_EQ(idx, 1000);
    CHECK_EQ(sqf_barrier_abort(&b), 0);
    CHECK_EQ(word_of(&b), broken);
    CHECK_EQ(sqf_barrier_destroy(&b), 0);
    CHECK_EQ(sqf_barrier_reset(&b), 0);
    CHECK_EQ(word_of(&b) & (B_COUNT | B_BROKEN | B_WAITERS), 0);
    CHECK_EQ(word_of(&b) >> 24, (broken >> 24) + 1);
    CHECK_EQ(release_of(&b), word_of(&b)); /* the fresh phase, published */
    check_full_phase(&b, P);
    check_full_phase(&b, P);

    /* Abort with sleepers not parked: they return EPIPE promptly. */
    start_waiters(&b, w, t, P - 2, SQF_FOREVER);
    wait_until_sleeping(&b, P - 2);
    aborted = sqf_now();
    CHECK_EQ(sqf_barrier_abort(&b), 0);
    for (int i = 0; i < P - 2; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ(w[i].result, EPIPE);
        CHECK(w[i].returned - aborted < 2 * SQF_SEC);
    }
    CHECK_EQ(sqf_barrier_reset(&b), 0);
    check_full_phase(&b, P);
}

/* A time-out breaks the barrier: ETIMEDOUT for the timed-out thread, EPIPE
 * for the rest of the phase and every later wait until reset. */
static void test_timeout_breaks(void)
{
    enum { P = 4 };
    sqf_barrier b;
    struct waiter w[P];
    pthread_t t[P];
    CHECK_EQ(sqf_barrier_init(&b, P, 0), 0);
    start_waiters(&b, w, t, P - 2, sqf_after(10 * SQF_SEC));
    wait_until_sleeping(&b, P - 2);
    unsigned idx = 1000;
    sqf_deadline t0 = sqf_now();
    CHECK_EQ(sqf_barrier_timedwait(&b, t0 + 50 * SQF_MS, &idx), ETIMEDOUT);
    CHECK(sqf_now() - t0 >= 50 * SQF_MS);
    CHECK_EQ(idx, 1000);
    for (int i = 0; i < P - 2; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ(w[i].result, EPIPE);
        CHECK(w[i].returned - t0 < 3 * SQF_SEC); /* not their own 10 s deadline */
    }
    CHECK(word_of(&b) & B_BROKEN);
    CHECK_EQ(sqf_barrier_wait(&b, &idx), EPIPE);
    CHECK_EQ(sqf_barrier_reset(&b), 0);
    check_full_phase(&b, P);

    /* A past deadline: a non-last arrival breaks at once... */
    start_waiters(&b, w, t, 1, SQF_FOREVER);
    wait_until_sleeping(&b, 1);
    t0 = sqf_now();
    CHECK_EQ(sqf_barrier_timedwait(&b, t0 - 1, &idx), ETIMEDOUT);
    CHECK(sqf_now() - t0 < 2 * SQF_SEC);
    pthread_join(t[0], NULL);
    CHECK_EQ(w[0].result, EPIPE);
    CHECK_EQ(sqf_barrier_reset(&b), 0);
    /* ... and the last arrival releases the phase. */
    start_waiters(&b, w, t, P - 1, SQF_FOREVER);
    wait_until_sleeping(&b, P - 1);
    CHECK_EQ(sqf_barrier_timedwait(&b, 0, &idx), 0);
    CHECK_EQ(idx, P - 1);
    for (int i = 0; i < P - 1; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ(w[i].result, 0);
    }
    CHECK_EQ(sqf_barrier_destroy(&b), 0);
}

/* Completions that take time, and abort. */
static sqf_word in_completion;
static int slow_completion_ms;

static void slow_completion(void *arg)
{
    at_store(&in_completion, 1, SC);
    usleep((useconds_t)slow_completion_ms * 1000);
    if (arg) sqf_barrier_abort(arg);
    at_store(&in_completion, 2, SC);
}

static void wait_for_completion_start(void)
{
    sqf_deadline stop = sqf_after(10 * SQF_SEC);
    while (at_load(&in_completion, SC) == 0 && sqf_now() < stop)
        usleep(100);
    CHECK_EQ(at_load(&in_completion, SC), 1);
}

static void test_completion_breaks(void)
{
    enum { P = 3 };
    sqf_barrier b;
    struct waiter w[P];
    pthread_t t[P];
    CHECK_EQ(sqf_barrier_init(&b, P, 0), 0);

    /* A completion that aborts: everyone, the completer too, gets EPIPE. */
    slow_completion_ms = 1;
    start_waiters(&b, w, t, P - 1, SQF_FOREVER);
    wait_until_sleeping(&b, P - 1);
    unsigned idx = 1000;
    CHECK_EQ(sqf_barrier_wait_fn(&b, slow_completion, &b, &idx), EPIPE);
    CHECK_EQ(idx, 1000);
    for (int i = 0; i < P - 1; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ(w[i].result, EPIPE);
    }
    CHECK_EQ(sqf_barrier_reset(&b), 0);

    /* A deadline that passes while the completion runs breaks the phase (the
     * phase is released only when the completion returns): ETIMEDOUT for
     * the timed-out thread, at its deadline; EPIPE for the others, the
     * completer included. */
    slow_completion_ms = 600;
    at_store(&in_completion, 0, SC);
    sqf_deadline deadline = sqf_after(250 * SQF_MS);
    start_waiters(&b, w, t, 1, SQF_FOREVER);
    w[1] = (struct waiter){&b, deadline, NULL, NULL, -1, 0, 0};
    pthread_create(&t[1], NULL, wait_thread, &w[1]); /* the timed one */
    wait_until_sleeping(&b, 2);
    w[2] = (struct waiter){&b, 0, slow_completion, NULL, -1, 0, 0};
    pthread_create(&t[2], NULL, wait_thread, &w[2]); /* the completer */
    wait_for_completion_start();
    CHECK(sqf_now() < deadline);            /* else the test proves nothing */
    CHECK_EQ(sqf_barrier_reset(&b), EBUSY); /* completing: threads inside */
    CHECK_EQ(sqf_barrier_destroy(&b), EBUSY);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(w[0].result, EPIPE);
    CHECK_EQ(w[1].result, ETIMEDOUT);
    CHECK_EQ(w[2].result, EPIPE);
    CHECK(w[1].returned >= deadline);
    CHECK(w[2].returned - w[1].returned > 100 * SQF_MS); /* did not wait for the completion */
    CHECK_EQ(sqf_barrier_reset(&b), 0);
    check_full_phase(&b, P);
}

/* An extra thread that comes while the completion runs (all parties have
 * arrived) waits to arrive in the next phase. */
static void test_extra_thread(void)
{
    sqf_barrier b = SQF_BARRIER_INIT(2);
    struct waiter w[3];
    pthread_t t[3];
    slow_completion_ms = 300;
    at_store(&in_completion, 0, SC);
    w[0] = (struct waiter){&b, SQF_FOREVER, NULL, NULL, -1, 0, 0};
    pthread_create(&t[0], NULL, wait_thread, &w[0]);
    wait_until_sleeping(&b, 1);
    w[1] = (struct waiter){&b, 0, slow_completion, NULL, -1, 0, 0};
    pthread_create(&t[1], NULL, wait_thread, &w[1]);
    wait_for_completion_start();
    w[2] = (struct waiter){&b, SQF_FOREVER, NULL, NULL, -1, 0, 0};
    pthread_create(&t[2], NULL, wait_thread, &w[2]); /* the extra one */
    wait_until_sleeping(&b, 3);
    CHECK_EQ(at_load(&in_completion, SC), 1); /* it came during the completion */
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ(w[i].result, 0);
        CHECK_EQ(w[i].idx, (unsigned)i);
    }
    wait_until_sleeping(&b, 1); /* arrived in the next phase, as index 0 */
    CHECK_EQ(word_of(&b) & B_COUNT, 1);
    unsigned idx = 1000;
    CHECK_EQ(sqf_barrier_wait(&b, &idx), 0);
    CHECK_EQ(idx, 1);
    pthread_join(t[2], NULL);
    CHECK_EQ(w[2].result, 0);
    CHECK_EQ(w[2].idx, 0);
    CHECK_EQ(sqf_barrier_destroy(&b), 0);
}

int main(void)
{
    watchdog(60);
    park_init();
    test_bad_input();
    test_one_party();
    test_state();
    run_phases(0);
    run_phases(1);
    test_abort_reset();
    test_timeout_breaks();
    test_completion_breaks();
    test_extra_thread();
    return check_done();
}
