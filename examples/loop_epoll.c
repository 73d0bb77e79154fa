/* loop_epoll.c: an epoll event loop and a pool of threads share a
 * semaphore and a latch.
 *
 * Four worker threads produce results into a ring and release one permit
 * of `ready` per result; when a worker is done it counts the latch
 * `workers_done` down.  The event loop (one thread, epoll) keeps a few
 * sqf_loop_sem_acquire waits pending: each completion takes one result
 * from the ring.  It also waits on the latch, without blocking, and keeps
 * serving a timer on the same epoll set, to show that it never blocks on
 * the primitives.  Threads and the loop wait on the very same semaphore
 * and latch words; nobody polls.
 *
 * Build against an installed squarefree:
 *     cc -std=c11 loop_epoll.c $(pkg-config --cflags --libs squarefree) -o loop_epoll
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <squarefree.h>

#define WORKERS  4
#define ITEMS    2500 /* per worker */
#define RING     256  /* results in flight at most */
#define ACQUIRES 4    /* loop waits kept pending on the semaphore */

static sqf_sem ready; /* a permit per result in the ring */
static sqf_sem room;  /* a permit per free slot in the ring */
static sqf_latch workers_done;
static sqf_mutex ring_mu = SQF_MUTEX_INIT;
static long ring[RING];     /* protected by ring_mu */
static unsigned head, tail; /* protected by ring_mu */

static void *worker(void *arg)
{
    long id = (long)(intptr_t)arg;
    for (long i = 0; i < ITEMS; i++) {
        sqf_sem_acquire(&room); /* a thread may block: it is a thread */
        sqf_mutex_lock(&ring_mu);
        ring[tail++ % RING] = id * ITEMS + i;
        sqf_mutex_unlock(&ring_mu);
        sqf_sem_release(&ready, 1);
    }
    sqf_latch_count_down(&workers_done, 1);
    return NULL;
}

/* The loop's state: touched only by the loop's thread. */
static sqf_loop *loop;
static sqf_loop_op acquires[ACQUIRES], latch_op;
static long consumed, sum;
static int all_produced;

static void got_result(sqf_loop_op *op, int result, void *arg);

static void acquire_next(sqf_loop_op *op)
{
    int e = sqf_loop_sem_acquire(loop, op, &ready, SQF_FOREVER, NULL, got_result, NULL);
    if (e != EINPROGRESS) got_result(op, e, NULL); /* completed at once */
}

static void got_result(sqf_loop_op *op, int result, void *arg)
{
    (void)arg;
    if (result != 0) return; /* ECANCELED at shutdown */
    /* A short critical section on the loop thread: the ring's mutex is only
     * ever held for a few instructions, never across a wait. */
    sqf_mutex_lock(&ring_mu);
    long item = ring[head++ % RING];
    sqf_mutex_unlock(&ring_mu);
    sqf_sem_release(&room, 1);
    consumed++;
    sum += item;
    acquire_next(op);
}

static void workers_finished(sqf_loop_op *op, int result, void *arg)
{
    (void)op;
    (void)arg;
    all_produced = result == 0;
}

int main(void)
{
    int e = sqf_loop_create(&loop, 0);
    if (e == ENOTSUP) {
        printf("loop_epoll: this build or kernel has no loop backend (io_uring futex "
               "operations, Linux 6.7+): nothing to show\n");
        return 0;
    }
    if (e) {
        fprintf(stderr, "sqf_loop_create: %s\n", strerror(e));
        return 1;
    }
    sqf_sem_init(&ready, 0, 0, SQF_PRIVATE);
    sqf_sem_init(&room, RING, 0, SQF_PRIVATE);
    sqf_latch_init(&workers_done, WORKERS, SQF_PRIVATE);

    int ep = epoll_create1(EPOLL_CLOEXEC);
    int timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct itimerspec every_ms = {{0, 1000000}, {0, 1000000}};
    timerfd_settime(timer, 0, &every_ms, NULL);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = sqf_loop_fd(loop)};
    epoll_ctl(ep, EPOLL_CTL_ADD, sqf_loop_fd(loop), &ev);
    ev.data.fd = timer;
    epoll_ctl(ep, EPOLL_CTL_ADD, timer, &ev);

    for (int i = 0; i < ACQUIRES; i++)
        acquire_next(&acquires[i]);
    e = sqf_loop_latch_wait(loop, &latch_op, &workers_done, SQF_FOREVER, NULL, workers_finished,
                            NULL);
    if (e != EINPROGRESS) workers_finished(&latch_op, e, NULL);

    pthread_t t[WORKERS];
    for (long i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);

    long ticks = 0;
    while (!(all_produced && consumed == (long)WORKERS * ITEMS)) {
        struct epoll_event got[2];
        int n = epoll_wait(ep, got, 2, 1000);
        for (int i = 0; i < n; i++) {
            if (got[i].data.fd == timer) {
                uint64_t expirations;
                if (read(timer, &expirations, sizeof expirations) > 0) ticks += (long)expirations;
            } else {
                sqf_loop_dispatch(loop);
            }
        }
    }
    /* Shutdown: the pending acquires are no longer wanted. */
    for (int i = 0; i < ACQUIRES; i++)
        sqf_loop_cancel(loop, &acquires[i]);
    while (sqf_loop_pending(loop) > 0) {
        struct epoll_event got[2];
        if (epoll_wait(ep, got, 2, 1000) > 0) sqf_loop_dispatch(loop);
    }
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);

    long n = (long)WORKERS * ITEMS;
    printf("loop_epoll: the loop consumed %ld results from %d threads (sum %s), "
           "served %ld timer ticks meanwhile, and never blocked on a primitive\n",
           consumed, WORKERS, sum == n * (n - 1) / 2 ? "correct" : "WRONG", ticks);
    close(timer);
    close(ep);
    if (sqf_loop_destroy(loop) != 0) return 1;
    return sum == n * (n - 1) / 2 ? 0 : 1;
}
