/* fallback.c: the event-loop backend without io_uring (a kernel before 6.7,
 * io_uring disabled by sysctl or blocked by a seccomp profile, the portable
 * wait backend).  No thread per waiter, and no thread per loop either.
 *
 * A loop's sleep is an entry in the user-space futex of src/wait/table.h,
 * queued on the same words a thread would sleep on, with the same check
 * (queued only while each word holds its value).  The releasers do not
 * change: their sqf_wake and sqf_requeue serve the kernel's queue first and
 * then this table (futex backend; the portable backend has only the table).
 * The wake that dequeues an entry hands it to its loop (a list under a
 * mutex, and an eventfd write); the loop's own timerfd, armed at the
 * earliest deadline of its sleeping ops, ends sleeps that time out.  The
 * loop's descriptor is an epoll set of the two.
 *
 * Why this and not a helper thread per loop sleeping in futex_waitv on the
 * words of all its ops: futex_waitv reports one index however many of its
 * words were woken before it ran (wait.h), so a helper would lose every
 * hand-off but one that arrived together; the table counts each entry's
 * wake exactly.  The costs: the releaser takes a bucket lock per wake when
 * loop entries exist anywhere in the process (one fence and a load when
 * none do), and a thread sleeping in the kernel is served before a loop
 * entry on the same word.
 *
 * Process-shared (SQF_SHARED) primitives are beyond it: a wake from
 * another process serves the kernel's queue only.  A wait that would sleep
 * on such a word ends with ENOTSUP instead (loop.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "loop_impl.h"

static struct loop_op *op_of(struct sqf_table_waiter *tw)
{
    return (struct loop_op *)((char *)tw - offsetof(struct loop_op, b.fb.tw));
}

/* Append o to its loop's ended sleeps; `signal`: from a waker's thread, so
 * the loop's descriptor must become readable.  Only the push onto an empty
 * list writes the eventfd: the loop resets the eventfd before it takes the
 * whole list, so a later push finds either the list still there (it will
 * be taken) or empty again (and writes).  A wake-all of k loop waits then
 * makes one write, not k. */
static void push_done(struct sqf_loop *loop, struct loop_op *o, bool signal)
{
    o->b.fb.next_done = NULL;
    pthread_mutex_lock(&loop->fb.done_mu);
    signal = signal && loop->fb.done_head == NULL;
    if (loop->fb.done_tail)
        loop->fb.done_tail->b.fb.next_done = o;
    else
        loop->fb.done_head = o;
    loop->fb.done_tail = o;
    pthread_mutex_unlock(&loop->fb.done_mu);
    if (signal) {
        uint64_t one = 1;
        while (write(loop->fb.efd, &one, sizeof one) < 0 && errno == EINTR) {
        }
    }
}

/* A waker dequeued o's entry (under the table's locks and tw's mutex). */
static void notify(struct sqf_table_waiter *tw)
{
    struct loop_op *o = op_of(tw);
    o->b.fb.res = tw->state; /* the index it was woken through */
    push_done(o->loop, o, true);
}

static void sleeping_add(struct sqf_loop *loop, struct loop_op *o)
{
    o->b.fb.prev = NULL;
    o->b.fb.next = loop->fb.sleeping;
    if (loop->fb.sleeping) loop->fb.sleeping->b.fb.prev = o;
    loop->fb.sleeping = o;
}

static void sleeping_remove(struct sqf_loop *loop, struct loop_op *o)
{
    if (o->b.fb.prev)
        o->b.fb.prev->b.fb.next = o->b.fb.next;
    else
        loop->fb.sleeping = o->b.fb.next;
    if (o->b.fb.next) o->b.fb.next->b.fb.prev = o->b.fb.prev;
}

/* Arm the timer at the earliest deadline of the sleeping ops (or disarm). */
static void rearm(struct sqf_loop *loop)
{
    sqf_deadline first = SQF_FOREVER;
    for (struct loop_op *o = loop->fb.sleeping; o; o = o->b.fb.next)
        if (o->sleep.deadline < first) first = o->sleep.deadline;
    if (first == loop->fb.armed) return;
    loop->fb.armed = first;
    struct itimerspec its = {{0, 0}, {0, 0}};
    if (first != SQF_FOREVER) {
        if (first < 1) first = 1; /* 0 would disarm */
        its.it_value.tv_sec = first / SQF_SEC;
        its.it_value.tv_nsec = first % SQF_SEC;
    }
    timerfd_settime(loop->fb.tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static int fb_create(struct sqf_loop *loop)
{
    loop->fb.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    loop->fb.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    loop->fd = epoll_create1(EPOLL_CLOEXEC);
    int e = 0;
    struct epoll_event ev = {.events = EPOLLIN};
    if (loop->fb.efd < 0 || loop->fb.tfd < 0 || loop->fd < 0) {
        e = errno;
    } else {
        ev.data.fd = loop->fb.efd;
        if (epoll_ctl(loop->fd, EPOLL_CTL_ADD, loop->fb.efd, &ev) != 0) e = errno;
        ev.data.fd = loop->fb.tfd;
        if (!e && epoll_ctl(loop->fd, EPOLL_CTL_ADD, loop->fb.tfd, &ev) != 0) e = errno;
    }
    if (e) {
        if (loop->fb.efd >= 0) close(loop->fb.efd);
        if (loop->fb.tfd >= 0) close(loop->fb.tfd);
        if (loop->fd >= 0) close(loop->fd);
        return e;
    }
    pthread_mutex_init(&loop->fb.done_mu, NULL);
    loop->fb.armed = SQF_FOREVER;
    return 0;
}

static void fb_destroy(struct sqf_loop *loop)
{
    close(loop->fb.efd);
    close(loop->fb.tfd);
    close(loop->fd);
    pthread_mutex_destroy(&loop->fb.done_mu);
}

static int fb_sleep(struct sqf_loop *loop, struct loop_op *o)
{
    /* A process-shared word: the table is this process's own, and another
     * process's wake reaches only the kernel's queue, so an entry here
     * would never be woken from there.  The wait ends with ENOTSUP (a stop:
     * the step undoes its announcement), never queued. */
    for (int i = 0; i < o->sleep.n; i++)
        if (o->sleep.w[i].shared) return -ENOSYS;
    if (!o->b.fb.tw_ready) {
        sqf_table_waiter_init(&o->b.fb.tw, notify);
        o->b.fb.tw_ready = true;
    }
    o->b.fb.left = false;
    int r = sqf_table_enqueue(&o->b.fb.tw, o->sleep.w, o->sleep.n);
    if (r < 0) return r; /* -EAGAIN: a word had changed, never queued */
    sleeping_add(loop, o);
    if (o->sleep.deadline < loop->fb.armed) rearm(loop);
    return 0;
}

static void fb_cancel(struct sqf_loop *loop, struct loop_op *o)
{
    /* Not woken yet: no wake will count it now, so its sleep ends here
     * ("look again"; the driver then sees the cancel request).  Woken
     * already: the wake has handed it to the loop. */
    if (o->b.fb.left) return; /* its sleep has ended already */
    o->b.fb.left = true;
    if (sqf_table_leave(&o->b.fb.tw) < 0) {
        o->b.fb.res = -EINTR;
        push_done(loop, o, true);
    }
}

static void fb_reap(struct sqf_loop *loop, void (*done)(struct sqf_loop *, struct loop_op *, int))
{
    uint64_t n;
    /* Reset both first: an end posted after these reads signals again. */
    while (read(loop->fb.efd, &n, sizeof n) < 0 && errno == EINTR) {
    }
    while (read(loop->fb.tfd, &n, sizeof n) < 0 && errno == EINTR) {
    }
    /* Time-outs: a sleep still not woken at its deadline ends with it. */
    sqf_deadline now = sqf_now();
    for (struct loop_op *o = loop->fb.sleeping; o; o = o->b.fb.next)
        if (!o->b.fb.left && o->sleep.deadline <= now) {
            o->b.fb.left = true;
            if (sqf_table_leave(&o->b.fb.tw) < 0) {
                o->b.fb.res = -ETIMEDOUT;
                push_done(loop, o, false);
            }
        }
    pthread_mutex_lock(&loop->fb.done_mu);
    struct loop_op *list = loop->fb.done_head;
    loop->fb.done_head = loop->fb.done_tail = NULL;
    pthread_mutex_unlock(&loop->fb.done_mu);
    while (list) {
        struct loop_op *o = list;
        list = o->b.fb.next_done; /* read first: done() may reuse o */
        sleeping_remove(loop, o);
        sqf_table_leave(&o->b.fb.tw); /* the links no wake took */
        done(loop, o, o->b.fb.res);
    }
    rearm(loop);
}

static void fb_finish(struct loop_op *o)
{
    if (o->b.fb.tw_ready) sqf_table_waiter_destroy(&o->b.fb.tw);
    o->b.fb.tw_ready = false;
}

const struct loop_backend sqf_loop_fallback = {"fallback", fb_create, fb_destroy, fb_sleep,
                                               fb_cancel,  fb_reap,   fb_finish,  true};
