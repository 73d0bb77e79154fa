/* wake_all: wake-all latency (BENCHMARKS.md W1).  k threads sleep; one
 * thread wakes them all; how long until the LAST of them runs?  Every
 * variant side by side in one run.
 *
 *     bench/wake_all [--k LIST | --quick] [--runs N] [--limit-ms MS] [--csv FILE]
 *
 * Variants:
 *   cond_bcast  pthread_cond_broadcast: waiters loop in pthread_cond_wait on a
 *               predicate under a pthread mutex; the waker locks, changes the
 *               predicate, broadcasts and unlocks.  A waiter counts as having
 *               run once it has re-acquired the mutex and released it.
 *   std::latch  C++20 std::latch (count 1; waiters wait(), the waker
 *               count_down()), through bench/wake_all_cxx.cpp.  A fresh latch
 *               every run (a std::latch cannot be re-armed).
 *   futex_wake  a raw FUTEX_WAKE of all waiters on one word (syscall): the
 *               floor a kernel-mediated wake can reach.
 *   futex_casc  a cascade: the waker wakes 2 (FUTEX_WAKE 2), and every woken
 *               waiter wakes 2 more on the same word: O(log k) rounds of
 *               wake-ups instead of one kernel call.
 *   sqf_event   sqf_event_wait / sqf_event_set; cleared between runs, after
 *               every waiter has returned.
 *   sqf_latch   sqf_latch_init(&l, 1, 0) / sqf_latch_wait / sqf_latch_count_down
 *               (re-initialised every run); built only if
 *               <squarefree/latch.h> exists when this file is compiled (and,
 *               as bench/CMakeLists.txt checks, the library compiles
 *               src/latch.c; otherwise WA_NO_SQF_LATCH leaves it out).
 *
 * Timing.  t0 = sqf_now() just before the wake call (for cond_bcast: just
 * before the waker locks the mutex).  Each waiter stores sqf_now() in its own
 * cache line as soon as its wait has returned (cond_bcast: after unlocking the
 * mutex; futex_casc: before it wakes its 2).  A run's figure is
 * max(waiter's time) - t0.  Both clocks are CLOCK_MONOTONIC.  The waker
 * sleeps (a futex on a counter bumped by each waiter after it stored its
 * time) while the waiters run, so it takes no CPU from them.
 *
 * Asleep before the wake.  Before every wake, every waiter must be asleep in
 * the kernel, inside the variant's wait:
 *   1. each waiter stores the run's number in its "armed" word immediately
 *      before its blocking call (cond_bcast: under the mutex, just before
 *      pthread_cond_wait); the waker waits until all k have;
 *   2. the waker sleeps 200 us, then reads /proc/self/task/TID/stat and
 *      /proc/self/task/TID/syscall for each waiter: state 'S' (interruptible
 *      sleep), and blocked inside futex() ("syscall" is readable only while
 *      the thread is off the CPU; it shows the call's number and arguments).
 *      For cond_bcast, futex_wake and futex_casc, the futex address must also
 *      lie inside the variant's own object (the pthread_cond_t or the word),
 *      so a waiter still queued on the mutex does not count.  std::latch,
 *      sqf_event and sqf_latch wait wherever their library chose, so for them
 *      any futex() counts (the armed word has already shown that the waiter
 *      is past everything else).  Waiters not yet seen asleep are checked
 *      again every 200 us; when all have been, one more full pass must find
 *      all of them still asleep.  After 10 s without that, the benchmark
 *      stops with an error rather than time a wake of running threads.
 *   If /proc/.../syscall is unreadable (probed at start-up), the check falls
 *   back to state 'S' plus a "futex" wchan, else to state 'S' alone; the
 *   header says which was used.
 *
 * Method.  One pool of k threads (256 KiB stacks) is created per k and used
 * by every variant and every run at that k.  Runs are interleaved: round r
 * runs each variant once, in an order rotated by r, so a noisy moment of the
 * machine hits all variants alike and per-run ratios compare runs of one
 * round.  Each point is the median of --runs runs (default 7), with min and
 * max.  A run that is not over after --limit-ms (default 2000) is recorded
 * as "> limit"; that variant's remaining runs at that k are skipped and the
 * point is reported as "> limit", never dropped.
 *
 * Report: a table per variant (median, min, max, factor against the smallest
 * k), a summary table of medians, the fitted exponent of each variant (the
 * least-squares slope of log(time) over log(k) for k >= 16: ~1 is linear,
 * ~2 the square), and sqf_event and sqf_latch against the best peer
 * (pthread_cond_broadcast or std::latch, whichever has the lower median at
 * that k) as ratios of medians with the range of per-run ratios.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <squarefree/event.h>
#include <squarefree/time.h>

#if defined(__has_include) && !defined(WA_NO_SQF_LATCH)
#if __has_include(<squarefree/latch.h>)
#include <squarefree/latch.h>

#include "machine.h"
#define WA_HAVE_SQF_LATCH 1
#endif
#endif

#if defined(WA_HAVE_STD_LATCH)
/* bench/wake_all_cxx.cpp */
typedef struct wa_cxx_latch wa_cxx_latch;
wa_cxx_latch *wa_cxx_latch_new(void);
void wa_cxx_latch_wait(wa_cxx_latch *l);
void wa_cxx_latch_count_down(wa_cxx_latch *l);
void wa_cxx_latch_del(wa_cxx_latch *l);
const char *wa_cxx_info(void);
#endif

#define MAX_RUNS       1000
#define MAX_K          32768
#define MAX_POINTS     64
#define STACK_SIZE     (256 * 1024)
#define CACHELINE      64
#define SETTLE_NS      (200 * SQF_US) /* the waker's sleep between checks */
#define ASLEEP_TIMEOUT (10 * SQF_SEC) /* give up confirming waiters asleep */
#define GRACE_NS       (60 * SQF_SEC) /* after the limit, wait this long for stragglers */
#define FIT_MIN_K      16

enum { V_COND, V_STD_LATCH, V_FUTEX, V_CASCADE, V_SQF_EVENT, V_SQF_LATCH, NV };

static const struct vinfo {
    const char *col;  /* column name */
    const char *name; /* full name, also in the CSV */
    const char *what;
    int peer; /* a peer that sqf is compared against */
    int built;
} vinfo[NV] = {
    {"cond_bcast", "pthread_cond_broadcast",
     "waiters in pthread_cond_wait on a predicate under a pthread mutex; until the last has "
     "re-acquired and released it",
     1, 1},
    {"std::latch", "std_latch", "C++20 std::latch, count 1: wait() / count_down()", 1,
#if defined(WA_HAVE_STD_LATCH)
     1
#else
     0
#endif
    },
    {"futex_wake", "futex_wake_all", "raw FUTEX_WAKE of all on one word (the floor)", 0, 1},
    {"futex_casc", "futex_cascade",
     "raw futex cascade: the waker wakes 2, each woken waiter wakes 2 more", 0, 1},
    {"sqf_event", "sqf_event", "sqf_event_wait / sqf_event_set (cleared between runs)", 0, 1},
    {"sqf_latch", "sqf_latch", "sqf_latch_wait / sqf_latch_count_down (count 1)", 0,
#if defined(WA_HAVE_SQF_LATCH)
     1
#else
     0
#endif
    },
};

/* ---- state shared by the waker (main thread) and the pool ---------------- */

static struct {
    /* Futex word the pool sleeps on between runs; the waker bumps it to start
     * a run.  variant and quit are written before the bump. */
    _Alignas(CACHELINE) _Atomic uint32_t ctrl;
    int variant, quit, k;
    /* Waiters that have stored their time this run; the last wakes the waker. */
    _Alignas(CACHELINE) _Atomic uint32_t done;
    _Atomic int failed; /* an error returned by a wait call */
    /* The variants' objects, each in its own cache lines. */
    _Alignas(CACHELINE) pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned cv_gen; /* the predicate, under mu */
    _Alignas(CACHELINE) _Atomic uint32_t fword;
    _Alignas(CACHELINE) _Atomic uint32_t cword;
    _Alignas(CACHELINE) sqf_event ev;
#if defined(WA_HAVE_SQF_LATCH)
    _Alignas(CACHELINE) sqf_latch sl;
#endif
#if defined(WA_HAVE_STD_LATCH)
    wa_cxx_latch *cxx;
#endif
} S = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

struct waiter {
    _Alignas(CACHELINE) _Atomic uint32_t armed; /* the run it is about to sleep in */
    _Atomic int started;
    pid_t tid;
    int64_t woke; /* sqf_now() when its wait returned */
};

static struct waiter *W;
static pthread_t *threads;
static unsigned char *confirmed;
static int nthreads;

/* ---- futex ---------------------------------------------------------------- */

static long futex(_Atomic uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, (uint32_t *)word, op, val, ts, NULL, FUTEX_BITSET_MATCH_ANY);
}

static void futex_wait(_Atomic uint32_t *word, uint32_t val)
{
    futex(word, FUTEX_WAIT_PRIVATE, val, NULL);
}

static void futex_wake(_Atomic uint32_t *word, int n)
{
    futex(word, FUTEX_WAKE_PRIVATE, (uint32_t)n, NULL);
}

/* Sleep while *word == val, until an absolute CLOCK_MONOTONIC deadline. */
static void futex_wait_until(_Atomic uint32_t *word, uint32_t val, int64_t deadline)
{
    struct timespec ts = {(time_t)(deadline / SQF_SEC), (long)(deadline % SQF_SEC)};
    futex(word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, val, &ts);
}

static void sleep_ns(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / SQF_SEC), (long)(ns % SQF_SEC)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- the waiters ---------------------------------------------------------- */

static void arm(struct waiter *w, uint32_t run)
{
    atomic_store_explicit(&w->armed, run, memory_order_release);
}

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    w->tid = (pid_t)syscall(SYS_gettid);
    /* The waker bumps ctrl only once every waiter has started. */
    uint32_t seen = atomic_load_explicit(&S.ctrl, memory_order_acquire);
    atomic_store_explicit(&w->started, 1, memory_order_release);
    for (;;) {
        uint32_t c;
        while ((c = atomic_load_explicit(&S.ctrl, memory_order_acquire)) == seen)
            futex_wait(&S.ctrl, seen);
        seen = c;
        if (S.quit) return NULL;
        int v = S.variant, err = 0;
        uint32_t k = (uint32_t)S.k;
        switch (v) {
        case V_COND: {
            pthread_mutex_lock(&S.mu);
            unsigned gen = S.cv_gen;
            arm(w, seen);
            while (S.cv_gen == gen && !err)
                err = pthread_cond_wait(&S.cv, &S.mu);
            pthread_mutex_unlock(&S.mu);
            break;
        }
#if defined(WA_HAVE_STD_LATCH)
        case V_STD_LATCH:
            arm(w, seen);
            wa_cxx_latch_wait(S.cxx);
            break;
#endif
        case V_FUTEX:
        case V_CASCADE: {
            _Atomic uint32_t *word = v == V_FUTEX ? &S.fword : &S.cword;
            uint32_t val = atomic_load_explicit(word, memory_order_acquire);
            arm(w, seen);
            while (atomic_load_explicit(word, memory_order_acquire) == val)
                futex_wait(word, val);
            break;
        }
        case V_SQF_EVENT:
            arm(w, seen);
            err = sqf_event_wait(&S.ev);
            break;
#if defined(WA_HAVE_SQF_LATCH)
        case V_SQF_LATCH:
            arm(w, seen);
            err = sqf_latch_wait(&S.sl);
            break;
#endif
        default:
            err = EINVAL;
            break;
        }
        w->woke = sqf_now();
        if (v == V_CASCADE) futex_wake(&S.cword, 2);
        if (err) atomic_store(&S.failed, err);
        if (atomic_fetch_add_explicit(&S.done, 1, memory_order_acq_rel) + 1 == k)
            futex_wake(&S.done, 1);
    }
}

/* ---- are the waiters asleep? ---------------------------------------------- */

enum { CHECK_SYSCALL, CHECK_WCHAN, CHECK_STATE, CHECK_NONE };
static int check_method = CHECK_NONE;
static int task_dir = -1; /* /proc/self/task */

static const char *check_method_text(void)
{
    switch (check_method) {
    case CHECK_SYSCALL:
        return "every waiter flagged entering the wait, then /proc/self/task/TID/stat state 'S'\n"
               "           and /proc/self/task/TID/syscall inside futex() (on the variant's own\n"
               "           object for cond_bcast, futex_wake, futex_casc; any futex for the rest)";
    case CHECK_WCHAN:
        return "every waiter flagged entering the wait, then /proc/self/task/TID/stat state 'S'\n"
               "           and a wchan naming futex (/proc/.../syscall unreadable)";
    case CHECK_STATE:
        return "every waiter flagged entering the wait, then /proc/self/task/TID/stat state 'S'\n"
               "           only (syscall and wchan unreadable): WEAKER";
    default:
        return "every waiter flagged entering the wait, then a 10 ms sleep only\n"
               "           (/proc unreadable): WEAK";
    }
}

static int read_task_file(pid_t tid, const char *what, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "%d/%s", (int)tid, what);
    int fd = openat(task_dir, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    return (int)n;
}

static int is_futex_nr(long nr)
{
#if defined(SYS_futex_time64)
    if (nr == SYS_futex_time64) return 1;
#endif
    return nr == SYS_futex;
}

/* 1 if thread tid sleeps in state 'S' inside futex() (on an address in
 * [lo, hi) if lo != 0), as far as check_method can tell. */
static int task_asleep(pid_t tid, uintptr_t lo, uintptr_t hi)
{
    char buf[512];
    if (read_task_file(tid, "stat", buf, sizeof buf) < 0) return 0;
    const char *p = strrchr(buf, ')'); /* the name may hold spaces and parens */
    if (!p || p[1] != ' ' || p[2] != 'S') return 0;
    if (check_method == CHECK_SYSCALL) {
        if (read_task_file(tid, "syscall", buf, sizeof buf) < 0) return 0;
        char *end;
        long nr = strtol(buf, &end, 10); /* "running" while on a CPU */
        if (end == buf || !is_futex_nr(nr)) return 0;
        if (lo) {
            unsigned long long addr = strtoull(end, NULL, 16);
            if (addr < lo || addr >= hi) return 0;
        }
    } else if (check_method == CHECK_WCHAN) {
        if (read_task_file(tid, "wchan", buf, sizeof buf) < 0 || !strstr(buf, "futex")) return 0;
    }
    return 1;
}

static _Atomic uint32_t probe_word;

static void *probe_main(void *arg)
{
    atomic_store((_Atomic pid_t *)arg, (pid_t)syscall(SYS_gettid));
    while (atomic_load(&probe_word) == 0)
        futex_wait(&probe_word, 0);
    return NULL;
}

/* Find out which of /proc's views of a sleeping thread this kernel gives. */
static void probe_check_method(void)
{
    task_dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (task_dir < 0) return;
    pthread_t t;
    _Atomic pid_t tid_store = 0;
    pid_t tid = 0;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, STACK_SIZE);
    int rc = pthread_create(&t, &attr, probe_main, (void *)&tid_store);
    pthread_attr_destroy(&attr);
    if (rc != 0) return;
    uintptr_t lo = (uintptr_t)&probe_word, hi = lo + sizeof probe_word;
    int found = CHECK_NONE;
    for (int i = 0; i < 1000 && found == CHECK_NONE; i++) { /* up to ~1 s */
        sleep_ns(SQF_MS);
        tid = atomic_load(&tid_store);
        if (!tid) continue;
        check_method = CHECK_SYSCALL;
        if (task_asleep(tid, lo, hi)) found = CHECK_SYSCALL;
    }
    if (found == CHECK_NONE && tid) {
        check_method = CHECK_WCHAN;
        if (task_asleep(tid, 0, 0))
            found = CHECK_WCHAN;
        else {
            check_method = CHECK_STATE;
            if (task_asleep(tid, 0, 0)) found = CHECK_STATE;
        }
    }
    check_method = found;
    atomic_store(&probe_word, 1);
    futex_wake(&probe_word, 1);
    pthread_join(t, NULL);
}

/* Wait until all k waiters are armed for `run` and asleep in variant v's
 * wait.  0, or -1 after ASLEEP_TIMEOUT (how many were missing: *missing). */
static int confirm_asleep(int k, uint32_t run, int v, int *missing_out)
{
    uintptr_t lo = 0, hi = 0;
    if (v == V_COND) {
        lo = (uintptr_t)&S.cv;
        hi = lo + sizeof S.cv;
    } else if (v == V_FUTEX || v == V_CASCADE) {
        lo = (uintptr_t)(v == V_FUTEX ? &S.fword : &S.cword);
        hi = lo + sizeof(uint32_t);
    }
    memset(confirmed, 0, (size_t)k);
    int64_t deadline = sqf_now() + ASLEEP_TIMEOUT;
    for (;;) {
        sleep_ns(SETTLE_NS);
        int missing = 0;
        for (int i = 0; i < k; i++) {
            if (confirmed[i]) continue;
            if (atomic_load_explicit(&W[i].armed, memory_order_acquire) == run &&
                (check_method == CHECK_NONE || task_asleep(W[i].tid, lo, hi)))
                confirmed[i] = 1;
            else
                missing++;
        }
        if (missing == 0) {
            if (check_method == CHECK_NONE) {
                sleep_ns(10 * SQF_MS);
                return 0;
            }
            for (int i = 0; i < k; i++) /* all still asleep? */
                if (!task_asleep(W[i].tid, lo, hi)) {
                    confirmed[i] = 0;
                    missing++;
                }
            if (missing == 0) return 0;
        }
        if (sqf_now() > deadline) {
            *missing_out = missing;
            return -1;
        }
    }
}

/* ---- the pool --------------------------------------------------------------- */

static void pool_stop(void)
{
    S.quit = 1;
    atomic_fetch_add_explicit(&S.ctrl, 1, memory_order_release);
    futex_wake(&S.ctrl, INT_MAX);
    for (int i = 0; i < nthreads; i++)
        pthread_join(threads[i], NULL);
    nthreads = 0;
    free(W);
    free(threads);
    free(confirmed);
    W = NULL;
    threads = NULL;
    confirmed = NULL;
}

/* Start k waiters.  0, or an error number from pthread_create (then *failed_at
 * is the 1-based thread that could not start, and no thread is left). */
static int pool_start(int k, int *failed_at)
{
    W = aligned_alloc(CACHELINE, (size_t)k * sizeof *W);
    threads = malloc((size_t)k * sizeof *threads);
    confirmed = malloc((size_t)k);
    if (!W || !threads || !confirmed) {
        *failed_at = 1;
        free(W);
        free(threads);
        free(confirmed);
        W = NULL;
        threads = NULL;
        confirmed = NULL;
        return ENOMEM;
    }
    memset(W, 0, (size_t)k * sizeof *W);
    S.k = k;
    S.quit = 0;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, STACK_SIZE);
    nthreads = 0;
    int rc = 0;
    for (int i = 0; i < k; i++) {
        rc = pthread_create(&threads[i], &attr, waiter_main, &W[i]);
        if (rc != 0) {
            *failed_at = i + 1;
            break;
        }
        nthreads++;
    }
    pthread_attr_destroy(&attr);
    for (int i = 0; i < nthreads; i++)
        while (!atomic_load_explicit(&W[i].started, memory_order_acquire))
            sleep_ns(100 * SQF_US);
    if (rc != 0) pool_stop();
    return rc;
}

/* ---- one run ---------------------------------------------------------------- */

static int64_t limit_ns = 2000 * SQF_MS;

/* A one-line error (after the progress line), then exit 1. */
static _Noreturn __attribute__((format(printf, 1, 2))) void fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "\nwake_all: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static void prepare(int v)
{
    switch (v) {
#if defined(WA_HAVE_STD_LATCH)
    case V_STD_LATCH:
        if (S.cxx) wa_cxx_latch_del(S.cxx);
        S.cxx = wa_cxx_latch_new();
        if (!S.cxx) fatal("std::latch: out of memory");
        break;
#endif
    case V_SQF_EVENT:
        sqf_event_clear(&S.ev); /* every waiter of the last run has returned */
        break;
#if defined(WA_HAVE_SQF_LATCH)
    case V_SQF_LATCH:
        sqf_latch_init(&S.sl, 1, 0);
        break;
#endif
    default:
        break;
    }
}

/* The wake call.  Returns its error, if it has one. */
static int wake(int v)
{
    switch (v) {
    case V_COND: {
        pthread_mutex_lock(&S.mu);
        S.cv_gen++;
        int e = pthread_cond_broadcast(&S.cv);
        pthread_mutex_unlock(&S.mu);
        return e;
    }
#if defined(WA_HAVE_STD_LATCH)
    case V_STD_LATCH:
        wa_cxx_latch_count_down(S.cxx);
        return 0;
#endif
    case V_FUTEX:
        atomic_fetch_add_explicit(&S.fword, 1, memory_order_release);
        futex_wake(&S.fword, INT_MAX);
        return 0;
    case V_CASCADE:
        atomic_fetch_add_explicit(&S.cword, 1, memory_order_release);
        futex_wake(&S.cword, 2);
        return 0;
    case V_SQF_EVENT:
        return sqf_event_set(&S.ev);
#if defined(WA_HAVE_SQF_LATCH)
    case V_SQF_LATCH:
        return sqf_latch_count_down(&S.sl, 1);
#endif
    default:
        return EINVAL;
    }
}

/* 1 once all k waiters are done, 0 if the deadline passed first. */
static int wait_done(uint32_t k, int64_t deadline)
{
    uint32_t d;
    while ((d = atomic_load_explicit(&S.done, memory_order_acquire)) < k) {
        if (sqf_now() >= deadline) return 0;
        futex_wait_until(&S.done, d, deadline);
    }
    return 1;
}

/* One run of variant v with the pool's k waiters.  Returns the ns from the
 * wake call to the last waiter running, or -1 if over the limit. */
static int64_t run_once(int v, int k, int run_no)
{
    prepare(v);
    atomic_store_explicit(&S.done, 0, memory_order_relaxed);
    atomic_store_explicit(&S.failed, 0, memory_order_relaxed);
    S.variant = v;
    uint32_t run = atomic_fetch_add_explicit(&S.ctrl, 1, memory_order_release) + 1;
    futex_wake(&S.ctrl, INT_MAX);

    int missing = 0;
    if (confirm_asleep(k, run, v, &missing) != 0) {
        fatal("%s at k=%d, run %d: %d of the %d waiters not seen asleep in the wait after %d s; "
              "stopping",
              vinfo[v].name, k, run_no, missing, k, (int)(ASLEEP_TIMEOUT / SQF_SEC));
    }

    int64_t t0 = sqf_now();
    int e = wake(v);
    int in_time = wait_done((uint32_t)k, t0 + limit_ns);
    if (!in_time && !wait_done((uint32_t)k, sqf_now() + GRACE_NS))
        fatal("%s at k=%d, run %d: waiters still asleep 60 s after the wake "
              "(a lost wake-up?); stopping",
              vinfo[v].name, k, run_no);
    if (e || atomic_load(&S.failed))
        fatal("%s at k=%d, run %d: a wait or wake call returned an error", vinfo[v].name, k,
              run_no);
    int64_t last = INT64_MIN;
    for (int i = 0; i < k; i++) {
        if (W[i].woke < t0)
            fatal("%s at k=%d, run %d: a waiter returned before the wake call; stopping",
                  vinfo[v].name, k, run_no);
        if (W[i].woke > last) last = W[i].woke;
    }
    return in_time ? last - t0 : -1;
}

/* ---- statistics and report ------------------------------------------------- */

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

/* Results: ns[v][point][run]; nok = runs within the limit; over = hit it. */
static int nk, runs = 7;
static int ks[MAX_POINTS];
static double *res;
/* over: 0, or the run (1-based) that hit the limit; later runs are skipped. */
static int nok[NV][MAX_POINTS], over[NV][MAX_POINTS];
static int point_run[MAX_POINTS]; /* the pool for this k existed */
static double med[NV][MAX_POINTS], lo_[NV][MAX_POINTS], hi_[NV][MAX_POINTS];

static double *cell(int v, int p)
{
    return res + ((size_t)v * MAX_POINTS + (size_t)p) * (size_t)runs;
}

/* A point with a median: run, and every run within the limit. */
static int valid(int v, int p)
{
    return vinfo[v].built && point_run[p] && !over[v][p] && nok[v][p] == runs;
}

static const char *point_text(int v, int p, char *buf, size_t len)
{
    if (!vinfo[v].built)
        snprintf(buf, len, "not built");
    else if (!point_run[p])
        snprintf(buf, len, "not run");
    else if (over[v][p])
        snprintf(buf, len, "> limit");
    else
        snprintf(buf, len, "%.1f", med[v][p] / 1000.0);
    return buf;
}

/* Least-squares slope of log(median) over log(k), k >= FIT_MIN_K; NAN if
 * fewer than two such points are valid.  *left_out: points over the limit. */
static double exponent(int v, int *points, int *left_out)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int n = 0;
    *left_out = 0;
    for (int p = 0; p < nk; p++) {
        if (ks[p] >= FIT_MIN_K && point_run[p] && over[v][p]) ++*left_out;
        if (ks[p] < FIT_MIN_K || !valid(v, p) || med[v][p] <= 0) continue;
        double x = log((double)ks[p]), y = log(med[v][p]);
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
        n++;
    }
    *points = n;
    double d = n * sxx - sx * sx;
    if (n < 2 || d == 0) return NAN;
    return (n * sxy - sx * sy) / d;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: wake_all [--k LIST | --quick] [--runs N] [--limit-ms MS] [--csv FILE]\n"
            "  --k LIST        waiter counts, comma-separated, 1..%d (default 1,2,4,...,1024)\n"
            "  --quick         k = 1,2,4,...,256\n"
            "  --runs N        runs per point, 5..%d (default 7)\n"
            "  --limit-ms MS   time limit of one run (default 2000)\n"
            "  --csv FILE      write every raw run to FILE (variant,k,run,ns,status;\n"
            "                  a run over the limit has status over_limit and ns = the limit)\n",
            MAX_K, MAX_RUNS);
}

static long parse_count(const char *opt, const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "wake_all: %s needs a number from %ld to %ld, got '%s'\n", opt, lo, hi,
                s ? s : "(nothing)");
        exit(2);
    }
    return v;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* "1,4,16" -> ks[], sorted; exits with a one-line error if malformed. */
static void parse_k_list(const char *s)
{
    if (!s || !*s) {
        fprintf(stderr, "wake_all: --k needs a list like 1,4,16\n");
        exit(2);
    }
    nk = 0;
    const char *p = s;
    for (;;) {
        char *end;
        errno = 0;
        long v = (*p >= '0' && *p <= '9') ? strtol(p, &end, 10) : -1;
        if (v < 0 || errno || (*end != ',' && *end != 0) || v < 1 || v > MAX_K) {
            fprintf(stderr,
                    "wake_all: --k: bad list '%s' (want numbers 1..%d separated by commas)\n", s,
                    MAX_K);
            exit(2);
        }
        if (nk == MAX_POINTS) {
            fprintf(stderr, "wake_all: --k: at most %d values\n", MAX_POINTS);
            exit(2);
        }
        ks[nk++] = (int)v;
        if (*end == 0) break;
        p = end + 1;
    }
    qsort(ks, (size_t)nk, sizeof ks[0], cmp_int);
    for (int i = 1; i < nk; i++)
        if (ks[i] == ks[i - 1]) {
            fprintf(stderr, "wake_all: --k: %d given twice\n", ks[i]);
            exit(2);
        }
}

static void progress(int p, int r)
{
    fprintf(stderr, "\rwake_all: k=%d (%d of %d), run %d of %d   ", ks[p], p + 1, nk, r + 1, runs);
    fflush(stderr);
}

int main(int argc, char **argv)
{
    const char *csv_path = NULL, *k_list = NULL;
    int quick = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--runs")) {
            runs = (int)parse_count(a, val, 5, MAX_RUNS);
            i++;
        } else if (!strcmp(a, "--k")) {
            if (!val) {
                fprintf(stderr, "wake_all: --k needs a list like 1,4,16\n");
                return 2;
            }
            k_list = val;
            i++;
        } else if (!strcmp(a, "--quick")) {
            quick = 1;
        } else if (!strcmp(a, "--limit-ms")) {
            limit_ns = parse_count(a, val, 1, 3600000) * SQF_MS;
            i++;
        } else if (!strcmp(a, "--csv")) {
            if (!val) {
                fprintf(stderr, "wake_all: --csv needs a file name\n");
                return 2;
            }
            csv_path = val;
            i++;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "wake_all: unknown option '%s' (try --help)\n", a);
            return 2;
        }
    }
    if (k_list)
        parse_k_list(k_list); /* --k overrides --quick */
    else
        for (nk = 0; (1 << nk) <= (quick ? 256 : 1024); nk++)
            ks[nk] = 1 << nk;

    FILE *csv = NULL;
    if (csv_path) {
        csv = fopen(csv_path, "w");
        if (!csv) {
            fprintf(stderr, "wake_all: cannot write %s: %s\n", csv_path, strerror(errno));
            return 1;
        }
        fprintf(csv, "variant,k,run,ns,status\n");
    }
    res = calloc((size_t)NV * MAX_POINTS * (size_t)runs, sizeof *res);
    if (!res) {
        fprintf(stderr, "wake_all: out of memory\n");
        return 1;
    }

    probe_check_method();
    if (sqf_event_init(&S.ev, SQF_PRIVATE) != 0) {
        fprintf(stderr, "wake_all: sqf_event_init failed\n");
        return 1;
    }

    char cpu[256];
    struct utsname un;
    cpu_model(cpu, sizeof cpu);
    if (uname(&un) != 0) snprintf(un.release, sizeof un.release, "unknown");

    printf("wake_all: wake-all latency, k sleeping waiters, one waker (BENCHMARKS.md W1)\n");
    printf("cpu:       %s\n", cpu);
    printf("cpus:      %d\n", ncpus());
    printf("kernel:    %s %s\n", un.sysname, un.release);
    printf("compiler:  %s\n", compiler());
#if defined(WA_HAVE_STD_LATCH)
    printf("c++:       %s (std::latch adapter)\n", wa_cxx_info());
#endif
    printf("libc:      glibc %s\n", gnu_get_libc_version());
    printf("sqf path:  %s\n", SQF_INLINE_FAST_PATH ? "inline fast path" : "out-of-line calls");
#if !defined(__OPTIMIZE__)
    printf("WARNING:   built without optimisation; numbers are not representative\n");
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    printf("WARNING:   built with a sanitizer; numbers are not representative\n");
#endif
    printf("method:    %d runs per point, interleaved (each round runs every variant once, order "
           "rotated);\n           one pool of k threads per k (%d KiB stacks), reused by every "
           "variant and run\n",
           runs, STACK_SIZE / 1024);
    printf("asleep:    %s\n", check_method_text());
    printf("timing:    t0 = sqf_now() just before the wake call; each waiter stores sqf_now() "
           "when its\n           wait returns; a run = max(waiter) - t0 (CLOCK_MONOTONIC)\n");
    printf("limit:     %lld ms per run; a point that hits it is reported as \"> limit\"\n",
           (long long)(limit_ns / SQF_MS));
    printf("k:        ");
    for (int p = 0; p < nk; p++)
        printf(" %d", ks[p]);
    printf("\n\n");
    fflush(stdout);

    /* ---- measure ---- */
    char stop_msg[256] = "";
    for (int p = 0; p < nk; p++) {
        int failed_at = 0;
        int rc = pool_start(ks[p], &failed_at);
        if (rc != 0) {
            snprintf(stop_msg, sizeof stop_msg,
                     "stopped: pthread_create failed for thread %d of k=%d (%s); k >= %d not run",
                     failed_at, ks[p], strerror(rc), ks[p]);
            fprintf(stderr, "\nwake_all: %s\n", stop_msg);
            break;
        }
        point_run[p] = 1;
        for (int r = 0; r < runs; r++) {
            progress(p, r);
            for (int j = 0; j < NV; j++) {
                int v = (j + r) % NV;
                if (!vinfo[v].built || over[v][p]) continue;
                int64_t ns = run_once(v, ks[p], r + 1);
                if (ns < 0) {
                    over[v][p] = r + 1;
                    if (csv)
                        fprintf(csv, "%s,%d,%d,%lld,over_limit\n", vinfo[v].name, ks[p], r + 1,
                                (long long)limit_ns);
                } else {
                    cell(v, p)[nok[v][p]++] = (double)ns;
                    if (csv)
                        fprintf(csv, "%s,%d,%d,%lld,ok\n", vinfo[v].name, ks[p], r + 1,
                                (long long)ns);
                }
            }
        }
        pool_stop();
    }
    fprintf(stderr, "\r%60s\r", "");
#if defined(WA_HAVE_STD_LATCH)
    if (S.cxx) wa_cxx_latch_del(S.cxx);
#endif
    if (csv && fclose(csv) != 0) {
        fprintf(stderr, "wake_all: error writing %s\n", csv_path);
        return 1;
    }

    /* ---- report ---- */
    for (int v = 0; v < NV; v++)
        for (int p = 0; p < nk; p++)
            if (valid(v, p)) stats(cell(v, p), runs, &med[v][p], &lo_[v][p], &hi_[v][p]);

    char b1[32];
    for (int v = 0; v < NV; v++) {
        printf("%s: %s\n", vinfo[v].name, vinfo[v].what);
        if (!vinfo[v].built) {
            printf("  not built%s\n\n",
                   v == V_SQF_LATCH ? " (<squarefree/latch.h> or src/latch.c missing at build time)"
                                    : " (no C++20 compiler with <latch>)");
            continue;
        }
        printf("  %6s %11s %11s %11s %8s\n", "k", "median us", "min us", "max us", "factor");
        int base = -1;
        for (int p = 0; p < nk; p++) {
            if (!point_run[p]) {
                printf("  %6d %11s\n", ks[p], "not run");
                continue;
            }
            if (over[v][p]) {
                printf("  %6d %11s   (%lld ms, hit in run %d of %d; later runs skipped)\n", ks[p],
                       "> limit", (long long)(limit_ns / SQF_MS), over[v][p], runs);
                continue;
            }
            if (base < 0) base = p;
            printf("  %6d %11.1f %11.1f %11.1f %7.2fx\n", ks[p], med[v][p] / 1000.0,
                   lo_[v][p] / 1000.0, hi_[v][p] / 1000.0, med[v][p] / med[v][base]);
        }
        int pts, out;
        double e = exponent(v, &pts, &out);
        if (isnan(e))
            printf("  exponent (k >= %d): n/a (needs 2 points within the limit)", FIT_MIN_K);
        else
            printf("  exponent (k >= %d): %.2f over %d points (1 = linear, 2 = the square)",
                   FIT_MIN_K, e, pts);
        if (out) printf("; %d point(s) over the limit left out of the fit", out);
        printf("\n\n");
    }

    printf("median us, all variants\n  %6s", "k");
    for (int v = 0; v < NV; v++)
        printf(" %11s", vinfo[v].col);
    printf("\n");
    for (int p = 0; p < nk; p++) {
        printf("  %6d", ks[p]);
        for (int v = 0; v < NV; v++)
            printf(" %11s", point_text(v, p, b1, sizeof b1));
        printf("\n");
    }
    printf("  %6s", "expon.");
    int any_out = 0;
    for (int v = 0; v < NV; v++) {
        int pts, out = 0;
        double e = vinfo[v].built ? exponent(v, &pts, &out) : NAN;
        char buf[32];
        if (isnan(e))
            snprintf(buf, sizeof buf, "n/a%s", out ? "*" : "");
        else
            snprintf(buf, sizeof buf, "%.2f%s", e, out ? "*" : "");
        printf(" %11s", buf);
        any_out |= out;
    }
    printf("\n");
    if (any_out) printf("  * fitted without the points over the limit\n");
    printf("\n");

    /* sqf against the best peer at each k */
    static const int sqfv[] = {V_SQF_EVENT, V_SQF_LATCH};
    printf("sqf against the best peer at each k (pthread_cond_broadcast or std::latch, lower "
           "median);\nratio of medians, [range of per-run ratios, run i against run i of the same "
           "round];\n< 1: sqf faster.  /floor: against the raw FUTEX_WAKE of all (ratio of "
           "medians)\n");
    printf("  %6s %-11s %10s %24s %24s %12s %12s\n", "k", "best peer", "peer us", "sqf_event/peer",
           "sqf_latch/peer", "event/floor", "latch/floor");
    int best[MAX_POINTS];
    for (int p = 0; p < nk; p++) {
        best[p] = -1;
        for (int v = 0; v < NV; v++)
            if (vinfo[v].peer && valid(v, p) && (best[p] < 0 || med[v][p] < med[best[p]][p]))
                best[p] = v;
        printf("  %6d %-11s", ks[p], best[p] >= 0 ? vinfo[best[p]].col : "n/a");
        if (best[p] >= 0)
            printf(" %10.1f", med[best[p]][p] / 1000.0);
        else
            printf(" %10s", "n/a");
        for (int i = 0; i < 2; i++) {
            int v = sqfv[i];
            char buf[64];
            if (!valid(v, p) || best[p] < 0) {
                printf(" %24s", point_text(v, p, b1, sizeof b1));
                continue;
            }
            double rr[MAX_RUNS], rm, rlo, rhi;
            for (int r = 0; r < runs; r++)
                rr[r] = cell(v, p)[r] / cell(best[p], p)[r];
            stats(rr, runs, &rm, &rlo, &rhi);
            snprintf(buf, sizeof buf, "%.2fx [%.2f-%.2f]", med[v][p] / med[best[p]][p], rlo, rhi);
            printf(" %24s", buf);
        }
        for (int i = 0; i < 2; i++) {
            int v = sqfv[i];
            if (valid(v, p) && valid(V_FUTEX, p))
                printf(" %11.2fx", med[v][p] / med[V_FUTEX][p]);
            else
                printf(" %12s", "n/a");
        }
        printf("\n");
    }
    printf("\n");

    for (int i = 0; i < 2; i++) {
        int v = sqfv[i];
        printf("verdict: %s against the best peer:", vinfo[v].name);
        if (!vinfo[v].built) {
            printf(" not built\n");
            continue;
        }
        int faster = 0, slower = 0, mixed = 0, na = 0;
        for (int p = 0; p < nk; p++) {
            if (!point_run[p]) continue;
            if (over[v][p]) {
                printf(" k=%d > limit;", ks[p]);
                slower++;
                continue;
            }
            if (!valid(v, p) || best[p] < 0) {
                printf(" k=%d n/a;", ks[p]);
                na++;
                continue;
            }
            double rr[MAX_RUNS], rm, rlo, rhi;
            for (int r = 0; r < runs; r++)
                rr[r] = cell(v, p)[r] / cell(best[p], p)[r];
            stats(rr, runs, &rm, &rlo, &rhi);
            printf(" k=%d %.2fx;", ks[p], med[v][p] / med[best[p]][p]);
            if (rhi < 1)
                faster++;
            else if (rlo > 1)
                slower++;
            else
                mixed++;
        }
        printf(" faster in every run at %d k, slower in every run at %d, mixed at %d", faster,
               slower, mixed);
        if (na) printf(", n/a at %d", na);
        printf("\n");
    }
    if (stop_msg[0]) printf("%s\n", stop_msg);
    if (csv_path) printf("raw runs written to %s\n", csv_path);
    return stop_msg[0] ? 1 : 0;
}
