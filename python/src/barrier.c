/* barrier.c: Barrier, threading's cyclic barrier over sqf_barrier. */
#include "module.h"

#include <time.h>

PyObject *BrokenBarrierError; /* threading.BrokenBarrierError */

SHAREABLE_NEW(Barrier_new, BarrierObject)

static int Barrier_init(BarrierObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"parties", "action", "timeout", "shared", "offset", NULL};
    long long parties;
    PyObject *action = Py_None, *timeout = Py_None, *shared = NULL, *offset = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "L|OO$OO:Barrier", kwlist, &parties, &action,
                                     &timeout, &shared, &offset))
        return -1;
    if (init_once(self->timeout != NULL, (PyObject *)self) < 0) return -1; /* set by init */
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
    if (placement_place((ShareableObject *)self, shared, offset, sizeof(struct barrier_state)) < 0)
        return -1;
    sqf_barrier_init(&self->st->b, (unsigned)parties, SQF_FLAGS_OF(self));
    Py_XSETREF(self->action, action == Py_None ? NULL : Py_NewRef(action));
    Py_XSETREF(self->timeout, Py_NewRef(timeout));
    self->runner = 0;
    self->st->resetting = 0;
    sqf_event_init(&self->st->reset_done, SQF_FLAGS_OF(self));
    sqf_event_set(&self->st->reset_done);
    placement_done((ShareableObject *)self, MAGIC_BARRIER);
    self->initialised = 1;
    return 0;
}

/* A shared barrier's process-local part, for its pickle: (action, timeout),
 * each process's own. */
PyObject *barrier_extras(PyObject *self)
{
    BarrierObject *b = (BarrierObject *)self;
    if (!b->timeout) return raise_errno(EINVAL, "Barrier not initialised");
    return Py_BuildValue("(OO)", b->action ? b->action : Py_None, b->timeout);
}

int barrier_attached(PyObject *self, PyObject *extras)
{
    BarrierObject *b = (BarrierObject *)self;
    PyObject *action, *timeout;
    sqf_deadline unused;
    if (!PyArg_ParseTuple(extras, "OO:attach", &action, &timeout)) return -1;
    if (action != Py_None && !PyCallable_Check(action)) {
        PyErr_SetString(PyExc_TypeError, "action must be callable or None");
        return -1;
    }
    if (deadline_of(timeout, &unused) < 0) return -1;
    Py_XSETREF(b->action, action == Py_None ? NULL : Py_NewRef(action));
    Py_XSETREF(b->timeout, Py_NewRef(timeout));
    b->runner = 0;
    return 0;
}

/* The action may refer back to the barrier (a bound method of an object
 * holding it): the collector sees the references.  Nothing waits on a
 * barrier that is garbage (a wait holds a reference); a cleared barrier
 * reads as not initialised. */
static int Barrier_traverse(BarrierObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->action);
    Py_VISIT(self->timeout);
    return 0;
}

static int Barrier_clear(BarrierObject *self)
{
    Py_CLEAR(self->action);
    Py_CLEAR(self->timeout);
    return 0;
}

static void Barrier_dealloc(BarrierObject *self)
{
    PyObject_GC_UnTrack(self);
    if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
    Py_XDECREF(self->action);
    Py_XDECREF(self->timeout);
    placement_release((ShareableObject *)self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The completion: runs the action in the last arriver's thread, which holds
 * the GIL (every step runs with it).  An action that raises breaks the
 * barrier before the phase is released. */
void barrier_action(void *arg)
{
    struct barrier_call *call = arg;
    BarrierObject *self = call->self;
    if (!self->action) return; /* cleared by the collector (Barrier_clear) */
    self->runner = PyThread_get_thread_ident();
    PyObject *r = PyObject_CallNoArgs(self->action);
    self->runner = 0;
    if (r) {
        Py_DECREF(r);
        return;
    }
    call->raised = 1;
    sqf_barrier_abort(&self->st->b);
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
    int large = deadline_of(timeout == Py_None ? self->timeout : timeout, &op.deadline);
    if (large < 0) return NULL;
    /* A greenlet under a hub arrives in its hub (which waits out a reset
     * too).  No try first: an arrival is no try. */
    PyObject *v;
    if (green_wait(AK_BARRIER, (PyObject *)self, op.deadline, &v)) return v;
    int raised;
    while (
        BARRIER_RESETTING(self)) { /* arrivals wait for the waiters that reset() broke to leave */
        struct sqf_waitop rop = sqf_op_blocking(SQF_FOREVER, NULL);
        rop.u.event.e = &self->st->reset_done;
        run_wait(&rop, sqf_event_wait_step_, &raised);
        if (raised) return NULL;
    }
    struct barrier_call call = {self, 0};
    unsigned index = 0;
    op.u.barrier.b = &self->st->b;
    op.u.barrier.completion = self->action ? barrier_action : NULL;
    op.u.barrier.arg = &call;
    op.u.barrier.index = &index;
    int r = run_wait(&op, sqf_barrier_wait_step_, &raised);
    if (raised || call.raised) return NULL;   /* a signal handler's or the action's exception */
    if (too_large(large, r) < 0) return NULL; /* it broke the barrier, as threading's */
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
    if (BARRIER_RESETTING(self)) Py_RETURN_NONE;              /* another thread's reset does it */
    if (sqf_barrier_reset(&self->st->b) == 0) Py_RETURN_NONE; /* nobody inside */
    __atomic_store_n(&self->st->resetting, 1, __ATOMIC_RELAXED);
    sqf_event_clear(&self->st->reset_done);
    sqf_barrier_abort(&self->st->b); /* every waiter leaves with BrokenBarrierError */
    while (sqf_barrier_reset(&self->st->b) == EBUSY) {
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
    __atomic_store_n(&self->st->resetting, 0, __ATOMIC_RELAXED);
    sqf_event_set(&self->st->reset_done);
    Py_RETURN_NONE;
}

static PyObject *Barrier_abort(BarrierObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->timeout) return raise_errno(EINVAL, "Barrier not initialised");
    sqf_barrier_abort(&self->st->b);
    Py_RETURN_NONE;
}

static PyObject *Barrier_parties(BarrierObject *self, void *closure)
{
    (void)closure;
    unsigned parties = 0;
    sqf_barrier_state(&self->st->b, &parties, NULL);
    return PyLong_FromUnsignedLong(parties);
}

static PyObject *Barrier_n_waiting(BarrierObject *self, void *closure)
{
    (void)closure;
    unsigned arrived = 0;
    sqf_barrier_state(&self->st->b, NULL, &arrived);
    return PyLong_FromUnsignedLong(arrived);
}

static PyObject *Barrier_broken(BarrierObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(sqf_barrier_state(&self->st->b, NULL, NULL) == EPIPE);
}

/* threading's forms: waiters=k/n, or broken. */
static PyObject *Barrier_repr(BarrierObject *self)
{
    PyObject *label = class_label((PyObject *)self);
    if (!label) return NULL;
    unsigned parties = 0, arrived = 0;
    PyObject *r =
        sqf_barrier_state(&self->st->b, &parties, &arrived) == EPIPE
            ? PyUnicode_FromFormat("<%U at %p: broken>", label, self)
            : PyUnicode_FromFormat("<%U at %p: waiters=%u/%u>", label, self, arrived, parties);
    Py_DECREF(label);
    return r;
}

static PyMethodDef Barrier_methods[] = {
    {"wait", (PyCFunction)(void (*)(void))Barrier_wait, METH_VARARGS | METH_KEYWORDS,
     "wait(timeout=None) -> int\n\nArrive and sleep until all parties have arrived; return "
     "this arrival's index (0 .. parties-1; the last runs the action). A time-out (the "
     "Barrier's default timeout if None) breaks the barrier; BrokenBarrierError if it is "
     "or becomes broken. Any other stop breaks it too, unlike threading's, which withdraws "
     "the arrival: a signal handler's exception (KeyboardInterrupt) and OverflowError for "
     "a timeout past TIMEOUT_MAX leave the barrier broken (a stopped party breaks it, as "
     "the C library's barrier and a cancelled task's arrival do)."},
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

PyTypeObject BarrierType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._squarefree.Barrier",
    .tp_basicsize = sizeof(BarrierObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)Barrier_traverse,
    .tp_clear = (inquiry)Barrier_clear,
    .tp_doc = "Barrier(parties, action=None, timeout=None, *, shared=None, offset=None)\n\nA "
              "cyclic barrier, as "
              "threading.Barrier: each phase waits for `parties` threads, the last to arrive "
              "runs action() and releases all of them with one system call.",
    .tp_weaklistoffset = offsetof(BarrierObject, weakrefs),
    .tp_repr = (reprfunc)Barrier_repr,
    .tp_new = Barrier_new,
    .tp_init = (initproc)Barrier_init,
    .tp_dealloc = (destructor)Barrier_dealloc,
    .tp_methods = Barrier_methods,
    .tp_getset = Barrier_getset,
};
