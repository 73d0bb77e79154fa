/* uring.c: the event-loop backend on io_uring (Linux 6.7+).  A sleep is an
 * IORING_OP_FUTEX_WAITV on the prepared words, in the prepared order (token
 * words first, the primitive's last: the kernel reports the highest index
 * woken, wait.h), linked to an absolute CLOCK_MONOTONIC time-out when it has
 * a deadline.  The kernel queues it in the same futex queue as sleeping
 * threads, so a FUTEX_WAKE serves both kinds in arrival order.
 *
 * Every completion but EAGAIN is reported to the step as a wake on the
 * primitive's word, because with io_uring a wake-up can be spent on a wait
 * that does not report it.  The kernel's futex_wake counts every queue
 * entry it calls the wake function on, but io_uring's wake function does
 * nothing when the request has already been claimed: by its linked
 * time-out, by an ASYNC_CANCEL, or by a wake through another of its words
 * (a token's).  FUTEX_WAKE then returns 1 for a wake nobody received: an
 * unlock_fair's hand-off, a writer's turn.  So the step is told "you may
 * hold a wake-up": it uses it (takes the hand-off) or passes it on (the
 * mutex sets PARKED again), and the driver's checks before the next sleep
 * (cancel request, token, deadline) then end the wait as they would have.
 * The price: a loop op cancelled or timed out during a hand-off to someone
 * else may take it instead (the other waiter sleeps again: safe, unfair),
 * and a cond op ends with 0 (a spurious wake-up) where the blocking form
 * would return ETIMEDOUT or ECANCELED.  Found by tests/stress_torture.c:
 * reporting such completions as "look again" lost hand-offs.
 *
 * The futex opcodes are newer than Debian 12's liburing (2.3) and kernel
 * headers: defined here, and probed at run time (IORING_REGISTER_PROBE).
 * No IORING_SETUP_DEFER_TASKRUN: its completions would not signal the
 * eventfd that the loop's users watch until the ring is entered.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "loop_impl.h"

#ifdef SQF_HAVE_URING

#define SQF_IORING_OP_FUTEX_WAITV 53
#define SQF_FUTEX2_SIZE_U32       0x02u
#define SQF_FUTEX2_PRIVATE        128u

/* user_data of the completions that are not an op's sleep. */
#define TAG_TIMEOUT 1u
#define TAG_CANCEL  2u

static struct io_uring_sqe *get_sqe(struct sqf_loop *loop)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&loop->uring.ring);
    if (!sqe) {
        /* The submission queue is full: hand it to the kernel, retry. */
        io_uring_submit(&loop->uring.ring);
        sqe = io_uring_get_sqe(&loop->uring.ring);
    }
    return sqe;
}

static bool has_futex_ops(struct io_uring *ring)
{
    struct io_uring_probe *p = io_uring_get_probe_ring(ring);
    if (!p) return false;
    bool ok = io_uring_opcode_supported(p, SQF_IORING_OP_FUTEX_WAITV);
    io_uring_free_probe(p);
    return ok;
}

static int uring_create(struct sqf_loop *loop)
{
    struct io_uring_params p = {0};
    /* Room for many completions at once (a wake-all of thousands of
     * waits; a timed wait makes two).  More than this is not lost: the
     * kernel keeps the overflow and liburing's peek flushes it. */
    p.flags = IORING_SETUP_CQSIZE;
    p.cq_entries = 8192;
    int e = -io_uring_queue_init_params(256, &loop->uring.ring, &p);
    if (e) return e == ENOMEM || e == EMFILE || e == ENFILE ? e : ENOTSUP; /* disabled or absent */
    if (!has_futex_ops(&loop->uring.ring)) {
        io_uring_queue_exit(&loop->uring.ring);
        return ENOTSUP;
    }
    loop->uring.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (loop->uring.efd < 0 || io_uring_register_eventfd(&loop->uring.ring, loop->uring.efd) < 0) {
        e = loop->uring.efd < 0 ? errno : ENOTSUP;
        if (loop->uring.efd >= 0) close(loop->uring.efd);
        io_uring_queue_exit(&loop->uring.ring);
        return e;
    }
    loop->fd = loop->uring.efd;
    return 0;
}

static void uring_destroy(struct sqf_loop *loop)
{
    io_uring_queue_exit(&loop->uring.ring);
    close(loop->uring.efd);
}

static int uring_sleep(struct sqf_loop *loop, struct loop_op *o)
{
    const struct sqf_sleep *s = &o->sleep;
    for (int i = 0; i < s->n; i++) {
        o->b.uring.v[i].val = s->w[i].expected;
        o->b.uring.v[i].uaddr = (uint64_t)(uintptr_t)s->w[i].word;
        o->b.uring.v[i].flags = SQF_FUTEX2_SIZE_U32 | (s->w[i].shared ? 0 : SQF_FUTEX2_PRIVATE);
        o->b.uring.v[i].reserved = 0;
    }
    bool timed = s->deadline != SQF_FOREVER;
    /* Both SQEs of a linked pair go in together: with no room for two,
     * queue nothing (the driver looks again; the queued ones go first). */
    if (io_uring_sq_space_left(&loop->uring.ring) < 2) io_uring_submit(&loop->uring.ring);
    if (io_uring_sq_space_left(&loop->uring.ring) < 2) return -EINTR;
    struct io_uring_sqe *sqe = io_uring_get_sqe(&loop->uring.ring);
    io_uring_prep_rw(SQF_IORING_OP_FUTEX_WAITV, sqe, 0, o->b.uring.v, (unsigned)s->n, 0);
    io_uring_sqe_set_data(sqe, o);
    if (timed) {
        sqe->flags |= IOSQE_IO_LINK;
        o->b.uring.ts.tv_sec = s->deadline / SQF_SEC;
        o->b.uring.ts.tv_nsec = s->deadline % SQF_SEC;
        struct io_uring_sqe *t = io_uring_get_sqe(&loop->uring.ring);
        io_uring_prep_link_timeout(t, &o->b.uring.ts, IORING_TIMEOUT_ABS);
        io_uring_sqe_set_data64(t, TAG_TIMEOUT);
    }
    /* The SQEs are queued now, whatever io_uring_submit says: one that the
     * kernel refuses for the moment (EAGAIN, EBUSY) stays in the ring and
     * goes with the next submission (every dispatch makes one).  Retrying
     * would queue the same wait twice. */
    io_uring_submit(&loop->uring.ring);
    return 0;
}

static void uring_cancel(struct sqf_loop *loop, struct loop_op *o)
{
    struct io_uring_sqe *sqe = get_sqe(loop);
    if (!sqe) return; /* the request stands: the op stops at its next look */
    io_uring_prep_cancel(sqe, o, 0);
    io_uring_sqe_set_data64(sqe, TAG_CANCEL);
    io_uring_submit(&loop->uring.ring);
}

static void uring_reap(struct sqf_loop *loop,
                       void (*done)(struct sqf_loop *, struct loop_op *, int))
{
    uint64_t n;
    /* Anything left queued by a refused submission goes now. */
    if (io_uring_sq_ready(&loop->uring.ring)) io_uring_submit(&loop->uring.ring);
    /* Reset the eventfd first: a completion posted after this read signals
     * it again, so none is left unannounced. */
    while (read(loop->uring.efd, &n, sizeof n) < 0 && errno == EINTR) {
    }
    struct io_uring_cqe *cqe;
    while (io_uring_peek_cqe(&loop->uring.ring, &cqe) == 0) {
        uint64_t tag = cqe->user_data;
        int res = cqe->res;
        io_uring_cqe_seen(&loop->uring.ring, cqe);
        if (tag == TAG_TIMEOUT || tag == TAG_CANCEL) continue;
        /* EAGAIN: a word had changed, nothing was queued.  Anything else:
         * may have consumed a wake-up on the primitive's word (see the top). */
        struct loop_op *o = (struct loop_op *)(uintptr_t)tag;
        done(loop, o, res == -EAGAIN ? res : o->sleep.n - 1);
    }
}

static void uring_finish(struct loop_op *o)
{
    (void)o;
}

const struct loop_backend sqf_loop_uring = {"io_uring",   uring_create, uring_destroy, uring_sleep,
                                            uring_cancel, uring_reap,   uring_finish};

#else /* built without liburing */

static int uring_create(struct sqf_loop *loop)
{
    (void)loop;
    return ENOTSUP;
}

const struct loop_backend sqf_loop_uring = {"io_uring", uring_create, NULL, NULL, NULL, NULL, NULL};

#endif
