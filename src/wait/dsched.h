/* dsched.h: the deterministic scheduler, a test-only build of the seams.
 *
 * Built with SQF_DSCHED (the CMake target squarefree_dsched, tests only),
 * every function of src/atomic.h first calls sqf_dsched_point(), sqf_now()
 * reads a simulated clock (and is a scheduling point too), and the wait seam is src/wait/dsched.c,
 * which simulates a futex no kinder than Linux's: FIFO queues per address, requeue, multi-word
 * waits queued word by word, a sleeper woken through several words before it runs (every wake
 * counts it; it reports the highest index), a wake beating a time-out, and wake-ups that are
 * spurious (EINTR) or time-outs that fire whenever the schedule says so. Threads run one at a time;
 * at every point the scheduler chooses who runs next, from a seed: either uniformly at random, or
 * by PCT (random thread priorities, lowered at d-1 random steps).  A run is a function of its seed,
 * so a failing seed replays exactly.
 *
 * What it explores: interleavings of atomic steps and wait/wake calls under
 * sequential consistency.  What it does not: weaker memory orderings (each
 * step runs as a real atomic on one thread at a time, so a missing acquire
 * or release is invisible here; TSan covers those).
 *
 *   static void body(int id, void *arg) { ... sqf_mutex_lock(&m); ... }
 *   struct dsched_result r = dsched_run(3, body, arg, seed, &opts);
 *   if (r.failed) printf("%s (seed %llu)\n", r.why, seed);
 */
#ifndef SQF_SRC_WAIT_DSCHED_H
#define SQF_SRC_WAIT_DSCHED_H

#include <stdint.h>

#define DSCHED_MAX_THREADS 8

struct dsched_opts {
    int pct_depth;     /* 0: uniformly random choice at every point; d >= 1: PCT with d */
    long max_steps;    /* a run longer than this fails (livelock or a lost wake-up) */
    int spurious_rate; /* per 1000 choices: a sleeper returns EINTR without a wake */
    int timeout_rate;  /* per 1000 choices: a sleeper with a deadline times out now;
                          and per 1000 wake-ups: one lands at the sleeper's deadline */
};

struct dsched_result {
    int failed;    /* 0: every thread returned */
    char why[160]; /* "deadlock: threads 0 2 asleep for ever", ... */
    long steps;    /* scheduling points in the run */
};

/* Run fn(id, arg) on n threads (1..DSCHED_MAX_THREADS) under the scheduler
 * until all return.  Not reentrant: one run at a time per process.  On a
 * deadlock or step overrun the run's threads are abandoned, parked for
 * ever, and the process should report and exit. */
struct dsched_result dsched_run(int n, void (*fn)(int id, void *arg), void *arg, uint64_t seed,
                                const struct dsched_opts *opts);

/* A scheduling point test code may add (say, inside a critical section). */
void dsched_yield(void);

/* The library side (atomic.h, time.c): no-ops outside a run. */
void sqf_dsched_point(void);
int64_t sqf_dsched_now(void);

#endif
