/* explore_loop.c: the event-loop driver under the deterministic scheduler,
 * on its simulated io_uring (src/loop/dsched.c), with threads and loop
 * waits mixed on one primitive.
 *
 * Each case is a hand-off race of tests/explore_race.c with loop waits in
 * it: a holder thread hands the lock, a permit, a signal, the opening or
 * the phase to a loop wait that may give up at that moment, beside an
 * untimed loop wait and an untimed thread, which the scheduler's deadlock
 * detection watches (a lost wake-up leaves one asleep for ever).  The loop
 * runs on its own thread: dispatch, and dsched_await(loop) where a real
 * loop would wait for its descriptor.  Three ways to give up:
 * - BY_TIMEOUT: the op's deadline, its linked time-out firing at any step
 *   (and the requests' time-outs injected at the time-out rate);
 * - BY_CANCEL: a token that a last thread cancels at a time from the seed,
 *   or 0-7 steps after the holder announced a hand-off;
 * - BY_LOOP_CANCEL: sqf_loop_cancel from the loop's thread, likewise timed.
 * The simulated io_uring delivers completions only when the loop reaps
 * them, and ends a wait by time-out or cancel only while no wake has
 * dequeued it, as the kernel's one-word futex waits do (src/wait/dsched.h).
 */
#include <squarefree/loop.h>

#include "handoff_race.h"

static sqf_loop *lp;
static sqf_loop_op op_a, op_b; /* a: may give up; b: untimed */
static int loop_cancelled;     /* BY_LOOP_CANCEL: op a was asked to stop */

static void reset(void)
{
    race_reset();
    loop_cancelled = 0;
    EXPLORE_REQUIRE(sqf_loop_create(&lp, 0) == 0);
}

/* A loop wait's start: its callback now if it completed at once. */
static void start(int r, sqf_loop_op *op, sqf_loop_cb cb)
{
    if (r != EINPROGRESS) cb(op, r, NULL);
}

static void dispatch_once(void)
{
    EXPLORE_REQUIRE(sqf_loop_dispatch(lp) >= 0);
}

/* The loop's thread: start the case's loop waits, (BY_LOOP_CANCEL) cancel
 * op a at the moment, then dispatch until none is pending. */
static void run_loop(void (*begin)(void))
{
    begin();
    if (mode == BY_LOOP_CANCEL) {
        wait_for_moment(dispatch_once);
        int r = sqf_loop_cancel(lp, &op_a);
        EXPLORE_REQUIRE(r == 0 || r == ENOENT); /* ENOENT: not waiting now */
        loop_cancelled = 1;
    }
    while (sqf_loop_pending(lp))
        if (sqf_loop_dispatch(lp) == 0) dsched_await(lp);
}

static const char *loop_left(void)
{
    if (sqf_loop_pending(lp) != 0) return "a loop wait is left pending";
    if (sqf_loop_destroy(lp) != 0) return "the loop could not be destroyed";
    return NULL;
}

/* --- mutex: unlock_fair and unlock hand the lock to loop waits --------- */
static sqf_mutex mu;
static int rounds_a, rounds_b;

static void setup_mutex(void)
{
    sqf_mutex_init(&mu, SQF_PRIVATE);
    rounds_a = rounds_b = 0;
    reset();
}

static void a_locked(sqf_loop_op *op, int r, void *arg);
static void b_locked(sqf_loop_op *op, int r, void *arg);

static void a_lock(void)
{
    start(sqf_loop_mutex_lock(lp, &op_a, &mu, until(), token(), a_locked, NULL), &op_a, a_locked);
}
static void b_lock(void)
{
    start(sqf_loop_mutex_lock(lp, &op_b, &mu, SQF_FOREVER, NULL, b_locked, NULL), &op_b, b_locked);
}

/* Op a: twice, giving up or holding the lock in its callback. */
static void a_locked(sqf_loop_op *op, int r, void *arg)
{
    (void)op, (void)arg;
    count(r);
    if (r == 0) {
        critical(1);
        EXPLORE_REQUIRE((rounds_a ? sqf_mutex_unlock_fair(&mu) : sqf_mutex_unlock(&mu)) == 0);
    }
    if (++rounds_a < 2) a_lock();
}

/* Op b: twice, untimed: it must get the lock both times. */
static void b_locked(sqf_loop_op *op, int r, void *arg)
{
    (void)op, (void)arg;
    EXPLORE_REQUIRE(r == 0);
    if (r == 0) {
        critical(1);
        EXPLORE_REQUIRE(sqf_mutex_unlock_fair(&mu) == 0);
    }
    if (++rounds_b < 2) b_lock();
}

static void begin_mutex(void)
{
    a_lock();
    b_lock();
}

static void body_mutex(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        hold_mutex_twice(&mu);
    } else if (id == 1) {
        run_loop(begin_mutex);
    } else { /* an untimed thread, twice */
        lock_mutex_twice(&mu);
    }
}

static const char *check_mutex(void)
{
    if (bad_result) return "a loop lock returned neither 0 nor its give-up code";
    if (rounds_a != 2 || rounds_b != 2) return "a loop lock's callback did not run";
    if (sqf_mutex_trylock(&mu) != 0) return "the mutex is left locked";
    sqf_mutex_unlock(&mu);
    return loop_left();
}

/* --- sem: releases racing a loop acquire that gives up ----------------- */
static sqf_sem sem;
static int b_got;

static void setup_sem(void)
{
    sqf_sem_init(&sem, 0, 0, SQF_PRIVATE);
    b_got = 0;
    reset();
}

static void a_acquired(sqf_loop_op *op, int r, void *arg)
{
    (void)op, (void)arg;
    count(r);
}
static void b_acquired(sqf_loop_op *op, int r, void *arg)
{
    (void)op, (void)arg;
    EXPLORE_REQUIRE(r == 0);
    b_got += r == 0;
}

static void begin_sem(void)
{
    start(sqf_loop_sem_acquire(lp, &op_a, &sem, until(), token(), a_acquired, NULL), &op_a,
          a_acquired);
    start(sqf_loop_sem_acquire(lp, &op_b, &sem, SQF_FOREVER, NULL, b_acquired, NULL), &op_b,
          b_acquired);
}

static void body_sem(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        for (int i = 0; i < 3; i++) {
            handing_off();
            EXPLORE_REQUIRE(sqf_sem_release(&sem, 1) == 0);
            dsched_yield();
        }
    } else if (id == 1) {
        run_loop(begin_sem);
    } else {
        EXPLORE_REQUIRE(sqf_sem_acquire(&sem) == 0);
    }
}

static const char *check_sem(void)
{
    unsigned v = 99;
    sqf_sem_getvalue(&sem, &v);
    if (bad_result) return "a loop acquire returned neither 0 nor its give-up code";
    if (b_got != 1) return "the untimed loop acquire did not complete";
    /* 3 released = op a's + op b's + the thread's + what is left */
    if ((int)v != 3 - got - 2) return "a permit was lost or duplicated";
    return loop_left();
}

/* --- cond: signals and a broadcast to loop waits ----------------------- */
static sqf_cond cv;
static int items, flag, woke;
static sqf_deadline a_deadline;

static void setup_cond(void)
{
    sqf_mutex_init(&mu, SQF_PRIVATE);
    sqf_cond_init(&cv, SQF_PRIVATE);
    items = flag = woke = 0;
    reset();
}

/* A loop consumer: lock (asynchronously), wait on cv while its condition
 * is false, then take an item (signal case) or note the flag (broadcast
 * case).  Op a gives up; a cond op that gives up may complete with 0 (a
 * spurious wake-up, loop.h), and once a has been cancelled by the loop it
 * stops looking. */
static int broadcast_case;
static bool ready(void)
{
    return broadcast_case ? flag : items > 0;
}

static void consumed(bool is_a, int r)
{
    if (broadcast_case) {
        woke++;
        if (is_a && r != 0 && r != gave_up()) bad_result++;
    } else if (items > 0) { /* an item counts, whatever the wait returned */
        items--;
        if (is_a) got++;
        if (is_a && r != 0 && r != gave_up()) bad_result++;
    } else {
        EXPLORE_REQUIRE(is_a);
        if (r != gave_up() && !(r == 0 && loop_cancelled)) bad_result++;
        gaveup++;
    }
    critical(1);
    EXPLORE_REQUIRE(sqf_mutex_unlock(&mu) == 0);
}

static void a_waited(sqf_loop_op *op, int r, void *arg);
static void b_waited(sqf_loop_op *op, int r, void *arg);

static void a_wait(void)
{
    start(sqf_loop_cond_wait(lp, &op_a, &cv, &mu, a_deadline, token(), a_waited, NULL), &op_a,
          a_waited);
}
static void b_wait(void)
{
    start(sqf_loop_cond_wait(lp, &op_b, &cv, &mu, SQF_FOREVER, NULL, b_waited, NULL), &op_b,
          b_waited);
}

static void a_waited(sqf_loop_op *op, int r, void *arg)
{
    (void)op, (void)arg;
    if (!ready() && r == 0 && !loop_cancelled)
        a_wait();
    else
        consumed(true, r);
}
static void b_waited(sqf_loop_op *op, int r, void *arg)
{
    (void)op, (void)arg;
    EXPLORE_REQUIRE(r == 0);
    if (!ready())
        b_wait();
    else
        consumed(false, r);
}

static void a_locked_cv(sqf_loop_op *op, int r, void *arg)
{
    (void)op, (void)arg;
    if (r != 0) { /* sqf_loop_cancel ended the lock: a gives up, without the mutex */
        if (r != ECANCELED || mode != BY_LOOP_CANCEL) bad_result++;
        gaveup++;
        woke += broadcast_case;
        return;
    }
    a_waited(op, 0, NULL);
}
static void b_locked_cv(sqf_loop_op *op, int r, void *arg)
{
    (void)op, (void)arg;
    EXPLORE_REQUIRE(r == 0);
    b_waited(op, 0, NULL);
}

static void begin_cond(void)
{
    a_deadline = until();
    start(sqf_loop_mutex_lock(lp, &op_a, &mu, SQF_FOREVER, NULL, a_locked_cv, NULL), &op_a,
          a_locked_cv);
    start(sqf_loop_mutex_lock(lp, &op_b, &mu, SQF_FOREVER, NULL, b_locked_cv, NULL), &op_b,
          b_locked_cv);
}

static void thread_consumer(void)
{
    EXPLORE_REQUIRE(sqf_mutex_lock(&mu) == 0);
    while (!ready())
        EXPLORE_REQUIRE(sqf_cond_wait(&cv, &mu) == 0);
    if (broadcast_case)
        woke++;
    else
        items--;
    EXPLORE_REQUIRE(sqf_mutex_unlock(&mu) == 0);
}

static void body_cond(int id, void *arg)
{
    (void)arg;
    if (id == 0) { /* one item and one signal, three times */
        for (int i = 0; i < 3; i++) {
            EXPLORE_REQUIRE(sqf_mutex_lock(&mu) == 0);
            items++;
            handing_off();
            EXPLORE_REQUIRE(sqf_cond_signal(&cv) == 0);
            EXPLORE_REQUIRE(sqf_mutex_unlock(&mu) == 0);
            dsched_yield();
        }
    } else if (id == 1) {
        run_loop(begin_cond);
    } else {
        thread_consumer();
    }
}

static const char *check_cond(void)
{
    if (bad_result) return "a loop cond wait returned neither 0 nor its give-up code";
    if (got + gaveup != 1) return "op a did not finish once";
    if (items != 3 - got - 2) return "an item was lost or duplicated";
    if (sqf_mutex_trylock(&mu) != 0) return "the mutex is left locked";
    sqf_mutex_unlock(&mu);
    return loop_left();
}

/* The broadcast requeues the sleepers onto the mutex, and unlock_fair
 * hands it to one of them: a loop wait that may be giving up (its
 * time-out or cancel racing the hand-off must not lose it). */
static void body_broadcast(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        EXPLORE_REQUIRE(sqf_mutex_lock(&mu) == 0);
        flag = 1;
        EXPLORE_REQUIRE(sqf_cond_broadcast(&cv) == 0);
        critical(30);
        handing_off();
        EXPLORE_REQUIRE(sqf_mutex_unlock_fair(&mu) == 0);
    } else if (id == 1) {
        run_loop(begin_cond);
    } else {
        thread_consumer();
    }
}

static void setup_broadcast(void)
{
    setup_cond();
    broadcast_case = 1;
}

static void setup_signal(void)
{
    setup_cond();
    broadcast_case = 0;
}

static const char *check_broadcast(void)
{
    if (bad_result) return "a loop cond wait returned neither 0 nor its give-up code";
    if (woke != 3) return "a waiter did not return";
    if (sqf_mutex_trylock(&mu) != 0) return "the mutex is left locked";
    sqf_mutex_unlock(&mu);
    return loop_left();
}

/* --- rwlock: the writer's unlock hands over to loop waits -------------- */
static sqf_rwlock rw;

static void setup_rw(void)
{
    sqf_rwlock_init(&rw, SQF_PRIVATE);
    readers = writers = 0;
    reset();
}

static void a_wrlocked(sqf_loop_op *op, int r, void *arg)
{
    (void)op, (void)arg;
    count(r);
    if (r == 0) {
        write_section();
        EXPLORE_REQUIRE(sqf_rwlock_wrunlock(&rw) == 0);
    }
}
static void b_rdlocked(sqf_loop_op *op, int r, void *arg)
{
    (void)op, (void)arg;
    EXPLORE_REQUIRE(r == 0);
    if (r == 0) {
        read_section();
        EXPLORE_REQUIRE(sqf_rwlock_rdunlock(&rw) == 0);
    }
}

static void begin_rw(void)
{
    start(sqf_loop_rwlock_wrlock(lp, &op_a, &rw, until(), token(), a_wrlocked, NULL), &op_a,
          a_wrlocked);
    start(sqf_loop_rwlock_rdlock(lp, &op_b, &rw, SQF_FOREVER, NULL, b_rdlocked, NULL), &op_b,
          b_rdlocked);
}

static void body_rw(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        hold_rwlock(&rw);
    } else if (id == 1) {
        run_loop(begin_rw);
    } else { /* an untimed thread writer */
        EXPLORE_REQUIRE(sqf_rwlock_wrlock(&rw) == 0);
        write_section();
        EXPLORE_REQUIRE(sqf_rwlock_wrunlock(&rw) == 0);
    }
}

static const char *check_rw(void)
{
    if (bad_result) return "a loop lock returned neither 0 nor its give-up code";
    if (got + gaveup != 1) return "op a's callback did not run once";
    if (sqf_rwlock_trywrlock(&rw) != 0) return "the lock is left held";
    sqf_rwlock_wrunlock(&rw);
    return loop_left();
}

/* --- barrier: a phase of two threads and two loop waits ---------------- */
static sqf_barrier bar;
static int res[4];

static void setup_barrier(void)
{
    sqf_barrier_init(&bar, 4, SQF_PRIVATE);
    for (int i = 0; i < 4; i++)
        res[i] = -1;
    reset();
}

static void a_passed(sqf_loop_op *op, int r, void *arg)
{
    (void)op, (void)arg;
    res[1] = r;
}
static void b_passed(sqf_loop_op *op, int r, void *arg)
{
    (void)op, (void)arg;
    res[3] = r;
}

static void begin_barrier(void)
{
    start(sqf_loop_barrier_wait(lp, &op_a, &bar, until(), token(), a_passed, NULL), &op_a,
          a_passed);
    start(sqf_loop_barrier_wait(lp, &op_b, &bar, SQF_FOREVER, NULL, b_passed, NULL), &op_b,
          b_passed);
}

static void body_barrier(int id, void *arg)
{
    (void)arg;
    if (id == 1) {
        run_loop(begin_barrier);
        return;
    }
    if (id == 0) handing_off(); /* it may be the last to arrive */
    res[id] = sqf_barrier_wait(&bar, NULL);
}

static const char *check_barrier(void)
{
    const char *left = loop_left();
    if (left) return left;
    if (res[0] == 0 && res[1] == 0 && res[2] == 0 && res[3] == 0) return NULL; /* completed */
    if (res[1] == gave_up() && res[0] == EPIPE && res[2] == EPIPE && res[3] == EPIPE)
        return sqf_barrier_reset(&bar) == 0 ? NULL : "reset failed after a break";
    return "a phase neither completed for all nor broke for all";
}

/* --- latch, countdown, event: the opening racing a loop wait giving up -- */
static sqf_latch latch;
static sqf_countdown cd;
static sqf_event ev;
static int downs, a_stage, b_stage;

static void setup_open(void)
{
    sqf_latch_init(&latch, 1, SQF_PRIVATE);
    sqf_countdown_init(&cd, 2, SQF_PRIVATE);
    sqf_event_init(&ev, SQF_PRIVATE);
    downs = a_stage = b_stage = 0;
    reset();
}

/* Each loop op waits on the latch, then the countdown, then the event. */
static void a_opened(sqf_loop_op *op, int r, void *arg);
static void b_opened(sqf_loop_op *op, int r, void *arg);

static void a_next(void)
{
    sqf_deadline d = until();
    const sqf_cancel *t = token();
    int r = a_stage == 0   ? sqf_loop_latch_wait(lp, &op_a, &latch, d, t, a_opened, NULL)
            : a_stage == 1 ? sqf_loop_countdown_wait(lp, &op_a, &cd, d, t, a_opened, NULL)
                           : sqf_loop_event_wait(lp, &op_a, &ev, d, t, a_opened, NULL);
    start(r, &op_a, a_opened);
}
static void b_next(void)
{
    int r = b_stage == 0 ? sqf_loop_latch_wait(lp, &op_b, &latch, SQF_FOREVER, NULL, b_opened, NULL)
            : b_stage == 1
                ? sqf_loop_countdown_wait(lp, &op_b, &cd, SQF_FOREVER, NULL, b_opened, NULL)
                : sqf_loop_event_wait(lp, &op_b, &ev, SQF_FOREVER, NULL, b_opened, NULL);
    start(r, &op_b, b_opened);
}

static void a_opened(sqf_loop_op *op, int r, void *arg)
{
    (void)op, (void)arg;
    count(r);
    if (r == 0 && a_stage == 1) EXPLORE_REQUIRE(downs == 2);
    if (++a_stage < 3) a_next();
}
static void b_opened(sqf_loop_op *op, int r, void *arg)
{
    (void)op, (void)arg;
    EXPLORE_REQUIRE(r == 0);
    if (b_stage == 1) EXPLORE_REQUIRE(downs == 2);
    if (++b_stage < 3) b_next();
}

static void begin_open(void)
{
    a_next();
    b_next();
}

static void body_open(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        open_three(&latch, &cd, &ev, &downs);
    } else if (id == 1) {
        run_loop(begin_open);
    } else {
        wait_three(&latch, &cd, &ev, &downs);
    }
}

static const char *check_open(void)
{
    if (bad_result) return "a loop wait returned neither 0 nor its give-up code";
    if (a_stage != 3 || b_stage != 3) return "a loop wait's callback did not run";
    return loop_left();
}

/* --- nothing comes: only the give-up can end op a ------------------------ */
static int a_res;

static void setup_none(void)
{
    sqf_event_init(&ev, SQF_PRIVATE);
    sqf_sem_init(&sem, 0, 0, SQF_PRIVATE);
    a_res = -1;
    b_got = 0;
    reset();
}

static void a_ended(sqf_loop_op *op, int r, void *arg)
{
    (void)op, (void)arg;
    a_res = r;
}

static void begin_none(void)
{
    start(sqf_loop_event_wait(lp, &op_a, &ev, until(), token(), a_ended, NULL), &op_a, a_ended);
    start(sqf_loop_sem_acquire(lp, &op_b, &sem, SQF_FOREVER, NULL, b_acquired, NULL), &op_b,
          b_acquired);
}

static void body_none(int id, void *arg)
{
    (void)arg;
    if (id == 0) { /* activity on the loop's other wait meanwhile */
        handing_off();
        EXPLORE_REQUIRE(sqf_sem_release(&sem, 1) == 0);
    } else {
        run_loop(begin_none);
    }
}

static const char *check_none(void)
{
    if (a_res != gave_up()) return "a wait nothing ends did not end by its give-up";
    if (b_got != 1) return "the untimed loop acquire did not complete";
    return loop_left();
}

/* --- the three runs of every case ------------------------------------------ */

struct shape {
    const char *what;
    int workers; /* thread 1 is the loop's */
    void (*setup)(void);
    void (*body)(int id, void *arg);
    const char *(*check)(void);
    long schedules; /* per give-up mode, per CTest run */
    int timeout_rate;
};

int main(void)
{
    static const struct shape shapes[] = {
        {"mutex unlock_fair and unlock", 3, setup_mutex, body_mutex, check_mutex, 3000, 30},
        {"sem release", 3, setup_sem, body_sem, check_sem, 3000, 150},
        {"cond signal", 3, setup_signal, body_cond, check_cond, 3000, 150},
        {"cond broadcast, then unlock_fair to a requeued loop wait", 3, setup_broadcast,
         body_broadcast, check_broadcast, 3000, 30},
        {"rwlock wrunlock to a loop writer and a loop reader", 3, setup_rw, body_rw, check_rw, 3000,
         150},
        {"barrier of two threads and two loop waits", 3, setup_barrier, body_barrier, check_barrier,
         3000, 150},
        {"latch, countdown and event", 3, setup_open, body_open, check_open, 3000, 150},
        {"nothing but the give-up ends a wait", 2, setup_none, body_none, check_none, 1000, 150},
    };
    static const char *const how[] = {"timeout", "cancel", "loop cancel"};
    char name[160];
    for (mode = BY_TIMEOUT; mode <= BY_LOOP_CANCEL; mode++)
        for (unsigned i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            const struct shape *s = &shapes[i];
            snprintf(name, sizeof name, "loop, %s racing a hand-off: %s", how[mode], s->what);
            workers = s->workers;
            worker = s->body;
            struct explore_case c = {name,
                                     s->workers + (mode == BY_CANCEL),
                                     s->setup,
                                     race_body,
                                     s->check,
                                     s->schedules,
                                     mode == BY_TIMEOUT ? s->timeout_rate : 0};
            explore(&c);
        }
    return 0;
}
