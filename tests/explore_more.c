/* explore_more.c: once, barrier, rwlock, countdown and cancellation under
 * the deterministic scheduler.
 * - once: fn runs exactly once, first attempt failing (nonzero) so another
 *   caller retries; every caller that returns 0 sees fn's effect;
 * - barrier: 3 parties, 2 phases; nobody leaves a phase before all arrived;
 *   indices of a phase are distinct; an abort breaks the phase for every
 *   waiter, and after a reset a full phase completes; an abort racing two
 *   phases' releases (whose publishes to the release word may then land
 *   after the abort's) releases each phase for both parties or for neither;
 *   a reset racing an arrival of the fresh phase (which may find the release
 *   word still showing the broken phase) completes that phase; at the end
 *   the release word shows the arrival word's phase and BROKEN, and no
 *   WAITERS;
 * - rwlock: writers exclusive, readers only with readers, a timed writer;
 *   and with the writers' stall checks firing often, so that released
 *   readers are revoked while others arrive and register;
 * - countdown: up/down from several threads; wait returns only at 0;
 * - cancellation: a lock wait cancelled while the holder unlocks never
 *   strands the lock nor takes it twice. */
#include <errno.h>

#include <squarefree.h>

#include "barrier_word.h"
#include "explore.h"

/* --- once ----------------------------------------------------------------- */
static sqf_once once;
static int runs, attempts, effect;

static int once_fn(void *arg)
{
    (void)arg;
    dsched_yield();
    if (attempts++ == 0) return EIO; /* the first attempt fails: not done */
    effect = 1;
    runs++;
    return 0;
}

static void setup_once(void)
{
    sqf_once_init(&once, SQF_PRIVATE);
    runs = attempts = effect = 0;
}

static void body_once(int id, void *arg)
{
    (void)id;
    (void)arg;
    int r = sqf_once_run(&once, once_fn, NULL);
    EXPLORE_REQUIRE(r == 0 || r == EIO);
    if (r == 0) EXPLORE_REQUIRE(effect == 1);
}

static const char *check_once(void)
{
    if (runs != 1) return "fn succeeded other than once";
    if (!sqf_once_done(&once)) return "the once is not done";
    return NULL;
}

/* --- barrier -------------------------------------------------------------------- */
static sqf_barrier bar;
static int arrived[2], seen_index[2];

static void setup_barrier(void)
{
    sqf_barrier_init(&bar, 3, SQF_PRIVATE);
    arrived[0] = arrived[1] = seen_index[0] = seen_index[1] = 0;
}

static void body_barrier(int id, void *arg)
{
    (void)id;
    (void)arg;
    for (int p = 0; p < 2; p++) {
        arrived[p]++;
        unsigned idx = 99;
        EXPLORE_REQUIRE(sqf_barrier_wait(&bar, &idx) == 0);
        EXPLORE_REQUIRE(arrived[p] == 3); /* nobody leaves before all arrived */
        EXPLORE_REQUIRE(idx < 3 && !(seen_index[p] & (1 << idx)));
        seen_index[p] |= 1 << (idx < 3 ? idx : 0);
    }
}

static const char *check_published(void);

static const char *check_barrier(void)
{
    if (seen_index[0] != 7 || seen_index[1] != 7) return "a party missing from a phase";
    return check_published();
}

/* --- barrier abort, then reset and a full phase ------------------------------ */
static sqf_countdown out; /* the two parties that saw the break and left */
static sqf_event reset_done;
static int bres[2][3];

static void setup_abort(void)
{
    sqf_barrier_init(&bar, 3, SQF_PRIVATE);
    sqf_countdown_init(&out, 2, SQF_PRIVATE);
    sqf_event_init(&reset_done, SQF_PRIVATE);
    for (int i = 0; i < 3; i++)
        bres[0][i] = bres[1][i] = -1;
}

static void body_abort(int id, void *arg)
{
    (void)arg;
    if (id == 2) { /* breaks the first phase, repairs the barrier, joins the second */
        bres[0][2] = sqf_barrier_abort(&bar);
        EXPLORE_REQUIRE(sqf_countdown_wait(&out) == 0);
        EXPLORE_REQUIRE(sqf_barrier_reset(&bar) == 0); /* nobody is inside */
        EXPLORE_REQUIRE(sqf_event_set(&reset_done) == 0);
    } else {
        bres[0][id] = sqf_barrier_wait(&bar, NULL);
        EXPLORE_REQUIRE(sqf_countdown_down(&out) == 0);
        EXPLORE_REQUIRE(sqf_event_wait(&reset_done) == 0);
    }
    bres[1][id] = sqf_barrier_wait(&bar, NULL);
}

static const char *check_abort(void)
{
    if (bres[0][0] != EPIPE || bres[0][1] != EPIPE || bres[0][2] != 0)
        return "the aborted phase did not break for every waiter";
    if (bres[1][0] || bres[1][1] || bres[1][2]) return "the phase after reset did not complete";
    return NULL;
}

/* Everything changed in the arrival word was published to the release word,
 * and the last publish cleared WAITERS (nobody waits at the end of a run). */
static const char *check_published(void)
{
    uint32_t w = at_load(ba_word(&bar), SC), r = at_load(ba_release(&bar), SC);
    if ((r & (BA_PHASE | BA_BROKEN)) != (w & (BA_PHASE | BA_BROKEN)))
        return "the release word does not show the arrival word's phase and BROKEN";
    if (r & BA_WAITERS) return "WAITERS left on the release word";
    if (at_load(ba_waiters(&bar), SC)) return "a waiter left counted";
    return NULL;
}

/* --- barrier: an abort racing the releases of two phases --------------------- */
static int rres[2][2];

static void setup_release_abort(void)
{
    sqf_barrier_init(&bar, 2, SQF_PRIVATE);
    for (int i = 0; i < 2; i++)
        rres[0][i] = rres[1][i] = -1;
}

static void body_release_abort(int id, void *arg)
{
    (void)arg;
    if (id == 2) {
        EXPLORE_REQUIRE(sqf_barrier_abort(&bar) == 0);
        return;
    }
    for (int p = 0; p < 2; p++) {
        rres[p][id] = sqf_barrier_wait(&bar, NULL);
        if (rres[p][id]) break; /* broken for good: the other leaves too */
    }
}

static const char *check_release_abort(void)
{
    for (int p = 0; p < 2; p++) {
        if (rres[p][0] != rres[p][1]) return "a phase released for one party only";
        if (rres[p][0] != 0 && rres[p][0] != EPIPE && rres[p][0] != -1)
            return "a wait returned neither 0 nor EPIPE";
    }
    if (rres[0][0] == EPIPE && rres[1][0] != -1) return "a wait after a break";
    const char *e = check_published();
    if (e) return e;
    if (!(at_load(ba_word(&bar), SC) & BA_BROKEN)) return "the abort did not stick";
    if (sqf_barrier_reset(&bar) != 0) return "reset failed after the break";
    return check_published();
}

/* --- barrier: a reset racing an arrival in the fresh phase ---------------------- */
static sqf_event left1, reset_done1;
static int fres[2];

static void setup_reset_race(void)
{
    sqf_barrier_init(&bar, 2, SQF_PRIVATE);
    sqf_barrier_abort(&bar); /* broken before the run */
    sqf_event_init(&left1, SQF_PRIVATE);
    sqf_event_init(&reset_done1, SQF_PRIVATE);
    fres[0] = fres[1] = -1;
}

static void body_reset_race(int id, void *arg)
{
    (void)arg;
    if (id == 0) {
        int r = sqf_barrier_reset(&bar);
        if (r == EBUSY) { /* thread 1 is inside: it will leave with EPIPE */
            EXPLORE_REQUIRE(sqf_event_wait(&left1) == 0);
            r = sqf_barrier_reset(&bar);
        }
        EXPLORE_REQUIRE(r == 0);
        EXPLORE_REQUIRE(sqf_event_set(&reset_done1) == 0);
        fres[0] = sqf_barrier_wait(&bar, NULL);
    } else {
        /* Arrives before the reset (EPIPE), or after its change of the
         * arrival word, maybe before its publish (then it must sleep). */
        int r = sqf_barrier_wait(&bar, NULL);
        if (r == EPIPE) {
            EXPLORE_REQUIRE(sqf_event_set(&left1) == 0);
            EXPLORE_REQUIRE(sqf_event_wait(&reset_done1) == 0);
            r = sqf_barrier_wait(&bar, NULL);
        }
        fres[1] = r;
    }
}

static const char *check_reset_race(void)
{
    if (fres[0] != 0 || fres[1] != 0) return "the phase after reset did not complete";
    return check_published();
}

/* --- rwlock ----------------------------------------------------------------------- */
static sqf_rwlock rw;
static int readers, writers, done_ops, gaveup;
static int nreaders, nthreads; /* threads 0..nreaders-1 read, the rest write */
static int untimed;            /* every writer waits without a deadline */

static void setup_rw(void)
{
    sqf_rwlock_init(&rw, SQF_PRIVATE);
    readers = writers = done_ops = gaveup = untimed = 0;
    nreaders = 2;
    nthreads = 4;
}

static void setup_rw_3r2w(void)
{
    setup_rw();
    nreaders = 3;
    nthreads = 5;
}

/* Writers wait untimed, so every time-out the schedule fires is a writer's
 * stall check: released readers are revoked whenever they have not all
 * claimed their places, while other readers arrive and register. */
static void setup_rw_revoke(void)
{
    setup_rw_3r2w();
    untimed = 1;
}

static void body_rw(int id, void *arg)
{
    (void)arg;
    for (int i = 0; i < 2; i++) {
        if (id < nreaders) {
            EXPLORE_REQUIRE(sqf_rwlock_rdlock(&rw) == 0);
            readers++;
            EXPLORE_REQUIRE(writers == 0);
            dsched_yield();
            EXPLORE_REQUIRE(writers == 0);
            readers--;
            EXPLORE_REQUIRE(sqf_rwlock_rdunlock(&rw) == 0);
        } else {
            int r = id == nthreads - 1 && i == 1 && !untimed
                        ? sqf_rwlock_timedwrlock(&rw, sqf_after(20000))
                        : sqf_rwlock_wrlock(&rw);
            EXPLORE_REQUIRE(r == 0 || r == ETIMEDOUT);
            if (r) {
                gaveup++;
                continue;
            }
            EXPLORE_REQUIRE(++writers == 1 && readers == 0);
            dsched_yield();
            EXPLORE_REQUIRE(writers == 1 && readers == 0);
            writers--;
            EXPLORE_REQUIRE(sqf_rwlock_wrunlock(&rw) == 0);
        }
        done_ops++;
    }
}

static const char *check_rw(void)
{
    if (done_ops + gaveup != 2 * nthreads) return "an operation neither completed nor gave up";
    if (sqf_rwlock_trywrlock(&rw) != 0) return "the lock is left held";
    sqf_rwlock_wrunlock(&rw);
    return NULL;
}

/* --- countdown ---------------------------------------------------------------------- */
static sqf_countdown cd;
static int work_done, early;

static void setup_cd(void)
{
    sqf_countdown_init(&cd, 2, SQF_PRIVATE);
    work_done = early = 0;
}

static void body_cd(int id, void *arg)
{
    (void)arg;
    if (id == 0) { /* adds one more unit of work, finishes both of its own */
        EXPLORE_REQUIRE(sqf_countdown_up(&cd, 1) == 0);
        work_done++;
        EXPLORE_REQUIRE(sqf_countdown_down(&cd) == 0);
        work_done++;
        EXPLORE_REQUIRE(sqf_countdown_down(&cd) == 0);
    } else if (id == 1) {
        work_done++;
        EXPLORE_REQUIRE(sqf_countdown_down(&cd) == 0);
    } else {
        EXPLORE_REQUIRE(sqf_countdown_wait(&cd) == 0);
        /* Thread 0 raises the count before its own downs, so it reaches 0
         * only after all three units of work. */
        if (work_done < 3) early++;
    }
}

static const char *check_cd(void)
{
    unsigned v = 99;
    sqf_countdown_value(&cd, &v);
    if (v != 0) return "the count is not 0 at the end";
    return early ? "a waiter returned while work was pending" : NULL;
}

/* --- cancellation ------------------------------------------------------------------------ */
static sqf_mutex cmu;
static sqf_cancel tok;
static int holders, got, cancelled;

static void setup_cancel(void)
{
    sqf_mutex_init(&cmu, SQF_PRIVATE);
    sqf_cancel_init(&tok, NULL, SQF_FOREVER);
    holders = got = cancelled = 0;
}

static void body_cancel(int id, void *arg)
{
    (void)arg;
    if (id == 2) {
        EXPLORE_REQUIRE(sqf_cancel_cancel(&tok) == 0);
        return;
    }
    int r = id == 0 ? sqf_mutex_lock(&cmu) : sqf_mutex_lock_until(&cmu, SQF_FOREVER, &tok);
    EXPLORE_REQUIRE(r == 0 || (id == 1 && r == ECANCELED));
    if (r) {
        cancelled++;
        return;
    }
    EXPLORE_REQUIRE(++holders == 1);
    dsched_yield();
    holders--;
    got++;
    EXPLORE_REQUIRE(sqf_mutex_unlock(&cmu) == 0);
}

static const char *check_cancel(void)
{
    if (got + cancelled != 2) return "a locker neither got the lock nor was cancelled";
    if (sqf_mutex_trylock(&cmu) != 0) return "the mutex is left locked";
    sqf_mutex_unlock(&cmu);
    return NULL;
}

int main(void)
{
    struct explore_case cases[] = {
        {"once, first attempt fails, 3 callers", 3, setup_once, body_once, check_once, 15000, 0},
        {"barrier 3 parties, 2 phases", 3, setup_barrier, body_barrier, check_barrier, 6000, 0},
        {"barrier abort, reset, then a full phase", 3, setup_abort, body_abort, check_abort, 6000,
         0},
        {"barrier abort racing two phases' releases", 3, setup_release_abort, body_release_abort,
         check_release_abort, 6000, 0},
        {"barrier reset racing an arrival in the fresh phase", 2, setup_reset_race, body_reset_race,
         check_reset_race, 4000, 0},
        {"rwlock 2 readers, 2 writers (one timed)", 4, setup_rw, body_rw, check_rw, 6000, 20},
        {"rwlock 3 readers, 2 writers (one timed)", 5, setup_rw_3r2w, body_rw, check_rw, 6000, 20},
        {"rwlock 3 readers, 2 writers, stall checks firing", 5, setup_rw_revoke, body_rw, check_rw,
         6000, 150},
        {"countdown up/down/wait", 3, setup_cd, body_cd, check_cd, 9000, 0},
        {"mutex lock cancelled while the holder unlocks", 3, setup_cancel, body_cancel,
         check_cancel, 5000, 0},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++)
        explore(&cases[i]);
    return 0;
}
