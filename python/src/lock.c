/* lock.c: Lock and RLock, over sqf_mutex. */
#include "module.h"

#include <math.h>

SHAREABLE_NEW(Lock_new, LockObject)

static int Lock_init(LockObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"shared", "offset", NULL};
    PyObject *shared = NULL, *offset = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OO:Lock", kwlist, &shared, &offset)) return -1;
    if (init_once(self->initialised, (PyObject *)self) < 0) return -1;
    if (placement_place((ShareableObject *)self, shared, offset, sizeof(struct lock_state)) < 0)
        return -1;
    sqf_mutex_init(&self->st->mu, SQF_FLAGS_OF(self));
    self->st->owner = 0;
    self->st->count = 0;
    self->st->pid = 0;
    placement_done((ShareableObject *)self,
                   PyObject_TypeCheck(self, &RLockType) ? MAGIC_RLOCK : MAGIC_LOCK);
    self->initialised = 1;
    return 0;
}

/* An RLock's owner within its process (lock_owner_now), and which process:
 * a shared RLock's holders may be in several. */
static long lock_pid(LockObject *self)
{
    return self->where.shared ? proc_id() : 0;
}

static int owner_is(LockObject *self, unsigned long me)
{
    return self->st->owner == me && self->st->pid == lock_pid(self);
}

void lock_set_owner(LockObject *self, unsigned long owner, unsigned long count)
{
    self->st->owner = owner;
    self->st->count = count;
    self->st->pid = owner ? lock_pid(self) : 0;
}

/* threading.Lock.acquire's arguments: blocking=True, timeout=-1.  0 with
 * *deadline set (SQF_FOREVER, or a past one for "try once"), -1 raised. */
int lock_args(PyObject *args, PyObject *kw, sqf_deadline *deadline)
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
    if (timeout > timeout_max) {
        PyErr_SetString(PyExc_OverflowError, "timeout value is too large");
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

/* Take mu until deadline (module.h). */
int mutex_take(sqf_mutex *mu, sqf_deadline deadline)
{
    if (sqf_mutex_trylock(mu) == 0) return 1;
    if (deadline == 0) return 0;
    struct sqf_waitop op = sqf_op_blocking(deadline, NULL);
    /* No spinning with the GIL held: the holder needs the GIL to release. */
    op.may_spin = false;
    op.u.mutex.m = mu;
    int raised, r = run_wait(&op, sqf_mutex_lock_step_, &raised);
    if (raised) {
        if (r == 0) sqf_mutex_unlock(mu); /* taken as the signal came: give it back */
        return -1;
    }
    if (r == 0) return 1;
    if (r == ETIMEDOUT) return 0;
    raise_errno(r, "acquire failed");
    return -1;
}

/* Take the lock until deadline: 1 taken, 0 not, -1 raised.  A greenlet
 * under a hub waits in its hub (green.c). */
static int lock_take(LockObject *self, sqf_deadline deadline)
{
    if (sqf_mutex_trylock(&self->st->mu) == 0) return 1;
    if (deadline == 0) return 0;
    PyObject *v;
    int kind = PyObject_TypeCheck((PyObject *)self, &RLockType) ? AK_RLOCK : AK_LOCK;
    int g = green_wait(kind, (PyObject *)self, deadline, &v);
    if (g) return g < 0 ? -1 : green_truth(v);
    return mutex_take(&self->st->mu, deadline);
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
    if (sqf_mutex_unlock(&self->st->mu) == EPERM) {
        PyErr_SetString(PyExc_RuntimeError, "release unlocked lock");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *Lock_locked(LockObject *self, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(sqf_mutex_is_locked(&self->st->mu));
}

static PyObject *Lock_exit(LockObject *self, PyObject *args)
{
    (void)args;
    return exit_result(Lock_release(self, NULL));
}

/* An RLock's owner is the asyncio or trio task that runs now in this
 * thread, if one does, else the thread: a task that holds it may take it again, and
 * another task of the same loop (the same thread) waits for it, as with
 * aiologic's RLock; in a thread without a running task (every program of
 * threads alone) this is threading's rule.  A task's identity is its
 * address: while it holds the lock it is alive, and no thread's ident
 * (the address of its control block, inside its stack's mapping) is the
 * address of a live Python object.
 *
 * asyncio's own C functions find the running loop and its current task;
 * they are looked up once asyncio has been imported, and a program that
 * never imports it pays one dictionary lookup per call. */
static unsigned long task_or_thread(void)
{
    static PyObject *name, *get_running_loop, *current_task; /* kept for good */
    /* --- trio: a trio task running in this thread owns it, as an asyncio
     * task does (trio.c tells whether one runs, and which) --- */
    PyObject *trio_task = trio_current_task();
    if (trio_task) {
        Py_DECREF(trio_task); /* alive while it runs this, and while it holds the lock */
        return (unsigned long)(uintptr_t)trio_task;
    }
    /* --- end of trio's part --- */
    unsigned long me = PyThread_get_thread_ident();
    if (!current_task) {
        if (!name && !(name = PyUnicode_InternFromString("asyncio"))) {
            PyErr_Clear();
            return me;
        }
        PyObject *asyncio = PyImport_GetModule(name);
        if (!asyncio) {
            PyErr_Clear();
            return me;
        }
        get_running_loop = PyObject_GetAttrString(asyncio, "_get_running_loop");
        current_task = get_running_loop ? PyObject_GetAttrString(asyncio, "current_task") : NULL;
        Py_DECREF(asyncio);
        if (!current_task) {
            Py_CLEAR(get_running_loop);
            PyErr_Clear();
            return me;
        }
    }
    PyObject *type, *exc, *tb;
    PyErr_Fetch(&type, &exc, &tb); /* a caller may be unwinding (__exit__) */
    PyObject *loop = PyObject_CallNoArgs(get_running_loop);
    PyObject *task = loop && loop != Py_None ? PyObject_CallOneArg(current_task, loop) : NULL;
    unsigned long owner = task && task != Py_None ? (unsigned long)(uintptr_t)task : me;
    Py_XDECREF(task);
    Py_XDECREF(loop);
    PyErr_Clear(); /* asyncio failing to answer: the thread owns it */
    PyErr_Restore(type, exc, tb);
    return owner;
}

unsigned long lock_owner_now(void)
{
    unsigned long me = PyThread_get_thread_ident(), owner = task_or_thread();
    /* --- greenlets: under a gevent or eventlet hub, the greenlet that runs
     * now owns it (green.c says what "under a hub" means), unless it is its
     * thread's main greenlet, which is the thread (so a lock the main
     * greenlet took before its hub existed is still its own).  Identity by
     * address, as a task's. */
    if (owner == me) {
        PyObject *g = green_current();
        if (g) {
            owner = (unsigned long)(uintptr_t)g;
            Py_DECREF(g);
        }
    }
    /* --- end of greenlets */
    return owner;
}

/* Whether the caller holds it: an RLock's owner (the running task, or the
 * thread); a Lock, which records no owner, held at all
 * (threading.Condition's rule for a Lock). */
int lock_is_owned(LockObject *self)
{
    if (PyObject_TypeCheck((PyObject *)self, &RLockType))
        return self->st->count > 0 && owner_is(self, lock_owner_now());
    return sqf_mutex_is_locked(&self->st->mu);
}

static PyObject *Lock_is_owned(LockObject *self, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(lock_is_owned(self));
}

/* threading.Condition's protocol for a Lock: release (no state to save),
 * then take it again. */
static PyObject *Lock_acquire_restore(LockObject *self, PyObject *state)
{
    (void)state;
    int r = lock_take(self, SQF_FOREVER);
    if (r < 0) return NULL;
    Py_RETURN_NONE;
}

/* In a child of fork: unlocked, whoever held it (the holder is gone).  A
 * shared lock is left alone: other processes use it. */
static PyObject *Lock_at_fork_reinit(LockObject *self, PyObject *unused)
{
    (void)unused;
    if (self->where.shared) Py_RETURN_NONE;
    sqf_mutex_init(&self->st->mu, SQF_PRIVATE);
    lock_set_owner(self, 0, 0);
    Py_RETURN_NONE;
}

/* <locked squarefree.Lock object at 0x...>, as _thread.lock's. */
static PyObject *Lock_repr(LockObject *self)
{
    PyObject *label = class_label((PyObject *)self);
    if (!label) return NULL;
    PyObject *r = PyUnicode_FromFormat("<%s %U object at %p>",
                                       sqf_mutex_is_locked(&self->st->mu) ? "locked" : "unlocked",
                                       label, self);
    Py_DECREF(label);
    return r;
}

PyObject *RLock_acquire(LockObject *self, PyObject *args, PyObject *kw)
{
    sqf_deadline deadline;
    if (lock_args(args, kw, &deadline) < 0) return NULL;
    unsigned long me = lock_owner_now();
    if (owner_is(self, me)) { /* only this owner writes owner == me */
        if (self->st->count == ULONG_MAX) {
            PyErr_SetString(PyExc_OverflowError, "internal lock count overflowed");
            return NULL;
        }
        self->st->count++;
        Py_RETURN_TRUE;
    }
    int r = lock_take(self, deadline);
    if (r <= 0) return r < 0 ? NULL : PyBool_FromLong(0);
    lock_set_owner(self, me, 1);
    Py_RETURN_TRUE;
}

PyObject *RLock_release(LockObject *self, PyObject *unused)
{
    (void)unused;
    if (self->st->count == 0 || !owner_is(self, lock_owner_now())) {
        PyErr_SetString(PyExc_RuntimeError, "cannot release un-acquired lock");
        return NULL;
    }
    if (self->st->count == 1) {
        lock_set_owner(self, 0, 0);
        sqf_mutex_unlock(&self->st->mu);
    } else {
        self->st->count--;
    }
    Py_RETURN_NONE;
}

/* The package's async_acquire, in two halves around the task's wait for
 * the mutex: _reenter() takes one more level if the running task (or
 * thread) holds the lock (True), else changes nothing (False); _own()
 * records the running task as the holder of the mutex it has just taken.
 * No await separates the wait from _own(), so no other owner can see the
 * lock held by nobody and count on it. */
static PyObject *RLock_reenter(LockObject *self, PyObject *unused)
{
    (void)unused;
    if (self->st->count == 0 || !owner_is(self, lock_owner_now())) Py_RETURN_FALSE;
    if (self->st->count == ULONG_MAX) {
        PyErr_SetString(PyExc_OverflowError, "internal lock count overflowed");
        return NULL;
    }
    self->st->count++;
    Py_RETURN_TRUE;
}

static PyObject *RLock_own(LockObject *self, PyObject *unused)
{
    (void)unused;
    if (self->st->count != 0 || !sqf_mutex_is_locked(&self->st->mu)) {
        PyErr_SetString(PyExc_RuntimeError, "RLock._own: the mutex is not freshly taken");
        return NULL;
    }
    lock_set_owner(self, lock_owner_now(), 1);
    Py_RETURN_NONE;
}

static PyObject *RLock_exit(LockObject *self, PyObject *args)
{
    (void)args;
    return exit_result(RLock_release(self, NULL));
}

/* threading.Condition's protocol for an RLock: release every level, saving
 * (count, owner), then restore them once the lock is taken again. */
static PyObject *RLock_release_save(LockObject *self, PyObject *unused)
{
    (void)unused;
    if (self->st->count == 0) {
        PyErr_SetString(PyExc_RuntimeError, "cannot release un-acquired lock");
        return NULL;
    }
    PyObject *state = Py_BuildValue("(kk)", self->st->count, self->st->owner);
    if (!state) return NULL;
    lock_set_owner(self, 0, 0);
    sqf_mutex_unlock(&self->st->mu);
    return state;
}

static PyObject *RLock_acquire_restore(LockObject *self, PyObject *state)
{
    unsigned long count, owner;
    if (!PyArg_ParseTuple(state, "kk:_acquire_restore", &count, &owner)) return NULL;
    if (lock_take(self, SQF_FOREVER) < 0) return NULL;
    lock_set_owner(self, owner, count);
    Py_RETURN_NONE;
}

static PyObject *RLock_recursion_count(LockObject *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromUnsignedLong(owner_is(self, lock_owner_now()) ? self->st->count : 0);
}

/* <locked squarefree.RLock object owner=ident count=n at 0x...>, as
 * _thread.RLock's. */
static PyObject *RLock_repr(LockObject *self)
{
    PyObject *label = class_label((PyObject *)self);
    if (!label) return NULL;
    PyObject *r = PyUnicode_FromFormat("<%s %U object owner=%lu count=%lu at %p>",
                                       self->st->count ? "locked" : "unlocked", label,
                                       self->st->owner, self->st->count, self);
    Py_DECREF(label);
    return r;
}

#define LOCK_ACQUIRE_DOC                                                                           \
    "acquire(blocking=True, timeout=-1) -> bool\n\nTake the lock, waiting for it if needed "       \
    "(for ever, or timeout seconds): True, or False if not blocking or timed out."

#define LOCK_RELEASE_DOC "Release the lock (any thread may). RuntimeError if it is not locked."

#define IS_OWNED_DOC "Whether the calling thread holds the lock (threading.Condition's protocol)."

#define AT_FORK_REINIT_DOC                                                                         \
    "Make the lock unlocked and unowned, whoever held it (for a child of fork, as threading's)."

static PyMethodDef Lock_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))Lock_acquire, METH_VARARGS | METH_KEYWORDS,
     LOCK_ACQUIRE_DOC},
    {"acquire_lock", (PyCFunction)(void (*)(void))Lock_acquire, METH_VARARGS | METH_KEYWORDS,
     "An alias of acquire(), as _thread.lock's."},
    {"release", (PyCFunction)Lock_release, METH_NOARGS, LOCK_RELEASE_DOC},
    {"release_lock", (PyCFunction)Lock_release, METH_NOARGS,
     "An alias of release(), as _thread.lock's."},
    {"locked", (PyCFunction)Lock_locked, METH_NOARGS, "Return True if the lock is held."},
    {"locked_lock", (PyCFunction)Lock_locked, METH_NOARGS,
     "An alias of locked(), as _thread.lock's."},
    {"_is_owned", (PyCFunction)Lock_is_owned, METH_NOARGS,
     IS_OWNED_DOC " A Lock records no owner: whether it is held."},
    {"_release_save", (PyCFunction)Lock_release, METH_NOARGS,
     "release(), returning None: the state _acquire_restore takes (threading.Condition's "
     "protocol)."},
    {"_acquire_restore", (PyCFunction)Lock_acquire_restore, METH_O,
     "_acquire_restore(state)\n\nacquire() (threading.Condition's protocol)."},
    {"_at_fork_reinit", (PyCFunction)Lock_at_fork_reinit, METH_NOARGS, AT_FORK_REINIT_DOC},
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
    {"_is_owned", (PyCFunction)Lock_is_owned, METH_NOARGS, IS_OWNED_DOC},
    {"_release_save", (PyCFunction)RLock_release_save, METH_NOARGS,
     "Release every level at once; return the state (count, owner) for _acquire_restore. "
     "RuntimeError if it is not held (threading.Condition's protocol)."},
    {"_acquire_restore", (PyCFunction)RLock_acquire_restore, METH_O,
     "_acquire_restore(state)\n\nTake the lock and restore the levels _release_save saved."},
    {"_reenter", (PyCFunction)RLock_reenter, METH_NOARGS,
     "One more level if the caller (the running task, or thread) holds it: True; else "
     "False, and nothing changes (async_acquire's first half)."},
    {"_own", (PyCFunction)RLock_own, METH_NOARGS,
     "Record the caller as the holder of the mutex it has just taken (async_acquire's "
     "second half)."},
    {"_recursion_count", (PyCFunction)RLock_recursion_count, METH_NOARGS,
     "How many times the calling thread holds the lock (0 if it does not)."},
    {"_at_fork_reinit", (PyCFunction)Lock_at_fork_reinit, METH_NOARGS, AT_FORK_REINIT_DOC},
    {"__enter__", (PyCFunction)(void (*)(void))RLock_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire()"},
    {"__exit__", (PyCFunction)RLock_exit, METH_VARARGS, "release()"},
    {NULL, NULL, 0, NULL}};

PyTypeObject LockType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._squarefree.Lock",
    .tp_basicsize = sizeof(LockObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Lock(*, shared=None, offset=None)\n\nA mutual-exclusion lock, as threading.Lock: "
              "any thread may release "
              "it; a release of an unlocked lock raises RuntimeError.  An unlock wakes at most "
              "one waiter, and a thread that keeps re-taking the lock passes it on after a "
              "short turn, so waiters are served in turn (no starvation).",
    .tp_weaklistoffset = offsetof(LockObject, weakrefs),
    .tp_dealloc = shareable_dealloc,
    .tp_repr = (reprfunc)Lock_repr,
    .tp_new = Lock_new,
    .tp_init = (initproc)Lock_init,
    .tp_methods = Lock_methods,
};

PyTypeObject RLockType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree.RLock",
    .tp_basicsize = sizeof(LockObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "RLock(*, shared=None, offset=None)\n\nA reentrant lock, as threading.RLock: the "
              "holder may acquire it "
              "again, and must release it as many times; only the holder may release it.  The "
              "holder is the asyncio or trio task that took it, when a task did (a task of "
              "the same loop waits for it like another thread), else the greenlet that took "
              "it under a gevent or eventlet hub (not the thread's main one), else the thread.",
    .tp_weaklistoffset = offsetof(LockObject, weakrefs),
    .tp_dealloc = shareable_dealloc,
    .tp_repr = (reprfunc)RLock_repr,
    .tp_new = Lock_new,
    .tp_init = (initproc)Lock_init,
    .tp_methods = RLock_methods,
};
