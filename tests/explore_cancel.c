/* explore_cancel.c: sqf_cancel tokens racing hand-offs, under the
 * deterministic scheduler.  A waiter whose token is cancelled while a
 * permit, a signal, the lock or the run's end is on its way to it returns
 * either 0 having taken it, or ECANCELED having taken nothing; a wake-up it
 * does not use goes to the others, whom the deadlock detection watches.
 * - sem: two releases, a cancellable and a plain acquirer: conservation;
 * - cond: two items signalled one by one, a cancellable and a plain waiter;
 * - rwlock: a cancellable writer queued ahead of a reader (a writer that
 *   leaves must let the reader in), and a cancellable reader;
 * - once: a cancellable caller while another runs fn;
 * - latch, event, countdown and barrier: a cancellable waiter as the
 *   count reaches zero, the event is set, or the phase is released (a
 *   cancelled barrier party breaks the phase for all, as a time-out does).
 */
#include <errno.h>

#include <squarefree.h>

#include "explore.h"

static sqf_cancel tok;
static int got, cancelled, bad_result;

static void reset(void)
{
    sqf_cancel_init(&tok, NULL, SQF_FOREVER);
    got = cancelled = bad_result = 0;
}

static void count(int r)
{
    if (r == 0)
        got++;
    else if (r == ECANCELED)
        cancelled++;
    else
        bad_result++;
}

/* The canceller is always the last thread. */
static void cancel_now(void)
{
    EXPLORE_REQUIRE(sqf_cancel_cancel(&tok) == 0);
}

/* --- sem ------------------------------------------------------------------ */
static sqf_sem sem;

static void setup_sem(void)
{
    sqf_sem_init(&sem, 0, 0, SQF_PRIVATE);
    reset();
}

static void body_sem(int id, void *arg)
{
    (void)arg;
    switch (id) {
    case 0:
        EXPLORE_REQUIRE(sqf_sem_release(&sem, 1) == 0);
        dsched_yield();
        EXPLORE_REQUIRE(sqf_sem_release(&sem, 1) == 0);
        break;
    case 1:
        count(sqf_sem_acquire_until(&sem, SQF_FOREVER, &tok));
        break;
    case 2:
        EXPLORE_REQUIRE(sqf_sem_acquire(&sem) == 0);
        break;
    default:
        cancel_now();
        break;
    }
}

static const char *check_sem(void)
{
    unsigned v = 99;
    sqf_sem_getvalue(&sem, &v);
    if (bad_result) return "acquire_until returned neither 0 nor ECANCELED";
    if ((int)v != 2 - 1 - got) return "a permit was lost or duplicated";
    return NULL;
}

/* --- cond ----------------------------------------------------------------- */
static sqf_mutex mu;
static sqf_cond cv;
static int items;

static void setup_cond(void)
{
    sqf_mutex_init(&mu, SQF_PRIVATE);
    sqf_cond_init(&cv, SQF_PRIVATE);
    items = 0;
    reset();
}

static void body_cond(int id, void *arg)
{
    (void)arg;
    if (id == 3) {
        cancel_now();
        return;
    }
    sqf_mutex_lock(&mu);
    if (id == 0) {
        for (int i = 0; i < 2; i++) {
            items++;
            EXPLORE_REQUIRE(sqf_cond_signal(&cv) == 0);
            sqf_mutex_unlock(&mu);
            dsched_yield();
            sqf_mutex_lock(&mu);
        }
    } else if (id == 1) {
        int r = 0;
        while (items == 0 && r == 0)
            r = sqf_cond_wait_until(&cv, &mu, SQF_FOREVER, &tok);
        if (r != 0 && r != ECANCELED) bad_result++;
        if (items > 0) { /* an item counts, cancelled or not */
            items--;
            got++;
        } else {
            cancelled++;
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
    if (bad_result) return "wait_until returned neither 0 nor ECANCELED";
    if (items != 2 - 1 - got) return "an item was lost or duplicated";
    return NULL;
}

/* --- rwlock --------------------------------------------------------------- */
static sqf_rwlock rw;
static int readers, writers;

static void setup_rw(void)
{
    sqf_rwlock_init(&rw, SQF_PRIVATE);
    readers = writers = 0;
    reset();
}

static void body_rw(int id, void *arg)
{
    (void)arg;
    int r;
    switch (id) {
    case 0: /* the holder */
        EXPLORE_REQUIRE(sqf_rwlock_wrlock(&rw) == 0);
        EXPLORE_REQUIRE(++writers == 1 && readers == 0);
        dsched_yield();
        dsched_yield();
        writers--;
        EXPLORE_REQUIRE(sqf_rwlock_wrunlock(&rw) == 0);
        break;
    case 1: /* a cancellable writer */
        r = sqf_rwlock_wrlock_until(&rw, SQF_FOREVER, &tok);
        count(r);
        if (r == 0) {
            EXPLORE_REQUIRE(++writers == 1 && readers == 0);
            dsched_yield();
            writers--;
            EXPLORE_REQUIRE(sqf_rwlock_wrunlock(&rw) == 0);
        }
        break;
    case 2: /* a cancellable reader and a plain one */
    case 3:
        r = id == 2 ? sqf_rwlock_rdlock_until(&rw, SQF_FOREVER, &tok) : sqf_rwlock_rdlock(&rw);
        if (id == 2) count(r);
        EXPLORE_REQUIRE(id == 2 || r == 0);
        if (r == 0) {
            readers++;
            EXPLORE_REQUIRE(writers == 0);
            dsched_yield();
            readers--;
            EXPLORE_REQUIRE(sqf_rwlock_rdunlock(&rw) == 0);
        }
        break;
    default:
        cancel_now();
        break;
    }
}

static const char *check_rw(void)
{
    if (bad_result) return "a lock_until returned neither 0 nor ECANCELED";
    if (sqf_rwlock_trywrlock(&rw) != 0) return "the lock is left held";
    sqf_rwlock_wrunlock(&rw);
    return NULL;
}

/* --- once ----------------------------------------------------------------- */
static sqf_once once;
static int runs, effect;

static int once_fn(void *arg)
{
    (void)arg;
    dsched_yield();
    effect = 1;
    runs++;
    return 0;
}

static void setup_once(void)
{
    sqf_once_init(&once, SQF_PRIVATE);
    runs = effect = 0;
    reset();
}

static void body_once(int id, void *arg)
{
    (void)arg;
    int r;
    switch (id) {
    case 0:
        EXPLORE_REQUIRE(sqf_once_run(&once, once_fn, NULL) == 0);
        EXPLORE_REQUIRE(effect == 1);
        break;
    case 1:
        r = sqf_once_run_until(&once, once_fn, NULL, SQF_FOREVER, &tok);
        count(r);
        if (r == 0) EXPLORE_REQUIRE(effect == 1);
        break;
    default:
        cancel_now();
        break;
    }
}

static const char *check_once(void)
{
    if (bad_result) return "run_until returned neither 0 nor ECANCELED";
    return runs == 1 ? NULL : "fn ran other than once";
}

/* --- latch, event, countdown, barrier ------------------------------------- */
static sqf_latch latch;
static sqf_event ev;
static sqf_countdown cd;
static sqf_barrier bar;
static int opened, bres[3];

static void setup_open(void)
{
    sqf_latch_init(&latch, 1, SQF_PRIVATE);
    sqf_event_init(&ev, SQF_PRIVATE);
    sqf_countdown_init(&cd, 1, SQF_PRIVATE);
    opened = 0;
    reset();
}

static void body_open(int id, void *arg)
{
    (void)arg;
    int r;
    switch (id) {
    case 0: /* opens all three */
        opened = 1;
        EXPLORE_REQUIRE(sqf_latch_count_down(&latch, 1) == 0);
        EXPLORE_REQUIRE(sqf_event_set(&ev) == 0);
        EXPLORE_REQUIRE(sqf_countdown_down(&cd) == 0);
        break;
    case 1: /* cancellable waits on each */
        r = sqf_latch_wait_until(&latch, SQF_FOREVER, &tok);
        count(r);
        if (r == 0) EXPLORE_REQUIRE(opened);
        count(sqf_event_wait_until(&ev, SQF_FOREVER, &tok));
        count(sqf_countdown_wait_until(&cd, SQF_FOREVER, &tok));
        break;
    case 2: /* plain waits: must all return */
        EXPLORE_REQUIRE(sqf_latch_wait(&latch) == 0);
        EXPLORE_REQUIRE(sqf_event_wait(&ev) == 0);
        EXPLORE_REQUIRE(sqf_countdown_wait(&cd) == 0);
        EXPLORE_REQUIRE(opened);
        break;
    default:
        cancel_now();
        break;
    }
}

static const char *check_open(void)
{
    return bad_result ? "a wait_until returned neither 0 nor ECANCELED" : NULL;
}

static void setup_barrier(void)
{
    sqf_barrier_init(&bar, 3, SQF_PRIVATE);
    bres[0] = bres[1] = bres[2] = -1;
    reset();
}

static void body_barrier(int id, void *arg)
{
    (void)arg;
    if (id == 3)
        cancel_now();
    else
        bres[id] = id == 1 ? sqf_barrier_wait_until(&bar, SQF_FOREVER, &tok, NULL, NULL, NULL)
                           : sqf_barrier_wait(&bar, NULL);
}

static const char *check_barrier(void)
{
    if (bres[0] == 0 && bres[1] == 0 && bres[2] == 0) return NULL;
    if (bres[1] == ECANCELED && bres[0] == EPIPE && bres[2] == EPIPE)
        return sqf_barrier_reset(&bar) == 0 ? NULL : "reset failed after a break";
    return "a phase neither completed for all nor broke for all";
}

int main(void)
{
    struct explore_case cases[] = {
        {"cancel racing a hand-off: sem", 4, setup_sem, body_sem, check_sem, 5000, 0},
        {"cancel racing a hand-off: cond", 4, setup_cond, body_cond, check_cond, 5000, 0},
        {"cancel racing a hand-off: rwlock writer ahead of a reader", 5, setup_rw, body_rw,
         check_rw, 5000, 0},
        {"cancel racing a hand-off: once", 3, setup_once, body_once, check_once, 5000, 0},
        {"cancel racing a hand-off: latch, event, countdown", 4, setup_open, body_open, check_open,
         5000, 0},
        {"cancel racing a hand-off: barrier", 4, setup_barrier, body_barrier, check_barrier, 5000,
         0},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++)
        explore(&cases[i]);
    return 0;
}
