/* loop_impl.h: what the event-loop driver (src/loop.c) and its backends
 * (src/loop/uring.c, src/loop/fallback.c, and src/loop/dsched.c in the
 * deterministic scheduler's build) share.
 *
 * The driver owns everything the protocol needs (the op, its steps, the
 * sleep it prepared with sqf_sleep_prepare, callbacks, counts); a backend
 * only carries a prepared sleep to the place where a wake-up finds it, and
 * brings back how it ended, as sqf_wait_any reports it: the index of the
 * word whose wake dequeued it, or -EAGAIN, -ETIMEDOUT, -EINTR.
 */
#ifndef SQF_SRC_LOOP_IMPL_H
#define SQF_SRC_LOOP_IMPL_H

#include <errno.h>
#include <linux/time_types.h> /* __kernel_timespec, with or without liburing */
#include <pthread.h>

#include <squarefree/loop.h>

#include "../wait/table.h"
#include "../waitop.h"

#ifdef SQF_HAVE_URING
#include <liburing.h>
#endif
#ifdef SQF_DSCHED
#include "../wait/dsched.h"
#endif

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
    struct {                /* a sleep as one-word waits (split.c) */
        unsigned out;       /* bit k: the wait on word k is in flight */
        int prim;           /* the primitive's wait's result (1: none yet) */
        int tok;            /* the highest token word whose wait fired, or -1 */
        bool ending;        /* the sleep is over once all are back */
        /* Sharing one wait (split.c): a follower's leader; a leader's
         * followers (FIFO) and its place in the loop's table. */
        struct loop_op *leader, *followers, *last, *next;
        bool open; /* a leader in the table, taking followers */
    } split;
    union {
        struct {
            struct __kernel_timespec ts;
            unsigned owed;               /* cancels not yet submitted (bit k: wait k) */
            bool parked;                 /* its sleep is not yet submitted */
            bool parked_cancel;          /* ... and sqf_loop_cancel asked to end it */
            bool listed;                 /* on the loop's backlog */
            struct loop_op *prev, *next; /* the loop's backlog (uring.c) */
        } uring;
        struct {
            struct sqf_table_waiter tw;  /* queued in the table while asleep */
            bool tw_ready;               /* tw's mutex is initialised */
            bool left;                   /* the loop thread took it out (cancel, time-out) */
            int res;                     /* how the sleep ended (set once it has) */
            struct loop_op *next_done;   /* the loop's list of ended sleeps */
            struct loop_op *prev, *next; /* the loop's list of sleeping ops */
        } fb;
#ifdef SQF_DSCHED
        struct dsched_req ds[SQF_WAIT_MAX_WORDS]; /* simulated io_uring (tests only) */
#endif
    } b;
};

/* A sleep as one-word futex waits, for the backends whose waits are
 * io_uring's (uring.c, and its simulation dsched.c): see split.c for why,
 * and for how a loop's untimed, untokened sleeps on the same word share one
 * wait.  A wait's user_data is the op's address with the word's index in
 * the low three bits (an op is 8-aligned, and a sleep has at most 8
 * words). */
struct sqf_loop;
typedef void (*sqf_split_cancel_fn)(struct sqf_loop *, struct loop_op *, int k);
typedef void (*sqf_split_done_fn)(struct sqf_loop *, struct loop_op *, int how);
/* Before o's sleep is submitted: true if o joined a wait in flight (submit
 * nothing); else o's waits are set up, to be submitted now. */
bool sqf_split_begin(struct sqf_loop *loop, struct loop_op *o);
/* Wait k of o ended with res (0, -ECANCELED, -EAGAIN...).  Cancels the
 * waits still in flight once the sleep is decided; when the last is back,
 * calls done() for o and for every op that shared its wait, with how each
 * sleep ended as sqf_wait_any would report it. */
void sqf_split_complete(struct sqf_loop *loop, struct loop_op *o, int k, int res,
                        sqf_split_cancel_fn cancel, sqf_split_done_fn done);
/* sqf_loop_cancel: end o's sleep (through the primitive's wait). */
void sqf_split_cancel(struct sqf_loop *loop, struct loop_op *o, sqf_split_cancel_fn cancel);
static inline uint64_t sqf_split_tag(const struct loop_op *o, int k)
{
    return (uint64_t)(uintptr_t)o | (unsigned)k;
}

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
    /* Its sleeps hear only this process's wakes: a wait on a process-shared
     * word is refused (loop.h, Processes). */
    bool process_local;
};

extern const struct loop_backend sqf_loop_uring, sqf_loop_fallback;
#ifdef SQF_DSCHED
extern const struct loop_backend sqf_loop_dsched;
#endif

#define SQF_SPLIT_BUCKETS 64

struct sqf_loop {
    const struct loop_backend *be;
    struct loop_op *shared[SQF_SPLIT_BUCKETS]; /* split.c: open leaders, by word */
    int fd;                                    /* what sqf_loop_fd returns */
    unsigned pending;                          /* ops whose callback has not run */
    int ran;                                   /* callbacks run by the dispatch in progress */
    int dispatching;                           /* dispatches in progress (callbacks may dispatch) */
#ifdef SQF_HAVE_URING
    struct {
        struct io_uring ring;
        struct loop_op *backlog; /* ops with work the kernel refused for now */
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
