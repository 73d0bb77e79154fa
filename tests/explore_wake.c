/* explore_wake.c: the waking primitives under the deterministic scheduler.
 * - cond: two consumers, a producer that signals once per item (the glibc
 *   bug 25847 shape: a signal must not be consumed by a waiter that cannot
 *   use it while an eligible one sleeps on), and a broadcast with requeue
 *   onto the mutex, with a timed waiter; two broadcasts racing waiters that
 *   arrive between them and wait again (a return of 0 only after a
 *   notification made since the wait began, and nobody stranded on the
 *   mutex by a broadcast's requeue);
 * - event: waiters (one timed) and a setter; all untimed waiters return;
 * - latch: two counters and two waiters; nobody returns before count 0. */
#include <errno.h>

#include <squarefree.h>

#include "explore.h"

static sqf_mutex mu;
static sqf_cond cv;
static int items, consumed, flag, woke, timed_out;
static int notes, spurious, waits_done;

static void setup_cond(void)
{
    notes = spurious = waits_done = 0;
    sqf_mutex_init(&mu, SQF_PRIVATE);
    sqf_cond_init(&cv, SQF_PRIVATE);
    items = consumed = flag = woke = timed_out = 0;
}

static void body_signal(int id, void *arg)
{
    (void)arg;
    sqf_mutex_lock(&mu);
    if (id < 2) {
        while (items == 0)
            EXPLORE_REQUIRE(sqf_cond_wait(&cv, &mu) == 0);
        items--;
        consumed++;
    } else {
        for (int i = 0; i < 2; i++) {
            items++;
            EXPLORE_REQUIRE(sqf_cond_signal(&cv) == 0);
            sqf_mutex_unlock(&mu);
            dsched_yield();
            sqf_mutex_lock(&mu);
        }
    }
    sqf_mutex_unlock(&mu);
}

static const char *check_signal(void)
{
    return consumed == 2 && items == 0 ? NULL : "an item was not consumed";
}

static void body_broadcast(int id, void *arg)
{
    (void)arg;
    sqf_mutex_lock(&mu);
    if (id == 0) {
        flag = 1;
        EXPLORE_REQUIRE(sqf_cond_broadcast(&cv) == 0);
    } else if (id == 3) {
        int r = 0;
        while (!flag && r == 0)
            r = sqf_cond_timedwait(&cv, &mu, sqf_after(15000));
        EXPLORE_REQUIRE(r == 0 || r == ETIMEDOUT);
        if (flag)
            woke++;
        else
            timed_out++;
    } else {
        while (!flag)
            EXPLORE_REQUIRE(sqf_cond_wait(&cv, &mu) == 0);
        woke++;
    }
    sqf_mutex_unlock(&mu);
}

static const char *check_broadcast(void)
{
    if (woke + timed_out != 3) return "a waiter did not return";
    if (sqf_mutex_trylock(&mu) != 0) return "the mutex is left locked";
    sqf_mutex_unlock(&mu);
    return NULL;
}

/* Thread 0 broadcasts twice, each time under the mutex after bumping
 * `notes`; threads 1-3 wait until both have been made (thread 3 with
 * timed waits), recording `notes` before each wait.  A wait that returns 0
 * must find `notes` moved (a broadcast's requeue must not move a waiter
 * that arrived after it), and no untimed waiter may be left asleep (a
 * waiter moved onto the mutex must be woken through it). */
static void body_late(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        for (int k = 0; k < 2; k++) {
            sqf_mutex_lock(&mu);
            notes++;
            EXPLORE_REQUIRE(sqf_cond_broadcast(&cv) == 0);
            sqf_mutex_unlock(&mu);
            dsched_yield();
        }
        return;
    }
    sqf_mutex_lock(&mu);
    while (notes < 2) {
        int before = notes;
        int r = id == 3 ? sqf_cond_timedwait(&cv, &mu, sqf_after(40000)) : sqf_cond_wait(&cv, &mu);
        EXPLORE_REQUIRE(r == 0 || r == ETIMEDOUT);
        if (r == 0 && notes == before) spurious++;
    }
    waits_done++;
    sqf_mutex_unlock(&mu);
}

static const char *check_late(void)
{
    if (spurious) return "a cond wait returned 0 with no notification since it began";
    if (waits_done != 3) return "a waiter did not return";
    if (sqf_mutex_trylock(&mu) != 0) return "the mutex is left locked";
    sqf_mutex_unlock(&mu);
    return sqf_cond_destroy(&cv) == 0 ? NULL : "a waiter left counted";
}

static sqf_event ev;
static sqf_latch la;
static int returned, early;

static void setup_event(void)
{
    sqf_event_init(&ev, SQF_PRIVATE);
    sqf_latch_init(&la, 2, SQF_PRIVATE);
    returned = early = timed_out = 0;
    flag = 0;
}

static void body_event(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        flag = 1;
        EXPLORE_REQUIRE(sqf_event_set(&ev) == 0);
    } else if (id == 1) {
        int r = sqf_event_timedwait(&ev, sqf_after(10000));
        EXPLORE_REQUIRE(r == 0 || r == ETIMEDOUT);
        if (r == 0) {
            EXPLORE_REQUIRE(flag);
            returned++;
        } else {
            timed_out++;
        }
    } else {
        EXPLORE_REQUIRE(sqf_event_wait(&ev) == 0);
        EXPLORE_REQUIRE(flag); /* set's writes are visible after wait */
        returned++;
    }
}

static const char *check_event(void)
{
    return returned + timed_out == 3 ? NULL : "a waiter did not return";
}

static void body_latch(int id, void *arg)
{
    (void)arg;
    if (id < 2) {
        flag++;
        EXPLORE_REQUIRE(sqf_latch_count_down(&la, 1) == 0);
    } else {
        EXPLORE_REQUIRE(sqf_latch_wait(&la) == 0);
        if (flag != 2) early++;
        returned++;
    }
}

static const char *check_latch(void)
{
    if (early) return "a waiter returned before the count reached 0";
    return returned == 2 ? NULL : "a waiter did not return";
}

int main(void)
{
    struct explore_case sig = {"cond signal per item, 2 consumers (glibc 25847 shape)",
                               3,
                               setup_cond,
                               body_signal,
                               check_signal,
                               8000,
                               0};
    struct explore_case bc = {"cond broadcast with requeue and a timed waiter",
                              4,
                              setup_cond,
                              body_broadcast,
                              check_broadcast,
                              8000,
                              20};
    struct explore_case evc = {
        "event set, 2 waiters and a timed one", 4, setup_event, body_event, check_event, 10000, 20};
    struct explore_case lat = {
        "latch count 2, 2 waiters", 4, setup_event, body_latch, check_latch, 15000, 0};
    struct explore_case late = {"cond broadcasts racing waiters that arrive between them",
                                4,
                                setup_cond,
                                body_late,
                                check_late,
                                8000,
                                20};
    explore(&sig);
    explore(&bc);
    explore_spurious_rate = 200; /* sleepers back at odd moments, REQUEUE still set */
    explore(&late);
    explore_spurious_rate = 10;
    explore(&evc);
    explore(&lat);
    return 0;
}
