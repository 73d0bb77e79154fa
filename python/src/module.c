/* module.c: the squarefree extension module (CPython C API): its types and
 * exceptions, put together at import.  module.h says how the files divide
 * the work. */
#include "module.h"

/* tp_dealloc of a type whose objects own no references. */
void plain_dealloc(PyObject *self)
{
    if (Py_TYPE(self)->tp_weaklistoffset) PyObject_ClearWeakRefs(self);
    Py_TYPE(self)->tp_free(self);
}

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "squarefree._squarefree",
    .m_doc = "squarefree's primitives for CPython (see the squarefree package).", .m_size = -1,
    .m_methods = aio_functions};

PyMODINIT_FUNC PyInit__squarefree(void)
{
    PyTypeObject *types[] = {
        &EventType,  &LatchType,   &CountdownType, &SemType,      &BSemType,      &LockType,
        &RLockType,  &CondType,    &OnceType,      &BarrierType,  &DriverType,    &AOpType,
        &BinSemType, &BBinSemType, &LimiterType,   &RLimiterType, &RobustLockType};
    const char *names[] = {"Event",
                           "Latch",
                           "CountdownEvent",
                           "Semaphore",
                           "BoundedSemaphore",
                           "Lock",
                           "RLock",
                           "_Condition",
                           "Once",
                           "Barrier",
                           "_LoopDriver",
                           "_LoopOp",
                           "BinarySemaphore",
                           "BoundedBinarySemaphore",
                           "CapacityLimiter",
                           "RCapacityLimiter",
                           "RobustLock"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (PyType_Ready(types[i]) < 0) return NULL;
    if (blocking_init() < 0 || green_init() < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    BrokenLatchError = PyErr_NewExceptionWithDoc(
        "squarefree.BrokenLatchError", "A latch was aborted while (or before) waiting on it.",
        PyExc_RuntimeError, NULL);
    if (!BrokenLatchError || PyModule_AddObjectRef(m, "BrokenLatchError", BrokenLatchError) < 0)
        goto fail;
    OwnerDiedError = PyErr_NewExceptionWithDoc(
        "squarefree.OwnerDiedError",
        "A RobustLock's holder died holding it.  The caller holds the lock now: repair the "
        "data it protects, then call lock.consistent() (a release without it makes the lock "
        "unusable for good).",
        PyExc_RuntimeError, NULL);
    if (!OwnerDiedError || PyModule_AddObjectRef(m, "OwnerDiedError", OwnerDiedError) < 0)
        goto fail;
    LockNotRecoverableError = PyErr_NewExceptionWithDoc(
        "squarefree.LockNotRecoverableError",
        "A RobustLock is unusable for good: a holder that got OwnerDiedError released it "
        "without calling consistent().",
        PyExc_RuntimeError, NULL);
    if (!LockNotRecoverableError ||
        PyModule_AddObjectRef(m, "LockNotRecoverableError", LockNotRecoverableError) < 0)
        goto fail;
    if (limiter_init(m) < 0) goto fail;
    Again = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
    if (!Again || PyModule_AddObjectRef(m, "_AGAIN", Again) < 0) goto fail;
    PyObject *threading = PyImport_ImportModule("threading");
    if (!threading) goto fail;
    BrokenBarrierError = PyObject_GetAttrString(threading, "BrokenBarrierError");
    PyObject *max = BrokenBarrierError ? PyObject_GetAttrString(threading, "TIMEOUT_MAX") : NULL;
    Py_DECREF(threading);
    timeout_max = max ? PyFloat_AsDouble(max) : -1.0;
    Py_XDECREF(max);
    if (!max || PyErr_Occurred()) goto fail;
    if (!BrokenBarrierError ||
        PyModule_AddObjectRef(m, "BrokenBarrierError", BrokenBarrierError) < 0)
        goto fail;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (PyModule_AddObjectRef(m, names[i], (PyObject *)types[i]) < 0) goto fail;
    if (queue_init(m) < 0) goto fail;
    if (shared_init(m) < 0) goto fail;
    if (aio_init(m) < 0) goto fail;
    if (trio_init(m) < 0) goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
