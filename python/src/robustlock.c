/* robustlock.c: RobustLock, over sqf_robust_mutex: a lock whose holder may
 * die (a process killed, a thread that exits holding it), and whose next
 * locker is told so. */
#include "module.h"

PyObject *OwnerDiedError, *LockNotRecoverableError;

SHAREABLE_NEW(Robust_new, RobustObject)

static PyObject *robust_error(int e)
{
    switch (e) {
    case EOWNERDEAD:
        PyErr_SetString(OwnerDiedError,
                        "the RobustLock's holder died holding it: the caller holds it now; "
                        "repair the data it protects, then call consistent()");
        break;
    case ENOTRECOVERABLE:
        PyErr_SetString(LockNotRecoverableError,
                        "the RobustLock is unusable: a holder that got OwnerDiedError released "
                        "it without calling consistent()");
        break;
    case ENOTSUP:
        PyErr_SetString(PyExc_OSError, "robust locks are not available here (they need glibc's "
                                       "robust list on 64-bit Linux)");
        break;
    case EDEADLK:
        PyErr_SetString(PyExc_RuntimeError, "the calling thread holds this RobustLock already "
                                            "(it is not reentrant)");
        break;
    case EPERM:
        PyErr_SetString(PyExc_RuntimeError, "the calling thread does not hold this RobustLock");
        break;
    default:
        raise_errno(e, "RobustLock failed");
    }
    return NULL;
}

static int Robust_init(RobustObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"shared", "offset", NULL};
    PyObject *shared = NULL, *offset = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OO:RobustLock", kwlist, &shared, &offset))
        return -1;
    if (init_once(self->initialised, (PyObject *)self) < 0) return -1;
    if (placement_place((ShareableObject *)self, shared, offset, sizeof(struct robust_state)) < 0)
        return -1;
    int e = sqf_robust_mutex_init(&self->st->m, SQF_FLAGS_OF(self));
    if (e) {
        placement_release((ShareableObject *)self);
        robust_error(e);
        return -1;
    }
    placement_done((ShareableObject *)self, MAGIC_ROBUST);
    self->initialised = 1;
    return 0;
}

/* A private lock the calling thread holds is released before its memory
 * goes: the kernel and glibc walk the thread's robust list, which links
 * it.  (A shared lock's memory is another process's too: the README asks
 * that it be released before it is dropped.) */
static void Robust_dealloc(RobustObject *self)
{
    if (self->initialised && !self->where.shared)
        sqf_robust_mutex_unlock(&self->st->m); /* EPERM unless ours */
    shareable_dealloc((PyObject *)self);
}

/* acquire(blocking=True, timeout=-1): True; False if not blocking or timed
 * out; OwnerDiedError with the lock held; LockNotRecoverableError. */
static PyObject *Robust_acquire(RobustObject *self, PyObject *args, PyObject *kw)
{
    sqf_deadline deadline;
    if (lock_args(args, kw, &deadline) < 0) return NULL;
    if (!self->initialised) return raise_errno(EINVAL, "RobustLock not initialised");
    sqf_robust_mutex *m = &self->st->m;
    int r = sqf_robust_mutex_trylock(m);
    if (r == EBUSY && deadline != 0) {
        struct sqf_waitop op = sqf_op_blocking(deadline, NULL);
        op.may_spin = false; /* the holder may need the GIL to release */
        op.u.robust.m = m;
        int raised;
        r = run_wait(&op, sqf_robust_lock_step_, &raised);
        if (raised && r == 0) {
            sqf_robust_mutex_unlock(m); /* taken as the signal came: give it back */
            return NULL;
        }
        if (raised && r == EOWNERDEAD) {
            /* Held, and unrepaired: the caller must learn it holds the lock
             * (giving it back would make it unrecoverable).  The handler's
             * exception becomes the context. */
            PyObject *type, *exc, *tb;
            PyErr_Fetch(&type, &exc, &tb);
            PyErr_NormalizeException(&type, &exc, &tb);
            robust_error(r);
            PyObject *t2, *e2, *tb2;
            PyErr_Fetch(&t2, &e2, &tb2);
            PyErr_NormalizeException(&t2, &e2, &tb2);
            PyException_SetContext(e2, exc); /* steals exc */
            Py_XDECREF(type);
            Py_XDECREF(tb);
            PyErr_Restore(t2, e2, tb2);
            return NULL;
        }
        if (raised) return NULL;
    }
    if (r == 0) Py_RETURN_TRUE;
    if (r == EBUSY || r == ETIMEDOUT) Py_RETURN_FALSE;
    return robust_error(r);
}

static PyObject *Robust_release(RobustObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->initialised) return raise_errno(EINVAL, "RobustLock not initialised");
    int e = sqf_robust_mutex_unlock(&self->st->m);
    if (e) return robust_error(e);
    Py_RETURN_NONE;
}

static PyObject *Robust_exit(RobustObject *self, PyObject *args)
{
    (void)args;
    return exit_result(Robust_release(self, NULL));
}

static PyObject *Robust_consistent(RobustObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->initialised) return raise_errno(EINVAL, "RobustLock not initialised");
    int e = sqf_robust_mutex_consistent(&self->st->m);
    if (e == EINVAL) {
        PyErr_SetString(PyExc_RuntimeError, "consistent(): the RobustLock is not in the "
                                            "owner-died state");
        return NULL;
    }
    if (e) return robust_error(e);
    Py_RETURN_NONE;
}

/* The word's holder bits (robust.h's word is the kernel's: the holder's
 * thread id in bits 0..29). */
static PyObject *Robust_locked(RobustObject *self, PyObject *unused)
{
    (void)unused;
    uint32_t w = __atomic_load_n((uint32_t *)&self->st->m.word, __ATOMIC_RELAXED);
    return PyBool_FromLong((w & 0x3fffffffu) != 0);
}

static PyObject *Robust_repr(RobustObject *self)
{
    PyObject *label = class_label((PyObject *)self);
    if (!label) return NULL;
    PyObject *locked = Robust_locked(self, NULL);
    PyObject *r = PyUnicode_FromFormat("<%s %U object at %p>",
                                       locked == Py_True ? "locked" : "unlocked", label, self);
    Py_XDECREF(locked);
    Py_DECREF(label);
    return r;
}

static PyMethodDef Robust_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))Robust_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire(blocking=True, timeout=-1) -> bool\n\nTake the lock, waiting for it if needed "
     "(for ever, or timeout seconds): True, or False if not blocking or timed out.  "
     "OwnerDiedError if its last holder died holding it: the caller holds it then, and calls "
     "consistent() once the data it protects is repaired.  LockNotRecoverableError if it is "
     "unusable; RuntimeError if the calling thread holds it already."},
    {"release", (PyCFunction)Robust_release, METH_NOARGS,
     "Release the lock (only the thread holding it may: RuntimeError otherwise).  After "
     "OwnerDiedError without consistent(), the lock becomes unusable for good "
     "(LockNotRecoverableError to every locker, now and later)."},
    {"consistent", (PyCFunction)Robust_consistent, METH_NOARGS,
     "Mark the data repaired after OwnerDiedError (the caller holds the lock): the lock "
     "works on as usual.  RuntimeError if it is not in that state, or not held by the "
     "calling thread."},
    {"locked", (PyCFunction)Robust_locked, METH_NOARGS, "Return True if the lock is held."},
    {"__enter__", (PyCFunction)(void (*)(void))Robust_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire(); OwnerDiedError leaves the lock held and the with block not entered."},
    {"__exit__", (PyCFunction)Robust_exit, METH_VARARGS, "release()"},
    {NULL, NULL, 0, NULL}};

PyTypeObject RobustLockType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree.RobustLock",
    .tp_basicsize = sizeof(RobustObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "RobustLock(*, shared=None, offset=None)\n\nA lock that survives the death of its "
              "holder: a process killed, or a thread that exits, holding it.  The kernel then "
              "releases it, and the next acquire() raises OwnerDiedError with the lock held by the "
              "caller, who repairs the data and calls consistent().  Owned by the thread that took "
              "it (only it may release it; not reentrant).  For threads only: an asyncio task's "
              "holder would be its event loop's thread.  Shared between processes as the other "
              "primitives (shared=True, a SharedMemory or a buffer, attach, pickling).",
    .tp_weaklistoffset = offsetof(RobustObject, weakrefs),
    .tp_dealloc = (destructor)Robust_dealloc,
    .tp_repr = (reprfunc)Robust_repr,
    .tp_new = Robust_new,
    .tp_init = (initproc)Robust_init,
    .tp_methods = Robust_methods,
};
