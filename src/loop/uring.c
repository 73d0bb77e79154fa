/* uring.c: the event-loop backend on io_uring (Linux 6.7+).  A sleep is an
 * IORING_OP_FUTEX_WAIT on the primitive's word, linked to an absolute
 * CLOCK_MONOTONIC time-out when it has a deadline, and one more on each of
 * the cancellation tokens' words (split.c says why not one FUTEX_WAITV).
 * The kernel queues these waits in the same futex queues as sleeping
 * threads, so a FUTEX_WAKE serves both kinds in arrival order, and a wake
 * dequeues a wait exactly when the wait reports it, as for a thread.
 *
 * The futex opcodes are newer than Debian 12's liburing (2.3) and kernel
 * headers: defined here, and probed at run time (IORING_REGISTER_PROBE).
 * The loop's descriptor is the ring's: readable (POLLIN) while completions
 * wait in it.  No IORING_SETUP_DEFER_TASKRUN: with it, the completions of
 * the futex waits would not be posted, and the descriptor would not become
 * readable, until the loop's thread entered the ring.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "loop_impl.h"

#ifdef SQF_HAVE_URING

#define SQF_IORING_OP_FUTEX_WAIT 51
#define SQF_FUTEX2_SIZE_U32      0x02u
#define SQF_FUTEX2_PRIVATE       128u
#define SQF_FUTEX_BITSET_ANY     0xffffffffu

/* user_data of the completions that are not an op's waits (which are the
 * op's address, 8-aligned, with the word's index: sqf_split_tag). */
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
    bool ok = io_uring_opcode_supported(p, SQF_IORING_OP_FUTEX_WAIT);
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
    /* The ring's own descriptor is readable while completions wait in it:
     * no eventfd to signal per completion, none to read per dispatch. */
    loop->fd = loop->uring.ring.ring_fd;
    return 0;
}

static void uring_destroy(struct sqf_loop *loop)
{
    io_uring_queue_exit(&loop->uring.ring);
}

/* The backlog: ops with work that found no room in the submission queue
 * even after a submission (the kernel refusing work for the moment, as
 * with a completion queue in overflow): cancels owed, and sleeps not yet
 * submitted.  Each reap retries them first.  Neither may be dropped: a
 * token's wait never cancelled would hold its op for ever, and a sleep
 * retried at once would spin on the loop's thread, which alone can reap
 * the completions that make room.  An op leaves the backlog as soon as it
 * owes nothing, before its sleep can end (so before its callback). */
static void backlog_add(struct sqf_loop *loop, struct loop_op *o)
{
    if (o->b.uring.listed) return;
    o->b.uring.listed = true;
    o->b.uring.prev = NULL;
    o->b.uring.next = loop->uring.backlog;
    if (loop->uring.backlog) loop->uring.backlog->b.uring.prev = o;
    loop->uring.backlog = o;
}

static void backlog_drop(struct sqf_loop *loop, struct loop_op *o)
{
    if (!o->b.uring.listed || o->b.uring.owed || o->b.uring.parked) return;
    o->b.uring.listed = false;
    if (o->b.uring.prev)
        o->b.uring.prev->b.uring.next = o->b.uring.next;
    else
        loop->uring.backlog = o->b.uring.next;
    if (o->b.uring.next) o->b.uring.next->b.uring.prev = o->b.uring.prev;
}

/* Cancel wait k of o (one-word waits are cancelled exactly: split.c). */
static void cancel_wait(struct sqf_loop *loop, struct loop_op *o, int k)
{
    struct io_uring_sqe *sqe = get_sqe(loop);
    if (!sqe) {
        o->b.uring.owed |= 1u << k;
        backlog_add(loop, o);
        return;
    }
    io_uring_prep_cancel64(sqe, sqf_split_tag(o, k), 0);
    io_uring_sqe_set_data64(sqe, TAG_CANCEL);
    io_uring_submit(&loop->uring.ring);
}

static int uring_sleep(struct sqf_loop *loop, struct loop_op *o)
{
    const struct sqf_sleep *s = &o->sleep;
    bool timed = s->deadline != SQF_FOREVER;
    unsigned need = (unsigned)s->n + timed;
    /* All of a sleep's SQEs go in together: with no room, park the sleep
     * until the next reap (the op is in flight meanwhile). */
    if (io_uring_sq_space_left(&loop->uring.ring) < need) io_uring_submit(&loop->uring.ring);
    if (io_uring_sq_space_left(&loop->uring.ring) < need) {
        o->b.uring.parked = true;
        backlog_add(loop, o);
        return 0;
    }
    if (sqf_split_begin(loop, o)) return 0; /* it shares a wait in flight */
    struct io_uring_sqe *sqe = NULL;
    for (int k = 0; k < s->n; k++) { /* the tokens' words, then the primitive's */
        const struct sqf_wait_word *w = &s->w[k];
        unsigned flags = SQF_FUTEX2_SIZE_U32 | (w->shared ? 0 : SQF_FUTEX2_PRIVATE);
        sqe = io_uring_get_sqe(&loop->uring.ring);
        io_uring_prep_rw(SQF_IORING_OP_FUTEX_WAIT, sqe, (int)flags, w->word, 0, w->expected);
        sqe->addr3 = SQF_FUTEX_BITSET_ANY;
        io_uring_sqe_set_data64(sqe, sqf_split_tag(o, k));
    }
    if (timed) { /* linked to the last, the primitive's */
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
    if (o->b.uring.parked)
        o->b.uring.parked_cancel = true; /* ended at the next reap */
    else
        sqf_split_cancel(loop, o, cancel_wait);
}

/* Retry the backlog: owed cancels, parked sleeps (or end those cancelled
 * meanwhile: the driver's check then says ECANCELED). */
static void retry_backlog(struct sqf_loop *loop,
                          void (*done)(struct sqf_loop *, struct loop_op *, int))
{
    struct loop_op *o = loop->uring.backlog;
    loop->uring.backlog = NULL;
    while (o) {
        struct loop_op *next = o->b.uring.next; /* o may be listed again below */
        unsigned owed = o->b.uring.owed;
        bool parked = o->b.uring.parked, cancelled = o->b.uring.parked_cancel;
        o->b.uring.listed = false;
        o->b.uring.owed = 0;
        o->b.uring.parked = o->b.uring.parked_cancel = false;
        for (int k = 0; k < SQF_WAIT_MAX_WORDS; k++)
            if (owed & (1u << k)) cancel_wait(loop, o, k);
        if (parked && cancelled)
            done(loop, o, -EINTR);
        else if (parked)
            uring_sleep(loop, o);
        o = next;
    }
}

static void uring_reap(struct sqf_loop *loop,
                       void (*done)(struct sqf_loop *, struct loop_op *, int))
{
    /* Anything left queued by a refused submission goes now. */
    if (io_uring_sq_ready(&loop->uring.ring)) io_uring_submit(&loop->uring.ring);
    retry_backlog(loop, done);
    /* The ring's descriptor stays readable while any completion is left in
     * it (level-triggered), and each new one wakes its watchers again. */
    struct io_uring_cqe *cqe;
    while (io_uring_peek_cqe(&loop->uring.ring, &cqe) == 0) {
        uint64_t tag = cqe->user_data;
        int res = cqe->res;
        io_uring_cqe_seen(&loop->uring.ring, cqe);
        if (tag < 8) continue; /* TAG_TIMEOUT, TAG_CANCEL */
        struct loop_op *o = (struct loop_op *)(uintptr_t)(tag & ~(uint64_t)7);
        int k = (int)(tag & 7);
        if (o->b.uring.owed & (1u << k)) { /* back by itself: no cancel owed */
            o->b.uring.owed &= ~(1u << k);
            backlog_drop(loop, o);
        }
        sqf_split_complete(loop, o, k, res, cancel_wait, done);
    }
}

static void uring_finish(struct loop_op *o)
{
    (void)o;
}

const struct loop_backend sqf_loop_uring = {"io_uring",   uring_create, uring_destroy, uring_sleep,
                                            uring_cancel, uring_reap,   uring_finish,  false};

#else /* built without liburing */

static int uring_create(struct sqf_loop *loop)
{
    (void)loop;
    return ENOTSUP;
}

const struct loop_backend sqf_loop_uring = {"io_uring", uring_create, NULL, NULL,
                                            NULL,       NULL,         NULL, false};

#endif
