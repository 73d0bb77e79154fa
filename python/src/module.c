/* module.c: the squarefree extension module (CPython C API).
 *
 * Each class embeds one C primitive of the library, which this extension
 * compiles in (python/setup.py): nothing else is needed at run time.  Every
 * blocking call runs the primitive's wait protocol (src/waitop.h: the same
 * step functions the C library's blocking calls and event loops run) with
 * its own driver, run_wait below, which differs from the C blocking driver
 * in two ways only: the GIL is released while the thread sleeps, and a
 * signal whose Python handler raises (Ctrl-C's KeyboardInterrupt) stops
 * the wait as a cancellation would, so the protocol leaves cleanly (no
 * permit or wake-up lost) before the exception propagates, as threading's
 * waits are interruptible in the main thread.
 *
 * asyncio tasks run the same protocols through the library's event-loop
 * driver (sqf_loop, one per asyncio loop: the _LoopDriver section below).
 *
 * Objects are never freed while a thread waits on them: a method call
 * holds a reference to its object for the whole call, and a task's pending
 * wait holds one until its callback has run.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <time.h>

#include <squarefree.h>

/* The one internal header: the module is a driver of the wait protocol. */
#include "waitop.h"

/* --- shared helpers --------------------------------------------------------- */

/* A timeout argument (None: for ever) as a deadline; -1 with ValueError or
 * TypeError set on a bad one. */
static int deadline_of(PyObject *timeout, sqf_deadline *out)
{
    if (timeout == NULL || timeout == Py_None) {
        *out = SQF_FOREVER;
        return 0;
    }
    double t = PyFloat_AsDouble(timeout);
    if (t == -1.0 && PyErr_Occurred()) return -1;
    if (isnan(t) || t < 0) {
        PyErr_SetString(PyExc_ValueError, "timeout value must be a non-negative number");
        return -1;
    }
    if (t > 1e9) { /* 30 years: for ever, as far as a caller can tell */
        *out = SQF_FOREVER;
        return 0;
    }
    *out = sqf_after((int64_t)(t * 1e9));
    return 0;
}

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

static PyThreadState *gil_release(void)
{
    return PyEval_SaveThread();
}

static void gil_take_back(PyThreadState *ts)
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
static int run_wait(struct sqf_waitop *op, sqf_step_fn step, int *raised)
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

/* A wait taking (timeout=None): parse it, then run step on op (its part of
 * the union filled).  The step's result, or -1 with an exception set. */
static int timed_wait(PyObject *args, PyObject *kw, struct sqf_waitop *op, sqf_step_fn step)
{
    static char *kwlist[] = {"timeout", NULL};
    PyObject *timeout = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:wait", kwlist, &timeout)) return -1;
    if (deadline_of(timeout, &op->deadline) < 0) return -1;
    int raised, r = run_wait(op, step, &raised);
    return raised ? -1 : r;
}

static PyObject *raise_errno(int e, const char *what);

/* A wait's result as threading's: True, False on a time-out, or raised. */
static PyObject *bool_result(int r, const char *what)
{
    if (r < 0) return NULL;
    if (r == 0) Py_RETURN_TRUE;
    if (r == ETIMEDOUT) Py_RETURN_FALSE;
    return raise_errno(r, what);
}

/* A C error that bad input or misuse can cause, as Python's exception. */
static PyObject *raise_errno(int e, const char *what)
{
    if (e == EINVAL || e == EOVERFLOW || e == ERANGE)
        PyErr_Format(PyExc_ValueError, "%s", what);
    else
        PyErr_Format(PyExc_RuntimeError, "%s (%s)", what, strerror(e));
    return NULL;
}

/* __exit__'s result from the release it made: False (exceptions pass). */
static PyObject *exit_result(PyObject *released)
{
    if (!released) return NULL;
    Py_DECREF(released);
    Py_RETURN_FALSE;
}

/* n (a count argument, 1 if absent) in 1..max, else ValueError. */
static int count_arg(PyObject *arg, unsigned long max, unsigned *out, const char *what)
{
    if (arg == NULL) {
        *out = 1;
        return 0;
    }
    long long v = PyLong_AsLongLong(arg);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < 1) { /* threading's words */
        PyErr_Format(PyExc_ValueError, "%s must be one or more", what);
        return -1;
    }
    if ((unsigned long long)v > max) {
        PyErr_Format(PyExc_ValueError, "%s must be at most %lu", what, max);
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

/* --- Event ------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD sqf_event ev;
} EventObject;

static int Event_init(EventObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, ":Event", kwlist)) return -1;
    sqf_event_init(&self->ev, SQF_PRIVATE);
    return 0;
}

static PyObject *Event_is_set(EventObject *self, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(sqf_event_is_set(&self->ev));
}

static PyObject *Event_set(EventObject *self, PyObject *unused)
{
    (void)unused;
    sqf_event_set(&self->ev);
    Py_RETURN_NONE;
}

static PyObject *Event_clear(EventObject *self, PyObject *unused)
{
    (void)unused;
    sqf_event_clear(&self->ev);
    Py_RETURN_NONE;
}

static PyObject *Event_wait(EventObject *self, PyObject *args, PyObject *kw)
{
    struct sqf_waitop op = sqf_op_blocking(SQF_FOREVER, NULL);
    op.u.event.e = &self->ev;
    return bool_result(timed_wait(args, kw, &op, sqf_event_wait_step_), "Event.wait failed");
}

static PyMethodDef Event_methods[] = {
    {"is_set", (PyCFunction)Event_is_set, METH_NOARGS, "Return True if the flag is set."},
    {"set", (PyCFunction)Event_set, METH_NOARGS,
     "Set the flag and wake every waiter (one system call, whatever their number)."},
    {"clear", (PyCFunction)Event_clear, METH_NOARGS, "Reset the flag."},
    {"wait", (PyCFunction)(void (*)(void))Event_wait, METH_VARARGS | METH_KEYWORDS,
     "wait(timeout=None) -> bool\n\nBlock until the flag is set or the timeout (seconds) "
     "passes; return the flag's state: True unless it timed out."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject EventType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._squarefree.Event",
    .tp_basicsize = sizeof(EventObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Event()\n\nA flag that threads wait for, as threading.Event: set() wakes every "
              "waiter with one system call, and the event can be cleared and reused.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Event_init,
    .tp_methods = Event_methods,
};

/* --- Latch ------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD sqf_latch l;
} LatchObject;

static int Latch_init(LatchObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"count", NULL};
    long long count;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "L:Latch", kwlist, &count)) return -1;
    if (count < 0 || count > SQF_LATCH_MAX) {
        PyErr_Format(PyExc_ValueError, "count must be between 0 and %u", SQF_LATCH_MAX);
        return -1;
    }
    sqf_latch_init(&self->l, (unsigned)count, SQF_PRIVATE);
    return 0;
}

static PyObject *BrokenLatchError;

static PyObject *latch_result(int r)
{
    if (r == EPIPE) {
        PyErr_SetString(BrokenLatchError, "the latch was aborted");
        return NULL;
    }
    return bool_result(r, "Latch.wait failed");
}

static PyObject *Latch_count_down(LatchObject *self, PyObject *args)
{
    PyObject *n_arg = NULL;
    unsigned n;
    if (!PyArg_ParseTuple(args, "|O:count_down", &n_arg)) return NULL;
    if (count_arg(n_arg, SQF_LATCH_MAX, &n, "n") < 0) return NULL;
    int e = sqf_latch_count_down(&self->l, n);
    if (e == EPIPE) return latch_result(e);
    if (e) return raise_errno(e, "count_down below zero");
    Py_RETURN_NONE;
}

static PyObject *Latch_wait(LatchObject *self, PyObject *args, PyObject *kw)
{
    struct sqf_waitop op = sqf_op_blocking(SQF_FOREVER, NULL);
    op.u.latch.l = &self->l;
    int r = timed_wait(args, kw, &op, sqf_latch_wait_step_);
    return r < 0 ? NULL : latch_result(r);
}

static PyObject *Latch_arrive_and_wait(LatchObject *self, PyObject *args)
{
    PyObject *n_arg = NULL;
    unsigned n;
    if (!PyArg_ParseTuple(args, "|O:arrive_and_wait", &n_arg)) return NULL;
    if (count_arg(n_arg, SQF_LATCH_MAX, &n, "n") < 0) return NULL;
    int e = sqf_latch_count_down(&self->l, n);
    if (e && e != EPIPE) return raise_errno(e, "count_down below zero");
    if (e == EPIPE) return latch_result(e);
    struct sqf_waitop op = sqf_op_blocking(SQF_FOREVER, NULL);
    op.u.latch.l = &self->l;
    int raised, r = run_wait(&op, sqf_latch_wait_step_, &raised);
    if (raised) return NULL;
    if (r == 0) Py_RETURN_NONE;
    return latch_result(r);
}

static PyObject *Latch_abort(LatchObject *self, PyObject *unused)
{
    (void)unused;
    int e = sqf_latch_abort(&self->l);
    if (e) return raise_errno(e, "abort failed");
    Py_RETURN_NONE;
}

static PyMethodDef Latch_methods[] = {
    {"count_down", (PyCFunction)Latch_count_down, METH_VARARGS,
     "count_down(n=1)\n\nDecrease the count by n; the call that brings it to zero opens the "
     "latch and wakes every waiter. ValueError below zero; BrokenLatchError once aborted."},
    {"wait", (PyCFunction)(void (*)(void))Latch_wait, METH_VARARGS | METH_KEYWORDS,
     "wait(timeout=None) -> bool\n\nBlock until the count reaches zero: True, or False if the "
     "timeout (seconds) passed first. BrokenLatchError if the latch is aborted."},
    {"arrive_and_wait", (PyCFunction)Latch_arrive_and_wait, METH_VARARGS,
     "arrive_and_wait(n=1)\n\ncount_down(n), then wait()."},
    {"abort", (PyCFunction)Latch_abort, METH_NOARGS,
     "Break the latch: every waiter, now and later, gets BrokenLatchError."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject LatchType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._squarefree.Latch",
    .tp_basicsize = sizeof(LatchObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Latch(count)\n\nA single-use countdown: wait() blocks until count_down() has "
              "brought the count to zero, then every waiter is woken with one system call. "
              "The seed's cure for starting n threads.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Latch_init,
    .tp_methods = Latch_methods,
};

/* --- CountdownEvent ------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD sqf_countdown c;
} CountdownObject;

static int Countdown_init(CountdownObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"value", NULL};
    long long value = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|L:CountdownEvent", kwlist, &value)) return -1;
    if (value < 0 || value > SQF_COUNTDOWN_MAX) {
        PyErr_Format(PyExc_ValueError, "value must be between 0 and %u", SQF_COUNTDOWN_MAX);
        return -1;
    }
    sqf_countdown_init(&self->c, (unsigned)value, SQF_PRIVATE);
    return 0;
}

static PyObject *Countdown_up(CountdownObject *self, PyObject *args)
{
    PyObject *n_arg = NULL;
    unsigned n;
    if (!PyArg_ParseTuple(args, "|O:up", &n_arg)) return NULL;
    if (count_arg(n_arg, SQF_COUNTDOWN_MAX, &n, "n") < 0) return NULL;
    int e = sqf_countdown_up(&self->c, n);
    if (e) return raise_errno(e, "up would overflow the count");
    Py_RETURN_NONE;
}

static PyObject *Countdown_down(CountdownObject *self, PyObject *args)
{
    PyObject *n_arg = NULL;
    unsigned n;
    if (!PyArg_ParseTuple(args, "|O:down", &n_arg)) return NULL;
    if (count_arg(n_arg, SQF_COUNTDOWN_MAX, &n, "n") < 0) return NULL;
    int e = sqf_countdown_down_n(&self->c, n);
    if (e) return raise_errno(e, "down below zero");
    Py_RETURN_NONE;
}

static PyObject *Countdown_wait(CountdownObject *self, PyObject *args, PyObject *kw)
{
    struct sqf_waitop op = sqf_op_blocking(SQF_FOREVER, NULL);
    op.u.countdown.c = &self->c;
    return bool_result(timed_wait(args, kw, &op, sqf_countdown_wait_step_),
                       "CountdownEvent.wait failed");
}

static PyObject *Countdown_value(CountdownObject *self, void *closure)
{
    (void)closure;
    unsigned v = 0;
    sqf_countdown_value(&self->c, &v);
    return PyLong_FromUnsignedLong(v);
}

static PyMethodDef Countdown_methods[] = {
    {"up", (PyCFunction)Countdown_up, METH_VARARGS, "up(n=1)\n\nIncrease the count by n."},
    {"down", (PyCFunction)Countdown_down, METH_VARARGS,
     "down(n=1)\n\nDecrease the count by n; reaching zero wakes every waiter. ValueError "
     "below zero."},
    {"wait", (PyCFunction)(void (*)(void))Countdown_wait, METH_VARARGS | METH_KEYWORDS,
     "wait(timeout=None) -> bool\n\nBlock until the count is zero: True, or False if the "
     "timeout (seconds) passed first."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Countdown_getset[] = {
    {"value", (getter)Countdown_value, NULL, "The current count.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject CountdownType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._squarefree.CountdownEvent",
    .tp_basicsize = sizeof(CountdownObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "CountdownEvent(value=0)\n\nA reusable count: up() and down() move it, and wait() "
              "blocks until it is zero. The seed's cure for serialising n threads whose number "
              "is not known in advance.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Countdown_init,
    .tp_methods = Countdown_methods,
    .tp_getset = Countdown_getset,
};

/* --- Semaphore, BoundedSemaphore ------------------------------------------------ */

typedef struct {
    PyObject_HEAD sqf_sem s;
    int bounded;
    unsigned bound; /* a BoundedSemaphore's initial value */
} SemObject;

static int sem_init_common(SemObject *self, PyObject *args, PyObject *kw, int bounded)
{
    static char *kwlist[] = {"value", NULL};
    long long value = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, bounded ? "|L:BoundedSemaphore" : "|L:Semaphore",
                                     kwlist, &value))
        return -1;
    if (value < 0) {
        PyErr_SetString(PyExc_ValueError, "semaphore initial value must be >= 0");
        return -1;
    }
    if (value > SQF_SEM_VALUE_MAX) {
        PyErr_Format(PyExc_ValueError, "semaphore initial value must be <= %u", SQF_SEM_VALUE_MAX);
        return -1;
    }
    self->bounded = bounded;
    self->bound = (unsigned)value;
    /* The library's max 0 means its own bound: a BoundedSemaphore(0), which
     * no release may exceed, is checked in release instead. */
    int e = sqf_sem_init(&self->s, (unsigned)value, bounded && value > 0 ? (unsigned)value : 0,
                         SQF_PRIVATE);
    if (e) {
        raise_errno(e, "semaphore init failed");
        return -1;
    }
    return 0;
}

static int Sem_init(SemObject *self, PyObject *args, PyObject *kw)
{
    return sem_init_common(self, args, kw, 0);
}

static int BSem_init(SemObject *self, PyObject *args, PyObject *kw)
{
    return sem_init_common(self, args, kw, 1);
}

static PyObject *Sem_acquire(SemObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"blocking", "timeout", NULL};
    int blocking = 1;
    PyObject *timeout = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|pO:acquire", kwlist, &blocking, &timeout))
        return NULL;
    if (!blocking && timeout != Py_None) {
        PyErr_SetString(PyExc_ValueError, "can't specify timeout for non-blocking acquire");
        return NULL;
    }
    if (!blocking) return PyBool_FromLong(sqf_sem_tryacquire(&self->s) == 0);
    struct sqf_waitop op = sqf_op_blocking(SQF_FOREVER, NULL);
    if (deadline_of(timeout, &op.deadline) < 0) return NULL;
    op.u.sem.s = &self->s;
    int raised, r = run_wait(&op, sqf_sem_acquire_step_, &raised);
    if (raised) {
        if (r == 0) sqf_sem_release(&self->s, 1); /* taken as the signal came: give it back */
        return NULL;
    }
    return bool_result(r, "acquire failed");
}

static PyObject *sem_release_n(SemObject *self, unsigned n)
{
    int e = self->bounded && self->bound == 0 ? EOVERFLOW : sqf_sem_release(&self->s, n);
    if (e == EOVERFLOW) {
        PyErr_SetString(PyExc_ValueError, self->bounded ? "Semaphore released too many times"
                                                        : "semaphore value would overflow");
        return NULL;
    }
    if (e) return raise_errno(e, "release failed");
    Py_RETURN_NONE;
}

static PyObject *Sem_release(SemObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"n", NULL};
    PyObject *n_arg = NULL;
    unsigned n;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:release", kwlist, &n_arg)) return NULL;
    if (count_arg(n_arg, SQF_SEM_VALUE_MAX, &n, "n") < 0) return NULL;
    return sem_release_n(self, n);
}

static PyObject *Sem_exit(SemObject *self, PyObject *args)
{
    (void)args;
    return exit_result(sem_release_n(self, 1));
}

static PyObject *Sem_value(SemObject *self, void *closure)
{
    (void)closure;
    unsigned v = 0;
    sqf_sem_getvalue(&self->s, &v);
    return PyLong_FromUnsignedLong(v);
}

static PyMethodDef Sem_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))Sem_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire(blocking=True, timeout=None) -> bool\n\nTake a permit, waiting for one if "
     "needed: True, or False if not blocking or if the timeout (seconds) passed first."},
    {"release", (PyCFunction)(void (*)(void))Sem_release, METH_VARARGS | METH_KEYWORDS,
     "release(n=1)\n\nAdd n permits, waking up to n waiters with one system call."},
    {"__enter__", (PyCFunction)(void (*)(void))Sem_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire()"},
    {"__exit__", (PyCFunction)Sem_exit, METH_VARARGS, "release()"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Sem_getset[] = {
    {"value", (getter)Sem_value, NULL, "The permits available now (a snapshot).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject SemType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._squarefree.Semaphore",
    .tp_basicsize = sizeof(SemObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Semaphore(value=1)\n\nA counting semaphore, as threading.Semaphore; release(n) "
              "wakes up to n waiters with one system call.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Sem_init,
    .tp_methods = Sem_methods,
    .tp_getset = Sem_getset,
};

static PyTypeObject BSemType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._squarefree.BoundedSemaphore",
    .tp_basicsize = sizeof(SemObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "BoundedSemaphore(value=1)\n\nA semaphore whose value may not exceed its initial "
              "value: a release beyond it raises ValueError, as threading.BoundedSemaphore.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)BSem_init,
    .tp_methods = Sem_methods,
    .tp_getset = Sem_getset,
};

/* --- Lock, RLock -------------------------------------------------------------------- */

/* Lock is an sqf_mutex, which records no owner: any thread may release it,
 * and releasing it unlocked is an error, as threading.Lock. */
typedef struct {
    PyObject_HEAD sqf_mutex mu;
    unsigned long owner; /* RLock: the holder's thread ident, or 0 */
    unsigned long count; /* RLock: its recursion depth */
} LockObject;

static int Lock_init(LockObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, ":Lock", kwlist)) return -1;
    sqf_mutex_init(&self->mu, SQF_PRIVATE);
    self->owner = 0;
    self->count = 0;
    return 0;
}

/* threading.Lock.acquire's arguments: blocking=True, timeout=-1.  0 with
 * *deadline set (SQF_FOREVER, or a past one for "try once"), -1 raised. */
static int lock_args(PyObject *args, PyObject *kw, sqf_deadline *deadline)
{
    static char *kwlist[] = {"blocking", "timeout", NULL};
    int blocking = 1;
    double timeout = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|pd:acquire", kwlist, &blocking, &timeout))
        return -1;
    if (!blocking && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "can't specify a timeout for a non-blocking call");
        return -1;
    }
    if (isnan(timeout) || (timeout < 0 && timeout != -1)) {
        PyErr_SetString(PyExc_ValueError, "timeout value must be a non-negative number");
        return -1;
    }
    if (!blocking)
        *deadline = 0; /* long past: one try */
    else if (timeout == -1 || timeout > 1e9)
        *deadline = SQF_FOREVER;
    else
        *deadline = sqf_after((int64_t)(timeout * 1e9));
    return 0;
}

/* Take the mutex until deadline: 1 taken, 0 not, -1 raised. */
static int lock_take(LockObject *self, sqf_deadline deadline)
{
    if (sqf_mutex_trylock(&self->mu) == 0) return 1;
    if (deadline == 0) return 0;
    struct sqf_waitop op = sqf_op_blocking(deadline, NULL);
    /* No spinning with the GIL held: the holder needs the GIL to release. */
    op.may_spin = false;
    op.u.mutex.m = &self->mu;
    int raised, r = run_wait(&op, sqf_mutex_lock_step_, &raised);
    if (raised) {
        if (r == 0) sqf_mutex_unlock(&self->mu); /* taken as the signal came: give it back */
        return -1;
    }
    if (r == 0) return 1;
    if (r == ETIMEDOUT) return 0;
    raise_errno(r, "acquire failed");
    return -1;
}

static PyObject *Lock_acquire(LockObject *self, PyObject *args, PyObject *kw)
{
    sqf_deadline deadline;
    if (lock_args(args, kw, &deadline) < 0) return NULL;
    int r = lock_take(self, deadline);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

static PyObject *Lock_release(LockObject *self, PyObject *unused)
{
    (void)unused;
    if (sqf_mutex_unlock(&self->mu) == EPERM) {
        PyErr_SetString(PyExc_RuntimeError, "release unlocked lock");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *Lock_locked(LockObject *self, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(sqf_mutex_is_locked(&self->mu));
}

static PyObject *Lock_exit(LockObject *self, PyObject *args)
{
    (void)args;
    return exit_result(Lock_release(self, NULL));
}

static PyObject *RLock_acquire(LockObject *self, PyObject *args, PyObject *kw)
{
    sqf_deadline deadline;
    if (lock_args(args, kw, &deadline) < 0) return NULL;
    unsigned long me = PyThread_get_thread_ident();
    if (self->owner == me) { /* only this thread writes owner == me */
        if (self->count == ULONG_MAX) {
            PyErr_SetString(PyExc_OverflowError, "internal lock count overflowed");
            return NULL;
        }
        self->count++;
        Py_RETURN_TRUE;
    }
    int r = lock_take(self, deadline);
    if (r <= 0) return r < 0 ? NULL : PyBool_FromLong(0);
    self->owner = me;
    self->count = 1;
    Py_RETURN_TRUE;
}

static PyObject *RLock_release(LockObject *self, PyObject *unused)
{
    (void)unused;
    if (self->count == 0 || self->owner != PyThread_get_thread_ident()) {
        PyErr_SetString(PyExc_RuntimeError, "cannot release un-acquired lock");
        return NULL;
    }
    if (--self->count == 0) {
        self->owner = 0;
        sqf_mutex_unlock(&self->mu);
    }
    Py_RETURN_NONE;
}

static PyObject *RLock_exit(LockObject *self, PyObject *args)
{
    (void)args;
    return exit_result(RLock_release(self, NULL));
}

/* threading.Condition uses these on an RLock it is given. */
static PyObject *RLock_is_owned(LockObject *self, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(self->count > 0 && self->owner == PyThread_get_thread_ident());
}

#define LOCK_ACQUIRE_DOC                                                                           \
    "acquire(blocking=True, timeout=-1) -> bool\n\nTake the lock, waiting for it if needed "       \
    "(for ever, or timeout seconds): True, or False if not blocking or timed out."

static PyMethodDef Lock_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))Lock_acquire, METH_VARARGS | METH_KEYWORDS,
     LOCK_ACQUIRE_DOC},
    {"release", (PyCFunction)Lock_release, METH_NOARGS,
     "Release the lock (any thread may). RuntimeError if it is not locked."},
    {"locked", (PyCFunction)Lock_locked, METH_NOARGS, "Return True if the lock is held."},
    {"__enter__", (PyCFunction)(void (*)(void))Lock_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire()"},
    {"__exit__", (PyCFunction)Lock_exit, METH_VARARGS, "release()"},
    {NULL, NULL, 0, NULL}};

static PyMethodDef RLock_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))RLock_acquire, METH_VARARGS | METH_KEYWORDS,
     LOCK_ACQUIRE_DOC "\n\nThe thread that holds it may take it again (it then releases it "
                      "as many times)."},
    {"release", (PyCFunction)RLock_release, METH_NOARGS,
     "Release one level; the last one frees the lock. RuntimeError unless this thread holds "
     "it."},
    {"_is_owned", (PyCFunction)RLock_is_owned, METH_NOARGS,
     "Whether the calling thread holds the lock."},
    {"__enter__", (PyCFunction)(void (*)(void))RLock_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire()"},
    {"__exit__", (PyCFunction)RLock_exit, METH_VARARGS, "release()"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject LockType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._squarefree.Lock",
    .tp_basicsize = sizeof(LockObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Lock()\n\nA mutual-exclusion lock, as threading.Lock: any thread may release "
              "it; a release of an unlocked lock raises RuntimeError.  An unlock wakes at most "
              "one waiter, and a thread that keeps re-taking the lock passes it on after a "
              "short turn, so waiters are served in turn (no starvation).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Lock_init,
    .tp_methods = Lock_methods,
};

static PyTypeObject RLockType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree.RLock",
    .tp_basicsize = sizeof(LockObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "RLock()\n\nA reentrant lock, as threading.RLock: the holding thread may acquire "
              "it again, and must release it as many times; only the holder may release it.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Lock_init,
    .tp_methods = RLock_methods,
};

/* --- Condition ------------------------------------------------------------------------ */

/* An sqf_cond over the mutex of a squarefree Lock or RLock (threading's
 * default: a new RLock).  wait() releases the lock, sleeps, and takes it
 * back before it returns, whatever it returns; an RLock held several
 * times is released entirely and restored. */
typedef struct {
    PyObject_HEAD sqf_cond c;
    LockObject *lock;
    unsigned long waiting; /* Python waiters (under the GIL): bounds notify(n) */
} CondObject;

static int Cond_init(CondObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"lock", NULL};
    PyObject *lock = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:Condition", kwlist, &lock)) return -1;
    if (lock == Py_None) {
        lock = PyObject_CallNoArgs((PyObject *)&RLockType);
        if (!lock) return -1;
    } else if (PyObject_TypeCheck(lock, &LockType) || PyObject_TypeCheck(lock, &RLockType)) {
        Py_INCREF(lock);
    } else {
        PyErr_SetString(PyExc_TypeError, "Condition needs a squarefree Lock or RLock");
        return -1;
    }
    Py_XSETREF(self->lock, (LockObject *)lock);
    sqf_cond_init(&self->c, SQF_PRIVATE);
    self->waiting = 0;
    return 0;
}

static void Cond_dealloc(CondObject *self)
{
    Py_XDECREF(self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static bool cond_is_rlock(CondObject *self)
{
    return PyObject_TypeCheck((PyObject *)self->lock, &RLockType);
}

/* Whether the calling thread may wait or notify: it holds an RLock, or
 * the Lock is held (a Lock records no owner, as threading's). */
static bool cond_owned(CondObject *self)
{
    LockObject *l = self->lock;
    if (cond_is_rlock(self)) return l->count > 0 && l->owner == PyThread_get_thread_ident();
    return sqf_mutex_is_locked(&l->mu);
}

static PyObject *Cond_wait(CondObject *self, PyObject *args, PyObject *kw)
{
    if (!self->lock) return raise_errno(EINVAL, "Condition not initialised");
    if (!cond_owned(self)) {
        PyErr_SetString(PyExc_RuntimeError, "cannot wait on un-acquired lock");
        return NULL;
    }
    static char *kwlist[] = {"timeout", NULL};
    PyObject *timeout = Py_None;
    struct sqf_waitop op = sqf_op_blocking(SQF_FOREVER, NULL);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:wait", kwlist, &timeout)) return NULL;
    if (deadline_of(timeout, &op.deadline) < 0) return NULL;
    LockObject *l = self->lock;
    unsigned long count = l->count, owner = l->owner;
    l->count = 0; /* the cond step releases the mutex itself */
    l->owner = 0;
    op.may_spin = false;
    op.u.cond.c = &self->c;
    op.u.cond.m = &l->mu;
    self->waiting++;
    int raised, r = run_wait(&op, sqf_cond_wait_step_, &raised);
    self->waiting--;
    l->owner = owner; /* held again, whatever the wait returned */
    l->count = count;
    return raised ? NULL : bool_result(r, "Condition.wait failed");
}

static PyObject *Cond_notify(CondObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"n", NULL};
    Py_ssize_t n = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|n:notify", kwlist, &n)) return NULL;
    if (!self->lock || !cond_owned(self)) {
        PyErr_SetString(PyExc_RuntimeError, "cannot notify on un-acquired lock");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n && (unsigned long)i < self->waiting; i++)
        sqf_cond_signal(&self->c);
    Py_RETURN_NONE;
}

static PyObject *Cond_notify_all(CondObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->lock || !cond_owned(self)) {
        PyErr_SetString(PyExc_RuntimeError, "cannot notify on un-acquired lock");
        return NULL;
    }
    sqf_cond_broadcast(&self->c);
    Py_RETURN_NONE;
}

static PyObject *Cond_acquire(CondObject *self, PyObject *args, PyObject *kw)
{
    if (!self->lock) return raise_errno(EINVAL, "Condition not initialised");
    return cond_is_rlock(self) ? RLock_acquire(self->lock, args, kw)
                               : Lock_acquire(self->lock, args, kw);
}

static PyObject *Cond_release(CondObject *self, PyObject *unused)
{
    if (!self->lock) return raise_errno(EINVAL, "Condition not initialised");
    return cond_is_rlock(self) ? RLock_release(self->lock, unused)
                               : Lock_release(self->lock, unused);
}

static PyObject *Cond_exit(CondObject *self, PyObject *args)
{
    (void)args;
    return exit_result(Cond_release(self, NULL));
}

static PyObject *Cond_is_owned(CondObject *self, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(self->lock && cond_owned(self));
}

static PyMethodDef Cond_methods[] = {
    {"wait", (PyCFunction)(void (*)(void))Cond_wait, METH_VARARGS | METH_KEYWORDS,
     "wait(timeout=None) -> bool\n\nRelease the lock, sleep until notified or the timeout "
     "(seconds) passes, and take the lock back: False if it timed out. RuntimeError unless "
     "the lock is held."},
    {"notify", (PyCFunction)(void (*)(void))Cond_notify, METH_VARARGS | METH_KEYWORDS,
     "notify(n=1)\n\nWake at most n waiters. RuntimeError unless the lock is held."},
    {"notify_all", (PyCFunction)Cond_notify_all, METH_NOARGS,
     "Wake every waiter (one system call: they are moved onto the lock, not woken to fight "
     "for it). RuntimeError unless the lock is held."},
    {"acquire", (PyCFunction)(void (*)(void))Cond_acquire, METH_VARARGS | METH_KEYWORDS,
     "The lock's acquire()."},
    {"release", (PyCFunction)Cond_release, METH_NOARGS, "The lock's release()."},
    {"_is_owned", (PyCFunction)Cond_is_owned, METH_NOARGS,
     "Whether the calling thread may wait (holds the lock)."},
    {"__enter__", (PyCFunction)(void (*)(void))Cond_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire()"},
    {"__exit__", (PyCFunction)Cond_exit, METH_VARARGS, "release()"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject CondType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._Condition",
    .tp_basicsize = sizeof(CondObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The C part of squarefree.Condition.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Cond_init,
    .tp_dealloc = (destructor)Cond_dealloc,
    .tp_methods = Cond_methods,
};

/* --- Once ------------------------------------------------------------------------------ */

/* run(fn) calls fn() exactly once however many threads ask; callers that
 * arrive while it runs sleep (the GIL released) and are all woken by one
 * system call when it ends.  If fn raises, the exception propagates to the
 * caller that ran it and the once goes back to "not run": a later caller
 * (or one asleep) runs fn again. */
typedef struct {
    PyObject_HEAD sqf_once once;
    unsigned long runner; /* the thread running fn, or 0 (under the GIL) */
} OnceObject;

static int Once_init(OnceObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, ":Once", kwlist)) return -1;
    sqf_once_init(&self->once, SQF_PRIVATE);
    self->runner = 0;
    return 0;
}

struct once_call {
    OnceObject *self;
    PyObject *fn;
    int ran;
};

/* The C side of fn: runs inside the once's step, with the GIL held (the
 * step that claims the run is the first, or one after gil_take_back). */
static int once_fn(void *arg)
{
    struct once_call *call = arg;
    call->self->runner = PyThread_get_thread_ident();
    PyObject *r = PyObject_CallNoArgs(call->fn);
    call->self->runner = 0;
    call->ran = 1;
    if (!r) return 1; /* the exception stays set for this caller */
    Py_DECREF(r);
    return 0;
}

static PyObject *Once_run(OnceObject *self, PyObject *fn)
{
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "Once.run needs a callable");
        return NULL;
    }
    if (self->runner == PyThread_get_thread_ident()) {
        PyErr_SetString(PyExc_RuntimeError, "Once.run called again from its own fn");
        return NULL;
    }
    struct once_call call = {self, fn, 0};
    struct sqf_waitop op = sqf_op_blocking(SQF_FOREVER, NULL);
    op.u.once.o = &self->once;
    op.u.once.fn = once_fn;
    op.u.once.arg = &call;
    int raised, r = run_wait(&op, sqf_once_run_step_, &raised);
    if (raised || PyErr_Occurred()) return NULL; /* fn raised here, or a signal handler did */
    if (r) return raise_errno(r, "Once.run failed");
    return PyBool_FromLong(call.ran);
}

static PyObject *Once_done(OnceObject *self, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(sqf_once_done(&self->once));
}

static PyMethodDef Once_methods[] = {
    {"run", (PyCFunction)Once_run, METH_O,
     "run(fn) -> bool\n\nCall fn() unless it has already run to the end: True if this call "
     "ran it. Callers that arrive meanwhile wait. If fn raises, the exception reaches this "
     "caller and a later call runs fn again."},
    {"done", (PyCFunction)Once_done, METH_NOARGS, "Whether fn has run to the end."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject OnceType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree.Once",
    .tp_basicsize = sizeof(OnceObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Once()\n\nRun a function exactly once, however many threads ask (lazy "
              "initialisation); a failure (an exception) lets a later caller retry.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Once_init,
    .tp_methods = Once_methods,
};

/* --- Barrier ----------------------------------------------------------------------- */

/* threading.Barrier over an sqf_barrier: the last arriver runs the action
 * (the C completion) and releases the phase with one system call.  A time-out,
 * an action that raises and abort() break the barrier (every waiter gets
 * BrokenBarrierError, threading's own class) until reset().  threading's
 * reset() does not wait for the waiters it breaks to leave, but later
 * arrivals wait for them; sqf_barrier_reset refuses (EBUSY) while any
 * thread is inside a wait, so reset() breaks the barrier, lets the waiters
 * leave (the GIL released), then resets it, and arrivals meanwhile wait on
 * `reset_done`. */
typedef struct {
    PyObject_HEAD sqf_barrier b;
    PyObject *action;     /* or NULL */
    PyObject *timeout;    /* the default timeout (None: for ever) */
    unsigned long runner; /* the thread running the action, or 0 (under the GIL) */
    int resetting;        /* under the GIL */
    sqf_event reset_done; /* set while no reset is under way */
} BarrierObject;

static PyObject *BrokenBarrierError; /* threading.BrokenBarrierError */

static int Barrier_init(BarrierObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"parties", "action", "timeout", NULL};
    long long parties;
    PyObject *action = Py_None, *timeout = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "L|OO:Barrier", kwlist, &parties, &action, &timeout))
        return -1;
    if (parties < 1 || parties > SQF_BARRIER_MAX) {
        PyErr_Format(PyExc_ValueError, "parties must be between 1 and %u", SQF_BARRIER_MAX);
        return -1;
    }
    if (action != Py_None && !PyCallable_Check(action)) {
        PyErr_SetString(PyExc_TypeError, "action must be callable or None");
        return -1;
    }
    sqf_deadline unused;
    if (deadline_of(timeout, &unused) < 0) return -1;
    sqf_barrier_init(&self->b, (unsigned)parties, SQF_PRIVATE);
    Py_XSETREF(self->action, action == Py_None ? NULL : Py_NewRef(action));
    Py_XSETREF(self->timeout, Py_NewRef(timeout));
    self->runner = 0;
    self->resetting = 0;
    sqf_event_init(&self->reset_done, SQF_PRIVATE);
    sqf_event_set(&self->reset_done);
    return 0;
}

static void Barrier_dealloc(BarrierObject *self)
{
    Py_XDECREF(self->action);
    Py_XDECREF(self->timeout);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

struct barrier_call {
    BarrierObject *self;
    int raised; /* the action raised: its exception is set */
};

/* The completion: runs the action in the last arriver's thread, which holds
 * the GIL (every step runs with it).  An action that raises breaks the
 * barrier before the phase is released. */
static void barrier_action(void *arg)
{
    struct barrier_call *call = arg;
    BarrierObject *self = call->self;
    self->runner = PyThread_get_thread_ident();
    PyObject *r = PyObject_CallNoArgs(self->action);
    self->runner = 0;
    if (r) {
        Py_DECREF(r);
        return;
    }
    call->raised = 1;
    sqf_barrier_abort(&self->b);
}

static PyObject *Barrier_wait(BarrierObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"timeout", NULL};
    PyObject *timeout = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:wait", kwlist, &timeout)) return NULL;
    if (!self->timeout) return raise_errno(EINVAL, "Barrier not initialised");
    if (self->runner == PyThread_get_thread_ident()) {
        PyErr_SetString(PyExc_RuntimeError, "Barrier.wait called from its own action");
        return NULL;
    }
    struct sqf_waitop op = sqf_op_blocking(SQF_FOREVER, NULL);
    if (deadline_of(timeout == Py_None ? self->timeout : timeout, &op.deadline) < 0) return NULL;
    int raised;
    while (self->resetting) { /* arrivals wait for the waiters that reset() broke to leave */
        struct sqf_waitop rop = sqf_op_blocking(SQF_FOREVER, NULL);
        rop.u.event.e = &self->reset_done;
        run_wait(&rop, sqf_event_wait_step_, &raised);
        if (raised) return NULL;
    }
    struct barrier_call call = {self, 0};
    unsigned index = 0;
    op.u.barrier.b = &self->b;
    op.u.barrier.completion = self->action ? barrier_action : NULL;
    op.u.barrier.arg = &call;
    op.u.barrier.index = &index;
    int r = run_wait(&op, sqf_barrier_wait_step_, &raised);
    if (raised || call.raised) return NULL; /* a signal handler's or the action's exception */
    if (r == 0) return PyLong_FromUnsignedLong(index);
    if (r == EPIPE || r == ETIMEDOUT || r == ECANCELED) {
        PyErr_SetNone(BrokenBarrierError);
        return NULL;
    }
    return raise_errno(r, "Barrier.wait failed");
}

/* reset(dispatch=None): `dispatch`, if given, is called at each round: the
 * package passes the calling thread's own asyncio driver, whose tasks
 * waiting on this barrier leave only when their loop dispatches. */
static PyObject *Barrier_reset(BarrierObject *self, PyObject *args)
{
    PyObject *dispatch = Py_None;
    if (!PyArg_ParseTuple(args, "|O:reset", &dispatch)) return NULL;
    if (!self->timeout) return raise_errno(EINVAL, "Barrier not initialised");
    if (self->runner == PyThread_get_thread_ident()) {
        PyErr_SetString(PyExc_RuntimeError, "Barrier.reset called from its own action");
        return NULL;
    }
    if (self->resetting) Py_RETURN_NONE;                  /* another thread's reset does it */
    if (sqf_barrier_reset(&self->b) == 0) Py_RETURN_NONE; /* nobody inside */
    self->resetting = 1;
    sqf_event_clear(&self->reset_done);
    sqf_barrier_abort(&self->b); /* every waiter leaves with BrokenBarrierError */
    while (sqf_barrier_reset(&self->b) == EBUSY) {
        /* They need the GIL to leave; a reset is rare, so poll gently. */
        PyThreadState *ts = gil_release();
        struct timespec pause = {0, 50 * 1000};
        nanosleep(&pause, NULL);
        gil_take_back(ts);
        PyObject *ran = dispatch == Py_None ? NULL : PyObject_CallNoArgs(dispatch);
        if (ran)
            Py_DECREF(ran);
        else if (dispatch != Py_None)
            PyErr_WriteUnraisable(dispatch);
    }
    self->resetting = 0;
    sqf_event_set(&self->reset_done);
    Py_RETURN_NONE;
}

static PyObject *Barrier_abort(BarrierObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->timeout) return raise_errno(EINVAL, "Barrier not initialised");
    sqf_barrier_abort(&self->b);
    Py_RETURN_NONE;
}

static PyObject *Barrier_parties(BarrierObject *self, void *closure)
{
    (void)closure;
    unsigned parties = 0;
    sqf_barrier_state(&self->b, &parties, NULL);
    return PyLong_FromUnsignedLong(parties);
}

static PyObject *Barrier_n_waiting(BarrierObject *self, void *closure)
{
    (void)closure;
    unsigned arrived = 0;
    sqf_barrier_state(&self->b, NULL, &arrived);
    return PyLong_FromUnsignedLong(arrived);
}

static PyObject *Barrier_broken(BarrierObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(sqf_barrier_state(&self->b, NULL, NULL) == EPIPE);
}

static PyMethodDef Barrier_methods[] = {
    {"wait", (PyCFunction)(void (*)(void))Barrier_wait, METH_VARARGS | METH_KEYWORDS,
     "wait(timeout=None) -> int\n\nArrive and sleep until all parties have arrived; return "
     "this arrival's index (0 .. parties-1; the last runs the action). A time-out (the "
     "Barrier's default timeout if None) breaks the barrier; BrokenBarrierError if it is "
     "or becomes broken."},
    {"reset", (PyCFunction)Barrier_reset, METH_VARARGS,
     "Return the barrier to its initial, unbroken state; threads waiting on it get "
     "BrokenBarrierError."},
    {"abort", (PyCFunction)Barrier_abort, METH_NOARGS,
     "Break the barrier: every wait, now and until reset(), raises BrokenBarrierError."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Barrier_getset[] = {
    {"parties", (getter)Barrier_parties, NULL, "The number of threads each phase needs.", NULL},
    {"n_waiting", (getter)Barrier_n_waiting, NULL, "The threads arrived in the current phase.",
     NULL},
    {"broken", (getter)Barrier_broken, NULL, "Whether the barrier is broken.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject BarrierType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._squarefree.Barrier",
    .tp_basicsize = sizeof(BarrierObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Barrier(parties, action=None, timeout=None)\n\nA cyclic barrier, as "
              "threading.Barrier: each phase waits for `parties` threads, the last to arrive "
              "runs action() and releases all of them with one system call.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Barrier_init,
    .tp_dealloc = (destructor)Barrier_dealloc,
    .tp_methods = Barrier_methods,
    .tp_getset = Barrier_getset,
};

/* --- asyncio: waits on an sqf_loop per event loop ------------------------------------ */

/* A _LoopDriver is one sqf_loop, made for one asyncio event loop (the
 * package's _driver() makes it on first use and watches its descriptor with
 * loop.add_reader(fd, driver.dispatch)).  A task's wait is a _LoopOp: the
 * library's loop form of the wait (the same step protocol as the blocking
 * call: a thread's release can hand a lock or a permit to a task, and one
 * wake-all reaches threads and tasks alike), and an asyncio future that its
 * callback resolves at dispatch.  No thread per wait, none per loop.
 *
 * Every call on a driver comes from its event loop's thread (the package
 * looks the driver up by the running loop), as sqf_loop requires.
 *
 * Cancellation takes nothing: a task cancelled while its op is pending
 * abandons the op (sqf_loop_cancel); if the op then completes with 0 (the
 * lock or permit arrived first), or had completed with 0 before the task
 * saw it, what it took is given back (the lock unlocked, the permit
 * released).  A coroutine closed without being resumed (its loop was
 * closed, or its task was collected) drains its op before it goes, so no
 * kernel wait is left to swallow a wake-up meant for someone else. */

enum aio_kind { AK_LOCK, AK_SEM, AK_EVENT, AK_LATCH, AK_COUNTDOWN, AK_BARRIER, AK_BARRIER_GATE };

/* References: the asyncio loop holds its driver (through the reader it
 * watches), the driver its pending ops, an op its future (and through its
 * callbacks the waiting task, and the task its loop).  A waiting task thus
 * lives as long as its loop, as with asyncio's own primitives, and when the
 * whole lot becomes garbage, the collector finalises the task's coroutine,
 * which finishes its op (abandon with closing) before anything is cleared.
 * Neither type clears its references in tp_clear: a pending op's memory is
 * in the sqf_loop, and its target's words in the kernel's queues, until its
 * callback has run. */
typedef struct {
    PyObject_HEAD sqf_loop *loop; /* no reference to the asyncio loop: it may go */
    PyObject *pending;            /* a set of the ops whose callbacks have yet to run */
} DriverObject;

typedef struct {
    PyObject_HEAD sqf_loop_op op; /* never moves: Python objects stay put */
    DriverObject *driver;
    PyObject *target; /* the primitive's object: kept alive while the op lives */
    PyObject *future; /* NULL until the op is pending */
    int kind;
    int pending;              /* the callback has yet to run */
    int result;               /* its result, once it ran */
    int abandoned;            /* the task gave up: a 0 result is given back */
    unsigned index;           /* a barrier's arrival index */
    struct barrier_call call; /* a barrier's action */
} AOpObject;

static PyTypeObject AOpType;
static PyObject *Again; /* a barrier's reset ended: the task arrives again */

static int Driver_init(DriverObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, ":_LoopDriver", kwlist)) return -1;
    if (self->loop) {
        PyErr_SetString(PyExc_RuntimeError, "_LoopDriver initialised twice");
        return -1;
    }
    self->pending = PySet_New(NULL);
    if (!self->pending) return -1;
    int e = sqf_loop_create(&self->loop, 0);
    if (e) {
        errno = e;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    return 0;
}

static int Driver_traverse(DriverObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->pending);
    return 0;
}

static int no_clear(PyObject *self)
{
    (void)self; /* see "References" above */
    return 0;
}

static void Driver_dealloc(DriverObject *self)
{
    /* Pending ops hold a reference to their driver: none is left here. */
    PyObject_GC_UnTrack(self);
    if (self->loop) sqf_loop_destroy(self->loop);
    Py_XDECREF(self->pending);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Driver_fileno(DriverObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->loop) return raise_errno(EINVAL, "_LoopDriver not initialised");
    return PyLong_FromLong(sqf_loop_fd(self->loop));
}

static PyObject *Driver_dispatch(DriverObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->loop) return raise_errno(EINVAL, "_LoopDriver not initialised");
    return PyLong_FromLong(sqf_loop_dispatch(self->loop));
}

static PyObject *Driver_backend(DriverObject *self, void *closure)
{
    (void)closure;
    if (!self->loop) Py_RETURN_NONE;
    return PyUnicode_FromString(sqf_loop_backend(self->loop));
}

/* Give back what a wait that ended with 0 took, for a task that gave up. */
static void aop_undo(AOpObject *o)
{
    if (o->kind == AK_LOCK) sqf_mutex_unlock(&((LockObject *)o->target)->mu);
    if (o->kind == AK_SEM) sqf_sem_release(&((SemObject *)o->target)->s, 1);
    /* Events, latches, countdowns, a barrier's phase and gate: nothing taken. */
}

/* The Python value of a finished wait, or NULL with the exception set. */
static PyObject *aop_value(AOpObject *o, int r)
{
    switch (o->kind) {
    case AK_LATCH:
        return latch_result(r);
    case AK_BARRIER:
        if (o->call.raised) return NULL; /* the action's exception */
        if (r == 0) return PyLong_FromUnsignedLong(o->index);
        if (r == EPIPE || r == ETIMEDOUT || r == ECANCELED) {
            PyErr_SetNone(BrokenBarrierError);
            return NULL;
        }
        return raise_errno(r, "Barrier.async_wait failed");
    case AK_BARRIER_GATE:
        if (r == 0) return Py_NewRef(Again);
        return bool_result(r, "Barrier.async_wait failed");
    default:
        return bool_result(r, "wait failed");
    }
}

/* Resolve the future with the value (or the exception) of result r. */
static void aop_resolve(AOpObject *o, int r)
{
    PyObject *value = aop_value(o, r), *done;
    if (value) {
        done = PyObject_CallMethod(o->future, "set_result", "O", value);
        Py_DECREF(value);
    } else {
        PyObject *type, *exc, *tb;
        PyErr_Fetch(&type, &exc, &tb);
        PyErr_NormalizeException(&type, &exc, &tb);
        if (tb) PyException_SetTraceback(exc, tb);
        done = PyObject_CallMethod(o->future, "set_exception", "O", exc);
        Py_XDECREF(type);
        Py_XDECREF(exc);
        Py_XDECREF(tb);
    }
    if (done)
        Py_DECREF(done);
    else
        PyErr_WriteUnraisable(o->future);
}

/* The sqf_loop callback, from dispatch on the loop's thread (GIL held). */
static void aop_done(sqf_loop_op *op, int r, void *arg)
{
    (void)op;
    AOpObject *o = arg;
    o->pending = 0;
    o->result = r;
    PyObject *type = NULL, *exc = NULL, *tb = NULL;
    PyErr_Fetch(&type, &exc, &tb); /* a barrier action's, set aside while we call Python */
    if (!o->abandoned) {
        PyObject *cancelled = PyObject_CallMethod(o->future, "cancelled", NULL);
        if (!cancelled) {
            PyErr_WriteUnraisable(o->future);
        } else {
            o->abandoned = PyObject_IsTrue(cancelled) == 1; /* the future was cancelled */
            Py_DECREF(cancelled);
        }
    }
    PyErr_Restore(type, exc, tb);
    if (o->abandoned) {
        if (r == 0) aop_undo(o);
        if (PyErr_Occurred()) PyErr_WriteUnraisable(o->target); /* nobody to raise it in */
    } else {
        aop_resolve(o, r);
    }
    if (PySet_Discard(o->driver->pending, (PyObject *)o) < 0) /* may free o */
        PyErr_WriteUnraisable((PyObject *)o->driver);
}

/* Start the op's wait; the sqf_loop result. */
static int aop_start(AOpObject *o, sqf_deadline deadline)
{
    sqf_loop *l = o->driver->loop;
    PyObject *t = o->target;
    switch (o->kind) {
    case AK_LOCK:
        return sqf_loop_mutex_lock(l, &o->op, &((LockObject *)t)->mu, deadline, NULL, aop_done, o);
    case AK_SEM:
        return sqf_loop_sem_acquire(l, &o->op, &((SemObject *)t)->s, deadline, NULL, aop_done, o);
    case AK_EVENT:
        return sqf_loop_event_wait(l, &o->op, &((EventObject *)t)->ev, deadline, NULL, aop_done, o);
    case AK_LATCH:
        return sqf_loop_latch_wait(l, &o->op, &((LatchObject *)t)->l, deadline, NULL, aop_done, o);
    case AK_COUNTDOWN:
        return sqf_loop_countdown_wait(l, &o->op, &((CountdownObject *)t)->c, deadline, NULL,
                                       aop_done, o);
    case AK_BARRIER_GATE:
        return sqf_loop_event_wait(l, &o->op, &((BarrierObject *)t)->reset_done, deadline, NULL,
                                   aop_done, o);
    default: {
        BarrierObject *b = (BarrierObject *)t;
        o->call.self = b;
        return sqf_loop_barrier_wait_fn(l, &o->op, &b->b, deadline, NULL,
                                        b->action ? barrier_action : NULL, &o->call, &o->index,
                                        aop_done, o);
    }
    }
}

static PyTypeObject *const aio_types[] = {&LockType,      &SemType,     &EventType,  &LatchType,
                                          &CountdownType, &BarrierType, &BarrierType};

/* Dispatch o's loop (the GIL released while it polls) until o's callback
 * has run: for an op that its event loop will not dispatch. */
static void aop_drain(AOpObject *o)
{
    sqf_loop *l = o->driver->loop;
    while (o->pending) {
        struct pollfd p = {sqf_loop_fd(l), POLLIN, 0};
        Py_BEGIN_ALLOW_THREADS poll(&p, 1, 100);
        Py_END_ALLOW_THREADS sqf_loop_dispatch(l);
    }
}

/* driver.start(kind, target, timeout, loop): the wait's value if it
 * completed at once (or its exception), else a pending _LoopOp whose
 * .future (made by loop.create_future) the task awaits. */
static PyObject *Driver_start(DriverObject *self, PyObject *args)
{
    int kind;
    PyObject *target, *timeout, *aloop;
    if (!PyArg_ParseTuple(args, "iOOO:start", &kind, &target, &timeout, &aloop)) return NULL;
    if (!self->loop) return raise_errno(EINVAL, "_LoopDriver not initialised");
    if (kind < AK_LOCK || kind > AK_BARRIER_GATE || !PyObject_TypeCheck(target, aio_types[kind])) {
        PyErr_SetString(PyExc_TypeError, "_LoopDriver.start: wrong kind or object");
        return NULL;
    }
    sqf_deadline deadline;
    if (kind == AK_BARRIER && timeout == Py_None) timeout = ((BarrierObject *)target)->timeout;
    if (deadline_of(timeout, &deadline) < 0) return NULL;
    if (kind == AK_BARRIER && ((BarrierObject *)target)->resetting) kind = AK_BARRIER_GATE;
    AOpObject *o = PyObject_GC_New(AOpObject, &AOpType);
    if (!o) return NULL;
    o->driver = (DriverObject *)Py_NewRef(self);
    o->target = Py_NewRef(target);
    o->future = NULL;
    o->kind = kind;
    o->pending = 0;
    o->result = 0;
    o->abandoned = 0;
    o->index = 0;
    o->call.self = NULL;
    o->call.raised = 0;
    PyObject_GC_Track(o);
    int r = aop_start(o, deadline);
    if (r != EINPROGRESS) { /* at once: no callback, no future */
        PyObject *value = aop_value(o, r);
        Py_DECREF(o);
        return value;
    }
    o->pending = 1;
    if (PySet_Add(self->pending, (PyObject *)o) < 0) { /* (no memory): wait here */
        PyObject *type, *exc, *tb;
        PyErr_Fetch(&type, &exc, &tb);
        o->abandoned = 1;
        sqf_loop_cancel(self->loop, &o->op);
        aop_drain(o);
        PyErr_Restore(type, exc, tb);
        Py_DECREF(o);
        return NULL;
    }
    o->future = PyObject_CallMethod(aloop, "create_future", NULL);
    if (!o->future) { /* give the wait up; its callback drops it from pending */
        o->abandoned = 1;
        sqf_loop_cancel(self->loop, &o->op);
        Py_DECREF(o);
        return NULL;
    }
    return (PyObject *)o;
}

static void AOp_dealloc(AOpObject *o)
{
    PyObject_GC_UnTrack(o);
    Py_XDECREF(o->future);
    Py_XDECREF(o->target);
    Py_XDECREF(o->driver);
    PyObject_GC_Del(o);
}

static int AOp_traverse(AOpObject *o, visitproc visit, void *arg)
{
    Py_VISIT(o->future);
    Py_VISIT(o->target);
    Py_VISIT(o->driver);
    return 0;
}

/* op.abandon(closing): the task gave up (cancelled, or its coroutine
 * closed).  A pending op is cancelled (its callback gives back a late 0);
 * a finished one with 0 gives back now.  `closing`: the event loop will
 * not dispatch this op again, so dispatch here until it is done. */
static PyObject *AOp_abandon(AOpObject *o, PyObject *closing_arg)
{
    int closing = PyObject_IsTrue(closing_arg);
    if (closing < 0) return NULL;
    if (o->abandoned) Py_RETURN_NONE;
    o->abandoned = 1;
    if (!o->pending) {
        if (o->result == 0) aop_undo(o);
        Py_RETURN_NONE;
    }
    sqf_loop_cancel(o->driver->loop, &o->op);
    Py_INCREF(o); /* its callback drops the driver's reference */
    if (closing) aop_drain(o);
    Py_DECREF(o);
    Py_RETURN_NONE;
}

static PyObject *AOp_future(AOpObject *o, void *closure)
{
    (void)closure;
    if (!o->future) Py_RETURN_NONE;
    return Py_NewRef(o->future);
}

static PyMethodDef AOp_methods[] = {
    {"abandon", (PyCFunction)AOp_abandon, METH_O,
     "abandon(closing)\n\nThe awaiting task gave up: cancel the wait and give back what it "
     "took; closing: dispatch until the wait is over (the event loop will not)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef AOp_getset[] = {
    {"future", (getter)AOp_future, NULL, "The future the wait resolves.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject AOpType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._LoopOp",
    .tp_basicsize = sizeof(AOpObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)AOp_traverse,
    .tp_clear = no_clear,
    .tp_doc = "One pending wait of an asyncio task (internal).",
    .tp_dealloc = (destructor)AOp_dealloc,
    .tp_methods = AOp_methods,
    .tp_getset = AOp_getset,
};

static PyMethodDef Driver_methods[] = {
    {"fileno", (PyCFunction)Driver_fileno, METH_NOARGS,
     "The descriptor that is readable while completions wait for dispatch()."},
    {"dispatch", (PyCFunction)Driver_dispatch, METH_NOARGS,
     "Run the callbacks of the waits that ended (resolving their futures)."},
    {"start", (PyCFunction)Driver_start, METH_VARARGS,
     "start(kind, target, timeout, loop)\n\nStart a task's wait: its value if it completed at "
     "once, "
     "else a pending _LoopOp."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Driver_getset[] = {
    {"backend", (getter)Driver_backend, NULL, "'io_uring' or 'fallback'.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject DriverType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._LoopDriver",
    .tp_basicsize = sizeof(DriverObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)Driver_traverse,
    .tp_clear = no_clear,
    .tp_doc = "_LoopDriver()\n\nThe sqf_loop of one asyncio event loop (internal).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Driver_init,
    .tp_dealloc = (destructor)Driver_dealloc,
    .tp_methods = Driver_methods,
    .tp_getset = Driver_getset,
};

/* --- the module ------------------------------------------------------------------- */

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "squarefree._squarefree",
    .m_doc = "squarefree's primitives for CPython (see the squarefree package).", .m_size = -1};

PyMODINIT_FUNC PyInit__squarefree(void)
{
    PyTypeObject *types[] = {&EventType, &LatchType,   &CountdownType, &SemType,
                             &BSemType,  &LockType,    &RLockType,     &CondType,
                             &OnceType,  &BarrierType, &DriverType,    &AOpType};
    const char *names[] = {
        "Event", "Latch",      "CountdownEvent", "Semaphore", "BoundedSemaphore", "Lock",
        "RLock", "_Condition", "Once",           "Barrier",   "_LoopDriver",      "_LoopOp"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (PyType_Ready(types[i]) < 0) return NULL;
    sqf_sem_init(&turnstile, 1, 1, SQF_PRIVATE);
    if (pthread_atfork(NULL, NULL, turnstile_after_fork) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "pthread_atfork failed");
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    BrokenLatchError = PyErr_NewExceptionWithDoc(
        "squarefree.BrokenLatchError", "A latch was aborted while (or before) waiting on it.",
        PyExc_RuntimeError, NULL);
    if (!BrokenLatchError || PyModule_AddObjectRef(m, "BrokenLatchError", BrokenLatchError) < 0)
        goto fail;
    Again = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
    if (!Again || PyModule_AddObjectRef(m, "_AGAIN", Again) < 0) goto fail;
    PyObject *threading = PyImport_ImportModule("threading");
    if (!threading) goto fail;
    BrokenBarrierError = PyObject_GetAttrString(threading, "BrokenBarrierError");
    Py_DECREF(threading);
    if (!BrokenBarrierError ||
        PyModule_AddObjectRef(m, "BrokenBarrierError", BrokenBarrierError) < 0)
        goto fail;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (PyModule_AddObjectRef(m, names[i], (PyObject *)types[i]) < 0) goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
