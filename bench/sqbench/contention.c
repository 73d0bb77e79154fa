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
                     double seconds, const char *what, double *units_s, double *acq_s,
                     double *cpu_s)
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
    /* CPU per second of the window: the acquisitions' and units' CPU cost
     * is this divided by acq_s or units_s. */
    *cpu_s = (double)sb_timed_cpu_ns / (double)ns;
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
static const int c1_quick_threads[] = {1, 2, 8}; /* --quick */
#define C1_NH 11                                 /* h = 0, 10, ..., 100 % */

/* Per lock, thread count, h and run: parallelism, and useful work per
 * CPU-second over a lone thread's (1 = every CPU-second spent did a lone
 * thread's work; spinning and sleeping overheads lower it). */
static double c1_par[C_MAX_LOCKS][SB_MAX_LIST][C1_NH][C_MAX_RUNS];
static double c1_cpu[C_MAX_LOCKS][SB_MAX_LIST][C1_NH][C_MAX_RUNS];
static char c1_bad[C_MAX_LOCKS][SB_MAX_LIST][C1_NH];   /* the point failed a validity guard */
static double c1_free[SB_MAX_LIST][C1_NH][C_MAX_RUNS]; /* N threads, no lock (N > 1) */

static double med(const double *v)
{
    return sb_summarize(v, sb.runs).med;
}

/* The peers sqf is judged against in C1 and C2: every lock that sleeps
 * (spinlocks, which burn a CPU per waiter and collapse when oversubscribed,
 * are shown but are another class). */
static int is_peer(int j)
{
    return !sb_locks[j].spins && strcmp(sb_locks[j].name, "sqf") != 0;
}

/* Validity guards: parallelism cannot exceed the threads or the CPUs by
 * more than 5 %, and one thread at h = 0 does what the lone thread without
 * a lock does, within 10 %.  A point fails when every one of its runs lies
 * beyond the bound: that is the mark of a bias (a baseline that does not
 * measure what the point is divided by), which shifts every run, while
 * this machine's noise (its speed dips for tens of milliseconds at a time)
 * moves single short runs either way, and such a point's range shows it. */
static void c1_guard(int j, int t, int n, int hi, int cpus)
{
    struct sb_sum s = sb_summarize(c1_par[j][t][hi], sb.runs);
    double cap = n < cpus ? n : cpus;
    /* With more than one thread the ceiling is also what the same N threads
     * did without a lock in the same blocks: no lock can beat that.  It is
     * the thread or CPU count unless the machine gave several threads more
     * speed each than one thread alone, which this virtual machine
     * sometimes does (the no-lock column of the table shows it). */
    double free = n > 1 ? med(c1_free[t][hi]) : 1;
    if (s.min > 1.05 * cap && s.min > 1.05 * free)
        sb_invalid("C1",
                   "%s N=%d h=%d%%: parallelism %.2f [%.2f-%.2f], every run > %.0f (%s) and > "
                   "%.2f (no lock)",
                   lock_name(j), n, hi * 10, s.med, s.min, s.max, cap,
                   n < cpus ? "threads" : "CPUs", free);
    else if (n == 1 && hi == 0 && (s.max < 0.9 || s.min > 1.1))
        sb_invalid("C1",
                   "%s N=1 h=0%%: parallelism %.2f [%.2f-%.2f], every run outside 0.9-1.1 of a "
                   "lone thread",
                   lock_name(j), s.med, s.min, s.max);
    else
        return;
    c1_bad[j][t][hi] = 1;
}

#define C1_BASES 3 /* baselines in a block without N = 1 */

/* The hold fractions measured, as indices hi (h = hi * 10 %): every one, or
 * with --quick five, among them 50 % (the seed's own figure). */
static int c1_his[C1_NH], c1_nh;
static int c1_measured(int hi)
{
    for (int k = 0; k < c1_nh; k++)
        if (c1_his[k] == hi) return 1;
    return 0;
}

/* The measured h indices, in order: C1_FOR_H(hi) body. */
#define C1_FOR_H(hi)                                                                               \
    for (int hi = 0; hi < C1_NH; hi++)                                                             \
        if (c1_measured(hi))

/* Every run of every point, in blocks: block b = run * c1_nh + k runs every
 * lock at every N for h = c1_his[k], the same N threads without a lock
 * (c1_free, for N > 1: the ceiling the validity guard uses), and baselines
 * (one thread, no lock); then each point's parallelism and work per
 * CPU-second.
 * - Within a block the locks take turns at going first: what the machine
 *   gives a run depends on what ran just before it.
 * - One thread with a lock (N = 1) must do what a lone thread does, and
 *   the validity guard checks that within 5 %, finer than this machine's
 *   speed changes from one short run to the next.  So every N = 1 run has a
 *   baseline just before and just after it and is divided by the faster of
 *   the two: the machine's speed only ever dips below its own (a neighbour
 *   takes the core for tens of milliseconds), so the faster bracket is the
 *   one the dip missed.
 * - The other points are divided by the median of their block's
 *   baselines.  The machine's speed drifts from one second to the next, so
 *   a baseline from another block would be off by that drift.  The
 *   baselines run with the smallest N: a lone thread runs measurably slower
 *   just after many threads have kept both CPUs busy, so a baseline
 *   measured there would be too low and every point over it too high.
 *   Without N = 1 a block has C1_BASES baselines in a row.
 * Returns the baselines' summary. */
static struct sb_sum c1_measure(const int *threads, int nt, double cycle, double secs)
{
    long nblocks = (long)sb.runs * c1_nh;
    int lightest = 0;
    for (int t = 1; t < nt; t++)
        if (threads[t] < threads[lightest]) lightest = t;
    int paired = threads[lightest] == 1, per_block = paired ? sb_nlocks + 1 : C1_BASES;
    double *base = malloc(sizeof *base * (size_t)nblocks),
           *all = malloc(sizeof *all * (size_t)(nblocks * per_block));
    if (!base || !all) sb_fail("C1: out of memory");
    memset(c1_bad, 0, sizeof c1_bad);
    long nmore = 0;
    for (int t = 0; t < nt; t++)
        nmore += threads[t] > 1;
    sb_progress_begin("C1", nblocks * (per_block + (long)nt * sb_nlocks + nmore));
    double u, a, c;
    long nall = 0;
    for (int run = 0; run < sb.runs; run++)
        for (int k = 0; k < c1_nh; k++) {
            long b = (long)run * c1_nh + k;
            int hi = c1_his[k];
            double h = hi / 10.0, mine[C_MAX_LOCKS + 1];
            int nmine = 0;
            for (int t = 0; t < nt; t++) {
                int pair = paired && t == lightest;
                if (pair) {
                    run_once(NULL, 1, cycle, 0, secs, "C1 baseline", &u, &a, &c);
                    mine[nmine++] = u;
                    sb_progress_step();
                }
                /* Every lock, and at N > 1 the same threads without a lock
                 * (slot sb_nlocks), each taking its turn at going first. */
                int nslots = sb_nlocks + (threads[t] > 1);
                for (int o = 0; o < nslots; o++) {
                    int j = (int)((o + b + t) % nslots);
                    if (j == sb_nlocks) {
                        run_once(NULL, threads[t], cycle, 0, secs, "C1 no lock", &u, &a, &c);
                        c1_free[t][hi][run] = u;
                        sb_progress_step();
                        continue;
                    }
                    char what[64];
                    snprintf(what, sizeof what, "C1 %s N=%d h=%d%%", lock_name(j), threads[t],
                             hi * 10);
                    run_once(&sb_locks[j], threads[t], cycle * (1 - h), cycle * h, secs, what, &u,
                             &a, &c);
                    c1_par[j][t][hi][run] = u; /* units/s: divided by a baseline below */
                    c1_cpu[j][t][hi][run] = c > 0 ? u / c : NAN; /* units per CPU-second */
                    sb_progress_step();
                    if (pair) {
                        run_once(NULL, 1, cycle, 0, secs, "C1 baseline", &u, &a, &c);
                        double b2 = fmax(mine[nmine - 1], u);
                        mine[nmine++] = u;
                        c1_par[j][t][hi][run] /= b2;
                        c1_cpu[j][t][hi][run] /= b2;
                        sb_progress_step();
                    }
                }
                for (int m = 0; t == lightest && !pair && m < C1_BASES; m++) {
                    run_once(NULL, 1, cycle, 0, secs, "C1 baseline", &u, &a, &c);
                    mine[nmine++] = u;
                    sb_progress_step();
                }
            }
            base[b] = sb_summarize(mine, nmine).med;
            for (int m = 0; m < nmine; m++) {
                sb_record("C1", "no-lock", 1, hi * 10, run, "units_per_s", mine[m], "ok");
                all[nall++] = mine[m];
            }
        }
    sb_progress_end();

    for (int run = 0; run < sb.runs; run++)
        for (int k = 0; k < c1_nh; k++) {
            long b = (long)run * c1_nh + k;
            int hi = c1_his[k];
            double lb = base[b];
            for (int t = 0; t < nt; t++) {
                c1_free[t][hi][run] /= lb;
                if (paired && t == lightest) continue; /* divided already */
                for (int j = 0; j < sb_nlocks; j++) {
                    c1_par[j][t][hi][run] /= lb;
                    c1_cpu[j][t][hi][run] /= lb;
                }
            }
        }
    struct sb_sum bs = sb_summarize(all, (int)nall);
    free(base);
    free(all);
    return bs;
}

/* The validity guards, then every run recorded with its status (a point
 * that failed a guard is recorded as invalid). */
static void c1_validate(const int *threads, int nt, int cpus)
{
    for (int t = 0; t < nt; t++)
        C1_FOR_H(hi)
    for (int j = 0; j < sb_nlocks; j++)
        c1_guard(j, t, threads[t], hi, cpus);

    /* Efficiency per run, against the same run's h = 0 point.  A run whose
     * h = 0 point did no work (a tiny --duration on a busy machine) has no
     * efficiency: recorded as skipped, not as an "ok" without a number. */
    for (int j = 0; j < sb_nlocks; j++)
        for (int t = 0; t < nt; t++)
            C1_FOR_H(hi)
            {
                const char *st = c1_bad[j][t][hi] ? "invalid" : "ok";
                for (int run = 0; run < sb.runs; run++) {
                    sb_record("C1", lock_name(j), threads[t], hi * 10, run, "parallelism",
                              c1_par[j][t][hi][run], st);
                    sb_record("C1", lock_name(j), threads[t], hi * 10, run, "work_per_cpu_s",
                              c1_cpu[j][t][hi][run], st);
                    double eff = c1_par[j][t][hi][run] / c1_par[j][t][0][run];
                    sb_record("C1", lock_name(j), threads[t], hi * 10, run, "efficiency", eff,
                              c1_bad[j][t][hi] || c1_bad[j][t][0] ? "invalid"
                              : isfinite(eff)                     ? "ok"
                                                                  : "skipped");
                }
            }
    for (int t = 0; t < nt; t++)
        C1_FOR_H(hi)
        {
            sb_record("C1", "model", threads[t], hi * 10, 0, "model",
                      sb_model_speedup(threads[t], hi / 10.0), "ok");
            for (int run = 0; threads[t] > 1 && run < sb.runs; run++)
                sb_record("C1", "no-lock", threads[t], hi * 10, run, "parallelism",
                          c1_free[t][hi][run], "ok");
        }
}

/* Per N: parallelism against the model, and work per CPU-second. */
static void c1_print(const int *threads, int nt, struct sb_sum bs)
{
    sb_note("one thread without a lock: %.4g units/s (median [min-max] %.4g-%.4g of %ld "
            "baselines)",
            bs.med, bs.min, bs.max, (long)bs.n);
    for (int t = 0; t < nt; t++) {
        int n = threads[t];
        printf("\n  N = %d threads: parallelism median [min-max] (efficiency), model beside\n", n);
        printf("  %4s %11s %7s", "h", "model", "no lock");
        for (int j = 0; j < sb_nlocks; j++)
            printf(" | %-22s", lock_name(j));
        printf("\n");
        C1_FOR_H(hi)
        {
            double m = sb_model_speedup(n, hi / 10.0);
            printf("  %3d%% %5.2f (%.2f) %7.2f", hi * 10, m, m / n,
                   n > 1 ? med(c1_free[t][hi]) : 1.0);
            for (int j = 0; j < sb_nlocks; j++) {
                struct sb_sum s = sb_summarize(c1_par[j][t][hi], sb.runs);
                char cell[48], e[16] = "-";
                if (!c1_bad[j][t][0]) snprintf(e, sizeof e, "%.2f", s.med / med(c1_par[j][t][0]));
                if (c1_bad[j][t][hi])
                    snprintf(cell, sizeof cell, "invalid (%.2f)", s.med);
                else
                    snprintf(cell, sizeof cell, "%.2f [%.2f-%.2f] (%s)", s.med, s.min, s.max, e);
                printf(" | %-22s", cell);
            }
            printf("\n");
        }
        printf("  N = %d threads: useful work per CPU-second, over a lone thread's (median)\n", n);
        printf("  %4s %19s", "h", "");
        for (int j = 0; j < sb_nlocks; j++)
            printf(" | %-8.8s", lock_name(j));
        printf("\n");
        C1_FOR_H(hi)
        {
            printf("  %3d%% %19s", hi * 10, "");
            for (int j = 0; j < sb_nlocks; j++) {
                if (c1_bad[j][t][hi])
                    printf(" | %-8s", "invalid");
                else
                    printf(" | %-8.2f", med(c1_cpu[j][t][hi]));
            }
            printf("\n");
        }
    }
    printf("  (parallelism: units/s over one thread without a lock; efficiency: over the same\n"
           "   lock and N at h = 0; model: M/M/1//N speedup (and speedup / N); no lock: the\n"
           "   same N threads doing the same work without a lock, in the same blocks; work per\n"
           "   CPU-second: units per CPU-second of the process (user + system) over a lone\n"
           "   thread's units per second: 1 = no CPU spent on anything but the work)\n");
}

/* The verdicts (BENCHMARKS.md "C1"): the model with 2 threads, and the best
 * sleeping peer at every N. */
static void c1_judge(const int *threads, int nt)
{
    int sqf = sb_lock_index("sqf");
    if (sqf < 0) {
        sb_note("C1: no verdicts: they need the lock sqf");
        return;
    }
    for (int t = 0; t < nt; t++) {
        int n = threads[t];
        if (n == 2) {
            double worst = INFINITY, worst_pos = INFINITY;
            int at = 0, at_pos = 0;
            C1_FOR_H(hi)
            {
                if (c1_bad[sqf][t][hi]) continue;
                double r = med(c1_par[sqf][t][hi]) / sb_model_speedup(n, hi / 10.0);
                if (r < worst) worst = r, at = hi;
                if (hi > 0 && r < worst_pos) worst_pos = r, at_pos = hi;
            }
            if (isfinite(worst))
                sb_verdict("C1", worst >= 0.95,
                           "sqf with 2 threads >= 0.95x the model at every valid h: worst %.3fx "
                           "at h=%d%% (worst with h > 0: %.2fx at h=%d%%)",
                           worst, at * 10, worst_pos, at_pos * 10);
            for (int j = 0; j < sb_nlocks; j++)
                if (c1_measured(5))
                    sb_note("C1 N=2 h=50%%: %-16s %.2fx (model %.2fx)", lock_name(j),
                            med(c1_par[j][t][5]), sb_model_speedup(2, 0.5));
        }
        if (n >= 2) {
            /* Against the best sleeping lock at each h; spinlocks are another class. */
            double worst = INFINITY, cpu_at = NAN, peer_cpu_at = NAN, wlo = NAN, whi = NAN;
            int at = 0, npeers = 0;
            const char *who = "";
            C1_FOR_H(hi)
            {
                double best = -1;
                int bj = -1;
                for (int j = 0; j < sb_nlocks; j++)
                    if (is_peer(j) && !c1_bad[j][t][hi] && med(c1_par[j][t][hi]) > best)
                        best = med(c1_par[j][t][hi]), bj = j;
                if (bj < 0 || c1_bad[sqf][t][hi]) continue;
                npeers++;
                /* Run by run against that peer: the two ran in one block. */
                struct sb_sum rs = sb_paired_ratio(c1_par[sqf][t][hi], c1_par[bj][t][hi], sb.runs);
                if (rs.med < worst) {
                    worst = rs.med, at = hi, who = lock_name(bj), wlo = rs.min, whi = rs.max;
                    cpu_at = med(c1_cpu[sqf][t][hi]), peer_cpu_at = med(c1_cpu[bj][t][hi]);
                }
            }
            if (npeers)
                sb_verdict("C1", worst >= 0.95,
                           "sqf with %d threads >= 0.95x the best sleeping peer at every valid h: "
                           "worst %.3fx [%.3f-%.3f] (%s) at h=%d%%, work per CPU-s there %.2f "
                           "(%s %.2f)",
                           n, worst, wlo, whi, who, at * 10, cpu_at, who, peer_cpu_at);
            else
                sb_note("C1 N=%d: no verdict: no valid point with a sleeping peer", n);
            if (n == 4 && c1_measured(1))
                for (int j = 0; j < sb_nlocks; j++)
                    sb_note("C1 N=4 h=10%%: %-16s %.2fx", lock_name(j), med(c1_par[j][t][1]));
        }
    }
}

int sb_run_c1(void)
{
    sb_heading("C1", "lock contention against hold fraction (Preshing's method)");
    calibrate("C1");
    int threads[SB_MAX_LIST];
    int nt = sb.quick ? sb_list_or(sb.threads, sb.nthreads, c1_quick_threads,
                                   SB_LEN(c1_quick_threads), threads)
                      : sb_list_or(sb.threads, sb.nthreads, c1_default_threads,
                                   SB_LEN(c1_default_threads), threads);
    for (int t = 0; t < nt; t++)
        if (threads[t] > 256) sb_fail("C1: at most 256 threads (--threads)");
    double cycle = 1e9 / C_FREQ / unit_ns; /* units per acquisition */
    double secs = duration(0.04, 0.25);
    int cpus = sb_cpus_allowed();
    sb_note("lock frequency %.0f/s of single-thread work: %.0f units per cycle; %.3g s per run",
            C_FREQ, cycle, secs);
    c1_nh = 0;
    for (int hi = 0; hi < C1_NH; hi++)
        if (!sb.quick || hi == 0 || hi == 2 || hi == 5 || hi == 8 || hi == 10) c1_his[c1_nh++] = hi;
    sb_note("h: %s", sb.quick ? "0, 20, 50, 80, 100 %" : "0, 10, ..., 100 %");
    sb_note("baseline: one thread without a lock, run with the smallest N in each block (one h "
            "of one round); one thread with a lock is over the faster of the baselines just "
            "before and after it, and every other point over the median of its block's, so a "
            "change in the machine's speed between blocks cancels");

    struct sb_sum bs = c1_measure(threads, nt, cycle, secs);
    c1_validate(threads, nt, cpus);
    c1_print(threads, nt, bs);
    c1_judge(threads, nt);
    return 0;
}

/* ==== C2 ======================================================================== */

/* Intervals between locks, half-decades from 10 ns to 31.6 us. */
static const double c2_interval_ns[] = {10, 31.6, 100, 316, 1000, 3162, 10000, 31623};
#define C2_NX ((int)(sizeof c2_interval_ns / sizeof c2_interval_ns[0]))
static double c2_mops[C_MAX_LOCKS][C2_NX][C_MAX_RUNS], c2_par[C_MAX_LOCKS][C2_NX][C_MAX_RUNS],
    c2_cpu[C_MAX_LOCKS][C2_NX][C_MAX_RUNS]; /* CPU-ns per acquisition */

/* Every run: a baseline (one thread, no lock), then every lock at every
 * interval, the locks back to back so that a ratio between two of them is
 * measured within one phase of the machine's speed; parallelism over the
 * runs' median baseline. */
static void c2_measure(double secs)
{
    double base[C_MAX_RUNS];
    sb_progress_begin("C2", (long)sb.runs * (1 + C2_NX * sb_nlocks));
    for (int run = 0; run < sb.runs; run++) {
        double u, a, c;
        run_once(NULL, 1, 1000, 0, secs, "C2 baseline", &u, &a, &c);
        base[run] = u;
        sb_progress_step();
        for (int x = 0; x < C2_NX; x++) {
            for (int o = 0; o < sb_nlocks; o++) {
                int j = (o + run + x) % sb_nlocks; /* each lock takes its turn at going first */
                char what[64];
                snprintf(what, sizeof what, "C2 %s interval %g ns", lock_name(j),
                         c2_interval_ns[x]);
                run_once(&sb_locks[j], 2, c2_interval_ns[x] / unit_ns, C2_HOLD, secs, what, &u, &a,
                         &c);
                c2_mops[j][x][run] = a / 1e6;
                c2_cpu[j][x][run] = a > 0 ? c * 1e9 / a : NAN;
                sb_record("C2", lock_name(j), 2, c2_interval_ns[x], run, "cpu_ns_per_acq",
                          c2_cpu[j][x][run], "ok");
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
}

/* Throughput, then CPU per acquisition: intervals down, locks across. */
static void c2_print(void)
{
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
    printf("\n  CPU-ns per acquisition (user + system of the process over the window), median\n");
    printf("  %9s", "interval");
    for (int j = 0; j < sb_nlocks; j++)
        printf(" | %-8.8s", lock_name(j));
    printf("\n");
    for (int x = 0; x < C2_NX; x++) {
        printf("  %6.0f ns", c2_interval_ns[x]);
        for (int j = 0; j < sb_nlocks; j++)
            printf(" | %-8.0f", med(c2_cpu[j][x]));
        printf("\n");
    }
    printf("  (both threads' CPU, so at least 2x the interval plus the hold once the lock is\n"
           "   no bottleneck; a lock that spins or sleeps and wakes pays more)\n");
}

/* sqf's throughput over the best of `peers` (indices into sb_locks, -1
 * ignored) at interval x: the peer with the highest median, then the ratio
 * run by run (the locks of one run and interval ran back to back), as the
 * median and range of those ratios.  Taking the best peer run by run would
 * divide by the larger of two noisy figures, which favours the peers even
 * where every lock does the same.  *best_j gets that peer. */
static struct sb_sum c2_ratio(int sqf, const int *peers, int np, int x, int *best_j)
{
    double best = -1;
    *best_j = -1;
    for (int p = 0; p < np; p++)
        if (peers[p] >= 0 && med(c2_mops[peers[p]][x]) > best)
            best = med(c2_mops[peers[p]][x]), *best_j = peers[p];
    if (*best_j < 0) return (struct sb_sum){NAN, NAN, NAN, 0};
    return sb_paired_ratio(c2_mops[sqf][x], c2_mops[*best_j][x], sb.runs);
}

/* One verdict: sqf against the best of `peers` at every interval, as the
 * worst interval's median per-run ratio; with `cpu_slack` > 0, also CPU-ns
 * per acquisition at most the best peer's times (1 + cpu_slack) there. */
static void c2_verdict(int sqf, const int *peers, int np, const char *who, double target,
                       double cpu_slack)
{
    double worst = INFINITY, worst_cpu = 0;
    int at = 0, at_j = -1, cpu_at = -1, cpu_j = -1;
    struct sb_sum at_s = {NAN, NAN, NAN, 0};
    for (int x = 0; x < C2_NX; x++) {
        int bj;
        struct sb_sum s = c2_ratio(sqf, peers, np, x, &bj);
        if (s.med < worst) worst = s.med, at = x, at_j = bj, at_s = s;
        if (cpu_slack > 0 && bj >= 0) {
            double c = med(c2_cpu[sqf][x]) / med(c2_cpu[bj][x]);
            if (c > worst_cpu) worst_cpu = c, cpu_at = x, cpu_j = bj;
        }
    }
    if (at_j < 0) return;
    if (cpu_slack > 0)
        sb_verdict("C2", worst >= target && worst_cpu <= 1 + cpu_slack,
                   "sqf >= %.2fx the best of %s at every interval, CPU per acquisition <= "
                   "theirs + %.0f%%: worst %.3fx [%.3f-%.3f] (%s) at %g ns; CPU worst %.2fx "
                   "(%s, %.0f against %.0f ns) at %g ns",
                   target, who, cpu_slack * 100, worst, at_s.min, at_s.max, lock_name(at_j),
                   c2_interval_ns[at], worst_cpu, lock_name(cpu_j), med(c2_cpu[sqf][cpu_at]),
                   med(c2_cpu[cpu_j][cpu_at]), c2_interval_ns[cpu_at]);
    else
        sb_verdict("C2", worst >= target,
                   "sqf >= %.2fx the best of %s at every interval: worst %.3fx [%.3f-%.3f] (%s) "
                   "at %g ns (CPU-ns per acquisition there: sqf %.0f, %s %.0f)",
                   target, who, worst, at_s.min, at_s.max, lock_name(at_j), c2_interval_ns[at],
                   med(c2_cpu[sqf][at]), lock_name(at_j), med(c2_cpu[at_j][at]));
}

/* The verdicts: against the best pthread variant (BENCHMARKS.md "C2"), and
 * against the best of nsync and Abseil, with the CPU each spends; each
 * figure a median of per-run ratios, with their range. */
static void c2_judge(void)
{
    int sqf = sb_lock_index("sqf");
    if (sqf < 0) {
        sb_note("C2: no verdicts: they need the lock sqf");
        return;
    }
    int pth[] = {sb_lock_index("pthread"), sb_lock_index("pthread-adaptive")};
    int sleepers[] = {sb_lock_index("nsync"), sb_lock_index("absl")};
    if (pth[0] >= 0 || pth[1] >= 0) c2_verdict(sqf, pth, 2, "pthread and pthread-adaptive", 1.0, 0);
    if (sleepers[0] >= 0 || sleepers[1] >= 0)
        c2_verdict(sqf, sleepers, 2, "nsync and absl", 0.95, 0.10);
}

int sb_run_c2(void)
{
    sb_heading("C2", "lock contention against lock frequency (2 threads, short hold)");
    calibrate("C2");
    double secs = duration(0.05, 0.25);
    sb_note("hold: %.0f units (%.0f ns) on average; interval between locks swept; %.3g s per run",
            C2_HOLD, C2_HOLD * unit_ns, secs);
    c2_measure(secs);
    c2_print();
    c2_judge();
    return 0;
}
