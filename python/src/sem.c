/* sem.c: Semaphore and BoundedSemaphore, over sqf_sem. */
#include "module.h"

SHAREABLE_NEW(Sem_new, SemObject)

static int sem_init_common(SemObject *self, PyObject *args, PyObject *kw, int bounded)
{
    static char *kwlist[] = {"value", "shared", "offset", NULL};
    long long value = 1;
    PyObject *shared = NULL, *offset = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw,
                                     bounded ? "|L$OO:BoundedSemaphore" : "|L$OO:Semaphore", kwlist,
                                     &value, &shared, &offset))
        return -1;
    if (init_once(self->initialised, (PyObject *)self) < 0) return -1;
    if (value < 0) {
        PyErr_SetString(PyExc_ValueError, "semaphore initial value must be >= 0");
        return -1;
    }
    if (value > SQF_SEM_VALUE_MAX) {
        PyErr_Format(PyExc_ValueError, "semaphore initial value must be <= %u", SQF_SEM_VALUE_MAX);
        return -1;
    }
    if (placement_place((ShareableObject *)self, shared, offset, sizeof(struct sem_state)) < 0)
        return -1;
    self->st->bounded = bounded;
    self->st->bound = (unsigned)value;
    /* The library's max 0 means its own bound: a BoundedSemaphore(0), which
     * no release may exceed, is checked in release instead. */
    int e = sqf_sem_init(&self->st->s, (unsigned)value, bounded && value > 0 ? (unsigned)value : 0,
                         SQF_FLAGS_OF(self));
    if (e) {
        placement_release((ShareableObject *)self);
        raise_errno(e, "semaphore init failed");
        return -1;
    }
    placement_done((ShareableObject *)self, bounded ? MAGIC_BSEM : MAGIC_SEM);
    self->initialised = 1;
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
    if (!blocking) return PyBool_FromLong(sqf_sem_tryacquire(&self->st->s) == 0);
    struct sqf_waitop op = sqf_op_blocking(SQF_FOREVER, NULL);
    int large = deadline_of(timeout, &op.deadline);
    if (large < 0) return NULL;
    if (sqf_sem_tryacquire(&self->st->s) == 0) Py_RETURN_TRUE;
    PyObject *v;
    if (green_wait(AK_SEM, (PyObject *)self, op.deadline, &v)) return v; /* a greenlet's */
    op.u.sem.s = &self->st->s;
    int raised, r = run_wait(&op, sqf_sem_acquire_step_, &raised);
    if (raised) {
        if (r == 0) sqf_sem_release(&self->st->s, 1); /* taken as the signal came: give it back */
        return NULL;
    }
    return bool_result(too_large(large, r), "acquire failed");
}

static PyObject *sem_release_n(SemObject *self, unsigned n)
{
    int e =
        self->st->bounded && self->st->bound == 0 ? EOVERFLOW : sqf_sem_release(&self->st->s, n);
    if (e == EOVERFLOW) {
        PyErr_SetString(PyExc_ValueError, self->st->bounded ? "Semaphore released too many times"
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
    sqf_sem_getvalue(&self->st->s, &v);
    return PyLong_FromUnsignedLong(v);
}

/* threading's forms: value=v, and v/initial for a BoundedSemaphore. */
static PyObject *Sem_repr(SemObject *self)
{
    PyObject *label = class_label((PyObject *)self);
    if (!label) return NULL;
    unsigned v = 0;
    sqf_sem_getvalue(&self->st->s, &v);
    PyObject *r = self->st->bounded ? PyUnicode_FromFormat("<%U at %p: value=%u/%u>", label, self,
                                                           v, self->st->bound)
                                    : PyUnicode_FromFormat("<%U at %p: value=%u>", label, self, v);
    Py_DECREF(label);
    return r;
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

PyTypeObject SemType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._squarefree.Semaphore",
    .tp_basicsize = sizeof(SemObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Semaphore(value=1, *, shared=None, offset=None)\n\nA counting semaphore, as "
              "threading.Semaphore; release(n) "
              "wakes up to n waiters with one system call.",
    .tp_weaklistoffset = offsetof(SemObject, weakrefs),
    .tp_dealloc = shareable_dealloc,
    .tp_repr = (reprfunc)Sem_repr,
    .tp_new = Sem_new,
    .tp_init = (initproc)Sem_init,
    .tp_methods = Sem_methods,
    .tp_getset = Sem_getset,
};

PyTypeObject BSemType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._squarefree.BoundedSemaphore",
    .tp_basicsize = sizeof(SemObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "BoundedSemaphore(value=1, *, shared=None, offset=None)\n\nA semaphore whose value "
              "may not exceed its initial "
              "value: a release beyond it raises ValueError, as threading.BoundedSemaphore.",
    .tp_base = &SemType, /* as threading's: a BoundedSemaphore is a Semaphore */
    .tp_new = Sem_new,
    .tp_init = (initproc)BSem_init,
};
