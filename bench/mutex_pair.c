/* mutex_pair: the cost of an uncontended lock+unlock pair (BENCHMARKS.md U1,
 * the lock part), sqf_mutex against glibc's pthread_mutex_t, side by side in
 * one run.
 *
 *     bench/mutex_pair [--runs N] [--iters N] [--target-ms MS] [--csv FILE]
 *
 * One thread locks and unlocks one lock in a loop; nothing else touches it.
 * Variants: sqf_mutex (the inline fast path, as a C caller gets it),
 * pthread_mutex_t (default type), pthread_mutex_t (PTHREAD_MUTEX_ADAPTIVE_NP),
 * and trylock+unlock for sqf_mutex and the default pthread_mutex_t.
 *
 * The process first starts and joins one thread.  glibc's pthread_mutex
 * skips the bus-locked instruction while a process has never had a second
 * thread (x86 lll_lock checks a "single threaded" flag), which no program
 * that needs a mutex sees; once a thread has existed it never does so again.
 *
 * Method: the runs are interleaved (run 1 of every variant, then run 2 of
 * every variant, ...) so that a noisy moment of the shared machine hits all
 * variants alike.  Each run times `iters` pairs with CLOCK_MONOTONIC; unless
 * --iters is given, each variant's count is calibrated so that one run takes
 * about --target-ms (100 ms).  Each figure is the median over the runs, with
 * min and max; each ratio is the ratio of the medians, with the range of the
 * per-run ratios (run i of one variant against run i of the other).
 *
 * The target: sqf_mutex's pair costs at most 0.7x pthread_mutex's
 * (default type).  The verdict line says honestly whether this run met it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <squarefree/mutex.h>

#include "machine.h"

#define TARGET_RATIO 0.7
#define MAX_RUNS     1000

/* A compiler barrier: the compiler must assume memory changed, so it can
 * neither merge nor drop the lock operations around it. */
#define BARRIER() __asm__ __volatile__("" ::: "memory")

static sqf_mutex sqf_mu = SQF_MUTEX_INIT;
static pthread_mutex_t pt_default = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pt_adaptive;

/* Any non-zero result of a lock call lands here; checked after each run. */
static volatile int failures;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One function per variant, so that each loop is compiled with its lock
 * calls inlined as a caller would have them (no function pointer). */
#define PAIR_LOOP(name, lock_expr, unlock_expr)                                                    \
    static __attribute__((noinline)) int64_t name(long iters)                                      \
    {                                                                                              \
        int bad = 0;                                                                               \
        int64_t t0 = now_ns();                                                                     \
        for (long i = 0; i < iters; i++) {                                                         \
            bad |= (lock_expr);                                                                    \
            BARRIER();                                                                             \
            bad |= (unlock_expr);                                                                  \
            BARRIER();                                                                             \
        }                                                                                          \
        int64_t t1 = now_ns();                                                                     \
        if (bad) failures = 1;                                                                     \
        return t1 - t0;                                                                            \
    }

PAIR_LOOP(run_sqf_lock, sqf_mutex_lock(&sqf_mu), sqf_mutex_unlock(&sqf_mu))
PAIR_LOOP(run_pt_lock, pthread_mutex_lock(&pt_default), pthread_mutex_unlock(&pt_default))
PAIR_LOOP(run_pta_lock, pthread_mutex_lock(&pt_adaptive), pthread_mutex_unlock(&pt_adaptive))
PAIR_LOOP(run_sqf_try, sqf_mutex_trylock(&sqf_mu), sqf_mutex_unlock(&sqf_mu))
PAIR_LOOP(run_pt_try, pthread_mutex_trylock(&pt_default), pthread_mutex_unlock(&pt_default))

struct variant {
    const char *name;
    int64_t (*run)(long iters);
    long iters;
    double ns[MAX_RUNS]; /* ns per pair, one per run */
    double median, min, max;
};

static struct variant variants[] = {
    {"sqf_mutex lock+unlock", run_sqf_lock, 0, {0}, 0, 0, 0},
    {"pthread_mutex lock+unlock (default)", run_pt_lock, 0, {0}, 0, 0, 0},
    {"pthread_mutex lock+unlock (ADAPTIVE_NP)", run_pta_lock, 0, {0}, 0, 0, 0},
    {"sqf_mutex trylock+unlock", run_sqf_try, 0, {0}, 0, 0, 0},
    {"pthread_mutex trylock+unlock (default)", run_pt_try, 0, {0}, 0, 0, 0},
};
enum { SQF_LOCK, PT_LOCK, PTA_LOCK, SQF_TRY, PT_TRY, NVARIANTS };

static void *idle_thread(void *arg)
{
    return arg;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median, min and max of v[0..n-1] (n >= 1). */
static void stats(const double *v, int n, double *median, double *min, double *max)
{
    double s[MAX_RUNS];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    *median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    *min = s[0];
    *max = s[n - 1];
}

/* The pair count for which one run of v takes about target_ns. */
static long calibrate(struct variant *v, int64_t target_ns)
{
    long iters = 1000;
    for (;;) {
        int64_t t = v->run(iters);
        if (t >= 10000000 || iters >= (1L << 40)) { /* 10 ms: enough to scale from */
            double scaled = (double)iters * (double)target_ns / (double)(t > 0 ? t : 1);
            return scaled < 1000 ? 1000 : (long)scaled;
        }
        iters *= 2;
    }
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: mutex_pair [--runs N] [--iters N] [--target-ms MS] [--csv FILE]\n"
            "  --runs N        runs per variant, 5..%d (default 7)\n"
            "  --iters N       pairs per run (default: calibrated to --target-ms)\n"
            "  --target-ms MS  length of one run when calibrating (default 100)\n"
            "  --csv FILE      write every run's raw numbers to FILE\n",
            MAX_RUNS);
}

/* Parse a positive integer option value; exits with a one-line error. */
static long parse_count(const char *opt, const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "mutex_pair: %s needs a number from %ld to %ld, got '%s'\n", opt, lo, hi,
                s ? s : "(nothing)");
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    int runs = 7;
    long fixed_iters = 0;
    long target_ms = 100;
    const char *csv_path = NULL;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--runs")) {
            runs = (int)parse_count(a, val, 5, MAX_RUNS);
            i++;
        } else if (!strcmp(a, "--iters")) {
            fixed_iters = parse_count(a, val, 1, 1L << 40);
            i++;
        } else if (!strcmp(a, "--target-ms")) {
            target_ms = parse_count(a, val, 1, 100000);
            i++;
        } else if (!strcmp(a, "--csv")) {
            if (!val) {
                fprintf(stderr, "mutex_pair: --csv needs a file name\n");
                return 2;
            }
            csv_path = val;
            i++;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "mutex_pair: unknown option '%s' (try --help)\n", a);
            return 2;
        }
    }

    FILE *csv = NULL;
    if (csv_path) {
        csv = fopen(csv_path, "w");
        if (!csv) {
            fprintf(stderr, "mutex_pair: cannot write %s: %s\n", csv_path, strerror(errno));
            return 1;
        }
    }

    /* Make the process multi-threaded for good (see the top of this file). */
    pthread_t helper;
    if (pthread_create(&helper, NULL, idle_thread, NULL) != 0 || pthread_join(helper, NULL) != 0) {
        fprintf(stderr, "mutex_pair: cannot start a thread\n");
        return 1;
    }

    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&pt_adaptive, &attr);
    pthread_mutexattr_destroy(&attr);

    char cpu[256];
    struct utsname un;
    cpu_model(cpu, sizeof cpu);
    if (uname(&un) != 0) snprintf(un.release, sizeof un.release, "unknown");

    printf("mutex_pair: uncontended lock+unlock pair, one thread (BENCHMARKS.md U1, subset)\n");
    printf("cpu:       %s\n", cpu);
    printf("cpus:      %d\n", ncpus());
    printf("kernel:    %s %s\n", un.sysname, un.release);
    printf("compiler:  %s\n", compiler());
    printf("sqf path:  %s\n", SQF_INLINE_FAST_PATH ? "inline fast path" : "out-of-line calls");
#if !defined(__OPTIMIZE__)
    printf("WARNING:   built without optimisation; numbers are not representative\n");
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    printf("WARNING:   built with a sanitizer; numbers are not representative\n");
#endif
    if (fixed_iters)
        printf("method:    %d interleaved runs per variant, %ld pairs per run; CLOCK_MONOTONIC\n",
               runs, fixed_iters);
    else
        printf("method:    %d interleaved runs per variant, ~%ld ms per run; CLOCK_MONOTONIC\n",
               runs, target_ms);
    printf("process:   multi-threaded (one thread started and joined first)\n\n");
    fflush(stdout);

    for (int v = 0; v < NVARIANTS; v++) {
        variants[v].run(fixed_iters ? (fixed_iters < 100000 ? fixed_iters : 100000) : 100000);
        variants[v].iters =
            fixed_iters ? fixed_iters : calibrate(&variants[v], target_ms * 1000000);
    }

    if (csv) fprintf(csv, "run,variant,pairs,total_ns,ns_per_pair\n");
    for (int r = 0; r < runs; r++) {
        for (int v = 0; v < NVARIANTS; v++) {
            struct variant *x = &variants[v];
            int64_t t = x->run(x->iters);
            x->ns[r] = (double)t / (double)x->iters;
            if (csv)
                fprintf(csv, "%d,\"%s\",%ld,%lld,%.4f\n", r + 1, x->name, x->iters, (long long)t,
                        x->ns[r]);
        }
    }
    if (failures) {
        fprintf(stderr, "mutex_pair: a lock, trylock or unlock call failed; numbers discarded\n");
        return 1;
    }
    if (csv && fclose(csv) != 0) {
        fprintf(stderr, "mutex_pair: error writing %s\n", csv_path);
        return 1;
    }

    printf("%-42s %12s %10s %10s %10s\n", "variant", "pairs/run", "median ns", "min ns", "max ns");
    for (int v = 0; v < NVARIANTS; v++) {
        struct variant *x = &variants[v];
        stats(x->ns, runs, &x->median, &x->min, &x->max);
        printf("%-42s %12ld %10.2f %10.2f %10.2f\n", x->name, x->iters, x->median, x->min, x->max);
    }

    static const struct {
        int num, den;
        const char *what;
    } ratios[] = {
        {SQF_LOCK, PT_LOCK, "sqf/pthread lock+unlock (default)"},
        {SQF_LOCK, PTA_LOCK, "sqf/pthread lock+unlock (ADAPTIVE_NP)"},
        {SQF_TRY, PT_TRY, "sqf/pthread trylock+unlock (default)"},
    };
    printf("\n%-42s %12s %21s\n", "ratio (of medians)", "ratio", "per-run range");
    double main_ratio = 0;
    for (size_t i = 0; i < sizeof ratios / sizeof ratios[0]; i++) {
        const struct variant *n = &variants[ratios[i].num], *d = &variants[ratios[i].den];
        double per_run[MAX_RUNS], med, lo, hi;
        for (int r = 0; r < runs; r++)
            per_run[r] = n->ns[r] / d->ns[r];
        stats(per_run, runs, &med, &lo, &hi);
        double ratio = n->median / d->median;
        if (i == 0) main_ratio = ratio;
        printf("%-42s %11.2fx %9.2fx .. %6.2fx\n", ratios[i].what, ratio, lo, hi);
    }
    printf("\ntarget: sqf_mutex lock+unlock <= %.2fx pthread_mutex (default): %.2fx, target %s\n",
           TARGET_RATIO, main_ratio, main_ratio <= TARGET_RATIO ? "met" : "missed");
    if (csv_path) printf("raw runs written to %s\n", csv_path);
    return 0;
}
