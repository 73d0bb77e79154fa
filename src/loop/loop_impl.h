/* loop_impl.h: what the event-loop driver (src/loop.c) and its backends
 * (src/loop/uring.c, src/loop/fallback.c) share.
 *
 * The driver owns everything the protocol needs (the op, its steps, the
 * sleep it prepared with sqf_sleep_prepare, callbacks, counts); a backend
 * only carries a prepared sleep to the place where a wake-up finds it, and
 * brings back how it ended, as sqf_wait_any reports it: the index of the
 * word whose wake dequeued it, or -EAGAIN, -ETIMEDOUT, -EINTR.
 */
#ifndef SQF_SRC_LOOP_IMPL_H
#define SQF_SRC_LOOP_IMPL_H

#include <linux/time_types.h> /* __kernel_timespec, with or without liburing */
#include <pthread.h>

#include <squarefree/loop.h>

#include "../wait/table.h"
#include "../waitop.h"

#ifdef SQF_HAVE_URING
#include <liburing.h>
#endif

/* The futex_waitv entry, as the kernel reads it (io_uring FUTEX_WAITV). */
struct sqf_futex_waitv {
    uint64_t val;
    uint64_t uaddr;
    uint32_t flags;
    uint32_t reserved;
};

enum { OP_IDLE, OP_SLEEPING };

struct loop_op {
    struct sqf_waitop w; /* the protocol's op: deadline, token, state */
    sqf_step_fn step;
    struct sqf_loop *loop;
    sqf_loop_cb cb;
    void *arg;
    int state;
    bool cancel_requested;
    struct sqf_sleep sleep; /* the sleep in flight, as prepared */
    union {
        struct {
            struct sqf_futex_waitv v[SQF_WAIT_MAX_WORDS];
            struct __kernel_timespec ts;
        } uring;
        struct {
            struct sqf_table_waiter tw;  /* queued in the table while asleep */
            bool tw_ready;               /* tw's mutex is initialised */
            bool left;                   /* the loop thread took it out (cancel, time-out) */
            int res;                     /* how the sleep ended (set once it has) */
            struct loop_op *next_done;   /* the loop's list of ended sleeps */
            struct loop_op *prev, *next; /* the loop's list of sleeping ops */
        } fb;
    } b;
};

struct sqf_loop;

struct loop_backend {
    const char *name;
    /* Set up loop (the driver zeroed it); 0, or ENOTSUP and others. */
    int (*create)(struct sqf_loop *loop);
    void (*destroy)(struct sqf_loop *loop);
    /* Start o's prepared sleep: 0 (in flight), or how it ended at once. */
    int (*sleep)(struct sqf_loop *loop, struct loop_op *o);
    /* Ask o's sleep in flight to end soon (it then ends as it ends). */
    void (*cancel)(struct sqf_loop *loop, struct loop_op *o);
    /* Ended sleeps: call done(loop, o, how-it-ended) for each, in order. */
    void (*reap)(struct sqf_loop *loop, void (*done)(struct sqf_loop *, struct loop_op *, int));
    /* o's wait is over: release what the backend holds for it. */
    void (*finish)(struct loop_op *o);
};

extern const struct loop_backend sqf_loop_uring, sqf_loop_fallback;

struct sqf_loop {
    const struct loop_backend *be;
    int fd;           /* what sqf_loop_fd returns */
    unsigned pending; /* ops whose callback has not run */
    int ran;          /* callbacks run by the dispatch in progress */
    int dispatching;  /* dispatches in progress (callbacks may dispatch) */
#ifdef SQF_HAVE_URING
    struct {
        struct io_uring ring;
        int efd;
    } uring;
#endif
    struct {
        int efd, tfd;            /* ended sleeps; the earliest deadline */
        pthread_mutex_t done_mu; /* guards the done list (wakers push to it) */
        struct loop_op *done_head, *done_tail;
        struct loop_op *sleeping; /* loop thread only */
        sqf_deadline armed;       /* the timer's deadline, SQF_FOREVER if none */
    } fb;
};

#endif
