/* test_fault.c: faults at a wait (issue 5, item 6).
 *
 * 1. pthread_cancel at a wait.  No squarefree call is a cancellation point
 *    (see squarefree.h): a waiter that is cancelled stays queued and asleep
 *    until it is served, takes what it waited for, and the cancellation
 *    acts at the thread's next cancellation point, where the test's cleanup
 *    handler gives it back.  So for every blocking primitive: the cancelled
 *    waiter must not leave while asleep (leaving would strand a queue node
 *    on a dead stack), must return 0 from its wait, must then die
 *    cancelled, and the others must all be served, with every permit, lock
 *    and count back where it started.  A once whose fn is cancelled counts
 *    as a failed run: another caller runs fn, nobody is stranded.
 * 2. A time-out at the instant of the hand-off: the deadline and the release
 *    land on the same microsecond, over many rounds with jitter.  Either
 *    outcome is allowed, and the books must balance: a waiter that timed
 *    out took nothing and the permit, the lock or the signal went to
 *    somebody else or stayed; one that got 0 has it.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <time.h>

#include <squarefree.h>

#include "check.h"
#include "mutex_word.h"

static void pause_ms(int ms)
{
    struct timespec ts = {0, (long)ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- 1. pthread_cancel at a wait ---------------------------------------- */

#define NW 3 /* waiters per case; waiter 1 is cancelled */

enum prim { P_SEM, P_MUTEX, P_COND, P_EVENT, P_LATCH, P_COUNTDOWN, P_BARRIER, P_RDLOCK, P_WRLOCK };
static const char *const prim_name[] = {"sem",       "mutex",   "cond",   "event", "latch",
                                        "countdown", "barrier", "rdlock", "wrlock"};

static struct {
    enum prim p;
    sqf_sem sem;
    sqf_mutex mu;
    sqf_cond cv;
    int go; /* cond's predicate, under mu */
    sqf_event ev;
    sqf_latch latch;
    sqf_countdown cd;
    sqf_barrier bar;
    sqf_rwlock rw;
    atomic_int started, served, inside;
    atomic_int returned[NW]; /* 1 + the wait's result, once it returned */
} cw;

/* What a served waiter gives back, whether it is cancelled or not. */
static void give_back(void *arg)
{
    (void)arg;
    atomic_fetch_add(&cw.served, 1);
    switch (cw.p) {
    case P_SEM:
        sqf_sem_release(&cw.sem, 1);
        break;
    case P_MUTEX:
    case P_COND:
        atomic_fetch_sub(&cw.inside, 1);
        sqf_mutex_unlock(&cw.mu);
        break;
    case P_RDLOCK:
        sqf_rwlock_rdunlock(&cw.rw);
        break;
    case P_WRLOCK:
        atomic_fetch_sub(&cw.inside, 1);
        sqf_rwlock_wrunlock(&cw.rw);
        break;
    default:
        break;
    }
}

static int wait_once(enum prim p)
{
    int r = 0;
    switch (p) {
    case P_SEM:
        return sqf_sem_acquire(&cw.sem);
    case P_MUTEX:
        r = sqf_mutex_lock(&cw.mu);
        if (r == 0 && atomic_fetch_add(&cw.inside, 1) != 0) r = -1; /* two owners */
        return r;
    case P_COND:
        sqf_mutex_lock(&cw.mu);
        while (!cw.go && r == 0)
            r = sqf_cond_wait(&cw.cv, &cw.mu);
        if (atomic_fetch_add(&cw.inside, 1) != 0) r = -1;
        return r;
    case P_EVENT:
        return sqf_event_wait(&cw.ev);
    case P_LATCH:
        return sqf_latch_wait(&cw.latch);
    case P_COUNTDOWN:
        return sqf_countdown_wait(&cw.cd);
    case P_BARRIER:
        return sqf_barrier_wait(&cw.bar, NULL);
    case P_RDLOCK:
        return sqf_rwlock_rdlock(&cw.rw);
    case P_WRLOCK:
        r = sqf_rwlock_wrlock(&cw.rw);
        if (r == 0 && atomic_fetch_add(&cw.inside, 1) != 0) r = -1;
        return r;
    }
    return EINVAL;
}

static void *cancel_waiter(void *arg)
{
    int id = (int)(intptr_t)arg;
    atomic_fetch_add(&cw.started, 1);
    int r = wait_once(cw.p);
    atomic_store(&cw.returned[id], 1 + r);
    pthread_cleanup_push(give_back, NULL);
    pthread_testcancel(); /* the cancelled waiter dies here, served */
    pthread_cleanup_pop(1);
    return NULL;
}

/* Let everybody through: the primitive's "release", from the main thread. */
static void release_all(enum prim p)
{
    switch (p) {
    case P_SEM:
        CHECK_EQ(sqf_sem_release(&cw.sem, 1), 0);
        break; /* they pass it on */
    case P_MUTEX:
        CHECK_EQ(sqf_mutex_unlock(&cw.mu), 0);
        break;
    case P_COND:
        sqf_mutex_lock(&cw.mu);
        cw.go = 1;
        CHECK_EQ(sqf_cond_broadcast(&cw.cv), 0);
        sqf_mutex_unlock(&cw.mu);
        break;
    case P_EVENT:
        CHECK_EQ(sqf_event_set(&cw.ev), 0);
        break;
    case P_LATCH:
        CHECK_EQ(sqf_latch_count_down(&cw.latch, 1), 0);
        break;
    case P_COUNTDOWN:
        CHECK_EQ(sqf_countdown_down(&cw.cd), 0);
        break;
    case P_BARRIER:
        CHECK_EQ(sqf_barrier_wait(&cw.bar, NULL), 0);
        break; /* the last party */
    case P_RDLOCK:
    case P_WRLOCK:
        CHECK_EQ(sqf_rwlock_wrunlock(&cw.rw), 0);
        break;
    }
}

static void test_cancel_at_wait(enum prim p)
{
    memset(&cw, 0, sizeof cw);
    cw.p = p;
    sqf_sem_init(&cw.sem, 0, 0, SQF_PRIVATE);
    sqf_mutex_init(&cw.mu, SQF_PRIVATE);
    sqf_cond_init(&cw.cv, SQF_PRIVATE);
    sqf_event_init(&cw.ev, SQF_PRIVATE);
    sqf_latch_init(&cw.latch, 1, SQF_PRIVATE);
    sqf_countdown_init(&cw.cd, 1, SQF_PRIVATE);
    sqf_barrier_init(&cw.bar, NW + 1, SQF_PRIVATE);
    sqf_rwlock_init(&cw.rw, SQF_PRIVATE);
    if (p == P_MUTEX) sqf_mutex_lock(&cw.mu);
    if (p == P_RDLOCK || p == P_WRLOCK) sqf_rwlock_wrlock(&cw.rw);

    pthread_t t[NW];
    for (int i = 0; i < NW; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, cancel_waiter, (void *)(intptr_t)i), 0);
    while (atomic_load(&cw.started) < NW)
        pause_ms(1);
    pause_ms(20); /* most likely all asleep by now (not required for the checks) */
    CHECK_EQ(pthread_cancel(t[1]), 0);
    pause_ms(20);
    /* Still waiting: cancellation must not pull a waiter out of its queue. */
    CHECK_EQ(pthread_tryjoin_np(t[1], NULL), EBUSY);
    CHECK_EQ(atomic_load(&cw.returned[1]), 0);
    CHECK_EQ(atomic_load(&cw.served), 0);

    release_all(p);
    for (int i = 0; i < NW; i++) {
        void *res = NULL;
        CHECK_EQ(pthread_join(t[i], &res), 0);
        CHECK_EQ(atomic_load(&cw.returned[i]), 1); /* served: the wait returned 0 */
        CHECK(i == 1 ? res == PTHREAD_CANCELED : res == NULL);
    }
    CHECK_EQ(atomic_load(&cw.served), NW);
    CHECK_EQ(atomic_load(&cw.inside), 0);
    /* Everything is back where it started. */
    unsigned v = 99;
    switch (p) {
    case P_SEM:
        CHECK_EQ(sqf_sem_getvalue(&cw.sem, &v), 0);
        CHECK_EQ(v, 1);
        CHECK_EQ(sqf_sem_destroy(&cw.sem), 0);
        break;
    case P_MUTEX:
    case P_COND:
        CHECK_EQ(sqf_mutex_trylock(&cw.mu), 0);
        CHECK_EQ(sqf_mutex_unlock(&cw.mu), 0);
        CHECK_EQ(sqf_cond_destroy(&cw.cv), 0);
        CHECK_EQ(sqf_mutex_destroy(&cw.mu), 0);
        break;
    case P_EVENT:
        CHECK_EQ(sqf_event_destroy(&cw.ev), 0);
        break;
    case P_LATCH:
        CHECK_EQ(sqf_latch_destroy(&cw.latch), 0);
        break;
    case P_COUNTDOWN:
        CHECK_EQ(sqf_countdown_destroy(&cw.cd), 0);
        break;
    case P_BARRIER:
        CHECK_EQ(sqf_barrier_destroy(&cw.bar), 0);
        break;
    case P_RDLOCK:
    case P_WRLOCK:
        CHECK_EQ(sqf_rwlock_trywrlock(&cw.rw), 0);
        CHECK_EQ(sqf_rwlock_wrunlock(&cw.rw), 0);
        CHECK_EQ(sqf_rwlock_destroy(&cw.rw), 0);
        break;
    }
    printf("cancel at a %s wait: the cancelled waiter was served, then died; %d of %d served\n",
           prim_name[p], atomic_load(&cw.served), NW);
}

/* A once whose fn is cancelled: a failed run, as with pthread_once. */
static struct {
    sqf_once once;
    atomic_int runs, in_fn, done;
} co;

static int once_fn(void *arg)
{
    (void)arg;
    if (atomic_fetch_add(&co.runs, 1) == 0) {
        atomic_store(&co.in_fn, 1);
        for (;;) { /* the first run blocks at a cancellation point */
            pause_ms(1);
        }
    }
    return 0;
}

static void *once_caller(void *arg)
{
    (void)arg;
    if (sqf_once_run(&co.once, once_fn, NULL) == 0) atomic_fetch_add(&co.done, 1);
    return NULL;
}

static void test_cancel_in_once(void)
{
    memset(&co, 0, sizeof co);
    sqf_once_init(&co.once, SQF_PRIVATE);
    pthread_t first, rest[NW];
    CHECK_EQ(pthread_create(&first, NULL, once_caller, NULL), 0);
    while (!atomic_load(&co.in_fn))
        pause_ms(1);
    for (int i = 0; i < NW; i++)
        CHECK_EQ(pthread_create(&rest[i], NULL, once_caller, NULL), 0);
    pause_ms(20); /* the others are asleep on the run */
    CHECK_EQ(pthread_cancel(first), 0);
    void *res = NULL;
    CHECK_EQ(pthread_join(first, &res), 0);
    CHECK(res == PTHREAD_CANCELED);
    for (int i = 0; i < NW; i++)
        CHECK_EQ(pthread_join(rest[i], NULL), 0);
    CHECK_EQ(atomic_load(&co.runs), 2); /* the cancelled run, then one more */
    CHECK_EQ(atomic_load(&co.done), NW);
    CHECK_EQ(sqf_once_done(&co.once), 1);
    printf("cancel inside once's fn: a failed run; fn ran again once, %d callers done\n",
           atomic_load(&co.done));
}

/* A holder cancelled while its unlock runs other threads' combine requests:
 * each request reaches a cancellation point, which must not act there (the
 * requests after it would be stranded); it acts after the unlock. */
static struct {
    sqf_mutex mu;
    long total; /* under mu */
    atomic_int locked, queued_ok, after_unlock;
} cc;

static void add_one(void *arg)
{
    (void)arg;
    pthread_testcancel();
    cc.total++;
}

static void *combine_requester(void *arg)
{
    (void)arg;
    if (sqf_mutex_combine(&cc.mu, add_one, NULL) == 0) atomic_fetch_add(&cc.queued_ok, 1);
    return NULL;
}

static void *combine_holder(void *arg)
{
    (void)arg;
    sqf_mutex_lock(&cc.mu);
    atomic_store(&cc.locked, 1);
    while (sqf_mutex_combine_queued_(&cc.mu) < NW) /* not a cancellation point */
        sched_yield();
    int old;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    while (atomic_load(&cc.locked) != 2) /* until main has cancelled us */
        sched_yield();
    pthread_setcancelstate(old, NULL);
    sqf_mutex_unlock(&cc.mu); /* runs the NW requests */
    atomic_store(&cc.after_unlock, 1);
    pthread_testcancel();
    return NULL;
}

static void test_cancel_combiner(void)
{
    memset(&cc, 0, sizeof cc);
    sqf_mutex_init(&cc.mu, SQF_PRIVATE);
    pthread_t holder, req[NW];
    CHECK_EQ(pthread_create(&holder, NULL, combine_holder, NULL), 0);
    while (!atomic_load(&cc.locked))
        sched_yield();
    for (int i = 0; i < NW; i++)
        CHECK_EQ(pthread_create(&req[i], NULL, combine_requester, NULL), 0);
    CHECK_EQ(pthread_cancel(holder), 0);
    atomic_store(&cc.locked, 2);
    void *res = NULL;
    CHECK_EQ(pthread_join(holder, &res), 0);
    CHECK(res == PTHREAD_CANCELED);
    CHECK_EQ(atomic_load(&cc.after_unlock), 1); /* the drain ran to its end */
    for (int i = 0; i < NW; i++)
        CHECK_EQ(pthread_join(req[i], NULL), 0);
    CHECK_EQ(atomic_load(&cc.queued_ok), NW);
    CHECK_EQ(cc.total, NW);
    CHECK_EQ(sqf_mutex_trylock(&cc.mu), 0);
    CHECK_EQ(sqf_mutex_unlock(&cc.mu), 0);
    printf("cancel a combining holder: its unlock ran all %ld requests, then it died\n", cc.total);
}

/* ---- 2. a time-out at the instant of the hand-off ----------------------- */

enum race { R_SEM, R_MUTEX, R_COND, R_RWLOCK, R_BARRIER };
static const char *const race_name[] = {"sem", "mutex (unlock_fair)", "cond", "rwlock", "barrier"};

static struct {
    enum race k;
    pthread_barrier_t round; /* the harness's own rendezvous, not under test */
    sqf_deadline at;         /* this round's deadline and release time */
    int jitter_ns;           /* the releaser's offset from `at` this round */
    sqf_sem sem;
    sqf_mutex mu;
    sqf_cond cv;
    int tickets; /* cond: signals not yet consumed, under mu */
    sqf_rwlock rw;
    sqf_barrier bar;
    int timed_r, release_r, other_r;
    atomic_int timed_done, other_done;
    long rounds, got, timedout;
    int stop;
} tr;

static void spin_until(sqf_deadline t)
{
    while (sqf_now() < t) {
    }
}

static void *race_timed(void *arg)
{
    (void)arg;
    /* Time-outs fire when they are due, not up to 50 us later (the
     * default timer slack), so that they land among the releases. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    for (;;) {
        pthread_barrier_wait(&tr.round);
        if (tr.stop) return NULL;
        int r = 0;
        switch (tr.k) {
        case R_SEM:
            r = sqf_sem_timedacquire(&tr.sem, tr.at);
            break;
        case R_MUTEX:
            r = sqf_mutex_timedlock(&tr.mu, tr.at);
            if (r == 0) sqf_mutex_unlock(&tr.mu);
            break;
        case R_COND:
            sqf_mutex_lock(&tr.mu);
            while (tr.tickets == 0 && r == 0)
                r = sqf_cond_timedwait(&tr.cv, &tr.mu, tr.at);
            if (tr.tickets > 0) { /* a ticket counts even when the wait timed out */
                tr.tickets--;
                r = 0;
            }
            sqf_mutex_unlock(&tr.mu);
            break;
        case R_RWLOCK:
            r = sqf_rwlock_timedwrlock(&tr.rw, tr.at);
            if (r == 0) sqf_rwlock_wrunlock(&tr.rw);
            break;
        case R_BARRIER:
            r = sqf_barrier_timedwait(&tr.bar, tr.at, NULL);
            break;
        }
        tr.timed_r = r;
        atomic_store(&tr.timed_done, 1);
        pthread_barrier_wait(&tr.round);
    }
}

static void *race_releaser(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_barrier_wait(&tr.round);
        if (tr.stop) return NULL;
        spin_until(tr.at + tr.jitter_ns);
        int r = 0;
        switch (tr.k) {
        case R_SEM:
            r = sqf_sem_release(&tr.sem, 1);
            break;
        case R_MUTEX:
            r = sqf_mutex_unlock_fair(&tr.mu);
            break; /* locked by main for us */
        case R_COND:
            sqf_mutex_lock(&tr.mu);
            tr.tickets++;
            r = sqf_cond_signal(&tr.cv);
            sqf_mutex_unlock(&tr.mu);
            break;
        case R_RWLOCK:
            r = sqf_rwlock_wrunlock(&tr.rw);
            break;
        case R_BARRIER:
            r = sqf_barrier_wait(&tr.bar, NULL);
            break;
        }
        tr.release_r = r;
        pthread_barrier_wait(&tr.round);
    }
}

/* cond only: a second, untimed waiter for a ticket.  If the timed waiter
 * was signalled and timed out without passing the signal on, this one
 * sleeps for ever with a ticket waiting (a lost wake-up). */
static sqf_event other_go;
static void *race_other(void *arg)
{
    (void)arg;
    for (;;) {
        sqf_event_wait(&other_go);
        sqf_event_clear(&other_go);
        if (tr.stop) return NULL;
        sqf_mutex_lock(&tr.mu);
        int r = 0;
        while (tr.tickets == 0 && r == 0)
            r = sqf_cond_wait(&tr.cv, &tr.mu);
        tr.tickets--;
        sqf_mutex_unlock(&tr.mu);
        tr.other_r = r;
        atomic_store(&tr.other_done, 1);
    }
}

static void test_timeout_at_handoff(enum race k, long rounds)
{
    memset(&tr, 0, sizeof tr);
    tr.k = k;
    pthread_barrier_init(&tr.round, NULL, 3);
    sqf_sem_init(&tr.sem, 0, 0, SQF_PRIVATE);
    sqf_mutex_init(&tr.mu, SQF_PRIVATE);
    sqf_cond_init(&tr.cv, SQF_PRIVATE);
    sqf_rwlock_init(&tr.rw, SQF_PRIVATE);
    sqf_barrier_init(&tr.bar, 2, SQF_PRIVATE);
    sqf_event_init(&other_go, SQF_PRIVATE);
    pthread_t a, b, o;
    CHECK_EQ(pthread_create(&a, NULL, race_timed, NULL), 0);
    CHECK_EQ(pthread_create(&b, NULL, race_releaser, NULL), 0);
    if (k == R_COND) CHECK_EQ(pthread_create(&o, NULL, race_other, NULL), 0);
    long bad = 0, stranded = 0;
    uint64_t rng = 0x9e3779b97f4a7c15u;
    for (long i = 0; i < rounds && !stranded; i++) {
        rng = rng * 6364136223846793005u + 1442695040888963407u;
        if (k == R_MUTEX) sqf_mutex_lock(&tr.mu); /* the releaser hands it over */
        if (k == R_RWLOCK) sqf_rwlock_wrlock(&tr.rw);
        atomic_store(&tr.timed_done, 0);
        atomic_store(&tr.other_done, 0);
        if (k == R_COND) sqf_event_set(&other_go);
        /* From 10 us early to 50 us late: a time-out becomes visible some
         * tens of us after its deadline on a busy machine. */
        tr.jitter_ns = (int)((rng >> 33) % 60001) - 10000;
        tr.at = sqf_now() + 30 * SQF_US;
        pthread_barrier_wait(&tr.round); /* go */
        pthread_barrier_wait(&tr.round); /* both returned */
        int r = tr.timed_r;
        if (r == 0)
            tr.got++;
        else if (r == ETIMEDOUT)
            tr.timedout++;
        else
            bad++;
        unsigned v = 0;
        switch (k) {
        case R_SEM: /* taken, or still there: never both, never neither */
            sqf_sem_getvalue(&tr.sem, &v);
            if (v != (r == 0 ? 0u : 1u) || tr.release_r != 0) bad++;
            if (v) sqf_sem_tryacquire(&tr.sem);
            break;
        case R_MUTEX:
        case R_RWLOCK: /* handed over or not, nobody may be left owning it */
            if (tr.release_r != 0) bad++;
            if (k == R_MUTEX ? sqf_mutex_trylock(&tr.mu) != 0 : sqf_rwlock_trywrlock(&tr.rw) != 0)
                bad++;
            else if (k == R_MUTEX)
                sqf_mutex_unlock(&tr.mu);
            else
                sqf_rwlock_wrunlock(&tr.rw);
            break;
        case R_COND: {
            /* One ticket was signalled.  If the timed waiter took it, give
             * the other waiter one more; otherwise the first one must reach
             * it without another signal. */
            if (r == 0) {
                sqf_mutex_lock(&tr.mu);
                tr.tickets++;
                sqf_cond_signal(&tr.cv);
                sqf_mutex_unlock(&tr.mu);
            }
            sqf_deadline give_up = sqf_after(2 * SQF_SEC);
            while (!atomic_load(&tr.other_done) && sqf_now() < give_up)
                pause_ms(0);
            if (!atomic_load(&tr.other_done)) {
                stranded++;
                fprintf(stderr, "cond: the untimed waiter was stranded (round %ld, timed r=%d)\n",
                        i, r);
                break;
            }
            sqf_mutex_lock(&tr.mu);
            if (tr.tickets != 0 || tr.other_r != 0) bad++;
            sqf_mutex_unlock(&tr.mu);
            break;
        }
        case R_BARRIER: /* the phase completed for both, or broke for both */
            if (r == 0 ? tr.release_r != 0 : tr.release_r != EPIPE) bad++;
            if (r != 0) CHECK_EQ(sqf_barrier_reset(&tr.bar), 0);
            break;
        }
        tr.rounds++;
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(stranded, 0);
    if (stranded) return; /* a thread is stuck: leave them, the checks already failed */
    tr.stop = 1;
    if (k == R_COND) sqf_event_set(&other_go);
    pthread_barrier_wait(&tr.round);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    if (k == R_COND) pthread_join(o, NULL);
    pthread_barrier_destroy(&tr.round);
    printf("time-out at the hand-off, %s: %ld rounds, %ld served, %ld timed out, books balanced\n",
           race_name[k], tr.rounds, tr.got, tr.timedout);
}

int main(void)
{
    watchdog(60);
    for (enum prim p = P_SEM; p <= P_WRLOCK; p++)
        test_cancel_at_wait(p);
    test_cancel_in_once();
    test_cancel_combiner();
    for (enum race k = R_SEM; k <= R_BARRIER; k++)
        test_timeout_at_handoff(k, soak(1500));
    return check_done();
}
