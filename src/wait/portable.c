/* portable.c: the wait seam on plain pthreads, for systems without futexes
 * and as a second implementation that the whole test suite also runs on.
 *
 * Waiters queue in the user-space futex of table.h; a sleeping thread is a
 * table waiter (on its stack) with its own condition variable, signalled
 * by the wake that dequeues it, so that wake-ups are exact: a waiter is
 * counted by at most one wake (Linux's futex_waitv can count one through
 * several words: see the rule in wait.h, of which this is the special case
 * with one wake).  Event loops without io_uring park their waits in the
 * same table (loop.c), so they mix with these threads in arrival order.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "table.h"

struct sleeper {
    struct sqf_table_waiter w; /* first: notify gets &w */
    pthread_cond_t cv;
};

static void wake_thread(struct sqf_table_waiter *w)
{
    pthread_cond_signal(&((struct sleeper *)w)->cv); /* under w->mu */
}

int sqf_wait_any(const struct sqf_wait_word *w, int n, sqf_deadline deadline)
{
    if (n < 1 || n > SQF_WAIT_MAX_WORDS) return -EINVAL;
    if (deadline != SQF_FOREVER && deadline <= sqf_now()) return -ETIMEDOUT;

    struct sleeper s;
    sqf_table_waiter_init(&s.w, wake_thread);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s.cv, &ca);
    pthread_condattr_destroy(&ca);

    int result = sqf_table_enqueue(&s.w, w, n);
    if (result == 0) {
        struct timespec ts;
        if (deadline != SQF_FOREVER) {
            ts.tv_sec = (time_t)(deadline / SQF_SEC);
            ts.tv_nsec = (long)(deadline % SQF_SEC);
        }
        /* pthread_cond_wait is a cancellation point, and no squarefree wait
         * may be one: a cancelled sleeper would unwind with its links still
         * queued on a dead stack.  Cancellation acts after our call. */
        int cancel_state;
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
        pthread_mutex_lock(&s.w.mu);
        bool timed_out = false;
        while (s.w.state == SQF_TABLE_WAITING && !timed_out) {
            if (deadline == SQF_FOREVER)
                pthread_cond_wait(&s.cv, &s.w.mu);
            else
                timed_out = pthread_cond_timedwait(&s.cv, &s.w.mu, &ts) == ETIMEDOUT;
        }
        pthread_mutex_unlock(&s.w.mu);
        pthread_setcancelstate(cancel_state, NULL);
        /* A wake that came first wins over the time-out. */
        int woken = sqf_table_leave(&s.w);
        result = woken >= 0 ? woken : -ETIMEDOUT;
    }
    pthread_cond_destroy(&s.cv);
    sqf_table_waiter_destroy(&s.w);
    return result;
}

int sqf_wait(sqf_word *word, uint32_t expected, sqf_deadline deadline, bool shared)
{
    struct sqf_wait_word w = {word, expected, shared};
    int r = sqf_wait_any(&w, 1, deadline);
    return r >= 0 ? SQF_WAIT_WOKEN : -r;
}

void sqf_wait_yield(void)
{
    sched_yield();
}

int sqf_wake(sqf_word *word, int n, bool shared)
{
    (void)shared;
    return sqf_table_wake(word, n);
}

int sqf_requeue(sqf_word *from, uint32_t expected, int nwake, sqf_word *to, int nmove, bool shared)
{
    (void)shared;
    return sqf_table_requeue(from, expected, nwake, to, nmove);
}

bool sqf_wait_shared_supported(void)
{
    return false;
}

/* No robust mutex here: the kernel's robust list needs the futex backend. */
_Thread_local struct sqf_thread_self sqf_self_ __attribute__((tls_model("initial-exec")));

struct sqf_thread_self *sqf_self_fill_(long futex_offset)
{
    (void)futex_offset;
    return NULL;
}
