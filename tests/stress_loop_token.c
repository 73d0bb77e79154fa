/* stress_loop_token.c: releases that follow a token's cancel of a loop
 * wait must reach the waiters behind it (the real kernel, both backends).
 *
 * A loop op waits on a semaphore with a token, and a thread waits behind
 * it.  Another thread cancels the token and at once releases two permits.
 * The cancel ends the loop op's wait; the releases, each waking one,
 * must wake the thread behind it for the permit that the loop op does not
 * take.  With the loop's sleep as one io_uring FUTEX_WAITV on the token's
 * word and the semaphore's, the token's wake claimed that request, which
 * stayed queued on the semaphore's word until the loop's thread ran its
 * completion; each release that met it there was counted and lost, and
 * the thread behind slept beside a permit.  The loop thread and the
 * canceller share one CPU, so that the loop's thread, woken by the
 * cancel, runs that completion only after the releases.
 */
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include <squarefree.h>
#include <squarefree/loop.h>

#include "check.h"

static sqf_sem sem;
static sqf_cancel tok;
static sqf_loop_op op;
static int op_result, op_done;
static int canceller_done;

static void cb(sqf_loop_op *o, int r, void *arg)
{
    (void)o, (void)arg;
    op_result = r;
    op_done = 1;
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set); /* best effort */
}

static int behind_done;

/* Untimed: a time-out would find the stranded permit and hide the loss. */
static void *behind_main(void *arg)
{
    int *r = arg;
    *r = sqf_sem_acquire(&sem);
    __atomic_store_n(&behind_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *canceller_main(void *arg)
{
    (void)arg;
    pin(0);
    CHECK_EQ(sqf_cancel_cancel(&tok), 0);
    CHECK_EQ(sqf_sem_release(&sem, 1), 0);
    CHECK_EQ(sqf_sem_release(&sem, 1), 0);
    __atomic_store_n(&canceller_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void sleep_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* One round; false if the thread behind missed its permit. */
static bool round_on(sqf_loop *loop)
{
    CHECK_EQ(sqf_sem_init(&sem, 0, 0, SQF_PRIVATE), 0);
    CHECK_EQ(sqf_cancel_init(&tok, NULL, SQF_FOREVER), 0);
    op_done = 0;
    CHECK_EQ(sqf_loop_sem_acquire(loop, &op, &sem, SQF_FOREVER, &tok, cb, NULL), EINPROGRESS);
    int behind = -1;
    behind_done = 0;
    pthread_t b, c;
    CHECK_EQ(pthread_create(&b, NULL, behind_main, &behind), 0);
    sleep_us(300); /* the thread behind is asleep by now (if not, the round is easier) */
    canceller_done = 0;
    CHECK_EQ(pthread_create(&c, NULL, canceller_main, NULL), 0);
    /* Stay busy in user space (no system call) until the canceller is done:
     * on the shared CPU it runs only when this thread is preempted, so the
     * loop's thread runs no completion between the cancel and the releases. */
    sqf_deadline busy = sqf_after(SQF_SEC);
    while (!__atomic_load_n(&canceller_done, __ATOMIC_ACQUIRE) && sqf_now() < busy) {
    }
    sqf_deadline stop = sqf_after(3 * SQF_SEC);
    while (!op_done && sqf_now() < stop) {
        struct pollfd p = {sqf_loop_fd(loop), POLLIN, 0};
        poll(&p, 1, 10);
        CHECK(sqf_loop_dispatch(loop) >= 0);
    }
    CHECK(op_done);
    pthread_join(c, NULL);
    /* The loop op took a permit (a wake reached it before the cancel) or
     * left; the thread behind must get the other, woken by a release (2 s
     * is the bound for "never": it needs microseconds). */
    CHECK(op_result == 0 || op_result == ECANCELED);
    sqf_deadline stop2 = sqf_after(2 * SQF_SEC);
    while (!__atomic_load_n(&behind_done, __ATOMIC_ACQUIRE) && sqf_now() < stop2)
        sleep_us(1000);
    bool woken = __atomic_load_n(&behind_done, __ATOMIC_ACQUIRE);
    CHECK(woken);
    if (!woken) sqf_sem_release(&sem, 1); /* let it go, to end the round */
    pthread_join(b, NULL);
    CHECK_EQ(behind, 0);
    if (woken) {
        unsigned v = 99;
        sqf_sem_getvalue(&sem, &v);
        CHECK_EQ(v, op_result == 0 ? 0u : 1u);
    }
    return woken;
}

/* 0, or 77 if the backend is not available here. */
static int run(unsigned flags, const char *name)
{
    sqf_loop *loop;
    int e = sqf_loop_create(&loop, flags);
    if (e == ENOTSUP) return 77;
    CHECK_EQ(e, 0);
    pin(0); /* the loop's thread shares CPU 0 with the canceller */
    int rounds = (int)soak(300), missed = 0;
    int i;
    for (i = 0; i < rounds && missed < 3; i++)
        missed += !round_on(loop);
    printf("%s: %d rounds, %d with a lost wake-up\n", name, i, missed);
    CHECK_EQ(sqf_loop_destroy(loop), 0);
    return 0;
}

int main(void)
{
    watchdog(120);
    CHECK_EQ(run(SQF_LOOP_FALLBACK, "fallback"), 0);
    if (!SQF_TEST_URING_EXPECTED) {
        printf("this build has no io_uring backend: the fallback was the one to check\n");
        return check_done();
    }
    if (run(SQF_LOOP_URING, "io_uring") == 77) {
        printf("io_uring SKIPPED: this kernel refuses io_uring futex operations\n");
        check_done();
        return 77;
    }
    return check_done();
}
