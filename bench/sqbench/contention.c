/* contention.c: lock contention, after Preshing (seeds/001; BENCHMARKS.md "C").
 *
 * Each thread alternates work outside the lock with work inside it.  Work
 * is counted in units; one unit is one step of the xoshiro256** generator
 * (a serial chain the CPU cannot overlap), calibrated in ns first.  Outside
 * work steps the thread's own generator; inside work steps one generator
 * shared by all threads, so the lock protects real data whose cache line
 * moves with the lock.  Both lengths are drawn from exponential
 * distributions (a Poisson process).
 *
 * C1 fixes the lock frequency at 15,000 acquisitions per second of
 * single-thread work and sweeps the hold fraction h; C2 runs 2 threads with
 * a short hold and sweeps the interval between locks.
 *
 * parallelism = units done per second / units per second of one thread
 *               running the same loop without a lock (measured once in every
 *               run; the median of those)
 * efficiency  = parallelism / parallelism of the same lock and thread count
 *               at h = 0 (factors out how many CPUs the machine really gives)
 * Beside them, the machine-repairman (M/M/1//N) model (stats.c). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "locks.h"
#include "sqbench.h"

#define C_MAX_LOCKS 8
#define C_MAX_X     16
#define C_MAX_RUNS  1000
#define C_FREQ      15000.0 /* C1: acquisitions per second of single-thread work */
#define C2_HOLD     16.0    /* C2: mean hold, in units */

/* --- the work unit ------------------------------------------------------------ */

struct rng {
    uint64_t s[4];
};

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* xoshiro256** (Blackman and Vigna): one step is one work unit. */
static inline uint64_t rng_next(struct rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

static void rng_seed(struct rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) { /* splitmix64 */
        uint64_t z = (seed += 0x9e3779b97f4a7c15u);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        r->s[i] = z ^ (z >> 31);
    }
}

static uint64_t c_sink; /* keeps the work from being optimised away */

static __attribute__((noinline)) void work(struct rng *r, long units)
{
    struct rng s = *r;
    for (long i = 0; i < units; i++)
        rng_next(&s);
    *r = s;
}

/* Exponential draws through a table of the inverse CDF at 4096 evenly
 * spaced quantiles: a couple of ns per draw rather than a log(). */
#define EXP_BITS 12
static double exp_table[1 << EXP_BITS];

static void exp_table_init(void)
{
    int n = 1 << EXP_BITS;
    for (int i = 0; i < n; i++)
        exp_table[i] = -log(1.0 - ((double)i + 0.5) / n);
}

static inline long draw(struct rng *r, double mean)
{
    return (long)(mean * exp_table[rng_next(r) >> (64 - EXP_BITS)] + 0.5);
}

/* ns per unit: the median of 5 timings of 2^24 units on this thread. */
static double calibrate_unit(void)
{
    struct rng r;
    rng_seed(&r, 1);
    double v[5];
    for (int i = 0; i < 5; i++) {
        int64_t t0 = sb_now_ns();
        work(&r, 1L << 24);
        v[i] = (double)(sb_now_ns() - t0) / (double)(1L << 24);
    }
    c_sink ^= r.s[0];
    return sb_summarize(v, 5).med;
}

/* --- one timed run ----------------------------------------------------------------- */

static struct rng shared_rng __attribute__((aligned(128)));

struct worker {
    const struct sb_lock_kind *k; /* NULL: no lock, all work on the own generator */
    void *lock;
    double out_mean, in_mean; /* units */
    uint64_t seed;
    long long units, acq; /* results */
} __attribute__((aligned(128)));

static void *worker(void *arg)
{
    struct worker *w = arg;
    struct rng own, lens;
    rng_seed(&own, w->seed);
    rng_seed(&lens, w->seed ^ 0x5bd1e995);
    void *node = w->k ? sb_lock_node(w->k) : NULL;
    long long units = 0, acq = 0;
    sb_timed_begin();
    while (!sb_timed_stop()) {
        long out = draw(&lens, w->out_mean), in = draw(&lens, w->in_mean);
        work(&own, out);
        if (w->k) {
            w->k->lock(w->lock, node);
            work(&shared_rng, in);
            w->k->unlock(w->lock, node);
        } else {
            work(&own, in);
        }
        if (sb_timed_stop()) break; /* ended after the interval: not counted */
        units += out + in;
        acq++;
    }
    free(node);
    w->units = units;
    w->acq = acq;
    __atomic_fetch_xor(&c_sink, own.s[0], __ATOMIC_RELAXED);
    return NULL;
}

/* Units per second and acquisitions per second of n threads. */
static void run_once(const struct sb_lock_kind *k, int n, double out_mean, double in_mean,
                     double seconds, const char *what, double *units_s, double *acq_s)
{
    static struct worker w[SB_MAX_LIST > 256 ? SB_MAX_LIST : 256];
    if (n > 256) sb_fail("%s: at most 256 threads", what);
    void *lock = k ? k->create() : NULL;
    if (k && !lock) sb_fail("%s: cannot create the lock", what);
    for (int i = 0; i < n; i++)
        w[i] = (struct worker){k, lock, out_mean, in_mean, (uint64_t)i * 7919 + 17, 0, 0};
    int64_t ns = sb_timed_run(n, worker, w, sizeof w[0], seconds, what);
    long long units = 0, acq = 0;
    for (int i = 0; i < n; i++) {
        units += w[i].units;
        acq += w[i].acq;
    }
    if (k) k->destroy(lock);
    *units_s = (double)units * 1e9 / (double)ns;
    *acq_s = (double)acq * 1e9 / (double)ns;
}

static double duration(double quick, double full)
{
    return sb.duration_s > 0 ? sb.duration_s : sb.quick ? quick : full;
}

static const char *lock_name(int j)
{
    return sb_locks[j].name;
}

/* Calibrated once per process, printed by whichever experiment comes first. */
static double unit_ns;

static void calibrate(const char *exp)
{
    if (unit_ns == 0) {
        exp_table_init();
        unit_ns = calibrate_unit();
        if (!(unit_ns > 0)) sb_fail("%s: cannot calibrate the work unit", exp);
    }
    sb_note("work unit: one xoshiro256** step = %.3f ns (median of 5 timings of 2^24 steps)",
            unit_ns);
    sb_record(exp, "calibration", 1, 0, 0, "unit_ns", unit_ns, "ok");
}

/* ==== C1 ======================================================================== */

static const int c1_default_threads[] = {1, 2, 4, 8};
#define C1_NH 11 /* h = 0, 10, ..., 100 % */

/* par[lock][thread count][h][run] */
static double c1_par[C_MAX_LOCKS][SB_MAX_LIST][C1_NH][C_MAX_RUNS];

static double med(const double *v)
{
    return sb_summarize(v, sb.runs).med;
}

int sb_run_c1(void)
{
    sb_heading("C1", "lock contention against hold fraction (Preshing's method)");
    calibrate("C1");
    int threads[SB_MAX_LIST];
    int nt = sb_list_or(sb.threads, sb.nthreads, c1_default_threads,
                        (int)(sizeof c1_default_threads / sizeof c1_default_threads[0]), threads);
    for (int t = 0; t < nt; t++)
        if (threads[t] > 256) sb_fail("C1: at most 256 threads (--threads)");
    double cycle = 1e9 / C_FREQ / unit_ns; /* units per acquisition */
    double secs = duration(0.03, 0.25);
    sb_note("lock frequency %.0f/s of single-thread work: %.0f units per cycle; %.3g s per run",
            C_FREQ, cycle, secs);

    double base[C_MAX_RUNS];
    sb_progress_begin("C1", (long)sb.runs * (1 + (long)nt * C1_NH * sb_nlocks));
    for (int run = 0; run < sb.runs; run++) {
        double u, a;
        run_once(NULL, 1, cycle, 0, secs, "C1 baseline", &u, &a);
        base[run] = u;
        sb_record("C1", "no-lock", 1, 0, run, "units_per_s", u, "ok");
        sb_progress_step();
        for (int hi = 0; hi < C1_NH; hi++) {
            double h = hi / 10.0;
            for (int t = 0; t < nt; t++) {
                for (int j = 0; j < sb_nlocks; j++) {
                    char what[64];
                    snprintf(what, sizeof what, "C1 %s N=%d h=%d%%", lock_name(j), threads[t],
                             hi * 10);
                    run_once(&sb_locks[j], threads[t], cycle * (1 - h), cycle * h, secs, what, &u,
                             &a);
                    c1_par[j][t][hi][run] = u; /* divided by the baseline below */
                    sb_progress_step();
                }
            }
        }
    }
    sb_progress_end();

    /* Parallelism against the median baseline: one disturbed baseline run
     * must not scale a whole run's points. */
    double b = sb_summarize(base, sb.runs).med;
    for (int j = 0; j < sb_nlocks; j++)
        for (int t = 0; t < nt; t++)
            for (int hi = 0; hi < C1_NH; hi++)
                for (int run = 0; run < sb.runs; run++) {
                    c1_par[j][t][hi][run] /= b;
                    sb_record("C1", lock_name(j), threads[t], hi * 10, run, "parallelism",
                              c1_par[j][t][hi][run], "ok");
                }

    /* Efficiency per run, against the same run's h = 0 point.  A run whose
     * h = 0 point did no work (a tiny --duration on a busy machine) has no
     * efficiency: recorded as skipped, not as an "ok" without a number. */
    for (int j = 0; j < sb_nlocks; j++)
        for (int t = 0; t < nt; t++)
            for (int hi = 0; hi < C1_NH; hi++)
                for (int run = 0; run < sb.runs; run++) {
                    double eff = c1_par[j][t][hi][run] / c1_par[j][t][0][run];
                    sb_record("C1", lock_name(j), threads[t], hi * 10, run, "efficiency", eff,
                              isfinite(eff) ? "ok" : "skipped");
                }
    for (int t = 0; t < nt; t++)
        for (int hi = 0; hi < C1_NH; hi++)
            sb_record("C1", "model", threads[t], hi * 10, 0, "model",
                      sb_model_speedup(threads[t], hi / 10.0), "ok");

    sb_note("one thread without a lock: %.4g units/s (median of %d runs)",
            sb_summarize(base, sb.runs).med, sb.runs);
    for (int t = 0; t < nt; t++) {
        int n = threads[t];
        printf("\n  N = %d threads: parallelism median [min-max] (efficiency), model beside\n", n);
        printf("  %4s %11s", "h", "model");
        for (int j = 0; j < sb_nlocks; j++)
            printf(" | %-22s", lock_name(j));
        printf("\n");
        for (int hi = 0; hi < C1_NH; hi++) {
            double m = sb_model_speedup(n, hi / 10.0);
            printf("  %3d%% %5.2f (%.2f)", hi * 10, m, m / n);
            for (int j = 0; j < sb_nlocks; j++) {
                struct sb_sum s = sb_summarize(c1_par[j][t][hi], sb.runs);
                double e = s.med / med(c1_par[j][t][0]);
                char cell[48];
                snprintf(cell, sizeof cell, "%.2f [%.2f-%.2f] (%.2f)", s.med, s.min, s.max, e);
                printf(" | %-22s", cell);
            }
            printf("\n");
        }
    }
    printf("  (parallelism: units/s over one thread without a lock; efficiency: over the same\n"
           "   lock and N at h = 0; model: M/M/1//N speedup (and speedup / N))\n");

    /* Targets.  sqf is the last lock; pthread and pthread-adaptive the
     * first two. */
    int sqf = sb_lock_index("sqf"), pt = sb_lock_index("pthread"),
        pta = sb_lock_index("pthread-adaptive");
    if (sqf < 0 || pt < 0 || pta < 0) {
        sb_note("C1: no verdicts: they need the locks sqf, pthread and pthread-adaptive");
        return 0;
    }
    for (int t = 0; t < nt; t++) {
        int n = threads[t];
        if (n == 2) {
            double worst = INFINITY, worst_pos = INFINITY;
            int at = 0, at_pos = 0;
            for (int hi = 0; hi < C1_NH; hi++) {
                double r = med(c1_par[sqf][t][hi]) / sb_model_speedup(n, hi / 10.0);
                if (r < worst) worst = r, at = hi;
                if (hi > 0 && r < worst_pos) worst_pos = r, at_pos = hi;
            }
            sb_verdict("C1", worst >= 0.95,
                       "sqf with 2 threads >= 0.95x the model at every h: worst %.3fx at h=%d%% "
                       "(worst with h > 0: %.2fx at h=%d%%)",
                       worst, at * 10, worst_pos, at_pos * 10);
            for (int j = 0; j < sb_nlocks; j++)
                sb_note("C1 N=2 h=50%%: %-16s %.2fx (model %.2fx)", lock_name(j),
                        med(c1_par[j][t][5]), sb_model_speedup(2, 0.5));
        }
        if (n >= 4) {
            double worst = INFINITY;
            int at = 0;
            for (int hi = 0; hi < C1_NH; hi++) {
                double best = fmax(med(c1_par[pt][t][hi]), med(c1_par[pta][t][hi]));
                double r = med(c1_par[sqf][t][hi]) / best;
                if (r < worst) worst = r, at = hi;
            }
            sb_verdict("C1", worst >= 1.0,
                       "sqf with %d threads >= the best pthread variant at every h: worst %.3fx "
                       "at h=%d%%",
                       n, worst, at * 10);
            if (n == 4)
                for (int j = 0; j < sb_nlocks; j++)
                    sb_note("C1 N=4 h=10%%: %-16s %.2fx", lock_name(j), med(c1_par[j][t][1]));
        }
    }
    return 0;
}

/* ==== C2 ======================================================================== */

/* Intervals between locks, half-decades from 10 ns to 31.6 us. */
static const double c2_interval_ns[] = {10, 31.6, 100, 316, 1000, 3162, 10000, 31623};
#define C2_NX ((int)(sizeof c2_interval_ns / sizeof c2_interval_ns[0]))
static double c2_mops[C_MAX_LOCKS][C2_NX][C_MAX_RUNS], c2_par[C_MAX_LOCKS][C2_NX][C_MAX_RUNS];

int sb_run_c2(void)
{
    sb_heading("C2", "lock contention against lock frequency (2 threads, short hold)");
    calibrate("C2");
    double secs = duration(0.05, 0.25);
    sb_note("hold: %.0f units (%.0f ns) on average; interval between locks swept; %.3g s per run",
            C2_HOLD, C2_HOLD * unit_ns, secs);
    double base[C_MAX_RUNS];
    sb_progress_begin("C2", (long)sb.runs * (1 + C2_NX * sb_nlocks));
    for (int run = 0; run < sb.runs; run++) {
        double u, a;
        run_once(NULL, 1, 1000, 0, secs, "C2 baseline", &u, &a);
        base[run] = u;
        sb_progress_step();
        for (int x = 0; x < C2_NX; x++) {
            for (int j = 0; j < sb_nlocks; j++) {
                char what[64];
                snprintf(what, sizeof what, "C2 %s interval %g ns", lock_name(j),
                         c2_interval_ns[x]);
                run_once(&sb_locks[j], 2, c2_interval_ns[x] / unit_ns, C2_HOLD, secs, what, &u, &a);
                c2_mops[j][x][run] = a / 1e6;
                c2_par[j][x][run] = u; /* divided by the baseline below */
                sb_record("C2", lock_name(j), 2, c2_interval_ns[x], run, "mops", a / 1e6, "ok");
                sb_progress_step();
            }
        }
    }
    sb_progress_end();
    double b = sb_summarize(base, sb.runs).med;
    for (int x = 0; x < C2_NX; x++)
        for (int j = 0; j < sb_nlocks; j++)
            for (int run = 0; run < sb.runs; run++) {
                c2_par[j][x][run] /= b;
                sb_record("C2", lock_name(j), 2, c2_interval_ns[x], run, "parallelism",
                          c2_par[j][x][run], "ok");
            }

    printf("  %9s", "interval");
    for (int j = 0; j < sb_nlocks; j++)
        printf(" | %-20s", lock_name(j));
    printf("\n");
    for (int x = 0; x < C2_NX; x++) {
        printf("  %6.0f ns", c2_interval_ns[x]);
        for (int j = 0; j < sb_nlocks; j++) {
            char cell[48];
            struct sb_sum s = sb_summarize(c2_mops[j][x], sb.runs);
            snprintf(cell, sizeof cell, "%.2f [%.2f-%.2f]", s.med, s.min, s.max);
            printf(" | %-20s", cell);
        }
        printf("\n");
    }
    printf("  (million acquisitions per second, both threads; median [min-max] of %d runs;\n"
           "   parallelism in the CSV)\n",
           sb.runs);

    int sqf = sb_lock_index("sqf"), pt = sb_lock_index("pthread"),
        pta = sb_lock_index("pthread-adaptive");
    if (sqf < 0 || pt < 0 || pta < 0) {
        sb_note("C2: no verdicts: they need the locks sqf, pthread and pthread-adaptive");
        return 0;
    }
    double worst = INFINITY;
    int at = 0;
    for (int x = 0; x < C2_NX; x++) {
        double best = fmax(med(c2_mops[pt][x]), med(c2_mops[pta][x]));
        double r = med(c2_mops[sqf][x]) / best;
        if (r < worst) worst = r, at = x;
    }
    sb_verdict("C2", worst >= 1.0,
               "sqf's throughput >= the best pthread variant at every interval: worst %.3fx at "
               "%g ns",
               worst, c2_interval_ns[at]);
    return 0;
}
