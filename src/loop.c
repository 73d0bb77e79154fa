/* loop.c: sqf_loop, the event-loop driver of the wait protocol (waitop.h).
 *
 * A loop op runs a primitive's step function exactly as the blocking driver
 * does; only its sleep differs.  Where the blocking driver calls
 * sqf_wait_cancellable, a loop op prepares the same sleep (sqf_sleep_prepare:
 * the tokens' words first, the primitive's word last, and the same early
 * ECANCELED or ETIMEDOUT) and hands it to the loop's backend, which brings
 * back how it ended, as sqf_wait_any would have reported it; the same
 * sqf_sleep_result maps that for the next step.  Backends (loop_impl.h):
 * io_uring (src/loop/uring.c) and the fallback on the user-space futex
 * (src/loop/fallback.c).
 *
 * Stops (waitop.h): sqf_loop_cancel records ECANCELED in the op's stop
 * field at once, unless its deadline or token had stopped it already (then
 * that stop stands: the first to take effect wins), and asks the backend to
 * end the sleep; the callback then gets what the blocking call would have
 * returned had it been stopped at that moment.  A backend may end any sleep
 * early with -EINTR ("look again"): the step asks sqf_op_stop, which reads
 * the clock and the token as a thread's sleep would have.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "loop/loop_impl.h"
#include "mutex_word.h"

_Static_assert(sizeof(struct loop_op) <= sizeof(sqf_loop_op), "sqf_loop_op is too small");
_Static_assert(_Alignof(struct loop_op) <= _Alignof(sqf_loop_op), "sqf_loop_op is misaligned");

/* Which backends to try, in order, for the flags (and, for flags 0, the
 * environment's SQF_LOOP_BACKEND=uring|fallback, for tests and comparisons). */
static int pick(unsigned flags, const struct loop_backend *out[2])
{
#ifdef SQF_DSCHED
    (void)flags; /* the scheduler's build has its simulated io_uring only */
    return out[0] = &sqf_loop_dsched, 1;
#endif
    if (flags == SQF_LOOP_URING) return out[0] = &sqf_loop_uring, 1;
    if (flags == SQF_LOOP_FALLBACK) return out[0] = &sqf_loop_fallback, 1;
    const char *env = getenv("SQF_LOOP_BACKEND");
    if (env && strcmp(env, "fallback") == 0) return out[0] = &sqf_loop_fallback, 1;
    if (env && strcmp(env, "uring") == 0) return out[0] = &sqf_loop_uring, 1;
    out[0] = &sqf_loop_uring;
    out[1] = &sqf_loop_fallback;
    return 2;
}

int sqf_loop_create(sqf_loop **out, unsigned flags)
{
    if (!out || (flags != 0 && flags != SQF_LOOP_URING && flags != SQF_LOOP_FALLBACK))
        return EINVAL;
    const struct loop_backend *be[2];
    int n = pick(flags, be), e = ENOTSUP;
    for (int i = 0; i < n; i++) {
        struct sqf_loop *loop = calloc(1, sizeof *loop);
        if (!loop) return ENOMEM;
        loop->be = be[i];
        e = be[i]->create(loop);
        if (e == 0) {
            *out = loop;
            return 0;
        }
        free(loop);
        if (e != ENOTSUP) break; /* a real failure, not "not here" */
    }
    return e;
}

int sqf_loop_destroy(sqf_loop *loop)
{
    if (!loop) return EINVAL;
    if (loop->pending || loop->dispatching) return EBUSY;
    loop->be->destroy(loop);
    free(loop);
    return 0;
}

int sqf_loop_fd(sqf_loop *loop)
{
    return loop ? loop->fd : -1;
}

unsigned sqf_loop_pending(sqf_loop *loop)
{
    return loop ? loop->pending : 0;
}

const char *sqf_loop_backend(sqf_loop *loop)
{
    return loop ? loop->be->name : NULL;
}

/* The op's step asked to sleep: sleep, or feed the step what a sleep
 * ended with at once.  Returns the wait's result when it ended, or
 * EINPROGRESS with a sleep in flight. */
static int run_sleeps(struct loop_op *o)
{
    for (;;) {
        /* A stop already recorded (sqf_loop_cancel); the deadline and the
         * token are checked in preparing the sleep. */
        int how = o->w.stoppable ? o->w.stop : 0;
        if (!how)
            how = sqf_sleep_prepare(&o->sleep, o->w.word, o->w.expected, o->w.shared,
                                    sqf_op_sleep_deadline(&o->w), sqf_op_sleep_tok(&o->w));
        if (how == 0) {
            int r = o->loop->be->sleep(o->loop, o);
            if (r == 0) {
                o->state = OP_SLEEPING;
                return EINPROGRESS;
            }
            how = sqf_sleep_result(&o->sleep, sqf_op_sleep_tok(&o->w), r);
        }
        int r = o->step(&o->w, sqf_op_ended(&o->w, how));
        if (r != SQF_OP_SLEEP) return r;
    }
}

/* An op about to start on loop (the caller fills its step's part of the
 * union, then calls go). */
static struct loop_op *prepare(sqf_loop *loop, sqf_loop_op *op, sqf_step_fn step,
                               sqf_deadline deadline, const sqf_cancel *tok, sqf_loop_cb cb,
                               void *arg)
{
    struct loop_op *o = (struct loop_op *)op;
    o->w = sqf_op_blocking(deadline, tok);
    o->w.may_spin = false; /* a loop never spins: its thread has other work */
    o->step = step;
    o->loop = loop;
    o->cb = cb;
    o->arg = arg;
    o->state = OP_IDLE;
    o->cancel_requested = false;
    memset(&o->b, 0, sizeof o->b);
    return o;
}

/* The first step, then sleeps as needed. */
static int go(struct loop_op *o)
{
    int r = o->step(&o->w, SQF_OP_START);
    if (r == SQF_OP_SLEEP) r = run_sleeps(o);
    if (r == EINPROGRESS)
        o->loop->pending++;
    else
        o->loop->be->finish(o);
    return r;
}

/* A backend says how o's sleep ended: the next step, and the callback if
 * the wait is over. */
static void sleep_ended(struct sqf_loop *loop, struct loop_op *o, int ended)
{
    o->state = OP_IDLE;
    int r = o->step(
        &o->w, sqf_op_ended(&o->w, sqf_sleep_result(&o->sleep, sqf_op_sleep_tok(&o->w), ended)));
    if (r == SQF_OP_SLEEP) r = run_sleeps(o);
    if (r == EINPROGRESS) return;
    loop->pending--;
    loop->be->finish(o);
    loop->ran++;
    o->cb((sqf_loop_op *)o, r, o->arg);
}

int sqf_loop_dispatch(sqf_loop *loop)
{
    if (!loop) return -EINVAL;
    int outer = loop->ran; /* a callback may dispatch too */
    loop->ran = 0;
    loop->dispatching++; /* a callback may not destroy the loop under us */
    loop->be->reap(loop, sleep_ended);
    loop->dispatching--;
    int ran = loop->ran;
    loop->ran = outer + ran;
    return ran;
}

int sqf_loop_cancel(sqf_loop *loop, sqf_loop_op *op)
{
    if (!loop || !op) return EINVAL;
    struct loop_op *o = (struct loop_op *)op;
    if (o->loop != loop || o->state != OP_SLEEPING) return ENOENT;
    if (o->cancel_requested) return 0; /* asked already */
    o->cancel_requested = true;
    /* The stop takes effect now, unless one already has (a deadline or
     * token that passed while nobody dispatched). */
    sqf_op_cancel(&o->w);
    loop->be->cancel(loop, o);
    return 0;
}

int sqf_loop_mutex_lock(sqf_loop *loop, sqf_loop_op *op, sqf_mutex *m, sqf_deadline deadline,
                        const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    if (!loop || !op || !m || !cb) return EINVAL;
    struct loop_op *o = prepare(loop, op, sqf_mutex_lock_step_, deadline, cancel, cb, arg);
    o->w.u.mutex.m = m;
    return go(o);
}

int sqf_loop_cond_wait(sqf_loop *loop, sqf_loop_op *op, sqf_cond *c, sqf_mutex *m,
                       sqf_deadline deadline, const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    if (!loop || !op || !c || !m || !cb) return EINVAL;
    /* Refused before it starts: the fallback's ENOTSUP would end the wait
     * but not the mutex's retaking, which no stop ends (a cond with a
     * shared mutex is itself shared, or init refused the pair). */
    if (loop->be->process_local && mu_shared(m)) return ENOTSUP;
    struct loop_op *o = prepare(loop, op, sqf_cond_wait_step_, deadline, cancel, cb, arg);
    o->w.u.cond.c = c;
    o->w.u.cond.m = m;
    return go(o);
}

int sqf_loop_sem_acquire(sqf_loop *loop, sqf_loop_op *op, sqf_sem *s, sqf_deadline deadline,
                         const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    if (!loop || !op || !s || !cb) return EINVAL;
    struct loop_op *o = prepare(loop, op, sqf_sem_acquire_step_, deadline, cancel, cb, arg);
    o->w.u.sem.s = s;
    return go(o);
}

int sqf_loop_event_wait(sqf_loop *loop, sqf_loop_op *op, sqf_event *e, sqf_deadline deadline,
                        const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    if (!loop || !op || !e || !cb) return EINVAL;
    struct loop_op *o = prepare(loop, op, sqf_event_wait_step_, deadline, cancel, cb, arg);
    o->w.u.event.e = e;
    return go(o);
}

int sqf_loop_latch_wait(sqf_loop *loop, sqf_loop_op *op, sqf_latch *l, sqf_deadline deadline,
                        const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    if (!loop || !op || !l || !cb) return EINVAL;
    struct loop_op *o = prepare(loop, op, sqf_latch_wait_step_, deadline, cancel, cb, arg);
    o->w.u.latch.l = l;
    return go(o);
}

int sqf_loop_countdown_wait(sqf_loop *loop, sqf_loop_op *op, sqf_countdown *c,
                            sqf_deadline deadline, const sqf_cancel *cancel, sqf_loop_cb cb,
                            void *arg)
{
    if (!loop || !op || !c || !cb) return EINVAL;
    struct loop_op *o = prepare(loop, op, sqf_countdown_wait_step_, deadline, cancel, cb, arg);
    o->w.u.countdown.c = c;
    return go(o);
}

int sqf_loop_barrier_wait_fn(sqf_loop *loop, sqf_loop_op *op, sqf_barrier *b, sqf_deadline deadline,
                             const sqf_cancel *cancel, void (*completion)(void *),
                             void *completion_arg, unsigned *index, sqf_loop_cb cb, void *arg)
{
    if (!loop || !op || !b || !cb) return EINVAL;
    struct loop_op *o = prepare(loop, op, sqf_barrier_wait_step_, deadline, cancel, cb, arg);
    o->w.u.barrier.b = b;
    o->w.u.barrier.completion = completion;
    o->w.u.barrier.arg = completion_arg;
    o->w.u.barrier.index = index;
    return go(o);
}

int sqf_loop_barrier_wait(sqf_loop *loop, sqf_loop_op *op, sqf_barrier *b, sqf_deadline deadline,
                          const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    return sqf_loop_barrier_wait_fn(loop, op, b, deadline, cancel, NULL, NULL, NULL, cb, arg);
}

int sqf_loop_rwlock_rdlock(sqf_loop *loop, sqf_loop_op *op, sqf_rwlock *l, sqf_deadline deadline,
                           const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    if (!loop || !op || !l || !cb) return EINVAL;
    struct loop_op *o = prepare(loop, op, sqf_rwlock_rdlock_step_, deadline, cancel, cb, arg);
    o->w.u.rwlock.l = l;
    return go(o);
}

int sqf_loop_rwlock_wrlock(sqf_loop *loop, sqf_loop_op *op, sqf_rwlock *l, sqf_deadline deadline,
                           const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    if (!loop || !op || !l || !cb) return EINVAL;
    struct loop_op *o = prepare(loop, op, sqf_rwlock_wrlock_step_, deadline, cancel, cb, arg);
    o->w.u.rwlock.l = l;
    return go(o);
}

static int queue_op(sqf_loop *loop, sqf_loop_op *op, sqf_queue *q, const void *in, void *out,
                    size_t n, size_t *moved, sqf_deadline deadline, const sqf_cancel *cancel,
                    sqf_loop_cb cb, void *arg)
{
    if (moved) *moved = 0;
    if (!loop || !op || !q || !(in || out) || n == 0 || !cb || q->capacity_ == 0) return EINVAL;
    struct loop_op *o = prepare(loop, op, in ? sqf_queue_push_step_ : sqf_queue_pop_step_, deadline,
                                cancel, cb, arg);
    o->w.u.queue.q = q;
    o->w.u.queue.in = in;
    o->w.u.queue.out = out;
    o->w.u.queue.n = n;
    o->w.u.queue.moved = moved;
    return go(o);
}

int sqf_loop_queue_push(sqf_loop *loop, sqf_loop_op *op, sqf_queue *q, const void *items, size_t n,
                        size_t *moved, sqf_deadline deadline, const sqf_cancel *cancel,
                        sqf_loop_cb cb, void *arg)
{
    if (!items) return EINVAL;
    return queue_op(loop, op, q, items, NULL, n, moved, deadline, cancel, cb, arg);
}

int sqf_loop_queue_pop(sqf_loop *loop, sqf_loop_op *op, sqf_queue *q, void *items, size_t n,
                       size_t *moved, sqf_deadline deadline, const sqf_cancel *cancel,
                       sqf_loop_cb cb, void *arg)
{
    if (!items) return EINVAL;
    return queue_op(loop, op, q, NULL, items, n, moved, deadline, cancel, cb, arg);
}
