/* test_combine.c: sqf_mutex_combine's contract: errors, the uncontended
 * path, the holder running queued requests on its own thread before it lets
 * go (plain unlock, unlock_fair with a sleeper, the unlock inside a
 * condition wait), requests that arrive during a drain, the hand-over of a
 * long drain, no queueing in hand-off mode or on a shared mutex, and
 * combine mixed with plain locking. */
#include <sys/mman.h>
#include <sys/wait.h>

#include <squarefree/cond.h>
#include <squarefree/mutex.h>

#include "check.h"
#include "mutex_word.h"

static uint32_t word_of(sqf_mutex *m)
{
    return at_load(mu_word(m), SC);
}

/* One request and what became of it. */
struct req {
    sqf_mutex *m;
    pthread_t caller;   /* the thread that called combine */
    pthread_t ran_on;   /* the thread fn ran on */
    int seq;            /* order in which fn ran (guarded by m) */
    sqf_word ran;       /* how many times fn ran */
    sqf_word returned;  /* combine has returned */
    void (*hook)(void); /* extra work inside fn, or NULL */
};

static int seq_next; /* guarded by the mutex under test */

static void record(void *arg)
{
    struct req *r = arg;
    CHECK(word_of(r->m) & MU_LOCKED); /* fn runs with the mutex held */
    r->ran_on = pthread_self();
    r->seq = seq_next++;
    if (r->hook) r->hook();
    at_add(&r->ran, 1, REL);
}

static void *caller(void *arg)
{
    struct req *r = arg;
    CHECK_EQ(sqf_mutex_combine(r->m, record, r), 0);
    CHECK_EQ(at_load(&r->ran, ACQ), 1); /* fn ran, exactly once, before the return */
    at_store(&r->returned, 1, REL);
    return NULL;
}

static void start_caller_with(struct req *r, sqf_mutex *m, void (*hook)(void))
{
    memset(r, 0, sizeof *r);
    r->m = m;
    r->hook = hook;
    CHECK_EQ(pthread_create(&r->caller, NULL, caller, r), 0);
}

static void start_caller(struct req *r, sqf_mutex *m)
{
    start_caller_with(r, m, NULL);
}

static void wait_queued(sqf_mutex *m, int n)
{
    sqf_deadline stop = sqf_after(10 * SQF_SEC);
    while (sqf_mutex_combine_queued_(m) < n && sqf_now() < stop)
        usleep(100);
    CHECK_EQ(sqf_mutex_combine_queued_(m), n);
}

static void wait_for_bits(sqf_mutex *m, uint32_t bits)
{
    sqf_deadline stop = sqf_after(10 * SQF_SEC);
    while ((word_of(m) & bits) != bits && sqf_now() < stop)
        usleep(100);
    CHECK_EQ(word_of(m) & bits, bits);
}

static void test_bad_input(void)
{
    sqf_mutex m = SQF_MUTEX_INIT;
    struct req r;
    memset(&r, 0, sizeof r);
    r.m = &m;
    CHECK_EQ(sqf_mutex_combine(NULL, record, &r), EINVAL);
    CHECK_EQ(sqf_mutex_combine(&m, NULL, &r), EINVAL);
    CHECK_EQ(at_load(&r.ran, SC), 0);
    CHECK_EQ(word_of(&m), 0);
}

/* A free mutex: the caller takes it and runs fn itself. */
static void test_uncontended(void)
{
    sqf_mutex m = SQF_MUTEX_INIT;
    struct req r;
    memset(&r, 0, sizeof r);
    r.m = &m;
    CHECK_EQ(sqf_mutex_combine(&m, record, &r), 0);
    CHECK_EQ(at_load(&r.ran, SC), 1);
    CHECK(pthread_equal(r.ran_on, pthread_self()));
    CHECK_EQ(word_of(&m), 0);
    CHECK_EQ(sqf_mutex_combine_queued_(&m), 0);
}

/* k threads find the mutex held and queue (one after another, so their
 * order is known), then sleep.  The holder's plain unlock runs every fn on
 * the holder's thread, in queue order, before the mutex is free, and every
 * caller returns after its own fn ran. */
#define K 8

static void test_holder_runs_queued(void)
{
    sqf_mutex m = SQF_MUTEX_INIT;
    struct req r[K];
    CHECK_EQ(sqf_mutex_lock(&m), 0);
    seq_next = 0;
    for (int i = 0; i < K; i++) {
        start_caller(&r[i], &m);
        wait_queued(&m, i + 1);
    }
    CHECK_EQ(word_of(&m) & (MU_LOCKED | MU_COMBINE), MU_LOCKED | MU_COMBINE);
    usleep(20 * 1000); /* let them fall asleep */
    for (int i = 0; i < K; i++) {
        CHECK_EQ(at_load(&r[i].ran, SC), 0); /* nothing runs before the unlock */
        CHECK_EQ(at_load(&r[i].returned, SC), 0);
    }
    CHECK_EQ(sqf_mutex_unlock(&m), 0);
    /* The unlock ran them all, here, before it returned. */
    for (int i = 0; i < K; i++) {
        CHECK_EQ(at_load(&r[i].ran, SC), 1);
        CHECK(pthread_equal(r[i].ran_on, pthread_self()));
        CHECK_EQ(r[i].seq, i);
    }
    CHECK_EQ(word_of(&m) & (MU_LOCKED | MU_COMBINE), 0);
    CHECK_EQ(sqf_mutex_combine_queued_(&m), 0);
    for (int i = 0; i < K; i++) {
        pthread_join(r[i].caller, NULL);
        CHECK_EQ(at_load(&r[i].returned, SC), 1);
    }
}

/* A plain locker sleeping on the mutex, and combiners queued: unlock_fair
 * first runs the requests (on this thread), then hands the lock off. */
struct plain {
    sqf_mutex *m;
    sqf_word got;
};

static void *plain_locker(void *arg)
{
    struct plain *p = arg;
    CHECK_EQ(sqf_mutex_lock(p->m), 0);
    at_store(&p->got, 1, SC);
    CHECK_EQ(sqf_mutex_unlock(p->m), 0);
    return NULL;
}

static void test_unlock_fair_drains_then_hands_off(void)
{
    sqf_mutex m = SQF_MUTEX_INIT;
    struct plain p = {&m, 0};
    struct req r[K];
    CHECK_EQ(sqf_mutex_lock(&m), 0);
    pthread_t pt;
    pthread_create(&pt, NULL, plain_locker, &p);
    wait_for_bits(&m, MU_PARKED);
    usleep(20 * 1000);
    for (int i = 0; i < K; i++)
        start_caller(&r[i], &m);
    wait_queued(&m, K);
    usleep(20 * 1000);
    CHECK_EQ(sqf_mutex_unlock_fair(&m), 0);
    for (int i = 0; i < K; i++) {
        CHECK_EQ(at_load(&r[i].ran, SC), 1);
        CHECK(pthread_equal(r[i].ran_on, pthread_self()));
    }
    pthread_join(pt, NULL);
    CHECK_EQ(at_load(&p.got, SC), 1);
    for (int i = 0; i < K; i++)
        pthread_join(r[i].caller, NULL);
    CHECK_EQ(word_of(&m) & (MU_LOCKED | MU_COMBINE | MU_HANDOFF), 0);
}

/* sqf_cond_wait's unlock is an unlock: it runs the queued requests first. */
static void test_cond_wait_drains(void)
{
    sqf_mutex m = SQF_MUTEX_INIT;
    sqf_cond c = SQF_COND_INIT;
    struct req r[K];
    CHECK_EQ(sqf_mutex_lock(&m), 0);
    for (int i = 0; i < K; i++)
        start_caller(&r[i], &m);
    wait_queued(&m, K);
    CHECK_EQ(sqf_cond_timedwait(&c, &m, sqf_after(10 * SQF_MS)), ETIMEDOUT);
    for (int i = 0; i < K; i++) {
        CHECK_EQ(at_load(&r[i].ran, SC), 1);
        CHECK(pthread_equal(r[i].ran_on, pthread_self()));
    }
    CHECK_EQ(sqf_mutex_unlock(&m), 0);
    for (int i = 0; i < K; i++)
        pthread_join(r[i].caller, NULL);
    CHECK_EQ(word_of(&m) & (MU_LOCKED | MU_COMBINE), 0);
}

/* A request queued while the holder is running an earlier one (so after the
 * drain took the queue and cleared COMBINE) must still run before the
 * mutex is released: the release must see COMBINE set again and drain
 * again.  The first request's fn lets the second caller go and waits until
 * it has queued.  With `pause_ns` of extra work in that fn, the unlock's
 * combining budget runs out and the second request gets the mutex itself. */
static sqf_mutex *late_m;
static sqf_word late_go;
static long late_pause_ns;

static void let_late_caller_in(void)
{
    at_store(&late_go, 1, REL);
    sqf_deadline stop = sqf_after(10 * SQF_SEC);
    while (sqf_mutex_combine_queued_(late_m) < 1 && sqf_now() < stop)
        sched_yield();
    CHECK_EQ(sqf_mutex_combine_queued_(late_m), 1);
    if (late_pause_ns) usleep((useconds_t)(late_pause_ns / 1000));
}

static void *late_caller(void *arg)
{
    struct req *r = arg;
    while (!at_load(&late_go, ACQ))
        sched_yield();
    return caller(r);
}

static void request_during_drain(long pause_ns)
{
    sqf_mutex m = SQF_MUTEX_INIT;
    struct req first, late;
    late_m = &m;
    late_pause_ns = pause_ns;
    at_store(&late_go, 0, REL);
    CHECK_EQ(sqf_mutex_lock(&m), 0);
    start_caller_with(&first, &m, let_late_caller_in);
    wait_queued(&m, 1);
    memset(&late, 0, sizeof late);
    late.m = &m;
    pthread_create(&late.caller, NULL, late_caller, &late);
    sqf_deadline t0 = sqf_now();
    CHECK_EQ(sqf_mutex_unlock(&m), 0);
    sqf_deadline took = sqf_now() - t0;
    CHECK_EQ(at_load(&first.ran, SC), 1);
    CHECK(pthread_equal(first.ran_on, pthread_self()));
    pthread_join(late.caller, NULL);
    pthread_join(first.caller, NULL);
    CHECK_EQ(at_load(&late.ran, SC), 1);
    CHECK_EQ(at_load(&late.returned, SC), 1);
    if (pause_ns == 0) {
        /* Within budget the same unlock ran it, here.  (If this thread was
         * preempted long enough, the budget ran out: then either is right.) */
        if (took <= SQF_MUTEX_COMBINE_NS)
            CHECK(pthread_equal(late.ran_on, pthread_self()));
        else
            CHECK(pthread_equal(late.ran_on, pthread_self()) ||
                  pthread_equal(late.ran_on, late.caller));
    } else {
        /* Budget spent: the late requester got the mutex and ran fn itself. */
        CHECK(pthread_equal(late.ran_on, late.caller));
    }
    CHECK_EQ(word_of(&m) & (MU_LOCKED | MU_COMBINE), 0);
    CHECK_EQ(sqf_mutex_combine_queued_(&m), 0);
}

static void test_request_during_drain(void)
{
    request_during_drain(0);
}

static void test_long_drain_passes_the_lock(void)
{
    request_during_drain(3 * SQF_MUTEX_COMBINE_NS);
}

/* In hand-off mode (STARVING) a combine must not queue: it waits for the
 * lock like a plain locker and runs fn on its own thread.  STARVING is set
 * here by hand, standing in for a starving sleeper. */
static void test_no_queueing_when_starving(void)
{
    sqf_mutex m = SQF_MUTEX_INIT;
    struct req r;
    CHECK_EQ(sqf_mutex_lock(&m), 0);
    at_or(mu_word(&m), MU_STARVING, SC);
    start_caller(&r, &m);
    wait_for_bits(&m, MU_PARKED); /* asleep on the lock word, not queued */
    usleep(20 * 1000);
    CHECK_EQ(sqf_mutex_combine_queued_(&m), 0);
    CHECK_EQ(word_of(&m) & MU_COMBINE, 0);
    at_and(mu_word(&m), ~MU_STARVING, SC);
    CHECK_EQ(sqf_mutex_unlock(&m), 0);
    pthread_join(r.caller, NULL);
    CHECK_EQ(at_load(&r.ran, SC), 1);
    CHECK(pthread_equal(r.ran_on, r.caller));
    CHECK_EQ(word_of(&m) & (MU_LOCKED | MU_COMBINE), 0);
}

/* A shared mutex never queues (the side table is per process): a combine
 * that finds it held sleeps on it and runs fn itself. */
static void test_shared(void)
{
    if (!SQF_TEST_SHARED_EXPECTED) return;
    sqf_mutex *m = mmap(NULL, sizeof *m, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    if (m == MAP_FAILED) return;
    CHECK_EQ(sqf_mutex_init(m, SQF_SHARED), 0);
    struct req r;
    memset(&r, 0, sizeof r);
    r.m = m;
    CHECK_EQ(sqf_mutex_combine(m, record, &r), 0);
    CHECK_EQ(at_load(&r.ran, SC), 1);

    CHECK_EQ(sqf_mutex_lock(m), 0);
    start_caller(&r, m);
    wait_for_bits(m, MU_PARKED);
    CHECK_EQ(sqf_mutex_combine_queued_(m), 0);
    CHECK_EQ(word_of(m) & MU_COMBINE, 0);
    CHECK_EQ(sqf_mutex_unlock(m), 0);
    pthread_join(r.caller, NULL);
    CHECK_EQ(at_load(&r.ran, SC), 1);
    CHECK(pthread_equal(r.ran_on, r.caller));
    CHECK_EQ(word_of(m), MU_SHARED);
    munmap(m, sizeof *m);
}

/* Combine and plain locking on one mutex: every critical section runs once,
 * alone. */
static sqf_mutex mixed_m = SQF_MUTEX_INIT;
static long mixed_count; /* guarded by mixed_m */
static int mixed_inside; /* guarded by mixed_m */

static void mixed_bump(void *arg)
{
    (void)arg;
    if (mixed_inside++ != 0) CHECK(!"two critical sections at once");
    mixed_count++;
    mixed_inside--;
}

static void *mixed_worker(void *arg)
{
    long id = (long)(intptr_t)arg;
    for (int i = 0; i < 5000; i++) {
        if ((i + id) % 3 == 0) {
            CHECK_EQ(sqf_mutex_lock(&mixed_m), 0);
            mixed_bump(NULL);
            CHECK_EQ(i % 2 ? sqf_mutex_unlock(&mixed_m) : sqf_mutex_unlock_fair(&mixed_m), 0);
        } else {
            CHECK_EQ(sqf_mutex_combine(&mixed_m, mixed_bump, NULL), 0);
        }
    }
    return NULL;
}

static void test_mixed(void)
{
    pthread_t t[8];
    for (long i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, mixed_worker, (void *)(intptr_t)i);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(mixed_count, 8 * 5000);
    CHECK_EQ(word_of(&mixed_m) & (MU_LOCKED | MU_COMBINE), 0);
}

int main(void)
{
    watchdog(60);
    test_bad_input();
    test_uncontended();
    test_holder_runs_queued();
    test_unlock_fair_drains_then_hands_off();
    test_cond_wait_drains();
    test_request_during_drain();
    test_long_drain_passes_the_lock();
    test_no_queueing_when_starving();
    test_shared();
    test_mixed();
    return check_done();
}
