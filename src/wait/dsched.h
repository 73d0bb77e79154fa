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
 * What it explores: interleavings of atomic steps and wait/wake calls,
 * under sequential consistency by default, or under a model of C11's weak
 * memory (opts.memory = DSCHED_WEAK, src/wait/dsched_memory.c), where a
 * load may return an older store than the newest unless an acquire, a
 * release or a fence forbids it: a missing ordering then shows as a stale
 * read, as it would on arm64.
 *
 *   static void body(int id, void *arg) { ... sqf_mutex_lock(&m); ... }
 *   struct dsched_result r = dsched_run(3, body, arg, seed, &opts);
 *   if (r.failed) printf("%s (seed %llu)\n", r.why, seed);
 */
#ifndef SQF_SRC_WAIT_DSCHED_H
#define SQF_SRC_WAIT_DSCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "../wait.h"

#define DSCHED_MAX_THREADS 8

struct dsched_opts {
    int pct_depth;     /* 0: uniformly random choice at every point; d >= 1: PCT with d */
    long max_steps;    /* a run longer than this fails (livelock or a lost wake-up) */
    int spurious_rate; /* per 1000 choices: a sleeper returns EINTR without a wake */
    int timeout_rate;  /* per 1000 choices: a sleeper with a deadline times out now;
                          and per 1000 wake-ups: one lands at the sleeper's deadline */
    int memory;        /* DSCHED_SC (0) or DSCHED_WEAK */
};

enum { DSCHED_SC = 0, DSCHED_WEAK = 1 };

/* Under DSCHED_WEAK, a store older than this (simulated ns) is seen by
 * every thread, as a real CPU's store buffer drains within a bounded time
 * (far less than this).  A case that checks a time against a deadline
 * allows this much: a deadline closer than it to a store may pass unseen. */
#define DSCHED_DRAIN_NS 20000

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

/* A simulated io_uring IORING_OP_FUTEX_WAIT request on one word: the
 * event-loop backend of the scheduler's build (src/loop/dsched.c) submits
 * one where the io_uring backend submits a real one, and completions come
 * back as the kernel's do: only when the owner reaps them.  A request sits
 * in the same FIFO queue as sleeping threads.  As in io_uring, it ends
 * exactly once: a wake that dequeues it completes it with 0 (and counts);
 * its linked time-out or a cancel that finds it still queued dequeues it
 * and completes it with -ECANCELED (no wake was spent on it); a word that
 * no longer holds its value at submission completes it with -EAGAIN.  The
 * time-out of a request with a deadline fires at a choice of the scheduler
 * (at the time-out rate) or when nothing else can run.  The fields are the
 * scheduler's; the owner provides the memory and user_data. */
struct dsched_req {
    sqf_word *word;
    bool queued;
    long seq; /* its place in the word's queue */
    sqf_deadline deadline;
    const void *owner; /* whose completions these are (a loop) */
    int thread;        /* the submitting thread, which reaps */
    bool done;         /* the completion is posted */
    int res;           /* the completion: 0, -ECANCELED, -EAGAIN */
    long done_seq;     /* completions are reaped in the order posted */
    uint64_t user_data;
    struct dsched_req *next;
};

/* Submit r for owner: sleep on w until a wake, the deadline or a cancel. */
void dsched_submit(struct dsched_req *r, const void *owner, uint64_t user_data,
                   const struct sqf_wait_word *w, sqf_deadline deadline);
/* IORING_OP_ASYNC_CANCEL: ends r with -ECANCELED if it is still queued. */
void dsched_cancel(struct dsched_req *r);
/* owner's earliest completion, or NULL if none. */
struct dsched_req *dsched_reap(const void *owner);
/* Block until owner has a completion to reap (at once if it has), as a
 * loop's thread blocks in epoll_wait on the loop's descriptor.  May return
 * spuriously; a run whose every thread awaits what never comes deadlocks. */
void dsched_await(const void *owner);

/* The library side (atomic.h, time.c): no-ops outside a run. */
void sqf_dsched_point(void);
int64_t sqf_dsched_now(void);
/* Have fn called at the start of every run, before any thread runs: for
 * library state that outlives a run (mutex.c's side table of wake-up
 * times), so that every run starts alike and a replay repeats its run.
 * At most 8 may be registered; a library file registers from a constructor
 * in the scheduler's build. */
void dsched_at_run_start(void (*fn)(void));

/* Between the scheduler and its memory model (dsched_memory.c). */
int dsched_self_(void);        /* the running thread's index, or -1 outside a run */
uint64_t dsched_random_(void); /* the next draw from the run's seed */
int64_t dsched_clock_(void);   /* the simulated clock, without a scheduling point */
_Noreturn void dsched_fail_(const char *fmt, const char *detail); /* ends the run, failed */
void dsched_memory_start_(int nthreads, bool weak); /* every thread sees memory as it is */
void dsched_memory_syscall_(void); /* a system call of the wait seam: a seq_cst fence */
/* The simulated kernel's read of a futex word: after its fence, any store
 * the calling thread may see, as a CPU's load after smp_mb() may miss a
 * store still in another CPU's store buffer. */
uint32_t dsched_memory_kernel_read_(sqf_word *w);
/* A request's completion publishes the completing thread's clock, and the
 * reap that takes it acquires it (the completion queue's release and
 * acquire); neither is a fence. */
void dsched_memory_publish_(uint32_t *clock);
void dsched_memory_acquire_(const uint32_t *clock);

#endif
