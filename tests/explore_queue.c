/* explore_queue.c: sqf_queue under the deterministic scheduler.
 * - producers and consumers through a queue of capacity 1, so that both
 *   sides sleep: every item popped exactly once, each producer's items in
 *   its order, nobody left asleep (a lost wake-up is a deadlock here);
 * - the same with batches (push_n, pop_n) on a queue of capacity 2;
 * - close racing sleepers: consumers pop until EPIPE while a producer
 *   pushes and closes; everything pushed is popped;
 * - time-outs racing hand-offs: a consumer with a deadline (time-outs fire
 *   at any step) beside a blocking one; no item is stranded with the
 *   blocking one asleep. */
#include <errno.h>
#include <stdlib.h>

#include <squarefree.h>

#include "explore.h"

enum { MAXITEMS = 8 };

static _Alignas(64) char qmem[1024];
static sqf_queue *q = (sqf_queue *)(void *)qmem;
static int popped[MAXITEMS]; /* times each item was popped */
static int last_of[4][2];    /* [consumer][producer]: last seq seen + 1 */
static int epipes, closers_done;

static void reset(size_t cap)
{
    if (sqf_queue_bytes(cap, sizeof(int)) > sizeof qmem) abort();
    sqf_queue_init(q, cap, sizeof(int), SQF_PRIVATE);
    for (int i = 0; i < MAXITEMS; i++)
        popped[i] = 0;
    for (int c = 0; c < 4; c++)
        last_of[c][0] = last_of[c][1] = 0;
    epipes = closers_done = 0;
}

/* Items are producer * 4 + seq. */
static void got(int consumer, int item)
{
    EXPLORE_REQUIRE(item >= 0 && item < MAXITEMS);
    if (item < 0 || item >= MAXITEMS) return;
    popped[item]++;
    int p = item / 4, s = item % 4;
    EXPLORE_REQUIRE(p < 2 && s + 1 > last_of[consumer][p]); /* in the producer's order */
    last_of[consumer][p] = s + 1;
}

static const char *all_once(int n_per_producer, int producers)
{
    for (int p = 0; p < producers; p++)
        for (int s = 0; s < n_per_producer; s++)
            if (popped[p * 4 + s] != 1) return "an item was lost or popped twice";
    if (sqf_queue_destroy(q) != 0) return "a waiter is still counted";
    return NULL;
}

/* --- 2 producers x 2 items, 2 consumers x 2 items, capacity 1 --- */
static void setup_pc(void)
{
    reset(1);
}

static void body_pc(int id, void *arg)
{
    (void)arg;
    if (id < 2) {
        for (int s = 0; s < 2; s++)
            EXPLORE_REQUIRE(sqf_queue_push(q, &(int){id * 4 + s}) == 0);
    } else {
        for (int k = 0; k < 2; k++) {
            int v = -1;
            EXPLORE_REQUIRE(sqf_queue_pop(q, &v) == 0);
            got(id - 2, v);
        }
    }
}

static const char *check_pc(void)
{
    return all_once(2, 2);
}

/* --- 2 producers x 1 item, 2 consumers x 1, capacity 4: a consumer woken
 * for the second item may find it behind the first, still being copied in,
 * and sleep again; the first item's publication must wake both --- */
static void setup_behind(void)
{
    reset(4);
}

static void body_behind(int id, void *arg)
{
    (void)arg;
    if (id < 2) {
        EXPLORE_REQUIRE(sqf_queue_push(q, &(int){id * 4}) == 0);
    } else {
        int v = -1;
        EXPLORE_REQUIRE(sqf_queue_pop(q, &v) == 0);
        got(id - 2, v);
    }
}

static const char *check_behind(void)
{
    return all_once(1, 2);
}

/* --- the same for room: a full queue of 2, 2 producers x 1 asleep, 2
 * consumers x 1: a producer woken for the second slot may find it behind
 * the first, still being copied out --- */
static void setup_room(void)
{
    reset(2);
    sqf_queue_push(q, &(int){1});
    sqf_queue_push(q, &(int){2});
}

static void body_room(int id, void *arg)
{
    (void)arg;
    if (id < 2) {
        EXPLORE_REQUIRE(sqf_queue_push(q, &(int){4 + id}) == 0);
    } else {
        int v = -1;
        EXPLORE_REQUIRE(sqf_queue_pop(q, &v) == 0);
        EXPLORE_REQUIRE(v >= 1 && v <= 5);
    }
}

static const char *check_room(void)
{
    if (sqf_queue_size(q) != 2) return "the producers' items are not both in";
    if (sqf_queue_destroy(q) != 0) return "a waiter is still counted";
    return NULL;
}

/* --- batches: a producer pushes 3 with push_n, another 1; two consumers
 * take 2 each with pop_n (as many as are there, at least one) --- */
static void setup_batch(void)
{
    reset(2);
}

static void body_batch(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        int items[3] = {0, 1, 2}, done = 0;
        while (done < 3) {
            size_t k = 0;
            EXPLORE_REQUIRE(
                sqf_queue_push_n(q, items + done, (size_t)(3 - done), &k, SQF_FOREVER, NULL) == 0);
            EXPLORE_REQUIRE(k >= 1);
            done += (int)k;
        }
    } else if (id == 1) {
        EXPLORE_REQUIRE(sqf_queue_push(q, &(int){4}) == 0);
    } else {
        int want = 2;
        while (want > 0) {
            int v[2] = {-1, -1};
            size_t k = 0;
            EXPLORE_REQUIRE(sqf_queue_pop_n(q, v, (size_t)want, &k, SQF_FOREVER, NULL) == 0);
            EXPLORE_REQUIRE(k >= 1 && k <= (size_t)want);
            for (size_t j = 0; j < k; j++)
                got(id - 2, v[j]);
            want -= (int)k;
        }
    }
}

static const char *check_batch(void)
{
    if (popped[4] != 1) return "the single push was lost or popped twice";
    return all_once(3, 1);
}

/* --- close racing sleepers --- */
static void setup_close(void)
{
    reset(1);
}

static void body_close(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        for (int s = 0; s < 2; s++)
            EXPLORE_REQUIRE(sqf_queue_push(q, &(int){s}) == 0);
        EXPLORE_REQUIRE(sqf_queue_close(q) == 0);
        EXPLORE_REQUIRE(sqf_queue_push(q, &(int){3}) == EPIPE);
    } else {
        int v, r;
        while ((r = sqf_queue_pop(q, &v)) == 0)
            got(id - 1, v);
        EXPLORE_REQUIRE(r == EPIPE);
        epipes++;
    }
}

static const char *check_close(void)
{
    if (epipes != 2) return "a consumer did not get EPIPE";
    return all_once(2, 1);
}

/* Close while another producer's push is in flight: consumers that went
 * back to sleep after the close's wake-up (the queue was not yet empty: an
 * item still being copied in) must all be woken again once it is. */
static int pushed_late;
static void setup_close_inflight(void)
{
    reset(2);
    pushed_late = 0;
}

static void body_close_inflight(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        EXPLORE_REQUIRE(sqf_queue_push(q, &(int){0}) == 0);
        EXPLORE_REQUIRE(sqf_queue_close(q) == 0);
    } else if (id == 1) {
        int r = sqf_queue_push(q, &(int){4});
        EXPLORE_REQUIRE(r == 0 || r == EPIPE);
        pushed_late = r == 0;
    } else {
        int v, r;
        while ((r = sqf_queue_pop(q, &v)) == 0)
            got(id - 2, v);
        EXPLORE_REQUIRE(r == EPIPE);
        epipes++;
    }
}

static const char *check_close_inflight(void)
{
    if (epipes != 3) return "a consumer did not get EPIPE";
    if (popped[4] != pushed_late) return "the late push was lost or popped twice";
    return all_once(1, 1);
}

/* --- time-outs racing hand-offs --- */
static void setup_timed(void)
{
    reset(1);
}

static void body_timed(int id, void *arg)
{
    (void)arg;
    int v, r;
    if (id == 0) {
        for (int s = 0; s < 3; s++)
            EXPLORE_REQUIRE(sqf_queue_push(q, &(int){s}) == 0);
        EXPLORE_REQUIRE(sqf_queue_close(q) == 0);
    } else if (id == 1) { /* blocking: must be woken for whatever is left */
        while ((r = sqf_queue_pop(q, &v)) == 0)
            got(0, v);
        EXPLORE_REQUIRE(r == EPIPE);
    } else { /* timed: its time-outs fire at any step */
        for (int tries = 0; tries < 3; tries++) {
            r = sqf_queue_pop_until(q, &v, sqf_after(5000), NULL);
            EXPLORE_REQUIRE(r == 0 || r == ETIMEDOUT || r == EPIPE);
            if (r == 0) got(1, v);
            if (r == EPIPE) break;
        }
    }
}

static const char *check_timed(void)
{
    return all_once(3, 1);
}

/* --- hand-off mode: a batch of 3 and 3 single pushes, 3 consumers x 2,
 * capacity 4 ---
 * Enough sleepers and items that a consumer starves (the explorer's bound
 * is 30 us) while others are held back behind it, and publications arrive
 * while it runs, so that hand-off mode also ends by a wake that finds it
 * awake: the held-back consumers must then be woken for every item. */
static void setup_hungry(void)
{
    reset(4);
}

static void body_hungry(int id, void *arg)
{
    (void)arg;
    if (id == 0) { /* one batch: the starving consumer takes one, and wakes the rest */
        int items[3] = {0, 1, 2};
        for (size_t done = 0, k = 0; done < 3; done += k)
            EXPLORE_REQUIRE(sqf_queue_push_n(q, items + done, 3 - done, &k, SQF_FOREVER, NULL) ==
                            0);
    } else if (id == 1) {
        for (int s = 0; s < 3; s++)
            EXPLORE_REQUIRE(sqf_queue_push(q, &(int){4 + s}) == 0);
    } else {
        for (int k = 0; k < 2; k++) {
            int v = -1;
            EXPLORE_REQUIRE(sqf_queue_pop(q, &v) == 0);
            got(id - 2, v);
        }
    }
}

static const char *check_hungry(void)
{
    return all_once(3, 2);
}

/* --- stress_queue's close round in small: a closer (after a varying
 * delay), 2 producers pushing until EPIPE, 2 consumers popping until EPIPE,
 * capacity 1: everything pushed is popped once, every consumer sees EPIPE,
 * nobody is left asleep. */
static int pushed_ok[2];
static void setup_close_race(void)
{
    reset(1);
    pushed_ok[0] = pushed_ok[1] = 0;
}

static void body_close_race(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        for (int i = 0; i < (int)(explore_seed / 7 % 60); i++)
            dsched_yield();
        EXPLORE_REQUIRE(sqf_queue_close(q) == 0);
    } else if (id <= 2) {
        int r = 0;
        for (int s = 0; s < 3 && (r = sqf_queue_push(q, &(int){(id - 1) * 4 + s})) == 0; s++)
            pushed_ok[id - 1]++;
        EXPLORE_REQUIRE(r == 0 || r == EPIPE);
    } else {
        int v, r;
        while ((r = sqf_queue_pop(q, &v)) == 0)
            got(id - 3, v);
        EXPLORE_REQUIRE(r == EPIPE);
        epipes++;
    }
}

static const char *check_close_race(void)
{
    if (epipes != 2) return "a consumer did not get EPIPE";
    for (int p = 0; p < 2; p++)
        for (int s = 0; s < 3; s++)
            if (popped[p * 4 + s] != (s < pushed_ok[p])) return "an item was lost or popped twice";
    if (sqf_queue_destroy(q) != 0) return "a waiter is still counted";
    return NULL;
}

int main(void)
{
    struct explore_case cases[] = {
        {"queue 2 producers, 2 consumers, capacity 1", 4, setup_pc, body_pc, check_pc, 8000, 0},
        {"queue an item behind one still being copied in", 4, setup_behind, body_behind,
         check_behind, 8000, 0},
        {"queue room behind a slot still being copied out", 4, setup_room, body_room, check_room,
         8000, 0},
        {"queue batches: push_n, pop_n, capacity 2", 4, setup_batch, body_batch, check_batch, 8000,
         0},
        {"queue close racing 2 sleeping consumers", 3, setup_close, body_close, check_close, 6000,
         0},
        {"queue close while a push is in flight, 3 consumers", 5, setup_close_inflight,
         body_close_inflight, check_close_inflight, 8000, 0},
        {"queue close racing 2 producers and 2 consumers", 5, setup_close_race, body_close_race,
         check_close_race, 8000, 0},
        {"queue hand-off mode: a batch and single pushes, 3 consumers x 2", 5, setup_hungry,
         body_hungry, check_hungry, 8000, 0},
        {"queue a timed consumer beside a blocking one", 3, setup_timed, body_timed, check_timed,
         8000, 100},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++)
        explore(&cases[i]);
    return 0;
}
