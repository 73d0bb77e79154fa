/* test_mutex.c: sqf_mutex's contract: errors, time-outs, hand-off, sharing. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity */
#endif
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <squarefree/mutex.h>

#include "check.h"
#include "mutex_word.h"
#include "wait.h"

static uint32_t word_of(sqf_mutex *m)
{
    return at_load(mu_word(m), SC);
}

static void test_bad_input(void)
{
    CHECK_EQ(sqf_mutex_init(NULL, 0), EINVAL);
    CHECK_EQ(sqf_mutex_destroy(NULL), EINVAL);
    CHECK_EQ(sqf_mutex_lock(NULL), EINVAL);
    CHECK_EQ(sqf_mutex_trylock(NULL), EINVAL);
    CHECK_EQ(sqf_mutex_timedlock(NULL, SQF_FOREVER), EINVAL);
    CHECK_EQ(sqf_mutex_unlock(NULL), EINVAL);
    CHECK_EQ(sqf_mutex_unlock_fair(NULL), EINVAL);

    sqf_mutex m = SQF_MUTEX_INIT;
    CHECK_EQ(sqf_mutex_init(&m, 2), EINVAL);
    CHECK_EQ(sqf_mutex_init(&m, ~0u), EINVAL);
    CHECK_EQ(word_of(&m), 0);

    /* Unlocking what is not locked: EPERM, and the word is untouched. */
    CHECK_EQ(sqf_mutex_unlock(&m), EPERM);
    CHECK_EQ(sqf_mutex_unlock_fair(&m), EPERM);
    CHECK_EQ(word_of(&m), 0);
}

static void test_basic(void)
{
    sqf_mutex m = SQF_MUTEX_INIT;
    CHECK_EQ(sqf_mutex_lock(&m), 0);
    CHECK_EQ(word_of(&m), MU_LOCKED);
    CHECK_EQ(sqf_mutex_trylock(&m), EBUSY);
    CHECK_EQ(sqf_mutex_destroy(&m), EBUSY);
    CHECK_EQ(word_of(&m), MU_LOCKED);

    /* A deadline in the past: try once, then ETIMEDOUT, nothing changed. */
    CHECK_EQ(sqf_mutex_timedlock(&m, sqf_now() - 1), ETIMEDOUT);
    CHECK_EQ(sqf_mutex_timedlock(&m, INT64_MIN), ETIMEDOUT);
    CHECK_EQ(word_of(&m), MU_LOCKED);

    /* A deadline in the future is waited for. */
    sqf_deadline t0 = sqf_now();
    CHECK_EQ(sqf_mutex_timedlock(&m, t0 + 30 * SQF_MS), ETIMEDOUT);
    CHECK(sqf_now() - t0 >= 30 * SQF_MS);
    CHECK(word_of(&m) & MU_LOCKED);

    CHECK_EQ(sqf_mutex_unlock(&m), 0);
    CHECK_EQ(word_of(&m) & MU_LOCKED, 0);
    CHECK_EQ(sqf_mutex_trylock(&m), 0);
    CHECK_EQ(sqf_mutex_unlock_fair(&m), 0); /* nobody sleeps: a plain release */
    CHECK_EQ(word_of(&m) & MU_LOCKED, 0);
    CHECK_EQ(sqf_mutex_timedlock(&m, sqf_now() - 1), 0); /* free: a past deadline still tries */
    CHECK_EQ(sqf_mutex_unlock(&m), 0);
    CHECK_EQ(sqf_mutex_destroy(&m), 0);

    CHECK_EQ(sqf_mutex_init(&m, SQF_PRIVATE), 0);
    CHECK_EQ(word_of(&m), 0);
}

/* A waiter that sleeps, then records that it got the lock. */
struct waiter {
    sqf_mutex *m;
    sqf_word got;
};

static void *lock_once(void *arg)
{
    struct waiter *w = arg;
    CHECK_EQ(sqf_mutex_lock(w->m), 0);
    at_store(&w->got, 1, SC);
    CHECK_EQ(sqf_mutex_unlock(w->m), 0);
    return NULL;
}

static void wait_for_bits(sqf_mutex *m, uint32_t bits)
{
    sqf_deadline stop = sqf_after(10 * SQF_SEC);
    while ((word_of(m) & bits) != bits && sqf_now() < stop)
        usleep(200);
    CHECK_EQ(word_of(m) & bits, bits);
}

/* Right after an unlock that handed the lock to w's thread, a barging
 * trylock must fail, unless that thread has already had the lock and let
 * it go (the kernel may run it first): never may it succeed before. */
static void expect_handed_off(sqf_mutex *m, struct waiter *w)
{
    if (sqf_mutex_trylock(m) == 0) {
        CHECK_EQ(at_load(&w->got, SC), 1);
        CHECK_EQ(sqf_mutex_unlock(m), 0);
    }
}

/* unlock_fair hands the lock to the sleeper: LOCKED never drops, so a
 * barging trylock right after the unlock must fail. */
/* sqf_mutex_is_locked: a snapshot, 0 for NULL, whatever else the word holds. */
static void test_is_locked(void)
{
    sqf_mutex m = SQF_MUTEX_INIT;
    CHECK_EQ(sqf_mutex_is_locked(NULL), 0);
    CHECK_EQ(sqf_mutex_is_locked(&m), 0);
    CHECK_EQ(sqf_mutex_lock(&m), 0);
    CHECK_EQ(sqf_mutex_is_locked(&m), 1);
    CHECK_EQ(sqf_mutex_unlock(&m), 0);
    CHECK_EQ(sqf_mutex_is_locked(&m), 0);
    CHECK_EQ(sqf_mutex_init(&m, SQF_SHARED), sqf_wait_shared_supported() ? 0 : ENOTSUP);
    CHECK_EQ(sqf_mutex_trylock(&m), 0);
    CHECK_EQ(sqf_mutex_is_locked(&m), 1);
    CHECK_EQ(sqf_mutex_unlock(&m), 0);
    CHECK_EQ(sqf_mutex_is_locked(&m), 0);
}

/* The inline unlock releases a process-shared mutex to its idle word,
 * SHARED: dropping that bit would make the next waiter sleep on a private
 * futex that another process's wake never reaches. */
static void test_unlock_keeps_shared(void)
{
    sqf_mutex m;
    if (sqf_mutex_init(&m, SQF_SHARED) != 0) {
        printf("unlock keeps SHARED: not run (this wait backend cannot share)\n");
        return;
    }
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(sqf_mutex_lock(&m), 0);
        CHECK_EQ(word_of(&m), MU_SHARED | MU_LOCKED);
        CHECK_EQ(sqf_mutex_unlock(&m), 0);
        CHECK_EQ(word_of(&m), MU_SHARED);
    }
}

static void test_unlock_fair_hands_off(void)
{
    sqf_mutex m = SQF_MUTEX_INIT;
    struct waiter w = {&m, 0};
    CHECK_EQ(sqf_mutex_lock(&m), 0);
    pthread_t t;
    pthread_create(&t, NULL, lock_once, &w);
    wait_for_bits(&m, MU_PARKED);
    usleep(20 * 1000); /* PARKED is set just before the sleep: let it sleep */
    CHECK_EQ(sqf_mutex_unlock_fair(&m), 0);
    expect_handed_off(&m, &w);
    pthread_join(t, NULL);
    CHECK_EQ(at_load(&w.got, SC), 1);
    CHECK_EQ(word_of(&m) & (MU_LOCKED | MU_HANDOFF), 0);
}

/* Eventual fairness.  A sleeper that has waited over a millisecond and then
 * loses a race to a barger asks to be served next:
 * - on a private mutex (with 2 CPUs or more) it becomes the awake waiter
 *   (NEXT) and sets TURN at once, and the next plain unlock hands the lock
 *   to it (LOCKED stays set, with HANDOFF and TURN) instead of releasing;
 * - on a shared mutex (which never waits awake) it marks the lock STARVING
 *   and goes back to sleep, and the next plain unlock hands off to it
 *   through a wake-up. */
static void starving_sleeper_gets_handoff(unsigned flags, uint32_t mark)
{
    for (int attempt = 0; attempt < 50; attempt++) {
        sqf_mutex m;
        CHECK_EQ(sqf_mutex_init(&m, flags), 0);
        struct waiter w = {&m, 0};
        CHECK_EQ(sqf_mutex_lock(&m), 0);
        pthread_t t;
        pthread_create(&t, NULL, lock_once, &w);
        wait_for_bits(&m, MU_PARKED);
        usleep(5 * 1000); /* now it has waited > 1 ms */
        /* Release and barge straight back in, before the woken one runs. */
        CHECK_EQ(sqf_mutex_unlock(&m), 0);
        if (sqf_mutex_trylock(&m) != 0) { /* the waiter won the race: retry */
            pthread_join(t, NULL);
            continue;
        }
        /* Watch without sleeping: an awake waiter gives up after
         * SQF_MUTEX_SPIN_NS, so the unlock must follow TURN at once. */
        sqf_deadline stop = sqf_after(2 * SQF_SEC);
        while (!(word_of(&m) & mark) && sqf_now() < stop)
            if (mark == MU_STARVING) usleep(100);
        if (!(word_of(&m) & mark)) { /* it was not woken in time; retry */
            CHECK_EQ(sqf_mutex_unlock(&m), 0);
            pthread_join(t, NULL);
            continue;
        }
        if (mark == MU_STARVING) usleep(20 * 1000); /* let it fall asleep again */
        uint32_t before = word_of(&m);
        CHECK_EQ(sqf_mutex_unlock(&m), 0);
        /* Handed off: LOCKED never dropped, so no barger gets in before the
         * waiter has had the lock.  Unless the waiter withdrew its mark
         * between our look and our unlock (an awake waiter gives up after
         * its spin budget, and this thread may be descheduled that long,
         * as under emulation): then the unlock was a plain release, and we
         * try again.  An unlock that ignored the mark would get here every
         * time, and fail below after 50 attempts. */
        if ((before & mark) && at_load(&w.got, SC) == 0 && sqf_mutex_trylock(&m) == 0) {
            bool waiter_had_it = at_load(&w.got, SC) == 1;
            CHECK_EQ(sqf_mutex_unlock(&m), 0);
            if (!waiter_had_it) {
                pthread_join(t, NULL);
                continue;
            }
        }
        pthread_join(t, NULL);
        CHECK_EQ(at_load(&w.got, SC), 1);
        CHECK_EQ(word_of(&m) & (MU_LOCKED | MU_HANDOFF | MU_STARVING | MU_NEXT | MU_TURN), 0);
        return;
    }
    CHECK(!"could not set up the starving-sleeper race in 50 attempts");
}

static void test_starving_sleeper_gets_handoff(void)
{
    cpu_set_t cpus;
    bool several = sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 1;
    starving_sleeper_gets_handoff(SQF_PRIVATE, several ? MU_TURN : MU_STARVING);
    sqf_mutex probe;
    if (sqf_mutex_init(&probe, SQF_SHARED) == 0)
        starving_sleeper_gets_handoff(SQF_SHARED, MU_STARVING);
    else
        printf("starving sleeper on a shared mutex: not run (this wait backend cannot share)\n");
}

/* A timed locker whose deadline passes must not strand the sleepers behind
 * it, even if it consumed the wake-up meant for the next one. */
static void *timed_locker(void *arg)
{
    struct waiter *w = arg;
    int e = sqf_mutex_timedlock(w->m, sqf_after(40 * SQF_MS));
    if (e == 0) {
        at_store(&w->got, 1, SC);
        sqf_mutex_unlock(w->m);
    } else {
        CHECK_EQ(e, ETIMEDOUT);
    }
    return NULL;
}

static void test_timeouts_do_not_strand(void)
{
    sqf_mutex m = SQF_MUTEX_INIT;
    struct waiter tw[4] = {{&m, 0}, {&m, 0}, {&m, 0}, {&m, 0}};
    struct waiter w = {&m, 0};
    CHECK_EQ(sqf_mutex_lock(&m), 0);
    pthread_t t[4], u;
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, timed_locker, &tw[i]);
    pthread_create(&u, NULL, lock_once, &w);
    usleep(39 * 1000);
    CHECK_EQ(sqf_mutex_unlock(&m), 0); /* races the time-outs */
    pthread_join(u, NULL);             /* the untimed one must get through */
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(at_load(&w.got, SC), 1);
    CHECK_EQ(word_of(&m) & MU_LOCKED, 0);
}

/* SQF_SHARED: two processes exclude each other through shared memory. */
static void test_shared(void)
{
    sqf_mutex probe;
    if (!SQF_TEST_SHARED_EXPECTED) {
        CHECK_EQ(sqf_mutex_init(&probe, SQF_SHARED), ENOTSUP);
        return;
    }
    struct shm {
        sqf_mutex m;
        long counter;
    } *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(s != MAP_FAILED);
    if (s == MAP_FAILED) return;
    CHECK_EQ(sqf_mutex_init(&s->m, SQF_SHARED), 0);
    CHECK_EQ(word_of(&s->m), MU_SHARED);
    const long per = 20000;
    pid_t pid = fork();
    if (pid == 0) {
        for (long i = 0; i < per; i++) {
            sqf_mutex_lock(&s->m);
            s->counter++;
            sqf_mutex_unlock(&s->m);
        }
        _exit(0);
    }
    for (long i = 0; i < per; i++) {
        CHECK_EQ(sqf_mutex_lock(&s->m), 0);
        s->counter++;
        CHECK_EQ(sqf_mutex_unlock(&s->m), 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ(s->counter, 2 * per);
    CHECK_EQ(word_of(&s->m) & ~(MU_SHARED | MU_PARKED), 0);
    munmap(s, sizeof *s);
}

int main(void)
{
    watchdog(60);
    test_bad_input();
    test_basic();
    test_is_locked();
    test_unlock_keeps_shared();
    test_unlock_fair_hands_off();
    test_starving_sleeper_gets_handoff();
    test_timeouts_do_not_strand();
    test_shared();
    return check_done();
}
