/* wake.c: W1, wake-all latency (BENCHMARKS.md "W1").  k threads sleep; one
 * thread wakes them all; how long until the LAST of them runs?
 *
 * Variants:
 *   futex-floor   a raw FUTEX_WAKE of all on one word: the floor a kernel-
 *                 mediated wake can reach
 *   pthread-cond  waiters in pthread_cond_wait on a predicate under a mutex;
 *                 the waker locks, changes it, broadcasts, unlocks.  A waiter
 *                 has run once it has re-acquired and released the mutex.
 *   c++20-latch   std::latch, count 1: wait() / count_down() (a fresh latch
 *                 every run: it cannot be re-armed)
 *   sqf-event     sqf_event_wait / sqf_event_set (cleared between runs)
 *   sqf-latch     sqf_latch_wait / sqf_latch_count_down (count 1)
 *   nsync-note    nsync_note_wait (no deadline) / nsync_note_notify (a fresh
 *                 note every run: it cannot be cleared)
 *   absl-notification
 *                 absl::Notification WaitForNotification / Notify (a fresh
 *                 one every run, likewise)
 *
 * Verdicts: sqf-event and sqf-latch against pthread-cond at the largest k,
 * and their exponents against futex-floor's (+ 0.05) in the same run.
 *
 * Timing: t0 just before the wake call; each waiter stores the time as soon
 * as its wait returns; a run's figure is the latest waiter's time - t0.  The
 * waker then sleeps on a counter the waiters bump, taking no CPU from them.
 *
 * Asleep before the wake: each waiter flags the run just before its blocking
 * call, then the waker reads /proc/self/task/TID/stat (state 'S') and
 * /proc/self/task/TID/syscall (inside futex(); for futex-floor and
 * pthread-cond on the variant's own object, so a waiter still queued on the
 * mutex does not count) until every waiter is seen asleep, then checks all
 * once more.  Timing a wake of threads that are still running would flatter
 * everyone.  Where /proc cannot tell, the check falls back to state 'S' or
 * to a 10 ms sleep, and the report says so.
 *
 * A run is one wake (as bench/wake_all.c did): k waiters make each wake
 * long enough to time, and the median over runs absorbs the noise.
 * One pool of k threads serves every variant and run at that k; runs are
 * interleaved (round r runs every variant once, starting at a different
 * one each round, so a noisy moment does not always hit the same variant).
 * A run not over after the time limit is "> limit" and the variant's larger
 * k are skipped; waiters still asleep a minute later are a lost wake-up: the
 * program stops. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <squarefree.h>

#ifdef SQB_HAVE_NSYNC
#include <nsync_note.h>
#include <nsync_time.h>
#endif
#ifdef SQB_HAVE_ABSL
#include "absl.h"
#endif

#include "cxx.h"
#include "sqbench.h"

#define W_MAX_RUNS 1000
#define W_SETTLE   200000LL      /* ns between looks at the waiters */
#define W_ASLEEP   10000000000LL /* give up confirming them asleep */
#define W_GRACE    60000000000LL /* after the limit: then it is a hang */
#define W_FIT_MIN  16            /* exponents over k >= this */

enum { V_FLOOR, V_COND, V_CXX, V_EVENT, V_LATCH, V_NSYNC, V_ABSL, W_NV };

static const struct {
    const char *name;
    int built;
} wv[W_NV] = {
    {"futex-floor", 1},       {"pthread-cond", 1},
#ifdef SQB_HAVE_CXX20
    {"c++20-latch", 1},
#else
    {"c++20-latch", 0},
#endif
    {"sqf-event", 1},         {"sqf-latch", 1},
#ifdef SQB_HAVE_NSYNC
    {"nsync-note", 1},
#else
    {"nsync-note", 0},
#endif
#ifdef SQB_HAVE_ABSL
    {"absl-notification", 1},
#else
    {"absl-notification", 0},
#endif
};

static const int w_default_k[] = {1, 4, 16, 64, 256, 1024};

/* --- state shared by the waker (main thread) and the pool ------------------ */

static struct {
    /* The pool sleeps on ctrl between runs; the waker bumps it to start one
     * (variant and quit are written before). */
    _Alignas(128) atomic_uint ctrl;
    int variant, quit, k;
    _Alignas(128) atomic_uint done; /* waiters that have stored their time */
    atomic_int failed;              /* an error from a wait call */
    _Alignas(128) pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned gen; /* pthread-cond's predicate, under mu */
    _Alignas(128) atomic_uint fword;
    _Alignas(128) sqf_event ev;
    _Alignas(128) sqf_latch sl;
#ifdef SQB_HAVE_CXX20
    sqb_cxx_latch *cxx;
#endif
#ifdef SQB_HAVE_NSYNC
    nsync_note nn;
#endif
#ifdef SQB_HAVE_ABSL
    sqb_absl_note *an;
#endif
} S = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

struct waiter {
    _Alignas(128) atomic_uint armed; /* the run it is about to sleep in */
    atomic_int started;
    pid_t tid;
    int64_t woke;
};

static struct waiter *W;
static pthread_t *pool;
static unsigned char *seen;
static int npool;

static long futex(atomic_uint *w, int op, unsigned val, const struct timespec *ts)
{
    return syscall(SYS_futex, (unsigned *)w, op, val, ts, NULL, FUTEX_BITSET_MATCH_ANY);
}

static void sleep_ns(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    w->tid = (pid_t)syscall(SYS_gettid);
    unsigned run = atomic_load(&S.ctrl);
    atomic_store(&w->started, 1);
    for (;;) {
        unsigned c;
        while ((c = atomic_load(&S.ctrl)) == run)
            futex(&S.ctrl, FUTEX_WAIT_PRIVATE, run, NULL);
        run = c;
        if (S.quit) return NULL;
        int v = S.variant, err = 0;
        switch (v) {
        case V_FLOOR: {
            unsigned val = atomic_load(&S.fword);
            atomic_store(&w->armed, run);
            while (atomic_load(&S.fword) == val)
                futex(&S.fword, FUTEX_WAIT_PRIVATE, val, NULL);
            break;
        }
        case V_COND: {
            pthread_mutex_lock(&S.mu);
            unsigned gen = S.gen;
            atomic_store(&w->armed, run);
            while (S.gen == gen && !err)
                err = pthread_cond_wait(&S.cv, &S.mu);
            pthread_mutex_unlock(&S.mu);
            break;
        }
#ifdef SQB_HAVE_CXX20
        case V_CXX:
            atomic_store(&w->armed, run);
            sqb_cxx_latch_wait(S.cxx);
            break;
#endif
        case V_EVENT:
            atomic_store(&w->armed, run);
            err = sqf_event_wait(&S.ev);
            break;
        case V_LATCH:
            atomic_store(&w->armed, run);
            err = sqf_latch_wait(&S.sl);
            break;
#ifdef SQB_HAVE_NSYNC
        case V_NSYNC:
            atomic_store(&w->armed, run);
            err = nsync_note_wait(S.nn, nsync_time_no_deadline) ? 0 : ETIMEDOUT;
            break;
#endif
#ifdef SQB_HAVE_ABSL
        case V_ABSL:
            atomic_store(&w->armed, run);
            sqb_absl_note_wait(S.an);
            break;
#endif
        default:
            err = EINVAL;
        }
        w->woke = sb_now_ns();
        if (err) atomic_store(&S.failed, err);
        if (atomic_fetch_add(&S.done, 1) + 1 == (unsigned)S.k)
            futex(&S.done, FUTEX_WAKE_PRIVATE, 1, NULL);
    }
}

/* --- are the waiters asleep? ---------------------------------------------------- */

enum { CHECK_SYSCALL, CHECK_STATE, CHECK_NONE };
static int check = CHECK_NONE;
static int task_dir = -1;

static int task_read(pid_t tid, const char *what, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "%d/%s", (int)tid, what);
    int fd = openat(task_dir, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    return 0;
}

/* 1 if tid sleeps ('S') inside futex() (on [lo, hi) if lo), as far as the
 * check method can tell. */
static int task_asleep(pid_t tid, uintptr_t lo, uintptr_t hi, int method)
{
    char buf[512];
    if (task_read(tid, "stat", buf, sizeof buf) < 0) return 0;
    const char *p = strrchr(buf, ')'); /* the name may hold spaces and parens */
    if (!p || p[1] != ' ' || p[2] != 'S') return 0;
    if (method != CHECK_SYSCALL) return 1;
    if (task_read(tid, "syscall", buf, sizeof buf) < 0) return 0;
    char *end;
    long nr = strtol(buf, &end, 10); /* "running" while on a CPU */
    if (end == buf || nr != SYS_futex) return 0;
    if (lo) {
        unsigned long long a = strtoull(end, NULL, 16);
        if (a < lo || a >= hi) return 0;
    }
    return 1;
}

static atomic_uint probe_word;
static atomic_int probe_tid;

static void *probe_main(void *arg)
{
    (void)arg;
    atomic_store(&probe_tid, (int)syscall(SYS_gettid));
    while (atomic_load(&probe_word) == 0)
        futex(&probe_word, FUTEX_WAIT_PRIVATE, 0, NULL);
    return NULL;
}

/* Which view of a sleeping thread does this kernel give us? */
static void probe_check(void)
{
    task_dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (task_dir < 0) return;
    pthread_t t;
    if (sb_spawn(&t, probe_main, NULL) != 0) return;
    uintptr_t lo = (uintptr_t)&probe_word;
    for (int i = 0; i < 1000 && check == CHECK_NONE; i++) {
        sleep_ns(1000000);
        pid_t tid = atomic_load(&probe_tid);
        if (tid && task_asleep(tid, lo, lo + 4, CHECK_SYSCALL)) check = CHECK_SYSCALL;
    }
    if (check == CHECK_NONE && task_asleep(atomic_load(&probe_tid), 0, 0, CHECK_STATE))
        check = CHECK_STATE;
    atomic_store(&probe_word, 1);
    futex(&probe_word, FUTEX_WAKE_PRIVATE, 1, NULL);
    pthread_join(t, NULL);
}

static void confirm_asleep(int k, unsigned run, int v, const char *what)
{
    uintptr_t lo = 0, hi = 0;
    if (v == V_COND) lo = (uintptr_t)&S.cv, hi = lo + sizeof S.cv;
    if (v == V_FLOOR) lo = (uintptr_t)&S.fword, hi = lo + sizeof S.fword;
    memset(seen, 0, (size_t)k);
    int64_t give_up = sb_now_ns() + W_ASLEEP;
    for (;;) {
        sleep_ns(W_SETTLE);
        int missing = 0;
        for (int i = 0; i < k; i++) {
            if (seen[i]) continue;
            if (atomic_load(&W[i].armed) == run &&
                (check == CHECK_NONE || task_asleep(W[i].tid, lo, hi, check)))
                seen[i] = 1;
            else
                missing++;
        }
        if (missing == 0) {
            if (check == CHECK_NONE) {
                sleep_ns(10000000);
                return;
            }
            for (int i = 0; i < k; i++) /* all still asleep? */
                if (!task_asleep(W[i].tid, lo, hi, check)) seen[i] = 0, missing++;
            if (missing == 0) return;
        }
        if (sb_now_ns() > give_up)
            sb_fail("%s: %d of %d waiters not seen asleep in the wait after 10 s", what, missing,
                    k);
    }
}

/* --- the pool ------------------------------------------------------------------ */

static void pool_stop(void)
{
    S.quit = 1;
    atomic_fetch_add(&S.ctrl, 1);
    futex(&S.ctrl, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
    for (int i = 0; i < npool; i++)
        pthread_join(pool[i], NULL);
    npool = 0;
    free(W);
    free(pool);
    free(seen);
}

static void pool_start(int k)
{
    W = aligned_alloc(128, (size_t)k * sizeof *W);
    pool = malloc((size_t)k * sizeof *pool);
    seen = malloc((size_t)k);
    if (!W || !pool || !seen) sb_fail("W1: out of memory for %d waiters", k);
    memset(W, 0, (size_t)k * sizeof *W);
    S.k = k;
    S.quit = 0;
    for (int i = 0; i < k; i++) {
        int e = sb_spawn(&pool[i], waiter_main, &W[i]);
        if (e)
            sb_fail("W1: the system refused thread %d of %d (pthread_create: %s); try a smaller "
                    "--n",
                    i + 1, k, strerror(e));
        npool++;
    }
    for (int i = 0; i < k; i++)
        while (!atomic_load(&W[i].started))
            sleep_ns(100000);
}

/* --- one run ------------------------------------------------------------------- */

static int wake(int v)
{
    switch (v) {
    case V_FLOOR:
        atomic_fetch_add(&S.fword, 1);
        futex(&S.fword, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
        return 0;
    case V_COND: {
        pthread_mutex_lock(&S.mu);
        S.gen++;
        int e = pthread_cond_broadcast(&S.cv);
        pthread_mutex_unlock(&S.mu);
        return e;
    }
#ifdef SQB_HAVE_CXX20
    case V_CXX:
        sqb_cxx_latch_count_down(S.cxx);
        return 0;
#endif
    case V_EVENT:
        return sqf_event_set(&S.ev);
    case V_LATCH:
        return sqf_latch_count_down(&S.sl, 1);
#ifdef SQB_HAVE_NSYNC
    case V_NSYNC:
        nsync_note_notify(S.nn);
        return 0;
#endif
#ifdef SQB_HAVE_ABSL
    case V_ABSL:
        sqb_absl_note_notify(S.an);
        return 0;
#endif
    }
    return EINVAL;
}

/* 1 once all k are done, 0 if the deadline passed first. */
static int wait_done(unsigned k, int64_t deadline)
{
    unsigned d;
    while ((d = atomic_load(&S.done)) < k) {
        int64_t now = sb_now_ns();
        if (now >= deadline) return 0;
        struct timespec ts = {(time_t)((deadline - now) / 1000000000),
                              (long)((deadline - now) % 1000000000)};
        futex(&S.done, FUTEX_WAIT_PRIVATE, d, &ts);
    }
    return 1;
}

/* Seconds from the wake call to the last waiter running; *over set if that
 * passed the limit. */
static double run_once(int v, int k, const char *what, int *over)
{
    switch (v) { /* fresh objects: every waiter of the last run has returned */
#ifdef SQB_HAVE_CXX20
    case V_CXX:
        if (S.cxx) sqb_cxx_latch_del(S.cxx);
        S.cxx = sqb_cxx_latch_new(1);
        if (!S.cxx) sb_fail("%s: out of memory", what);
        break;
#endif
    case V_EVENT:
        sqf_event_clear(&S.ev);
        break;
    case V_LATCH:
        sqf_latch_init(&S.sl, 1, SQF_PRIVATE);
        break;
#ifdef SQB_HAVE_NSYNC
    case V_NSYNC:
        if (S.nn) nsync_note_free(S.nn);
        S.nn = nsync_note_new(NULL, nsync_time_no_deadline);
        if (!S.nn) sb_fail("%s: out of memory", what);
        break;
#endif
#ifdef SQB_HAVE_ABSL
    case V_ABSL:
        if (S.an) sqb_absl_note_del(S.an);
        S.an = sqb_absl_note_new();
        if (!S.an) sb_fail("%s: out of memory", what);
        break;
#endif
    }
    atomic_store(&S.done, 0);
    atomic_store(&S.failed, 0);
    S.variant = v;
    unsigned run = atomic_fetch_add(&S.ctrl, 1) + 1;
    futex(&S.ctrl, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
    confirm_asleep(k, run, v, what);

    int64_t t0 = sb_now_ns();
    int e = wake(v);
    int in_time = wait_done((unsigned)k, t0 + (int64_t)(sb.limit_s * 1e9));
    if (!in_time && !wait_done((unsigned)k, sb_now_ns() + W_GRACE))
        sb_fail("%s: waiters still asleep 60 s after the wake (a lost wake-up)", what);
    if (e || atomic_load(&S.failed)) sb_fail("%s: a wait or wake call failed", what);
    int64_t last = t0;
    for (int i = 0; i < k; i++) {
        if (W[i].woke < t0) sb_fail("%s: a waiter returned before the wake call", what);
        if (W[i].woke > last) last = W[i].woke;
    }
    /* The waker may only get a CPU after the waiters ran, past the deadline:
     * the waiters' own times decide too. */
    double s = (double)(last - t0) / 1e9;
    *over = !in_time || s > sb.limit_s;
    return s;
}

/* --- the experiment ---------------------------------------------------------------- */

static double w_us[W_NV][SB_MAX_LIST][W_MAX_RUNS];
static int w_over[W_NV][SB_MAX_LIST]; /* 1 limit, 2 skipped */

/* Median at point i, or INFINITY if that point hit the limit. */
static double w_med(struct sb_sum sum[][SB_MAX_LIST], int over[][SB_MAX_LIST], int v, int i)
{
    return over[v][i] ? INFINITY : sum[v][i].med;
}

static const char *w_us_text(char *buf, size_t len, double us)
{
    snprintf(buf, len, isfinite(us) ? "%.0f us" : "> limit", us);
    return buf;
}

/* a / b; over the limit on one side only is still an answer. */
static const char *w_ratio(char *buf, size_t len, double a, double b)
{
    if (isfinite(a) && isfinite(b))
        snprintf(buf, len, "%.2fx", a / b);
    else if (isfinite(a) || isfinite(b))
        snprintf(buf, len, isfinite(a) ? "< 1 (limit)" : "> 1 (limit)");
    else
        snprintf(buf, len, "- (limit)");
    return buf;
}

/* Every run of every variant at every k, the variants' order rotated per
 * run; a variant over the limit at one k is skipped at the larger ones. */
static void w1_measure(const int *ks, int nk)
{
    memset(w_over, 0, sizeof w_over);
    long steps = 0;
    for (int v = 0; v < W_NV; v++)
        steps += wv[v].built ? (long)nk * sb.runs : 0;
    sb_progress_begin("W1", steps);
    for (int i = 0; i < nk; i++) {
        pool_start(ks[i]);
        for (int run = 0; run < sb.runs; run++)
            for (int o = 0; o < W_NV; o++) {
                int v = (o + run) % W_NV;
                if (!wv[v].built) continue;
                const char *name = wv[v].name;
                if (w_over[v][i] || (i > 0 && w_over[v][i - 1])) {
                    if (!w_over[v][i]) w_over[v][i] = 2;
                    w_us[v][i][run] = NAN;
                    sb_record("W1", name, ks[i], ks[i], run, "latency_us", NAN, "skipped");
                } else {
                    char what[64];
                    snprintf(what, sizeof what, "W1 %s k=%d", name, ks[i]);
                    int over;
                    double s = run_once(v, ks[i], what, &over);
                    w_us[v][i][run] = over ? NAN : s * 1e6;
                    if (over) w_over[v][i] = 1;
                    sb_record("W1", name, ks[i], ks[i], run, "latency_us", s * 1e6,
                              over ? "limit" : "ok");
                }
                sb_progress_step();
            }
        pool_stop();
    }
    sb_progress_end();
}

/* The summaries the table and the verdicts read: each point's median
 * [min-max] (NaN when over the limit or not built), and each variant's
 * fitted exponent over k >= W_FIT_MIN. */
static struct sb_sum w_sum[W_NV][SB_MAX_LIST];
static double w_kexp[W_NV];
static char w_kx[W_NV][16];

static void w1_summarize(const int *ks, int nk)
{
    for (int v = 0; v < W_NV; v++) {
        double xs[SB_MAX_LIST], ys[SB_MAX_LIST];
        int n = 0;
        for (int i = 0; i < nk; i++) {
            w_sum[v][i] = w_over[v][i] || !wv[v].built ? (struct sb_sum){NAN, NAN, NAN, 0}
                                                       : sb_summarize(w_us[v][i], sb.runs);
            if (ks[i] >= W_FIT_MIN) xs[n] = ks[i], ys[n++] = w_sum[v][i].med;
        }
        w_kexp[v] = sb_exponent(xs, ys, n);
        snprintf(w_kx[v], sizeof w_kx[v], isnan(w_kexp[v]) ? "-" : "%.2f", w_kexp[v]);
    }
}

/* Table: k down, variants across; medians in us with [min-max], then
 * sqf / pthread-cond as a ratio of medians; the exponents below. */
static void w1_print(const int *ks, int nk)
{
    printf("  %5s", "k");
    for (int v = 0; v < W_NV; v++)
        printf(" | %-21s", wv[v].name);
    printf(" | %-11s | %-11s\n", "event/cond", "latch/cond");
    for (int i = 0; i < nk; i++) {
        printf("  %5d", ks[i]);
        for (int v = 0; v < W_NV; v++) {
            char c[64];
            if (!wv[v].built)
                snprintf(c, sizeof c, "not built");
            else if (w_over[v][i])
                snprintf(c, sizeof c, "> limit%s", w_over[v][i] == 2 ? " (skipped)" : "");
            else
                sb_fmt_sum(c, sizeof c, w_sum[v][i], 1, w_sum[v][i].med < 100 ? 1 : 0);
            printf(" | %-21s", c);
        }
        for (int v = V_EVENT; v <= V_LATCH; v++) {
            char c[32];
            w_ratio(c, sizeof c, w_med(w_sum, w_over, v, i), w_med(w_sum, w_over, V_COND, i));
            printf(" | %-11s", c);
        }
        printf("\n");
    }
    printf("  %5s", "k>=16");
    for (int v = 0; v < W_NV; v++) {
        char c[32];
        snprintf(c, sizeof c, isnan(w_kexp[v]) ? "-" : "exponent %.2f", w_kexp[v]);
        printf(" | %-21s", c);
    }
    printf("\n  (microseconds from the wake call until the last waiter runs: median [min-max] of "
           "%d runs,\n   one wake per run; x/cond: ratio of medians; exponent: slope of log(time) "
           "over log(k)\n   for k >= %d, ~1 is linear)\n",
           sb.runs, W_FIT_MIN);
    if (!wv[V_CXX].built)
        sb_note("W1: c++20-latch not built (the C++ compiler has no C++20 <latch>)");
    if (!wv[V_NSYNC].built) sb_note("W1: nsync-note not built (no nsync: Debian libnsync-dev)");
    if (!wv[V_ABSL].built)
        sb_note("W1: absl-notification not built (no Abseil: Debian libabsl-dev)");
}

/* The verdicts (BENCHMARKS.md "W1") and the peers' figures. */
static void w1_judge(const int *ks, int nk)
{
    /* A point over the limit counts as infinitely slow (as in square.c). */
    int last = nk - 1;
    double cond = w_med(w_sum, w_over, V_COND, last);
    for (int v = V_EVENT; v <= V_LATCH; v++) {
        double m = w_med(w_sum, w_over, v, last);
        char a[32], b[32], r[32];
        sb_verdict("W1", isfinite(m) && m <= cond,
                   "%s at k=%d: %s vs pthread-cond %s: %s (target <= 1); exponent %s vs "
                   "pthread-cond %s",
                   wv[v].name, ks[last], w_us_text(a, sizeof a, m), w_us_text(b, sizeof b, cond),
                   w_ratio(r, sizeof r, m, cond), w_kx[v], w_kx[V_COND]);
    }
    if (isnan(w_kexp[V_FLOOR]))
        sb_note("W1: no exponent verdicts: fitting an exponent needs at least two k >= %d",
                W_FIT_MIN);
    else
        for (int v = V_EVENT; v <= V_LATCH; v++)
            sb_verdict("W1", w_kexp[v] <= w_kexp[V_FLOOR] + 0.05,
                       "%s exponent %s over k >= %d (target <= futex-floor's %s + 0.05)",
                       wv[v].name, w_kx[v], W_FIT_MIN, w_kx[V_FLOOR]);
    /* Every variant's raw exponent, then the peers' latency at the largest k
     * beside the floor's. */
    char line[400], a[32];
    size_t len = 0;
    for (int v = 0; v < W_NV; v++)
        len += (size_t)snprintf(line + len, sizeof line - len, "%s%s %s", v ? ", " : "", wv[v].name,
                                wv[v].built ? w_kx[v] : "not built");
    sb_note("W1: exponents over k >= %d: %s", W_FIT_MIN, line);
    len = 0;
    for (int v = 0; v < W_NV; v++)
        if (wv[v].built && (v == V_FLOOR || v == V_CXX || v == V_NSYNC || v == V_ABSL))
            len +=
                (size_t)snprintf(line + len, sizeof line - len, "%s%s %s", len ? ", " : "",
                                 wv[v].name, w_us_text(a, sizeof a, w_med(w_sum, w_over, v, last)));
    sb_note("W1: at k=%d %s", ks[last], line);
}

int sb_run_w1(void)
{
    sb_heading("W1", "wake-all latency: k sleeping waiters, one wakes them all");
    int ks[SB_MAX_LIST];
    int nk = sb_list_or(sb.n, sb.nn, w_default_k, SB_LEN(w_default_k), ks);
    if (check == CHECK_NONE && task_dir < 0) probe_check();
    sb_note("asleep check: %s",
            check == CHECK_SYSCALL ? "each waiter flagged, then in futex() per /proc (exact)"
            : check == CHECK_STATE ? "each waiter flagged, then state S per /proc (weaker)"
                                   : "each waiter flagged, then 10 ms (weak: /proc unreadable)");
    sqf_event_init(&S.ev, SQF_PRIVATE);

    w1_measure(ks, nk);
    w1_summarize(ks, nk);
    w1_print(ks, nk);
    w1_judge(ks, nk);

#ifdef SQB_HAVE_NSYNC
    if (S.nn) nsync_note_free(S.nn);
    S.nn = NULL;
#endif
#ifdef SQB_HAVE_ABSL
    if (S.an) sqb_absl_note_del(S.an);
    S.an = NULL;
#endif
    return 0;
}
