/* convert.c: arguments and results, between Python's values and the library's. */
#include "module.h"

#include <math.h>
#include <string.h>

double timeout_max;

/* A timeout argument (None: for ever) as a deadline, as threading reads it:
 * a negative one has passed already; 1 (a past deadline) past timeout_max;
 * -1 with ValueError (NaN) or TypeError set on a bad one. */
int deadline_of(PyObject *timeout, sqf_deadline *out)
{
    if (timeout == NULL || timeout == Py_None) {
        *out = SQF_FOREVER;
        return 0;
    }
    double t = PyFloat_AsDouble(timeout);
    if (t == -1.0 && PyErr_Occurred()) return -1;
    if (isnan(t)) {
        PyErr_SetString(PyExc_ValueError, "timeout value must be a number, not NaN");
        return -1;
    }
    if (t > timeout_max) {
        *out = 0; /* long past: a try */
        return 1;
    }
    if (t <= 0) { /* threading's wait(-1) is a try, as wait(0) */
        *out = 0;
        return 0;
    }
    if (t > 1e9) { /* 30 years: for ever, as far as a caller can tell */
        *out = SQF_FOREVER;
        return 0;
    }
    *out = sqf_after((int64_t)(t * 1e9));
    return 0;
}

/* A timed wait's result after deadline_of said `large` (module.h). */
int too_large(int large, int r)
{
    if (large == 1 && r == ETIMEDOUT) {
        PyErr_SetString(PyExc_OverflowError, "timeout value is too large");
        return -1;
    }
    return r;
}

/* "module.qualname" of self's class, as threading's reprs name it. */
PyObject *class_label(PyObject *self)
{
    PyObject *type = (PyObject *)Py_TYPE(self);
    PyObject *mod = PyObject_GetAttrString(type, "__module__");
    if (!mod) return NULL;
    PyObject *qual = PyObject_GetAttrString(type, "__qualname__");
    if (!qual) {
        Py_DECREF(mod);
        return NULL;
    }
    PyObject *label = PyUnicode_FromFormat("%S.%S", mod, qual);
    Py_DECREF(mod);
    Py_DECREF(qual);
    return label;
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

int init_once(int initialised, PyObject *self)
{
    if (!initialised) return 0;
    PyErr_Format(PyExc_RuntimeError, "%s.__init__ called twice", Py_TYPE(self)->tp_name);
    return -1;
}
