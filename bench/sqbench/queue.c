/* queue.c: the queue experiments (BENCHMARKS.md "Q").
 *
 * Q1, throughput: P producers and P consumers pass items of 8 and 256 bytes
 * through one queue of capacity 1024 for a fixed time; million items per
 * second (median of the runs), and CPU time per item (user + system of the
 * whole process over the timed window, so spinning is not free).
 * Q2, the notify case through a queue: n consumers asleep on an empty
 * queue, one producer pushes n items (squarefree: one push_n; the idioms: a
 * loop of pushes); the time until every consumer has its item, and its
 * growth with n (fitted exponent), beside S4's event wake-all of n threads
 * measured in the same run.
 *
 * Variants, all bounded at the same capacity:
 *   sqf         sqf_queue, one item per push and pop
 *   sqf-batch   sqf_queue, push_n and pop_n of up to 16 (Q1 only)
 *   mutex+cond  the C idiom: a ring under a pthread mutex, two condition
 *               variables (signal per push and per pop)
 *   ck_ring     Concurrency Kit's MPMC ring (libck-dev), spinning with
 *               ck_pr_stall when full or empty: it never sleeps
 *   moodycamel  moodycamel::BlockingConcurrentQueue (libconcurrentqueue-dev),
 *               bounded by a count of its items; a push retried with
 *               sched_yield when full
 *   pipe        a pipe: one write and one read of an item each (writes of
 *               at most PIPE_BUF bytes are atomic)
 * A run ends with the producers stopping at the flag, the last of them
 * closing the queue (the idioms' own way: a closed flag and a broadcast,
 * the pipe's write end, spinning and timed waits checking the flag), and
 * the consumers draining.  Only items popped before a consumer saw the flag
 * count. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <squarefree.h>

#include "sqbench.h"
#ifdef SQB_HAVE_CK
#include <ck_pr.h>
#include <ck_ring.h>
#endif
#ifdef SQB_HAVE_MOODYCAMEL
#include "mcq.h"
#endif

#define Q_CAP   1024
#define Q_BATCH 16

enum { QV_SQF, QV_SQF_BATCH, QV_MC, QV_CK, QV_MOODY, QV_PIPE, QV_N };
static const char *const qv_name[QV_N] = {"sqf",     "sqf-batch",  "mutex+cond",
                                          "ck_ring", "moodycamel", "pipe"};

static int qv_built(int v)
{
#ifndef SQB_HAVE_CK
    if (v == QV_CK) return 0;
#endif
#ifndef SQB_HAVE_MOODYCAMEL
    if (v == QV_MOODY) return 0;
#endif
    (void)v;
    return 1;
}

struct item256 {
    uint64_t w[32];
};

/* --- the idiom: a ring under a mutex with two condition variables --- */
struct mc_ring {
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    char *buf;
    size_t size, cap, head, count;
    int closed;
};

static int mc_push(struct mc_ring *r, const void *item)
{
    pthread_mutex_lock(&r->mu);
    while (r->count == r->cap && !r->closed)
        pthread_cond_wait(&r->not_full, &r->mu);
    if (r->closed) {
        pthread_mutex_unlock(&r->mu);
        return EPIPE;
    }
    memcpy(r->buf + (r->head + r->count) % r->cap * r->size, item, r->size);
    r->count++;
    pthread_cond_signal(&r->not_empty);
    pthread_mutex_unlock(&r->mu);
    return 0;
}

static int mc_pop(struct mc_ring *r, void *item)
{
    pthread_mutex_lock(&r->mu);
    while (r->count == 0 && !r->closed)
        pthread_cond_wait(&r->not_empty, &r->mu);
    if (r->count == 0) {
        pthread_mutex_unlock(&r->mu);
        return EPIPE;
    }
    memcpy(item, r->buf + r->head * r->size, r->size);
    r->head = (r->head + 1) % r->cap;
    r->count--;
    pthread_cond_signal(&r->not_full);
    pthread_mutex_unlock(&r->mu);
    return 0;
}

static void mc_close(struct mc_ring *r)
{
    pthread_mutex_lock(&r->mu);
    r->closed = 1;
    pthread_cond_broadcast(&r->not_empty);
    pthread_cond_broadcast(&r->not_full);
    pthread_mutex_unlock(&r->mu);
}

#ifdef SQB_HAVE_CK
struct item8s {
    uint64_t w;
};
CK_RING_PROTOTYPE(q8, item8s)
CK_RING_PROTOTYPE(q256, item256)
#endif

/* --- one queue of any variant --- */
struct bq {
    int v;
    size_t size;
    sqf_queue *sq;
    struct mc_ring mc;
    int fd[2];
#ifdef SQB_HAVE_CK
    ck_ring_t ck;
    void *ckbuf;
#endif
#ifdef SQB_HAVE_MOODYCAMEL
    sqb_mcq *mq;
#endif
    atomic_int closed; /* spinning and timed-wait variants look at it */
};

static void bq_init(struct bq *q, int v, size_t size, size_t cap, const char *what)
{
    memset(q, 0, sizeof *q);
    q->v = v;
    q->size = size;
    switch (v) {
    case QV_SQF:
    case QV_SQF_BATCH: {
        size_t bytes = sqf_queue_bytes(cap, size);
        q->sq = bytes ? aligned_alloc(64, (bytes + 63) & ~(size_t)63) : NULL;
        if (!q->sq || sqf_queue_init(q->sq, cap, size, SQF_PRIVATE) != 0)
            sb_fail("%s: sqf_queue_init", what);
        break;
    }
    case QV_MC:
        pthread_mutex_init(&q->mc.mu, NULL);
        pthread_cond_init(&q->mc.not_empty, NULL);
        pthread_cond_init(&q->mc.not_full, NULL);
        q->mc.buf = malloc(cap * size);
        if (!q->mc.buf) sb_fail("%s: out of memory", what);
        q->mc.size = size;
        q->mc.cap = cap;
        break;
    case QV_PIPE:
        if (pipe2(q->fd, O_CLOEXEC) != 0) sb_fail("%s: pipe2: %s", what, strerror(errno));
        /* Room for the same number of items as the others (the kernel
         * rounds to pages; at least the default 64 KiB). */
        (void)fcntl(q->fd[1], F_SETPIPE_SZ, (int)(cap * size));
        break;
#ifdef SQB_HAVE_CK
    case QV_CK: {
        size_t n = 1; /* ck_ring: a power of two, one slot unused */
        while (n < cap + 1)
            n <<= 1;
        q->ckbuf = aligned_alloc(64, n * (size == 8 ? sizeof(struct item8s) : size));
        if (!q->ckbuf) sb_fail("%s: out of memory", what);
        ck_ring_init(&q->ck, (unsigned)n);
        break;
    }
#endif
#ifdef SQB_HAVE_MOODYCAMEL
    case QV_MOODY:
        q->mq = sqb_mcq_new(size, cap);
        if (!q->mq) sb_fail("%s: moodycamel queue", what);
        break;
#endif
    default:
        sb_fail("%s: variant not built", what);
    }
}

static void bq_destroy(struct bq *q)
{
    free(q->sq);
    if (q->v == QV_MC) {
        pthread_mutex_destroy(&q->mc.mu);
        pthread_cond_destroy(&q->mc.not_empty);
        pthread_cond_destroy(&q->mc.not_full);
        free(q->mc.buf);
    }
    if (q->v == QV_PIPE) close(q->fd[0]);
#ifdef SQB_HAVE_CK
    free(q->ckbuf);
#endif
#ifdef SQB_HAVE_MOODYCAMEL
    sqb_mcq_del(q->mq);
#endif
}

/* Push n items (n > 1 only for sqf-batch and Q2's sqf); how many went in,
 * 0 once the queue is closed or the run is stopping. */
static size_t bq_push(struct bq *q, const void *items, size_t n)
{
    switch (q->v) {
    case QV_SQF:
    case QV_SQF_BATCH: {
        size_t k = 0;
        return sqf_queue_push_n(q->sq, items, n, &k, SQF_FOREVER, NULL) == 0 ? k : 0;
    }
    case QV_MC:
        return mc_push(&q->mc, items) == 0;
    case QV_PIPE:
        return write(q->fd[1], items, q->size) == (ssize_t)q->size;
#ifdef SQB_HAVE_CK
    case QV_CK:
        for (;;) {
            int ok = q->size == 8
                         ? ck_ring_enqueue_mpmc_q8(&q->ck, q->ckbuf, (struct item8s *)items)
                         : ck_ring_enqueue_mpmc_q256(&q->ck, q->ckbuf, (struct item256 *)items);
            if (ok) return 1;
            if (atomic_load_explicit(&q->closed, memory_order_relaxed) || sb_timed_stop())
                return 0; /* a producer spinning on a full ring stops with the run */
            ck_pr_stall();
        }
#endif
#ifdef SQB_HAVE_MOODYCAMEL
    case QV_MOODY:
        while (!sqb_mcq_try_push(q->mq, items)) {
            if (atomic_load_explicit(&q->closed, memory_order_relaxed) || sb_timed_stop()) return 0;
            sched_yield();
        }
        return 1;
#endif
    }
    return 0;
}

/* Pop up to n items; how many, 0 once closed and drained. */
static size_t bq_pop(struct bq *q, void *items, size_t n)
{
    switch (q->v) {
    case QV_SQF:
    case QV_SQF_BATCH: {
        size_t k = 0;
        return sqf_queue_pop_n(q->sq, items, n, &k, SQF_FOREVER, NULL) == 0 ? k : 0;
    }
    case QV_MC:
        return mc_pop(&q->mc, items) == 0;
    case QV_PIPE:
        return read(q->fd[0], items, q->size) == (ssize_t)q->size;
#ifdef SQB_HAVE_CK
    case QV_CK:
        for (;;) {
            int ok = q->size == 8
                         ? ck_ring_dequeue_mpmc_q8(&q->ck, q->ckbuf, (struct item8s *)items)
                         : ck_ring_dequeue_mpmc_q256(&q->ck, q->ckbuf, (struct item256 *)items);
            if (ok) return 1;
            if (atomic_load_explicit(&q->closed, memory_order_relaxed)) return 0;
            ck_pr_stall();
        }
#endif
#ifdef SQB_HAVE_MOODYCAMEL
    case QV_MOODY:
        for (;;) {
            if (sqb_mcq_pop(q->mq, items, 10000)) return 1;
            if (atomic_load_explicit(&q->closed, memory_order_relaxed)) return 0;
        }
#endif
    }
    return 0;
}

static void bq_close(struct bq *q)
{
    atomic_store(&q->closed, 1);
    if (q->v == QV_SQF || q->v == QV_SQF_BATCH) sqf_queue_close(q->sq);
    if (q->v == QV_MC) mc_close(&q->mc);
    if (q->v == QV_PIPE) close(q->fd[1]);
}

/* ==== Q1 ===================================================================== */

static const int q1_default_pairs[] = {1, 2, 4, 16, 64};
static const int q1_quick_pairs[] = {1, 16};

struct q1_worker {
    struct bq *q;
    int producer;
    atomic_int *producers_left;
    long long counted;
} __attribute__((aligned(128)));

static void *q1_thread(void *arg)
{
    struct q1_worker *w = arg;
    struct bq *q = w->q;
    size_t batch = q->v == QV_SQF_BATCH ? Q_BATCH : 1;
    _Alignas(64) char items[Q_BATCH * sizeof(struct item256)];
    memset(items, 0, sizeof items);
    long long n = 0;
    sb_timed_begin();
    if (w->producer) {
        while (!sb_timed_stop())
            if (bq_push(q, items, batch) == 0) break;
        if (atomic_fetch_sub(w->producers_left, 1) == 1) bq_close(q);
    } else {
        size_t k;
        while ((k = bq_pop(q, items, batch)) > 0)
            if (!sb_timed_stop()) n += (long long)k;
    }
    w->counted = n;
    return NULL;
}

#define Q1_MAX_RUNS 64
struct q1_point {
    double mips[Q1_MAX_RUNS], cpu[Q1_MAX_RUNS]; /* M items/s; CPU ns per item */
    int runs;
};

static void q1_run(int v, int pairs, size_t size, double secs, struct q1_point *pt)
{
    char what[80];
    snprintf(what, sizeof what, "Q1 %s pairs=%d size=%zu", qv_name[v], pairs, size);
    static struct q1_worker w[256];
    struct bq q;
    bq_init(&q, v, size, Q_CAP, what);
    atomic_int left = pairs;
    for (int i = 0; i < 2 * pairs; i++)
        w[i] = (struct q1_worker){&q, i < pairs, &left, 0};
    int64_t ns = sb_timed_run(2 * pairs, q1_thread, w, sizeof w[0], secs, what);
    long long items = 0;
    for (int i = pairs; i < 2 * pairs; i++)
        items += w[i].counted;
    bq_destroy(&q);
    double mips = (double)items / ((double)ns / 1e9) / 1e6;
    double cpu = items ? (double)sb_timed_cpu_ns / (double)items : NAN;
    pt->mips[pt->runs] = mips;
    pt->cpu[pt->runs] = cpu;
    pt->runs++;
    char var[48];
    snprintf(var, sizeof var, "%zuB/%s", size, qv_name[v]); /* plot.py styles by the last part */
    sb_record("Q1", var, 2 * pairs, pairs, pt->runs - 1, "mitems_per_s", mips, "ok");
    sb_record("Q1", var, 2 * pairs, pairs, pt->runs - 1, "cpu_ns_per_item", cpu, "ok");
}

/* Every point: [item size][pairs][variant]. */
static struct q1_point q1_pt[2][SB_MAX_LIST][QV_N];

/* Every run of every point. */
static void q1_measure(const int *pairs, int np, const size_t *sizes, int ns, double secs, int runs)
{
    memset(q1_pt, 0, sizeof q1_pt);
    sb_progress_begin("Q1", (long)ns * np * QV_N * runs);
    /* Runs of every variant interleaved, so that a noisy moment hits all. */
    for (int r = 0; r < runs; r++)
        for (int si = 0; si < ns; si++)
            for (int i = 0; i < np; i++)
                for (int v = 0; v < QV_N; v++) {
                    if (!qv_built(v)) continue;
                    q1_run(v, pairs[i], sizes[si], secs, &q1_pt[si][i][v]);
                    sb_progress_step();
                }
    sb_progress_end();
}

/* One table per item size: pairs down, variants across. */
static void q1_print(const int *pairs, int np, const size_t *sizes, int ns)
{
    for (int si = 0; si < ns; si++) {
        printf("\n  items of %zu bytes\n  %5s", sizes[si], "pairs");
        for (int v = 0; v < QV_N; v++)
            printf(" | %-26s", qv_name[v]);
        printf("\n");
        for (int i = 0; i < np; i++) {
            printf("  %5d", pairs[i]);
            for (int v = 0; v < QV_N; v++) {
                if (!qv_built(v)) {
                    printf(" | %-26s", "not built");
                    continue;
                }
                struct sb_sum m = sb_summarize(q1_pt[si][i][v].mips, q1_pt[si][i][v].runs);
                struct sb_sum c = sb_summarize(q1_pt[si][i][v].cpu, q1_pt[si][i][v].runs);
                char b[64];
                snprintf(b, sizeof b, "%.2f [%.2f-%.2f] %.0fns", m.med, m.min, m.max, c.med);
                printf(" | %-26s", b);
            }
            printf("\n");
        }
    }
}

/* The verdicts (BENCHMARKS.md "Q1"), on every item size. */
static void q1_judge(const int *pairs, int np, const size_t *sizes, int ns)
{
    for (int si = 0; si < ns; si++)
        for (int i = 0; i < np; i++) {
            struct q1_point *p = q1_pt[si][i];
            double sqf = sb_summarize(p[QV_SQF].mips, p[QV_SQF].runs).med;
            double batch = sb_summarize(p[QV_SQF_BATCH].mips, p[QV_SQF_BATCH].runs).med;
            double mc = sb_summarize(p[QV_MC].mips, p[QV_MC].runs).med;
            double sqf_cpu = sb_summarize(p[QV_SQF].cpu, p[QV_SQF].runs).med;
            double mc_cpu = sb_summarize(p[QV_MC].cpu, p[QV_MC].runs).med;
            size_t z = sizes[si];
            if (pairs[i] >= 16) {
                sb_verdict("Q1", sqf >= 2 * mc,
                           "%d pairs, %zu B: sqf %.2f M items/s, %.2fx the mutex+cond idiom "
                           "(target >= 2x)",
                           pairs[i], z, sqf, sqf / mc);
                sb_verdict("Q1", sqf_cpu <= mc_cpu,
                           "%d pairs, %zu B: sqf %.0f CPU-ns per item, mutex+cond %.0f (target: "
                           "no more)",
                           pairs[i], z, sqf_cpu, mc_cpu);
                if (qv_built(QV_MOODY)) {
                    double mo = sb_summarize(p[QV_MOODY].mips, p[QV_MOODY].runs).med;
                    sb_verdict("Q1", sqf >= mo,
                               "%d pairs, %zu B: sqf %.2fx moodycamel's BlockingConcurrentQueue "
                               "(target >= 1)",
                               pairs[i], z, sqf / mo);
                }
                sb_note("Q1: %d pairs, %zu B: sqf-batch (16 a call) %.2f M items/s", pairs[i], z,
                        batch);
            }
            if (pairs[i] == 1 && qv_built(QV_CK)) {
                double ck = sb_summarize(p[QV_CK].mips, p[QV_CK].runs).med;
                sb_verdict("Q1", sqf * 1.5 >= ck,
                           "1 pair, %zu B: sqf %.2f M items/s, %.2fx ck_ring's %.2f (target >= "
                           "1/1.5)",
                           z, sqf, sqf / ck, ck);
            }
        }
}

int sb_run_q1(void)
{
    int pairs[SB_MAX_LIST];
    int np = sb.quick ? sb_list_or(sb.threads, sb.nthreads, q1_quick_pairs, 2, pairs)
                      : sb_list_or(sb.threads, sb.nthreads, q1_default_pairs, 5, pairs);
    static const size_t sizes_full[] = {8, 256}, sizes_quick[] = {8};
    const size_t *sizes = sb.quick ? sizes_quick : sizes_full;
    int ns = sb.quick ? 1 : 2;
    double secs = sb.duration_s > 0 ? sb.duration_s : sb.quick ? 0.1 : 0.5;
    int runs = sb.runs < Q1_MAX_RUNS ? sb.runs : Q1_MAX_RUNS;
    sb_heading("Q1", "queue throughput: P producers and P consumers, capacity 1024");
    char place[128];
    sb_placement(place, sizeof place);
    printf("  (%s; %.2f s per run, median of %d runs; M items/s [min-max] and CPU ns per item)\n",
           place, secs, runs);
    for (int v = 0; v < QV_N; v++)
        if (!qv_built(v))
            printf("  %s: not built (its Debian package was not found)\n", qv_name[v]);
    q1_measure(pairs, np, sizes, ns, secs, runs);
    q1_print(pairs, np, sizes, ns);
    q1_judge(pairs, np, sizes, ns);
    return 0;
}

/* ==== Q2 ===================================================================== */

static const int q2_default_n[] = {100, 200, 400, 800, 1600};
static const int q2_quick_n[] = {100, 200, 400};
enum { Q2_EVENT = QV_N, Q2_NV }; /* S4's event wake-all, the reference */

static struct {
    struct bq q;
    sqf_event ev;
    int v;
    atomic_int asleep, got;
    atomic_llong t_end;
} q2;

static void *q2_consumer(void *arg)
{
    (void)arg;
    struct item256 it;
    atomic_fetch_add(&q2.asleep, 1);
    if (q2.v == Q2_EVENT)
        sqf_event_wait(&q2.ev);
    else if (bq_pop(&q2.q, &it, 1) != 1)
        return NULL;
    if (atomic_fetch_add(&q2.got, 1) + 1 == atomic_load(&q2.asleep))
        atomic_store(&q2.t_end, sb_now_ns());
    return NULL;
}

static double q2_run(int v, int n)
{
    char what[64];
    snprintf(what, sizeof what, "Q2 %s n=%d", v == Q2_EVENT ? "event" : qv_name[v], n);
    q2.v = v;
    atomic_store(&q2.asleep, 0);
    atomic_store(&q2.got, 0);
    atomic_store(&q2.t_end, 0);
    if (v == Q2_EVENT)
        sqf_event_init(&q2.ev, SQF_PRIVATE);
    else
        bq_init(&q2.q, v, 8, (size_t)n < Q_CAP ? Q_CAP : (size_t)n, what);
    pthread_t *t = malloc(sizeof *t * (size_t)n);
    if (!t) sb_fail("%s: out of memory", what);
    for (int i = 0; i < n; i++) {
        int e = sb_spawn(&t[i], q2_consumer, NULL);
        if (e) sb_fail("%s: the system refused thread %d (%s)", what, i + 1, strerror(e));
    }
    while (atomic_load(&q2.asleep) < n)
        sched_yield();
    struct timespec settle = {0, 20 * 1000 * 1000}; /* from "about to wait" to asleep */
    nanosleep(&settle, NULL);
    uint64_t *items = calloc((size_t)n, 8);
    if (!items) sb_fail("%s: out of memory", what);
    int64_t t0 = sb_now_ns();
    if (v == Q2_EVENT) {
        sqf_event_set(&q2.ev);
    } else if (v == QV_SQF) {
        for (size_t done = 0; done < (size_t)n;) /* one push_n (room for all) */
            done += bq_push(&q2.q, items + done, (size_t)n - done);
    } else {
        for (int i = 0; i < n; i++)
            bq_push(&q2.q, &items[i], 1);
    }
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    double secs = (double)(atomic_load(&q2.t_end) - t0) / 1e9;
    if (v != Q2_EVENT) {
        bq_close(&q2.q);
        bq_destroy(&q2.q);
    }
    free(items);
    free(t);
    return secs;
}

int sb_run_q2(void)
{
    int n[SB_MAX_LIST];
    int nn = sb.quick ? sb_list_or(sb.n, sb.nn, q2_quick_n, 3, n)
                      : sb_list_or(sb.n, sb.nn, q2_default_n, 5, n);
    /* The blocking variants only: a spinning ring would need n spinning
     * threads, and moodycamel's consumers would poll. */
    const int vs[] = {QV_SQF, QV_MC, QV_PIPE, Q2_EVENT};
    const char *names[] = {"sqf (one push_n)", "mutex+cond (n pushes)", "pipe (n writes)",
                           "event wake-all (S4)"};
    enum { NV = 4 };
    sb_heading("Q2", "n consumers asleep on an empty queue, one producer pushes n items");
    char place[128];
    sb_placement(place, sizeof place);
    printf("  (%s; seconds until every consumer has its item: median [min-max] of %d runs)\n",
           place, sb.runs);
    static double t[NV][SB_MAX_LIST][64];
    struct sb_sum s[NV][SB_MAX_LIST];
    int runs = sb.runs < 64 ? sb.runs : 64;
    sb_progress_begin("Q2", (long)nn * NV * runs);
    for (int r = 0; r < runs; r++)
        for (int i = 0; i < nn; i++)
            for (int j = 0; j < NV; j++) {
                t[j][i][r] = q2_run(vs[j], n[i]);
                sb_record("Q2", names[j], n[i], n[i], r, "seconds", t[j][i][r], "ok");
                sb_progress_step();
            }
    sb_progress_end();
    printf("  %6s", "n");
    for (int j = 0; j < NV; j++)
        printf(" | %-27s", names[j]);
    printf("\n");
    double x[SB_MAX_LIST], y[NV][SB_MAX_LIST], k[NV];
    for (int i = 0; i < nn; i++) {
        printf("  %6d", n[i]);
        x[i] = n[i];
        for (int j = 0; j < NV; j++) {
            s[j][i] = sb_summarize(t[j][i], runs);
            y[j][i] = s[j][i].med;
            char b[64];
            snprintf(b, sizeof b, "%.5f [%.5f-%.5f]", s[j][i].med, s[j][i].min, s[j][i].max);
            printf(" | %-27s", b);
        }
        printf("\n");
    }
    printf("  %6s", "k");
    for (int j = 0; j < NV; j++) {
        k[j] = sb_exponent(x, y[j], nn);
        printf(" | %-27.2f", k[j]);
    }
    printf("\n");
    sb_verdict("Q2", k[0] <= k[3] + 0.05,
               "sqf exponent %.2f (target <= the event wake-all's %.2f + 0.05, same run)", k[0],
               k[3]);
    sb_note("Q2: at n=%d sqf %.2fx the mutex+cond idiom's time, %.2fx the event wake-all's",
            n[nn - 1], s[0][nn - 1].med / s[1][nn - 1].med, s[0][nn - 1].med / s[3][nn - 1].med);
    return 0;
}
