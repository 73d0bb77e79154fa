/* stress_cancel_handoff.c: named regressions, "a token firing during a
 * hand-off", on the real wait backend.
 *
 * The shape: threads wait with one cancellation token on a lock that is
 * handed to one of them, and the token is cancelled right after the hand-
 * off, before the chosen thread has run.  Both wake-ups then reach that
 * sleeper.  On Linux, futex_waitv counts it woken through both words but
 * reports only one of them; if the library then believes it was woken by
 * the token alone, the hand-off is swallowed: the lock stays reserved for a
 * thread that has left (mutex word LOCKED | PARKED | HANDOFF with no owner,
 * rwlock state WRITER | HANDOFF | WSLEEP), and everyone after it sleeps for
 * ever.  The un-fixed seam (primitive word first in the vector) failed every
 * case here within a few dozen rounds.
 *
 * Cases: mutex unlock_fair; mutex starvation hand-off (a sleeper older than
 * the starvation bound makes a plain unlock hand off); rwlock writer
 * hand-off (wrunlock passing the turn); cond broadcast (requeue onto the
 * mutex) followed by unlock_fair.  The unlocker cancels the token itself,
 * right after the hand-off, so that both wake-ups land within microseconds.
 *
 * Each round checks: every waiter returns (a bounded join: a hang fails the
 * test instead of stalling it), each returns 0 (and then holds the lock) or
 * ECANCELED, and the lock is free afterwards. */
#include <errno.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <squarefree/cancel.h>
#include <squarefree/cond.h>
#include <squarefree/mutex.h>
#include <squarefree/rwlock.h>

#include "atomic.h"
#include "check.h"
#include "mutex_word.h"

#define WAITERS 3

static sqf_cancel tok;
static sqf_mutex mu;
static sqf_rwlock rw;
static sqf_cond cv;
static int flag;                       /* cond case: guarded by mu */
static sqf_word got, cancelled, other; /* results of this round */
static sqf_word inside;                /* threads in a critical section */
static const char *current = "";

static void count(int r)
{
    at_add(r == 0 ? &got : r == ECANCELED ? &cancelled : &other, 1, RLX);
}

static void enter(void)
{
    CHECK_EQ(at_add(&inside, 1, RLX), 0);
    at_sub(&inside, 1, RLX);
}

static void sleep_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* Wait (bounded) until `pred` holds, then a little longer, so that the
 * waiters have stopped spinning and sleep in the kernel. */
static void settle(bool (*pred)(void))
{
    sqf_deadline stop = sqf_after(2 * SQF_SEC);
    while (!pred() && sqf_now() < stop)
        sleep_us(100);
    sleep_us(1500);
}

/* Start fn on n threads, run `act` (the hand-off and the cancel), then join
 * every thread within a few seconds; a thread that does not return is the
 * swallowed hand-off, reported with the lock's word, and the test ends. */
static void round_of(int n, void *(*fn)(void *), void (*act)(void), uint32_t (*word)(void))
{
    pthread_t t[WAITERS];
    at_store(&got, 0, RLX);
    at_store(&cancelled, 0, RLX);
    at_store(&other, 0, RLX);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, fn, NULL) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            exit(1);
        }
    act();
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    for (int i = 0; i < n; i++)
        if (pthread_timedjoin_np(t[i], NULL, &until) != 0) {
            fprintf(stderr,
                    "%s: a waiter never returned (word 0x%x, %u took the lock, %u cancelled): "
                    "a hand-off was swallowed by a cancelled waiter\n",
                    current, word(), at_load(&got, RLX), at_load(&cancelled, RLX));
            check_done();
            _exit(1);
        }
    CHECK_EQ(at_load(&other, RLX), 0);
    CHECK_EQ(at_load(&got, RLX) + at_load(&cancelled, RLX), n);
}

/* The unlocker cancels at once, or after a few pauses: the second wake-up
 * lands at slightly different points of the first one's delivery. */
static unsigned jitter_seed = 1;
static void cancel_soon(void)
{
    jitter_seed = jitter_seed * 1103515245u + 12345u;
    unsigned k = (jitter_seed >> 16) % 4 == 0 ? (jitter_seed >> 8) % 64 : 0;
    for (unsigned i = 0; i < k; i++)
        at_relax();
    CHECK_EQ(sqf_cancel_cancel(&tok), 0);
}

/* --- mutex ------------------------------------------------------------------ */

static uint32_t mu_peek(void)
{
    return at_load(mu_word(&mu), RLX);
}
static bool mu_parked(void)
{
    return mu_peek() & MU_PARKED;
}

static void *mu_waiter(void *arg)
{
    (void)arg;
    int r = sqf_mutex_lock_until(&mu, SQF_FOREVER, &tok);
    count(r);
    if (r == 0) {
        enter();
        CHECK_EQ(sqf_mutex_unlock(&mu), 0);
    }
    return NULL;
}

static void mu_unlock_fair(void)
{
    settle(mu_parked);
    CHECK_EQ(sqf_mutex_unlock_fair(&mu), 0);
    cancel_soon();
}

/* Hold the lock in slices longer than a woken waiter's spin, re-taking it
 * at once after each unlock, until a waiter has slept past the starvation
 * bound and set STARVING; then the plain unlock hands off.  Now and then a
 * woken waiter wins the lock back instead (and leaves): the round counts as
 * exercising the shape only if STARVING was reached. */
static long starved_rounds;
static void mu_starve(void)
{
    settle(mu_parked);
    for (int i = 0; i < 50 && !(mu_peek() & MU_STARVING) && at_load(&got, RLX) < WAITERS; i++) {
        CHECK_EQ(sqf_mutex_unlock(&mu), 0);
        CHECK_EQ(sqf_mutex_lock(&mu), 0);
        sleep_us(700);
    }
    if (mu_peek() & MU_STARVING) starved_rounds++;
    CHECK_EQ(sqf_mutex_unlock(&mu), 0);
    cancel_soon();
}

/* After a round whose checks failed: say which, and end the case (the lock
 * is left broken, so later rounds would only repeat it). */
static bool round_failed(long before, long k, uint32_t word)
{
    if (check_failed_ == before) return false;
    fprintf(stderr, "%s: round %ld of its case failed (word 0x%x afterwards)\n", current, k + 1,
            word);
    return true;
}

static void mutex_case(const char *name, void (*act)(void), long rounds, unsigned flags)
{
    current = name;
    for (long k = 0; k < rounds; k++) {
        long before = check_failed_;
        CHECK_EQ(sqf_mutex_init(&mu, flags), 0);
        CHECK_EQ(sqf_cancel_init(&tok, NULL, SQF_FOREVER), 0);
        CHECK_EQ(sqf_mutex_lock(&mu), 0);
        round_of(WAITERS, mu_waiter, act, mu_peek);
        uint32_t after = mu_peek();
        CHECK_EQ(sqf_mutex_trylock(&mu), 0); /* left free */
        CHECK_EQ(sqf_mutex_unlock(&mu), 0);
        if (round_failed(before, k, after)) return;
    }
    printf("%s: %ld rounds\n", name, rounds);
}

/* --- rwlock ----------------------------------------------------------------- */

static uint32_t rw_peek(void)
{
    return (uint32_t)at_load64((sqf_word64 *)&rw.state, RLX); /* the lock's half */
}
static bool rw_wsleep(void)
{
    return rw_peek() & SQF_RWLOCK_WSLEEP_;
}

static void *rw_writer(void *arg)
{
    (void)arg;
    int r = sqf_rwlock_wrlock_until(&rw, SQF_FOREVER, &tok);
    count(r);
    if (r == 0) {
        enter();
        CHECK_EQ(sqf_rwlock_wrunlock(&rw), 0);
    }
    return NULL;
}

static void rw_pass(void)
{
    settle(rw_wsleep);
    CHECK_EQ(sqf_rwlock_wrunlock(&rw), 0);
    cancel_soon();
}

static void rwlock_case(long rounds)
{
    current = "rwlock writer hand-off";
    for (long k = 0; k < rounds; k++) {
        long before = check_failed_;
        CHECK_EQ(sqf_rwlock_init(&rw, SQF_PRIVATE), 0);
        CHECK_EQ(sqf_cancel_init(&tok, NULL, SQF_FOREVER), 0);
        CHECK_EQ(sqf_rwlock_wrlock(&rw), 0);
        round_of(WAITERS, rw_writer, rw_pass, rw_peek);
        uint32_t after = rw_peek();
        CHECK_EQ(after, 0); /* nothing held, owed or asleep */
        CHECK_EQ(sqf_rwlock_trywrlock(&rw), 0);
        CHECK_EQ(sqf_rwlock_wrunlock(&rw), 0);
        if (round_failed(before, k, after)) return;
    }
    printf("%s: %ld rounds\n", current, rounds);
}

/* --- cond ------------------------------------------------------------------- */

static bool cv_all_waiting(void)
{
    return (at_load((sqf_word *)&cv.waiters, SC) & 0x7fffffffu) == WAITERS;
}

static void *cv_waiter(void *arg)
{
    (void)arg;
    CHECK_EQ(sqf_mutex_lock(&mu), 0);
    int r = 0;
    while (!flag && r == 0)
        r = sqf_cond_wait_until(&cv, &mu, SQF_FOREVER, &tok);
    /* The flag is set before the token is cancelled, and the broadcast
     * reaches everyone: whatever the wait returned, the flag is there. */
    CHECK(flag);
    count(r == ECANCELED ? r : 0);
    enter();
    CHECK_EQ(sqf_mutex_unlock(&mu), 0);
    return NULL;
}

/* Broadcast: one waiter wakes and requeues the others onto the mutex, which
 * we hold; then unlock_fair hands it to a requeued sleeper, and the token
 * fires. */
static void cv_broadcast_fair(void)
{
    settle(cv_all_waiting);
    CHECK_EQ(sqf_mutex_lock(&mu), 0);
    flag = 1;
    CHECK_EQ(sqf_cond_broadcast(&cv), 0);
    settle(mu_parked);
    CHECK_EQ(sqf_mutex_unlock_fair(&mu), 0);
    cancel_soon();
}

static void cond_case(long rounds)
{
    current = "cond broadcast + unlock_fair";
    for (long k = 0; k < rounds; k++) {
        long before = check_failed_;
        CHECK_EQ(sqf_mutex_init(&mu, SQF_PRIVATE), 0);
        CHECK_EQ(sqf_cond_init(&cv, SQF_PRIVATE), 0);
        CHECK_EQ(sqf_cancel_init(&tok, NULL, SQF_FOREVER), 0);
        flag = 0;
        round_of(WAITERS, cv_waiter, cv_broadcast_fair, mu_peek);
        uint32_t after = mu_peek();
        CHECK_EQ(sqf_mutex_trylock(&mu), 0);
        CHECK_EQ(sqf_mutex_unlock(&mu), 0);
        CHECK_EQ(sqf_cond_destroy(&cv), 0);
        if (round_failed(before, k, after)) return;
    }
    printf("%s: %ld rounds\n", current, rounds);
}

/* Whether the kernel has futex_waitv (Linux 5.16+; not under qemu-user):
 * with no waiters it fails with EINVAL if it exists. */
static bool kernel_has_waitv(void)
{
    return !(syscall(SYS_futex_waitv, NULL, 0u, 0u, NULL, 1) == -1 && errno == ENOSYS);
}

int main(void)
{
    watchdog(120);
    long rounds = soak(200);
    mutex_case("mutex unlock_fair", mu_unlock_fair, rounds, SQF_PRIVATE);
    /* A private mutex serves a long-waiting thread through its awake waiter
     * (TURN, no wake-up to race with); STARVING's wake-up hand-off is what a
     * shared mutex does. */
    if (sqf_mutex_init(&mu, SQF_SHARED) == 0 && !kernel_has_waitv()) {
        /* A cancellable sleep on a process-shared word needs the kernel's
         * futex_waitv (cancel.h): without it the documented ENOTSUP. */
        sqf_cancel tok;
        CHECK_EQ(sqf_cancel_init(&tok, NULL, SQF_FOREVER), 0);
        CHECK_EQ(sqf_mutex_lock(&mu), 0);
        CHECK_EQ(sqf_mutex_lock_until(&mu, SQF_FOREVER, &tok), ENOTSUP);
        CHECK_EQ(sqf_mutex_unlock(&mu), 0);
        CHECK_EQ(sqf_mutex_destroy(&mu), 0);
        printf("mutex starvation hand-off (shared): ENOTSUP without futex_waitv, as documented\n");
    } else if (sqf_mutex_init(&mu, SQF_SHARED) == 0) {
        /* The case tests what it names: a quarter of its rounds must reach
         * the hand-off.  Under load (other tests on both CPUs) fewer do, so
         * it runs more batches of rounds, up to 8, until enough have. */
        long ran = 0;
        for (int batch = 0; batch < 8 && starved_rounds < rounds / 8; batch++) {
            mutex_case("mutex starvation hand-off (shared)", mu_starve, rounds / 2, SQF_SHARED);
            ran += rounds / 2;
        }
        printf("mutex starvation hand-off: %ld of %ld rounds reached it\n", starved_rounds, ran);
        CHECK(starved_rounds >= rounds / 8);
    } else {
        printf("mutex starvation hand-off: not run (this wait backend cannot share)\n");
    }
    rwlock_case(rounds);
    cond_case(rounds);
    return check_done();
}
