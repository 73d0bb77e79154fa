/* stress_once.c: a thousand callers at once on a fresh sqf_once, round after
 * round: fn must run exactly once per round (or exactly k+1 times when it
 * fails k times), every caller must return 0 (or the failing fn's error, if
 * it ran it, or ETIMEDOUT for timed callers) and see what fn wrote.
 *
 * Built with SQF_NO_INLINE so that it exercises the library's out-of-line
 * definitions of the inline fast paths (test_once.c covers the inline ones).
 * A watchdog fails the test, with a message, if the callers of a round do not
 * all return within 30 s, instead of letting it hang. */
#define SQF_NO_INLINE
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include <squarefree.h>

#include "check.h"

enum { NCALLERS = 1000, FAIL_K = 5 };
#define WATCHDOG_NS (30 * SQF_SEC)

/* PLAIN: fn holds 20 ms, so most callers sleep; QUICK: fn returns at once,
 * so most callers take the fast path; FAILING: fn fails FAIL_K times first;
 * TIMED: half the callers pass short deadlines. */
enum mode { PLAIN, QUICK, FAILING, TIMED };

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* One round's shared state. */
static struct {
    sqf_once once;
    enum mode mode;
    atomic_int calls;   /* runs of fn */
    atomic_int inside;  /* runs of fn in progress */
    atomic_int overlap; /* runs that found another in progress */
    int data;           /* plain: written by fn, read by every caller (TSan) */
    int tag;            /* what fn writes this round */
} R;

/* The start gate: callers block here until all are created. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open;
static atomic_int returned;

struct caller {
    int index;
    int rc;
    int seen;
};

static struct caller callers[NCALLERS];
static pthread_t threads[NCALLERS];

static int fn(void *arg)
{
    (void)arg;
    if (atomic_fetch_add(&R.inside, 1) != 0) atomic_fetch_add(&R.overlap, 1);
    int c = atomic_fetch_add(&R.calls, 1);
    int rc = 0;
    if (R.mode == FAILING) {
        sleep_ms(2);
        if (c < FAIL_K) rc = EIO;
    } else if (R.mode != QUICK) {
        sleep_ms(20); /* long enough for most callers to arrive and sleep */
    }
    if (rc == 0) R.data = R.tag;
    atomic_fetch_sub(&R.inside, 1);
    return rc;
}

static void *caller_main(void *arg)
{
    struct caller *c = arg;
    pthread_mutex_lock(&gate_mu);
    while (!gate_open)
        pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);

    if (R.mode == TIMED && (c->index & 1))
        c->rc = sqf_once_timedrun(&R.once, fn, NULL, sqf_after((c->index % 10) * SQF_MS));
    else
        c->rc = sqf_once_run(&R.once, fn, NULL);
    c->seen = c->rc == 0 ? R.data : -1;
    atomic_fetch_add(&returned, 1);
    return NULL;
}

/* Run one round; returns 0, or -1 if it could not start its threads. */
static int round_run(int round, enum mode mode)
{
    memset(&R, 0, sizeof R); /* a fresh, all-zero once */
    if (round & 1) CHECK_EQ(sqf_once_init(&R.once, SQF_PRIVATE), 0);
    R.mode = mode;
    R.tag = 1000 + round;
    gate_open = 0;
    atomic_store(&returned, 0);

    int started = 0, err = 0;
    for (int i = 0; i < NCALLERS; i++) {
        callers[i] = (struct caller){.index = i, .rc = -1, .seen = -1};
        err = start_small_thread(&threads[i], caller_main, &callers[i]);
        if (err) {
            fprintf(stderr, "round %d: pthread_create failed at thread %d of %d: %s\n", round, i,
                    NCALLERS, strerror(err));
            CHECK_EQ(err, 0);
            break;
        }
        started++;
    }

    pthread_mutex_lock(&gate_mu);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);

    sqf_deadline limit = sqf_now() + WATCHDOG_NS;
    while (atomic_load(&returned) < started && sqf_now() < limit)
        sleep_ms(5);
    if (atomic_load(&returned) < started) {
        fprintf(stderr,
                "watchdog: round %d (mode %d): only %d of %d callers returned within 30 s; "
                "fn ran %d times, state word 0x%x\n",
                round, (int)mode, atomic_load(&returned), started, atomic_load(&R.calls),
                (unsigned)atomic_load(&R.once.state));
        check_failed_++;
        check_done();
        fflush(NULL);
        _exit(1);
    }
    for (int i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    return err ? -1 : 0;
}

static void check_round(int round, enum mode mode)
{
    int zero = 0, eio = 0, timedout = 0, other = 0, bad_seen = 0;
    for (int i = 0; i < NCALLERS; i++) {
        switch (callers[i].rc) {
        case 0:
            zero++;
            if (callers[i].seen != 1000 + round) bad_seen++;
            break;
        case EIO:
            eio++;
            break;
        case ETIMEDOUT:
            timedout++;
            break;
        default:
            other++;
        }
    }
    CHECK_EQ(R.overlap, 0); /* never two runs of fn at once */
    CHECK_EQ(bad_seen, 0);  /* every 0 return sees fn's write */
    CHECK_EQ(other, 0);
    CHECK_EQ(sqf_once_done(&R.once), 1);
    switch (mode) {
    case PLAIN:
    case QUICK:
        CHECK_EQ(R.calls, 1);
        CHECK_EQ(zero, NCALLERS);
        break;
    case FAILING:
        /* fn failed FAIL_K times, each time to the one caller running it. */
        CHECK_EQ(R.calls, FAIL_K + 1);
        CHECK_EQ(eio, FAIL_K);
        CHECK_EQ(zero, NCALLERS - FAIL_K);
        break;
    case TIMED:
        /* Only the odd callers had deadlines. */
        CHECK_EQ(R.calls, 1);
        CHECK_EQ(eio, 0);
        CHECK(timedout <= NCALLERS / 2);
        CHECK_EQ(zero + timedout, NCALLERS);
        break;
    }
    if (R.calls != (mode == FAILING ? FAIL_K + 1 : 1) || zero + eio + timedout != NCALLERS)
        fprintf(stderr,
                "round %d (mode %d): fn ran %d times; %d returned 0, %d EIO, %d ETIMEDOUT\n", round,
                (int)mode, atomic_load(&R.calls), zero, eio, timedout);
}

static int ok_fn(void *arg)
{
    (void)arg;
    return 0;
}

/* The out-of-line definitions reject bad input as the inline ones do. */
static void test_out_of_line_inputs(void)
{
    sqf_once o = SQF_ONCE_INIT;
    CHECK_EQ(sqf_once_run(NULL, ok_fn, NULL), EINVAL);
    CHECK_EQ(sqf_once_timedrun(NULL, ok_fn, NULL, 0), EINVAL);
    CHECK_EQ(sqf_once_run(&o, NULL, NULL), EINVAL);
    CHECK_EQ(sqf_once_done(NULL), 0);
    CHECK_EQ(sqf_once_done(&o), 0);
    CHECK_EQ(sqf_once_run(&o, ok_fn, NULL), 0);
    CHECK_EQ(sqf_once_done(&o), 1);
    CHECK_EQ(sqf_once_run(&o, NULL, NULL), EINVAL);
    CHECK_EQ(sqf_once_timedrun(&o, NULL, NULL, SQF_FOREVER), EINVAL);
    CHECK_EQ(sqf_once_timedrun(&o, ok_fn, NULL, 0), 0);
    CHECK_EQ(sqf_once_done(&o), 1);
}

int main(void)
{
    /* Each round has its own 30 s watchdog (with a diagnosis); this one
     * catches a hang anywhere else. */
    watchdog(240);
    test_out_of_line_inputs();
    static const enum mode plan[] = {PLAIN, QUICK, FAILING, TIMED, PLAIN, QUICK, FAILING};
    long reps = soak(1);
    int round = 0;
    for (long rep = 0; rep < reps; rep++) {
        for (size_t p = 0; p < sizeof plan / sizeof plan[0]; p++, round++) {
            if (round_run(round, plan[p]) != 0) return check_done();
            check_round(round, plan[p]);
        }
    }
    return check_done();
}
