/* handoff_race.h: what explore_race.c and explore_loop.c share: a waiter
 * that gives up at the moment something is handed to it.
 *
 * A schedule gives up in one of three ways (`mode`): by the waiter's
 * deadline (short_ns from its start, from the seed: 10 to 160 steps), by a
 * token that a canceller thread cancels, or (loops only) by
 * sqf_loop_cancel.  The cancel lands, per the seed, at short_ns on the
 * clock or 0 to 7 steps after the holder announces a hand-off with
 * handing_off(), just before it releases (wait_for_moment).  Counters:
 * got (0), gaveup (the give-up code), bad_result (anything else), and
 * inside, for critical sections.  Helpers are static inline: each test
 * uses some of them.
 */
#ifndef SQF_TEST_HANDOFF_RACE_H
#define SQF_TEST_HANDOFF_RACE_H

#include <errno.h>

#include <squarefree.h>

#include "explore.h"

enum { BY_TIMEOUT, BY_CANCEL, BY_LOOP_CANCEL };
static int mode;
static sqf_cancel tok;
static int64_t short_ns;
static int near_handoff, near_steps, handed;
static int got, gaveup, inside, bad_result;

static inline void handing_off(void)
{
    handed = 1;
}

/* Every case's setup starts here (from the seed, so a replay has it too). */
static inline void race_reset(void)
{
    sqf_cancel_init(&tok, NULL, SQF_FOREVER);
    got = gaveup = inside = bad_result = handed = 0;
    short_ns = (int64_t)(10 + explore_seed * 37 % 151) * 1000;
    near_handoff = explore_seed / 8 % 2;
    near_steps = (int)(explore_seed / 16 % 8);
}

/* What the giving-up waiter passes to an _until form, and what it gets. */
static inline sqf_deadline until(void)
{
    return mode == BY_TIMEOUT ? sqf_after(short_ns) : SQF_FOREVER;
}
static inline const sqf_cancel *token(void)
{
    return mode == BY_CANCEL ? &tok : NULL;
}
static inline int gave_up(void)
{
    return mode == BY_TIMEOUT ? ETIMEDOUT : ECANCELED;
}

static inline void count(int r)
{
    if (r == 0)
        got++;
    else if (r == gave_up())
        gaveup++;
    else
        bad_result++;
}

/* Wait (in steps) for the moment to cancel, calling poll at each. */
static inline void wait_for_moment(void (*poll)(void))
{
    sqf_deadline at = sqf_after(short_ns);
    sqf_deadline fallback = sqf_after(1000 * 1000); /* in case nobody hands off */
    while (near_handoff ? !handed && sqf_now() < fallback : sqf_now() < at) {
        if (poll) poll();
        dsched_yield();
    }
    for (int k = near_handoff ? near_steps : 0; k > 0; k--) {
        if (poll) poll();
        dsched_yield();
    }
}

/* A case's threads run race_body: ids below `workers` run `worker`; in
 * BY_CANCEL runs one more, the last, cancels the token at the moment: in
 * half the schedules once the clock reaches short_ns, so the cancel lands
 * at every step of a run, not just its first few; in the other half 0 to 7
 * steps after the holder announced a hand-off, so that it often lands
 * between the hand-off's wake-up and the woken waiter's run. */
static int workers;
static void (*worker)(int id, void *arg);

static inline void race_body(int id, void *arg)
{
    if (id == workers) {
        wait_for_moment(NULL);
        EXPLORE_REQUIRE(sqf_cancel_cancel(&tok) == 0);
    } else {
        worker(id, arg);
    }
}

/* Long enough (in steps) that the others stop spinning and go to sleep. */
static inline void critical(int steps)
{
    EXPLORE_REQUIRE(++inside == 1);
    for (int i = 0; i < steps; i++)
        dsched_yield();
    inside--;
}

static int readers, writers;

static inline void read_section(void)
{
    readers++;
    EXPLORE_REQUIRE(writers == 0);
    dsched_yield();
    EXPLORE_REQUIRE(writers == 0);
    readers--;
}

static inline void write_section(void)
{
    EXPLORE_REQUIRE(++writers == 1 && readers == 0);
    dsched_yield();
    EXPLORE_REQUIRE(writers == 1 && readers == 0);
    writers--;
}

/* The roles the hand-off races share. */

/* The holder: hands the mutex off fairly, then wakes a waiter plainly. */
static inline void hold_mutex_twice(sqf_mutex *m)
{
    for (int i = 0; i < 2; i++) {
        EXPLORE_REQUIRE(sqf_mutex_lock(m) == 0);
        critical(30);
        handing_off();
        EXPLORE_REQUIRE((i ? sqf_mutex_unlock(m) : sqf_mutex_unlock_fair(m)) == 0);
    }
}

/* An untimed locker, twice (the second time often barging): must get through. */
static inline void lock_mutex_twice(sqf_mutex *m)
{
    for (int i = 0; i < 2; i++) {
        EXPLORE_REQUIRE(sqf_mutex_lock(m) == 0);
        critical(1);
        EXPLORE_REQUIRE(sqf_mutex_unlock(m) == 0);
    }
}

/* The writer whose unlock hands the rwlock over. */
static inline void hold_rwlock(sqf_rwlock *l)
{
    EXPLORE_REQUIRE(sqf_rwlock_wrlock(l) == 0);
    write_section();
    handing_off();
    EXPLORE_REQUIRE(sqf_rwlock_wrunlock(l) == 0);
}

/* The opener of a latch (count 1), a countdown (count 2) and an event, and
 * an untimed waiter on the three; *downs counts the countdown's downs. */
static inline void open_three(sqf_latch *l, sqf_countdown *c, sqf_event *e, int *downs)
{
    handing_off();
    EXPLORE_REQUIRE(sqf_latch_count_down(l, 1) == 0);
    for (int i = 0; i < 2; i++) {
        (*downs)++;
        EXPLORE_REQUIRE(sqf_countdown_down(c) == 0);
    }
    EXPLORE_REQUIRE(sqf_event_set(e) == 0);
}

static inline void wait_three(sqf_latch *l, sqf_countdown *c, sqf_event *e, const int *downs)
{
    EXPLORE_REQUIRE(sqf_latch_wait(l) == 0);
    EXPLORE_REQUIRE(sqf_countdown_wait(c) == 0);
    EXPLORE_REQUIRE(*downs == 2);
    EXPLORE_REQUIRE(sqf_event_wait(e) == 0);
}

#endif
