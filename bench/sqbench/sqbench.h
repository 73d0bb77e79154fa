/* sqbench.h: what every sqbench experiment shares.
 *
 * sqbench reproduces the two seed documents (../shared/seeds, BENCHMARKS.md):
 * the square experiments S1-S5, lock contention C1-C2, uncontended costs U1,
 * wake-all latency W1 and oversubscription O1, each running pthreads, the
 * peers and squarefree side by side in one run.
 *
 * An experiment is one function in the registry (main.c).  It reads the
 * options in `sb`, records every raw run with sb_record() (written to
 * --csv/--json at the end, atomically), prints a table shaped like the
 * seed's and one verdict line per claim with sb_verdict().  Fatal problems
 * (a thread the system refuses, ...) go through sb_fail(): one line on
 * stderr, exit status 2, no output file written. */
#ifndef SQBENCH_H
#define SQBENCH_H

#include <stdint.h>
#include <stdio.h>

#define SB_MAX_LIST 32
/* The number of elements of an array. */
#define SB_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Options; main.c fills them from the command line before any experiment
 * runs.  A list with count 0 means "the experiment's default". */
struct sb_opts {
    int quick;          /* --quick: the short version, under 3 min for all */
    int runs;           /* --runs N (>= 5): runs per data point */
    double limit_s;     /* --limit SEC: time limit of one run of one point */
    double duration_s;  /* --duration SEC: length of a timed run (C1, C2, O1); 0 = default */
    int n[SB_MAX_LIST]; /* --n LIST: thread counts of the S experiments, W1's k */
    int nn;
    int threads[SB_MAX_LIST]; /* --threads LIST: thread counts of C1 and O1 */
    int nthreads;
    const char *csv_dir;   /* --csv DIR: raw runs, CSV, plus plots */
    const char *json_path; /* --json FILE: raw runs as JSON */
    int plots;             /* draw plots next to the CSV (default on with --csv) */
    int callgrind;         /* U1: also count instructions with valgrind (default on) */
    const char *self;      /* path of this executable (U1 re-runs it under valgrind) */
    int cpus;              /* --cpus K: pinned to K of the CPUs allowed (0: all) */
    int sched_rr;          /* --sched rr: everything runs under SCHED_RR */
};
extern struct sb_opts sb;

/* --- statistics (stats.c; no other dependency, unit-tested) --------------- */
struct sb_sum {
    double med, min, max;
    int n; /* values summarised (NaNs are skipped) */
};
/* Median, min and max of the finite values of v[0..n). */
struct sb_sum sb_summarize(const double *v, int n);
/* Least-squares slope of log(y) over log(x) over the points with finite,
 * positive x and y; NaN with fewer than two such points. */
double sb_exponent(const double *x, const double *y, int n);
/* Machine-repairman (M/M/1//N) model: the speedup of N threads that hold one
 * lock a fraction h of their work, U/h capped at N where
 * U = 1 - 1/sum_{j=0..N} N!/(N-j)! rho^j, rho = h/(1-h).  h = 0 gives N. */
double sb_model_speedup(int N, double h);
/* Jain's fairness index (sum x)^2 / (n sum x^2); 1 = all equal, 1/n = one
 * thread got everything.  NaN if n == 0 or all x are 0. */
double sb_jain(const double *x, int n);
/* The ratios num[i] / den[i] of n paired runs (NaN where den[i] is not
 * positive), summarised: a comparison between two variants made within
 * each round, so that a change in the machine's speed between rounds
 * cancels. */
struct sb_sum sb_paired_ratio(const double *num, const double *den, int n);
/* Parse a comma-separated list of integers in [lo, hi] into out[max]; returns
 * the count, or -1 (and a message in err) if malformed. */
int sb_parse_list(const char *s, int *out, int max, long lo, long hi, char *err, size_t errlen);
/* The list the user gave (ngiven > 0) or else the experiment's default,
 * copied into out[SB_MAX_LIST]; returns its length. */
int sb_list_or(const int *given, int ngiven, const int *dflt, int ndflt, int *out);

/* --- recording and output (output.c) ---------------------------------------- */
/* One raw measurement.  exp: "S2"; variant: "sqf-combine"; threads: threads
 * used; x: the swept parameter (n, k, h in %, interval in ns...); run: 0-based
 * run number; metric: "seconds", "parallelism", "ns_per_op", ...; status:
 * "ok", "limit" (the run hit the time limit; value is the time it took),
 * "skipped" (not run because a smaller point of the same variant hit it) or
 * "invalid" (its point failed a validity guard: see sb_invalid). */
void sb_record(const char *exp, const char *variant, int threads, double x, int run,
               const char *metric, double value, const char *status);
/* A claim and whether this run met it; printed at once, repeated in the
 * summary at the end of `report`. */
void sb_verdict(const char *exp, int met, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A plain remark in the report (not a claim). */
void sb_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* One line on stderr, exit status 2; no output file is written. */
/* The scheduling policy and CPUs this process runs on, for the report
 * ("SCHED_OTHER, 2 CPUs: 0-1"); whether the policy is SCHED_RR. */
void sb_placement(char *buf, size_t n);
int sb_sched_rr(void);
/* CPUs this process may run on (its affinity mask). */
int sb_cpus_allowed(void);

/* Validity guards (BENCHMARKS.md "Validity"): an experiment that finds a
 * figure that cannot be true calls this once per such point, with what it
 * found ("C1 sqf N=2 h=0%: parallelism 2.99 > 2 CPUs").  The point must be
 * printed as invalid and left out of verdicts and plots (recorded with
 * status "invalid"); the summary counts these and says the machine was too
 * noisy. */
void sb_invalid(const char *exp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

_Noreturn void sb_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Experiment heading. */
void sb_heading(const char *exp, const char *title);
/* Progress with ETA on stderr: begin with the number of steps and the id,
 * step after each; end clears the line.  Quiet for runs under ~2 s. */
void sb_progress_begin(const char *exp, long steps);
void sb_progress_step(void);
void sb_progress_end(void);

/* Called by main.c: check the output folder is writable before any
 * experiment runs; write every record at the end (path of the CSV back). */
void sb_output_prepare(void);
void sb_output_finish(char *csv_path, size_t len);
void sb_print_verdicts(void);
extern const char *const sb_csv_columns;

/* "0.123" style seconds, "> 10 (limit)" style markers for tables. */
const char *sb_fmt_sum(char *buf, size_t len, struct sb_sum s, double scale, int prec);

/* --- time and threads -------------------------------------------------------- */
int64_t sb_now_ns(void);
/* pthread_create with a small stack (64 KiB: 1600 threads need no more than
 * 100 MiB of address space).  Returns 0 or the error number. */
#include <pthread.h>
int sb_spawn(pthread_t *t, void *(*fn)(void *), void *arg);
/* Pin nothing, but yield: the seed's "work" (time.sleep(0)). */
void sb_work(void);

/* Timed runs (timed.c, C1, C2, O1): start n threads on fn(args + i*stride),
 * release them together, sleep `seconds`, raise the stop flag and join them;
 * returns the ns between release and stop.  Each worker calls
 * sb_timed_begin() first and stops once sb_timed_stop() is true, counting
 * only operations that ended before it saw the flag. */
#include <stdatomic.h>
extern atomic_int sb_timed_stop_flag;
static inline int sb_timed_stop(void)
{
    return atomic_load_explicit(&sb_timed_stop_flag, memory_order_relaxed);
}
void sb_timed_begin(void);
int64_t sb_timed_run(int n, void *(*fn)(void *), void *args, size_t stride, double seconds,
                     const char *what);
/* CPU time (user + system, whole process) spent between the release and the
 * stop flag of the last sb_timed_run. */
extern int64_t sb_timed_cpu_ns;

/* --- the experiments ----------------------------------------------------------- */
/* Each returns 0 on success (targets missed are still success). */
int sb_run_s1(void);
int sb_run_s2(void);
int sb_run_s3(void);
int sb_run_s4(void);
int sb_run_s5(void);
int sb_run_s6(void);
int sb_run_s7(void);
int sb_run_c1(void);
int sb_run_c2(void);
int sb_run_u1(void);
int sb_run_w1(void);
int sb_run_w2(void);
int sb_run_w2c(void);
int sb_run_o1(void);
int sb_run_q1(void);
int sb_run_q2(void);
/* U1's inner loop under valgrind: `sqbench u1-inner VARIANT ITER`. */
int sb_u1_inner(int argc, char **argv);

#endif
