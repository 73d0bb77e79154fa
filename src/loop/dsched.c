/* dsched.c: the event-loop backend of the deterministic scheduler's build
 * (tests only, SQF_DSCHED).  It stands where src/loop/uring.c stands: a
 * sleep is one simulated IORING_OP_FUTEX_WAIT (src/wait/dsched.h) per word,
 * split and decided by the same code as the io_uring backend's (split.c),
 * with the deadline as the primitive's wait's linked time-out.  So schedule
 * exploration runs the driver, every primitive's step and the split
 * together.  The loop has no descriptor: a test's loop thread calls
 * dsched_await(loop) where a real one waits for sqf_loop_fd.
 */
#define _GNU_SOURCE
#include "loop_impl.h"

static int ds_create(struct sqf_loop *loop)
{
    loop->fd = -1;
    return 0;
}

static void ds_destroy(struct sqf_loop *loop)
{
    (void)loop;
}

static int ds_sleep(struct sqf_loop *loop, struct loop_op *o)
{
    const struct sqf_sleep *s = &o->sleep;
    if (sqf_split_begin(loop, o)) return 0; /* it shares a wait in flight */
    for (int k = 0; k < s->n; k++)
        dsched_submit(&o->b.ds[k], loop, sqf_split_tag(o, k), &s->w[k],
                      k == s->n - 1 ? s->deadline : SQF_FOREVER);
    return 0;
}

static void cancel_wait(struct sqf_loop *loop, struct loop_op *o, int k)
{
    (void)loop;
    dsched_cancel(&o->b.ds[k]);
}

static void ds_cancel(struct sqf_loop *loop, struct loop_op *o)
{
    sqf_split_cancel(loop, o, cancel_wait);
}

static void ds_reap(struct sqf_loop *loop, void (*done)(struct sqf_loop *, struct loop_op *, int))
{
    struct dsched_req *r;
    while ((r = dsched_reap(loop)) != NULL) {
        struct loop_op *o = (struct loop_op *)(uintptr_t)(r->user_data & ~(uint64_t)7);
        sqf_split_complete(loop, o, (int)(r->user_data & 7), r->res, cancel_wait, done);
    }
}

static void ds_finish(struct loop_op *o)
{
    (void)o;
}

const struct loop_backend sqf_loop_dsched = {"dsched",  ds_create, ds_destroy, ds_sleep,
                                             ds_cancel, ds_reap,   ds_finish,  false};
