/* loop.c: sqf_loop, the event-loop driver of the wait protocol (waitop.h).
 *
 * A loop op runs a primitive's step function exactly as the blocking
 * driver does; only its sleep differs.  Where the blocking driver calls
 * sqf_wait_cancellable, a loop op prepares the same sleep (sqf_sleep_prepare:
 * the token words first, the primitive's word last) and submits it as an
 * io_uring FUTEX_WAITV, linked to an absolute time-out when it has a
 * deadline.  The completion's result is mapped by sqf_sleep_result, the same
 * function the blocking driver uses, and fed to the next step.  So the
 * kernel's multi-wake rule (wait.h) holds here too: FUTEX_WAITV reports the
 * highest index woken, which is the primitive's whenever it fired.
 *
 * Completions other than a wake or EAGAIN (the linked time-out cancelling
 * the wait, sqf_loop_cancel, an interrupted wait) go to the step as EINTR,
 * "look again": before every sleep the driver checks the op's own cancel
 * request, its token and its deadline, exactly as sqf_wait_cancellable
 * does before it sleeps, so the step then learns ETIMEDOUT or ECANCELED
 * from the same checks a thread would.  A cancelled io_uring futex wait was
 * removed from the futex queue before any wake reached it (a wake claims the
 * request first, and the completion then carries its index), so ECANCELED
 * still means "consumed nothing".
 *
 * io_uring's futex opcodes (Linux 6.7) are newer than Debian 12's liburing
 * (2.3) and kernel headers: their numbers are defined here, and support is
 * probed at run time with IORING_REGISTER_PROBE.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <squarefree/loop.h>

#include "atomic.h"
#include "waitop.h"

#ifdef SQF_HAVE_URING

#include <liburing.h>

/* Not in liburing 2.3's headers (the kernel's include/uapi/linux/io_uring.h
 * and futex.h have them since 6.7). */
#define SQF_IORING_OP_FUTEX_WAITV 53
#define SQF_FUTEX2_SIZE_U32       0x02u
#define SQF_FUTEX2_PRIVATE        128u

/* The futex_waitv entry, as the kernel reads it. */
struct sqf_futex_waitv {
    uint64_t val;
    uint64_t uaddr;
    uint32_t flags;
    uint32_t reserved;
};

/* user_data of the completions that are not an op's wait. */
#define TAG_TIMEOUT 1u
#define TAG_CANCEL  2u

enum { OP_IDLE, OP_SLEEPING };

struct loop_op {
    struct sqf_waitop w; /* the protocol's op: deadline, token, state */
    sqf_step_fn step;
    struct sqf_loop *loop;
    sqf_loop_cb cb;
    void *arg;
    int state;
    bool cancel_requested;
    /* The sleep in flight: what sqf_sleep_result needs, and its vector. */
    struct sqf_sleep sleep;
    struct sqf_futex_waitv v[SQF_WAIT_MAX_WORDS];
    struct __kernel_timespec ts;
};

_Static_assert(sizeof(struct loop_op) <= sizeof(sqf_loop_op), "sqf_loop_op is too small");
_Static_assert(_Alignof(struct loop_op) <= _Alignof(sqf_loop_op), "sqf_loop_op is misaligned");

struct sqf_loop {
    struct io_uring ring;
    int efd;
    unsigned pending; /* ops whose callback has not run */
};

static struct io_uring_sqe *get_sqe(struct sqf_loop *loop)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&loop->ring);
    if (!sqe) {
        /* The submission queue is full: hand it to the kernel, retry. */
        io_uring_submit(&loop->ring);
        sqe = io_uring_get_sqe(&loop->ring);
    }
    return sqe;
}

static bool uring_has_futex(struct io_uring *ring)
{
    struct io_uring_probe *p = io_uring_get_probe_ring(ring);
    if (!p) return false;
    bool ok = io_uring_opcode_supported(p, SQF_IORING_OP_FUTEX_WAITV);
    io_uring_free_probe(p);
    return ok;
}

int sqf_loop_create(sqf_loop **out, unsigned flags)
{
    if (!out || (flags & ~SQF_LOOP_URING)) return EINVAL;
    struct sqf_loop *loop = calloc(1, sizeof *loop);
    if (!loop) return ENOMEM;
    struct io_uring_params p = {0};
    /* A wake-all may complete every pending wait at once: room for them.
     * (The kernel keeps overflowing completions anyway; this avoids the
     * slow path.)  No DEFER_TASKRUN: its completions would not signal the
     * eventfd until the ring is entered. */
    p.flags = IORING_SETUP_CQSIZE;
    p.cq_entries = 8192;
    int e = -io_uring_queue_init_params(256, &loop->ring, &p);
    if (e) {
        free(loop);
        /* Disabled (sysctl, seccomp) or absent: no backend here. */
        return e == ENOMEM || e == EMFILE || e == ENFILE ? e : ENOTSUP;
    }
    if (!uring_has_futex(&loop->ring)) {
        io_uring_queue_exit(&loop->ring);
        free(loop);
        return ENOTSUP;
    }
    loop->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (loop->efd < 0 || io_uring_register_eventfd(&loop->ring, loop->efd) < 0) {
        e = loop->efd < 0 ? errno : ENOTSUP;
        if (loop->efd >= 0) close(loop->efd);
        io_uring_queue_exit(&loop->ring);
        free(loop);
        return e;
    }
    *out = loop;
    return 0;
}

int sqf_loop_destroy(sqf_loop *loop)
{
    if (!loop) return EINVAL;
    if (loop->pending) return EBUSY;
    io_uring_queue_exit(&loop->ring);
    close(loop->efd);
    free(loop);
    return 0;
}

int sqf_loop_fd(sqf_loop *loop)
{
    return loop ? loop->efd : -1;
}

unsigned sqf_loop_pending(sqf_loop *loop)
{
    return loop ? loop->pending : 0;
}

/* Submit o's prepared sleep: a FUTEX_WAITV on its words, linked to an
 * absolute CLOCK_MONOTONIC time-out when the sleep has a deadline.  Returns
 * 0, or an errno when the ring refuses (then nothing is in flight). */
static int submit_sleep(struct loop_op *o)
{
    struct sqf_loop *loop = o->loop;
    const struct sqf_sleep *s = &o->sleep;
    for (int i = 0; i < s->n; i++) {
        o->v[i].val = s->w[i].expected;
        o->v[i].uaddr = (uint64_t)(uintptr_t)s->w[i].word;
        o->v[i].flags = SQF_FUTEX2_SIZE_U32 | (s->w[i].shared ? 0 : SQF_FUTEX2_PRIVATE);
        o->v[i].reserved = 0;
    }
    bool timed = s->deadline != SQF_FOREVER;
    /* Both SQEs of a linked pair must be in one submission. */
    if (io_uring_sq_space_left(&loop->ring) < 2) io_uring_submit(&loop->ring);
    struct io_uring_sqe *sqe = get_sqe(loop);
    if (!sqe) return EAGAIN;
    io_uring_prep_rw(SQF_IORING_OP_FUTEX_WAITV, sqe, 0, o->v, (unsigned)s->n, 0);
    io_uring_sqe_set_data(sqe, o);
    if (timed) {
        sqe->flags |= IOSQE_IO_LINK;
        o->ts.tv_sec = s->deadline / SQF_SEC;
        o->ts.tv_nsec = s->deadline % SQF_SEC;
        struct io_uring_sqe *t = get_sqe(loop);
        io_uring_prep_link_timeout(t, &o->ts, IORING_TIMEOUT_ABS);
        io_uring_sqe_set_data64(t, TAG_TIMEOUT);
    }
    int r = io_uring_submit(&loop->ring);
    return r < 0 ? -r : 0;
}

/* The op's step asked to sleep: sleep, or feed the step what a sleep would
 * have returned at once.  Returns the wait's result when it ended, or
 * EINPROGRESS with a sleep in flight. */
static int run_sleeps(struct loop_op *o)
{
    for (;;) {
        int how = o->cancel_requested ? ECANCELED
                                      : sqf_sleep_prepare(&o->sleep, o->w.word, o->w.expected,
                                                          o->w.shared, o->w.deadline, o->w.tok);
        if (how == 0) {
            how = submit_sleep(o);
            if (how == 0) {
                o->state = OP_SLEEPING;
                return EINPROGRESS;
            }
            how = EINTR; /* the ring refused: look again (a busy retry) */
        }
        int r = o->step(&o->w, how);
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
    return o;
}

/* The first step, then sleeps as needed. */
static int go(struct loop_op *o)
{
    int r = o->step(&o->w, SQF_OP_START);
    if (r == SQF_OP_SLEEP) r = run_sleeps(o);
    if (r == EINPROGRESS) o->loop->pending++;
    return r;
}

int sqf_loop_dispatch(sqf_loop *loop)
{
    if (!loop) return -EINVAL;
    uint64_t n;
    /* Reset the eventfd first: a completion posted after this read signals
     * it again, so none is left unannounced. */
    while (read(loop->efd, &n, sizeof n) < 0 && errno == EINTR) {
    }
    int ran = 0;
    struct io_uring_cqe *cqe;
    while (io_uring_peek_cqe(&loop->ring, &cqe) == 0) {
        uint64_t tag = cqe->user_data;
        int res = cqe->res;
        io_uring_cqe_seen(&loop->ring, cqe);
        if (tag == TAG_TIMEOUT || tag == TAG_CANCEL) continue;
        struct loop_op *o = (struct loop_op *)(uintptr_t)tag;
        o->state = OP_IDLE;
        /* A wake (the index) or EAGAIN means what it means to a thread;
         * anything else (time-out, cancel, interrupted) is "look again". */
        int how = sqf_sleep_result(&o->sleep, o->w.tok, res >= 0 || res == -EAGAIN ? res : -EINTR);
        int r = o->step(&o->w, how);
        if (r == SQF_OP_SLEEP) r = run_sleeps(o);
        if (r == EINPROGRESS) continue;
        loop->pending--;
        o->cb((sqf_loop_op *)o, r, o->arg);
        ran++;
    }
    return ran;
}

int sqf_loop_cancel(sqf_loop *loop, sqf_loop_op *op)
{
    if (!loop || !op) return EINVAL;
    struct loop_op *o = (struct loop_op *)op;
    if (o->loop != loop || o->state != OP_SLEEPING || o->cancel_requested) return ENOENT;
    o->cancel_requested = true;
    struct io_uring_sqe *sqe = get_sqe(loop);
    if (sqe) {
        io_uring_prep_cancel(sqe, o, 0);
        io_uring_sqe_set_data64(sqe, TAG_CANCEL);
        io_uring_submit(&loop->ring);
    }
    /* Without an SQE the request still stands: the op stops at its next
     * look, which its wait's completion brings. */
    return 0;
}

int sqf_loop_mutex_lock(sqf_loop *loop, sqf_loop_op *op, sqf_mutex *m, sqf_deadline deadline,
                        const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    if (!loop || !op || !(m) || !cb) return EINVAL;
    struct loop_op *o = prepare(loop, op, sqf_mutex_lock_step_, deadline, cancel, cb, arg);
    o->w.u.mutex.m = m;
    return go(o);
}

int sqf_loop_cond_wait(sqf_loop *loop, sqf_loop_op *op, sqf_cond *c, sqf_mutex *m,
                       sqf_deadline deadline, const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    if (!loop || !op || !(c && m) || !cb) return EINVAL;
    struct loop_op *o = prepare(loop, op, sqf_cond_wait_step_, deadline, cancel, cb, arg);
    o->w.u.cond.c = c;
    o->w.u.cond.m = m;
    return go(o);
}

int sqf_loop_sem_acquire(sqf_loop *loop, sqf_loop_op *op, sqf_sem *s, sqf_deadline deadline,
                         const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    if (!loop || !op || !(s) || !cb) return EINVAL;
    struct loop_op *o = prepare(loop, op, sqf_sem_acquire_step_, deadline, cancel, cb, arg);
    o->w.u.sem.s = s;
    return go(o);
}

int sqf_loop_event_wait(sqf_loop *loop, sqf_loop_op *op, sqf_event *e, sqf_deadline deadline,
                        const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    if (!loop || !op || !(e) || !cb) return EINVAL;
    struct loop_op *o = prepare(loop, op, sqf_event_wait_step_, deadline, cancel, cb, arg);
    o->w.u.event.e = e;
    return go(o);
}

int sqf_loop_latch_wait(sqf_loop *loop, sqf_loop_op *op, sqf_latch *l, sqf_deadline deadline,
                        const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    if (!loop || !op || !(l) || !cb) return EINVAL;
    struct loop_op *o = prepare(loop, op, sqf_latch_wait_step_, deadline, cancel, cb, arg);
    o->w.u.latch.l = l;
    return go(o);
}

int sqf_loop_countdown_wait(sqf_loop *loop, sqf_loop_op *op, sqf_countdown *c,
                            sqf_deadline deadline, const sqf_cancel *cancel, sqf_loop_cb cb,
                            void *arg)
{
    if (!loop || !op || !(c) || !cb) return EINVAL;
    struct loop_op *o = prepare(loop, op, sqf_countdown_wait_step_, deadline, cancel, cb, arg);
    o->w.u.countdown.c = c;
    return go(o);
}

int sqf_loop_barrier_wait(sqf_loop *loop, sqf_loop_op *op, sqf_barrier *b, sqf_deadline deadline,
                          const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    if (!loop || !op || !(b) || !cb) return EINVAL;
    struct loop_op *o = prepare(loop, op, sqf_barrier_wait_step_, deadline, cancel, cb, arg);
    o->w.u.barrier.b = b;
    o->w.u.barrier.completion = NULL;
    o->w.u.barrier.arg = NULL;
    o->w.u.barrier.index = NULL;
    return go(o);
}

int sqf_loop_rwlock_rdlock(sqf_loop *loop, sqf_loop_op *op, sqf_rwlock *l, sqf_deadline deadline,
                           const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    if (!loop || !op || !(l) || !cb) return EINVAL;
    struct loop_op *o = prepare(loop, op, sqf_rwlock_rdlock_step_, deadline, cancel, cb, arg);
    o->w.u.rwlock.l = l;
    return go(o);
}

int sqf_loop_rwlock_wrlock(sqf_loop *loop, sqf_loop_op *op, sqf_rwlock *l, sqf_deadline deadline,
                           const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    if (!loop || !op || !(l) || !cb) return EINVAL;
    struct loop_op *o = prepare(loop, op, sqf_rwlock_wrlock_step_, deadline, cancel, cb, arg);
    o->w.u.rwlock.l = l;
    return go(o);
}

#else /* no io_uring in this build: no loop can be created (see loop.h) */

int sqf_loop_create(sqf_loop **out, unsigned flags)
{
    if (!out || (flags & ~SQF_LOOP_URING)) return EINVAL;
    return ENOTSUP;
}

/* With no loop in existence, every other call has an invalid loop. */
int sqf_loop_destroy(sqf_loop *loop)
{
    (void)loop;
    return EINVAL;
}

int sqf_loop_fd(sqf_loop *loop)
{
    (void)loop;
    return -1;
}

int sqf_loop_dispatch(sqf_loop *loop)
{
    (void)loop;
    return -EINVAL;
}

unsigned sqf_loop_pending(sqf_loop *loop)
{
    (void)loop;
    return 0;
}

int sqf_loop_cancel(sqf_loop *loop, sqf_loop_op *op)
{
    (void)loop;
    (void)op;
    return EINVAL;
}

int sqf_loop_mutex_lock(sqf_loop *loop, sqf_loop_op *op, sqf_mutex *m, sqf_deadline deadline,
                        const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    (void)loop, (void)op, (void)m, (void)deadline, (void)cancel, (void)cb, (void)arg;
    return EINVAL;
}

int sqf_loop_cond_wait(sqf_loop *loop, sqf_loop_op *op, sqf_cond *c, sqf_mutex *m,
                       sqf_deadline deadline, const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    (void)loop, (void)op, (void)c, (void)m, (void)deadline, (void)cancel, (void)cb, (void)arg;
    return EINVAL;
}

int sqf_loop_sem_acquire(sqf_loop *loop, sqf_loop_op *op, sqf_sem *s, sqf_deadline deadline,
                         const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    (void)loop, (void)op, (void)s, (void)deadline, (void)cancel, (void)cb, (void)arg;
    return EINVAL;
}

int sqf_loop_event_wait(sqf_loop *loop, sqf_loop_op *op, sqf_event *e, sqf_deadline deadline,
                        const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    (void)loop, (void)op, (void)e, (void)deadline, (void)cancel, (void)cb, (void)arg;
    return EINVAL;
}

int sqf_loop_latch_wait(sqf_loop *loop, sqf_loop_op *op, sqf_latch *l, sqf_deadline deadline,
                        const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    (void)loop, (void)op, (void)l, (void)deadline, (void)cancel, (void)cb, (void)arg;
    return EINVAL;
}

int sqf_loop_countdown_wait(sqf_loop *loop, sqf_loop_op *op, sqf_countdown *c,
                            sqf_deadline deadline, const sqf_cancel *cancel, sqf_loop_cb cb,
                            void *arg)
{
    (void)loop, (void)op, (void)c, (void)deadline, (void)cancel, (void)cb, (void)arg;
    return EINVAL;
}

int sqf_loop_barrier_wait(sqf_loop *loop, sqf_loop_op *op, sqf_barrier *b, sqf_deadline deadline,
                          const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    (void)loop, (void)op, (void)b, (void)deadline, (void)cancel, (void)cb, (void)arg;
    return EINVAL;
}

int sqf_loop_rwlock_rdlock(sqf_loop *loop, sqf_loop_op *op, sqf_rwlock *l, sqf_deadline deadline,
                           const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    (void)loop, (void)op, (void)l, (void)deadline, (void)cancel, (void)cb, (void)arg;
    return EINVAL;
}

int sqf_loop_rwlock_wrlock(sqf_loop *loop, sqf_loop_op *op, sqf_rwlock *l, sqf_deadline deadline,
                           const sqf_cancel *cancel, sqf_loop_cb cb, void *arg)
{
    (void)loop, (void)op, (void)l, (void)deadline, (void)cancel, (void)cb, (void)arg;
    return EINVAL;
}

#endif
