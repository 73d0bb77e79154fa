/* loop_libuv.c: a libuv loop and 1,000 threads wait on one latch together.
 *
 * The libuv loop watches sqf_loop_fd with a uv_poll_t and dispatches when it
 * becomes readable.  1,000 waits of the loop (sqf_loop_latch_wait, one
 * caller-owned op each, no thread, no handle per wait) and 1,000 threads
 * (sqf_latch_wait) sleep on the same latch word; one sqf_latch_count_down
 * wakes all 2,000 with one kernel call.  The program reports how long after
 * the count-down the loop had run its last callback.
 *
 * Build against an installed squarefree and Debian's libuv1-dev:
 *     cc -std=c11 loop_libuv.c $(pkg-config --cflags --libs squarefree libuv) -o loop_libuv
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <squarefree.h>
#include <uv.h>

#define LOOP_WAITS 1000
#define THREADS    1000

static sqf_latch start;   /* counted down once: everyone goes */
static sqf_latch waiting; /* the threads check in before they sleep */
static sqf_loop *loop;
static sqf_loop_op ops[LOOP_WAITS];
static int callbacks;
static sqf_deadline opened_at, last_callback;

static void on_open(sqf_loop_op *op, int result, void *arg)
{
    (void)op;
    (void)arg;
    if (result == 0) callbacks++;
    last_callback = sqf_now();
}

static void on_readable(uv_poll_t *handle, int status, int events)
{
    (void)events;
    if (status == 0) sqf_loop_dispatch(loop);
    if (callbacks == LOOP_WAITS && sqf_loop_pending(loop) == 0) uv_poll_stop(handle);
}

static void *thread_main(void *arg)
{
    (void)arg;
    sqf_latch_count_down(&waiting, 1);
    sqf_latch_wait(&start);
    return NULL;
}

/* Runs on its own thread, once the loop runs: count the latch down after
 * every thread has checked in (and had time to fall asleep). */
static void *opener(void *arg)
{
    (void)arg;
    sqf_latch_wait(&waiting);
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    opened_at = sqf_now();
    sqf_latch_count_down(&start, 1);
    return NULL;
}

int main(void)
{
    int e = sqf_loop_create(&loop, 0);
    if (e == ENOTSUP) {
        printf("loop_libuv: this build or kernel has no loop backend (io_uring futex "
               "operations, Linux 6.7+): nothing to show\n");
        return 0;
    }
    if (e) {
        fprintf(stderr, "sqf_loop_create: %s\n", strerror(e));
        return 1;
    }
    sqf_latch_init(&start, 1, SQF_PRIVATE);
    sqf_latch_init(&waiting, THREADS, SQF_PRIVATE);

    for (int i = 0; i < LOOP_WAITS; i++) {
        e = sqf_loop_latch_wait(loop, &ops[i], &start, SQF_FOREVER, NULL, on_open, NULL);
        if (e != EINPROGRESS) {
            fprintf(stderr, "sqf_loop_latch_wait: %s\n", strerror(e));
            return 1;
        }
    }
    pthread_attr_t small;
    pthread_attr_init(&small);
    pthread_attr_setstacksize(&small, 64 * 1024);
    pthread_t *t = malloc(sizeof *t * THREADS), op;
    int started = 0;
    for (; started < THREADS; started++)
        if (!t || pthread_create(&t[started], &small, thread_main, NULL) != 0) break;
    if (started < THREADS) {
        fprintf(stderr, "loop_libuv: only %d threads could start\n", started);
        sqf_latch_count_down(&waiting, (unsigned)(THREADS - started)); /* let the opener go */
    }
    pthread_create(&op, NULL, opener, NULL);

    uv_loop_t *uv = uv_default_loop();
    uv_poll_t poll;
    uv_poll_init(uv, &poll, sqf_loop_fd(loop));
    uv_poll_start(&poll, UV_READABLE, on_readable);
    uv_run(uv, UV_RUN_DEFAULT); /* returns once on_readable has stopped the poll */
    uv_close((uv_handle_t *)&poll, NULL);
    uv_run(uv, UV_RUN_DEFAULT);

    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    pthread_join(op, NULL);
    free(t);
    printf("loop_libuv: one count_down woke %d libuv waits and %d threads; the loop ran its "
           "last callback %.0f us after it\n",
           callbacks, started, (double)(last_callback - opened_at) / 1000.0);
    uv_loop_close(uv);
    return sqf_loop_destroy(loop) == 0 && callbacks == LOOP_WAITS ? 0 : 1;
}
