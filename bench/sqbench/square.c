/* square.c: the square experiments S1-S5 of seeds/000 (BENCHMARKS.md "S").
 *
 * Each experiment starts n threads, wakes or serialises them while the
 * others keep "working" (sched_yield in a loop, like the seed's
 * time.sleep(0)), for n = 100 .. 1600, and fits the exponent of time over n:
 * 2 is the square, 1 is linear.  The variants run interleaved: run r of
 * every variant at every n, then run r+1.
 *
 * Time limit: every polling loop gives up once a run is sb.limit_s old, so
 * a run that hits the limit ends soon after; it is recorded as "limit" and
 * the larger n of that variant as "skipped".  Blocking waits cannot give up;
 * a watchdog ends the program (one line, exit 2) if a run is still going a
 * minute past its limit, because that is a hang, not a slow point. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <squarefree.h>

#include "cxx.h"
#include "sqbench.h"

#define S_MAX_VARIANTS 6
#define S_PASSES       10                  /* S5: barrier passes per run */
#define S_HANG_NS      (60 * 1000000000LL) /* watchdog grace after the limit */

/* --- the clock of one run, shared by every variant ---------------------- */

static int64_t s_deadline;          /* sb.limit_s after the run began */
static atomic_int s_expired;        /* some loop saw the deadline pass */
static atomic_llong s_start, s_end; /* timed section, set by the threads */
static const char *s_running;       /* "S2 seed n=1600" for the watchdog */
static atomic_int s_active;

/* The seed's "work": one scheduler pass, until cond holds or time is up. */
static inline int s_over(void)
{
    if (atomic_load_explicit(&s_expired, memory_order_relaxed)) return 1;
    if (sb_now_ns() <= s_deadline) return 0;
    atomic_store_explicit(&s_expired, 1, memory_order_relaxed);
    return 1;
}
#define S_POLL(cond)                                                                               \
    do {                                                                                           \
        while (!(cond) && !s_over())                                                               \
            sb_work();                                                                             \
    } while (0)

static void s_mark_start(void)
{
    long long zero = 0;
    atomic_compare_exchange_strong(&s_start, &zero, (long long)sb_now_ns());
}

static void *s_watchdog(void *arg)
{
    (void)arg;
    for (;;) {
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL);
        if (atomic_load(&s_active) && sb_now_ns() > s_deadline + S_HANG_NS)
            sb_fail("%s: still running 60 s after its time limit: a hang", s_running);
    }
    return NULL;
}

/* --- threads ------------------------------------------------------------- */

static pthread_t *s_threads;
static int s_cap;
static char s_what[64];

static void s_threads_for(int n)
{
    if (n <= s_cap) return;
    free(s_threads);
    s_threads = malloc(sizeof *s_threads * (size_t)n);
    if (!s_threads) sb_fail("%s: out of memory for %d threads", s_what, n);
    s_cap = n;
}

static void s_start_thread(int i, int n, void *(*fn)(void *), void *arg)
{
    int e = sb_spawn(&s_threads[i], fn, arg);
    if (e)
        sb_fail("%s: the system refused thread %d of %d (pthread_create: %s); try a smaller --n",
                s_what, i + 1, n, strerror(e));
}

static void s_join_all(int n)
{
    for (int i = 0; i < n; i++)
        pthread_join(s_threads[i], NULL);
}

/* ==== S1: start ===========================================================
 * n threads started; each counts itself in, then works until all have
 * started; time from the first create to the last join. */

static struct {
    int n;
    atomic_int left; /* threads not yet started */
    sem_t started;   /* seed-wait: "I have started", as Thread.start waits for */
    pthread_barrier_t barrier;
    sqf_latch latch;
#ifdef SQB_HAVE_CXX20
    sqb_cxx_latch *cxx;
#endif
} s1;

static void *s1_seed(void *arg)
{
    (void)arg;
    atomic_fetch_sub(&s1.left, 1);
    S_POLL(atomic_load(&s1.left) == 0);
    return NULL;
}

static void *s1_seed_wait(void *arg)
{
    sem_post(&s1.started);
    return s1_seed(arg);
}

static void *s1_pthread(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&s1.barrier);
    return NULL;
}

static void *s1_sqf(void *arg)
{
    (void)arg;
    sqf_latch_arrive_and_wait(&s1.latch, 1);
    return NULL;
}

#ifdef SQB_HAVE_CXX20
static void *s1_cxx(void *arg)
{
    (void)arg;
    sqb_cxx_latch_arrive_and_wait(s1.cxx);
    return NULL;
}
#endif

/* The floor: threads that synchronise nothing; what creating and joining n
 * threads costs on this machine, which no variant can beat. */
static void *s1_floor(void *arg)
{
    return arg;
}

static int64_t s1_run(int v, int n)
{
    static void *(*const fns[])(void *) = {s1_floor, s1_seed, s1_seed_wait, s1_pthread, s1_sqf,
#ifdef SQB_HAVE_CXX20
                                           s1_cxx
#endif
    };
    s1.n = n;
    atomic_store(&s1.left, n);
    if (sem_init(&s1.started, 0, 0) != 0) sb_fail("S1: sem_init: %s", strerror(errno));
    if (pthread_barrier_init(&s1.barrier, NULL, (unsigned)n) != 0) sb_fail("S1: barrier init");
    if (sqf_latch_init(&s1.latch, (unsigned)n, 0) != 0) sb_fail("S1: sqf_latch_init");
#ifdef SQB_HAVE_CXX20
    s1.cxx = sqb_cxx_latch_new(n);
    if (!s1.cxx) sb_fail("S1: std::latch: out of memory");
#endif
    int64_t t0 = sb_now_ns();
    for (int i = 0; i < n; i++) {
        s_start_thread(i, n, fns[v], NULL);
        if (v == 2) sem_wait(&s1.started);
    }
    s_join_all(n);
    int64_t t = sb_now_ns() - t0;
    sem_destroy(&s1.started);
    pthread_barrier_destroy(&s1.barrier);
    sqf_latch_destroy(&s1.latch);
#ifdef SQB_HAVE_CXX20
    sqb_cxx_latch_del(s1.cxx);
#endif
    return t;
}

/* ==== S2: mutex ============================================================
 * All n threads queue on one lock; the first holds it until all are queued
 * (counted in), then each, after its turn, works until all have had theirs;
 * time from the first release to the last join. */

static struct {
    int n;
    atomic_int in;   /* counted in before the lock */
    atomic_int done; /* seed: threads through the lock... counted down */
    int first_seen;  /* guarded by the lock */
    pthread_mutex_t pm;
    pthread_barrier_t barrier;
    sqf_mutex m;
    sqf_countdown batch;
} s2;

/* The critical section: the first thread in waits until everyone is queued
 * (the seed's polling inside the lock), then starts the clock. */
static void s2_section(void *arg)
{
    (void)arg;
    if (!s2.first_seen) {
        s2.first_seen = 1;
        S_POLL(atomic_load(&s2.in) == s2.n);
        s_mark_start();
    }
}

/* After its turn, a seed thread works until everyone has had theirs. */
static void s2_after_seed(void)
{
    atomic_fetch_sub(&s2.done, 1);
    S_POLL(atomic_load(&s2.done) == 0);
}

static void *s2_seed(void *arg)
{
    (void)arg;
    atomic_fetch_add(&s2.in, 1);
    pthread_mutex_lock(&s2.pm);
    s2_section(NULL);
    pthread_mutex_unlock(&s2.pm);
    s2_after_seed();
    return NULL;
}

static void *s2_pthread(void *arg)
{
    (void)arg;
    atomic_fetch_add(&s2.in, 1);
    pthread_mutex_lock(&s2.pm);
    s2_section(NULL);
    pthread_mutex_unlock(&s2.pm);
    pthread_barrier_wait(&s2.barrier);
    return NULL;
}

static void *s2_sqf(void *arg)
{
    (void)arg;
    sqf_countdown_up(&s2.batch, 1); /* n is not known to this code */
    atomic_fetch_add(&s2.in, 1);
    sqf_mutex_lock(&s2.m);
    s2_section(NULL);
    sqf_mutex_unlock(&s2.m);
    sqf_countdown_down(&s2.batch);
    sqf_countdown_wait(&s2.batch);
    return NULL;
}

static void *s2_sqf_mutex(void *arg)
{
    (void)arg;
    atomic_fetch_add(&s2.in, 1);
    sqf_mutex_lock(&s2.m);
    s2_section(NULL);
    sqf_mutex_unlock(&s2.m);
    s2_after_seed();
    return NULL;
}

static void *s2_sqf_combine(void *arg)
{
    (void)arg;
    atomic_fetch_add(&s2.in, 1);
    sqf_mutex_combine(&s2.m, s2_section, NULL);
    s2_after_seed();
    return NULL;
}

static int64_t s2_run(int v, int n)
{
    static void *(*const fns[])(void *) = {s2_seed, s2_pthread, s2_sqf, s2_sqf_combine,
                                           s2_sqf_mutex};
    s2.n = n;
    atomic_store(&s2.in, 0);
    atomic_store(&s2.done, n);
    s2.first_seen = 0;
    pthread_mutex_init(&s2.pm, NULL);
    if (pthread_barrier_init(&s2.barrier, NULL, (unsigned)n) != 0) sb_fail("S2: barrier init");
    sqf_mutex_init(&s2.m, 0);
    sqf_countdown_init(&s2.batch, 0, 0);
    for (int i = 0; i < n; i++)
        s_start_thread(i, n, fns[v], NULL);
    s_join_all(n);
    int64_t t = sb_now_ns() - (int64_t)atomic_load(&s_start);
    pthread_mutex_destroy(&s2.pm);
    pthread_barrier_destroy(&s2.barrier);
    sqf_mutex_destroy(&s2.m);
    sqf_countdown_destroy(&s2.batch);
    return t;
}

/* ==== S3: notify ===========================================================
 * n-1 threads wait on a semaphore; the last to start releases it n-1 times;
 * each woken thread works until all are woken; time from the first release
 * to the last join. */

static struct {
    int n;
    atomic_int waiting; /* n-1 down to -1: who comes last releases */
    atomic_int woken;
    sem_t ps;
    sqf_sem s;
    sqf_latch latch;
} s3;

static void *s3_thread(void *arg)
{
    int v = (int)(intptr_t)arg;
    int n = s3.n;
    if (atomic_fetch_sub(&s3.waiting, 1) <= 0) { /* the last thread */
        s_mark_start();
        if (v == 0)
            for (int i = 0; i < n - 1; i++)
                sem_post(&s3.ps);
        else if (v == 1)
            for (int i = 0; i < n - 1; i++)
                sqf_sem_release(&s3.s, 1);
        else if (n > 1)
            sqf_sem_release(&s3.s, (unsigned)(n - 1));
    } else if (v == 0) {
        while (sem_wait(&s3.ps) != 0 && errno == EINTR) {
        }
    } else {
        sqf_sem_acquire(&s3.s);
    }
    if (v == 3) {
        sqf_latch_arrive_and_wait(&s3.latch, 1);
        return NULL;
    }
    atomic_fetch_add(&s3.woken, 1);
    S_POLL(atomic_load(&s3.woken) == n);
    return NULL;
}

static int64_t s3_run(int v, int n)
{
    s3.n = n;
    atomic_store(&s3.waiting, n - 1);
    atomic_store(&s3.woken, 0);
    sem_init(&s3.ps, 0, 0);
    sqf_sem_init(&s3.s, 0, 0, 0);
    sqf_latch_init(&s3.latch, (unsigned)n, 0);
    for (int i = 0; i < n; i++)
        s_start_thread(i, n, s3_thread, (void *)(intptr_t)v);
    s_join_all(n);
    int64_t t = sb_now_ns() - (int64_t)atomic_load(&s_start);
    sem_destroy(&s3.ps);
    sqf_sem_destroy(&s3.s);
    sqf_latch_destroy(&s3.latch);
    return t;
}

/* ==== S4: event ============================================================
 * n threads wait; one (the creator, once all n are waiting) sets; each
 * woken thread works until all are woken; time from the set to the last
 * join. */

static struct {
    int n;
    atomic_int waiting, woken;
    pthread_mutex_t pm;
    pthread_cond_t pc;
    int flag; /* guarded by pm */
    sqf_event e;
    sqf_latch latch;
#ifdef SQB_HAVE_CXX20
    sqb_cxx_latch *cxx;
#endif
} s4;

static void *s4_thread(void *arg)
{
    int v = (int)(intptr_t)arg;
    if (v == 0) {
        pthread_mutex_lock(&s4.pm);
        atomic_fetch_add(&s4.waiting, 1); /* under the mutex: asleep once the setter sees it */
        while (!s4.flag)
            pthread_cond_wait(&s4.pc, &s4.pm);
        pthread_mutex_unlock(&s4.pm);
    } else if (v == 1 || v == 2) {
        atomic_fetch_add(&s4.waiting, 1);
        sqf_event_wait(&s4.e);
    } else {
#ifdef SQB_HAVE_CXX20
        atomic_fetch_add(&s4.waiting, 1);
        sqb_cxx_latch_wait(s4.cxx);
#endif
    }
    if (v == 2) {
        sqf_latch_arrive_and_wait(&s4.latch, 1);
        return NULL;
    }
    atomic_fetch_add(&s4.woken, 1);
    S_POLL(atomic_load(&s4.woken) == s4.n);
    return NULL;
}

static int64_t s4_run(int v, int n)
{
    s4.n = n;
    atomic_store(&s4.waiting, 0);
    atomic_store(&s4.woken, 0);
    s4.flag = 0;
    pthread_mutex_init(&s4.pm, NULL);
    pthread_cond_init(&s4.pc, NULL);
    sqf_event_init(&s4.e, 0);
    sqf_latch_init(&s4.latch, (unsigned)n, 0);
#ifdef SQB_HAVE_CXX20
    s4.cxx = sqb_cxx_latch_new(1);
    if (!s4.cxx) sb_fail("S4: std::latch: out of memory");
#endif
    for (int i = 0; i < n; i++)
        s_start_thread(i, n, s4_thread, (void *)(intptr_t)v);
    /* Set once all have counted in; the condvar waiters are then asleep (they
     * counted under the mutex), the others at most a few instructions away. */
    while (atomic_load(&s4.waiting) < n)
        sb_work();
    if (v == 0) pthread_mutex_lock(&s4.pm);
    s_mark_start();
    if (v == 0) {
        s4.flag = 1;
        pthread_cond_broadcast(&s4.pc);
        pthread_mutex_unlock(&s4.pm);
    } else if (v == 1 || v == 2) {
        sqf_event_set(&s4.e);
    } else {
#ifdef SQB_HAVE_CXX20
        sqb_cxx_latch_count_down(s4.cxx);
#endif
    }
    s_join_all(n);
    int64_t t = sb_now_ns() - (int64_t)atomic_load(&s_start);
    pthread_mutex_destroy(&s4.pm);
    pthread_cond_destroy(&s4.pc);
    sqf_event_destroy(&s4.e);
    sqf_latch_destroy(&s4.latch);
#ifdef SQB_HAVE_CXX20
    sqb_cxx_latch_del(s4.cxx);
#endif
    return t;
}

/* ==== S5: barrier ==========================================================
 * n threads pass a barrier 1 + 10 times; the first pass gathers them (all
 * created), the clock runs from the first thread out of it to the last
 * thread out of the 10th pass after it. */

static struct {
    int n;
    atomic_int out; /* threads out of the last pass */
    pthread_barrier_t pb;
    sqf_barrier b;
#ifdef SQB_HAVE_CXX20
    sqb_cxx_barrier *cxx;
#endif
} s5;

static void s5_pass(int v)
{
    if (v == 0)
        pthread_barrier_wait(&s5.pb);
    else if (v == 2)
        sqf_barrier_wait(&s5.b, NULL);
    else {
#ifdef SQB_HAVE_CXX20
        sqb_cxx_barrier_arrive_and_wait(s5.cxx);
#endif
    }
}

static void *s5_thread(void *arg)
{
    int v = (int)(intptr_t)arg;
    s5_pass(v);
    s_mark_start();
    for (int i = 0; i < S_PASSES; i++)
        s5_pass(v);
    if (atomic_fetch_add(&s5.out, 1) == s5.n - 1) atomic_store(&s_end, (long long)sb_now_ns());
    return NULL;
}

static int64_t s5_run(int v, int n)
{
    s5.n = n;
    atomic_store(&s5.out, 0);
    if (pthread_barrier_init(&s5.pb, NULL, (unsigned)n) != 0) sb_fail("S5: barrier init");
    sqf_barrier_init(&s5.b, (unsigned)n, 0);
#ifdef SQB_HAVE_CXX20
    s5.cxx = sqb_cxx_barrier_new(n);
    if (!s5.cxx) sb_fail("S5: std::barrier: out of memory");
#endif
    for (int i = 0; i < n; i++)
        s_start_thread(i, n, s5_thread, (void *)(intptr_t)v);
    s_join_all(n);
    int64_t t = (int64_t)atomic_load(&s_end) - (int64_t)atomic_load(&s_start);
    pthread_barrier_destroy(&s5.pb);
    sqf_barrier_destroy(&s5.b);
#ifdef SQB_HAVE_CXX20
    sqb_cxx_barrier_del(s5.cxx);
#endif
    return t;
}

/* ==== the driver ============================================================ */

struct s_variant {
    const char *name;
    int built; /* 0: not built into this sqbench (reported, not run) */
    int sqf;   /* a squarefree variant (its exponent is a target) */
};

struct s_result {
    int nn, nv;
    int n[SB_MAX_LIST];
    struct sb_sum sum[S_MAX_VARIANTS][SB_MAX_LIST];
    int limited[S_MAX_VARIANTS][SB_MAX_LIST]; /* 1 limit, 2 skipped */
    double k[S_MAX_VARIANTS];                 /* fitted exponent */
};

static const int s_default_n[] = {100, 200, 400, 800, 1600};

static void s_table_block(const struct s_variant *v, struct s_result *r, int j0, int j1)
{
    char buf[64];
    printf("  %6s", "n");
    for (int j = j0; j < j1; j++)
        printf(" | %-27s", v[j].name);
    printf("\n  ------");
    for (int j = j0; j < j1; j++)
        printf("-+-%.27s", "------------------------------");
    printf("\n");
    for (int i = 0; i < r->nn; i++) {
        printf("  %6d", r->n[i]);
        for (int j = j0; j < j1; j++) {
            struct sb_sum s = r->sum[j][i];
            if (!v[j].built)
                snprintf(buf, sizeof buf, "not built");
            else if (r->limited[j][i] == 1)
                snprintf(buf, sizeof buf, "> %g s (limit)", sb.limit_s);
            else if (r->limited[j][i] == 2)
                snprintf(buf, sizeof buf, "> limit (skipped)");
            else {
                char f[48];
                sb_fmt_sum(f, sizeof f, s, 1, 4);
                snprintf(buf, sizeof buf, "%s x%.1f", f,
                         r->sum[j][0].n ? s.med / r->sum[j][0].med : NAN);
            }
            printf(" | %-27s", buf);
        }
        printf("\n");
    }
    printf("  %6s", "k");
    for (int j = j0; j < j1; j++) {
        if (isnan(r->k[j]))
            snprintf(buf, sizeof buf, "-");
        else
            snprintf(buf, sizeof buf, "%.2f", r->k[j]);
        printf(" | %-27s", buf);
    }
    printf("\n");
}

/* Tables like the seed's (n, time, factor), at most 3 variants across so
 * that a line fits 100 columns, plus the fitted exponent k. */
static void s_table(struct s_variant const *v, struct s_result *r)
{
    for (int j = 0; j < r->nv; j += 3)
        s_table_block(v, r, j, j + 3 < r->nv ? j + 3 : r->nv);
    printf("  (seconds: median [min-max] of %d runs; x = factor against n = %d; k = fitted "
           "exponent,\n   2 = the square, 1 = linear)\n",
           sb.runs, r->n[0]);
}

/* Runs every variant at every n, interleaved, and fits the exponents. */
static void s_experiment(const char *exp, const char *title, const struct s_variant *v, int nv,
                         int64_t (*fn)(int v, int n), struct s_result *r)
{
    static int watching;
    if (!watching) { /* the watchdog starts with the first S experiment */
        pthread_t t;
        if (sb_spawn(&t, s_watchdog, NULL) == 0) pthread_detach(t);
        watching = 1;
    }
    sb_heading(exp, title);
    memset(r, 0, sizeof *r);
    r->nv = nv;
    r->nn = sb_list_or(sb.n, sb.nn, s_default_n, (int)(sizeof s_default_n / sizeof s_default_n[0]),
                       r->n);
    int maxn = 0;
    for (int i = 0; i < r->nn; i++)
        maxn = r->n[i] > maxn ? r->n[i] : maxn;
    s_threads_for(maxn);

    static double vals[S_MAX_VARIANTS][SB_MAX_LIST][1000];
    long steps = 0;
    for (int j = 0; j < nv; j++)
        steps += v[j].built ? r->nn * sb.runs : 0;
    sb_progress_begin(exp, steps);
    for (int run = 0; run < sb.runs; run++) {
        for (int i = 0; i < r->nn; i++) {
            for (int j = 0; j < nv; j++) {
                if (!v[j].built) continue;
                int n = r->n[i];
                if (r->limited[j][i] || (i > 0 && r->limited[j][i - 1])) {
                    /* A smaller n hit the limit: this one would too. */
                    if (!r->limited[j][i]) r->limited[j][i] = 2;
                    vals[j][i][run] = NAN;
                    sb_record(exp, v[j].name, n, n, run, "seconds", NAN, "skipped");
                    sb_progress_step();
                    continue;
                }
                snprintf(s_what, sizeof s_what, "%s %s n=%d", exp, v[j].name, n);
                s_running = s_what;
                atomic_store(&s_expired, 0);
                atomic_store(&s_start, 0);
                atomic_store(&s_end, 0);
                s_deadline = sb_now_ns() + (int64_t)(sb.limit_s * 1e9);
                atomic_store(&s_active, 1);
                int64_t ns = fn(j, n);
                atomic_store(&s_active, 0);
                double sec = (double)ns / 1e9;
                if (atomic_load(&s_expired) || sec > sb.limit_s) {
                    r->limited[j][i] = 1;
                    vals[j][i][run] = NAN;
                    sb_record(exp, v[j].name, n, n, run, "seconds", sec, "limit");
                } else {
                    vals[j][i][run] = sec;
                    sb_record(exp, v[j].name, n, n, run, "seconds", sec, "ok");
                }
                sb_progress_step();
            }
        }
    }
    sb_progress_end();
    for (int j = 0; j < nv; j++) {
        double xs[SB_MAX_LIST], ys[SB_MAX_LIST];
        for (int i = 0; i < r->nn; i++) {
            r->sum[j][i] = r->limited[j][i] ? (struct sb_sum){NAN, NAN, NAN, 0}
                                            : sb_summarize(vals[j][i], sb.runs);
            xs[i] = r->n[i];
            ys[i] = r->sum[j][i].med;
        }
        r->k[j] = sb_exponent(xs, ys, r->nn);
    }
    s_table(v, r);
}

/* Median at the largest n, or INFINITY if that point hit the limit. */
static double s_last(const struct s_result *r, int j)
{
    int i = r->nn - 1;
    return r->limited[j][i] ? INFINITY : r->sum[j][i].med;
}

static int s_find(const struct s_variant *v, int nv, const char *name)
{
    for (int j = 0; j < nv; j++)
        if (strcmp(v[j].name, name) == 0) return j;
    return -1;
}

/* "exponent <= 1.10" for every squarefree variant; "no slower than the best
 * pthread variant at the largest n" for each, unless told which peer. */
static void s_verdict_exponents(const char *exp, const struct s_variant *v,
                                const struct s_result *r)
{
    for (int j = 0; j < r->nv; j++) {
        if (!v[j].sqf || !v[j].built || strcmp(v[j].name, "sqf-mutex") == 0) continue;
        sb_verdict(exp, r->k[j] <= 1.10, "%s exponent %.3f (target <= 1.10)", v[j].name, r->k[j]);
    }
}

static void s_verdict_vs_best(const char *exp, const struct s_variant *v, const struct s_result *r,
                              const char *const *peers, int npeers)
{
    int best = -1;
    for (int p = 0; p < npeers; p++) {
        int j = s_find(v, r->nv, peers[p]);
        if (j >= 0 && v[j].built && (best < 0 || s_last(r, j) < s_last(r, best))) best = j;
    }
    if (best < 0) return;
    int nmax = r->n[r->nn - 1];
    for (int j = 0; j < r->nv; j++) {
        if (!v[j].sqf || !v[j].built || strcmp(v[j].name, "sqf-mutex") == 0) continue;
        double a = s_last(r, j), b = s_last(r, best);
        sb_verdict(exp, a <= b,
                   "%s at n=%d: %.4f s vs best pthread variant (%s) %.4f s: %.2fx (target <= 1)",
                   v[j].name, nmax, a, v[best].name, b, a / b);
    }
}

/* The targets compare with pthreads; C++20 is a peer worth
 * showing beside them, as a note. */
static void s_note_vs_cxx(const char *exp, const struct s_variant *v, const struct s_result *r)
{
    int c = s_find(v, r->nv, "c++20");
    if (c < 0 || !v[c].built) return;
    for (int j = 0; j < r->nv; j++)
        if (v[j].sqf && v[j].built)
            sb_note("%s: %s / c++20 at n=%d = %.2fx", exp, v[j].name, r->n[r->nn - 1],
                    s_last(r, j) / s_last(r, c));
}

#ifdef SQB_HAVE_CXX20
#define S_CXX 1
#else
#define S_CXX 0
#endif

int sb_run_s1(void)
{
    static const struct s_variant v[] = {{"floor", 1, 0},   {"seed", 1, 0}, {"seed-wait", 1, 0},
                                         {"pthread", 1, 0}, {"sqf", 1, 1},  {"c++20", S_CXX, 0}};
    struct s_result r;
    s_experiment("S1",
                 "start n threads (floor: create and join only; seed: polling; seed-wait: the "
                 "creator waits for each; pthread: pthread_barrier; sqf: sqf_latch; c++20: "
                 "std::latch)",
                 v, 6, s1_run, &r);
    static const char *const peers[] = {"seed", "seed-wait", "pthread"};
    s_verdict_exponents("S1", v, &r);
    s_verdict_vs_best("S1", v, &r, peers, 3);
    s_note_vs_cxx("S1", v, &r);
    sb_note("S1: floor (threads that synchronise nothing) exponent %.2f: creating and joining "
            "the threads alone grows that fast here, and no variant can grow slower.",
            r.k[0]);
    return 0;
}

int sb_run_s2(void)
{
    static const struct s_variant v[] = {{"seed", 1, 0},
                                         {"pthread", 1, 0},
                                         {"sqf", 1, 1},
                                         {"sqf-combine", 1, 1},
                                         {"sqf-mutex", 1, 1}};
    struct s_result r;
    s_experiment("S2",
                 "serialise n threads through one mutex (seed: pthread_mutex + polling; "
                 "pthread: + pthread_barrier; sqf: sqf_mutex + sqf_countdown; sqf-combine: "
                 "the seed's code through sqf_mutex_combine; sqf-mutex: the seed's code on "
                 "sqf_mutex)",
                 v, 5, s2_run, &r);
    int nmax = r.n[r.nn - 1];
    double seed = s_last(&r, 0), pth = s_last(&r, 1), sqf = s_last(&r, 2), comb = s_last(&r, 3),
           plain = s_last(&r, 4);
    sb_verdict("S2", r.k[3] <= 1.10, "sqf-combine exponent %.3f (target <= 1.10; seed %.2f)",
               r.k[3], r.k[0]);
    sb_verdict("S2", seed / comb >= 10,
               "sqf-combine %.1fx faster than the seed's pthread code at n=%d (target >= 10x)",
               seed / comb, nmax);
    sb_verdict("S2", r.k[2] <= 1.10, "sqf (countdown, n unknown) exponent %.3f (target <= 1.10)",
               r.k[2]);
    sb_verdict("S2", sqf <= pth,
               "sqf %.4f s vs the pthread_barrier idiom (needs n) %.4f s at n=%d = %.2fx "
               "(target <= 1)",
               sqf, pth, nmax, sqf / pth);
    sb_note("sqf-mutex (the seed's polling code on sqf_mutex, no remedy): exponent %.2f, %.4f s "
            "at n=%d; a plain mutex hands the lock to one sleeper at a time, and each wake-up "
            "waits its turn behind the pollers: the square is in the polling, not in the lock.",
            r.k[4], plain, nmax);
    return 0;
}

int sb_run_s3(void)
{
    static const struct s_variant v[] = {
        {"seed", 1, 0}, {"sqf", 1, 1}, {"sqf-batch", 1, 1}, {"sqf-latch", 1, 1}};
    struct s_result r;
    s_experiment("S3",
                 "notify n-1 threads (seed: sem_post loop + polling; sqf: sqf_sem release(1) "
                 "loop; sqf-batch: one release(n-1); sqf-latch: one release(n-1), then an "
                 "sqf_latch instead of polling)",
                 v, 4, s3_run, &r);
    static const char *const peers[] = {"seed"};
    s_verdict_exponents("S3", v, &r);
    s_verdict_vs_best("S3", v, &r, peers, 1);
    return 0;
}

int sb_run_s4(void)
{
    static const struct s_variant v[] = {
        {"seed", 1, 0}, {"sqf", 1, 1}, {"sqf-latch", 1, 1}, {"c++20", S_CXX, 0}};
    struct s_result r;
    s_experiment("S4",
                 "wake n threads with one event (seed: pthread_cond_broadcast + polling; "
                 "sqf: sqf_event + polling; sqf-latch: sqf_event, then an sqf_latch; c++20: "
                 "std::latch + polling)",
                 v, 4, s4_run, &r);
    static const char *const peers[] = {"seed"};
    s_verdict_exponents("S4", v, &r);
    s_verdict_vs_best("S4", v, &r, peers, 1);
    s_note_vs_cxx("S4", v, &r);
    return 0;
}

int sb_run_s5(void)
{
    static const struct s_variant v[] = {{"pthread", 1, 0}, {"c++20", S_CXX, 0}, {"sqf", 1, 1}};
    struct s_result r;
    s_experiment("S5",
                 "n threads pass a barrier 10 times (pthread_barrier, std::barrier, "
                 "sqf_barrier)",
                 v, 3, s5_run, &r);
    static const char *const peers[] = {"pthread"};
    s_verdict_exponents("S5", v, &r);
    s_verdict_vs_best("S5", v, &r, peers, 1);
    s_note_vs_cxx("S5", v, &r);
    return 0;
}
