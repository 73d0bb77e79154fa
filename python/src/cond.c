/* cond.c: Condition, an sqf_cond over a Lock's or an RLock's mutex, or
 * over a gate mutex of its own for any other lock. */
#include "module.h"

/* How Condition waits: CondObject in module.h. */

static bool is_squarefree_lock(PyObject *lock)
{
    return PyObject_TypeCheck(lock, &LockType) || PyObject_TypeCheck(lock, &RLockType);
}

static void cond_reinit(CondObject *self)
{
    sqf_cond_init(&self->st->c, SQF_FLAGS_OF(self));
    sqf_mutex_init(&self->st->gate, SQF_FLAGS_OF(self));
    self->st->waiting = 0;
}

SHAREABLE_NEW(Cond_new, CondObject)

static bool is_shared_lock(PyObject *lock)
{
    return is_squarefree_lock(lock) && ((LockObject *)lock)->where.shared;
}

static int Cond_init(CondObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"lock", "shared", "offset", NULL};
    PyObject *lock = Py_None, *shared = NULL, *offset = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O$OO:Condition", kwlist, &lock, &shared, &offset))
        return -1;
    if (self->lock) { /* waiters may be asleep on the lock's mutex and this cond */
        PyErr_SetString(PyExc_RuntimeError, "Condition.__init__ called twice");
        return -1;
    }
    if (shared && shared != Py_None && shared != Py_False && !is_shared_lock(lock)) {
        PyErr_SetString(PyExc_ValueError, "a shared Condition needs a shared squarefree Lock or "
                                          "RLock (its waiters sleep on the lock's mutex)");
        return -1;
    }
    if (placement_place((ShareableObject *)self, shared, offset, sizeof(struct cond_state)) < 0)
        return -1;
    if (lock == Py_None) {
        lock = PyObject_CallNoArgs((PyObject *)&RLockType);
        if (!lock) return -1;
    } else {
        Py_INCREF(lock);
    }
    Py_XSETREF(self->lock, lock);
    self->fast = is_squarefree_lock(lock);
    cond_reinit(self);
    placement_done((ShareableObject *)self, MAGIC_COND);
    self->initialised = 1;
    return 0;
}

/* A shared condition's process-local part, for its pickle: its lock (which
 * pickles as a shared object itself). */
PyObject *cond_extras(PyObject *self)
{
    CondObject *c = (CondObject *)self;
    if (!c->lock) return raise_errno(EINVAL, "Condition not initialised");
    return PyTuple_Pack(1, c->lock);
}

int cond_attached(PyObject *self, PyObject *extras)
{
    CondObject *c = (CondObject *)self;
    PyObject *lock;
    if (!PyArg_ParseTuple(extras, "O:attach", &lock)) return -1;
    if (!is_shared_lock(lock)) {
        PyErr_SetString(PyExc_ValueError, "a shared Condition needs a shared squarefree Lock or "
                                          "RLock (its waiters sleep on the lock's mutex)");
        return -1;
    }
    Py_XSETREF(c->lock, Py_NewRef(lock));
    c->fast = 1;
    return 0;
}

/* A lock may refer back to its condition (a class of the user's holding
 * both): the collector sees the reference.  Nothing waits on a condition
 * that is garbage (a wait holds a reference), and every method checks for
 * a cleared lock. */
static int Cond_traverse(CondObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->lock);
    return 0;
}

static int Cond_clear(CondObject *self)
{
    Py_CLEAR(self->lock);
    return 0;
}

static void Cond_dealloc(CondObject *self)
{
    PyObject_GC_UnTrack(self);
    if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
    Py_XDECREF(self->lock);
    placement_release((ShareableObject *)self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *call_lock(CondObject *self, const char *name, PyObject *args, PyObject *kw)
{
    PyObject *fn = PyObject_GetAttrString(self->lock, name);
    if (!fn) return NULL;
    PyObject *r = PyObject_Call(fn, args, kw);
    Py_DECREF(fn);
    return r;
}

static PyObject *call_lock0(CondObject *self, const char *name)
{
    return PyObject_CallMethod(self->lock, name, NULL);
}

/* Whether the calling thread may wait or notify: 1, 0, or -1 raised.  A
 * squarefree lock says so itself; any other lock by its _is_owned, else
 * by threading's test (a lock that acquire(False) cannot take is held). */
static int cond_owned(CondObject *self)
{
    if (!self->lock) {
        raise_errno(EINVAL, "Condition not initialised");
        return -1;
    }
    if (self->fast) return lock_is_owned((LockObject *)self->lock);
    PyObject *r;
    if (PyObject_HasAttrString(self->lock, "_is_owned")) {
        r = call_lock0(self, "_is_owned");
        if (!r) return -1;
        int owned = PyObject_IsTrue(r);
        Py_DECREF(r);
        return owned;
    }
    r = PyObject_CallMethod(self->lock, "acquire", "O", Py_False);
    if (!r) return -1;
    int took = PyObject_IsTrue(r);
    Py_DECREF(r);
    if (took <= 0) return took < 0 ? -1 : 1;
    r = call_lock0(self, "release");
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

/* The lock's _release_save(), else release() (saving None). */
static PyObject *Cond_release_save(CondObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->lock) return raise_errno(EINVAL, "Condition not initialised");
    if (PyObject_HasAttrString(self->lock, "_release_save"))
        return call_lock0(self, "_release_save");
    PyObject *r = call_lock0(self, "release");
    if (!r) return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

/* The lock's _acquire_restore(state), else acquire(). */
static PyObject *Cond_acquire_restore(CondObject *self, PyObject *state)
{
    if (!self->lock) return raise_errno(EINVAL, "Condition not initialised");
    if (PyObject_HasAttrString(self->lock, "_acquire_restore")) {
        PyObject *fn = PyObject_GetAttrString(self->lock, "_acquire_restore");
        if (!fn) return NULL;
        PyObject *r = PyObject_CallOneArg(fn, state); /* the state may be a tuple */
        Py_DECREF(fn);
        return r;
    }
    PyObject *r = call_lock0(self, "acquire");
    if (!r) return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

/* The fast path's wait: the cond step releases and retakes the mutex. */
static PyObject *cond_wait_fast(CondObject *self, struct sqf_waitop *op)
{
    LockObject *l = (LockObject *)self->lock;
    unsigned long count = l->st->count, owner = l->st->owner;
    lock_set_owner(l, 0, 0);
    op->u.cond.m = &l->st->mu;
    COND_WAITING_ADD(self, 1);
    PyObject *v;
    int g = green_wait(AK_COND, (PyObject *)self, op->deadline, &v); /* a greenlet's */
    int raised = 0, r = g ? 0 : run_wait(op, sqf_cond_wait_step_, &raised);
    COND_WAITING_ADD(self, -1);
    lock_set_owner(l, owner, count); /* held again, whatever the wait returned */
    if (g) return v;
    return raised ? NULL : bool_result(r, "Condition.wait failed");
}

/* Any other lock's wait, through the gate (see the top of this file). */
static PyObject *cond_wait_any(CondObject *self, struct sqf_waitop *op)
{
    if (mutex_take(&self->st->gate, SQF_FOREVER) < 0) return NULL;
    PyObject *saved = Cond_release_save(self, NULL);
    if (!saved) {
        sqf_mutex_unlock(&self->st->gate);
        return NULL;
    }
    op->u.cond.m = &self->st->gate;
    COND_WAITING_ADD(self, 1);
    /* A greenlet's wait ends with the gate free already (aio.c's gate_free). */
    PyObject *v = NULL;
    int g = green_wait(AK_COND, (PyObject *)self, op->deadline, &v);
    int raised = g < 0, r = g ? 0 : run_wait(op, sqf_cond_wait_step_, &raised);
    COND_WAITING_ADD(self, -1);
    if (!g) sqf_mutex_unlock(&self->st->gate);
    PyObject *type, *exc, *tb;
    PyErr_Fetch(&type, &exc, &tb); /* a signal handler's, raised after the lock is back */
    PyObject *back = Cond_acquire_restore(self, saved);
    Py_DECREF(saved);
    if (!back) { /* threading's finally: the restore's exception wins */
        Py_XDECREF(type);
        Py_XDECREF(exc);
        Py_XDECREF(tb);
        return NULL;
    }
    Py_DECREF(back);
    PyErr_Restore(type, exc, tb);
    if (g) return v; /* (NULL if raised) */
    return raised ? NULL : bool_result(r, "Condition.wait failed");
}

static PyObject *Cond_wait(CondObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"timeout", NULL};
    PyObject *timeout = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:wait", kwlist, &timeout)) return NULL;
    int owned = cond_owned(self);
    if (owned <= 0) {
        if (owned == 0) PyErr_SetString(PyExc_RuntimeError, "cannot wait on un-acquired lock");
        return NULL;
    }
    struct sqf_waitop op = sqf_op_blocking(SQF_FOREVER, NULL);
    int large = deadline_of(timeout, &op.deadline);
    if (large < 0 || too_large(large, ETIMEDOUT) < 0) return NULL; /* threading's always waits */
    op.may_spin = false;
    op.u.cond.c = &self->st->c;
    return self->fast ? cond_wait_fast(self, &op) : cond_wait_any(self, &op);
}

/* A task's wait (the package's async_wait), in two halves around the
 * loop's cond op (aio.c's AK_COND), which releases the mutex, waits, and
 * takes the mutex back before its callback, whatever ended it.
 * _task_wait_begin() checks the caller holds the lock and returns what an
 * RLock's levels were, handing them to the op's mutex; _task_wait_end()
 * restores them once the mutex is held again.  Only the fast path serves
 * tasks: another lock could not be taken back without blocking the
 * task's event loop. */
static PyObject *Cond_task_wait_begin(CondObject *self, PyObject *unused)
{
    (void)unused;
    int owned = cond_owned(self);
    if (owned <= 0) {
        if (owned == 0) PyErr_SetString(PyExc_RuntimeError, "cannot wait on un-acquired lock");
        return NULL;
    }
    if (!self->fast) {
        PyErr_SetString(PyExc_TypeError, "async_wait needs a Condition over a squarefree Lock "
                                         "or RLock (its task could not take another lock back "
                                         "without blocking its event loop)");
        return NULL;
    }
    LockObject *l = (LockObject *)self->lock;
    PyObject *state = Py_BuildValue("(kk)", l->st->count, l->st->owner);
    if (!state) return NULL;
    lock_set_owner(l, 0, 0);
    COND_WAITING_ADD(self, 1);
    return state;
}

static PyObject *Cond_task_wait_end(CondObject *self, PyObject *state)
{
    unsigned long count, owner;
    if (!self->lock || !self->fast) return raise_errno(EINVAL, "Condition not initialised");
    if (state != Py_None) { /* None: the task does not hold the lock again (orphaned) */
        if (!PyArg_ParseTuple(state, "kk:_task_wait_end", &count, &owner)) return NULL;
        lock_set_owner((LockObject *)self->lock, owner, count);
    }
    COND_WAITING_ADD(self, -1);
    Py_RETURN_NONE;
}

/* A notification that reached a task as it was cancelled is passed on to
 * another waiter, so that none is lost (asyncio.Condition does the same);
 * the caller holds the lock again. */
static PyObject *Cond_pass_on(CondObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->lock) return raise_errno(EINVAL, "Condition not initialised");
    if (COND_WAITING(self)) sqf_cond_signal(&self->st->c);
    Py_RETURN_NONE;
}

/* Check the caller holds the lock, and on the other path take the gate:
 * 0, or -1 raised. */
static int notify_begin(CondObject *self)
{
    int owned = cond_owned(self);
    if (owned <= 0) {
        if (owned == 0) PyErr_SetString(PyExc_RuntimeError, "cannot notify on un-acquired lock");
        return -1;
    }
    return self->fast || mutex_take(&self->st->gate, SQF_FOREVER) > 0 ? 0 : -1;
}

static void notify_end(CondObject *self)
{
    if (!self->fast) sqf_mutex_unlock(&self->st->gate);
}

static PyObject *Cond_notify(CondObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"n", NULL};
    Py_ssize_t n = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|n:notify", kwlist, &n)) return NULL;
    if (notify_begin(self) < 0) return NULL;
    for (Py_ssize_t i = 0; i < n && (unsigned long)i < COND_WAITING(self); i++)
        sqf_cond_signal(&self->st->c);
    notify_end(self);
    Py_RETURN_NONE;
}

static PyObject *Cond_notify_all(CondObject *self, PyObject *unused)
{
    (void)unused;
    if (notify_begin(self) < 0) return NULL;
    sqf_cond_broadcast(&self->st->c);
    notify_end(self);
    Py_RETURN_NONE;
}

static PyObject *Cond_acquire(CondObject *self, PyObject *args, PyObject *kw)
{
    if (!self->lock) return raise_errno(EINVAL, "Condition not initialised");
    if (!self->fast) return call_lock(self, "acquire", args, kw);
    LockObject *l = (LockObject *)self->lock;
    return PyObject_TypeCheck(self->lock, &RLockType) ? RLock_acquire(l, args, kw)
                                                      : Lock_acquire(l, args, kw);
}

static PyObject *Cond_release(CondObject *self, PyObject *unused)
{
    if (!self->lock) return raise_errno(EINVAL, "Condition not initialised");
    if (!self->fast) return call_lock0(self, "release");
    LockObject *l = (LockObject *)self->lock;
    return PyObject_TypeCheck(self->lock, &RLockType) ? RLock_release(l, unused)
                                                      : Lock_release(l, unused);
}

static PyObject *Cond_exit(CondObject *self, PyObject *args)
{
    (void)args;
    return exit_result(Cond_release(self, NULL));
}

static PyObject *Cond_is_owned(CondObject *self, PyObject *unused)
{
    (void)unused;
    int owned = cond_owned(self);
    return owned < 0 ? NULL : PyBool_FromLong(owned);
}

/* In a child of fork: the lock's own reinit, and no waiters.  A shared
 * condition is left alone: other processes use it. */
static PyObject *Cond_at_fork_reinit(CondObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->lock) return raise_errno(EINVAL, "Condition not initialised");
    if (self->where.shared) Py_RETURN_NONE;
    PyObject *r = call_lock0(self, "_at_fork_reinit");
    if (!r) return NULL;
    Py_DECREF(r);
    cond_reinit(self);
    Py_RETURN_NONE;
}

/* <Condition(<the lock's repr>, waiters)>, as threading's. */
static PyObject *Cond_repr(CondObject *self)
{
    if (!self->lock) return PyUnicode_FromFormat("<Condition(None, 0)>");
    return PyUnicode_FromFormat("<Condition(%R, %lu)>", self->lock, COND_WAITING(self));
}

static PyObject *Cond_lock(CondObject *self, void *closure)
{
    (void)closure;
    if (!self->lock) Py_RETURN_NONE;
    return Py_NewRef(self->lock);
}

static PyMethodDef Cond_methods[] = {
    {"wait", (PyCFunction)(void (*)(void))Cond_wait, METH_VARARGS | METH_KEYWORDS,
     "wait(timeout=None) -> bool\n\nRelease the lock, sleep until notified or the timeout "
     "(seconds) passes, and take the lock back: False if it timed out. RuntimeError unless "
     "the lock is held."},
    {"notify", (PyCFunction)(void (*)(void))Cond_notify, METH_VARARGS | METH_KEYWORDS,
     "notify(n=1)\n\nWake at most n waiters. RuntimeError unless the lock is held."},
    {"notify_all", (PyCFunction)Cond_notify_all, METH_NOARGS,
     "Wake every waiter (one system call: they are moved onto the lock, or for a lock that "
     "is not squarefree's onto the condition's own, not woken to fight for it). "
     "RuntimeError unless the lock is held."},
    {"acquire", (PyCFunction)(void (*)(void))Cond_acquire, METH_VARARGS | METH_KEYWORDS,
     "The lock's acquire()."},
    {"release", (PyCFunction)Cond_release, METH_NOARGS, "The lock's release()."},
    {"_is_owned", (PyCFunction)Cond_is_owned, METH_NOARGS,
     "Whether the calling thread may wait (holds the lock)."},
    {"_release_save", (PyCFunction)Cond_release_save, METH_NOARGS,
     "The lock's _release_save(), else its release() (threading.Condition's protocol)."},
    {"_acquire_restore", (PyCFunction)Cond_acquire_restore, METH_O,
     "_acquire_restore(state)\n\nThe lock's _acquire_restore(state), else its acquire()."},
    {"_task_wait_begin", (PyCFunction)Cond_task_wait_begin, METH_NOARGS,
     "A task's wait, first half: check the lock is held, hand its levels to the wait; the "
     "state for _task_wait_end."},
    {"_task_wait_end", (PyCFunction)Cond_task_wait_end, METH_O,
     "_task_wait_end(state)\n\nA task's wait, second half: the lock's levels back (None: "
     "the wait was orphaned, and the task does not hold the lock)."},
    {"_pass_on", (PyCFunction)Cond_pass_on, METH_NOARGS,
     "Signal one waiter, for a task that was notified as it was cancelled."},
    {"_at_fork_reinit", (PyCFunction)Cond_at_fork_reinit, METH_NOARGS,
     "The lock's _at_fork_reinit(), and forget every waiter (for a child of fork)."},
    {"__enter__", (PyCFunction)(void (*)(void))Cond_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire()"},
    {"__exit__", (PyCFunction)Cond_exit, METH_VARARGS, "release()"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Cond_getset[] = {
    {"_lock", (getter)Cond_lock, NULL, "The lock, as threading.Condition's _lock.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject CondType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._Condition",
    .tp_basicsize = sizeof(CondObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)Cond_traverse,
    .tp_clear = (inquiry)Cond_clear,
    .tp_doc = "The C part of squarefree.Condition.",
    .tp_weaklistoffset = offsetof(CondObject, weakrefs),
    .tp_repr = (reprfunc)Cond_repr,
    .tp_new = Cond_new,
    .tp_init = (initproc)Cond_init,
    .tp_dealloc = (destructor)Cond_dealloc,
    .tp_methods = Cond_methods,
    .tp_getset = Cond_getset,
};
