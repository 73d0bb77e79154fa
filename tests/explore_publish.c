/* explore_publish.c: what each primitive's orderings must make visible, for
 * the weak-memory model (SQF_EXPLORE_MEMORY=weak; CTest runs it as
 * weak_publish, and under sequential consistency as explore_publish).
 *
 * Each case holds its primitive's wake-up race: a waiter that checks and
 * then sleeps, against a waker that publishes and then wakes.  The data a
 * case passes through the primitive is explore_var (relaxed atomics the
 * model sees), written before the primitive's release side and read after
 * its acquire side: a missing acquire, release or fence in the library
 * shows as a stale read of that data, a lost wake-up as a deadlock, broken
 * exclusion as a lost increment.  The pairs each case covers are named in
 * its comment.  tests/CMakeLists.txt builds this file again against a copy
 * of the library with one ordering weakened (weak_mutant_*), and those runs
 * must fail. */
#include <errno.h>

#include <squarefree.h>
#include <squarefree/loop.h>

#include "explore.h"

#define SLOTS 4
static explore_var data[SLOTS], counter;
static const uint32_t MAGIC = 0x5eed;

/* Half the schedules take a case's other path (a try or timed form, a
 * waker outside the lock), chosen by the seed so that a replay takes it
 * again. */
static bool other_path(void)
{
    return explore_seed >> 3 & 1;
}

/* A try form spins at most this many times, then blocks: a spinner with
 * PCT's highest priority would never let its waker run. */
#define SPINS 6

static void clear_data(void)
{
    for (int i = 0; i < SLOTS; i++)
        data[i].w = 0;
    counter.w = 0;
}

/* --- mutex: the lockers' ACQ CASes (try_take, wait_awake, sqf_mutex_take_)
 * pair with sqf_mutex_unlock_slow_'s REL CASes (clearing LOCKED, or setting
 * HANDOFF); waiters sleep and are woken (the critical section yields, so
 * others arrive and park).  unlock_fair hands off. */
static sqf_mutex mu;

static void setup_mutex(void)
{
    clear_data();
    sqf_mutex_init(&mu, SQF_PRIVATE);
}

static void body_mutex(int id, void *arg)
{
    (void)arg;
    for (int i = 0; i < 2; i++) {
        EXPLORE_REQUIRE(sqf_mutex_lock(&mu) == 0);
        uint32_t c = xv_get(&counter);
        dsched_yield();
        xv_set(&counter, c + 1);
        EXPLORE_REQUIRE((id == 0 && i == 1 ? sqf_mutex_unlock_fair(&mu) : sqf_mutex_unlock(&mu)) ==
                        0);
    }
}

static const char *check_mutex(void)
{
    return counter.w == 6 ? NULL : "an increment under the mutex was lost (a stale read)";
}

/* --- cond: the mutex's pairs (above) carry the predicate and the payload.
 * The waiter checks the predicate under the mutex and sleeps; the
 * signaller publishes it under the mutex and signals, then broadcasts (a
 * signal may wake the waiter still short of its value), under the mutex;
 * or, on the other path, broadcasts once after unlocking it.  cond's own
 * store-buffering pairs (the waiter's SC add to waiters and SC read of seq
 * in sqf_cond_wait_step_, against the signal's and broadcast's SC read of
 * waiters and SC advance of seq) are ordered here by the mutex as well:
 * whoever changes the predicate under it acquires the waiter's count-in,
 * so weakening them is not caught by this case. */
static sqf_cond cv;

static void setup_cond(void)
{
    setup_mutex();
    sqf_cond_init(&cv, SQF_PRIVATE);
}

static void body_cond(int id, void *arg)
{
    (void)arg;
    if (id == 0 && other_path()) {
        /* One broadcast after unlocking: nothing later rescues a waiter
         * that it misses. */
        xv_set(&data[1], MAGIC + 1);
        xv_set(&data[2], MAGIC + 2);
        EXPLORE_REQUIRE(sqf_mutex_lock(&mu) == 0);
        xv_set(&counter, 2);
        EXPLORE_REQUIRE(sqf_mutex_unlock(&mu) == 0);
        EXPLORE_REQUIRE(sqf_cond_broadcast(&cv) == 0);
    } else if (id == 0) {
        for (int k = 1; k <= 2; k++) {
            xv_set(&data[k], MAGIC + (uint32_t)k);
            EXPLORE_REQUIRE(sqf_mutex_lock(&mu) == 0);
            xv_set(&counter, (uint32_t)k);
            EXPLORE_REQUIRE((k == 1 ? sqf_cond_signal(&cv) : sqf_cond_broadcast(&cv)) == 0);
            EXPLORE_REQUIRE(sqf_mutex_unlock(&mu) == 0);
        }
    } else {
        EXPLORE_REQUIRE(sqf_mutex_lock(&mu) == 0);
        while (xv_get(&counter) < (uint32_t)id)
            EXPLORE_REQUIRE(sqf_cond_wait(&cv, &mu) == 0);
        EXPLORE_REQUIRE(sqf_mutex_unlock(&mu) == 0);
        EXPLORE_REQUIRE(xv_get(&data[id]) == MAGIC + (uint32_t)id);
    }
}

/* --- sem: sqf_sem_release's REL CAS adding permits pairs with the ACQ CAS
 * taking one (take, sqf_sem_acquire_step_); a consumer asleep on the count
 * is woken by the release, and a second release continues the first's
 * release sequence. */
static sqf_sem sem;

static void setup_sem(void)
{
    clear_data();
    sqf_sem_init(&sem, 0, 0, SQF_PRIVATE);
}

static void body_sem(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        for (int k = 0; k < 2; k++) {
            xv_set(&data[k], MAGIC);
            dsched_yield();
            EXPLORE_REQUIRE(sqf_sem_release(&sem, 1) == 0);
        }
    } else if (id == 2 && other_path()) { /* sqf_sem_tryacquire_n's ACQ CAS */
        unsigned taken = 0;
        for (int k = 0; k < SPINS && sqf_sem_tryacquire_n(&sem, 1, &taken) != 0; k++)
            dsched_yield();
        if (taken == 0) EXPLORE_REQUIRE(sqf_sem_acquire(&sem) == 0);
        EXPLORE_REQUIRE(xv_get(&data[0]) == MAGIC);
    } else {
        EXPLORE_REQUIRE(sqf_sem_acquire(&sem) == 0);
        EXPLORE_REQUIRE(xv_get(&data[0]) == MAGIC); /* written before any permit */
    }
}

/* --- once: finish_run's REL exchange setting DONE pairs with the callers'
 * ACQ loads (sqf_once_run_until's check, before and after they sleep). */
static sqf_once once;

static int once_fn(void *arg)
{
    (void)arg;
    dsched_yield();
    xv_set(&data[0], MAGIC);
    return 0;
}

static void setup_once(void)
{
    clear_data();
    sqf_once_init(&once, SQF_PRIVATE);
}

static void body_once(int id, void *arg)
{
    (void)arg;
    if (id == 2 && other_path()) { /* sqf_once_done's ACQ: 1 means fn's writes are visible */
        for (int k = 0; k < SPINS && !sqf_once_done(&once); k++)
            dsched_yield();
        if (!sqf_once_done(&once)) EXPLORE_REQUIRE(sqf_once_run(&once, once_fn, NULL) == 0);
    } else if (id == 1 && other_path()) {
        EXPLORE_REQUIRE(sqf_once_timedrun(&once, once_fn, NULL, sqf_after(SQF_SEC)) == 0);
    } else {
        EXPLORE_REQUIRE(sqf_once_run(&once, once_fn, NULL) == 0);
    }
    EXPLORE_REQUIRE(xv_get(&data[0]) == MAGIC);
}

/* --- event, latch, countdown (one level word each): the opener's release
 * pairs with the waiters' ACQ check before and after they sleep:
 * sqf_event_set's AR CAS with ev_load; the latch's count_down AR CAS with
 * la_load; sqf_countdown_down_n's REL CAS with cd_load. */
static sqf_event ev;
static sqf_latch latch;
static sqf_countdown cd;

static void setup_level(void)
{
    clear_data();
    sqf_event_init(&ev, SQF_PRIVATE);
    sqf_latch_init(&latch, 2, SQF_PRIVATE);
    sqf_countdown_init(&cd, 0, SQF_PRIVATE);
    sqf_countdown_up(&cd, 2);
}

static void body_event(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        xv_set(&data[0], MAGIC);
        EXPLORE_REQUIRE(sqf_event_set(&ev) == 0);
    } else if (other_path() && id == 1) { /* sqf_event_is_set's ACQ */
        for (int k = 0; k < SPINS && !sqf_event_is_set(&ev); k++)
            dsched_yield();
        if (!sqf_event_is_set(&ev)) EXPLORE_REQUIRE(sqf_event_wait(&ev) == 0);
        EXPLORE_REQUIRE(xv_get(&data[0]) == MAGIC);
    } else if (other_path()) {
        EXPLORE_REQUIRE(sqf_event_timedwait(&ev, sqf_after(SQF_SEC)) == 0);
        EXPLORE_REQUIRE(xv_get(&data[0]) == MAGIC);
    } else {
        EXPLORE_REQUIRE(sqf_event_wait(&ev) == 0);
        EXPLORE_REQUIRE(xv_get(&data[0]) == MAGIC);
    }
}

/* Two count down, each after its own write; the third waits and reads both.
 * The first count-down's REL must reach the waiter through the second's
 * RMW (a release sequence). */
static void body_latch(int id, void *arg)
{
    (void)arg;
    if (id < 2) {
        xv_set(&data[id], MAGIC);
        EXPLORE_REQUIRE(sqf_latch_count_down(&latch, 1) == 0);
    } else if (other_path()) { /* sqf_latch_try_wait's ACQ */
        for (int k = 0; k < SPINS && sqf_latch_try_wait(&latch) != 0; k++)
            dsched_yield();
        if (sqf_latch_try_wait(&latch) != 0) EXPLORE_REQUIRE(sqf_latch_wait(&latch) == 0);
        EXPLORE_REQUIRE(xv_get(&data[0]) == MAGIC && xv_get(&data[1]) == MAGIC);
    } else {
        EXPLORE_REQUIRE(sqf_latch_wait(&latch) == 0);
        EXPLORE_REQUIRE(xv_get(&data[0]) == MAGIC && xv_get(&data[1]) == MAGIC);
    }
}

static void body_countdown(int id, void *arg)
{
    (void)arg;
    if (id < 2) {
        xv_set(&data[id], MAGIC);
        EXPLORE_REQUIRE(sqf_countdown_down(&cd) == 0);
    } else if (other_path()) { /* sqf_countdown_value's ACQ */
        unsigned v = 1;
        for (int k = 0; k < SPINS && sqf_countdown_value(&cd, &v) == 0 && v != 0; k++)
            dsched_yield();
        if (v != 0) EXPLORE_REQUIRE(sqf_countdown_wait(&cd) == 0);
        EXPLORE_REQUIRE(xv_get(&data[0]) == MAGIC && xv_get(&data[1]) == MAGIC);
    } else {
        EXPLORE_REQUIRE(sqf_countdown_wait(&cd) == 0);
        EXPLORE_REQUIRE(xv_get(&data[0]) == MAGIC && xv_get(&data[1]) == MAGIC);
    }
}

/* --- barrier: every party's arrival (arrive's AR CAS) must reach every
 * party leaving, through the last arrival's publish (REL CAS on the release
 * word) and the sleepers' ACQ loads of it; two phases. */
static sqf_barrier bar;

static void setup_barrier(void)
{
    clear_data();
    sqf_barrier_init(&bar, 3, SQF_PRIVATE);
}

static void body_barrier(int id, void *arg)
{
    (void)arg;
    for (uint32_t phase = 1; phase <= 2; phase++) {
        xv_set(&data[id], MAGIC + phase);
        EXPLORE_REQUIRE(sqf_barrier_wait(&bar, NULL) == 0);
        for (int k = 0; k < 3; k++)
            EXPLORE_REQUIRE(xv_get(&data[k]) >= MAGIC + phase);
        EXPLORE_REQUIRE(sqf_barrier_wait(&bar, NULL) == 0); /* nobody writes before all read */
    }
}

/* --- rwlock: sqf_rwlock_wrunlock's REL CAS pairs with the readers' ACQ
 * CASes (read_step) and the next writer's (sqf_rwlock_wrlock_step_); the
 * last reader's REL CAS in rdunlock with the writer's ACQ.  A reader sees
 * both halves of a write or neither. */
static sqf_rwlock rw;

static void setup_rw(void)
{
    clear_data();
    sqf_rwlock_init(&rw, SQF_PRIVATE);
}

static void body_rw(int id, void *arg)
{
    (void)arg;
    if (id < 2) {
        if (id == 1 && other_path()) { /* sqf_rwlock_trywrlock's ACQ CAS */
            int r = EBUSY;
            for (int k = 0; k < SPINS && (r = sqf_rwlock_trywrlock(&rw)) != 0; k++)
                dsched_yield();
            if (r != 0) EXPLORE_REQUIRE(sqf_rwlock_wrlock(&rw) == 0);
        } else {
            EXPLORE_REQUIRE(sqf_rwlock_wrlock(&rw) == 0);
        }
        uint32_t c = xv_get(&data[0]);
        dsched_yield();
        xv_set(&data[0], c + 1);
        xv_set(&data[1], c + 1);
        EXPLORE_REQUIRE(sqf_rwlock_wrunlock(&rw) == 0);
    } else {
        for (int i = 0; i < 2; i++) {
            EXPLORE_REQUIRE(sqf_rwlock_rdlock(&rw) == 0);
            uint32_t a = xv_get(&data[0]);
            dsched_yield();
            EXPLORE_REQUIRE(xv_get(&data[1]) == a);
            EXPLORE_REQUIRE(sqf_rwlock_rdunlock(&rw) == 0);
        }
    }
}

static const char *check_rw(void)
{
    return data[0].w == 2 ? NULL : "a write under the rwlock was lost (a stale read)";
}

/* --- queue: ring_push's REL stamp store (publish) pairs with ring_pop's
 * ACQ stamp load, and ring_pop's REL store freeing the slot with
 * ring_push's ACQ load; a consumer asleep on an empty queue and a producer
 * asleep on a full one (capacity 1) are woken through the SC fences of
 * wake_side and queue_step against the sleep counts (store-buffering). */
static _Alignas(64) char qmem[1024]; /* the queue and its slots (sqf_queue_bytes) */
static sqf_queue *const q = (sqf_queue *)qmem;

static void setup_queue(void)
{
    clear_data();
    if (sqf_queue_bytes(1, sizeof(int)) > sizeof qmem) abort();
    sqf_queue_init(q, 1, sizeof(int), SQF_PRIVATE);
}

static void body_queue(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        for (int k = 0; k < 3; k++) {
            xv_set(&data[k], MAGIC);
            EXPLORE_REQUIRE(sqf_queue_push(q, &k) == 0);
        }
    } else {
        for (int i = 0; i < (id == 1 ? 2 : 1); i++) {
            int k = -1;
            EXPLORE_REQUIRE(sqf_queue_pop(q, &k) == 0);
            EXPLORE_REQUIRE(k >= 0 && k < 3 && xv_get(&data[k]) == MAGIC);
        }
    }
}

static const char *check_queue(void)
{
    return sqf_queue_destroy(q) == 0 ? NULL : "the queue is left busy";
}

/* --- the loop driver's hand-over: a release wakes a loop's simulated
 * io_uring wait, whose completion the loop reaps and hands to a callback
 * (the wait seam's fences); what was written before the release must be
 * visible in the callback, as in a thread woken from the futex.  Beside
 * them a thread's blocking acquire. */
static sqf_loop *lp;
static sqf_loop_op op_a, op_b;

static void setup_loop(void)
{
    setup_sem();
    EXPLORE_REQUIRE(sqf_loop_create(&lp, 0) == 0);
}

static void loop_acquired(sqf_loop_op *op, int r, void *arg)
{
    (void)op, (void)arg;
    EXPLORE_REQUIRE(r == 0);
    EXPLORE_REQUIRE(xv_get(&data[0]) == MAGIC); /* written before any permit */
    xv_set(&counter, xv_get(&counter) + 1);     /* the loop's thread only */
}

static void start(int r, sqf_loop_op *op)
{
    if (r != EINPROGRESS) loop_acquired(op, r, NULL);
}

static void body_loop(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        xv_set(&data[0], MAGIC);
        for (int k = 0; k < 3; k++) {
            EXPLORE_REQUIRE(sqf_sem_release(&sem, 1) == 0);
            dsched_yield();
        }
    } else if (id == 1) {
        start(sqf_loop_sem_acquire(lp, &op_a, &sem, SQF_FOREVER, NULL, loop_acquired, NULL), &op_a);
        start(sqf_loop_sem_acquire(lp, &op_b, &sem, SQF_FOREVER, NULL, loop_acquired, NULL), &op_b);
        while (sqf_loop_pending(lp))
            if (sqf_loop_dispatch(lp) == 0) dsched_await(lp);
    } else {
        EXPLORE_REQUIRE(sqf_sem_acquire(&sem) == 0);
        EXPLORE_REQUIRE(xv_get(&data[0]) == MAGIC);
    }
}

static const char *check_loop(void)
{
    if (counter.w != 2) return "a loop acquire did not complete";
    return sqf_loop_destroy(lp) == 0 ? NULL : "the loop could not be destroyed";
}

int main(void)
{
    const struct explore_case cases[] = {
        {"weak: mutex, 3 lockers incrementing", 3, setup_mutex, body_mutex, check_mutex, 6000, 0},
        {"weak: cond, a payload behind the predicate, 2 waiters", 3, setup_cond, body_cond, NULL,
         6000, 0},
        {"weak: sem, a payload behind each permit", 3, setup_sem, body_sem, NULL, 6000, 0},
        {"weak: once, 3 callers read what the run wrote", 3, setup_once, body_once, NULL, 6000, 0},
        {"weak: event, 2 waiters read what the setter wrote", 3, setup_level, body_event, NULL,
         4000, 0},
        {"weak: latch, 1 waiter reads both counters' writes", 3, setup_level, body_latch, NULL,
         4000, 0},
        {"weak: countdown, 1 waiter reads both writes", 3, setup_level, body_countdown, NULL, 4000,
         0},
        {"weak: barrier, 3 parties, 2 phases", 3, setup_barrier, body_barrier, NULL, 4000, 0},
        {"weak: rwlock, 2 writers and a reader", 3, setup_rw, body_rw, check_rw, 6000, 0},
        {"weak: queue of 1, a payload behind each item", 3, setup_queue, body_queue, check_queue,
         6000, 0},
        {"weak: loop hand-over, 2 loop acquires and a thread's", 3, setup_loop, body_loop,
         check_loop, 4000, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        explore(&cases[i]);
    return 0;
}
