/* oversub.c: O1, throughput and fairness of one lock as threads go from 1
 * to 256 on this machine's few CPUs (BENCHMARKS.md "O1").
 *
 * Every thread loops on: lock, increment a shared counter (the tiny
 * critical section), unlock; nothing outside the lock.  Per point: total
 * acquisitions per second, and fairness over the per-thread acquisition
 * counts: Jain's index and the least and most any thread got.  A barging
 * lock can keep its throughput while starving threads; only the fairness
 * columns show that.
 *
 * The shared counter also checks the lock: after a run it must equal the
 * sum of every thread's acquisitions, or mutual exclusion broke (the
 * program then stops with an error). */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "locks.h"
#include "sqbench.h"

#define O_MAX_RUNS  1000
#define O_MAX_LOCKS 8

static const int o_default_threads[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
/* --quick: the counts the verdicts name (2-4, 16, 64, 256) and 1. */
static const int o_quick_threads[] = {1, 2, 16, 64, 256};

static struct {
    long long counter __attribute__((aligned(128)));
} o_shared;

struct o_worker {
    const struct sb_lock_kind *k;
    void *lock;
    long long counted; /* acquisitions inside the measured interval */
    long long all;     /* every acquisition, for the exclusion check */
} __attribute__((aligned(128)));

static void *o_thread(void *arg)
{
    struct o_worker *w = arg;
    void *node = sb_lock_node(w->k);
    long long n = 0, all = 0;
    sb_timed_begin();
    for (;;) {
        w->k->lock(w->lock, node);
        o_shared.counter++;
        w->k->unlock(w->lock, node);
        all++;
        if (sb_timed_stop()) break; /* ended after the interval: not counted */
        n++;
    }
    free(node);
    w->counted = n;
    w->all = all;
    return NULL;
}

struct o_point {
    double mops[O_MAX_RUNS], jain[O_MAX_RUNS];
    double cpu[O_MAX_RUNS]; /* CPU-ns (user + system, whole process) per acquisition */
    long long min, max;     /* least and most per thread over all runs */
    int starved;            /* runs in which some thread got nothing */
    int slow;               /* a run took longer than the drain limit to stop */
    int skipped;            /* not run: a smaller thread count was slow */
};
static struct o_point o_res[O_MAX_LOCKS][SB_MAX_LIST];
/* The quick form's fairness pass: sqf alone, with the full form's run
 * length, at the counts where fairness is judged (see o_fair_pass). */
static struct o_point o_fair[SB_MAX_LIST];
static bool o_fair_done[SB_MAX_LIST];
#define O_FAIR_SECS 1.0
#define O_FAIR_FROM 16 /* the smallest count the pass runs */

/* One run of lock j with n threads for secs, into *p; its CSV rows carry
 * `prefix` before each metric's name. */
static void o_run(int j, struct o_point *p, const char *prefix, int n, int run, double secs)
{
    const struct sb_lock_kind *k = &sb_locks[j];
    static struct o_worker w[1024];
    static double acq[1024];
    char what[64];
    snprintf(what, sizeof what, "O1 %s threads=%d", k->name, n);
    void *lock = k->create();
    if (!lock) sb_fail("%s: cannot create the lock", what);
    o_shared.counter = 0;
    for (int i = 0; i < n; i++)
        w[i] = (struct o_worker){k, lock, 0, 0};
    int64_t ns = sb_timed_run(n, o_thread, w, sizeof w[0], secs, what);
    k->destroy(lock);
    long long total = 0, all = 0, mn = -1, mx = 0;
    for (int i = 0; i < n; i++) {
        total += w[i].counted;
        all += w[i].all;
        acq[i] = (double)w[i].counted;
        mn = mn < 0 || w[i].counted < mn ? w[i].counted : mn;
        mx = w[i].counted > mx ? w[i].counted : mx;
    }
    if (all != o_shared.counter)
        sb_fail("%s: the counter says %lld acquisitions, the threads %lld: mutual exclusion broke",
                what, o_shared.counter, all);
    p->mops[run] = (double)total * 1e3 / (double)ns;
    p->cpu[run] = total ? (double)sb_timed_cpu_ns / (double)total : NAN;
    /* Nobody got the lock inside the interval: the least fair outcome. */
    p->jain[run] = total == 0 ? 0.0 : n == 1 ? 1.0 : sb_jain(acq, n);
    if (run == 0 || mn < p->min) p->min = mn;
    if (run == 0 || mx > p->max) p->max = mx;
    p->starved += mn == 0;
    static const char *const names[] = {"mops", "jain", "cpu_ns_per_acq", "min_acq", "max_acq"};
    const double vals[] = {p->mops[run], p->jain[run], p->cpu[run], (double)mn, (double)mx};
    for (size_t i = 0; i < SB_LEN(names); i++) {
        char metric[48];
        snprintf(metric, sizeof metric, "%s%s", prefix, names[i]);
        sb_record("O1", k->name, n, n, run, metric, vals[i], "ok");
    }
}

/* Thread counts down the side, one column per lock. */
static void o_header(void)
{
    printf("  %7s", "threads");
    for (int j = 0; j < sb_nlocks; j++)
        printf(" | %-19s", sb_locks[j].name);
    printf("\n");
}

/* One table of a per-run figure of o_point (the double array at `member`):
 * median [min-max] with `prec` decimals, or `skipped` for a skipped point. */
static void o_sum_table(const int *th, int nt, size_t member, int prec, const char *skipped)
{
    o_header();
    for (int t = 0; t < nt; t++) {
        printf("  %7d", th[t]);
        for (int j = 0; j < sb_nlocks; j++) {
            char c[48];
            const struct o_point *p = &o_res[j][t];
            struct sb_sum s = sb_summarize((const double *)((const char *)p + member), sb.runs);
            if (p->skipped)
                snprintf(c, sizeof c, "%s", skipped);
            else
                snprintf(c, sizeof c, "%.*f [%.*f-%.*f]", prec, s.med, prec, s.min, prec, s.max);
            printf(" | %-19s", c);
        }
        printf("\n");
    }
}

/* Every run of every point: sb.runs rounds over the thread counts th[] and
 * the locks, the locks of one count back to back (so that a ratio between
 * two is measured within one phase of the machine's speed) and each taking
 * its turn at going first.  A lock whose run took longer than `drain` to
 * stop is not run at larger counts. */
static void o_measure(const int *th, int nt, double secs, double drain)
{
    memset(o_res, 0, sizeof o_res);
    sb_progress_begin("O1", (long)sb.runs * nt * sb_nlocks);
    for (int run = 0; run < sb.runs; run++)
        for (int t = 0; t < nt; t++)
            for (int o = 0; o < sb_nlocks; o++) {
                int j = (o + run + t) % sb_nlocks; /* each lock takes its turn at going first */
                if (t > 0 && o_res[j][t - 1].slow) {
                    /* A smaller count already took too long to stop. */
                    o_res[j][t].slow = o_res[j][t].skipped = 1;
                    o_res[j][t].mops[run] = o_res[j][t].jain[run] = o_res[j][t].cpu[run] = NAN;
                    sb_record("O1", sb_locks[j].name, th[t], th[t], run, "mops", NAN, "skipped");
                } else {
                    int64_t t0 = sb_now_ns();
                    o_run(j, &o_res[j][t], "", th[t], run, secs);
                    if ((double)(sb_now_ns() - t0) / 1e9 > secs + drain) o_res[j][t].slow = 1;
                }
                sb_progress_step();
            }
    sb_progress_end();
}

/* Fairness at 64 or 256 threads on 2 CPUs is a property of many turns:
 * each thread's share evens out only once the lock has gone round every
 * thread several times, and a quick run is over after one or two rounds.
 * So the quick form runs sqf again, alone, at the counts where fairness is
 * judged (16 and up), with the full form's run length; its fairness
 * verdicts use these runs, and throughput keeps the short interleaved
 * ones.  A lock's fairness needs no peer in the same run: it is measured
 * within each run, over that run's threads. */
static void o_fair_pass(const int *th, int nt, double secs, int sqf)
{
    memset(o_fair, 0, sizeof o_fair);
    memset(o_fair_done, 0, sizeof o_fair_done);
    if (sqf < 0 || secs >= O_FAIR_SECS) return;
    int npass = 0;
    for (int t = 0; t < nt; t++)
        npass += th[t] >= O_FAIR_FROM;
    if (!npass) return;
    sb_progress_begin("O1 fairness", (long)sb.runs * npass);
    for (int run = 0; run < sb.runs; run++)
        for (int t = 0; t < nt; t++) {
            if (th[t] < O_FAIR_FROM) continue;
            o_run(sqf, &o_fair[t], "fair_", th[t], run, O_FAIR_SECS);
            o_fair_done[t] = true;
            sb_progress_step();
        }
    sb_progress_end();
}

/* sqf's fairness at count t: from the fairness pass where it ran. */
static const struct o_point *o_fairness(int sqf, int t)
{
    return o_fair_done[t] ? &o_fair[t] : &o_res[sqf][t];
}

/* The three tables: throughput, CPU per acquisition, fairness. */
static void o_print(const int *th, int nt, double secs)
{
    printf("  throughput, million acquisitions per second: median [min-max] of %d runs\n", sb.runs);
    o_sum_table(th, nt, offsetof(struct o_point, mops), 2, "skipped (too slow)");
    printf("\n  CPU-ns per acquisition (user + system of the process over the window): median "
           "[min-max]\n");
    o_sum_table(th, nt, offsetof(struct o_point, cpu), 0, "-");
    printf("\n  fairness: Jain's index (median of runs), least/most acquisitions of one thread in\n"
           "  one run (over all runs); * = some thread got none in some run\n");
    o_header();
    for (int t = 0; t < nt; t++) {
        printf("  %7d", th[t]);
        for (int j = 0; j < sb_nlocks; j++) {
            char c[64];
            const struct o_point *p = &o_res[j][t];
            if (p->skipped)
                snprintf(c, sizeof c, "-");
            else
                snprintf(c, sizeof c, "%.2f %lld/%lld%s", sb_summarize(p->jain, sb.runs).med,
                         p->min, p->max, p->starved ? "*" : "");
            printf(" | %-19s", c);
        }
        printf("\n");
    }

    bool pass = false;
    for (int t = 0; t < nt; t++)
        pass |= o_fair_done[t];
    if (pass) {
        printf(
            "\n  sqf's fairness pass: sqf alone, %.3g s runs (the quick form's runs are too short\n"
            "  for the lock to go round 64 or 256 threads several times)\n",
            O_FAIR_SECS);
        printf("  %7s | %-19s | %-19s | %s\n", "threads", "M acquisitions/s", "Jain's index",
               "least/most of one thread");
        for (int t = 0; t < nt; t++) {
            if (!o_fair_done[t]) continue;
            struct sb_sum m = sb_summarize(o_fair[t].mops, sb.runs);
            struct sb_sum jn = sb_summarize(o_fair[t].jain, sb.runs);
            char c1[48], c2[48];
            snprintf(c1, sizeof c1, "%.2f [%.2f-%.2f]", m.med, m.min, m.max);
            snprintf(c2, sizeof c2, "%.2f [%.2f-%.2f]", jn.med, jn.min, jn.max);
            printf("  %7d | %-19s | %-19s | %lld/%lld%s\n", th[t], c1, c2, o_fair[t].min,
                   o_fair[t].max, o_fair[t].starved ? "*" : "");
        }
        sb_note("O1: sqf's fairness verdicts use the fairness pass at %d+ threads; the table "
                "above shows every lock's fairness over the %.2g s runs",
                O_FAIR_FROM, secs);
    } else if (secs < 1.0) {
        sb_note("O1: with %.2g s runs, Jain's index at 64+ threads also measures how far the "
                "kernel's scheduler gets round 2 CPUs' worth of threads; 1 s runs are the ones to "
                "judge fairness by",
                secs);
    }
}

/* sqf's throughput over lock j's at count t, run by run (the two ran back
 * to back in each round): median and range of the ratios. */
static struct sb_sum o_ratio(int sqf, int j, int t)
{
    return sb_paired_ratio(o_res[sqf][t].mops, o_res[j][t].mops, sb.runs);
}

/* The verdicts (BENCHMARKS.md "O1"), against pthread and the strongest
 * peers; every throughput figure a median of per-run ratios. */
static void o_judge(const int *th, int nt)
{
    int sqf = sb_lock_index("sqf"), pt = sb_lock_index("pthread");
    if (sqf < 0 || pt < 0) {
        sb_note("O1: no verdicts: they need the locks sqf and pthread");
        return;
    }
    double worst_hi = INFINITY, worst_lo = INFINITY, worst_j = INFINITY;
    int at_hi = 0, at_lo = 0, at_j = 0, starved = 0, nhi = 0, nlo = 0;
    for (int t = 0; t < nt; t++) {
        double r = o_ratio(sqf, pt, t).med;
        double jn = sb_summarize(o_fairness(sqf, t)->jain, sb.runs).med;
        if (th[t] >= 16 && th[t] <= 256) {
            nhi++;
            if (r < worst_hi) worst_hi = r, at_hi = th[t];
        }
        if (th[t] >= 2 && th[t] <= 4) {
            nlo++;
            if (r < worst_lo) worst_lo = r, at_lo = th[t];
        }
        if (jn < worst_j) worst_j = jn, at_j = th[t];
        starved += o_fairness(sqf, t)->starved;
    }
    if (nhi)
        sb_verdict("O1", worst_hi >= 1.5,
                   "sqf throughput >= 1.5x pthread's at 16-256 threads: worst %.3fx at %d",
                   worst_hi, at_hi);
    if (nlo)
        sb_verdict("O1", worst_lo >= 0.9,
                   "sqf throughput >= 0.9x pthread's at 2-4 threads: worst %.3fx at %d", worst_lo,
                   at_lo);
    /* Against the strongest peers, at the counts where oversubscription
     * decides (16, 64 and 256 threads, or whichever of them were run). */
    int ns = sb_lock_index("nsync"), ab = sb_lock_index("absl");
    if (ns >= 0 || ab >= 0) {
        double worst = INFINITY, worst_cpu = -INFINITY, worst_fair = INFINITY, wlo = NAN, whi = NAN;
        int at = 0, at_cpu = 0, at_fair = 0, nk = 0, starved_k = 0, wj = ns >= 0 ? ns : ab;
        for (int t = 0; t < nt; t++) {
            if (th[t] != 16 && th[t] != 64 && th[t] != 256) continue;
            nk++;
            /* The peer with the higher median, then run by run against it. */
            double mn = ns >= 0 ? sb_summarize(o_res[ns][t].mops, sb.runs).med : -1;
            double ma = ab >= 0 ? sb_summarize(o_res[ab][t].mops, sb.runs).med : -1;
            int bj = mn >= ma ? ns : ab;
            struct sb_sum rs = o_ratio(sqf, bj, t);
            if (rs.med < worst) worst = rs.med, at = th[t], wlo = rs.min, whi = rs.max, wj = bj;
            double c = sb_summarize(o_res[sqf][t].cpu, sb.runs).med /
                       sb_summarize(o_res[pt][t].cpu, sb.runs).med;
            if (c > worst_cpu) worst_cpu = c, at_cpu = th[t];
            double jn = sb_summarize(o_fairness(sqf, t)->jain, sb.runs).med;
            if (jn < worst_fair) worst_fair = jn, at_fair = th[t];
            starved_k += o_fairness(sqf, t)->starved;
        }
        if (nk) {
            sb_verdict("O1", worst >= 1.0,
                       "sqf throughput >= the best of nsync and Abseil at 16, 64 and 256 threads: "
                       "worst %.3fx [%.3f-%.3f] (%s) at %d",
                       worst, wlo, whi, sb_locks[wj].name, at);
            sb_verdict("O1", worst_cpu <= 1.0,
                       "sqf CPU per acquisition <= pthread's at 16, 64 and 256 threads: worst "
                       "%.3fx at %d",
                       worst_cpu, at_cpu);
            sb_verdict("O1", worst_fair >= 0.9 && !starved_k,
                       "sqf fair at 16, 64 and 256 threads: Jain's index >= 0.9 (worst %.3f at "
                       "%d), no starved thread (%d runs with one)",
                       worst_fair, at_fair, starved_k);
        }
        for (int t = 0; t < nt; t++)
            if (th[t] == 16 || th[t] == 64 || th[t] == 256)
                for (int j = 0; j < sb_nlocks; j++)
                    if (j == ns || j == ab || j == pt)
                        sb_note("O1 %3d threads: sqf %.3fx %s's throughput at %.2fx its CPU per "
                                "acquisition; Jain %.2f against %.2f",
                                th[t], o_ratio(sqf, j, t).med, sb_locks[j].name,
                                sb_summarize(o_res[sqf][t].cpu, sb.runs).med /
                                    sb_summarize(o_res[j][t].cpu, sb.runs).med,
                                sb_summarize(o_res[sqf][t].jain, sb.runs).med,
                                sb_summarize(o_res[j][t].jain, sb.runs).med);
    } else {
        sb_note("O1: no nsync or Abseil in this build: no verdicts against them");
    }
    sb_verdict("O1", worst_j >= 0.9 && !starved,
               "sqf fair: Jain's index >= 0.9 at every thread count (worst %.3f at %d) and every "
               "thread progressing (%d runs with a starved thread)",
               worst_j, at_j, starved);
}

int sb_run_o1(void)
{
    sb_heading("O1", "oversubscription: a tiny critical section, 1 to 256 threads");
    int th[SB_MAX_LIST];
    int nt =
        sb.quick
            ? sb_list_or(sb.threads, sb.nthreads, o_quick_threads, SB_LEN(o_quick_threads), th)
            : sb_list_or(sb.threads, sb.nthreads, o_default_threads, SB_LEN(o_default_threads), th);
    for (int t = 0; t < nt; t++)
        if (th[t] > 1024) sb_fail("O1: at most 1024 threads (--threads)");
    double secs = sb.duration_s > 0 ? sb.duration_s : sb.quick ? 0.1 : 1.0;
    /* After the stop flag every thread must still get the lock once to
     * leave; a queue spinlock with preempted waiters can take minutes for
     * that at 256 threads.  A run that takes longer than this to stop has
     * shown its collapse: larger counts of that lock are skipped. */
    double drain = sb.quick ? 1.0 : 5.0;
    sb_note("%.3g s per run; acquisitions counted per thread; a lock whose run needs more than "
            "%.0f s to stop is not run at larger thread counts",
            secs, drain);
    o_measure(th, nt, secs, drain);
    if (sb.quick) o_fair_pass(th, nt, secs, sb_lock_index("sqf"));
    o_print(th, nt, secs);
    o_judge(th, nt);
    return 0;
}
