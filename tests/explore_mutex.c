/* explore_mutex.c: sqf_mutex under the deterministic scheduler.
 * Safety: at most one thread inside, and every entry counted once.
 * Liveness: every schedule ends (no thread left asleep, no livelock),
 * through barging, spinning, sleeping, the starvation hand-off, unlock_fair
 * and timed locks that give up; and, with four threads, the awake waiter
 * (NEXT) asking for its turn (TURN), the designated woken sleeper (WOKEN),
 * and woken timed lockers that give up (a woken sleeper found late by an
 * unlock, which wakes another, happens in these too); and, with a long
 * critical section, the watcher offering its CPU, its yield timed for late
 * wake-ups.  (An unlock that finds the yielding watcher late is reached in
 * explore_race.)  And time-outs, of sqf_mutex and of sqf_robust_mutex: a
 * timed locker that returns ETIMEDOUT had not seen the lock freed before
 * its deadline. */
#include <errno.h>

#include <squarefree.h>

#include "explore.h"

static sqf_mutex mu;
static int inside, entries, timeouts;

static void setup(void)
{
    sqf_mutex_init(&mu, SQF_PRIVATE);
    inside = entries = timeouts = 0;
}

static void critical_for(int steps)
{
    EXPLORE_REQUIRE(++inside == 1);
    for (int i = 0; i < steps; i++)
        dsched_yield();
    entries++;
    inside--;
}

static void critical(void)
{
    critical_for(1);
}

/* One pass through the lock: timed (`timeout` simulated ns, a time-out
 * counted) or not, and released plainly or with unlock_fair. */
static void enter(int64_t timeout, bool fair)
{
    if (timeout) {
        int r = sqf_mutex_timedlock(&mu, sqf_after(timeout));
        EXPLORE_REQUIRE(r == 0 || r == ETIMEDOUT);
        if (r) {
            timeouts++;
            return;
        }
    } else {
        EXPLORE_REQUIRE(sqf_mutex_lock(&mu) == 0);
    }
    critical();
    EXPLORE_REQUIRE((fair ? sqf_mutex_unlock_fair(&mu) : sqf_mutex_unlock(&mu)) == 0);
}

static const char *check_entries(int want)
{
    if (inside != 0) return "a thread still inside";
    if (entries + timeouts != want) return "entries lost or duplicated";
    if (sqf_mutex_trylock(&mu) != 0) return "the mutex is left locked";
    sqf_mutex_unlock(&mu);
    return NULL;
}

static void body(int id, void *arg)
{
    (void)arg;
    for (int i = 0; i < 2; i++)
        enter(id == 2 && i == 1 ? 30000 : 0 /* 30 simulated us */, id == 0 && i == 1);
}

static const char *check(void)
{
    return check_entries(6);
}

/* A runner re-taking the lock, two blocking lockers and a timed one with
 * deadlines short enough to expire while woken or watching. */
static void body_turns(int id, void *arg)
{
    (void)arg;
    int rounds = id == 0 ? 4 : 2;
    for (int i = 0; i < rounds; i++)
        enter(id == 3 ? 8000 + 6000 * i : 0, false);
}

static const char *check_turns(void)
{
    return check_entries(10);
}

/* Thread 0 holds the lock for 16 steps (simulated microseconds) each time:
 * long enough for a watcher's reads to find the word unchanged, so that it
 * yields. */
static void body_long(int id, void *arg)
{
    (void)arg;
    for (int i = 0; i < 2; i++) {
        if (id == 0) {
            EXPLORE_REQUIRE(sqf_mutex_lock(&mu) == 0);
            critical_for(16);
            EXPLORE_REQUIRE(sqf_mutex_unlock(&mu) == 0);
        } else {
            enter(0, false);
        }
    }
}

static void body_combine_fn(void *arg)
{
    (void)arg;
    critical();
}

static void body_combine(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        EXPLORE_REQUIRE(sqf_mutex_lock(&mu) == 0);
        critical();
        EXPLORE_REQUIRE(sqf_mutex_unlock(&mu) == 0);
    }
    EXPLORE_REQUIRE(sqf_mutex_combine(&mu, body_combine_fn, NULL) == 0);
}

static const char *check_combine(void)
{
    if (inside != 0) return "a thread still inside";
    if (entries != 4) return "a combined section lost or run twice";
    return NULL;
}

/* Thread 0 holds the lock for a while and notes the time right after its
 * unlock; thread 1 locks with a deadline; thread 2 only lets the clock run
 * (so that a deadline can pass between another thread's look at the word
 * and its look at the clock).  Only 0 and 1 use the lock, so a time-out is
 * wrong if the unlock came before the deadline: a look at the word made
 * after the deadline then finds the lock free.  A property check: the rule
 * the steps follow (decide on a read made after the stop, waitop.h) is
 * stricter than what can be seen from outside, so a step that broke it
 * would fail here only when the unlock also came before the deadline. */
static sqf_deadline freed_at, deadline1;
static int result1;

/* The lock under test: sqf_mutex, or the robust mutex (its timed lock
 * sleeps plainly, with no awake waiter), which the scheduler runs on a
 * simulated robust list. */
static sqf_robust_mutex rmu;
static bool robust;

static int t_lock(void)
{
    return robust ? sqf_robust_mutex_lock(&rmu) : sqf_mutex_lock(&mu);
}
static int t_timedlock(sqf_deadline d)
{
    return robust ? sqf_robust_mutex_timedlock(&rmu, d) : sqf_mutex_timedlock(&mu, d);
}
static int t_unlock(void)
{
    return robust ? sqf_robust_mutex_unlock(&rmu) : sqf_mutex_unlock(&mu);
}

static void setup_mutex_deadline(void)
{
    setup();
    robust = false;
}

static void setup_robust_deadline(void)
{
    setup();
    sqf_robust_mutex_init(&rmu, SQF_PRIVATE);
    robust = true;
}

static void body_deadline(int id, void *arg)
{
    (void)arg;
    int hold = 2 + (int)(explore_seed / 7 % 40);
    if (id == 0) {
        EXPLORE_REQUIRE(t_lock() == 0);
        critical_for(hold);
        EXPLORE_REQUIRE(t_unlock() == 0);
        freed_at = sqf_now();
    } else if (id == 1) {
        deadline1 = sqf_after((int64_t)(5 + explore_seed / 11 % 60) * 1000);
        result1 = t_timedlock(deadline1);
        EXPLORE_REQUIRE(result1 == 0 || result1 == ETIMEDOUT);
        if (result1 == 0) {
            critical();
            EXPLORE_REQUIRE(t_unlock() == 0);
        }
    } else {
        for (int i = 0, n = 20 + (int)(explore_seed / 13 % 80); i < n; i++)
            dsched_yield();
    }
}

static const char *check_deadline(void)
{
    if (result1 == ETIMEDOUT && freed_at + explore_drain() < deadline1)
        return "a time-out although the lock was free before the deadline";
    if (!robust) return check_entries(1 + (result1 == 0));
    if (inside != 0) return "a thread still inside";
    if (entries != 1 + (result1 == 0)) return "entries lost or duplicated";
    return sqf_robust_mutex_destroy(&rmu) == 0 ? NULL : "the robust mutex is left locked";
}

int main(void)
{
    struct explore_case lock = {
        "mutex lock/timedlock/unlock_fair, 3 threads", 3, setup, body, check, 8000, 20};
    struct explore_case comb = {
        "mutex combine, 3 threads", 3, setup, body_combine, check_combine, 10000, 0};
    struct explore_case turns = {"mutex awake waiter, turns and woken timed lockers, 4 threads",
                                 4,
                                 setup,
                                 body_turns,
                                 check_turns,
                                 8000,
                                 20};
    struct explore_case lng = {"mutex long holder: a yielding watcher, late wake-ups, 3 threads",
                               3,
                               setup,
                               body_long,
                               check,
                               8000,
                               20};
    struct explore_case dl = {"mutex time-out decided after the deadline, 3 threads",
                              3,
                              setup_mutex_deadline,
                              body_deadline,
                              check_deadline,
                              8000,
                              20};
    struct explore_case rdl = {"robust mutex time-out decided after the deadline, 3 threads",
                               3,
                               setup_robust_deadline,
                               body_deadline,
                               check_deadline,
                               8000,
                               20};
    explore_spurious_rate = 300; /* the waiter must be back at odd moments */
    explore(&rdl);
    explore(&dl);
    explore_spurious_rate = 10;
    explore(&lock);
    explore(&turns);
    explore(&lng);
    explore(&comb);
    return 0;
}
