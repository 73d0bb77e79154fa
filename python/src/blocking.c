/* blocking.c: the thread driver: a wait protocol run with the GIL released
 * while asleep, and woken threads let back into Python one at a time. */
#include "module.h"

#include <pthread.h>

/* The turnstile that woken threads pass, one at a time, to take the GIL
 * back.  A wake-all wakes n sleepers at once, and n threads asking for the
 * GIL together is the square again, moved into the interpreter: each
 * handover is contended by all the others.  Through the turnstile, one
 * woken thread at a time waits for the GIL, and opens the turnstile for
 * the next as soon as it holds it: a chain, each woken thread waking the
 * next once it can run, and at most two threads contending for the GIL.
 * Measured on 2 CPUs (800 threads woken by one Latch, from the opening to
 * the last thread back in Python, medians of 7): no turnstile 145 ms; one
 * at a time 52 ms; two, three or four at a time 61, 66 and 66 ms.
 * Only threads without the GIL wait on it, and its holder waits for
 * nothing but the GIL, so it cannot deadlock. */
static sqf_sem turnstile;

/* A child of fork has only the forking thread, which held the GIL and so
 * was not in the turnstile; a thread that was cannot pass it there. */
static void turnstile_after_fork(void)
{
    sqf_sem_init(&turnstile, 1, 1, SQF_PRIVATE);
}

PyThreadState *gil_release(void)
{
    return PyEval_SaveThread();
}

void gil_take_back(PyThreadState *ts)
{
    sqf_sem_acquire(&turnstile);
    PyEval_RestoreThread(ts);
    sqf_sem_release(&turnstile, 1);
}

/* Run a wait protocol to its end: the GIL is released while asleep; a
 * signal handler that raises stops the wait (a cancellation that takes
 * effect then, as the loop driver's sqf_loop_cancel does), and one that
 * does not raise is no event at all: the step looks again and sleeps on.
 * Returns the step's result; *raised is set if an exception is pending
 * (the caller gives back what the wait took, if anything, and returns
 * NULL). */
int run_wait(struct sqf_waitop *op, sqf_step_fn step, int *raised)
{
    *raised = 0;
    int r = step(op, SQF_OP_START); /* the fast path: no sleep, GIL kept */
    while (r == SQF_OP_SLEEP) {
        PyThreadState *ts = gil_release(); /* the GIL released while asleep */
        int how = sqf_wait_cancellable(op->word, op->expected, sqf_op_sleep_deadline(op),
                                       op->shared, sqf_op_sleep_tok(op));
        gil_take_back(ts);
        if (how == EINTR && !*raised && PyErr_CheckSignals() < 0) {
            *raised = 1;
            sqf_op_cancel(op);
        }
        r = step(op, sqf_op_ended(op, how));
    }
    return r;
}

int blocking_init(void)
{
    sqf_sem_init(&turnstile, 1, 1, SQF_PRIVATE);
    if (pthread_atfork(NULL, NULL, turnstile_after_fork) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "pthread_atfork failed");
        return -1;
    }
    return 0;
}
