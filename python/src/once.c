/* once.c: Once, over sqf_once. */
#include "module.h"

/* run(fn) calls fn() exactly once however many threads ask; callers that
 * arrive while it runs sleep (the GIL released) and are all woken by one
 * system call when it ends.  If fn raises, the exception propagates to the
 * caller that ran it and the once goes back to "not run": a later caller
 * (or one asleep) runs fn again. */
/* In a greenlet under a hub, a caller that finds fn running elsewhere does
 * not sleep on the once (its runner may be a greenlet of the same hub,
 * which would then never run): it waits in its hub for `idle`, which is
 * clear while a run is under way, then asks again (green.c). */
typedef struct {
    PyObject_HEAD sqf_once once;
    unsigned long runner; /* who runs fn (lock_owner_now()), or 0 (under the GIL) */
    sqf_event idle;       /* set while no run is under way */
    PyObject *weakrefs;
    int initialised;
} OnceObject;

sqf_event *once_idle(PyObject *once)
{
    return &((OnceObject *)once)->idle;
}

static int Once_init(OnceObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, ":Once", kwlist)) return -1;
    if (init_once(self->initialised, (PyObject *)self) < 0) return -1;
    sqf_once_init(&self->once, SQF_PRIVATE);
    sqf_event_init(&self->idle, SQF_PRIVATE);
    sqf_event_set(&self->idle);
    self->runner = 0;
    self->initialised = 1;
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
    OnceObject *self = call->self;
    self->runner = lock_owner_now();
    sqf_event_clear(&self->idle);
    PyObject *r = PyObject_CallNoArgs(call->fn);
    self->runner = 0;
    sqf_event_set(&self->idle); /* greenlets waiting for the run ask again */
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
    if (self->runner && self->runner == lock_owner_now()) {
        PyErr_SetString(PyExc_RuntimeError, "Once.run called again from its own fn");
        return NULL;
    }
    struct once_call call = {self, fn, 0};
    struct sqf_waitop op = sqf_op_blocking(SQF_FOREVER, NULL);
    op.u.once.o = &self->once;
    op.u.once.fn = once_fn;
    op.u.once.arg = &call;
    int raised, r;
    for (;;) { /* a try (it runs fn if nobody does), then a greenlet's wait */
        struct sqf_waitop try = op;
        try.deadline = 0;
        r = run_wait(&try, sqf_once_run_step_, &raised);
        if (raised || r != ETIMEDOUT) break; /* ETIMEDOUT: another runs fn */
        PyObject *v;
        int g = green_wait(AK_ONCE, (PyObject *)self, SQF_FOREVER, &v);
        if (g < 0) return NULL;
        if (g == 0) { /* a thread: sleep on the once */
            r = run_wait(&op, sqf_once_run_step_, &raised);
            break;
        }
        Py_DECREF(v);
    }
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
     "ran it. Callers that arrive meanwhile wait (a greenlet under a gevent or eventlet hub "
     "waits in its hub). If fn raises, the exception reaches this caller and a later call "
     "runs fn again."},
    {"done", (PyCFunction)Once_done, METH_NOARGS, "Whether fn has run to the end."},
    {NULL, NULL, 0, NULL}};

PyTypeObject OnceType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree.Once",
    .tp_basicsize = sizeof(OnceObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Once()\n\nRun a function exactly once, however many threads ask (lazy "
              "initialisation); a failure (an exception) lets a later caller retry.",
    .tp_weaklistoffset = offsetof(OnceObject, weakrefs),
    .tp_dealloc = plain_dealloc,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Once_init,
    .tp_methods = Once_methods,
};
