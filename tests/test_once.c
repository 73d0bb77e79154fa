/* test_once.c: unit tests of sqf_once through the header's inline fast paths
 * (stress_once.c builds with SQF_NO_INLINE and so covers the out-of-line
 * definitions).
 *
 * Timing bounds are generous (the machine may be loaded): they separate
 * "returned promptly" from "slept until a multi-second deadline", and
 * "slept" from "spun", by an order of magnitude or more. */
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <squarefree.h>

#include "check.h"
#include "wait.h" /* sqf_wait_shared_supported */

/* Bit 3 of the state word: SHARED (see the invariants in once.h). */
#define SHARED_BIT (1u << 3)

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * SQF_SEC + ts.tv_nsec;
}

static uint32_t raw(sqf_once *o)
{
    return atomic_load(&o->state);
}

/* fn: counts its calls in *(atomic_int *)arg and succeeds. */
static int count_fn(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
    return 0;
}

/* ---- bad inputs ---------------------------------------------------------- */

static void test_bad_inputs(void)
{
    atomic_int calls = 0;
    sqf_once o = SQF_ONCE_INIT;

    CHECK_EQ(sqf_once_init(NULL, SQF_PRIVATE), EINVAL);
    CHECK_EQ(sqf_once_init(NULL, SQF_SHARED), EINVAL);
    CHECK_EQ(sqf_once_init(&o, 2u), EINVAL);
    CHECK_EQ(sqf_once_init(&o, ~0u), EINVAL);
    CHECK_EQ(raw(&o), 0);

    CHECK_EQ(sqf_once_run(NULL, count_fn, &calls), EINVAL);
    CHECK_EQ(sqf_once_timedrun(NULL, count_fn, &calls, SQF_FOREVER), EINVAL);
    CHECK_EQ(sqf_once_timedrun(NULL, count_fn, &calls, 0), EINVAL);
    CHECK_EQ(sqf_once_run(&o, NULL, &calls), EINVAL);
    CHECK_EQ(sqf_once_timedrun(&o, NULL, &calls, SQF_FOREVER), EINVAL);
    CHECK_EQ(sqf_once_timedrun(&o, NULL, &calls, 0), EINVAL);
    CHECK_EQ(sqf_once_done(NULL), 0);
    CHECK_EQ(calls, 0);
    CHECK_EQ(raw(&o), 0);
    CHECK_EQ(sqf_once_done(&o), 0);

    /* The same on a once that is done: still EINVAL, still done. */
    CHECK_EQ(sqf_once_run(&o, count_fn, &calls), 0);
    uint32_t done = raw(&o);
    CHECK_EQ(sqf_once_run(&o, NULL, NULL), EINVAL);
    CHECK_EQ(sqf_once_timedrun(&o, NULL, NULL, 0), EINVAL);
    CHECK_EQ(sqf_once_init(&o, 6u), EINVAL);
    CHECK_EQ(raw(&o), done);
    CHECK_EQ(sqf_once_done(&o), 1);
    CHECK_EQ(calls, 1);
}

/* ---- runs once; done flag; initialisers ------------------------------------ */

static void test_runs_once(void)
{
    atomic_int calls = 0;
    sqf_once o;
    CHECK_EQ(sqf_once_init(&o, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_once_done(&o), 0);
    CHECK_EQ(sqf_once_run(&o, count_fn, &calls), 0);
    CHECK_EQ(calls, 1);
    CHECK_EQ(sqf_once_done(&o), 1);
    /* Uncontended: the word is exactly DONE (no stale SLEEPERS, which
     * would cost the next run's end a system call). */
    CHECK_EQ(raw(&o), SQF_ONCE_DONE_);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(sqf_once_run(&o, count_fn, &calls), 0);
        CHECK_EQ(sqf_once_timedrun(&o, count_fn, &calls, 0), 0);
        CHECK_EQ(sqf_once_timedrun(&o, count_fn, &calls, SQF_FOREVER), 0);
    }
    CHECK_EQ(calls, 1);
    CHECK_EQ(sqf_once_done(&o), 1);

    /* init resets a once for reuse. */
    CHECK_EQ(sqf_once_init(&o, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_once_done(&o), 0);
    CHECK_EQ(sqf_once_run(&o, count_fn, &calls), 0);
    CHECK_EQ(calls, 2);
}

static sqf_once static_once = SQF_ONCE_INIT;

static void test_static_and_zeroed(void)
{
    atomic_int calls = 0;
    CHECK_EQ(sqf_once_done(&static_once), 0);
    CHECK_EQ(sqf_once_run(&static_once, count_fn, &calls), 0);
    CHECK_EQ(sqf_once_run(&static_once, count_fn, &calls), 0);
    CHECK_EQ(calls, 1);
    CHECK_EQ(sqf_once_done(&static_once), 1);

    sqf_once *z = calloc(1, sizeof *z);
    CHECK(z != NULL);
    if (!z) return;
    CHECK_EQ(sqf_once_done(z), 0);
    CHECK_EQ(sqf_once_timedrun(z, count_fn, &calls, SQF_FOREVER), 0);
    CHECK_EQ(sqf_once_run(z, count_fn, &calls), 0);
    CHECK_EQ(calls, 2);
    CHECK_EQ(sqf_once_done(z), 1);
    free(z);
}

/* ---- failure, then retry ---------------------------------------------------- */

struct flaky {
    atomic_int calls;
    int fail_first; /* fail this many calls, with the results below */
    int results[4];
};

static int flaky_fn(void *arg)
{
    struct flaky *f = arg;
    int c = atomic_fetch_add(&f->calls, 1);
    return c < f->fail_first ? f->results[c] : 0;
}

static void test_failure_then_retry(void)
{
    sqf_once o = SQF_ONCE_INIT;
    struct flaky f = {.calls = 0, .fail_first = 2, .results = {EIO, -7}};
    /* fn's error comes back unchanged, and the once is not done. */
    CHECK_EQ(sqf_once_run(&o, flaky_fn, &f), EIO);
    CHECK_EQ(sqf_once_done(&o), 0);
    CHECK_EQ(raw(&o), 0);
    CHECK_EQ(sqf_once_timedrun(&o, flaky_fn, &f, 0), -7);
    CHECK_EQ(sqf_once_done(&o), 0);
    CHECK_EQ(f.calls, 2);
    /* The next call runs fn again, and it succeeds for good. */
    CHECK_EQ(sqf_once_run(&o, flaky_fn, &f), 0);
    CHECK_EQ(f.calls, 3);
    CHECK_EQ(sqf_once_done(&o), 1);
    CHECK_EQ(sqf_once_run(&o, flaky_fn, &f), 0);
    CHECK_EQ(f.calls, 3);
}

/* ---- a held run: deadlines, sleeping, waking --------------------------------- */

/* A run of fn that the test controls: it announces that it has started,
 * waits until `arrived` callers have announced themselves (so they are sure
 * to call while fn runs), holds for hold_ms, or until released, writes
 * `data` and returns `result`. */
struct held {
    sqf_once once;
    atomic_int entered, arrived, released, fn_calls, other_calls;
    int wait_for; /* callers to wait for before holding */
    long hold_ms; /* hold this long (0: until released, or 5 s at most, so
                     that a caller that fails to time out shows as a
                     failed check rather than a hang) */
    int result;
    int data; /* plain data: TSan checks its ordering */
};

static int held_fn(void *arg)
{
    struct held *h = arg;
    atomic_fetch_add(&h->fn_calls, 1);
    atomic_store(&h->entered, 1);
    while (atomic_load(&h->arrived) < h->wait_for)
        sleep_ms(1);
    if (h->hold_ms)
        sleep_ms(h->hold_ms);
    else
        for (int i = 0; i < 5000 && !atomic_load(&h->released); i++)
            sleep_ms(1);
    if (h->result == 0) h->data = 42;
    return h->result;
}

/* The fn a second caller passes: it should run only after a failed run. */
static int other_fn(void *arg)
{
    struct held *h = arg;
    atomic_fetch_add(&h->other_calls, 1);
    h->data = 42;
    return 0;
}

struct runner {
    struct held *h;
    int rc;
};

static void *runner_main(void *arg)
{
    struct runner *r = arg;
    r->rc = sqf_once_run(&r->h->once, held_fn, r->h);
    return NULL;
}

static void wait_entered(struct held *h)
{
    for (int i = 0; i < 10000 && !atomic_load(&h->entered); i++)
        sleep_ms(1);
    CHECK(atomic_load(&h->entered));
}

static void test_timedrun_deadlines(void)
{
    atomic_int calls = 0;

    /* Nobody runs fn: a past deadline still runs it ("try once"). */
    sqf_once o = SQF_ONCE_INIT;
    CHECK_EQ(sqf_once_timedrun(&o, count_fn, &calls, sqf_now() - 1), 0);
    CHECK_EQ(calls, 1);
    sqf_once o2 = SQF_ONCE_INIT;
    CHECK_EQ(sqf_once_timedrun(&o2, count_fn, &calls, INT64_MIN), 0);
    CHECK_EQ(calls, 2);

    /* Another thread is inside fn: a past deadline returns ETIMEDOUT at
     * once, without running fn or waiting. */
    static struct held h; /* static: zeroed; its once is SQF_ONCE_INIT */
    memset(&h, 0, sizeof h);
    struct runner r = {&h, -1};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, runner_main, &r), 0);
    wait_entered(&h);
    sqf_deadline t0 = sqf_now();
    CHECK_EQ(sqf_once_timedrun(&h.once, other_fn, &h, t0 - 1), ETIMEDOUT);
    CHECK_EQ(sqf_once_timedrun(&h.once, other_fn, &h, 0), ETIMEDOUT);
    CHECK_EQ(sqf_once_timedrun(&h.once, other_fn, &h, INT64_MIN), ETIMEDOUT);
    int64_t took = sqf_now() - t0;
    CHECK(took < 100 * SQF_MS);
    if (took >= 100 * SQF_MS)
        fprintf(stderr, "  past-deadline timedruns took %lld ns\n", (long long)took);

    /* A future deadline: waits for it, then ETIMEDOUT. */
    t0 = sqf_now();
    CHECK_EQ(sqf_once_timedrun(&h.once, other_fn, &h, t0 + 50 * SQF_MS), ETIMEDOUT);
    took = sqf_now() - t0;
    CHECK(took >= 50 * SQF_MS);
    CHECK(took < 3 * SQF_SEC);
    CHECK_EQ(h.other_calls, 0);
    CHECK_EQ(sqf_once_done(&h.once), 0);

    /* Release the run: it succeeds, and timedrun now returns 0 at once. */
    atomic_store(&h.released, 1);
    pthread_join(t, NULL);
    CHECK_EQ(r.rc, 0);
    CHECK_EQ(sqf_once_timedrun(&h.once, other_fn, &h, 0), 0);
    CHECK_EQ(h.fn_calls, 1);
    CHECK_EQ(h.other_calls, 0);
    CHECK_EQ(h.data, 42);
}

/* A caller that arrives while held_fn runs. */
struct waiter {
    struct held *h;
    int rc, seen;
    int64_t cpu_ns, wall_ns;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    int64_t c0 = thread_cpu_ns();
    sqf_deadline t0 = sqf_now();
    atomic_fetch_add(&w->h->arrived, 1);
    /* A deadline far beyond the hold, so that a lost wake-up shows as a
     * late return (checked) rather than a hang. */
    w->rc = sqf_once_timedrun(&w->h->once, other_fn, w->h, t0 + 5 * SQF_SEC);
    w->wall_ns = sqf_now() - t0;
    w->cpu_ns = thread_cpu_ns() - c0;
    w->seen = w->rc == 0 ? w->h->data : -1;
    return NULL;
}

enum { NWAITERS = 4 };

/* Run held_fn (holding hold_ms after all waiters arrived, returning result)
 * with NWAITERS callers arriving meanwhile. */
static void run_held(struct held *h, struct waiter *w, struct runner *r, long hold_ms, int result)
{
    memset(h, 0, sizeof *h);
    h->wait_for = NWAITERS;
    h->hold_ms = hold_ms;
    h->result = result;
    r->h = h;
    r->rc = -1;
    pthread_t rt, wt[NWAITERS];
    CHECK_EQ(pthread_create(&rt, NULL, runner_main, r), 0);
    wait_entered(h);
    for (int i = 0; i < NWAITERS; i++) {
        w[i] = (struct waiter){.h = h, .rc = -1};
        CHECK_EQ(pthread_create(&wt[i], NULL, waiter_main, &w[i]), 0);
    }
    for (int i = 0; i < NWAITERS; i++)
        pthread_join(wt[i], NULL);
    pthread_join(rt, NULL);
}

static void test_waiters_sleep_and_all_wake(void)
{
    static struct held h;
    struct waiter w[NWAITERS];
    struct runner r;
    run_held(&h, w, &r, 200, 0);
    CHECK_EQ(r.rc, 0);
    CHECK_EQ(h.fn_calls, 1);
    CHECK_EQ(h.other_calls, 0);
    for (int i = 0; i < NWAITERS; i++) {
        CHECK_EQ(w[i].rc, 0);
        CHECK_EQ(w[i].seen, 42);
        /* It really waited for the run (which held 200 ms after it arrived)... */
        CHECK(w[i].wall_ns >= 150 * SQF_MS);
        /* ...was woken promptly when the run ended (not at its deadline)... */
        CHECK(w[i].wall_ns < 3 * SQF_SEC);
        /* ...and slept meanwhile rather than spinning. */
        CHECK(w[i].cpu_ns < 50 * SQF_MS);
        if (w[i].cpu_ns >= 50 * SQF_MS || w[i].wall_ns >= 3 * SQF_SEC)
            fprintf(stderr, "  waiter %d: cpu %lld ns, wall %lld ns\n", i, (long long)w[i].cpu_ns,
                    (long long)w[i].wall_ns);
    }
    CHECK_EQ(sqf_once_done(&h.once), 1);
}

static void test_failure_wakes_sleepers(void)
{
    static struct held h;
    struct waiter w[NWAITERS];
    struct runner r;
    run_held(&h, w, &r, 100, EIO);
    /* Only the caller that ran the failing fn sees its error; one sleeper
     * retried (with its own fn), and everyone else returned 0. */
    CHECK_EQ(r.rc, EIO);
    CHECK_EQ(h.fn_calls, 1);
    CHECK_EQ(h.other_calls, 1);
    for (int i = 0; i < NWAITERS; i++) {
        CHECK_EQ(w[i].rc, 0);
        CHECK_EQ(w[i].seen, 42);
        CHECK(w[i].wall_ns < 3 * SQF_SEC);
        CHECK(w[i].cpu_ns < 50 * SQF_MS);
        if (w[i].cpu_ns >= 50 * SQF_MS || w[i].wall_ns >= 3 * SQF_SEC)
            fprintf(stderr, "  waiter %d: cpu %lld ns, wall %lld ns\n", i, (long long)w[i].cpu_ns,
                    (long long)w[i].wall_ns);
    }
    CHECK_EQ(sqf_once_done(&h.once), 1);
}

/* ---- small races, many times --------------------------------------------------- */

struct race {
    sqf_once once;
    atomic_int calls, go;
    int data;
};

static int race_fn(void *arg)
{
    struct race *r = arg;
    atomic_fetch_add(&r->calls, 1);
    r->data = 7;
    return 0;
}

static struct race race;
static atomic_int race_bad;

static void *racer_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&race.go)) {
    }
    if (sqf_once_run(&race.once, race_fn, &race) != 0 || race.data != 7)
        atomic_fetch_add(&race_bad, 1);
    return NULL;
}

static void test_small_races(void)
{
    long rounds = soak(200);
    for (long i = 0; i < rounds; i++) {
        memset(&race, 0, sizeof race);
        pthread_t t[3];
        for (int k = 0; k < 3; k++)
            CHECK_EQ(pthread_create(&t[k], NULL, racer_main, NULL), 0);
        atomic_store(&race.go, 1);
        racer_main(NULL);
        for (int k = 0; k < 3; k++)
            pthread_join(t[k], NULL);
        CHECK_EQ(race.calls, 1);
    }
    CHECK_EQ(race_bad, 0);
}

/* ---- process-shared --------------------------------------------------------- */

struct shm {
    sqf_once once;
    atomic_int entered, calls;
    int data;
};

static int child_fn(void *arg)
{
    struct shm *s = arg;
    atomic_fetch_add(&s->calls, 1);
    atomic_store(&s->entered, 1);
    sleep_ms(200);
    s->data = 99;
    return 0;
}

static int parent_fn(void *arg)
{
    struct shm *s = arg;
    atomic_fetch_add(&s->calls, 1);
    return 0;
}

static void test_shared(void)
{
    sqf_once o = SQF_ONCE_INIT;
#ifdef SQF_TEST_SHARED_EXPECTED
    /* The futex build must really run this test, not skip it. */
    CHECK_EQ(sqf_wait_shared_supported(), SQF_TEST_SHARED_EXPECTED);
#endif
    if (!sqf_wait_shared_supported()) {
        CHECK_EQ(sqf_once_init(&o, SQF_SHARED), ENOTSUP);
        CHECK_EQ(raw(&o), 0);
        return;
    }
    struct shm *s =
        mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(s != MAP_FAILED);
    if (s == MAP_FAILED) return;
    memset(s, 0, sizeof *s);
    CHECK_EQ(sqf_once_init(&s->once, SQF_SHARED), 0);
    CHECK_EQ(raw(&s->once) & SHARED_BIT, SHARED_BIT);

    /* The child runs fn; the parent sleeps on the shared word meanwhile and
     * must be woken across the process boundary. */
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) _exit(sqf_once_run(&s->once, child_fn, s) == 0 ? 0 : 1);
    for (int i = 0; i < 10000 && !atomic_load(&s->entered); i++)
        sleep_ms(1);
    CHECK(atomic_load(&s->entered));
    sqf_deadline t0 = sqf_now();
    CHECK_EQ(sqf_once_timedrun(&s->once, parent_fn, s, t0 + 5 * SQF_SEC), 0);
    CHECK(sqf_now() - t0 < 3 * SQF_SEC);
    CHECK_EQ(s->data, 99);
    CHECK_EQ(s->calls, 1);
    CHECK_EQ(sqf_once_done(&s->once), 1);
    CHECK_EQ(raw(&s->once) & SHARED_BIT, SHARED_BIT); /* preserved */
    int status = -1;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* A failed run keeps the SHARED bit too. */
    struct flaky f = {.calls = 0, .fail_first = 1, .results = {EIO}};
    CHECK_EQ(sqf_once_init(&s->once, SQF_SHARED), 0);
    CHECK_EQ(sqf_once_run(&s->once, flaky_fn, &f), EIO);
    CHECK_EQ(raw(&s->once), SHARED_BIT);
    CHECK_EQ(sqf_once_run(&s->once, flaky_fn, &f), 0);
    CHECK_EQ(raw(&s->once), SHARED_BIT | SQF_ONCE_DONE_);
    munmap(s, sizeof *s);
}

int main(void)
{
    watchdog(60); /* a lost wake-up fails the test rather than hanging it */
    test_bad_inputs();
    test_runs_once();
    test_static_and_zeroed();
    test_failure_then_retry();
    test_timedrun_deadlines();
    test_waiters_sleep_and_all_wake();
    test_failure_wakes_sleepers();
    test_small_races();
    test_shared();
    return check_done();
}
