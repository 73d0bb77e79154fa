/* process_death.c: a process SIGKILLed while asleep in a wait on a shared
 * primitive leaves that primitive working for the survivors, as each
 * header documents:
 * - mutex: a starving sleeper killed (STARVING set, nobody else asleep):
 *   the next unlock clears STARVING, so trylock and barging work again;
 * - sem: the permit released after the death reaches a surviving sleeper,
 *   and no permit is lost or made;
 * - cond: a signal after the death wakes a surviving waiter;
 * - event, latch, countdown: one call still wakes every survivor;
 * and, as documented, what cannot be repaired without re-initialising:
 * - barrier: a dead party's next phase is broken by a survivor's deadline
 *   (ETIMEDOUT for it, EPIPE for the others), reset returns EBUSY (the dead
 *   party is still counted), and init repairs it;
 * - once: a runner that dies leaves it RUNNING: timedrun returns ETIMEDOUT
 *   and runs nothing; init repairs it (once.h's robust once, built on the
 *   robust mutex, is tested in process_robust.c);
 * - rwlock: a reader that dies waiting is released by the next wrunlock and
 *   never claims its place; readers still get in, and the first writer that
 *   waits revokes the place after SQF_RWLOCK_STALL_NS and takes the lock.
 *   A reader that is stopped (SIGSTOP) when released is revoked the same
 *   way, and when continued finds out, waits for that writer and gets in.
 *   A writer that dies asleep waiting for the turn leaves only a stale
 *   WSLEEP: the hand-off that finds nobody is revoked, and the lock works
 *   on.  A writer that dies holding the turn while readers drain is a dead
 *   holder: WRITER stays set (documented); init repairs it.
 * The kernel removes a dead process from the futex queues, so no wake-up
 * is spent on it; what it leaves is at most a count (see each header).
 *
 * A child is killed only once it is asleep in the kernel: it raises a
 * flag just before its wait, and the parent waits for the flag and then
 * for /proc/PID/stat to say S (sleeping). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include <squarefree.h>

#include "check.h"
#include "process.h"
#include "mutex_word.h"
#include "wait.h"

#define WAIT_S 20

static sqf_deadline soon(void)
{
    return sqf_after((int64_t)WAIT_S * SQF_SEC);
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, ms % 1000 * 1000000};
    nanosleep(&ts, NULL);
}

struct shm {
    sqf_mutex m;
    sqf_cond c;
    sqf_sem s;
    sqf_event ev;
    sqf_latch la;
    sqf_countdown cd;
    sqf_barrier b;
    sqf_once o;
    sqf_rwlock rw;
    _Alignas(64) char qmem[512]; /* an sqf_queue of 4 ints */
    atomic_int about_to_wait;    /* children raise it just before their wait */
    int predicate;               /* the cond's, under m */
};

static struct shm *shm;

/* Whether pid is asleep (state S in /proc/PID/stat). */
static int asleep(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *close_paren = strrchr(buf, ')'); /* the name may hold spaces */
    return close_paren && close_paren[1] == ' ' && close_paren[2] == 'S';
}

/* Wait until `count` children have raised the flag and pid is asleep. */
static void until_asleep(pid_t pid, int count)
{
    sqf_deadline stop = soon();
    while ((atomic_load(&shm->about_to_wait) < count || !asleep(pid)) && sqf_now() < stop)
        pause_ms(1);
    pause_ms(5); /* from "sleeping" to queued on the futex: let it settle */
    CHECK(asleep(pid));
}

static void kill_and_reap(pid_t pid)
{
    CHECK_EQ(kill(pid, SIGKILL), 0);
    CHECK_EQ(exit_status(pid), 128 + SIGKILL);
}

static void reap_ok(pid_t pid)
{
    CHECK_EQ(exit_status(pid), 0);
}

static void reset_flag(void)
{
    atomic_store(&shm->about_to_wait, 0);
}

/* --- mutex: a starving sleeper dies -------------------------------------------------- */

static void lock_forever(void)
{
    atomic_fetch_add(&shm->about_to_wait, 1);
    sqf_mutex_lock(&shm->m); /* killed before it returns */
}

static void test_mutex_starver(void)
{
    reset_flag();
    CHECK_EQ(sqf_mutex_init(&shm->m, SQF_SHARED), 0);
    sqf_word *w = mu_word(&shm->m);
    CHECK_EQ(sqf_mutex_lock(&shm->m), 0);
    pid_t p = fork_child(lock_forever);
    until_asleep(p, 1);
    /* Older than the starvation bound, woken (spuriously, as futex waits may
     * be), the child finds the lock still held and sleeps again, claiming
     * STARVING. */
    pause_ms(3);
    sqf_deadline stop = soon();
    while (!(at_load(w, RLX) & MU_STARVING) && sqf_now() < stop) {
        sqf_wake(w, 1, true);
        pause_ms(2);
    }
    CHECK(at_load(w, RLX) & MU_STARVING);
    until_asleep(p, 1);
    kill_and_reap(p);
    CHECK_EQ(sqf_mutex_unlock(&shm->m), 0); /* a hand-off that finds nobody */
    CHECK_EQ(at_load(w, RLX) & (MU_STARVING | MU_LOCKED | MU_HANDOFF), 0);
    CHECK_EQ(sqf_mutex_trylock(&shm->m), 0); /* barging works again */
    CHECK_EQ(sqf_mutex_unlock(&shm->m), 0);
    CHECK_EQ(sqf_mutex_destroy(&shm->m), 0);
}

/* --- queue: a starving consumer dies ------------------------------------------------- */

static sqf_queue *shm_queue(void)
{
    return (sqf_queue *)shm->qmem;
}

static void pop_forever(void)
{
    int x;
    atomic_fetch_add(&shm->about_to_wait, 1);
    sqf_queue_pop(shm_queue(), &x); /* killed before it returns */
}

/* A shared queue whose starving consumer (HUNGRY's owner) was killed while
 * it slept on the hungry word. */
static sqf_queue *queue_with_dead_starver(void)
{
    reset_flag();
    sqf_queue *q = shm_queue();
    CHECK(sqf_queue_bytes(4, sizeof(int)) <= sizeof shm->qmem);
    CHECK_EQ(sqf_queue_init(q, 4, sizeof(int), SQF_SHARED), 0);
    sqf_word *hungry = (sqf_word *)&q->chungry_;
    pid_t p = fork_child(pop_forever);
    until_asleep(p, 1);
    /* Older than the starvation bound, woken (spuriously) to an empty
     * queue, the child claims HUNGRY and sleeps on that word. */
    pause_ms(3);
    sqf_deadline stop = soon();
    while (!(at_load(hungry, RLX) & 1) && sqf_now() < stop) {
        sqf_wake((sqf_word *)&q->cseq_, 1, true);
        pause_ms(2);
    }
    CHECK(at_load(hungry, RLX) & 1);
    until_asleep(p, 1);
    kill_and_reap(p);
    return q;
}

static int deferred_rc = -1, deferred_item;

static void *deferred_pop(void *arg)
{
    deferred_rc = sqf_queue_pop_until(arg, &deferred_item, sqf_after(5 * SQF_SEC), NULL);
    return NULL;
}

static void test_queue_starver(void)
{
    /* A pop already asleep behind the dead owner when the one push comes:
     * the push's hand-off wake finds the owner away and gives it until it
     * next looks (MISSED), and wakes the pop, which finds it still away,
     * ends hand-off mode and takes the item. */
    sqf_queue *q = queue_with_dead_starver();
    sqf_word *hungry = (sqf_word *)&q->chungry_;
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, deferred_pop, q), 0);
    sqf_deadline stop = soon();
    while (at_load((sqf_word *)&q->csleep_, RLX) < 2 && sqf_now() < stop)
        pause_ms(1);
    pause_ms(20); /* asleep on cseq, deferring */
    int x = 7, y = 0;
    CHECK_EQ(sqf_queue_push(q, &x), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_EQ(deferred_rc, 0);
    CHECK_EQ(deferred_item, 7);
    CHECK_EQ(at_load(hungry, RLX) & 1, 0);
    CHECK_EQ(sqf_queue_destroy(q), EBUSY); /* the dead consumer stays counted */

    /* The push comes first: the item is held for the owner... */
    q = queue_with_dead_starver();
    CHECK_EQ(sqf_queue_push(q, &x), 0);
    CHECK_EQ(at_load(hungry, RLX) & 1, 1);
    CHECK_EQ(sqf_queue_trypop(q, &y), EBUSY);
    /* ...until a pop that would sleep behind it finds it still away: hand-off
     * mode ends and the pop takes the item (with no second push). */
    CHECK_EQ(sqf_queue_pop_until(q, &y, sqf_after(5 * SQF_SEC), NULL), 0);
    CHECK_EQ(y, 7);
    CHECK_EQ(at_load(hungry, RLX) & 1, 0);
    CHECK_EQ(sqf_queue_destroy(q), EBUSY);
}

/* --- sem: the permit after a death reaches a survivor -------------------------------- */

static void acquire_one(void)
{
    atomic_fetch_add(&shm->about_to_wait, 1);
    CHECK_EQ(sqf_sem_timedacquire(&shm->s, soon()), 0);
}

static void test_sem(void)
{
    reset_flag();
    CHECK_EQ(sqf_sem_init(&shm->s, 0, 0, SQF_SHARED), 0);
    pid_t doomed = fork_child(acquire_one);
    until_asleep(doomed, 1);
    pid_t survivor = fork_child(acquire_one);
    until_asleep(survivor, 2);
    kill_and_reap(doomed);
    CHECK_EQ(sqf_sem_release(&shm->s, 1), 0); /* must reach the survivor */
    reap_ok(survivor);
    unsigned v = 9;
    CHECK_EQ(sqf_sem_getvalue(&shm->s, &v), 0);
    CHECK_EQ(v, 0); /* the survivor took it: none lost, none made */
    CHECK_EQ(sqf_sem_release(&shm->s, 2), 0);
    CHECK_EQ(sqf_sem_tryacquire(&shm->s), 0);
    CHECK_EQ(sqf_sem_tryacquire(&shm->s), 0);
    CHECK_EQ(sqf_sem_tryacquire(&shm->s), EBUSY);
}

/* --- cond: a signal after a death wakes a survivor ------------------------------------ */

static void cond_wait_for_predicate(void)
{
    CHECK_EQ(sqf_mutex_lock(&shm->m), 0);
    atomic_fetch_add(&shm->about_to_wait, 1);
    sqf_deadline d = soon();
    while (!shm->predicate) {
        int e = sqf_cond_timedwait(&shm->c, &shm->m, d);
        CHECK(e == 0 || e == ETIMEDOUT);
        if (e) break;
    }
    CHECK(shm->predicate);
    CHECK_EQ(sqf_mutex_unlock(&shm->m), 0);
}

static void test_cond(void)
{
    reset_flag();
    CHECK_EQ(sqf_mutex_init(&shm->m, SQF_SHARED), 0);
    CHECK_EQ(sqf_cond_init(&shm->c, SQF_SHARED), 0);
    shm->predicate = 0;
    pid_t doomed = fork_child(cond_wait_for_predicate);
    until_asleep(doomed, 1);
    pid_t survivor = fork_child(cond_wait_for_predicate);
    until_asleep(survivor, 2);
    kill_and_reap(doomed);
    CHECK_EQ(sqf_mutex_lock(&shm->m), 0);
    shm->predicate = 1;
    CHECK_EQ(sqf_cond_signal(&shm->c), 0); /* one signal: must reach the survivor */
    CHECK_EQ(sqf_mutex_unlock(&shm->m), 0);
    reap_ok(survivor);
    CHECK_EQ(sqf_mutex_trylock(&shm->m), 0); /* the mutex is free and clean */
    CHECK_EQ(sqf_mutex_unlock(&shm->m), 0);
}

/* --- event, latch, countdown: one call wakes every survivor -------------------------- */

static int which;
static void wait_on_which(void)
{
    atomic_fetch_add(&shm->about_to_wait, 1);
    switch (which) {
    case 0:
        CHECK_EQ(sqf_event_timedwait(&shm->ev, soon()), 0);
        break;
    case 1:
        CHECK_EQ(sqf_latch_timedwait(&shm->la, soon()), 0);
        break;
    default:
        CHECK_EQ(sqf_countdown_timedwait(&shm->cd, soon()), 0);
        break;
    }
}

static void test_wake_all(void)
{
    for (which = 0; which < 3; which++) {
        reset_flag();
        CHECK_EQ(sqf_event_init(&shm->ev, SQF_SHARED), 0);
        CHECK_EQ(sqf_latch_init(&shm->la, 1, SQF_SHARED), 0);
        CHECK_EQ(sqf_countdown_init(&shm->cd, 1, SQF_SHARED), 0);
        pid_t doomed = fork_child(wait_on_which);
        until_asleep(doomed, 1);
        pid_t survivors[5];
        for (int i = 0; i < 5; i++) {
            survivors[i] = fork_child(wait_on_which);
            until_asleep(survivors[i], 2 + i);
        }
        kill_and_reap(doomed);
        switch (which) {
        case 0:
            CHECK_EQ(sqf_event_set(&shm->ev), 0);
            break;
        case 1:
            CHECK_EQ(sqf_latch_count_down(&shm->la, 1), 0);
            break;
        default:
            CHECK_EQ(sqf_countdown_down(&shm->cd), 0);
            break;
        }
        for (int i = 0; i < 5; i++)
            reap_ok(survivors[i]);
    }
}

/* --- barrier: a dead party breaks the next phase at a deadline ----------------------- */

static int expect_broken; /* in phase 1 (set before the fork) */
static void barrier_party(void)
{
    atomic_fetch_add(&shm->about_to_wait, 1);
    unsigned index;
    CHECK_EQ(sqf_barrier_timedwait(&shm->b, soon(), &index), 0); /* phase 0 */
    atomic_fetch_add(&shm->about_to_wait, 1);
    int e = sqf_barrier_timedwait(&shm->b, sqf_after(300 * SQF_MS), &index); /* phase 1 */
    if (expect_broken)
        CHECK(e == ETIMEDOUT || e == EPIPE); /* a party short: broken, nobody stranded */
    else
        CHECK_EQ(e, 0);
}

static void barrier_doomed(void)
{
    atomic_fetch_add(&shm->about_to_wait, 1);
    sqf_barrier_wait(&shm->b, NULL); /* phase 0: arrives first, killed asleep */
}

static void test_barrier(void)
{
    reset_flag();
    CHECK_EQ(sqf_barrier_init(&shm->b, 3, SQF_SHARED), 0);
    pid_t doomed = fork_child(barrier_doomed);
    until_asleep(doomed, 1);
    kill_and_reap(doomed);
    /* Its arrival counts: two more complete phase 0. */
    expect_broken = 1;
    pid_t a = fork_child(barrier_party), b = fork_child(barrier_party);
    reap_ok(a);
    reap_ok(b);
    CHECK_EQ(sqf_barrier_reset(&shm->b), EBUSY);           /* the dead party is still counted */
    CHECK_EQ(sqf_barrier_init(&shm->b, 3, SQF_SHARED), 0); /* repaired */
    expect_broken = 0;
    for (int i = 0; i < 3; i++) {
        pid_t p = fork_child(barrier_party);
        (void)p;
    }
    int status, ok = 0;
    for (int i = 0; i < 3; i++) {
        pid_t p = wait(&status);
        CHECK(p > 0);
        ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    CHECK_EQ(ok, 3); /* both phases passed */
}

/* --- once: a dead runner ---------------------------------------------------------------- */

static int run_forever(void *arg)
{
    (void)arg;
    atomic_fetch_add(&shm->about_to_wait, 1);
    for (;;)
        pause();
    return 0; /* not reached: killed in pause() */
}
static void once_runner(void)
{
    sqf_once_run(&shm->o, run_forever, NULL); /* killed inside fn */
}
static int ran;
static int mark_ran(void *arg)
{
    (void)arg;
    ran = 1;
    return 0;
}

static void test_once(void)
{
    reset_flag();
    sqf_once *o = &shm->o;
    CHECK_EQ(sqf_once_init(o, SQF_SHARED), 0);
    pid_t p = fork_child(once_runner);
    until_asleep(p, 1);
    kill_and_reap(p);
    ran = 0;
    CHECK_EQ(sqf_once_timedrun(o, mark_ran, NULL, sqf_after(50 * SQF_MS)), ETIMEDOUT);
    CHECK_EQ(ran, 0);
    CHECK_EQ(sqf_once_init(o, SQF_SHARED), 0); /* repaired */
    CHECK_EQ(sqf_once_run(o, mark_ran, NULL), 0);
    CHECK_EQ(ran, 1);
}

/* --- rwlock: a reader that dies waiting ----------------------------------------------------- */

static void read_forever(void)
{
    atomic_fetch_add(&shm->about_to_wait, 1);
    sqf_rwlock_rdlock(&shm->rw); /* killed asleep, waiting for the writer */
}

static uint64_t rw_state(void)
{
    return atomic_load(&shm->rw.state);
}

/* A fresh shared rwlock, write-locked by the caller. */
static sqf_rwlock *held_rwlock(void)
{
    reset_flag();
    CHECK_EQ(sqf_rwlock_init(&shm->rw, SQF_SHARED), 0);
    CHECK_EQ(sqf_rwlock_wrlock(&shm->rw), 0);
    return &shm->rw;
}

static void test_rwlock(void)
{
    sqf_rwlock *rw = held_rwlock();
    pid_t p = fork_child(read_forever);
    until_asleep(p, 1);
    kill_and_reap(p);
    CHECK_EQ(sqf_rwlock_wrunlock(rw), 0);      /* releases the dead reader: owed a place */
    CHECK_EQ(sqf_rwlock_trywrlock(rw), EBUSY); /* owed, until a writer waits */
    CHECK_EQ(sqf_rwlock_destroy(rw), EBUSY);
    CHECK_EQ(sqf_rwlock_tryrdlock(rw), 0); /* readers are not held up */
    CHECK_EQ(sqf_rwlock_rdunlock(rw), 0);
    sqf_deadline t0 = sqf_now();
    CHECK_EQ(sqf_rwlock_timedwrlock(rw, soon()), 0); /* revokes the dead reader's place */
    CHECK(sqf_now() - t0 >= SQF_RWLOCK_STALL_NS);
    CHECK_EQ(rw_state() & SQF_RWLOCK_PMASK_, 0);
    CHECK_EQ(sqf_rwlock_wrunlock(rw), 0);
    CHECK_EQ(sqf_rwlock_destroy(rw), 0); /* nothing left behind */
    CHECK_EQ(sqf_rwlock_trywrlock(rw), 0);
    CHECK_EQ(sqf_rwlock_wrunlock(rw), 0);
}

/* A reader that is stopped when the writer's unlock releases it: a waiting
 * writer revokes its place; continued, it finds out and gets in after that
 * writer, counted once. */
static void read_once(void)
{
    atomic_fetch_add(&shm->about_to_wait, 1);
    CHECK_EQ(sqf_rwlock_timedrdlock(&shm->rw, soon()), 0);
    CHECK_EQ(shm->predicate, 2); /* after the revoking writer's section */
    CHECK_EQ(sqf_rwlock_rdunlock(&shm->rw), 0);
}

/* A reader (read_once) asleep waiting, then stopped. */
static pid_t stopped_reader(int count)
{
    pid_t p = fork_child(read_once);
    until_asleep(p, count);
    CHECK_EQ(kill(p, SIGSTOP), 0);
    CHECK_EQ(waitpid(p, NULL, WUNTRACED), p);
    return p;
}

static void test_rwlock_stopped_reader(void)
{
    sqf_rwlock *rw = held_rwlock();
    shm->predicate = 1;
    pid_t p = stopped_reader(1);
    CHECK_EQ(sqf_rwlock_wrunlock(rw), 0); /* releases the stopped reader */
    CHECK_EQ(sqf_rwlock_timedwrlock(rw, soon()), 0);
    shm->predicate = 2;
    CHECK_EQ(rw_state() & SQF_RWLOCK_PMASK_, 0);
    CHECK_EQ(kill(p, SIGCONT), 0);
    pause_ms(50); /* it wakes, finds itself revoked and waits again */
    CHECK_EQ(sqf_rwlock_wrunlock(rw), 0);
    CHECK_EQ(exit_status(p), 0);
    CHECK_EQ(sqf_rwlock_destroy(rw), 0); /* counted once: nothing owed or held */
}

/* A reader stopped through 16 revocations still finds out that it was
 * revoked (EPOCH moved), and so does each of the 15 others revoked
 * meanwhile: all get in after the last writer, each counted once. */
static void test_rwlock_many_revocations(void)
{
    enum { N = 16 };
    sqf_rwlock *rw = held_rwlock();
    shm->predicate = 1;
    pid_t p[N];
    uint64_t epoch0 = rw_state() >> 32;
    for (int i = 0; i < N; i++) {
        p[i] = stopped_reader(i + 1);
        CHECK_EQ(sqf_rwlock_wrunlock(rw), 0);            /* releases reader i, stopped */
        CHECK_EQ(sqf_rwlock_timedwrlock(rw, soon()), 0); /* revokes it */
    }
    CHECK_EQ(rw_state() >> 32, epoch0 + N); /* one revocation each */
    CHECK_EQ(rw_state() & SQF_RWLOCK_PMASK_, 0);
    shm->predicate = 2;
    for (int i = 0; i < N; i++)
        CHECK_EQ(kill(p[i], SIGCONT), 0);
    pause_ms(100);
    CHECK_EQ(sqf_rwlock_wrunlock(rw), 0);
    for (int i = 0; i < N; i++)
        CHECK_EQ(exit_status(p[i]), 0);
    CHECK_EQ(sqf_rwlock_destroy(rw), 0);
}

/* A writer already asleep for the turn when the release comes (it went to
 * sleep while the dead reader's write phase ran) still revokes the dead
 * reader's place: it looks again every SQF_RWLOCK_STALL_NS while readers
 * wait, as no hand-off will come. */
static sqf_deadline w_got_at;
static int w_result;
static void *timed_writer(void *arg)
{
    (void)arg;
    w_result = sqf_rwlock_timedwrlock(&shm->rw, soon());
    w_got_at = sqf_now();
    if (w_result == 0) CHECK_EQ(sqf_rwlock_wrunlock(&shm->rw), 0);
    return NULL;
}

static void test_rwlock_writer_asleep_before_release(void)
{
    sqf_rwlock *rw = held_rwlock();
    pid_t p = fork_child(read_forever);
    until_asleep(p, 1);
    kill_and_reap(p);
    pthread_t w;
    CHECK_EQ(pthread_create(&w, NULL, timed_writer, NULL), 0);
    sqf_deadline stop = soon();
    while (!(rw_state() & SQF_RWLOCK_WSLEEP_) && sqf_now() < stop)
        pause_ms(1);
    pause_ms(20); /* asleep on `writers` */
    sqf_deadline released = sqf_now();
    CHECK_EQ(sqf_rwlock_wrunlock(rw), 0); /* releases the dead reader; no hand-off */
    pthread_join(w, NULL);
    CHECK_EQ(w_result, 0);
    CHECK(w_got_at - released >= SQF_RWLOCK_STALL_NS);
    CHECK_EQ(sqf_rwlock_destroy(rw), 0);
}

/* A writer's stall clock restarts with every release: a writer that saw
 * one batch owed does not revoke the next batch (released by another
 * writer just before its clock ran out) before that batch, too, has had
 * SQF_RWLOCK_STALL_NS. */
static atomic_int w1_has, w1_go;
static sqf_deadline second_release;
static void *first_writer(void *arg)
{
    (void)arg;
    CHECK_EQ(sqf_rwlock_timedwrlock(&shm->rw, soon()), 0);
    atomic_store(&w1_has, 1);
    while (!atomic_load(&w1_go))
        pause_ms(1);
    second_release = sqf_now();
    CHECK_EQ(sqf_rwlock_wrunlock(&shm->rw), 0); /* releases the second (stopped) reader */
    return NULL;
}

static void test_rwlock_stall_clock_restarts(void)
{
    sqf_rwlock *rw = held_rwlock();
    shm->predicate = 2; /* read_once's check */
    atomic_store(&w1_has, 0);
    atomic_store(&w1_go, 0);
    pid_t c1 = stopped_reader(1);
    pthread_t t1, t2;
    CHECK_EQ(pthread_create(&t1, NULL, first_writer, NULL), 0);
    pause_ms(50); /* the first writer is asleep, first in the writers' queue */
    CHECK_EQ(sqf_rwlock_wrunlock(rw), 0); /* c1 owed */
    sqf_deadline t0 = sqf_now();
    CHECK_EQ(pthread_create(&t2, NULL, timed_writer, NULL), 0);
    pause_ms(20); /* the second writer has seen c1 owed and sleeps till about t0 + STALL */
    CHECK_EQ(kill(c1, SIGCONT), 0); /* c1 claims and hands the turn to the first writer */
    sqf_deadline stop = soon();
    while (!atomic_load(&w1_has) && sqf_now() < stop)
        pause_ms(1);
    CHECK_EQ(exit_status(c1), 0);
    pid_t c2 = stopped_reader(2); /* waits in the first writer's phase */
    while (sqf_now() < t0 + SQF_RWLOCK_STALL_NS * 9 / 10)
        pause_ms(1);
    atomic_store(&w1_go, 1);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    CHECK_EQ(w_result, 0);                                   /* the second writer revoked c2 ... */
    CHECK(w_got_at - second_release >= SQF_RWLOCK_STALL_NS); /* ... only after a full stall */
    CHECK_EQ(kill(c2, SIGCONT), 0);
    CHECK_EQ(exit_status(c2), 0);
    CHECK_EQ(sqf_rwlock_destroy(rw), 0);
}

static void write_forever(void)
{
    atomic_fetch_add(&shm->about_to_wait, 1);
    sqf_rwlock_wrlock(&shm->rw); /* killed asleep: waiting for the turn, or draining */
}

static void test_rwlock_writers(void)
{
    sqf_rwlock *rw = &shm->rw;
    /* A writer asleep for the turn dies: a stale WSLEEP, nothing worse. */
    reset_flag();
    CHECK_EQ(sqf_rwlock_init(rw, SQF_SHARED), 0);
    CHECK_EQ(sqf_rwlock_wrlock(rw), 0);
    pid_t p = fork_child(write_forever);
    until_asleep(p, 1);
    kill_and_reap(p);
    CHECK_EQ(sqf_rwlock_wrunlock(rw), 0); /* the hand-off finds nobody: revoked */
    CHECK_EQ(sqf_rwlock_trywrlock(rw), 0);
    CHECK_EQ(sqf_rwlock_wrunlock(rw), 0);
    CHECK_EQ(sqf_rwlock_tryrdlock(rw), 0);
    CHECK_EQ(sqf_rwlock_rdunlock(rw), 0);
    CHECK_EQ(sqf_rwlock_destroy(rw), 0);

    /* A writer that has the turn and waits for a reader to leave dies:
     * WRITER stays set (documented); init repairs it. */
    reset_flag();
    CHECK_EQ(sqf_rwlock_init(rw, SQF_SHARED), 0);
    CHECK_EQ(sqf_rwlock_rdlock(rw), 0);
    p = fork_child(write_forever);
    until_asleep(p, 1);
    kill_and_reap(p);
    CHECK_EQ(sqf_rwlock_rdunlock(rw), 0);
    CHECK_EQ(sqf_rwlock_tryrdlock(rw), EBUSY); /* the dead writer's turn, for good */
    CHECK_EQ(sqf_rwlock_trywrlock(rw), EBUSY);
    CHECK_EQ(sqf_rwlock_init(rw, SQF_SHARED), 0); /* repaired */
    CHECK_EQ(sqf_rwlock_tryrdlock(rw), 0);
    CHECK_EQ(sqf_rwlock_rdunlock(rw), 0);
}

int main(void)
{
    watchdog(120);
    if (!SQF_TEST_SHARED_EXPECTED) {
        printf("process_death: the portable backend cannot share (process_shared checks "
               "ENOTSUP)\n");
        return check_done();
    }
    shm = mmap(NULL, sizeof *shm, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(shm != MAP_FAILED);
    if (shm == MAP_FAILED) return check_done();
    test_mutex_starver();
    test_queue_starver();
    test_sem();
    test_cond();
    test_wake_all();
    test_barrier();
    test_once();
    test_rwlock();
    test_rwlock_stopped_reader();
    test_rwlock_many_revocations();
    test_rwlock_writer_asleep_before_release();
    test_rwlock_stall_clock_restarts();
    test_rwlock_writers();
    munmap(shm, sizeof *shm);
    return check_done();
}
