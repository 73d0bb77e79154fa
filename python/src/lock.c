/* lock.c: Lock and RLock, over sqf_mutex. */
#include "module.h"

#include <math.h>

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

PyObject *Lock_acquire(LockObject *self, PyObject *args, PyObject *kw)
{
    sqf_deadline deadline;
    if (lock_args(args, kw, &deadline) < 0) return NULL;
    int r = lock_take(self, deadline);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

PyObject *Lock_release(LockObject *self, PyObject *unused)
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

PyObject *RLock_acquire(LockObject *self, PyObject *args, PyObject *kw)
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

PyObject *RLock_release(LockObject *self, PyObject *unused)
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

PyTypeObject LockType = {
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

PyTypeObject RLockType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree.RLock",
    .tp_basicsize = sizeof(LockObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "RLock()\n\nA reentrant lock, as threading.RLock: the holding thread may acquire "
              "it again, and must release it as many times; only the holder may release it.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Lock_init,
    .tp_methods = RLock_methods,
};
