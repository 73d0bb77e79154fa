/* timed.c: n threads that run for a fixed time (C1, C2, O1, Q1).
 *
 * The threads are created first, and the window opens only once every one
 * of them is running: each counts itself in and then waits awake (yielding)
 * for the start flag, and the main thread raises that flag, and reads the
 * clock, when the count is full.  Releasing sleeping threads through a
 * barrier instead would time their wake-ups: a thread woken onto an idle
 * virtual CPU may wait milliseconds for the host to run it, which takes
 * more of a short window from one lone thread (the C1 baseline) than from
 * several, and so biases every ratio between thread counts.  The main
 * thread then sleeps (it must not take a CPU from the workers) for the
 * duration and raises the stop flag.
 * Each worker polls sb_timed_stop() between operations and discards the
 * operation it was in when the flag rose, so the work counted is the work
 * done inside the measured interval. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "sqbench.h"

atomic_int sb_timed_stop_flag;
int64_t sb_timed_cpu_ns;
static atomic_int ready, started;

/* CPU time (user + system) of the whole process so far. */
static int64_t cpu_ns(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return ((int64_t)u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000000000 +
           ((int64_t)u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1000;
}

void sb_timed_begin(void)
{
    atomic_fetch_add(&ready, 1);
    /* Yield rather than spin: with more workers than CPUs, the ones not yet
     * counted in need a CPU to get here. */
    while (!atomic_load_explicit(&started, memory_order_acquire))
        sched_yield();
}

int64_t sb_timed_run(int n, void *(*fn)(void *), void *args, size_t stride, double seconds,
                     const char *what)
{
    pthread_t *t = malloc(sizeof *t * (size_t)n);
    if (!t) sb_fail("%s: out of memory for %d threads", what, n);
    atomic_store(&sb_timed_stop_flag, 0);
    atomic_store(&ready, 0);
    atomic_store(&started, 0);
    for (int i = 0; i < n; i++) {
        int e = sb_spawn(&t[i], fn, (char *)args + (size_t)i * stride);
        if (e)
            sb_fail("%s: the system refused thread %d of %d (pthread_create: %s); try fewer "
                    "--threads",
                    what, i + 1, n, strerror(e));
    }
    while (atomic_load(&ready) < n)
        sched_yield();
    int64_t c0 = cpu_ns();
    int64_t t0 = sb_now_ns();
    atomic_store_explicit(&started, 1, memory_order_release);
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    atomic_store(&sb_timed_stop_flag, 1);
    int64_t t1 = sb_now_ns();
    sb_timed_cpu_ns = cpu_ns() - c0;
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    free(t);
    return t1 - t0;
}
