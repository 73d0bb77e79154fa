/* explore_race.c: named regression, "a time-out racing a hand-off", for
 * every primitive with a timed wait, under the deterministic scheduler.
 *
 * The shape (a waiter's deadline passes at the very step at which a permit,
 * the lock, a signal or a phase is handed to it) lost wake-ups in peers:
 * a timed-out waiter that had been chosen by the wake-up swallows it, and
 * another waiter sleeps for ever beside a free resource.  Each case pairs a
 * timed waiter with an untimed one, whom the scheduler's deadlock detection
 * watches; time-outs are injected at a high rate (and the simulated clock
 * reaches the short deadlines too), so they land at every step of the hand-
 * off.  Safety: permits and items are conserved, locks are exclusive and
 * left free, a barrier phase completes for all or breaks for all.
 */
#include <errno.h>

#include <squarefree.h>

#include "explore.h"

/* The timed waiter's deadline: a different one in each schedule (from its
 * seed), 10 to 160 steps away, so that its natural expiry (not only an
 * injected time-out, which can only end a sleep) falls at every step of a
 * hand-off, including the few between a wake-up and the woken thread's next
 * look at the word. */
static int64_t short_ns;

static int got, timedout, inside, bad_result;

static void reset_counts(void)
{
    got = timedout = inside = bad_result = 0;
    short_ns = (int64_t)(10 + explore_seed * 37 % 151) * 1000;
}

static void count(int r)
{
    if (r == 0)
        got++;
    else if (r == ETIMEDOUT)
        timedout++;
    else
        bad_result++;
}

/* --- mutex: unlock_fair hands the lock to a sleeper that is timing out ---- */
static sqf_mutex mu;

static void setup_mutex(void)
{
    sqf_mutex_init(&mu, SQF_PRIVATE);
    reset_counts();
}

/* Long enough (in steps) that the others stop spinning and go to sleep. */
static void critical(int steps)
{
    EXPLORE_REQUIRE(++inside == 1);
    for (int i = 0; i < steps; i++)
        dsched_yield();
    inside--;
}

static void body_mutex(int id, void *arg)
{
    (void)arg;
    if (id == 0) { /* the holder: hands off fairly, then wakes plainly */
        for (int i = 0; i < 2; i++) {
            EXPLORE_REQUIRE(sqf_mutex_lock(&mu) == 0);
            critical(30);
            EXPLORE_REQUIRE((i ? sqf_mutex_unlock(&mu) : sqf_mutex_unlock_fair(&mu)) == 0);
        }
    } else if (id == 1) { /* timed, twice */
        for (int i = 0; i < 2; i++) {
            int r = sqf_mutex_timedlock(&mu, sqf_after(short_ns));
            count(r);
            if (r == 0) {
                critical(1);
                EXPLORE_REQUIRE((i ? sqf_mutex_unlock_fair(&mu) : sqf_mutex_unlock(&mu)) == 0);
            }
        }
    } else { /* untimed, twice (the second time often barging): must get through */
        for (int i = 0; i < 2; i++) {
            EXPLORE_REQUIRE(sqf_mutex_lock(&mu) == 0);
            critical(1);
            EXPLORE_REQUIRE(sqf_mutex_unlock(&mu) == 0);
        }
    }
}

static const char *check_mutex(void)
{
    if (bad_result) return "timedlock returned neither 0 nor ETIMEDOUT";
    if (sqf_mutex_trylock(&mu) != 0) return "the mutex is left locked";
    sqf_mutex_unlock(&mu);
    return NULL;
}

/* --- sem: release(1) to a timed acquirer timing out, beside an untimed one - */
static sqf_sem sem;

static void setup_sem(void)
{
    sqf_sem_init(&sem, 0, 0, SQF_PRIVATE);
    reset_counts();
}

static void body_sem(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        EXPLORE_REQUIRE(sqf_sem_release(&sem, 1) == 0);
        dsched_yield();
        EXPLORE_REQUIRE(sqf_sem_release(&sem, 1) == 0);
    } else if (id == 1) {
        count(sqf_sem_timedacquire(&sem, sqf_after(short_ns)));
    } else {
        EXPLORE_REQUIRE(sqf_sem_acquire(&sem) == 0);
    }
}

static const char *check_sem(void)
{
    unsigned v = 99;
    sqf_sem_getvalue(&sem, &v);
    if (bad_result) return "timedacquire returned neither 0 nor ETIMEDOUT";
    /* 2 released = the timed taker's + the untimed one's + what is left */
    if ((int)v != 2 - got - 1) return "a permit was lost or duplicated";
    return NULL;
}

/* --- cond: a signal racing a timed waiter's time-out, beside an untimed one - */
static sqf_cond cv;
static int items;

static void setup_cond(void)
{
    sqf_mutex_init(&mu, SQF_PRIVATE);
    sqf_cond_init(&cv, SQF_PRIVATE);
    items = 0;
    reset_counts();
}

static void body_cond(int id, void *arg)
{
    (void)arg;
    sqf_mutex_lock(&mu);
    if (id == 0) { /* one item and one signal, twice */
        for (int i = 0; i < 2; i++) {
            items++;
            EXPLORE_REQUIRE(sqf_cond_signal(&cv) == 0);
            sqf_mutex_unlock(&mu);
            dsched_yield();
            sqf_mutex_lock(&mu);
        }
    } else if (id == 1) {
        int r = 0;
        sqf_deadline d = sqf_after(short_ns);
        while (items == 0 && r == 0)
            r = sqf_cond_timedwait(&cv, &mu, d);
        if (r != 0 && r != ETIMEDOUT) bad_result++;
        if (items > 0) {
            items--;
            got++;
        } else {
            timedout++;
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
    if (bad_result) return "timedwait returned neither 0 nor ETIMEDOUT";
    if (items != 2 - got - 1) return "an item was lost or duplicated";
    return NULL;
}

/* --- rwlock: the writer's unlock hands over to a timed writer and reader ---- */
static sqf_rwlock rw;
static int readers, writers;

static void setup_rw(void)
{
    sqf_rwlock_init(&rw, SQF_PRIVATE);
    readers = writers = 0;
    reset_counts();
}

static void read_section(void)
{
    readers++;
    EXPLORE_REQUIRE(writers == 0);
    dsched_yield();
    EXPLORE_REQUIRE(writers == 0);
    readers--;
}

static void write_section(void)
{
    EXPLORE_REQUIRE(++writers == 1 && readers == 0);
    dsched_yield();
    EXPLORE_REQUIRE(writers == 1 && readers == 0);
    writers--;
}

static void body_rw(int id, void *arg)
{
    (void)arg;
    int r;
    switch (id) {
    case 0: /* the holder */
        EXPLORE_REQUIRE(sqf_rwlock_wrlock(&rw) == 0);
        write_section();
        EXPLORE_REQUIRE(sqf_rwlock_wrunlock(&rw) == 0);
        break;
    case 1: /* a timed writer */
        r = sqf_rwlock_timedwrlock(&rw, sqf_after(short_ns));
        count(r);
        if (r == 0) {
            write_section();
            EXPLORE_REQUIRE(sqf_rwlock_wrunlock(&rw) == 0);
        }
        break;
    case 2: /* a timed reader */
        r = sqf_rwlock_timedrdlock(&rw, sqf_after(short_ns));
        count(r);
        if (r == 0) {
            read_section();
            EXPLORE_REQUIRE(sqf_rwlock_rdunlock(&rw) == 0);
        }
        break;
    default: /* an untimed reader: a writer that gave up must not strand it */
        EXPLORE_REQUIRE(sqf_rwlock_rdlock(&rw) == 0);
        read_section();
        EXPLORE_REQUIRE(sqf_rwlock_rdunlock(&rw) == 0);
        break;
    }
}

static const char *check_rw(void)
{
    if (bad_result) return "a timed lock returned neither 0 nor ETIMEDOUT";
    if (sqf_rwlock_trywrlock(&rw) != 0) return "the lock is left held";
    sqf_rwlock_wrunlock(&rw);
    return NULL;
}

/* --- barrier: the last arrival racing a timed party's time-out ------------- */
static sqf_barrier bar;
static int res[3];

static void setup_barrier(void)
{
    sqf_barrier_init(&bar, 3, SQF_PRIVATE);
    res[0] = res[1] = res[2] = -1;
    reset_counts();
}

static void body_barrier(int id, void *arg)
{
    (void)arg;
    res[id] = id == 1 ? sqf_barrier_timedwait(&bar, sqf_after(short_ns), NULL)
                      : sqf_barrier_wait(&bar, NULL);
}

static const char *check_barrier(void)
{
    if (res[0] == 0 && res[1] == 0 && res[2] == 0) return NULL; /* the phase completed */
    if (res[1] == ETIMEDOUT && res[0] == EPIPE && res[2] == EPIPE) {
        if (sqf_barrier_reset(&bar) != 0) return "reset failed after a break";
        return NULL; /* broken for all */
    }
    return "a phase neither completed for all nor broke for all";
}

/* --- countdown and event: the last down / the set racing a timed wait ------ */
static sqf_countdown cd;
static sqf_event ev;
static int downs;

static void setup_cd(void)
{
    sqf_countdown_init(&cd, 2, SQF_PRIVATE);
    sqf_event_init(&ev, SQF_PRIVATE);
    downs = 0;
    reset_counts();
}

static void body_cd(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        for (int i = 0; i < 2; i++) {
            downs++;
            EXPLORE_REQUIRE(sqf_countdown_down(&cd) == 0);
        }
        EXPLORE_REQUIRE(sqf_event_set(&ev) == 0);
    } else if (id == 1) {
        int r = sqf_countdown_timedwait(&cd, sqf_after(short_ns));
        count(r);
        if (r == 0) EXPLORE_REQUIRE(downs == 2);
        r = sqf_event_timedwait(&ev, sqf_after(short_ns));
        count(r);
    } else {
        EXPLORE_REQUIRE(sqf_countdown_wait(&cd) == 0);
        EXPLORE_REQUIRE(downs == 2);
        EXPLORE_REQUIRE(sqf_event_wait(&ev) == 0);
    }
}

static const char *check_cd(void)
{
    return bad_result ? "a timed wait returned neither 0 nor ETIMEDOUT" : NULL;
}

int main(void)
{
    /* Time-outs at 150 per 1000 choices: most schedules have one, at any step. */
    struct explore_case cases[] = {
        {"timeout racing a hand-off: mutex unlock_fair and unlock", 3, setup_mutex, body_mutex,
         check_mutex, 6000, 30},
        {"timeout racing a hand-off: sem release", 3, setup_sem, body_sem, check_sem, 6000, 150},
        {"timeout racing a hand-off: cond signal", 3, setup_cond, body_cond, check_cond, 6000, 150},
        {"timeout racing a hand-off: rwlock wrunlock", 4, setup_rw, body_rw, check_rw, 6000, 150},
        {"timeout racing a hand-off: barrier release", 3, setup_barrier, body_barrier,
         check_barrier, 6000, 150},
        {"timeout racing a hand-off: countdown and event", 3, setup_cd, body_cd, check_cd, 6000,
         150},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++)
        explore(&cases[i]);
    return 0;
}
