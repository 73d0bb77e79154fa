/* explore_stale.c: named regression, "a deadline checked against a stale
 * read", under the deterministic scheduler (whose clock reads are
 * scheduling points, so others can act between a waiter's look at the state
 * and its look at the clock).
 *
 * The shape: a timed waiter reads the state (not ready), is preempted, the
 * state becomes ready (count zero, run done, event set, latch open) BEFORE
 * the waiter's deadline, the deadline passes, and the waiter, deciding on
 * its old read, returns ETIMEDOUT for a wait that was satisfied in time.
 * The check is sound: the opener records the clock after its call returns,
 * which is no earlier than the moment the state became ready; if that is
 * before the deadline, ETIMEDOUT is wrong (nothing here ever un-readies the
 * state).  Found by review in countdown.c (the first check, before the
 * waiter counts itself) and once.c (the check before sleeping).
 */
#include <errno.h>

#include <squarefree.h>

#include "explore.h"

static sqf_countdown cd;
static sqf_once once;
static sqf_event ev;
static sqf_latch latch;

enum { CD, ONCE, EV, LATCH, KINDS };
static sqf_deadline deadline; /* set by the waiter as it starts */
static int64_t delay_ns;
static sqf_deadline ready_at[KINDS]; /* 0: not yet */
static int result[KINDS];

static int fn(void *arg)
{
    (void)arg;
    dsched_yield();
    return 0;
}

static void setup(void)
{
    sqf_countdown_init(&cd, 1, SQF_PRIVATE);
    sqf_once_init(&once, SQF_PRIVATE);
    sqf_event_init(&ev, SQF_PRIVATE);
    sqf_latch_init(&latch, 1, SQF_PRIVATE);
    for (int k = 0; k < KINDS; k++) {
        ready_at[k] = 0;
        result[k] = -1;
    }
    /* The deadline, 1 to 16 simulated microseconds (steps) after the waiter
     * starts: around when the opener acts, so that the opening falls
     * between the waiter's two looks. */
    delay_ns = (int64_t)(1 + explore_seed * 7 % 16) * 1000;
    deadline = SQF_FOREVER;
}

/* Thread 0 makes the case's state ready; thread 1 waits for it with the
 * deadline; for the once, thread 2 calls it too, so that the run and the
 * waits interleave in more ways. */
static int kind;

static void body(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        switch (kind) {
        case CD:
            EXPLORE_REQUIRE(sqf_countdown_down(&cd) == 0);
            break;
        case ONCE:
            EXPLORE_REQUIRE(sqf_once_run(&once, fn, NULL) == 0);
            break;
        case EV:
            EXPLORE_REQUIRE(sqf_event_set(&ev) == 0);
            break;
        default:
            EXPLORE_REQUIRE(sqf_latch_count_down(&latch, 1) == 0);
            break;
        }
        ready_at[kind] = sqf_now();
        /* Go on running a little: the clock advances only at scheduling
         * points, so a waiter that read it right after us would read the
         * same instant if we simply ended here. */
        dsched_yield();
        dsched_yield();
    } else if (id == 1) {
        deadline = sqf_after(delay_ns);
        switch (kind) {
        case CD:
            result[CD] = sqf_countdown_timedwait(&cd, deadline);
            break;
        case ONCE:
            result[ONCE] = sqf_once_run_until(&once, fn, NULL, deadline, NULL);
            break;
        case EV:
            result[EV] = sqf_event_timedwait(&ev, deadline);
            break;
        default:
            result[LATCH] = sqf_latch_timedwait(&latch, deadline);
            break;
        }
    } else {
        EXPLORE_REQUIRE(sqf_once_run(&once, fn, NULL) == 0);
    }
}

static const char *check(void)
{
    static const char *what[KINDS] = {
        "countdown_timedwait returned ETIMEDOUT for a count that reached zero before its deadline",
        "once_run_until returned ETIMEDOUT for a run that ended before its deadline",
        "event_timedwait returned ETIMEDOUT for an event set before its deadline",
        "latch_timedwait returned ETIMEDOUT for a latch opened before its deadline"};
    if (result[kind] != 0 && result[kind] != ETIMEDOUT)
        return "a timed wait returned neither 0 nor ETIMEDOUT";
    if (result[kind] == ETIMEDOUT && ready_at[kind] && ready_at[kind] + explore_drain() < deadline)
        return what[kind];
    return NULL;
}

int main(void)
{
    static const char *names[KINDS] = {"a deadline checked against a stale read: countdown",
                                       "a deadline checked against a stale read: once",
                                       "a deadline checked against a stale read: event",
                                       "a deadline checked against a stale read: latch"};
    for (kind = 0; kind < KINDS; kind++) {
        struct explore_case c = {names[kind], kind == ONCE ? 3 : 2, setup, body, check, 5000, 20};
        explore(&c);
    }
    return 0;
}
