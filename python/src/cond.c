/* cond.c: Condition, an sqf_cond over a Lock's or an RLock's mutex. */
#include "module.h"

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

PyTypeObject CondType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._Condition",
    .tp_basicsize = sizeof(CondObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The C part of squarefree.Condition.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Cond_init,
    .tp_dealloc = (destructor)Cond_dealloc,
    .tp_methods = Cond_methods,
};
