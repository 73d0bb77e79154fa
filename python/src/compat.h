/* compat.h: the C API calls the extension makes that are newer than its
 * oldest supported Python (3.8), defined for the versions that lack them,
 * so that every file writes today's API.  Each is defined only below the
 * version that added it, over the older public API, with the same
 * reference semantics.  module.h includes this right after Python.h.
 */
#ifndef SQFPY_COMPAT_H
#define SQFPY_COMPAT_H

#include <Python.h>

/* 3.9: the vectorcall helpers' public names; and the module's init
 * function exported however the extension sets symbol visibility (it is
 * built with hidden visibility; 3.8's PyMODINIT_FUNC does not export). */
#if PY_VERSION_HEX < 0x03090000
#undef PyMODINIT_FUNC
#define PyMODINIT_FUNC __attribute__((visibility("default"))) PyObject *

static inline PyObject *PyObject_CallNoArgs(PyObject *func)
{
    return PyObject_CallObject(func, NULL);
}

static inline PyObject *PyObject_CallOneArg(PyObject *func, PyObject *arg)
{
    return PyObject_CallFunctionObjArgs(func, arg, NULL);
}

static inline PyObject *PyObject_CallMethodNoArgs(PyObject *self, PyObject *name)
{
    return PyObject_CallMethodObjArgs(self, name, NULL);
}

static inline PyObject *PyObject_CallMethodOneArg(PyObject *self, PyObject *name, PyObject *arg)
{
    return PyObject_CallMethodObjArgs(self, name, arg, NULL);
}
#endif

/* 3.10: new references as expressions, and adding to a module without
 * stealing.  Py_NewRef takes any object pointer, as CPython's macro does. */
#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *sqfpy_new_ref(PyObject *o)
{
    Py_INCREF(o);
    return o;
}

static inline PyObject *sqfpy_xnew_ref(PyObject *o)
{
    Py_XINCREF(o);
    return o;
}

#define Py_NewRef(o)  sqfpy_new_ref((PyObject *)(o))
#define Py_XNewRef(o) sqfpy_xnew_ref((PyObject *)(o))

/* PyModule_AddObject steals value only when it succeeds. */
static inline int PyModule_AddObjectRef(PyObject *mod, const char *name, PyObject *value)
{
    if (!value) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_SystemError, "PyModule_AddObjectRef() must be called with an "
                                               "exception raised if value is NULL");
        return -1;
    }
    Py_INCREF(value);
    if (PyModule_AddObject(mod, name, value) < 0) {
        Py_DECREF(value);
        return -1;
    }
    return 0;
}
#endif

#endif
