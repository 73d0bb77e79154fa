/* convert.c: arguments and results, between Python's values and the library's. */
#include "module.h"

#include <math.h>
#include <string.h>

/* A timeout argument (None: for ever) as a deadline; -1 with ValueError or
 * TypeError set on a bad one. */
int deadline_of(PyObject *timeout, sqf_deadline *out)
{
    if (timeout == NULL || timeout == Py_None) {
        *out = SQF_FOREVER;
        return 0;
    }
    double t = PyFloat_AsDouble(timeout);
    if (t == -1.0 && PyErr_Occurred()) return -1;
    if (isnan(t) || t < 0) {
        PyErr_SetString(PyExc_ValueError, "timeout value must be a non-negative number");
        return -1;
    }
    if (t > 1e9) { /* 30 years: for ever, as far as a caller can tell */
        *out = SQF_FOREVER;
        return 0;
    }
    *out = sqf_after((int64_t)(t * 1e9));
    return 0;
}

/* A wait's result as threading's: True, False on a time-out, or raised. */
PyObject *bool_result(int r, const char *what)
{
    if (r < 0) return NULL;
    if (r == 0) Py_RETURN_TRUE;
    if (r == ETIMEDOUT) Py_RETURN_FALSE;
    return raise_errno(r, what);
}

/* A C error that bad input or misuse can cause, as Python's exception. */
PyObject *raise_errno(int e, const char *what)
{
    if (e == EINVAL || e == EOVERFLOW || e == ERANGE)
        PyErr_Format(PyExc_ValueError, "%s", what);
    else
        PyErr_Format(PyExc_RuntimeError, "%s (%s)", what, strerror(e));
    return NULL;
}

/* __exit__'s result from the release it made: False (exceptions pass). */
PyObject *exit_result(PyObject *released)
{
    if (!released) return NULL;
    Py_DECREF(released);
    Py_RETURN_FALSE;
}

/* n (a count argument, 1 if absent) in 1..max, else ValueError. */
int count_arg(PyObject *arg, unsigned long max, unsigned *out, const char *what)
{
    if (arg == NULL) {
        *out = 1;
        return 0;
    }
    long long v = PyLong_AsLongLong(arg);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < 1) { /* threading's words */
        PyErr_Format(PyExc_ValueError, "%s must be one or more", what);
        return -1;
    }
    if ((unsigned long long)v > max) {
        PyErr_Format(PyExc_ValueError, "%s must be at most %lu", what, max);
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}
