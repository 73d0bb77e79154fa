/* binsem.c: BinarySemaphore and BoundedBinarySemaphore (aiologic's): a
 * Semaphore whose value is 0 or 1, an sqf_sem with the bound 1.  They are
 * subtypes of Semaphore: acquire, value and a task's wait are Semaphore's;
 * only the release differs.  A release that finds the value at 1 changes
 * nothing: BinarySemaphore stays at 1 (releases that meet merge into one
 * permit), BoundedBinarySemaphore raises ValueError as BoundedSemaphore. */
#include "module.h"

static int BinSem_init(SemObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"value", "shared", "offset", NULL};
    long long value = 1;
    PyObject *shared = NULL, *offset = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|L$OO:BinarySemaphore", kwlist, &value, &shared,
                                     &offset))
        return -1;
    if (init_once(self->initialised, (PyObject *)self) < 0) return -1;
    if (value != 0 && value != 1) {
        PyErr_SetString(PyExc_ValueError, "binary semaphore initial value must be 0 or 1");
        return -1;
    }
    if (placement_place((ShareableObject *)self, shared, offset, sizeof(struct sem_state)) < 0)
        return -1;
    int bounded = PyObject_TypeCheck(self, &BBinSemType);
    self->st->bounded = bounded;
    self->st->bound = 1;
    int e = sqf_sem_init(&self->st->s, (unsigned)value, 1, SQF_FLAGS_OF(self));
    if (e) {
        placement_release((ShareableObject *)self);
        raise_errno(e, "semaphore init failed");
        return -1;
    }
    placement_done((ShareableObject *)self, bounded ? MAGIC_BBINSEM : MAGIC_BINSEM);
    self->initialised = 1;
    return 0;
}

static PyObject *binsem_release(SemObject *self)
{
    int e = sqf_sem_release(&self->st->s, 1);
    if (e == EOVERFLOW && !self->st->bounded) Py_RETURN_NONE; /* at 1 already: stays there */
    if (e == EOVERFLOW) {
        PyErr_SetString(PyExc_ValueError, "Semaphore released too many times");
        return NULL;
    }
    if (e) return raise_errno(e, "release failed");
    Py_RETURN_NONE;
}

static PyObject *BinSem_release(SemObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"n", NULL};
    PyObject *n_arg = NULL;
    unsigned n;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:release", kwlist, &n_arg)) return NULL;
    if (count_arg(n_arg, 1, &n, "n") < 0) return NULL;
    return binsem_release(self);
}

static PyObject *BinSem_exit(SemObject *self, PyObject *args)
{
    (void)args;
    return exit_result(binsem_release(self));
}

static PyMethodDef BinSem_methods[] = {
    {"release", (PyCFunction)(void (*)(void))BinSem_release, METH_VARARGS | METH_KEYWORDS,
     "release(n=1)\n\nMake the value 1, waking one waiter; n may only be 1.  At 1 already: "
     "BinarySemaphore stays at 1, BoundedBinarySemaphore raises ValueError."},
    {"__exit__", (PyCFunction)BinSem_exit, METH_VARARGS, "release()"},
    {NULL, NULL, 0, NULL}};

PyTypeObject BinSemType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._squarefree.BinarySemaphore",
    .tp_basicsize = sizeof(SemObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "BinarySemaphore(value=1, *, shared=None, offset=None)\n\nA semaphore whose value is "
              "0 or 1; a release at 1 "
              "leaves it at 1.",
    .tp_base = &SemType,
    .tp_init = (initproc)BinSem_init,
    .tp_methods = BinSem_methods,
};

PyTypeObject BBinSemType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._squarefree.BoundedBinarySemaphore",
    .tp_basicsize = sizeof(SemObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "BoundedBinarySemaphore(value=1, *, shared=None, offset=None)\n\nA binary semaphore "
              "whose release at 1 raises "
              "ValueError, as BoundedSemaphore's past its bound.",
    .tp_base = &BinSemType,
};
