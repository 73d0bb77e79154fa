/* test_loop.c: sqf_loop, every op and every errno: completing at once,
 * completing from dispatch after a thread's release, time-outs, tokens,
 * sqf_loop_cancel, hand-offs between threads and loop waits, and bad input.
 * Every check runs on both backends: the fallback (always), and io_uring;
 * in a build without io_uring (no liburing, or the portable wait backend)
 * it checks that SQF_LOOP_URING is refused with ENOTSUP, and on a kernel
 * without io_uring's futex operations it reports itself skipped (77) after
 * checking the fallback. */
#include <poll.h>
#include <string.h>
#include <time.h>

#include <squarefree.h>
#include <squarefree/loop.h>

#include "atomic.h"
#include "barrier_word.h"
#include "check.h"

static sqf_loop *loop;

/* Completions: the result each op's callback got, and how many ran. */
#define MAXOPS 64
static sqf_loop_op ops[MAXOPS];
static int results[MAXOPS];
static int done;

static void cb(sqf_loop_op *op, int result, void *arg)
{
    CHECK(arg == (void *)&ops[op - ops]); /* arg is the op's own slot */
    results[op - ops] = result;
    done++;
}

/* Dispatch until `want` callbacks have run in all, waiting on the loop's fd
 * (at most 5 s: a lost completion fails the check instead of hanging). */
static void run_until(int want)
{
    sqf_deadline stop = sqf_after(5 * SQF_SEC);
    while (done < want && sqf_now() < stop) {
        struct pollfd p = {sqf_loop_fd(loop), POLLIN, 0};
        poll(&p, 1, 100);
        CHECK(sqf_loop_dispatch(loop) >= 0);
    }
    CHECK_EQ(done, want);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, ms % 1000 * 1000000};
    nanosleep(&ts, NULL);
}

/* A thread that runs fn(arg) after a short delay, while the loop waits. */
struct later {
    pthread_t t;
    void (*fn)(void *);
    void *arg;
};
static void *later_main(void *p)
{
    struct later *l = p;
    sleep_ms(20);
    l->fn(l->arg);
    return NULL;
}
static void after_a_while(struct later *l, void (*fn)(void *), void *arg)
{
    l->fn = fn;
    l->arg = arg;
    CHECK_EQ(pthread_create(&l->t, NULL, later_main, l), 0);
}
static void join(struct later *l)
{
    pthread_join(l->t, NULL);
}

/* The callback and its arg for op i. */
#define CB(i) cb, &ops[i]

static void do_release(void *s)
{
    CHECK_EQ(sqf_sem_release(s, 1), 0);
}
static void do_set(void *e)
{
    CHECK_EQ(sqf_event_set(e), 0);
}
static void do_cancel(void *t)
{
    CHECK_EQ(sqf_cancel_cancel(t), 0);
}
static void do_unlock_fair(void *m)
{
    CHECK_EQ(sqf_mutex_unlock_fair(m), 0);
}
static void do_count_down(void *l)
{
    CHECK_EQ(sqf_latch_count_down(l, 1), 0);
}
static void do_down(void *c)
{
    CHECK_EQ(sqf_countdown_down(c), 0);
}
static void do_barrier(void *b)
{
    CHECK_EQ(sqf_barrier_wait(b, NULL), 0);
}
static void do_wrunlock(void *l)
{
    CHECK_EQ(sqf_rwlock_wrunlock(l), 0);
}

static void test_bad_input(void)
{
    sqf_sem s;
    sqf_sem_init(&s, 0, 0, SQF_PRIVATE);
    CHECK_EQ(sqf_loop_create(NULL, 0), EINVAL);
    sqf_loop *l = NULL;
    CHECK_EQ(sqf_loop_create(&l, 0x80), EINVAL);
    CHECK(l == NULL);
    CHECK_EQ(sqf_loop_destroy(NULL), EINVAL);
    CHECK_EQ(sqf_loop_fd(NULL), -1);
    CHECK_EQ(sqf_loop_dispatch(NULL), -EINVAL);
    CHECK_EQ(sqf_loop_cancel(NULL, &ops[0]), EINVAL);
    CHECK_EQ(sqf_loop_cancel(loop, NULL), EINVAL);
    CHECK_EQ(sqf_loop_sem_acquire(NULL, &ops[0], &s, SQF_FOREVER, NULL, CB(0)), EINVAL);
    CHECK_EQ(sqf_loop_sem_acquire(loop, NULL, &s, SQF_FOREVER, NULL, cb, NULL), EINVAL);
    CHECK_EQ(sqf_loop_sem_acquire(loop, &ops[0], NULL, SQF_FOREVER, NULL, cb, NULL), EINVAL);
    CHECK_EQ(sqf_loop_sem_acquire(loop, &ops[0], &s, SQF_FOREVER, NULL, NULL, NULL), EINVAL);
    CHECK_EQ(sqf_loop_cond_wait(loop, &ops[0], NULL, NULL, SQF_FOREVER, NULL, CB(0)), EINVAL);
    CHECK_EQ(sqf_loop_pending(loop), 0);
    /* An op that is not pending cannot be cancelled. */
    CHECK_EQ(sqf_loop_sem_acquire(loop, &ops[0], &s, sqf_now() - 1, NULL, CB(0)), ETIMEDOUT);
    CHECK_EQ(sqf_loop_cancel(loop, &ops[0]), ENOENT);
    unsigned v = 9;
    sqf_sem_getvalue(&s, &v);
    CHECK_EQ(v, 0);
    CHECK_EQ(sqf_sem_destroy(&s), 0); /* nobody left counted */
}

static void test_at_once(void)
{
    /* What can complete at once does, with no callback and nothing pending. */
    sqf_sem s;
    sqf_event e;
    sqf_mutex m;
    sqf_sem_init(&s, 1, 0, SQF_PRIVATE);
    sqf_event_init(&e, SQF_PRIVATE);
    sqf_mutex_init(&m, SQF_PRIVATE);
    sqf_event_set(&e);
    CHECK_EQ(sqf_loop_sem_acquire(loop, &ops[0], &s, SQF_FOREVER, NULL, CB(0)), 0);
    CHECK_EQ(sqf_loop_event_wait(loop, &ops[1], &e, SQF_FOREVER, NULL, CB(1)), 0);
    CHECK_EQ(sqf_loop_mutex_lock(loop, &ops[2], &m, SQF_FOREVER, NULL, CB(2)), 0);
    CHECK_EQ(sqf_mutex_trylock(&m), EBUSY); /* the op holds it */
    CHECK_EQ(sqf_mutex_unlock(&m), 0);
    CHECK_EQ(sqf_loop_pending(loop), 0);
    CHECK_EQ(done, 0);
    /* A cancelled token with nothing to wait for still completes (work,
     * not waiting); one that would have to wait says ECANCELED at once. */
    sqf_cancel t;
    sqf_cancel_init(&t, NULL, SQF_FOREVER);
    sqf_cancel_cancel(&t);
    CHECK_EQ(sqf_loop_event_wait(loop, &ops[3], &e, SQF_FOREVER, &t, CB(3)), 0);
    CHECK_EQ(sqf_loop_sem_acquire(loop, &ops[4], &s, SQF_FOREVER, &t, CB(4)), ECANCELED);
    CHECK_EQ(sqf_sem_destroy(&s), 0);
}

static void test_woken(void)
{
    int base = done;
    sqf_sem s;
    sqf_event e;
    sqf_latch la;
    sqf_countdown cd;
    sqf_barrier b;
    sqf_sem_init(&s, 0, 0, SQF_PRIVATE);
    sqf_event_init(&e, SQF_PRIVATE);
    sqf_latch_init(&la, 1, SQF_PRIVATE);
    sqf_countdown_init(&cd, 1, SQF_PRIVATE);
    sqf_barrier_init(&b, 2, SQF_PRIVATE);
    CHECK_EQ(sqf_loop_sem_acquire(loop, &ops[0], &s, SQF_FOREVER, NULL, CB(0)), EINPROGRESS);
    CHECK_EQ(sqf_loop_event_wait(loop, &ops[1], &e, SQF_FOREVER, NULL, CB(1)), EINPROGRESS);
    CHECK_EQ(sqf_loop_latch_wait(loop, &ops[2], &la, SQF_FOREVER, NULL, CB(2)), EINPROGRESS);
    CHECK_EQ(sqf_loop_countdown_wait(loop, &ops[3], &cd, SQF_FOREVER, NULL, CB(3)), EINPROGRESS);
    CHECK_EQ(sqf_loop_barrier_wait(loop, &ops[4], &b, SQF_FOREVER, NULL, CB(4)), EINPROGRESS);
    CHECK_EQ(sqf_loop_pending(loop), 5);
    CHECK_EQ(sqf_loop_destroy(loop), EBUSY);
    CHECK_EQ(sqf_loop_dispatch(loop), 0); /* nothing has happened yet */
    struct later l[5];
    after_a_while(&l[0], do_release, &s);
    after_a_while(&l[1], do_set, &e);
    after_a_while(&l[2], do_count_down, &la);
    after_a_while(&l[3], do_down, &cd);
    after_a_while(&l[4], do_barrier, &b);
    run_until(base + 5);
    for (int i = 0; i < 5; i++) {
        join(&l[i]);
        CHECK_EQ(results[i], 0);
    }
    CHECK_EQ(sqf_loop_pending(loop), 0);
    unsigned v = 9;
    sqf_sem_getvalue(&s, &v);
    CHECK_EQ(v, 0); /* the one permit went to the loop's op */
    CHECK_EQ(sqf_sem_destroy(&s), 0);
    CHECK_EQ(sqf_event_destroy(&e), 0);
    CHECK_EQ(sqf_latch_destroy(&la), 0);
    CHECK_EQ(sqf_countdown_destroy(&cd), 0);
    CHECK_EQ(sqf_barrier_destroy(&b), 0);
}

/* sqf_loop_barrier_wait_fn: a loop task that arrives first gets index 0 at
 * its callback; one that arrives last runs the completion inside the call,
 * before the phase is released, and gets index parties-1 at once. */
static int completions;
static void count_completion(void *arg)
{
    CHECK(arg == &completions);
    completions++;
}
static void test_barrier_fn(void)
{
    int base = done;
    completions = 0;
    sqf_barrier b;
    sqf_barrier_init(&b, 2, SQF_PRIVATE);
    unsigned index = 9;
    CHECK_EQ(sqf_loop_barrier_wait_fn(loop, &ops[0], &b, SQF_FOREVER, NULL, count_completion,
                                      &completions, &index, CB(0)),
             EINPROGRESS);
    struct later l;
    after_a_while(&l, do_barrier, &b);
    run_until(base + 1);
    join(&l);
    CHECK_EQ(results[0], 0);
    CHECK_EQ(index, 0);
    CHECK_EQ(completions, 0); /* the thread arrived last, without a completion */

    index = 9;
    struct later t;
    after_a_while(&t, do_barrier, &b); /* arrives first, sleeps */
    while ((at_load(ba_word(&b), RLX) & BA_COUNT) == 0)
        sleep_ms(1);
    CHECK_EQ(sqf_loop_barrier_wait_fn(loop, &ops[1], &b, SQF_FOREVER, NULL, count_completion,
                                      &completions, &index, CB(1)),
             0);
    CHECK_EQ(index, 1);
    CHECK_EQ(completions, 1);
    join(&t);
    CHECK_EQ(done, base + 1); /* at once: no callback */
    CHECK_EQ(sqf_barrier_destroy(&b), 0);
}

/* Several waits of one loop on one word (on io_uring they share one
 * kernel wait): cancelling one, first or later, leaves the others
 * waiting; a release of one permit completes exactly one of them, and
 * nothing is lost or duplicated. */
static void test_shared(void)
{
    sqf_sem s;
    sqf_event e;
    sqf_sem_init(&s, 0, 0, SQF_PRIVATE);
    sqf_event_init(&e, SQF_PRIVATE);
    int base = done;
    for (int i = 0; i < 4; i++)
        CHECK_EQ(sqf_loop_event_wait(loop, &ops[i], &e, SQF_FOREVER, NULL, CB(i)), EINPROGRESS);
    for (int i = 4; i < 8; i++)
        CHECK_EQ(sqf_loop_sem_acquire(loop, &ops[i], &s, SQF_FOREVER, NULL, CB(i)), EINPROGRESS);
    CHECK_EQ(sqf_loop_cancel(loop, &ops[0]), 0); /* the first to wait */
    CHECK_EQ(sqf_loop_cancel(loop, &ops[2]), 0); /* a later one */
    CHECK_EQ(sqf_loop_cancel(loop, &ops[5]), 0);
    run_until(base + 3);
    CHECK_EQ(results[0], ECANCELED);
    CHECK_EQ(results[2], ECANCELED);
    CHECK_EQ(results[5], ECANCELED);
    CHECK_EQ(sqf_loop_pending(loop), 5);
    results[1] = results[3] = -1;
    struct later l;
    after_a_while(&l, do_set, &e);
    run_until(base + 5);
    join(&l);
    CHECK_EQ(results[1], 0);
    CHECK_EQ(results[3], 0);
    /* sem: 3 waits left (4, 6, 7); one permit, then two. */
    for (int i = 4; i < 8; i++)
        if (i != 5) results[i] = -1;
    after_a_while(&l, do_release, &s);
    run_until(base + 6);
    join(&l);
    CHECK_EQ(sqf_loop_pending(loop), 2);
    CHECK_EQ(sqf_sem_release(&s, 2), 0);
    run_until(base + 8);
    for (int i = 4; i < 8; i++)
        if (i != 5) CHECK_EQ(results[i], 0);
    unsigned v = 9;
    sqf_sem_getvalue(&s, &v);
    CHECK_EQ(v, 0);
    CHECK_EQ(sqf_sem_destroy(&s), 0);
    CHECK_EQ(sqf_event_destroy(&e), 0);
}

/* A shared group's first callback frees its own op (the caller owns it)
 * and cancels a later member of the group, which is still waiting for its
 * callback: the cancel must not touch the freed op (ASan checks), and the
 * member, woken already, completes with 0. */
static void free_cb(sqf_loop_op *op, int result, void *arg)
{
    (void)arg;
    results[0] = result;
    done++;
    free(op);
    CHECK_EQ(sqf_loop_cancel(loop, &ops[2]), 0);
}

static void test_shared_free(void)
{
    sqf_event e;
    sqf_event_init(&e, SQF_PRIVATE);
    int base = done;
    sqf_loop_op *first = malloc(sizeof *first);
    CHECK(first != NULL);
    if (!first) return;
    CHECK_EQ(sqf_loop_event_wait(loop, first, &e, SQF_FOREVER, NULL, free_cb, NULL), EINPROGRESS);
    for (int i = 1; i < 3; i++)
        CHECK_EQ(sqf_loop_event_wait(loop, &ops[i], &e, SQF_FOREVER, NULL, CB(i)), EINPROGRESS);
    results[0] = results[1] = results[2] = -1;
    struct later l;
    after_a_while(&l, do_set, &e);
    run_until(base + 3);
    join(&l);
    CHECK_EQ(results[0], 0);
    CHECK_EQ(results[1], 0);
    CHECK_EQ(results[2], 0);
    CHECK_EQ(sqf_loop_pending(loop), 0);
    CHECK_EQ(sqf_event_destroy(&e), 0);
}

static void test_give_up(void)
{
    int base = done;
    sqf_sem s;
    sqf_event e;
    sqf_cancel t;
    sqf_sem_init(&s, 0, 0, SQF_PRIVATE);
    sqf_event_init(&e, SQF_PRIVATE);
    sqf_cancel_init(&t, NULL, SQF_FOREVER);
    sqf_deadline start = sqf_now();
    CHECK_EQ(sqf_loop_sem_acquire(loop, &ops[0], &s, sqf_after(30 * SQF_MS), NULL, CB(0)),
             EINPROGRESS);
    CHECK_EQ(sqf_loop_event_wait(loop, &ops[1], &e, SQF_FOREVER, &t, CB(1)), EINPROGRESS);
    CHECK_EQ(sqf_loop_sem_acquire(loop, &ops[2], &s, SQF_FOREVER, &t, CB(2)), EINPROGRESS);
    CHECK_EQ(sqf_loop_event_wait(loop, &ops[3], &e, SQF_FOREVER, NULL, CB(3)), EINPROGRESS);
    /* A token's own deadline. */
    sqf_cancel td;
    sqf_cancel_init(&td, NULL, sqf_after(30 * SQF_MS));
    CHECK_EQ(sqf_loop_event_wait(loop, &ops[4], &e, SQF_FOREVER, &td, CB(4)), EINPROGRESS);
    struct later l;
    after_a_while(&l, do_cancel, &t);
    CHECK_EQ(sqf_loop_cancel(loop, &ops[3]), 0);
    CHECK_EQ(sqf_loop_cancel(loop, &ops[3]), 0); /* asking twice changes nothing */
    run_until(base + 5);
    join(&l);
    CHECK_EQ(results[0], ETIMEDOUT);
    CHECK(sqf_now() - start >= 30 * SQF_MS);
    CHECK_EQ(results[1], ECANCELED);
    CHECK_EQ(results[2], ECANCELED);
    CHECK_EQ(results[3], ECANCELED);
    CHECK_EQ(results[4], ECANCELED);
    /* Nothing was consumed or left counted. */
    CHECK_EQ(sqf_sem_release(&s, 1), 0);
    CHECK_EQ(sqf_sem_tryacquire(&s), 0);
    CHECK_EQ(sqf_sem_destroy(&s), 0);
    CHECK_EQ(sqf_event_destroy(&e), 0);
}

/* A callback may not destroy its loop (the dispatch still uses it): EBUSY,
 * even when it is the last pending wait. */
static int destroy_result;
static void destroy_cb(sqf_loop_op *op, int result, void *arg)
{
    cb(op, result, arg);
    destroy_result = sqf_loop_destroy(loop);
}

static void test_destroy_in_callback(void)
{
    int base = done;
    sqf_event e;
    sqf_event_init(&e, SQF_PRIVATE);
    destroy_result = -1;
    CHECK_EQ(sqf_loop_event_wait(loop, &ops[0], &e, SQF_FOREVER, NULL, destroy_cb, &ops[0]),
             EINPROGRESS);
    struct later l;
    after_a_while(&l, do_set, &e);
    run_until(base + 1);
    join(&l);
    CHECK_EQ(results[0], 0);
    CHECK_EQ(destroy_result, EBUSY);
    CHECK_EQ(sqf_loop_pending(loop), 0);
    CHECK_EQ(sqf_event_destroy(&e), 0);
}

/* Locks: a thread hands the mutex to a loop op (unlock_fair), a writer's
 * turn passes to a loop writer, a cond wait releases and retakes its mutex. */
static sqf_mutex cm;
static sqf_cond cv;
static int flag;
static void do_signal(void *arg)
{
    (void)arg;
    CHECK_EQ(sqf_mutex_lock(&cm), 0);
    flag = 1;
    CHECK_EQ(sqf_cond_signal(&cv), 0);
    CHECK_EQ(sqf_mutex_unlock(&cm), 0);
}

static void test_locks(void)
{
    int base = done;
    sqf_mutex m;
    sqf_rwlock rw;
    sqf_mutex_init(&m, SQF_PRIVATE);
    sqf_rwlock_init(&rw, SQF_PRIVATE);
    sqf_mutex_init(&cm, SQF_PRIVATE);
    sqf_cond_init(&cv, SQF_PRIVATE);
    flag = 0;
    CHECK_EQ(sqf_mutex_lock(&m), 0);
    CHECK_EQ(sqf_rwlock_wrlock(&rw), 0);
    CHECK_EQ(sqf_loop_mutex_lock(loop, &ops[0], &m, SQF_FOREVER, NULL, CB(0)), EINPROGRESS);
    CHECK_EQ(sqf_loop_rwlock_wrlock(loop, &ops[1], &rw, SQF_FOREVER, NULL, CB(1)), EINPROGRESS);
    CHECK_EQ(sqf_loop_rwlock_rdlock(loop, &ops[2], &rw, SQF_FOREVER, NULL, CB(2)), EINPROGRESS);
    CHECK_EQ(sqf_mutex_lock(&cm), 0);
    CHECK_EQ(sqf_loop_cond_wait(loop, &ops[3], &cv, &cm, SQF_FOREVER, NULL, CB(3)), EINPROGRESS);
    struct later l[3];
    after_a_while(&l[0], do_unlock_fair, &m);
    after_a_while(&l[1], do_wrunlock, &rw);
    after_a_while(&l[2], do_signal, NULL);
    /* The thread's wrunlock lets the waiting reader in and passes the turn
     * to the loop's writer, which then waits for that reader: 3 of 4 first. */
    run_until(base + 3);
    for (int i = 0; i < 3; i++)
        join(&l[i]);
    CHECK_EQ(results[0], 0);
    CHECK_EQ(sqf_mutex_trylock(&m), EBUSY); /* the loop op owns it */
    CHECK_EQ(sqf_mutex_unlock(&m), 0);
    CHECK_EQ(results[2], 0);
    CHECK_EQ(results[3], 0);
    CHECK_EQ(flag, 1);
    CHECK_EQ(sqf_mutex_trylock(&cm), EBUSY); /* the cond op retook it */
    CHECK_EQ(sqf_mutex_unlock(&cm), 0);
    CHECK_EQ(sqf_rwlock_rdunlock(&rw), 0); /* the reader leaves: the writer goes in */
    run_until(base + 4);
    CHECK_EQ(results[1], 0);
    CHECK_EQ(sqf_rwlock_wrunlock(&rw), 0);
    CHECK_EQ(sqf_mutex_destroy(&m), 0);
    CHECK_EQ(sqf_rwlock_destroy(&rw), 0);
    CHECK_EQ(sqf_cond_destroy(&cv), 0);
}

/* The descriptor: not readable while nothing has completed, readable once
 * a wait has (a thread's release), and not readable again once dispatch has
 * taken it (level-triggered, as loop.h says). */
static int readable(int wait_ms)
{
    struct pollfd p = {sqf_loop_fd(loop), POLLIN, 0};
    return poll(&p, 1, wait_ms) == 1 && (p.revents & POLLIN);
}

static void test_fd(void)
{
    sqf_sem s;
    sqf_sem_init(&s, 0, 0, SQF_PRIVATE);
    int before = done;
    CHECK(!readable(0));
    CHECK_EQ(sqf_loop_sem_acquire(loop, &ops[0], &s, SQF_FOREVER, NULL, cb, &ops[0]), EINPROGRESS);
    CHECK(!readable(20)); /* pending, not completed */
    struct later l;
    after_a_while(&l, do_release, &s);
    CHECK(readable(5000));
    CHECK(readable(0)); /* still: nothing dispatched yet */
    CHECK_EQ(sqf_loop_dispatch(loop), 1);
    CHECK_EQ(done, before + 1);
    CHECK_EQ(results[0], 0);
    CHECK(!readable(0));
    join(&l);
    CHECK_EQ(sqf_sem_destroy(&s), 0);
}

/* Every test above on one backend (flags: SQF_LOOP_URING or
 * SQF_LOOP_FALLBACK).  Returns 0, or 77 if that backend cannot run here. */
/* sqf_queue: loop pops asleep on an empty queue get the items of one
 * thread's push_n (each its own, counted once); a loop push waits on a full
 * queue for a thread's pop; a loop pop on a closed queue drains, then gets
 * EPIPE; a cancelled loop pop takes nothing. */
static sqf_queue *lq;
static void do_push3(void *arg)
{
    (void)arg;
    int v[3] = {10, 20, 30};
    size_t k = 0;
    CHECK_EQ(sqf_queue_push_n(lq, v, 3, &k, SQF_FOREVER, NULL), 0);
    CHECK_EQ(k, 3);
}
static void do_pop1(void *arg)
{
    CHECK_EQ(sqf_queue_pop(lq, arg), 0);
}

static void test_queue(void)
{
    int base = done;
    size_t bytes = sqf_queue_bytes(3, sizeof(int));
    lq = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    CHECK_EQ(sqf_queue_init(lq, 3, sizeof(int), SQF_PRIVATE), 0);
    int got[3] = {0, 0, 0};
    size_t moved[4] = {9, 9, 9, 9};
    int v = 0;
    CHECK_EQ(sqf_loop_queue_pop(loop, &ops[0], lq, NULL, 1, NULL, SQF_FOREVER, NULL, CB(0)),
             EINVAL);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(
            sqf_loop_queue_pop(loop, &ops[i], lq, &got[i], 1, &moved[i], SQF_FOREVER, NULL, CB(i)),
            EINPROGRESS);
    CHECK_EQ(moved[0], 0);
    struct later l;
    after_a_while(&l, do_push3, NULL);
    run_until(base + 3);
    join(&l);
    CHECK_EQ(got[0] + got[1] + got[2], 60);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(results[i], 0);
        CHECK_EQ(moved[i], 1);
        CHECK(got[i] == 10 || got[i] == 20 || got[i] == 30);
    }
    /* A loop push on a full queue waits for a thread's pop. */
    int three[3] = {1, 2, 3};
    CHECK_EQ(sqf_loop_queue_push(loop, &ops[3], lq, three, 3, &moved[3], SQF_FOREVER, NULL, CB(3)),
             0); /* room at once: completed in the call */
    CHECK_EQ(moved[3], 3);
    int four = 4;
    CHECK_EQ(sqf_loop_queue_push(loop, &ops[4], lq, &four, 1, NULL, SQF_FOREVER, NULL, CB(4)),
             EINPROGRESS);
    after_a_while(&l, do_pop1, &v);
    run_until(base + 4);
    join(&l);
    CHECK_EQ(results[4], 0);
    CHECK_EQ(v, 1);
    /* Closed: a loop pop drains 2, 3, 4, then gets EPIPE. */
    CHECK_EQ(sqf_queue_close(lq), 0);
    int rest[4];
    CHECK_EQ(sqf_loop_queue_pop(loop, &ops[5], lq, rest, 4, &moved[0], SQF_FOREVER, NULL, CB(5)),
             0);
    CHECK_EQ(moved[0], 3);
    CHECK(rest[0] == 2 && rest[1] == 3 && rest[2] == 4);
    CHECK_EQ(sqf_loop_queue_pop(loop, &ops[5], lq, rest, 4, NULL, SQF_FOREVER, NULL, CB(5)), EPIPE);
    /* Cancelled while waiting: takes nothing. */
    CHECK_EQ(sqf_queue_init(lq, 3, sizeof(int), SQF_PRIVATE), 0);
    CHECK_EQ(sqf_loop_queue_pop(loop, &ops[6], lq, rest, 1, NULL, SQF_FOREVER, NULL, CB(6)),
             EINPROGRESS);
    CHECK_EQ(sqf_loop_cancel(loop, &ops[6]), 0);
    run_until(base + 5);
    CHECK_EQ(results[6], ECANCELED);
    CHECK_EQ(sqf_queue_destroy(lq), 0);
    free(lq);
}

static int on_backend(unsigned flags, const char *name)
{
    int e = sqf_loop_create(&loop, flags);
    if (e == ENOTSUP) return 77;
    CHECK_EQ(e, 0);
    if (e) return 0;
    CHECK(strcmp(sqf_loop_backend(loop), name) == 0);
    CHECK(sqf_loop_fd(loop) >= 0);
    CHECK_EQ(sqf_loop_pending(loop), 0);
    CHECK_EQ(sqf_loop_dispatch(loop), 0);
    done = 0;
    test_bad_input();
    test_at_once();
    test_woken();
    test_give_up();
    test_locks();
    test_destroy_in_callback();
    test_fd();
    test_barrier_fn();
    test_shared();
    test_shared_free();
    test_queue();
    CHECK_EQ(sqf_loop_destroy(loop), 0);
    printf("test_loop: the %s backend checked\n", name);
    return 0;
}

int main(void)
{
    watchdog(60);
    CHECK_EQ(sqf_loop_create(NULL, 0), EINVAL);
    CHECK_EQ(sqf_loop_create(&loop, SQF_LOOP_URING | SQF_LOOP_FALLBACK), EINVAL);
    CHECK_EQ(sqf_loop_backend(NULL), NULL);
    /* The fallback runs everywhere. */
    CHECK_EQ(on_backend(SQF_LOOP_FALLBACK, "fallback"), 0);
    int u = on_backend(SQF_LOOP_URING, "io_uring");
    if (!SQF_TEST_URING_EXPECTED) {
        CHECK_EQ(u, 77); /* built without it: refused, as documented */
    } else if (u == 77) {
        printf("test_loop: the io_uring backend SKIPPED: this kernel refuses io_uring futex "
               "operations (Linux 6.7+)\n");
        check_done();
        return 77;
    }
    return check_done();
}
