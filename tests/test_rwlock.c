/* test_rwlock.c: sqf_rwlock's contract: errors, the reader bound, try and
 * timed forms, sharing and exclusion, and the phase-fair policy, each set up
 * deterministically by watching the state word until the threads involved
 * are where the case needs them (then giving them a moment to fall asleep):
 * - a writer waiting behind a reader stops new readers;
 * - a writer's unlock lets every waiting reader in together, before the
 *   next waiting writer;
 * - a writer that times out lets the readers waiting behind it in;
 * - readers released that way are owed the lock: no writer takes the turn
 *   until each has claimed its place (a released reader is held still in a
 *   signal handler to show it);
 * - time-outs of readers and writers (including a writer the turn was being
 *   handed to) strand nobody;
 * - regression: a revoked hand-off must not strand a writer that went to
 *   sleep while the hand-off was in flight. */
#include <sys/mman.h>
#include <sys/wait.h>

#include <semaphore.h>

#include <squarefree/rwlock.h>

#include "atomic.h"
#include "check.h"
#include "park.h"
#include "wait.h"

#define R_UNIT  SQF_RWLOCK_READER_
#define WRITER  SQF_RWLOCK_WRITER_
#define HANDOFF SQF_RWLOCK_HANDOFF_
#define WSLEEP  SQF_RWLOCK_WSLEEP_
#define EPOCH   (~(uint64_t)0 << 32) /* the high half of state */

static uint64_t state_of(sqf_rwlock *l)
{
    return at_load64((sqf_word64 *)&l->state, SC);
}
static uint32_t held(sqf_rwlock *l)
{
    return state_of(l) / R_UNIT;
}
static uint32_t pending(sqf_rwlock *l)
{
    return (state_of(l) & SQF_RWLOCK_PMASK_) / SQF_RWLOCK_PENDING_;
}
/* Everything but EPOCH: 0 when idle. */
static uint64_t busy(sqf_rwlock *l)
{
    return state_of(l) & ~EPOCH;
}

/* Poll until cond holds (10 s at most), then check it. */
#define WAIT_UNTIL(cond)                                                                           \
    do {                                                                                           \
        sqf_deadline stop_ = sqf_after(10 * SQF_SEC);                                              \
        while (!(cond) && sqf_now() < stop_)                                                       \
            usleep(200);                                                                           \
        CHECK(cond);                                                                               \
    } while (0)

/* A state bit or count is set just before the sleep: let the thread sleep. */
static void settle(void)
{
    usleep(20 * 1000);
}

/* ---- a thread that takes the lock once ------------------------------------ */

static sqf_word stamp;      /* acquisition order */
static sqf_word rd_inside;  /* readers inside, counted by the op threads */
static sqf_word wr_inside;  /* writers inside */
static sqf_word rd_entered; /* readers that have got in (never decremented) */

struct op {
    sqf_rwlock *l;
    int write;
    sqf_deadline deadline; /* SQF_FOREVER: the untimed call */
    int together;          /* reader: stay (3 s at most) until this many readers have got in */
    sqf_word *go;          /* if set: hold the lock until *go != 0 */
    int hold_ms;           /* otherwise hold it this long */
    /* results */
    int result;
    sqf_word got;    /* 1 once it holds the lock */
    uint32_t order;  /* stamp when it got it */
    uint32_t others; /* writer: readers+writers inside then; reader: writers inside */
    int met;         /* reader: `together` readers were inside at once */
    pthread_t t;
};

static void *op_thread(void *arg)
{
    struct op *o = arg;
    int e;
    if (o->write)
        e = o->deadline == SQF_FOREVER ? sqf_rwlock_wrlock(o->l)
                                       : sqf_rwlock_timedwrlock(o->l, o->deadline);
    else
        e = o->deadline == SQF_FOREVER ? sqf_rwlock_rdlock(o->l)
                                       : sqf_rwlock_timedrdlock(o->l, o->deadline);
    o->result = e;
    if (e != 0) return NULL;
    o->order = at_add(&stamp, 1, SC) + 1;
    if (o->write)
        o->others = at_add(&wr_inside, 1, SC) + at_load(&rd_inside, SC);
    else {
        at_add(&rd_inside, 1, SC);
        at_add(&rd_entered, 1, SC);
        o->others = at_load(&wr_inside, SC);
    }
    at_store(&o->got, 1, SC);
    if (o->together) {
        /* Nobody leaves before the last has got in: if all get in, all
         * were inside at once. */
        sqf_deadline stop = sqf_after(3 * SQF_SEC);
        while (at_load(&rd_entered, SC) < (uint32_t)o->together && sqf_now() < stop)
            usleep(100);
        o->met = at_load(&rd_entered, SC) >= (uint32_t)o->together;
    }
    if (o->go) {
        while (!at_load(o->go, SC))
            usleep(200);
    } else if (o->hold_ms) {
        usleep((useconds_t)o->hold_ms * 1000);
    }
    at_sub(o->write ? &wr_inside : &rd_inside, 1, SC);
    CHECK_EQ(o->write ? sqf_rwlock_wrunlock(o->l) : sqf_rwlock_rdunlock(o->l), 0);
    return NULL;
}

static void start(struct op *o)
{
    o->result = -1;
    at_store(&o->got, 0, SC);
    if (pthread_create(&o->t, NULL, op_thread, o) != 0) CHECK(!"pthread_create");
}

static void join(struct op *o)
{
    pthread_join(o->t, NULL);
}

static int got(struct op *o)
{
    return (int)at_load(&o->got, SC);
}

static void reset_counters(void)
{
    at_store(&stamp, 0, SC);
    at_store(&rd_inside, 0, SC);
    at_store(&wr_inside, 0, SC);
    at_store(&rd_entered, 0, SC);
}

/* ---- errors --------------------------------------------------------------- */

static void test_bad_input(void)
{
    CHECK_EQ(sqf_rwlock_init(NULL, 0), EINVAL);
    CHECK_EQ(sqf_rwlock_destroy(NULL), EINVAL);
    CHECK_EQ(sqf_rwlock_rdlock(NULL), EINVAL);
    CHECK_EQ(sqf_rwlock_tryrdlock(NULL), EINVAL);
    CHECK_EQ(sqf_rwlock_timedrdlock(NULL, SQF_FOREVER), EINVAL);
    CHECK_EQ(sqf_rwlock_timedrdlock(NULL, 0), EINVAL);
    CHECK_EQ(sqf_rwlock_rdunlock(NULL), EINVAL);
    CHECK_EQ(sqf_rwlock_wrlock(NULL), EINVAL);
    CHECK_EQ(sqf_rwlock_trywrlock(NULL), EINVAL);
    CHECK_EQ(sqf_rwlock_timedwrlock(NULL, SQF_FOREVER), EINVAL);
    CHECK_EQ(sqf_rwlock_timedwrlock(NULL, 0), EINVAL);
    CHECK_EQ(sqf_rwlock_wrunlock(NULL), EINVAL);

    sqf_rwlock l = SQF_RWLOCK_INIT;
    CHECK_EQ(sqf_rwlock_init(&l, 2), EINVAL);
    CHECK_EQ(sqf_rwlock_init(&l, ~0u), EINVAL);
    CHECK_EQ(sqf_rwlock_init(&l, SQF_SHARED | 2), EINVAL);
    CHECK_EQ(state_of(&l), 0);
    CHECK_EQ(at_load((sqf_word *)&l.readers, SC), 0);
    if (SQF_TEST_SHARED_EXPECTED) {
        CHECK_EQ(sqf_rwlock_init(&l, SQF_SHARED), 0);
        CHECK_EQ(at_load((sqf_word *)&l.readers, SC), 1); /* SHARED */
        CHECK_EQ(state_of(&l), 0);
    } else {
        CHECK_EQ(sqf_rwlock_init(&l, SQF_SHARED), ENOTSUP);
    }
    CHECK_EQ(sqf_rwlock_init(&l, SQF_PRIVATE), 0);
    CHECK_EQ(at_load((sqf_word *)&l.readers, SC), 0);

    /* Unlocking what is not held: EPERM, and nothing changes. */
    CHECK_EQ(sqf_rwlock_rdunlock(&l), EPERM);
    CHECK_EQ(sqf_rwlock_wrunlock(&l), EPERM);
    CHECK_EQ(state_of(&l), 0);

    CHECK_EQ(sqf_rwlock_rdlock(&l), 0);
    uint32_t v = state_of(&l);
    CHECK_EQ(v, R_UNIT);
    CHECK_EQ(sqf_rwlock_wrunlock(&l), EPERM); /* read-held: no writer holds it */
    CHECK_EQ(state_of(&l), v);
    CHECK_EQ(sqf_rwlock_rdunlock(&l), 0);
    CHECK_EQ(sqf_rwlock_rdunlock(&l), EPERM);
    CHECK_EQ(state_of(&l), 0);

    CHECK_EQ(sqf_rwlock_wrlock(&l), 0);
    CHECK_EQ(state_of(&l), WRITER);
    CHECK_EQ(sqf_rwlock_rdunlock(&l), EPERM); /* write-held: no reader holds it */
    CHECK_EQ(state_of(&l), WRITER);
    CHECK_EQ(sqf_rwlock_wrunlock(&l), 0);
    CHECK_EQ(sqf_rwlock_wrunlock(&l), EPERM);
    CHECK_EQ(state_of(&l), 0);
}

/* ---- try and timed forms, destroy ----------------------------------------- */

static void test_basic(void)
{
    sqf_rwlock l = SQF_RWLOCK_INIT;
    CHECK_EQ(sqf_rwlock_destroy(&l), 0);

    /* Read-held (twice, by this thread). */
    CHECK_EQ(sqf_rwlock_rdlock(&l), 0);
    CHECK_EQ(sqf_rwlock_tryrdlock(&l), 0);
    CHECK_EQ(state_of(&l), 2 * R_UNIT);
    CHECK_EQ(sqf_rwlock_trywrlock(&l), EBUSY);
    CHECK_EQ(sqf_rwlock_timedwrlock(&l, sqf_now() - 1), ETIMEDOUT); /* try once */
    CHECK_EQ(sqf_rwlock_timedwrlock(&l, INT64_MIN), ETIMEDOUT);
    CHECK_EQ(state_of(&l), 2 * R_UNIT); /* no turn taken and given back */
    CHECK_EQ(sqf_rwlock_destroy(&l), EBUSY);
    sqf_deadline t0 = sqf_now();
    CHECK_EQ(sqf_rwlock_timedwrlock(&l, t0 + 30 * SQF_MS), ETIMEDOUT);
    CHECK(sqf_now() - t0 >= 30 * SQF_MS);
    CHECK_EQ(state_of(&l), 2 * R_UNIT);                     /* it took the turn, then gave it up */
    CHECK_EQ(sqf_rwlock_timedrdlock(&l, sqf_now() - 1), 0); /* free for readers: past deadline ok */
    CHECK_EQ(sqf_rwlock_rdunlock(&l), 0);
    CHECK_EQ(sqf_rwlock_rdunlock(&l), 0);
    CHECK_EQ(sqf_rwlock_rdunlock(&l), 0);
    CHECK_EQ(state_of(&l), 0);
    CHECK_EQ(sqf_rwlock_destroy(&l), 0);

    /* Write-held. */
    CHECK_EQ(sqf_rwlock_timedwrlock(&l, sqf_now() - 1), 0); /* free: a past deadline still tries */
    CHECK_EQ(sqf_rwlock_trywrlock(&l), EBUSY);
    CHECK_EQ(sqf_rwlock_tryrdlock(&l), EBUSY);
    CHECK_EQ(sqf_rwlock_timedrdlock(&l, sqf_now() - 1), ETIMEDOUT);
    CHECK_EQ(sqf_rwlock_timedwrlock(&l, sqf_now() - 1), ETIMEDOUT);
    CHECK_EQ(state_of(&l), WRITER);
    t0 = sqf_now();
    CHECK_EQ(sqf_rwlock_timedrdlock(&l, t0 + 30 * SQF_MS), ETIMEDOUT);
    CHECK(sqf_now() - t0 >= 30 * SQF_MS);
    CHECK_EQ(state_of(&l), WRITER); /* it waited as PENDING, then left */
    t0 = sqf_now();
    CHECK_EQ(sqf_rwlock_timedwrlock(&l, t0 + 30 * SQF_MS), ETIMEDOUT);
    CHECK(sqf_now() - t0 >= 30 * SQF_MS);
    CHECK_EQ(state_of(&l) & ~WSLEEP, WRITER); /* WSLEEP may be left: stale */
    CHECK_EQ(sqf_rwlock_destroy(&l), EBUSY);
    CHECK_EQ(sqf_rwlock_wrunlock(&l), 0); /* hands off to nobody: revoked */
    CHECK_EQ(busy(&l), 0);
    CHECK_EQ(sqf_rwlock_destroy(&l), 0);
    CHECK_EQ(sqf_rwlock_trywrlock(&l), 0);
    CHECK_EQ(sqf_rwlock_wrunlock(&l), 0);
    CHECK_EQ(sqf_rwlock_tryrdlock(&l), 0);
    CHECK_EQ(sqf_rwlock_rdunlock(&l), 0);
    CHECK_EQ(busy(&l), 0);
}

/* The reader bound: set the count near it by writing the word directly. */
static void test_overflow(void)
{
    sqf_rwlock l = SQF_RWLOCK_INIT;
    const uint32_t max = SQF_RWLOCK_MAX_READERS;
    at_store64((sqf_word64 *)&l.state, (max - 1) * R_UNIT, SC);
    CHECK_EQ(sqf_rwlock_rdlock(&l), 0); /* the last place */
    CHECK_EQ(held(&l), max);
    CHECK_EQ(sqf_rwlock_rdlock(&l), EOVERFLOW);
    CHECK_EQ(sqf_rwlock_tryrdlock(&l), EOVERFLOW);
    CHECK_EQ(sqf_rwlock_timedrdlock(&l, sqf_after(10 * SQF_MS)), EOVERFLOW);
    CHECK_EQ(sqf_rwlock_timedrdlock(&l, sqf_now() - 1), EOVERFLOW);
    CHECK_EQ(state_of(&l), max * R_UNIT);
    CHECK_EQ(sqf_rwlock_trywrlock(&l), EBUSY);
    CHECK_EQ(sqf_rwlock_rdunlock(&l), 0);
    CHECK_EQ(held(&l), max - 1);
    CHECK_EQ(sqf_rwlock_tryrdlock(&l), 0);
    CHECK_EQ(sqf_rwlock_rdunlock(&l), 0);

    /* Waiting readers count too: with a writer's turn, READERS + PENDING
     * at the bound refuses a reader that would wait, without waiting. */
    uint32_t v = WRITER | (max - 1) * R_UNIT | SQF_RWLOCK_PENDING_;
    at_store64((sqf_word64 *)&l.state, v, SC);
    sqf_deadline t0 = sqf_now();
    CHECK_EQ(sqf_rwlock_timedrdlock(&l, sqf_after(SQF_SEC)), EOVERFLOW);
    CHECK(sqf_now() - t0 < SQF_SEC / 2);
    CHECK_EQ(sqf_rwlock_tryrdlock(&l), EOVERFLOW);
    CHECK_EQ(state_of(&l), v);
    at_store64((sqf_word64 *)&l.state, 0, SC);
}

/* ---- sharing and exclusion ------------------------------------------------ */

static void test_readers_share(void)
{
    sqf_rwlock l = SQF_RWLOCK_INIT;
    reset_counters();
    struct op r[2];
    for (int i = 0; i < 2; i++) {
        r[i] = (struct op){.l = &l, .deadline = SQF_FOREVER, .together = 2};
        start(&r[i]);
    }
    for (int i = 0; i < 2; i++) {
        join(&r[i]);
        CHECK_EQ(r[i].result, 0);
        CHECK_EQ(r[i].met, 1); /* both held the read lock at once */
    }
    CHECK_EQ(busy(&l), 0);
}

/* A writer excludes readers and writers; its unlock lets the reader in
 * first (a grant), then the writer. */
static void test_writer_excludes(void)
{
    sqf_rwlock l = SQF_RWLOCK_INIT;
    reset_counters();
    CHECK_EQ(sqf_rwlock_wrlock(&l), 0);
    struct op r = {.l = &l, .deadline = SQF_FOREVER, .hold_ms = 20};
    struct op w = {.l = &l, .write = 1, .deadline = SQF_FOREVER};
    start(&r);
    WAIT_UNTIL(pending(&l) == 1);
    start(&w);
    WAIT_UNTIL(state_of(&l) & WSLEEP);
    settle();
    usleep(30 * 1000);
    CHECK(!got(&r));
    CHECK(!got(&w));
    CHECK_EQ(sqf_rwlock_wrunlock(&l), 0);
    join(&r);
    join(&w);
    CHECK_EQ(r.result, 0);
    CHECK_EQ(w.result, 0);
    CHECK_EQ(r.order, 1);
    CHECK_EQ(w.order, 2);
    CHECK_EQ(r.others, 0); /* no writer inside with the reader */
    CHECK_EQ(w.others, 0); /* nobody inside with the writer */
    CHECK_EQ(busy(&l), 0);
}

/* ---- the policy ----------------------------------------------------------- */

/* (a) A reader holds, a writer waits: new readers do not barge past it. */
static void test_waiting_writer_stops_readers(void)
{
    sqf_rwlock l = SQF_RWLOCK_INIT;
    reset_counters();
    CHECK_EQ(sqf_rwlock_rdlock(&l), 0);
    struct op w = {.l = &l, .write = 1, .deadline = SQF_FOREVER, .hold_ms = 20};
    start(&w);
    WAIT_UNTIL((state_of(&l) & WRITER) && held(&l) == 1);
    settle();
    CHECK_EQ(sqf_rwlock_tryrdlock(&l), EBUSY);
    CHECK_EQ(sqf_rwlock_timedrdlock(&l, sqf_now() - 1), ETIMEDOUT);
    struct op r = {.l = &l, .deadline = SQF_FOREVER};
    start(&r);
    WAIT_UNTIL(pending(&l) == 1);
    usleep(50 * 1000);
    CHECK(!got(&r)); /* it waits */
    CHECK(!got(&w));
    CHECK_EQ(held(&l), 1);
    CHECK_EQ(sqf_rwlock_rdunlock(&l), 0); /* the writer first, then the reader */
    join(&w);
    join(&r);
    CHECK_EQ(w.result, 0);
    CHECK_EQ(r.result, 0);
    CHECK_EQ(w.order, 1);
    CHECK_EQ(r.order, 2);
    CHECK_EQ(busy(&l), 0);
}

/* (b) A writer's unlock lets every waiting reader in at once, before the
 * next waiting writer: each reader waits until all K are inside. */
static void test_unlock_admits_all_readers(void)
{
    enum { K = 5 };
    sqf_rwlock l = SQF_RWLOCK_INIT;
    reset_counters();
    CHECK_EQ(sqf_rwlock_rdlock(&l), 0);
    struct op w1 = {.l = &l, .write = 1, .deadline = SQF_FOREVER, .hold_ms = 20};
    start(&w1);
    WAIT_UNTIL((state_of(&l) & WRITER) && held(&l) == 1);
    struct op r[K];
    for (int i = 0; i < K; i++) {
        r[i] = (struct op){.l = &l, .deadline = SQF_FOREVER, .together = K};
        start(&r[i]);
    }
    WAIT_UNTIL(pending(&l) == K);
    struct op w2 = {.l = &l, .write = 1, .deadline = SQF_FOREVER};
    start(&w2);
    WAIT_UNTIL(state_of(&l) & WSLEEP);
    settle();
    CHECK(!got(&w1) && !got(&w2));
    CHECK_EQ(sqf_rwlock_rdunlock(&l), 0);
    join(&w1);
    for (int i = 0; i < K; i++)
        join(&r[i]);
    join(&w2);
    CHECK_EQ(w1.order, 1);
    CHECK_EQ(w2.order, K + 2); /* after every reader */
    CHECK_EQ(w2.others, 0);
    for (int i = 0; i < K; i++) {
        CHECK_EQ(r[i].result, 0);
        CHECK_EQ(r[i].met, 1); /* all K inside at once */
        CHECK_EQ(r[i].others, 0);
    }
    CHECK_EQ(busy(&l), 0);
}

/* (c) A writer that times out while readers wait behind it lets them in,
 * while the reader it waited for still holds the lock. */
static void test_timed_out_writer_lets_readers_in(void)
{
    enum { K = 3 };
    sqf_rwlock l = SQF_RWLOCK_INIT;
    reset_counters();
    CHECK_EQ(sqf_rwlock_rdlock(&l), 0);
    struct op w = {.l = &l, .write = 1, .deadline = sqf_after(300 * SQF_MS)};
    start(&w);
    WAIT_UNTIL((state_of(&l) & WRITER) && held(&l) == 1);
    sqf_word go = 0;
    struct op r[K];
    for (int i = 0; i < K; i++) {
        r[i] = (struct op){.l = &l, .deadline = SQF_FOREVER, .go = &go};
        start(&r[i]);
    }
    WAIT_UNTIL(pending(&l) == K);
    join(&w);
    CHECK_EQ(w.result, ETIMEDOUT);
    for (int i = 0; i < K; i++)
        WAIT_UNTIL(got(&r[i]));
    CHECK_EQ(held(&l), K + 1); /* ours is still held */
    CHECK_EQ(pending(&l), 0);
    CHECK_EQ(state_of(&l) & WRITER, 0);
    at_store(&go, 1, SC);
    for (int i = 0; i < K; i++) {
        join(&r[i]);
        CHECK_EQ(r[i].result, 0);
    }
    CHECK_EQ(sqf_rwlock_rdunlock(&l), 0);
    CHECK_EQ(busy(&l), 0);
}

/* (c') ...but if another writer sleeps, the turn passes to it, and the
 * readers wait for that writer (as they would have anyway); nobody hangs. */
static void test_timed_out_writer_passes_turn(void)
{
    sqf_rwlock l = SQF_RWLOCK_INIT;
    reset_counters();
    CHECK_EQ(sqf_rwlock_rdlock(&l), 0);
    struct op w1 = {.l = &l, .write = 1, .deadline = sqf_after(300 * SQF_MS)};
    start(&w1);
    WAIT_UNTIL((state_of(&l) & WRITER) && held(&l) == 1);
    struct op r[2];
    for (int i = 0; i < 2; i++) {
        r[i] = (struct op){.l = &l, .deadline = SQF_FOREVER};
        start(&r[i]);
    }
    WAIT_UNTIL(pending(&l) == 2);
    struct op w2 = {.l = &l, .write = 1, .deadline = SQF_FOREVER, .hold_ms = 10};
    start(&w2);
    WAIT_UNTIL(state_of(&l) & WSLEEP);
    join(&w1);
    CHECK_EQ(w1.result, ETIMEDOUT);
    /* w2 has claimed the turn and waits for our reader. */
    WAIT_UNTIL((state_of(&l) & (WRITER | HANDOFF)) == WRITER);
    settle();
    CHECK_EQ(pending(&l), 2);
    CHECK(!got(&r[0]) && !got(&r[1]) && !got(&w2));
    CHECK_EQ(sqf_rwlock_rdunlock(&l), 0);
    join(&w2);
    for (int i = 0; i < 2; i++) {
        join(&r[i]);
        CHECK_EQ(r[i].result, 0);
        CHECK(r[i].order > w2.order);
    }
    CHECK_EQ(w2.result, 0);
    CHECK_EQ(busy(&l), 0);
}

/* Parking: a signal handler that holds a thread still, out of its futex
 * wait, so that a wake-up meant for it finds nobody. */

static void park_thread(pthread_t t)
{
    park_threads(&t, 1);
}

/* Readers released by a writer that gave up are owed the lock: while one of
 * them (parked) has not claimed its place, no writer takes the turn; when it
 * does, the turn goes straight to the writer that waited, which then waits
 * for the readers inside. */
static void test_released_readers_are_owed(void)
{
    sqf_rwlock l = SQF_RWLOCK_INIT;
    reset_counters();
    CHECK_EQ(sqf_rwlock_rdlock(&l), 0);
    struct op w1 = {.l = &l, .write = 1, .deadline = sqf_after(500 * SQF_MS)};
    start(&w1);
    WAIT_UNTIL((state_of(&l) & WRITER) && held(&l) == 1);
    sqf_word go = 0;
    /* Its deadline passes while it is parked: released, it must still take
     * its place (and pass the turn on), not just leave. */
    struct op r = {.l = &l, .deadline = sqf_after(200 * SQF_MS), .go = &go};
    start(&r);
    WAIT_UNTIL(pending(&l) == 1);
    settle();
    park_thread(r.t);
    join(&w1);
    CHECK_EQ(w1.result, ETIMEDOUT);
    /* Released, not yet claimed. */
    CHECK_EQ(state_of(&l) & WRITER, 0);
    CHECK_EQ(pending(&l), 1);
    CHECK_EQ(sqf_rwlock_trywrlock(&l), EBUSY);
    CHECK_EQ(sqf_rwlock_timedwrlock(&l, sqf_after(10 * SQF_MS)), ETIMEDOUT);
    CHECK_EQ(sqf_rwlock_destroy(&l), EBUSY);
    CHECK_EQ(sqf_rwlock_tryrdlock(&l), 0); /* new readers need not wait */
    CHECK_EQ(sqf_rwlock_rdunlock(&l), 0);
    struct op w2 = {.l = &l, .write = 1, .deadline = SQF_FOREVER};
    start(&w2);
    WAIT_UNTIL(state_of(&l) & WSLEEP);
    settle();
    CHECK(!got(&w2));
    CHECK_EQ(state_of(&l) & WRITER, 0);
    CHECK(sqf_now() > r.deadline);
    unpark_threads(1); /* the reader claims its place and hands w2 the turn */
    WAIT_UNTIL(got(&r));
    WAIT_UNTIL((state_of(&l) & (WRITER | HANDOFF)) == WRITER);
    CHECK_EQ(held(&l), 2);
    CHECK_EQ(pending(&l), 0);
    CHECK(!got(&w2));
    at_store(&go, 1, SC);
    join(&r);
    CHECK_EQ(r.result, 0);
    CHECK(!got(&w2));
    CHECK_EQ(sqf_rwlock_rdunlock(&l), 0);
    join(&w2);
    CHECK_EQ(w2.result, 0);
    CHECK_EQ(w2.others, 0);
    CHECK_EQ(busy(&l), 0);
}

/* A released reader that does not claim its place (parked) for
 * SQF_RWLOCK_STALL_NS while a writer waits loses it: the writer revokes it
 * and takes the lock.  Unparked, the reader finds out, waits for that
 * writer, and gets in after it, counted once. */
static void test_stalled_reader_is_revoked(void)
{
    sqf_rwlock l = SQF_RWLOCK_INIT;
    reset_counters();
    CHECK_EQ(sqf_rwlock_wrlock(&l), 0);
    struct op r = {.l = &l, .deadline = SQF_FOREVER};
    start(&r);
    WAIT_UNTIL(pending(&l) == 1);
    settle();
    park_thread(r.t);
    CHECK_EQ(sqf_rwlock_wrunlock(&l), 0); /* releases the parked reader */
    CHECK_EQ(state_of(&l) & WRITER, 0);
    CHECK_EQ(pending(&l), 1);
    uint64_t epoch = state_of(&l) & EPOCH;
    sqf_deadline t0 = sqf_now();
    CHECK_EQ(sqf_rwlock_trywrlock(&l), EBUSY); /* owed, and trylock never revokes */
    CHECK_EQ(sqf_rwlock_wrlock(&l), 0);        /* revokes */
    CHECK(sqf_now() - t0 >= SQF_RWLOCK_STALL_NS);
    CHECK_EQ(pending(&l), 0);
    CHECK_EQ(state_of(&l) & EPOCH, epoch + SQF_RWLOCK_EUNIT_);
    unpark_threads(1);
    WAIT_UNTIL(pending(&l) == 1); /* waits again, for this write phase */
    CHECK(!got(&r));
    CHECK_EQ(sqf_rwlock_wrunlock(&l), 0);
    join(&r);
    CHECK_EQ(r.result, 0);
    CHECK_EQ(busy(&l), 0);
}

/* The same, with the writer asleep before any reader waits: it went to
 * sleep behind another writer's turn with nobody pending, then a reader
 * queued behind that turn and was released by its end without claiming
 * (parked).  No hand-off will come, so the sleeping writer must look again
 * on its own and revoke the reader within about two stall times, not sleep
 * until its deadline. */
static void test_writer_asleep_before_reader_revokes(void)
{
    sqf_rwlock l = SQF_RWLOCK_INIT;
    reset_counters();
    CHECK_EQ(sqf_rwlock_wrlock(&l), 0);
    struct op w = {.l = &l, .write = 1, .deadline = sqf_after(4 * SQF_RWLOCK_STALL_NS)};
    start(&w);
    WAIT_UNTIL(state_of(&l) & WSLEEP);
    settle();
    CHECK_EQ(pending(&l), 0); /* nobody waited when it went to sleep */
    struct op r = {.l = &l, .deadline = SQF_FOREVER};
    start(&r);
    WAIT_UNTIL(pending(&l) == 1);
    settle();
    park_thread(r.t);
    CHECK_EQ(sqf_rwlock_wrunlock(&l), 0); /* releases the parked reader; no hand-off */
    join(&w);
    CHECK_EQ(w.result, 0); /* revoked the reader (before: ETIMEDOUT at its deadline) */
    unpark_threads(1);
    join(&r);
    CHECK_EQ(r.result, 0);
    CHECK_EQ(busy(&l), 0);
}

/* Writers among themselves: the turn is handed to sleepers in the order
 * they went to sleep, and no barging trylock can take it meanwhile. */
static void test_writers_fifo_handoff(void)
{
    sqf_rwlock l = SQF_RWLOCK_INIT;
    reset_counters();
    CHECK_EQ(sqf_rwlock_wrlock(&l), 0);
    struct op w[3];
    for (int i = 0; i < 3; i++) {
        w[i] = (struct op){.l = &l, .write = 1, .deadline = SQF_FOREVER, .hold_ms = 5};
        start(&w[i]);
        if (i == 0) WAIT_UNTIL(state_of(&l) & WSLEEP);
        usleep(30 * 1000); /* asleep before the next one arrives */
    }
    CHECK_EQ(sqf_rwlock_wrunlock(&l), 0);
    if (sqf_rwlock_trywrlock(&l) == 0) { /* only once all three are through */
        for (int i = 0; i < 3; i++)
            CHECK_EQ(w[i].order, (uint32_t)i + 1);
        CHECK_EQ(sqf_rwlock_wrunlock(&l), 0);
    }
    for (int i = 0; i < 3; i++) {
        join(&w[i]);
        CHECK_EQ(w[i].result, 0);
        CHECK_EQ(w[i].order, (uint32_t)i + 1);
        CHECK_EQ(w[i].others, 0);
    }
    CHECK_EQ(busy(&l), 0);
}

/* Time-outs strand nobody: a waiting reader that times out leaves PENDING;
 * a hand-off to a writer that has timed out is revoked, releasing the
 * readers; and a crowd of timed waiters racing an unlock lets the untimed
 * ones through. */
static void test_timeouts(void)
{
    sqf_rwlock l = SQF_RWLOCK_INIT;
    reset_counters();

    /* Hand-off to a writer that timed out, with a reader waiting. */
    CHECK_EQ(sqf_rwlock_wrlock(&l), 0);
    struct op r = {.l = &l, .deadline = SQF_FOREVER};
    start(&r);
    WAIT_UNTIL(pending(&l) == 1);
    struct op tw = {.l = &l, .write = 1, .deadline = sqf_after(50 * SQF_MS)};
    start(&tw);
    WAIT_UNTIL(state_of(&l) & WSLEEP);
    join(&tw);
    CHECK_EQ(tw.result, ETIMEDOUT);
    CHECK(state_of(&l) & WSLEEP); /* stale */
    CHECK_EQ(sqf_rwlock_wrunlock(&l), 0);
    join(&r);
    CHECK_EQ(r.result, 0);
    CHECK_EQ(busy(&l), 0); /* the hand-off was revoked */
    CHECK_EQ(sqf_rwlock_trywrlock(&l), 0);

    /* A crowd of timed waiters, and an untimed one of each kind. */
    enum { N = 8 };
    struct op t[N + 2];
    for (int i = 0; i < N; i++) {
        t[i] = (struct op){.l = &l, .write = i % 2, .deadline = sqf_after(40 * SQF_MS)};
        start(&t[i]);
    }
    t[N] = (struct op){.l = &l, .deadline = SQF_FOREVER};
    t[N + 1] = (struct op){.l = &l, .write = 1, .deadline = SQF_FOREVER};
    start(&t[N]);
    start(&t[N + 1]);
    usleep(39 * 1000);
    CHECK_EQ(sqf_rwlock_wrunlock(&l), 0); /* races the time-outs */
    for (int i = 0; i < N + 2; i++) {
        join(&t[i]);
        CHECK(t[i].result == 0 || (i < N && t[i].result == ETIMEDOUT));
    }
    CHECK_EQ(busy(&l), 0);
    CHECK_EQ(sqf_rwlock_trywrlock(&l), 0);
    CHECK_EQ(sqf_rwlock_wrunlock(&l), 0);
    CHECK_EQ(busy(&l), 0);
}

/* Regression: a hand-off whose wake-up finds nobody is revoked.  A writer
 * that arrived while it was in flight saw WRITER|HANDOFF with WSLEEP already
 * set, so it went to sleep without touching `state`; a revoke that merely
 * cleared WSLEEP left it asleep with the lock free and nobody to wake it.
 * Each attempt: we hold the lock and leave a stale WSLEEP behind (our own
 * timed wrlock, timed out); the other writer is released at the moment we
 * unlock, so it often arrives inside that window (about one attempt in five
 * on a 2-CPU machine stranded it).  It must get the lock within 1 s. */
static sqf_word race_go, race_done, race_quit;

static void *late_writer(void *arg)
{
    sqf_rwlock *l = arg;
    int e1 = 0, e2 = 0;
    for (uint32_t n = 1;; n++) {
        while (at_load(&race_go, ACQ) != n) /* spin: react within the window */
            if (at_load(&race_quit, RLX)) {
                CHECK_EQ(e1, 0);
                CHECK_EQ(e2, 0);
                return NULL;
            }
        e1 |= sqf_rwlock_wrlock(l);
        e2 |= sqf_rwlock_wrunlock(l);
        at_store(&race_done, n, REL);
    }
}

static void test_regression_revoke_strands_late_sleeper(void)
{
    static sqf_rwlock l = SQF_RWLOCK_INIT;
    at_store(&race_go, 0, SC);
    at_store(&race_done, 0, SC);
    at_store(&race_quit, 0, SC);
    pthread_t t;
    pthread_create(&t, NULL, late_writer, &l);
    int stale = 0, attempts = (int)soak(1000);
    for (uint32_t n = 1; n <= (uint32_t)attempts; n++) {
        CHECK_EQ(sqf_rwlock_wrlock(&l), 0);
        CHECK_EQ(sqf_rwlock_timedwrlock(&l, sqf_after(20 * SQF_US)), ETIMEDOUT);
        stale += (state_of(&l) & WSLEEP) != 0;
        at_store(&race_go, n, REL);
        CHECK_EQ(sqf_rwlock_wrunlock(&l), 0);
        sqf_deadline stop = sqf_after(SQF_SEC);
        while (at_load(&race_done, ACQ) != n && sqf_now() < stop)
            sched_yield();
        if (at_load(&race_done, ACQ) != n) {
            CHECK(!"a writer was left asleep with the lock free");
            /* Rescue it, so that the rest of the test can run. */
            at_add((sqf_word *)&l.writers, 1, SC);
            sqf_wake((sqf_word *)&l.writers, INT32_MAX, false);
            while (at_load(&race_done, ACQ) != n)
                sched_yield();
            break;
        }
    }
    at_store(&race_quit, 1, SC);
    pthread_join(t, NULL);
    CHECK(stale > 0); /* the setup did leave WSLEEP stale */
    CHECK_EQ(busy(&l), 0);
}

/* ---- SQF_SHARED: two processes ------------------------------------------- */

static void test_shared(void)
{
    sqf_rwlock probe;
    if (!SQF_TEST_SHARED_EXPECTED) {
        CHECK_EQ(sqf_rwlock_init(&probe, SQF_SHARED), ENOTSUP);
        return;
    }
    struct shm {
        sqf_rwlock l;
        long a, b;
        long bad;
    } *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(s != MAP_FAILED);
    if (s == MAP_FAILED) return;
    CHECK_EQ(sqf_rwlock_init(&s->l, SQF_SHARED), 0);
    const long per = 20000;
    pid_t pid = fork();
    if (pid == 0) {
        for (long i = 0; i < per; i++) {
            if (i % 4 == 0) {
                sqf_rwlock_wrlock(&s->l);
                s->a++;
                s->b++;
                sqf_rwlock_wrunlock(&s->l);
            } else {
                sqf_rwlock_rdlock(&s->l);
                if (s->a != s->b) s->bad++;
                sqf_rwlock_rdunlock(&s->l);
            }
        }
        _exit(0);
    }
    for (long i = 0; i < per; i++) {
        if (i % 4 == 0) {
            CHECK_EQ(sqf_rwlock_wrlock(&s->l), 0);
            s->a++;
            s->b++;
            CHECK_EQ(sqf_rwlock_wrunlock(&s->l), 0);
        } else {
            CHECK_EQ(sqf_rwlock_rdlock(&s->l), 0);
            if (s->a != s->b) s->bad++;
            CHECK_EQ(sqf_rwlock_rdunlock(&s->l), 0);
        }
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ(s->a, per / 2);
    CHECK_EQ(s->b, per / 2);
    CHECK_EQ(s->bad, 0);
    CHECK_EQ(busy(&s->l), 0);
    munmap(s, sizeof *s);
}

int main(void)
{
    watchdog(60);
    park_init();
    test_bad_input();
    test_basic();
    test_overflow();
    test_readers_share();
    test_writer_excludes();
    test_waiting_writer_stops_readers();
    test_unlock_admits_all_readers();
    test_timed_out_writer_lets_readers_in();
    test_timed_out_writer_passes_turn();
    test_released_readers_are_owed();
    test_stalled_reader_is_revoked();
    test_writer_asleep_before_reader_revokes();
    test_writers_fifo_handoff();
    test_timeouts();
    test_regression_revoke_strands_late_sleeper();
    test_shared();
    return check_done();
}
