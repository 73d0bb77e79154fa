/* square.c: the square experiments S1-S7 of seeds/000 (BENCHMARKS.md "S"):
 * S1-S5 with threads, S6 and S7 (the seed's multiprocessing cases) with
 * forked processes.
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
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <squarefree.h>

#ifdef SQB_HAVE_NSYNC
#include <nsync_counter.h>
#include <nsync_mu.h>
#include <nsync_note.h>
#include <nsync_time.h>
#endif
#ifdef SQB_HAVE_ABSL
#include "absl.h"
#endif

#include "cxx.h"
#include "sqbench.h"

#define S_MAX_VARIANTS 8
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

/* The floor of S2-S5, as S1's: n threads that synchronise nothing, from the
 * first create to the last join.  Every other variant of those tables starts
 * its clock later (once all n are waiting), so the floor's time is not a
 * bound on theirs; its exponent is what creating and joining n threads grows
 * with here, the least any variant's can. */
static int64_t s_floor_run(int n)
{
    int64_t t0 = sb_now_ns();
    for (int i = 0; i < n; i++)
        s_start_thread(i, n, s1_floor, NULL);
    s_join_all(n);
    return sb_now_ns() - t0;
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
    atomic_int bad; /* a peer's wait returned a wrong count */
#ifdef SQB_HAVE_NSYNC
    nsync_mu nm;
    nsync_counter nc;
#endif
#ifdef SQB_HAVE_ABSL
    sqb_absl_mutex *am;
    sqb_absl_counter *ac;
    sqb_absl_note *an;
#endif
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

/* nsync: the sqf variant with nsync_mu for the lock and nsync_counter in
 * sqf_countdown's place: up before, down after, wait (every thread; n is not
 * known to this code either).  nsync forbids an increment once a waiter may
 * have waited; none can here, since every thread counts up before it queues
 * and nobody counts down before all have queued. */
#ifdef SQB_HAVE_NSYNC
static void *s2_nsync(void *arg)
{
    (void)arg;
    nsync_counter_add(s2.nc, 1);
    atomic_fetch_add(&s2.in, 1);
    nsync_mu_lock(&s2.nm);
    s2_section(NULL);
    nsync_mu_unlock(&s2.nm);
    nsync_counter_add(s2.nc, -1);
    if (nsync_counter_wait(s2.nc, nsync_time_no_deadline) != 0) atomic_store(&s2.bad, 1);
    return NULL;
}
#endif

/* absl: absl::Mutex for the lock; for the count, absl::BlockingCounter
 * (count n) plus an absl::Notification.  BlockingCounter's count is fixed
 * when it is made (so this idiom needs n in advance, as the pthread_barrier
 * idiom does and the sqf variant does not) and only one thread may Wait()
 * on it: so every thread calls DecrementCount() after its turn, the one
 * whose call brings the count to zero Notify()s, and the others
 * WaitForNotification(). */
#ifdef SQB_HAVE_ABSL
static void *s2_absl(void *arg)
{
    (void)arg;
    atomic_fetch_add(&s2.in, 1);
    sqb_absl_mutex_lock(s2.am);
    s2_section(NULL);
    sqb_absl_mutex_unlock(s2.am);
    if (sqb_absl_counter_decrement(s2.ac)) {
        sqb_absl_counter_wait(s2.ac); /* returns at once; Abseil asks for one Wait() */
        sqb_absl_note_notify(s2.an);
    } else {
        sqb_absl_note_wait(s2.an);
    }
    return NULL;
}
#endif

enum { S2_FLOOR, S2_SEED, S2_PTHREAD, S2_SQF, S2_COMBINE, S2_MUTEX, S2_NSYNC, S2_ABSL, S2_NV };

static int64_t s2_run(int v, int n)
{
    if (v == S2_FLOOR) return s_floor_run(n);
    static void *(*const fns[S2_NV])(void *) = {
        [S2_SEED] = s2_seed,           [S2_PTHREAD] = s2_pthread, [S2_SQF] = s2_sqf,
        [S2_COMBINE] = s2_sqf_combine, [S2_MUTEX] = s2_sqf_mutex,
#ifdef SQB_HAVE_NSYNC
        [S2_NSYNC] = s2_nsync,
#endif
#ifdef SQB_HAVE_ABSL
        [S2_ABSL] = s2_absl,
#endif
    };
    s2.n = n;
    atomic_store(&s2.in, 0);
    atomic_store(&s2.done, n);
    atomic_store(&s2.bad, 0);
    s2.first_seen = 0;
    pthread_mutex_init(&s2.pm, NULL);
    if (pthread_barrier_init(&s2.barrier, NULL, (unsigned)n) != 0) sb_fail("S2: barrier init");
    sqf_mutex_init(&s2.m, 0);
    sqf_countdown_init(&s2.batch, 0, 0);
#ifdef SQB_HAVE_NSYNC
    nsync_mu_init(&s2.nm);
    s2.nc = nsync_counter_new(0);
    if (!s2.nc) sb_fail("S2: nsync_counter_new: out of memory");
#endif
#ifdef SQB_HAVE_ABSL
    s2.am = sqb_absl_mutex_new();
    s2.ac = sqb_absl_counter_new(n);
    s2.an = sqb_absl_note_new();
    if (!s2.am || !s2.ac || !s2.an) sb_fail("S2: Abseil objects: out of memory");
#endif
    for (int i = 0; i < n; i++)
        s_start_thread(i, n, fns[v], (void *)(intptr_t)i);
    s_join_all(n);
    int64_t t = sb_now_ns() - (int64_t)atomic_load(&s_start);
    if (atomic_load(&s2.bad))
        sb_fail("%s: nsync_counter_wait returned a count other than 0", s_what);
    pthread_mutex_destroy(&s2.pm);
    pthread_barrier_destroy(&s2.barrier);
    sqf_mutex_destroy(&s2.m);
    sqf_countdown_destroy(&s2.batch);
#ifdef SQB_HAVE_NSYNC
    nsync_counter_free(s2.nc);
#endif
#ifdef SQB_HAVE_ABSL
    sqb_absl_mutex_del(s2.am);
    sqb_absl_counter_del(s2.ac);
    sqb_absl_note_del(s2.an);
#endif
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

enum { S3_FLOOR, S3_SEED, S3_SQF, S3_BATCH, S3_LATCH };

static void *s3_thread(void *arg)
{
    int v = (int)(intptr_t)arg;
    int n = s3.n;
    if (atomic_fetch_sub(&s3.waiting, 1) <= 0) { /* the last thread */
        s_mark_start();
        if (v == S3_SEED)
            for (int i = 0; i < n - 1; i++)
                sem_post(&s3.ps);
        else if (v == S3_SQF)
            for (int i = 0; i < n - 1; i++)
                sqf_sem_release(&s3.s, 1);
        else if (n > 1)
            sqf_sem_release(&s3.s, (unsigned)(n - 1));
    } else if (v == S3_SEED) {
        while (sem_wait(&s3.ps) != 0 && errno == EINTR) {
        }
    } else {
        sqf_sem_acquire(&s3.s);
    }
    if (v == S3_LATCH) {
        sqf_latch_arrive_and_wait(&s3.latch, 1);
        return NULL;
    }
    atomic_fetch_add(&s3.woken, 1);
    S_POLL(atomic_load(&s3.woken) == n);
    return NULL;
}

static int64_t s3_run(int v, int n)
{
    if (v == S3_FLOOR) return s_floor_run(n);
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
    atomic_int bad; /* nsync_note_wait returned "not notified" */
#ifdef SQB_HAVE_NSYNC
    nsync_note nn;
#endif
#ifdef SQB_HAVE_ABSL
    sqb_absl_note *an;
#endif
} s4;

/* nsync: an nsync_note (waiters nsync_note_wait, the setter
 * nsync_note_notify); absl: an absl::Notification (WaitForNotification,
 * Notify).  Both single-use: a fresh one every run.  Then, like seed, sqf
 * and c++20, polling until all are woken. */
enum { S4_FLOOR, S4_SEED, S4_SQF, S4_LATCH, S4_CXX, S4_NSYNC, S4_ABSL };

static void *s4_thread(void *arg)
{
    int v = (int)(intptr_t)arg;
    switch (v) {
    case S4_SEED:
        pthread_mutex_lock(&s4.pm);
        atomic_fetch_add(&s4.waiting, 1); /* under the mutex: asleep once the setter sees it */
        while (!s4.flag)
            pthread_cond_wait(&s4.pc, &s4.pm);
        pthread_mutex_unlock(&s4.pm);
        break;
    case S4_SQF:
    case S4_LATCH:
        atomic_fetch_add(&s4.waiting, 1);
        sqf_event_wait(&s4.e);
        break;
#ifdef SQB_HAVE_CXX20
    case S4_CXX:
        atomic_fetch_add(&s4.waiting, 1);
        sqb_cxx_latch_wait(s4.cxx);
        break;
#endif
#ifdef SQB_HAVE_NSYNC
    case S4_NSYNC:
        atomic_fetch_add(&s4.waiting, 1);
        if (!nsync_note_wait(s4.nn, nsync_time_no_deadline)) atomic_store(&s4.bad, 1);
        break;
#endif
#ifdef SQB_HAVE_ABSL
    case S4_ABSL:
        atomic_fetch_add(&s4.waiting, 1);
        sqb_absl_note_wait(s4.an);
        break;
#endif
    }
    if (v == S4_LATCH) {
        sqf_latch_arrive_and_wait(&s4.latch, 1);
        return NULL;
    }
    atomic_fetch_add(&s4.woken, 1);
    S_POLL(atomic_load(&s4.woken) == s4.n);
    return NULL;
}

static int64_t s4_run(int v, int n)
{
    if (v == S4_FLOOR) return s_floor_run(n);
    s4.n = n;
    atomic_store(&s4.waiting, 0);
    atomic_store(&s4.woken, 0);
    atomic_store(&s4.bad, 0);
    s4.flag = 0;
    pthread_mutex_init(&s4.pm, NULL);
    pthread_cond_init(&s4.pc, NULL);
    sqf_event_init(&s4.e, 0);
    sqf_latch_init(&s4.latch, (unsigned)n, 0);
#ifdef SQB_HAVE_CXX20
    s4.cxx = sqb_cxx_latch_new(1);
    if (!s4.cxx) sb_fail("S4: std::latch: out of memory");
#endif
#ifdef SQB_HAVE_NSYNC
    s4.nn = nsync_note_new(NULL, nsync_time_no_deadline);
    if (!s4.nn) sb_fail("S4: nsync_note_new: out of memory");
#endif
#ifdef SQB_HAVE_ABSL
    s4.an = sqb_absl_note_new();
    if (!s4.an) sb_fail("S4: absl::Notification: out of memory");
#endif
    for (int i = 0; i < n; i++)
        s_start_thread(i, n, s4_thread, (void *)(intptr_t)v);
    /* Set once all have counted in; the condvar waiters are then asleep (they
     * counted under the mutex), the others at most a few instructions away. */
    while (atomic_load(&s4.waiting) < n)
        sb_work();
    if (v == S4_SEED) pthread_mutex_lock(&s4.pm);
    s_mark_start();
    switch (v) {
    case S4_SEED:
        s4.flag = 1;
        pthread_cond_broadcast(&s4.pc);
        pthread_mutex_unlock(&s4.pm);
        break;
    case S4_SQF:
    case S4_LATCH:
        sqf_event_set(&s4.e);
        break;
#ifdef SQB_HAVE_CXX20
    case S4_CXX:
        sqb_cxx_latch_count_down(s4.cxx);
        break;
#endif
#ifdef SQB_HAVE_NSYNC
    case S4_NSYNC:
        nsync_note_notify(s4.nn);
        break;
#endif
#ifdef SQB_HAVE_ABSL
    case S4_ABSL:
        sqb_absl_note_notify(s4.an);
        break;
#endif
    }
    s_join_all(n);
    int64_t t = sb_now_ns() - (int64_t)atomic_load(&s_start);
    if (atomic_load(&s4.bad)) sb_fail("%s: nsync_note_wait returned before the notify", s_what);
    pthread_mutex_destroy(&s4.pm);
    pthread_cond_destroy(&s4.pc);
    sqf_event_destroy(&s4.e);
    sqf_latch_destroy(&s4.latch);
#ifdef SQB_HAVE_CXX20
    sqb_cxx_latch_del(s4.cxx);
#endif
#ifdef SQB_HAVE_NSYNC
    nsync_note_free(s4.nn);
#endif
#ifdef SQB_HAVE_ABSL
    sqb_absl_note_del(s4.an);
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
#ifdef SQB_HAVE_ABSL
    /* absl::Barrier is single-use: one per pass, all made before the run. */
    sqb_absl_barrier *ab[1 + S_PASSES];
    atomic_int serial; /* Block() calls that returned true: one per barrier */
#endif
} s5;

enum { S5_FLOOR, S5_PTHREAD, S5_CXX, S5_SQF, S5_ABSL };

/* Pass r (0 the gathering one) of variant v. */
static void s5_pass(int v, int r)
{
    switch (v) {
    case S5_PTHREAD:
        pthread_barrier_wait(&s5.pb);
        break;
    case S5_SQF:
        sqf_barrier_wait(&s5.b, NULL);
        break;
#ifdef SQB_HAVE_CXX20
    case S5_CXX:
        sqb_cxx_barrier_arrive_and_wait(s5.cxx);
        break;
#endif
#ifdef SQB_HAVE_ABSL
    case S5_ABSL:
        if (sqb_absl_barrier_block(s5.ab[r])) atomic_fetch_add(&s5.serial, 1);
        break;
#endif
    }
    (void)r;
}

static void *s5_thread(void *arg)
{
    int v = (int)(intptr_t)arg;
    s5_pass(v, 0);
    s_mark_start();
    for (int i = 1; i <= S_PASSES; i++)
        s5_pass(v, i);
    if (atomic_fetch_add(&s5.out, 1) == s5.n - 1) atomic_store(&s_end, (long long)sb_now_ns());
    return NULL;
}

static int64_t s5_run(int v, int n)
{
    if (v == S5_FLOOR) return s_floor_run(n);
    s5.n = n;
    atomic_store(&s5.out, 0);
    if (pthread_barrier_init(&s5.pb, NULL, (unsigned)n) != 0) sb_fail("S5: barrier init");
    sqf_barrier_init(&s5.b, (unsigned)n, 0);
#ifdef SQB_HAVE_CXX20
    s5.cxx = sqb_cxx_barrier_new(n);
    if (!s5.cxx) sb_fail("S5: std::barrier: out of memory");
#endif
#ifdef SQB_HAVE_ABSL
    atomic_store(&s5.serial, 0);
    for (int r = 0; r <= S_PASSES; r++)
        if (!(s5.ab[r] = sqb_absl_barrier_new(n))) sb_fail("S5: absl::Barrier: out of memory");
#endif
    for (int i = 0; i < n; i++)
        s_start_thread(i, n, s5_thread, (void *)(intptr_t)v);
    s_join_all(n);
    int64_t t = (int64_t)atomic_load(&s_end) - (int64_t)atomic_load(&s_start);
#ifdef SQB_HAVE_ABSL
    for (int r = 0; r <= S_PASSES; r++)
        sqb_absl_barrier_del(s5.ab[r]);
    if (v == S5_ABSL && atomic_load(&s5.serial) != 1 + S_PASSES)
        sb_fail("%s: %d Block() calls returned true, not one per pass (%d)", s_what,
                atomic_load(&s5.serial), 1 + S_PASSES);
#endif
    pthread_barrier_destroy(&s5.pb);
    sqf_barrier_destroy(&s5.b);
#ifdef SQB_HAVE_CXX20
    sqb_cxx_barrier_del(s5.cxx);
#endif
    return t;
}

/* ==== S6, S7: the seed's multiprocessing experiments =========================
 * The notify (start) and mutex cases again with n processes (fork) instead of
 * threads, the state in one MAP_SHARED region mapped before the first fork.
 * Each child polls with its own copy of the run's deadline and reports a
 * time-out through the region; the parent reaps every child. */

static struct sp_shared {
    int n;
    atomic_int left;      /* S6: processes not yet started */
    atomic_int in;        /* S7: counted in before the lock */
    atomic_int done;      /* S7 seed: processes through the lock, counted down */
    atomic_int expired;   /* a child's polling saw the deadline pass */
    atomic_llong start;   /* S7: the timed section began (first holder) */
    int first_seen;       /* S7: guarded by the lock */
    pthread_barrier_t pb; /* PTHREAD_PROCESS_SHARED */
    pthread_mutex_t pm;   /* PTHREAD_PROCESS_SHARED */
    sem_t sem;            /* process-shared, value 1: what multiprocessing.Lock is */
    sqf_latch latch;
    sqf_mutex m;
    sqf_countdown batch;
} * sp;
static pid_t *sp_pids;
static int sp_cap;

static void sp_prepare(const char *exp, int n)
{
    if (!sp) {
        sp = mmap(NULL, sizeof *sp, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (sp == MAP_FAILED) sb_fail("%s: mmap of the shared region: %s", exp, strerror(errno));
    }
    if (n > sp_cap) {
        free(sp_pids);
        sp_pids = malloc(sizeof *sp_pids * (size_t)n);
        if (!sp_pids) sb_fail("%s: out of memory for %d processes", exp, n);
        sp_cap = n;
    }
    sp->n = n;
    atomic_store(&sp->expired, 0);
    atomic_store(&sp->start, 0);
}

/* The seed's polling in a child: its "work" until cond holds or the run's
 * deadline passes (then told to the parent). */
#define SP_POLL(cond)                                                                              \
    do {                                                                                           \
        while (!(cond)) {                                                                          \
            if (s_over()) {                                                                        \
                atomic_store(&sp->expired, 1);                                                     \
                break;                                                                             \
            }                                                                                      \
            sb_work();                                                                             \
        }                                                                                          \
    } while (0)

/* Fork n children running fn(v) (or nothing: the floor), reap them all. */
static void sp_fork_all(const char *exp, int n, void (*fn)(int), int v)
{
    fflush(stdout);
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p < 0)
            sb_fail("%s: the system refused process %d of %d (fork: %s); try a smaller --n", exp,
                    i + 1, n, strerror(errno));
        if (p == 0) {
            if (fn) fn(v);
            _exit(0);
        }
        sp_pids[i] = p;
    }
    for (int i = 0; i < n; i++) {
        int st;
        while (waitpid(sp_pids[i], &st, 0) < 0 && errno == EINTR) {
        }
    }
}

static void sp_shared_pthread(const char *exp, int n)
{
    pthread_barrierattr_t ba;
    pthread_mutexattr_t ma;
    pthread_barrierattr_init(&ba);
    pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    if (pthread_barrier_init(&sp->pb, &ba, (unsigned)n) != 0 ||
        pthread_mutex_init(&sp->pm, &ma) != 0 || sem_init(&sp->sem, 1, 1) != 0)
        sb_fail("%s: process-shared pthread objects: %s", exp, strerror(errno));
    pthread_barrierattr_destroy(&ba);
    pthread_mutexattr_destroy(&ma);
}

static void sp_destroy_pthread(void)
{
    pthread_barrier_destroy(&sp->pb);
    pthread_mutex_destroy(&sp->pm);
    sem_destroy(&sp->sem);
}

/* --- S6: start n processes (the seed's notify case) --- */

static void s6_child(int v)
{
    switch (v) {
    case 1: /* seed: count in, poll until all have */
        atomic_fetch_sub(&sp->left, 1);
        SP_POLL(atomic_load(&sp->left) == 0);
        break;
    case 2:
        pthread_barrier_wait(&sp->pb);
        break;
    case 3:
        sqf_latch_arrive_and_wait(&sp->latch, 1);
        break;
    }
}

static int64_t s6_run(int v, int n)
{
    sp_prepare("S6", n);
    atomic_store(&sp->left, n);
    sp_shared_pthread("S6", n);
    if (sqf_latch_init(&sp->latch, (unsigned)n, SQF_SHARED) != 0) sb_fail("S6: sqf_latch_init");
    int64_t t0 = sb_now_ns();
    sp_fork_all("S6", n, v == 0 ? NULL : s6_child, v);
    int64_t t = sb_now_ns() - t0;
    if (atomic_load(&sp->expired)) atomic_store(&s_expired, 1);
    sp_destroy_pthread();
    return t;
}

/* --- S7: serialise n processes through one lock (the seed's mutex case) --- */

static void s7_section(void)
{
    if (!sp->first_seen) {
        sp->first_seen = 1;
        SP_POLL(atomic_load(&sp->in) == sp->n);
        long long zero = 0;
        atomic_compare_exchange_strong(&sp->start, &zero, (long long)sb_now_ns());
    }
}

static void s7_child(int v)
{
    if (v == 3) sqf_countdown_up(&sp->batch, 1); /* n is not known to this code */
    atomic_fetch_add(&sp->in, 1);
    switch (v) {
    case 1:
        pthread_mutex_lock(&sp->pm);
        break;
    case 2:
        while (sem_wait(&sp->sem) != 0) {
        }
        break;
    default:
        sqf_mutex_lock(&sp->m);
        break;
    }
    s7_section();
    switch (v) {
    case 1:
        pthread_mutex_unlock(&sp->pm);
        break;
    case 2:
        sem_post(&sp->sem);
        break;
    default:
        sqf_mutex_unlock(&sp->m);
        break;
    }
    if (v == 3) {
        sqf_countdown_down(&sp->batch);
        sqf_countdown_wait(&sp->batch);
    } else {
        atomic_fetch_sub(&sp->done, 1);
        SP_POLL(atomic_load(&sp->done) == 0);
    }
}

static int64_t s7_run(int v, int n)
{
    sp_prepare("S7", n);
    atomic_store(&sp->in, 0);
    atomic_store(&sp->done, n);
    sp->first_seen = 0;
    sp_shared_pthread("S7", n);
    if (sqf_mutex_init(&sp->m, SQF_SHARED) != 0 ||
        sqf_countdown_init(&sp->batch, 0, SQF_SHARED) != 0)
        sb_fail("S7: squarefree's process-shared init");
    int64_t t0 = sb_now_ns();
    sp_fork_all("S7", n, v == 0 ? NULL : s7_child, v);
    int64_t end = sb_now_ns();
    if (atomic_load(&sp->expired)) atomic_store(&s_expired, 1);
    sp_destroy_pthread();
    long long start = atomic_load(&sp->start);
    return end - (v == 0 || start == 0 ? t0 : (int64_t)start); /* the floor: fork and wait */
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
/* --quick stops at 800: the seed's variants are the square, and n = 1600
 * alone would take most of the quick report's time. */
#define S_NDEFAULT ((int)(sizeof s_default_n / sizeof s_default_n[0]) - (sb.quick ? 1 : 0))

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
                         int64_t (*fn)(int v, int n), struct s_result *r, const int *dflt,
                         int ndflt)
{
    static int watching;
    if (!watching) { /* the watchdog starts with the first S experiment */
        pthread_t t;
        if (sb_spawn(&t, s_watchdog, NULL) == 0) pthread_detach(t);
        watching = 1;
    }
    sb_heading(exp, title);
    char where[160];
    sb_placement(where, sizeof where);
    printf("  (%s)\n", where);
    memset(r, 0, sizeof *r);
    r->nv = nv;
    r->nn = sb_list_or(sb.n, sb.nn, dflt, ndflt, r->n);
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

/* Whether r has the two or more n that an exponent needs (--n with one
 * value has not): otherwise say so, instead of judging a NaN. */
static bool s_has_exponents(const char *exp, const struct s_result *r)
{
    if (r->nn >= 2) return true;
    sb_note("%s: no exponent verdicts: fitting an exponent needs at least two values of n", exp);
    return false;
}

/* Squarefree variants grow no faster than the floor of the same table:
 * "exponent <= the floor's + 0.05", in the same run.  (S2 words its own.) */
static void s_verdict_vs_floor(const char *exp, const struct s_variant *v, const struct s_result *r,
                               int floor)
{
    if (!s_has_exponents(exp, r)) return;
    for (int j = 0; j < r->nv; j++) {
        if (!v[j].sqf || !v[j].built) continue;
        sb_verdict(exp, r->k[j] <= r->k[floor] + 0.05,
                   "%s exponent %.3f (target <= the floor's %.3f + 0.05)", v[j].name, r->k[j],
                   r->k[floor]);
    }
}

/* One note line with the raw exponents of every variant that is not
 * squarefree's and not the floor (their verdicts print those): the peers. */
static void s_note_peer_exponents(const char *exp, const struct s_variant *v,
                                  const struct s_result *r)
{
    char buf[400];
    size_t len = 0;
    for (int j = 0; j < r->nv && len < sizeof buf; j++) {
        if (v[j].sqf || strcmp(v[j].name, "floor") == 0) continue;
        char k[24];
        if (!v[j].built)
            snprintf(k, sizeof k, "not built");
        else if (isnan(r->k[j]))
            snprintf(k, sizeof k, "-");
        else
            snprintf(k, sizeof k, "%.2f", r->k[j]);
        len +=
            (size_t)snprintf(buf + len, sizeof buf - len, "%s%s %s", len ? ", " : "", v[j].name, k);
    }
    sb_note("%s: peers' exponents: %s", exp, len ? buf : "none");
}

/* "No slower than the best pthread variant at the largest n" for each
 * squarefree variant, against the peers named. */
/* Squarefree variants at the largest n take no longer than the best of
 * `peers` (described by `what`, e.g. "pthread variant"). */
static void s_verdict_vs_best(const char *exp, const struct s_variant *v, const struct s_result *r,
                              const char *const *peers, int npeers, const char *what)
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
                   "%s at n=%d: %.4f s vs the best %s (%s) %.4f s: %.2fx (target <= 1)", v[j].name,
                   nmax, a, what, v[best].name, b, a / b);
    }
}

/* Where the targets compare with pthreads, C++20 is a peer worth showing
 * beside them, as a note. */
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
#ifdef SQB_HAVE_NSYNC
#define S_NSYNC 1
#else
#define S_NSYNC 0
#endif
#ifdef SQB_HAVE_ABSL
#define S_ABSL 1
#else
#define S_ABSL 0
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
                 v, 6, s1_run, &r, s_default_n, S_NDEFAULT);
    static const char *const peers[] = {"seed", "seed-wait", "pthread"};
    s_verdict_vs_floor("S1", v, &r, 0);
    s_verdict_vs_best("S1", v, &r, peers, 3, "pthread variant");
    s_note_vs_cxx("S1", v, &r);
    s_note_peer_exponents("S1", v, &r);
    sb_note("S1: floor (threads that synchronise nothing) exponent %.2f: creating and joining "
            "the threads alone grows that fast here, and no variant can grow slower.",
            r.k[0]);
    return 0;
}

int sb_run_s2(void)
{
    static const struct s_variant v[S2_NV] = {
        [S2_FLOOR] = {"floor", 1, 0},         [S2_SEED] = {"seed", 1, 0},
        [S2_PTHREAD] = {"pthread", 1, 0},     [S2_SQF] = {"sqf", 1, 1},
        [S2_COMBINE] = {"sqf-combine", 1, 1}, [S2_MUTEX] = {"sqf-mutex", 1, 1},
        [S2_NSYNC] = {"nsync", S_NSYNC, 0},   [S2_ABSL] = {"absl", S_ABSL, 0}};
    struct s_result r;
    s_experiment("S2",
                 "serialise n threads through one mutex (floor: create and join only; seed: "
                 "pthread_mutex + polling; pthread: + pthread_barrier; sqf: sqf_mutex + "
                 "sqf_countdown; sqf-combine: the seed's code through sqf_mutex_combine; "
                 "sqf-mutex: the seed's code on sqf_mutex; nsync: nsync_mu + nsync_counter; "
                 "absl: absl::Mutex + absl::BlockingCounter and absl::Notification)",
                 v, S2_NV, s2_run, &r, s_default_n, S_NDEFAULT);
    int nmax = r.n[r.nn - 1];
    double seed = s_last(&r, S2_SEED), pth = s_last(&r, S2_PTHREAD), sqf = s_last(&r, S2_SQF),
           comb = s_last(&r, S2_COMBINE), plain = s_last(&r, S2_MUTEX);
    double kf = r.k[S2_FLOOR];
    bool fit = s_has_exponents("S2", &r);
    if (fit)
        sb_verdict("S2", r.k[S2_COMBINE] <= kf + 0.05,
                   "sqf-combine exponent %.3f (target <= the floor's %.3f + 0.05; seed %.2f)",
                   r.k[S2_COMBINE], kf, r.k[S2_SEED]);
    sb_verdict("S2", seed / comb >= 10,
               "sqf-combine %.1fx faster than the seed's pthread code at n=%d (target >= 10x)",
               seed / comb, nmax);
    if (fit)
        sb_verdict("S2", r.k[S2_SQF] <= kf + 0.05,
                   "sqf (countdown, n unknown) exponent %.3f (target <= the floor's %.3f + 0.05)",
                   r.k[S2_SQF], kf);
    sb_verdict("S2", sqf <= pth,
               "sqf %.4f s vs the pthread_barrier idiom (needs n) %.4f s at n=%d = %.2fx "
               "(target <= 1)",
               sqf, pth, nmax, sqf / pth);
    sb_note("sqf-mutex (the seed's polling code on sqf_mutex, no remedy): exponent %.2f, %.4f s "
            "at n=%d; a plain mutex hands the lock to one sleeper at a time, and each wake-up "
            "waits its turn behind the pollers: the square is in the polling, not in the lock.",
            r.k[S2_MUTEX], plain, nmax);
    s_note_peer_exponents("S2", v, &r);
    return 0;
}

int sb_run_s3(void)
{
    static const struct s_variant v[] = {
        {"floor", 1, 0}, {"seed", 1, 0}, {"sqf", 1, 1}, {"sqf-batch", 1, 1}, {"sqf-latch", 1, 1}};
    struct s_result r;
    s_experiment("S3",
                 "notify n-1 threads (floor: create and join only; seed: sem_post loop + "
                 "polling; sqf: sqf_sem release(1) loop; sqf-batch: one release(n-1); "
                 "sqf-latch: one release(n-1), then an sqf_latch instead of polling)",
                 v, 5, s3_run, &r, s_default_n, S_NDEFAULT);
    static const char *const peers[] = {"seed"};
    s_verdict_vs_floor("S3", v, &r, S3_FLOOR);
    s_verdict_vs_best("S3", v, &r, peers, 1, "pthread variant");
    s_note_peer_exponents("S3", v, &r);
    return 0;
}

int sb_run_s4(void)
{
    static const struct s_variant v[] = {
        [S4_FLOOR] = {"floor", 1, 0},   [S4_SEED] = {"seed", 1, 0},
        [S4_SQF] = {"sqf", 1, 1},       [S4_LATCH] = {"sqf-latch", 1, 1},
        [S4_CXX] = {"c++20", S_CXX, 0}, [S4_NSYNC] = {"nsync", S_NSYNC, 0},
        [S4_ABSL] = {"absl", S_ABSL, 0}};
    struct s_result r;
    s_experiment("S4",
                 "wake n threads with one event (floor: create and join only; seed: "
                 "pthread_cond_broadcast + polling; sqf: sqf_event + polling; sqf-latch: "
                 "sqf_event, then an sqf_latch; c++20: std::latch + polling; nsync: nsync_note "
                 "+ polling; absl: absl::Notification + polling)",
                 v, 7, s4_run, &r, s_default_n, S_NDEFAULT);
    static const char *const peers[] = {"seed"};
    s_verdict_vs_floor("S4", v, &r, S4_FLOOR);
    s_verdict_vs_best("S4", v, &r, peers, 1, "pthread variant");
    s_note_vs_cxx("S4", v, &r);
    s_note_peer_exponents("S4", v, &r);
    return 0;
}

int sb_run_s5(void)
{
    static const struct s_variant v[] = {[S5_FLOOR] = {"floor", 1, 0},
                                         [S5_PTHREAD] = {"pthread", 1, 0},
                                         [S5_CXX] = {"c++20", S_CXX, 0},
                                         [S5_SQF] = {"sqf", 1, 1},
                                         [S5_ABSL] = {"absl", S_ABSL, 0}};
    struct s_result r;
    s_experiment("S5",
                 "n threads pass a barrier 10 times (floor: create and join only; "
                 "pthread_barrier, std::barrier, sqf_barrier; absl: a single-use absl::Barrier "
                 "per pass)",
                 v, 5, s5_run, &r, s_default_n, S_NDEFAULT);
    static const char *const peers[] = {"pthread", "c++20", "absl"};
    s_verdict_vs_floor("S5", v, &r, S5_FLOOR);
    s_verdict_vs_best("S5", v, &r, peers, 3, "barrier peer");
    s_note_vs_cxx("S5", v, &r);
    s_note_peer_exponents("S5", v, &r);
    return 0;
}

/* S6 and S7 grow with the number of processes: their own n lists. */
static const int sp_default_n[] = {25, 50, 100, 200, 400};
static const int sp_quick_n[] = {16, 32, 64};

/* Process-shared squarefree needs the futex wait backend. */
static int sp_supported(const char *exp)
{
    sqf_latch probe;
    if (sqf_latch_init(&probe, 1, SQF_SHARED) == ENOTSUP) {
        sb_heading(exp, "skipped");
        sb_note("%s: not run: this build's wait backend cannot share primitives between "
                "processes (build with the futex backend)",
                exp);
        return 0;
    }
    return 1;
}

int sb_run_s6(void)
{
    if (!sp_supported("S6")) return 0;
    static const struct s_variant v[] = {
        {"floor", 1, 0}, {"seed", 1, 0}, {"pthread", 1, 0}, {"sqf", 1, 1}};
    struct s_result r;
    s_experiment("S6",
                 "start n processes (floor: fork and wait only; seed: a shared counter and "
                 "polling; pthread: a process-shared pthread_barrier; sqf: a shared sqf_latch)",
                 v, 4, s6_run, &r, sb.quick ? sp_quick_n : sp_default_n, sb.quick ? 3 : 5);
    s_verdict_vs_floor("S6", v, &r, 0);
    sb_note("S6: seed exponent %.2f, pthread %.2f, floor %.2f", r.k[1], r.k[2], r.k[0]);
    return 0;
}

int sb_run_s7(void)
{
    if (!sp_supported("S7")) return 0;
    static const struct s_variant v[] = {
        {"floor", 1, 0}, {"seed", 1, 0}, {"seed-sem", 1, 0}, {"sqf", 1, 1}, {"sqf-mutex", 1, 1}};
    struct s_result r;
    s_experiment("S7",
                 "serialise n processes through one lock (floor: fork and wait only; seed: a "
                 "process-shared pthread_mutex + polling; seed-sem: a process-shared sem_t, "
                 "what multiprocessing.Lock is, + polling; sqf: sqf_mutex + sqf_countdown; "
                 "sqf-mutex: the seed's code on a shared sqf_mutex)",
                 v, 5, s7_run, &r, sb.quick ? sp_quick_n : sp_default_n, sb.quick ? 3 : 5);
    s_verdict_vs_floor("S7", v, &r, 0);
    int nmax = r.n[r.nn - 1];
    double seed = s_last(&r, 1), sqf = s_last(&r, 3);
    if (sb_sched_rr())
        sb_verdict("S7", seed / sqf >= 10,
                   "sqf (countdown) %.1fx faster than the seed's code on a shared pthread_mutex "
                   "at n=%d under SCHED_RR (target >= 10x)",
                   seed / sqf, nmax);
    else
        sb_note("S7: sqf (countdown) %.1fx faster than the seed's code on a shared pthread_mutex "
                "at n=%d under SCHED_OTHER (the 10x target is for SCHED_RR: --sched rr)",
                seed / sqf, nmax);
    return 0;
}
