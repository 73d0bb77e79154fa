/* explore_mutex.c: sqf_mutex under the deterministic scheduler.
 * Safety: at most one thread inside, and every entry counted once.
 * Liveness: every schedule ends (no thread left asleep, no livelock),
 * through barging, spinning, sleeping, the starvation hand-off, unlock_fair
 * and timed locks that give up; and, with four threads, the awake waiter
 * (NEXT) asking for its turn (TURN), the designated woken sleeper (WOKEN),
 * and woken timed lockers that give up. */
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

static void critical(void)
{
    EXPLORE_REQUIRE(++inside == 1);
    dsched_yield();
    entries++;
    inside--;
}

static void body(int id, void *arg)
{
    (void)arg;
    for (int i = 0; i < 2; i++) {
        int r;
        if (id == 2 && i == 1) {
            r = sqf_mutex_timedlock(&mu, sqf_after(30000)); /* 30 simulated us */
            EXPLORE_REQUIRE(r == 0 || r == ETIMEDOUT);
            if (r) {
                timeouts++;
                continue;
            }
        } else {
            EXPLORE_REQUIRE(sqf_mutex_lock(&mu) == 0);
        }
        critical();
        r = id == 0 && i == 1 ? sqf_mutex_unlock_fair(&mu) : sqf_mutex_unlock(&mu);
        EXPLORE_REQUIRE(r == 0);
    }
}

static const char *check(void)
{
    if (inside != 0) return "a thread still inside";
    if (entries + timeouts != 6) return "entries lost or duplicated";
    if (sqf_mutex_trylock(&mu) != 0) return "the mutex is left locked";
    sqf_mutex_unlock(&mu);
    return NULL;
}

/* A runner re-taking the lock, two blocking lockers and a timed one with
 * deadlines short enough to expire while woken or watching. */
static void body_turns(int id, void *arg)
{
    (void)arg;
    int rounds = id == 0 ? 4 : 2;
    for (int i = 0; i < rounds; i++) {
        if (id == 3) {
            int r = sqf_mutex_timedlock(&mu, sqf_after(8000 + 6000 * i));
            EXPLORE_REQUIRE(r == 0 || r == ETIMEDOUT);
            if (r) {
                timeouts++;
                continue;
            }
        } else {
            EXPLORE_REQUIRE(sqf_mutex_lock(&mu) == 0);
        }
        critical();
        EXPLORE_REQUIRE(sqf_mutex_unlock(&mu) == 0);
    }
}

static const char *check_turns(void)
{
    if (inside != 0) return "a thread still inside";
    if (entries + timeouts != 10) return "entries lost or duplicated";
    if (sqf_mutex_trylock(&mu) != 0) return "the mutex is left locked";
    sqf_mutex_unlock(&mu);
    return NULL;
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
    explore(&lock);
    explore(&turns);
    explore(&comb);
    return 0;
}
