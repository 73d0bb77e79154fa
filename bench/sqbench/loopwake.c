/* loopwake.c: W2a, wake-all latency into an event loop (BENCHMARKS.md
 * "W2").  One event loop has k waits pending; another thread makes them
 * all ready; how long until the loop has run the LAST of their callbacks?
 *
 * Variants:
 *   sqf-loop-event  k sqf_loop_event_wait ops on one sqf_event; the waker
 *                   calls sqf_event_set: one FUTEX_WAKE, whatever k is
 *   sqf-loop-latch  the same on an sqf_latch (count 1): sqf_latch_count_down
 *   sqf-fallback-event  sqf-loop-event on the fallback backend (the user-
 *                   space futex, for kernels without io_uring's futex
 *                   operations): the waker's set takes the table's bucket
 *                   lock and hands every wait to the loop, with one
 *                   eventfd write
 *   sqf-mixed-event W2b: (k+1)/2 loop waits (io_uring) and k/2 threads on one
 *                   sqf_event, woken by one set: until the last of both ran
 *   eventfd-each    the common C idiom: one eventfd per waiter in the loop's
 *                   epoll set; the waker writes each: k system calls
 *   uv-async-each   libuv (when built with it): k uv_async_t handles on a
 *                   uv_loop_t; the waker calls uv_async_send on each (each
 *                   writes the loop's eventfd: k system calls), and the loop
 *                   runs their callbacks
 *   threads-event   no loop: k threads in sqf_event_wait (W1's sqf-event, in
 *                   this run): what a thread per waiter costs
 * The loop thread sleeps in poll() (the sqf variants, on sqf_loop_fd) or
 * epoll_wait() (eventfd-each, and uv_run) and runs the callbacks (reads the eventfds)
 * as they come; a run's figure is the time of the last one minus t0, taken
 * just before the wake call.
 *
 * Asleep before the wake: the loop thread announces that its waits are
 * armed, then the waker checks /proc that the loop thread sleeps in poll or
 * epoll_wait (state S) before it wakes; the threads of threads-event are
 * checked through the event's waiter count and each one's state (S).  The waker's system calls are
 * the variants' by construction: one futex wake for the sqf variants (the library's set and
 * count_down make exactly one), k writes for eventfd-each, counted by the code that makes them. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <squarefree.h>

#include "sqbench.h"

#ifdef SQB_HAVE_LIBUV
#include <uv.h>
#endif

#define L_MAX_RUNS 1000
#define L_GRACE    60000000000LL /* after the limit: then it is a hang */

enum {
    V_SQF_EVENT,
    V_SQF_LATCH,
    V_FB_EVENT,
    V_MIXED,
    V_EVENTFD,
    V_THREADS,
#ifdef SQB_HAVE_LIBUV
    V_UV,
#endif
    L_NV
};
static const char *const lv[L_NV] = {
    "sqf-loop-event",  "sqf-loop-latch", "sqf-fallback-event",
    "sqf-mixed-event", "eventfd-each",   "threads-event",
#ifdef SQB_HAVE_LIBUV
    "uv-async-each",
#endif
};
static const int l_default_k[] = {1, 4, 16, 64, 256, 1024};

static struct {
    _Alignas(128) atomic_uint ctrl; /* bumped to start a run (or quit) */
    int variant, k, quit;
    _Alignas(128) atomic_uint armed; /* the run whose waits are armed */
    _Alignas(128) atomic_uint done;  /* the run whose callbacks have all run */
    pid_t tid;                       /* the loop thread */
    int count;                       /* callbacks run in this run (loop thread) */
    int64_t last;                    /* when the last ran */
    sqf_loop *loop, *fb;             /* io_uring; the fallback */
    sqf_loop_op *ops;
    sqf_event ev;
    sqf_latch la;
    int *efds, ep;
    int failed;
#ifdef SQB_HAVE_LIBUV
    uv_loop_t uvl;   /* the loop thread's */
    uv_async_t *uva; /* uv_k handles on it; the waker sends to them */
    int uv_k, uv_closing;
#endif
} L;

static long futex(atomic_uint *w, int op, unsigned val)
{
    return syscall(SYS_futex, (unsigned *)w, op, val, NULL, NULL, 0);
}

static void sleep_ns(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void on_ready(sqf_loop_op *op, int result, void *arg)
{
    (void)op;
    (void)arg;
    if (result != 0) L.failed = result;
    L.count++;
    L.last = sb_now_ns();
}

#ifdef SQB_HAVE_LIBUV
static void uv_ready(uv_async_t *h)
{
    (void)h;
    on_ready(NULL, 0, NULL);
}

static void uv_closed(uv_handle_t *h)
{
    (void)h;
    L.uv_closing--;
}

/* On the loop thread: k async handles on its uv loop (made once per k). */
static void uv_handles(int k)
{
    if (L.uv_k == k) return;
    for (int i = 0; i < L.uv_k; i++) {
        L.uv_closing++;
        uv_close((uv_handle_t *)&L.uva[i], uv_closed);
    }
    while (L.uv_closing > 0)
        uv_run(&L.uvl, UV_RUN_NOWAIT);
    free(L.uva);
    L.uva = NULL;
    L.uv_k = 0;
    if (k == 0) return;
    L.uva = calloc((size_t)k, sizeof *L.uva);
    if (!L.uva) {
        L.failed = ENOMEM;
        return;
    }
    for (int i = 0; i < k; i++)
        if (uv_async_init(&L.uvl, &L.uva[i], uv_ready) != 0) L.failed = EMFILE;
    L.uv_k = k;
}
#endif

/* The loop thread: arm k waits, announce it, sleep until they complete. */
static void *loop_main(void *arg)
{
    (void)arg;
    L.tid = (pid_t)syscall(SYS_gettid);
#ifdef SQB_HAVE_LIBUV
    if (uv_loop_init(&L.uvl) != 0) L.failed = ENOMEM;
#endif
    unsigned run = atomic_load(&L.ctrl);
    atomic_store(&L.done, run);
    futex(&L.done, FUTEX_WAKE_PRIVATE, 1);
    for (;;) {
        unsigned c;
        while ((c = atomic_load(&L.ctrl)) == run)
            futex(&L.ctrl, FUTEX_WAIT_PRIVATE, run);
        run = c;
        if (L.quit) {
#ifdef SQB_HAVE_LIBUV
            uv_handles(0);
            uv_loop_close(&L.uvl);
#endif
            return NULL;
        }
        L.count = 0;
        int k = L.k, v = L.variant;
        sqf_loop *lp = v == V_FB_EVENT ? L.fb : L.loop;
        bool other = v == V_EVENTFD; /* not an sqf loop */
#ifdef SQB_HAVE_LIBUV
        if (v == V_UV) {
            other = true;
            uv_handles(k);
        }
#endif
        for (int i = 0; i < k && !other; i++) {
            int e =
                v == V_SQF_LATCH
                    ? sqf_loop_latch_wait(lp, &L.ops[i], &L.la, SQF_FOREVER, NULL, on_ready, NULL)
                    : sqf_loop_event_wait(lp, &L.ops[i], &L.ev, SQF_FOREVER, NULL, on_ready, NULL);
            if (e != EINPROGRESS) L.failed = e ? e : EALREADY; /* nothing should be ready */
        }
        atomic_store(&L.armed, run);
        futex(&L.armed, FUTEX_WAKE_PRIVATE, 1);
        while (L.count < k && !L.failed) {
#ifdef SQB_HAVE_LIBUV
            if (v == V_UV) {
                uv_run(&L.uvl, UV_RUN_ONCE);
                continue;
            }
#endif
            if (v == V_EVENTFD) {
                struct epoll_event got[64];
                int n = epoll_wait(L.ep, got, 64, -1);
                for (int i = 0; i < n; i++) {
                    uint64_t x;
                    if (read(got[i].data.fd, &x, sizeof x) == sizeof x) on_ready(NULL, 0, NULL);
                }
            } else {
                struct pollfd p = {sqf_loop_fd(lp), POLLIN, 0};
                poll(&p, 1, -1);
                if (sqf_loop_dispatch(lp) < 0) L.failed = EINVAL;
            }
        }
        atomic_store(&L.done, run);
        futex(&L.done, FUTEX_WAKE_PRIVATE, 1);
    }
}

/* Wait until *w holds `want`, at most `ns`: 1 if it does. */
static int wait_for(atomic_uint *w, unsigned want, int64_t ns)
{
    int64_t stop = sb_now_ns() + ns;
    unsigned v;
    while ((v = atomic_load(w)) != want) {
        int64_t left = stop - sb_now_ns();
        if (left <= 0) return 0;
        struct timespec ts = {(time_t)(left / 1000000000), (long)(left % 1000000000)};
        syscall(SYS_futex, (unsigned *)w, FUTEX_WAIT_PRIVATE, v, &ts, NULL, 0);
    }
    return 1;
}

/* Whether thread tid sleeps (state S), per /proc. */
static int asleep(pid_t tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 1; /* cannot tell: the settle time alone */
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 1;
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] == 'S';
}

/* threads-event and sqf-mixed-event's threads (below). */
static pthread_t *spawn_waiters(int n, sqf_event *e, unsigned expect, const char *what);
static int64_t join_waiters(pthread_t *t, int n, int64_t t0, const char *what);

static double loop_run(int v, int k, const char *what, int *over)
{
    if (v == V_SQF_EVENT || v == V_FB_EVENT || v == V_MIXED) sqf_event_clear(&L.ev);
    if (v == V_SQF_LATCH) sqf_latch_init(&L.la, 1, SQF_PRIVATE);
    int nthreads = v == V_MIXED ? k / 2 : 0;
    L.variant = v;
    L.k = k - nthreads;
    L.failed = 0;
    unsigned run = atomic_fetch_add(&L.ctrl, 1) + 1;
    futex(&L.ctrl, FUTEX_WAKE_PRIVATE, 1);
    if (!wait_for(&L.armed, run, 10000000000LL))
        sb_fail("%s: the loop did not arm its waits", what);
    pthread_t *threads = NULL;
    if (v == V_MIXED) threads = spawn_waiters(nthreads, &L.ev, (unsigned)k, what);
    /* The loop thread must be asleep in poll/epoll_wait before the wake. */
    for (int i = 0; i < 10000; i++) {
        sleep_ns(200000);
        if (asleep(L.tid)) break;
    }
    int64_t t0 = sb_now_ns();
    int e = 0;
    if (v == V_SQF_EVENT || v == V_FB_EVENT || v == V_MIXED) {
        e = sqf_event_set(&L.ev);
    } else if (v == V_SQF_LATCH) {
        e = sqf_latch_count_down(&L.la, 1);
#ifdef SQB_HAVE_LIBUV
    } else if (v == V_UV) {
        for (int i = 0; i < k; i++)
            if (uv_async_send(&L.uva[i]) != 0) e = EIO;
#endif
    } else {
        uint64_t one = 1;
        for (int i = 0; i < k; i++)
            if (write(L.efds[i], &one, sizeof one) != sizeof one) e = errno;
    }
    if (e) sb_fail("%s: the wake failed (%s)", what, strerror(e));
    int in_time = wait_for(&L.done, run, (int64_t)(sb.limit_s * 1e9));
    if (!in_time && !wait_for(&L.done, run, L_GRACE))
        sb_fail("%s: callbacks still pending 60 s after the wake (a lost wake-up)", what);
    if (L.failed) sb_fail("%s: a loop wait failed (%s)", what, strerror(L.failed));
    int64_t last = L.last;
    if (v == V_MIXED) {
        int64_t tl = join_waiters(threads, nthreads, t0, what);
        if (tl > last) last = tl;
    }
    double s = (double)(last - t0) / 1e9;
    *over = !in_time || s > sb.limit_s;
    return s;
}

/* threads-event: k threads in sqf_event_wait, created for the run, each
 * confirmed asleep (state S per /proc) before the wake. */
static sqf_event tev;
static struct twaiter {
    atomic_int tid;
    int64_t woke;
} * tw;

static atomic_uint tdone; /* threads that have stored their time */
static sqf_latch texit;   /* they exit only after the run is timed */

static sqf_event *tev_on; /* the event the threads wait on */

static void *thread_wait(void *arg)
{
    struct twaiter *w = arg;
    atomic_store(&w->tid, (int)syscall(SYS_gettid));
    w->woke = sqf_event_wait(tev_on) != 0 ? -1 : sb_now_ns();
    atomic_fetch_add(&tdone, 1);
    futex(&tdone, FUTEX_WAKE_PRIVATE, 1);
    sqf_latch_wait(&texit); /* exiting threads would slow the ones still waking */
    return NULL;
}

/* Start n threads waiting on e, and return once each sleeps and e counts
 * `expect` waiters in all (others may wait on it too). */
static pthread_t *spawn_waiters(int n, sqf_event *e, unsigned expect, const char *what)
{
    tev_on = e;
    sqf_latch_init(&texit, 1, SQF_PRIVATE);
    atomic_store(&tdone, 0);
    pthread_t *t = malloc(sizeof *t * (size_t)(n ? n : 1));
    tw = calloc((size_t)(n ? n : 1), sizeof *tw);
    if (!t || !tw) sb_fail("%s: out of memory", what);
    for (int i = 0; i < n; i++)
        if (sb_spawn(&t[i], thread_wait, &tw[i]) != 0)
            sb_fail("%s: the system refused thread %d", what, i + 1);
    int64_t give_up = sb_now_ns() + 10000000000LL;
    while (atomic_load((atomic_uint *)&e->waiters) < expect && sb_now_ns() < give_up)
        sleep_ns(200000);
    for (int i = 0; i < n; i++) /* each asleep */
        while ((!atomic_load(&tw[i].tid) || !asleep(atomic_load(&tw[i].tid))) &&
               sb_now_ns() < give_up)
            sleep_ns(200000);
    return t;
}

/* After the wake: wait (asleep) until the n threads have run, let them
 * exit, and return the time the last one ran (at least t0). */
static int64_t join_waiters(pthread_t *t, int n, int64_t t0, const char *what)
{
    unsigned d;
    while ((d = atomic_load(&tdone)) < (unsigned)n)
        futex(&tdone, FUTEX_WAIT_PRIVATE, d);
    sqf_latch_count_down(&texit, 1);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    int64_t last = t0;
    for (int i = 0; i < n; i++) {
        if (tw[i].woke < 0) sb_fail("%s: a wait failed", what);
        if (tw[i].woke > last) last = tw[i].woke;
    }
    free(t);
    free(tw);
    return last;
}

static double threads_run(int k, const char *what, int *over)
{
    sqf_event_init(&tev, SQF_PRIVATE);
    pthread_t *t = spawn_waiters(k, &tev, (unsigned)k, what);
    int64_t t0 = sb_now_ns();
    sqf_event_set(&tev);
    int64_t last = join_waiters(t, k, t0, what);
    double s = (double)(last - t0) / 1e9;
    *over = s > sb.limit_s;
    return s;
}

static double l_us[L_NV][SB_MAX_LIST][L_MAX_RUNS];
static int l_over[L_NV][SB_MAX_LIST];

static void setup_k(int k)
{
    L.ops = calloc((size_t)k, sizeof *L.ops);
    L.efds = malloc(sizeof *L.efds * (size_t)k);
    L.ep = epoll_create1(EPOLL_CLOEXEC);
    if (!L.ops || !L.efds || L.ep < 0) sb_fail("W2: out of memory or files for k=%d", k);
    for (int i = 0; i < k; i++) {
        L.efds[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = L.efds[i]};
        if (L.efds[i] < 0 || epoll_ctl(L.ep, EPOLL_CTL_ADD, L.efds[i], &ev) != 0)
            sb_fail("W2: cannot make %d eventfds (%s); try a smaller --n", k, strerror(errno));
    }
}

static void teardown_k(int k)
{
    for (int i = 0; i < k; i++)
        close(L.efds[i]);
    close(L.ep);
    free(L.efds);
    free(L.ops);
}

/* Every run of every variant at every k, on a loop thread of its own;
 * a variant over the limit at one k is skipped at the larger ones. */
static void w2_measure(const int *ks, int nk)
{
    sqf_event_init(&L.ev, SQF_PRIVATE);
    memset(l_over, 0, sizeof l_over);
    pthread_t lt;
    atomic_store(&L.done, ~0u);
    L.quit = 0;
    if (sb_spawn(&lt, loop_main, NULL) != 0) sb_fail("W2: cannot start the loop thread");
    wait_for(&L.done, atomic_load(&L.ctrl), 10000000000LL);

    sb_progress_begin("W2", (long)nk * sb.runs * L_NV);
    for (int i = 0; i < nk; i++) {
        setup_k(ks[i]);
        for (int run = 0; run < sb.runs; run++)
            for (int o = 0; o < L_NV; o++) {
                int v = (o + run) % L_NV;
                if (l_over[v][i] || (i > 0 && l_over[v][i - 1])) {
                    if (!l_over[v][i]) l_over[v][i] = 2;
                    l_us[v][i][run] = NAN;
                    sb_record("W2", lv[v], ks[i], ks[i], run, "latency_us", NAN, "skipped");
                } else {
                    char what[64];
                    snprintf(what, sizeof what, "W2 %s k=%d", lv[v], ks[i]);
                    int over;
                    double s = v == V_THREADS ? threads_run(ks[i], what, &over)
                                              : loop_run(v, ks[i], what, &over);
                    l_us[v][i][run] = over ? NAN : s * 1e6;
                    if (over) l_over[v][i] = 1;
                    sb_record("W2", lv[v], ks[i], ks[i], run, "latency_us", s * 1e6,
                              over ? "limit" : "ok");
                }
                sb_progress_step();
            }
        teardown_k(ks[i]);
    }
    sb_progress_end();
    L.quit = 1;
    atomic_fetch_add(&L.ctrl, 1);
    futex(&L.ctrl, FUTEX_WAKE_PRIVATE, 1);
    pthread_join(lt, NULL);
    sqf_loop_destroy(L.loop);
    sqf_loop_destroy(L.fb);
}

/* Each point's median [min-max] (NaN when over the limit). */
static struct sb_sum l_sum[L_NV][SB_MAX_LIST];

static void w2_summarize(int nk)
{
    for (int v = 0; v < L_NV; v++)
        for (int i = 0; i < nk; i++)
            l_sum[v][i] = l_over[v][i] ? (struct sb_sum){NAN, NAN, NAN, 0}
                                       : sb_summarize(l_us[v][i], sb.runs);
}

/* Table: k down, variants across, then the ratios that the verdicts name. */
static void w2_print(const int *ks, int nk)
{
    printf("  %5s", "k");
    for (int v = 0; v < L_NV; v++)
        printf(" | %-21s", lv[v]);
    static const int ratio[][2] = {{V_SQF_EVENT, V_EVENTFD},
                                   {V_SQF_EVENT, V_THREADS},
                                   {V_FB_EVENT, V_EVENTFD},
#ifdef SQB_HAVE_LIBUV
                                   {V_SQF_EVENT, V_UV}
#endif
    };
    static const char *const ratio_name[] = {"sqf/eventfd", "sqf/threads", "fb/eventfd", "sqf/uv"};
    const int nratio = (int)(sizeof ratio / sizeof ratio[0]);
    for (int r = 0; r < nratio; r++)
        printf(" | %-11s", ratio_name[r]);
    printf("\n");
    for (int i = 0; i < nk; i++) {
        printf("  %5d", ks[i]);
        for (int v = 0; v < L_NV; v++) {
            char c[64];
            if (l_over[v][i])
                snprintf(c, sizeof c, "> limit%s", l_over[v][i] == 2 ? " (skipped)" : "");
            else
                sb_fmt_sum(c, sizeof c, l_sum[v][i], 1, l_sum[v][i].med < 100 ? 1 : 0);
            printf(" | %-21s", c);
        }
        for (int r = 0; r < nratio; r++) {
            double a = l_sum[ratio[r][0]][i].med, b = l_sum[ratio[r][1]][i].med;
            char c[32];
            snprintf(c, sizeof c, isfinite(a) && isfinite(b) ? "%.2fx" : "-", a / b);
            printf(" | %-11s", c);
        }
        printf("\n");
    }
    printf("  (microseconds from the wake call until the loop has run the last callback (or the\n"
           "   last thread runs): median [min-max] of %d runs; the waker's system calls: one\n"
           "   futex wake for the sqf variants (plus, on the fallback, one eventfd write), k\n"
           "   eventfd writes for eventfd-each, k uv_async_send calls for uv-async-each)\n",
           sb.runs);
}

/* The verdicts (BENCHMARKS.md "W2") at the largest k. */
static void w2_judge(const int *ks, int nk)
{
    int last = nk - 1;
    double s = l_sum[V_SQF_EVENT][last].med, efd = l_sum[V_EVENTFD][last].med,
           thr = l_sum[V_THREADS][last].med, fb = l_sum[V_FB_EVENT][last].med;
    sb_verdict("W2", isfinite(s) && isfinite(efd) && s <= 0.2 * efd,
               "sqf-loop-event at k=%d: %.0f us vs eventfd-each %.0f us: %.2fx (target <= 0.2x)",
               ks[last], s, efd, s / efd);
    sb_verdict("W2", isfinite(s) && isfinite(thr) && s <= 0.2 * thr,
               "sqf-loop-event at k=%d: %.0f us vs %d threads woken (threads-event) %.0f us: "
               "%.2fx (target <= 0.2x)",
               ks[last], s, ks[last], thr, s / thr);
    sb_verdict("W2", isfinite(fb) && isfinite(efd) && fb <= efd,
               "sqf-fallback-event at k=%d: %.0f us vs eventfd-each %.0f us: %.2fx (target <= 1)",
               ks[last], fb, efd, fb / efd);
}

int sb_run_w2(void)
{
    sb_heading("W2", "wake-all latency into an event loop: k pending loop waits, one wake");
    int e = sqf_loop_create(&L.loop, SQF_LOOP_URING);
    if (e) {
        sb_note("W2: not run: sqf_loop_create(SQF_LOOP_URING) says %s (no io_uring futex "
                "operations here)",
                strerror(e));
        return 0;
    }
    e = sqf_loop_create(&L.fb, SQF_LOOP_FALLBACK);
    if (e) sb_fail("W2: the fallback loop: %s", strerror(e));
    int ks[SB_MAX_LIST];
    int nk = sb_list_or(sb.n, sb.nn, l_default_k, SB_LEN(l_default_k), ks);
    w2_measure(ks, nk);
    w2_summarize(nk);
    w2_print(ks, nk);
    w2_judge(ks, nk);
    return 0;
}
