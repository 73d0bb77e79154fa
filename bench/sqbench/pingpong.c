/* pingpong.c: W2c, a thread and an event loop pass a token back and forth
 * (BENCHMARKS.md "W2").  Round trips per second, each side asleep while
 * the other works.
 *
 * Variants:
 *   sqf-loop       the thread releases sem `ping` and acquires sem `pong`
 *                  (blocking); the loop has an sqf_loop_sem_acquire pending on
 *                  `ping`, whose callback releases `pong` and waits again;
 *                  the loop thread sleeps in poll() on sqf_loop_fd (io_uring)
 *   sqf-fallback   the same loop on the fallback backend
 *   eventfd-pair   the common idiom: the thread writes eventfd A and reads
 *                  eventfd B (blocking); the loop epoll_waits on A, reads it
 *                  and writes B
 *   uv-async       libuv (when built with it): the thread calls
 *                  uv_async_send and waits on a uv_sem_t; the async handle's
 *                  callback on the uv loop posts the semaphore
 * Each run lasts --duration (default 0.3 s, quick 0.1 s); the figure is the
 * median of --runs runs, variants interleaved.  The two sides are pinned,
 * first to two different CPUs (when the process may use two), then both to
 * one: left to the scheduler, a run's rate depended on whether the two
 * threads happened to share a CPU (17,000 against 30,000 round trips per
 * second here, for the same variant), and that, not the variant, decided
 * the median. */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <squarefree.h>

#include "sqbench.h"

#ifdef SQB_HAVE_LIBUV
#include <uv.h>
#endif

enum {
    P_SQF,
    P_FALLBACK,
    P_EVENTFD,
#ifdef SQB_HAVE_LIBUV
    P_UV,
#endif
    P_NV
};
static const char *const pv[P_NV] = {"sqf-loop", "sqf-fallback", "eventfd-pair",
#ifdef SQB_HAVE_LIBUV
                                     "uv-async"
#endif
};

#define P_MAX_RUNS 1000

static struct {
    int variant;
    atomic_int stop;
    sqf_loop *loop;
    sqf_sem ping, pong;
    sqf_loop_op op;
    int efd_a, efd_b, ep;
    long loop_rounds;
    int failed;
#ifdef SQB_HAVE_LIBUV
    uv_loop_t uvl;
    uv_async_t ping_async, stop_async;
    uv_sem_t pong_sem, ready_sem;
#endif
} P;

#ifdef SQB_HAVE_LIBUV
static void uv_on_ping(uv_async_t *h)
{
    (void)h;
    P.loop_rounds++;
    uv_sem_post(&P.pong_sem);
}

static void uv_on_stop(uv_async_t *h)
{
    (void)h;
    uv_close((uv_handle_t *)&P.ping_async, NULL);
    uv_close((uv_handle_t *)&P.stop_async, NULL);
}

/* The uv loop side: its handles are made on its own thread. */
static void uv_side(void)
{
    if (uv_loop_init(&P.uvl) != 0 || uv_async_init(&P.uvl, &P.ping_async, uv_on_ping) != 0 ||
        uv_async_init(&P.uvl, &P.stop_async, uv_on_stop) != 0)
        P.failed = ENOMEM;
    uv_sem_post(&P.ready_sem);
    if (P.failed) return;
    uv_run(&P.uvl, UV_RUN_DEFAULT); /* until the stop closes both handles */
    uv_loop_close(&P.uvl);
}
#endif

/* The run's CPUs (cpu[0] the thread's, cpu[1] the loop's), or -1. */
static int cpu[2] = {-1, -1};

static void pin_self(int c)
{
    if (c < 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(c, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void on_ping(sqf_loop_op *op, int result, void *arg)
{
    (void)arg;
    if (result == ECANCELED && atomic_load(&P.stop)) return; /* the last wait, at the end */
    if (result != 0) {
        P.failed = result;
        return;
    }
    P.loop_rounds++;
    sqf_sem_release(&P.pong, 1);
    if (atomic_load_explicit(&P.stop, memory_order_relaxed)) return;
    int e = sqf_loop_sem_acquire(P.loop, op, &P.ping, SQF_FOREVER, NULL, on_ping, NULL);
    if (e != EINPROGRESS) on_ping(op, e, NULL);
}

/* The loop side: serve pings until stopped (and the last one is served). */
static void *loop_side(void *arg)
{
    (void)arg;
    pin_self(cpu[1]);
#ifdef SQB_HAVE_LIBUV
    if (P.variant == P_UV) {
        uv_side();
        return NULL;
    }
#endif
    if (P.variant == P_EVENTFD) {
        while (!atomic_load(&P.stop)) {
            struct epoll_event ev;
            if (epoll_wait(P.ep, &ev, 1, 100) != 1) continue;
            uint64_t x;
            if (read(P.efd_a, &x, sizeof x) != sizeof x) continue;
            P.loop_rounds++;
            x = 1;
            if (write(P.efd_b, &x, sizeof x) != sizeof x) P.failed = errno;
        }
        return NULL;
    }
    int e = sqf_loop_sem_acquire(P.loop, &P.op, &P.ping, SQF_FOREVER, NULL, on_ping, NULL);
    if (e != EINPROGRESS) on_ping(&P.op, e, NULL);
    while (sqf_loop_pending(P.loop) > 0 && !P.failed) {
        struct pollfd p = {sqf_loop_fd(P.loop), POLLIN, 0};
        poll(&p, 1, 100);
        sqf_loop_dispatch(P.loop);
        if (atomic_load(&P.stop) && sqf_loop_pending(P.loop) > 0) {
            sqf_loop_cancel(P.loop, &P.op); /* the last wait: no more pings come */
        }
    }
    return NULL;
}

/* Round trips per second of one run. */
static double run_once(int v, double seconds, const char *what)
{
    P.variant = v;
    P.failed = 0;
    P.loop_rounds = 0;
    atomic_store(&P.stop, 0);
    sqf_sem_init(&P.ping, 0, 0, SQF_PRIVATE);
    sqf_sem_init(&P.pong, 0, 0, SQF_PRIVATE);
    if (v == P_SQF || v == P_FALLBACK) {
        int e = sqf_loop_create(&P.loop, v == P_SQF ? SQF_LOOP_URING : SQF_LOOP_FALLBACK);
        if (e) sb_fail("%s: sqf_loop_create: %s", what, strerror(e));
#ifdef SQB_HAVE_LIBUV
    } else if (v == P_UV) {
        if (uv_sem_init(&P.pong_sem, 0) != 0 || uv_sem_init(&P.ready_sem, 0) != 0)
            sb_fail("%s: uv_sem_init failed", what);
#endif
    } else {
        P.efd_a = eventfd(0, EFD_CLOEXEC);
        P.efd_b = eventfd(0, EFD_CLOEXEC);
        P.ep = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = P.efd_a};
        if (P.efd_a < 0 || P.efd_b < 0 || P.ep < 0 ||
            epoll_ctl(P.ep, EPOLL_CTL_ADD, P.efd_a, &ev) != 0)
            sb_fail("%s: eventfd/epoll: %s", what, strerror(errno));
    }
    pthread_t t;
    if (sb_spawn(&t, loop_side, NULL) != 0) sb_fail("%s: cannot start the loop thread", what);
#ifdef SQB_HAVE_LIBUV
    if (v == P_UV) {
        uv_sem_wait(&P.ready_sem); /* the handles exist */
        if (P.failed) sb_fail("%s: the uv loop could not start", what);
    }
#endif
    long rounds = 0;
    int64_t t0 = sb_now_ns(), stop = t0 + (int64_t)(seconds * 1e9), t1;
    while ((t1 = sb_now_ns()) < stop && !P.failed) {
        if (v == P_EVENTFD) {
            uint64_t x = 1;
            if (write(P.efd_a, &x, sizeof x) != sizeof x || read(P.efd_b, &x, sizeof x) != sizeof x)
                sb_fail("%s: eventfd: %s", what, strerror(errno));
#ifdef SQB_HAVE_LIBUV
        } else if (v == P_UV) {
            uv_async_send(&P.ping_async);
            uv_sem_wait(&P.pong_sem);
#endif
        } else {
            sqf_sem_release(&P.ping, 1);
            if (sqf_sem_timedacquire(&P.pong, sqf_after(10 * SQF_SEC)) != 0)
                sb_fail("%s: no pong within 10 s (a lost wake-up)", what);
        }
        rounds++;
    }
    atomic_store(&P.stop, 1);
#ifdef SQB_HAVE_LIBUV
    if (v == P_UV) uv_async_send(&P.stop_async);
#endif
    pthread_join(t, NULL);
    if (v == P_EVENTFD) {
        close(P.efd_a);
        close(P.efd_b);
        close(P.ep);
    } else if (v == P_SQF || v == P_FALLBACK) {
        sqf_loop_destroy(P.loop);
    }
#ifdef SQB_HAVE_LIBUV
    if (v == P_UV) {
        uv_sem_destroy(&P.pong_sem);
        uv_sem_destroy(&P.ready_sem);
    }
#endif
    if (P.failed) sb_fail("%s: the loop side failed (%s)", what, strerror(P.failed));
    return (double)rounds / ((double)(t1 - t0) / 1e9);
}

static double p_rate[2][P_NV][P_MAX_RUNS];

int sb_run_w2c(void)
{
    sb_heading("W2c", "ping-pong between a thread and an event loop through two semaphores");
    sqf_loop *probe;
    if (sqf_loop_create(&probe, SQF_LOOP_URING) != 0) {
        sb_note("W2c: not run: no io_uring futex operations here");
        return 0;
    }
    sqf_loop_destroy(probe);
    double secs = sb.duration_s > 0 ? sb.duration_s : sb.quick ? 0.1 : 0.3;
    /* Placements: the two sides on two CPUs (each wake-up crosses CPUs),
     * then both on one (each wake-up is a switch on the same CPU). */
    cpu_set_t mine;
    int first[2] = {-1, -1}, got = 0;
    if (pthread_getaffinity_np(pthread_self(), sizeof mine, &mine) == 0)
        for (int c = 0; c < CPU_SETSIZE && got < 2; c++)
            if (CPU_ISSET(c, &mine)) first[got++] = c;
    int nplace = got >= 2 ? 2 : 1;
    static const char *const place_name[2] = {"on two CPUs", "on one CPU"};
    sb_progress_begin("W2c", (long)nplace * sb.runs * P_NV);
    for (int pl = 0; pl < nplace; pl++) {
        cpu[0] = first[0];
        cpu[1] = pl == 0 && got >= 2 ? first[1] : first[0];
        pin_self(cpu[0]);
        for (int run = 0; run < sb.runs; run++)
            for (int o = 0; o < P_NV; o++) {
                int v = (o + run) % P_NV;
                char what[64];
                snprintf(what, sizeof what, "W2c %s %s", pv[v], place_name[pl]);
                p_rate[pl][v][run] = run_once(v, secs, what);
                sb_record("W2c", pv[v], 2, pl == 0 && got >= 2 ? 2 : 1, run, "round_trips_per_s",
                          p_rate[pl][v][run], "ok");
                sb_progress_step();
            }
    }
    sb_progress_end();
    pthread_setaffinity_np(pthread_self(), sizeof mine, &mine);
    struct sb_sum sum[2][P_NV];
    printf("  %-14s", "variant");
    for (int pl = 0; pl < nplace; pl++)
        printf(" | %-33s | %-8s", place_name[pl], "x eventfd");
    printf("\n");
    for (int pl = 0; pl < nplace; pl++)
        for (int v = 0; v < P_NV; v++)
            sum[pl][v] = sb_summarize(p_rate[pl][v], sb.runs);
    for (int v = 0; v < P_NV; v++) {
        printf("  %-14s", pv[v]);
        for (int pl = 0; pl < nplace; pl++) {
            char c[64], r[16];
            sb_fmt_sum(c, sizeof c, sum[pl][v], 1, 0);
            snprintf(r, sizeof r, "%.2fx", sum[pl][v].med / sum[pl][P_EVENTFD].med);
            printf(" | %-33s | %-8s", c, r);
        }
        printf("\n");
    }
    printf("  (round trips per second, median [min-max] of %d runs of %.2f s; each round trip:\n"
           "   the thread wakes the loop, the loop wakes the thread; the two sides pinned)\n",
           sb.runs, secs);
    for (int pl = 0; pl < nplace; pl++)
        sb_verdict("W2c", sum[pl][P_SQF].med >= sum[pl][P_EVENTFD].med,
                   "sqf-loop ping-pong %s %.0f round trips/s vs eventfd-pair %.0f: %.2fx (target "
                   ">= 1)",
                   place_name[pl], sum[pl][P_SQF].med, sum[pl][P_EVENTFD].med,
                   sum[pl][P_SQF].med / sum[pl][P_EVENTFD].med);
    return 0;
}
