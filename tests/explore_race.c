/* explore_race.c: named regressions, "a time-out racing a hand-off" and "a
 * cancellation racing a hand-off", for every primitive that waits, under
 * the deterministic scheduler.
 *
 * The shape (a waiter gives up at the very step at which a permit, the
 * lock, a signal, the end of a run or a phase is handed to it) lost
 * wake-ups in peers: a waiter chosen by the wake-up leaves and swallows it,
 * and another sleeps for ever beside a free resource.  Each case pairs a
 * waiter that may give up with an untimed one, whom the scheduler's
 * deadlock detection watches.  Every case runs twice, through the _until
 * form of its wait, which takes both causes: once giving up by deadline
 * (time-outs injected at a high rate, wake-ups landing at the deadline,
 * and a deadline per schedule so that its natural expiry falls at every
 * step), once by a token that a last thread cancels at a random step.  A
 * waiter that gives up returns ETIMEDOUT or ECANCELED having taken nothing;
 * one that returns 0 has it.  Safety: permits and items are conserved,
 * locks are exclusive and left free, fn runs once, a barrier phase
 * completes for all or breaks for all.
 */
#include "handoff_race.h"

/* --- mutex: unlock_fair and unlock hand the lock to a waiter giving up ---- */
static sqf_mutex mu;

static void setup_mutex(void)
{
    sqf_mutex_init(&mu, SQF_PRIVATE);
    race_reset();
}

static void body_mutex(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        hold_mutex_twice(&mu);
    } else if (id == 1) { /* may give up, twice */
        for (int i = 0; i < 2; i++) {
            int r = sqf_mutex_lock_until(&mu, until(), token());
            count(r);
            if (r == 0) {
                critical(1);
                EXPLORE_REQUIRE((i ? sqf_mutex_unlock_fair(&mu) : sqf_mutex_unlock(&mu)) == 0);
            }
        }
    } else {
        lock_mutex_twice(&mu);
    }
}

static const char *check_mutex(void)
{
    if (bad_result) return "lock_until returned neither 0 nor its give-up code";
    if (sqf_mutex_trylock(&mu) != 0) return "the mutex is left locked";
    sqf_mutex_unlock(&mu);
    return NULL;
}

/* --- sem: release(1) racing a waiter that gives up, beside an untimed one -- */
static sqf_sem sem;

static void setup_sem(void)
{
    sqf_sem_init(&sem, 0, 0, SQF_PRIVATE);
    race_reset();
}

static void body_sem(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        handing_off();
        EXPLORE_REQUIRE(sqf_sem_release(&sem, 1) == 0);
        dsched_yield();
        handing_off();
        EXPLORE_REQUIRE(sqf_sem_release(&sem, 1) == 0);
    } else if (id == 1) {
        count(sqf_sem_acquire_until(&sem, until(), token()));
    } else {
        EXPLORE_REQUIRE(sqf_sem_acquire(&sem) == 0);
    }
}

static const char *check_sem(void)
{
    unsigned v = 99;
    sqf_sem_getvalue(&sem, &v);
    if (bad_result) return "acquire_until returned neither 0 nor its give-up code";
    /* 2 released = the giving-up taker's + the untimed one's + what is left */
    if ((int)v != 2 - got - 1) return "a permit was lost or duplicated";
    return NULL;
}

/* --- cond: a signal racing a waiter that gives up, beside an untimed one --- */
static sqf_cond cv;
static int items;

static void setup_cond(void)
{
    sqf_mutex_init(&mu, SQF_PRIVATE);
    sqf_cond_init(&cv, SQF_PRIVATE);
    items = 0;
    race_reset();
}

static void body_cond(int id, void *arg)
{
    (void)arg;
    sqf_mutex_lock(&mu);
    if (id == 0) { /* one item and one signal, twice */
        for (int i = 0; i < 2; i++) {
            items++;
            handing_off();
            EXPLORE_REQUIRE(sqf_cond_signal(&cv) == 0);
            sqf_mutex_unlock(&mu);
            dsched_yield();
            sqf_mutex_lock(&mu);
        }
    } else if (id == 1) {
        int r = 0;
        sqf_deadline d = until();
        while (items == 0 && r == 0)
            r = sqf_cond_wait_until(&cv, &mu, d, token());
        if (r != 0 && r != gave_up()) bad_result++;
        if (items > 0) { /* an item counts, whatever the wait returned */
            items--;
            got++;
        } else {
            gaveup++;
        }
    } else {
        while (items == 0)
            EXPLORE_REQUIRE(sqf_cond_wait(&cv, &mu) == 0);
        items--;
    }
    sqf_mutex_unlock(&mu);
}

static const char *check_cond(void)
{
    if (bad_result) return "wait_until returned neither 0 nor its give-up code";
    if (items != 2 - got - 1) return "an item was lost or duplicated";
    return NULL;
}

/* --- cond: a broadcast requeues the sleepers onto the mutex, and
 * unlock_fair hands the mutex to one of them, which may be giving up ------ */
static int flag, woke;

static void setup_broadcast(void)
{
    setup_cond();
    flag = woke = 0;
}

static void body_broadcast(int id, void *arg)
{
    (void)arg;
    EXPLORE_REQUIRE(sqf_mutex_lock(&mu) == 0);
    if (id == 0) {
        flag = 1;
        EXPLORE_REQUIRE(sqf_cond_broadcast(&cv) == 0);
        critical(30); /* the woken one requeues the rest onto mu meanwhile */
        handing_off();
        EXPLORE_REQUIRE(sqf_mutex_unlock_fair(&mu) == 0);
        return;
    }
    if (id == 1) {
        int r = 0;
        sqf_deadline d = until();
        while (!flag && r == 0)
            r = sqf_cond_wait_until(&cv, &mu, d, token());
        if (r != 0 && r != gave_up()) bad_result++;
    } else {
        while (!flag)
            EXPLORE_REQUIRE(sqf_cond_wait(&cv, &mu) == 0);
    }
    woke++;
    critical(1);
    EXPLORE_REQUIRE(sqf_mutex_unlock(&mu) == 0);
}

static const char *check_broadcast(void)
{
    if (bad_result) return "wait_until returned neither 0 nor its give-up code";
    if (woke != 3) return "a waiter did not return";
    if (sqf_mutex_trylock(&mu) != 0) return "the mutex is left locked";
    sqf_mutex_unlock(&mu);
    return NULL;
}

/* --- rwlock: the writer's unlock hands over to a writer and a reader that
 * may give up; a writer that leaves must let the untimed reader in ------- */
static sqf_rwlock rw;

static void setup_rw(void)
{
    sqf_rwlock_init(&rw, SQF_PRIVATE);
    readers = writers = 0;
    race_reset();
}

static void body_rw(int id, void *arg)
{
    (void)arg;
    int r;
    switch (id) {
    case 0: /* the holder */
        hold_rwlock(&rw);
        break;
    case 1: /* a writer that may give up */
        r = sqf_rwlock_wrlock_until(&rw, until(), token());
        count(r);
        if (r == 0) {
            write_section();
            EXPLORE_REQUIRE(sqf_rwlock_wrunlock(&rw) == 0);
        }
        break;
    case 2: /* a reader that may give up */
        r = sqf_rwlock_rdlock_until(&rw, until(), token());
        count(r);
        if (r == 0) {
            read_section();
            EXPLORE_REQUIRE(sqf_rwlock_rdunlock(&rw) == 0);
        }
        break;
    default: /* an untimed reader */
        EXPLORE_REQUIRE(sqf_rwlock_rdlock(&rw) == 0);
        read_section();
        EXPLORE_REQUIRE(sqf_rwlock_rdunlock(&rw) == 0);
        break;
    }
}

static const char *check_rw(void)
{
    if (bad_result) return "a lock_until returned neither 0 nor its give-up code";
    if (sqf_rwlock_trywrlock(&rw) != 0) return "the lock is left held";
    sqf_rwlock_wrunlock(&rw);
    return NULL;
}

/* --- barrier: the last arrival racing a party that gives up --------------- */
static sqf_barrier bar;
static int res[3];

static void setup_barrier(void)
{
    sqf_barrier_init(&bar, 3, SQF_PRIVATE);
    res[0] = res[1] = res[2] = -1;
    race_reset();
}

static void body_barrier(int id, void *arg)
{
    (void)arg;
    if (id == 0) handing_off(); /* it may be the last to arrive */
    res[id] = id == 1 ? sqf_barrier_wait_until(&bar, until(), token(), NULL, NULL, NULL)
                      : sqf_barrier_wait(&bar, NULL);
}

static const char *check_barrier(void)
{
    if (res[0] == 0 && res[1] == 0 && res[2] == 0) return NULL;    /* the phase completed */
    if (res[1] == gave_up() && res[0] == EPIPE && res[2] == EPIPE) /* broken for all */
        return sqf_barrier_reset(&bar) == 0 ? NULL : "reset failed after a break";
    return "a phase neither completed for all nor broke for all";
}

/* --- latch, countdown, event: the opening call racing a waiter giving up -- */
static sqf_latch latch;
static sqf_countdown cd;
static sqf_event ev;
static int downs;

static void setup_open(void)
{
    sqf_latch_init(&latch, 1, SQF_PRIVATE);
    sqf_countdown_init(&cd, 2, SQF_PRIVATE);
    sqf_event_init(&ev, SQF_PRIVATE);
    downs = 0;
    race_reset();
}

static void body_open(int id, void *arg)
{
    (void)arg;
    int r;
    if (id == 0) { /* opens all three */
        open_three(&latch, &cd, &ev, &downs);
    } else if (id == 1) { /* may give up on each */
        count(sqf_latch_wait_until(&latch, until(), token()));
        r = sqf_countdown_wait_until(&cd, until(), token());
        count(r);
        if (r == 0) EXPLORE_REQUIRE(downs == 2);
        count(sqf_event_wait_until(&ev, until(), token()));
    } else { /* plain waits: must all return */
        wait_three(&latch, &cd, &ev, &downs);
    }
}

static const char *check_open(void)
{
    return bad_result ? "a wait_until returned neither 0 nor its give-up code" : NULL;
}

/* --- once: a caller that may give up while another runs fn ---------------- */
static sqf_once once;
static int runs, effect;

static int once_fn(void *arg)
{
    (void)arg;
    dsched_yield();
    handing_off();
    effect = 1;
    runs++;
    return 0;
}

static void setup_once(void)
{
    sqf_once_init(&once, SQF_PRIVATE);
    runs = effect = 0;
    race_reset();
}

static void body_once(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        EXPLORE_REQUIRE(sqf_once_run(&once, once_fn, NULL) == 0);
        EXPLORE_REQUIRE(effect == 1);
    } else {
        int r = sqf_once_run_until(&once, once_fn, NULL, until(), token());
        count(r);
        if (r == 0) EXPLORE_REQUIRE(effect == 1);
    }
}

static const char *check_once(void)
{
    if (bad_result) return "run_until returned neither 0 nor its give-up code";
    return runs == 1 ? NULL : "fn ran other than once";
}

/* --- the two runs of every case --------------------------------------------- */

struct shape {
    const char *what;
    int workers;
    void (*setup)(void);
    void (*body)(int id, void *arg);
    const char *(*check)(void);
    long by_timeout, by_cancel; /* schedules per CTest run */
    int timeout_rate;           /* per 1000 choices, when timing out */
};

int main(void)
{
    static const struct shape shapes[] = {
        {"mutex unlock_fair and unlock", 3, setup_mutex, body_mutex, check_mutex, 6000, 5000, 30},
        {"sem release", 3, setup_sem, body_sem, check_sem, 6000, 5000, 150},
        {"cond signal", 3, setup_cond, body_cond, check_cond, 6000, 5000, 150},
        {"cond broadcast, then unlock_fair to a requeued waiter", 4, setup_broadcast,
         body_broadcast, check_broadcast, 4000, 4000, 30},
        {"rwlock wrunlock, a writer ahead of a reader", 4, setup_rw, body_rw, check_rw, 6000, 5000,
         150},
        {"barrier release", 3, setup_barrier, body_barrier, check_barrier, 6000, 5000, 150},
        {"latch, countdown and event", 3, setup_open, body_open, check_open, 6000, 5000, 150},
        {"once", 2, setup_once, body_once, check_once, 5000, 5000, 150},
    };
    char name[128];
    for (mode = BY_TIMEOUT; mode <= BY_CANCEL; mode++)
        for (unsigned i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            const struct shape *s = &shapes[i];
            snprintf(name, sizeof name, "%s racing a hand-off: %s",
                     mode == BY_TIMEOUT ? "timeout" : "cancel", s->what);
            workers = s->workers;
            worker = s->body;
            /* Time-outs at 150 per 1000 choices: most schedules have one
             * (the mutex's 30: its waiter must often sleep until woken). */
            struct explore_case c = {name,
                                     s->workers + (mode == BY_CANCEL),
                                     s->setup,
                                     race_body,
                                     s->check,
                                     mode == BY_TIMEOUT ? s->by_timeout : s->by_cancel,
                                     mode == BY_TIMEOUT ? s->timeout_rate : 0};
            explore(&c);
        }
    return 0;
}
