/* green.c: the greenlet seam: a blocking method called in a greenlet that
 * runs under a gevent or eventlet hub waits in the hub, not in the kernel.
 *
 * A thread's wait sleeps in the kernel with the GIL released (blocking.c).
 * In a greenlet that would stop its whole hub, and with it the greenlet
 * that would release what it waits for.  So every blocking method, once
 * its try has failed, asks green_wait; under a hub the wait becomes an op
 * of the hub's _LoopDriver (aio.c: the same wait protocol on the same
 * words, so threads, asyncio tasks and greenlets wait on one object, and a
 * wake-all stays one system call), and the greenlet switches to its hub
 * until the op's callback resumes it.  squarefree/_green.py is the Python
 * half: it finds the hub, gives it its driver, and parks the greenlet.
 *
 * "Runs under a hub": a gevent or eventlet hub exists in the calling OS
 * thread (gevent's get_hub_if_exists(), eventlet's per-thread hub, as
 * aiologic detects its green libraries), and the caller is not the hub's
 * own greenlet (code that runs in the hub, a callback, cannot switch to
 * it: it blocks as a thread).  The thread's main greenlet counts: with a
 * hub it waits in the hub, as gevent's own primitives do.  So monkey-
 * patched or not, greenlets never block their hub, and real OS threads
 * (gevent's threadpool workers, threads an unpatched program starts, which
 * have no hub of their own) keep the thread path.
 *
 * The cost: on the fast path (the try succeeds) nothing; on a thread's
 * slow path two dictionary lookups in sys.modules while neither gevent nor
 * eventlet is imported, else one call into _green.py. */
#include "module.h"

static PyObject *name_gevent, *name_eventlet, *name_green;
static PyObject *py_wait, *py_current; /* _green.wait and _green.current, kept */

/* (module.h) Never raises: a failed lookup means no. */
int green_maybe(void)
{
    PyObject *mods = PyImport_GetModuleDict(); /* borrowed */
    if (!mods) return 0;
    int found = PyDict_GetItemWithError(mods, name_gevent) != NULL ||
                PyDict_GetItemWithError(mods, name_eventlet) != NULL;
    if (!found && PyErr_Occurred()) PyErr_Clear();
    return found;
}

/* _green's functions, imported on first use: 0, or -1 raised. */
static int green_load(void)
{
    if (py_current) return 0;
    PyObject *m = PyImport_Import(name_green);
    if (!m) return -1;
    PyObject *wait = PyObject_GetAttrString(m, "wait");
    PyObject *current = wait ? PyObject_GetAttrString(m, "current") : NULL;
    Py_DECREF(m);
    if (!current) {
        Py_XDECREF(wait);
        return -1;
    }
    py_wait = wait;
    py_current = current;
    return 0;
}

int green_wait(int kind, PyObject *target, sqf_deadline deadline, PyObject **value)
{
    *value = NULL;
    if (!green_maybe()) return 0;
    sqf_deadline now = deadline == SQF_FOREVER ? 0 : sqf_now();
    /* A passed deadline is a try, which the thread's wait makes without
     * sleeping; a cond wait must still take its lock back, which may be
     * held by a greenlet of this hub. */
    if (deadline != SQF_FOREVER && deadline <= now && kind != AK_COND) return 0;
    if (green_load() < 0) return -1;
    PyObject *timeout = deadline == SQF_FOREVER
                            ? Py_NewRef(Py_None)
                            : PyFloat_FromDouble(deadline <= now ? 0.0 : (deadline - now) / 1e9);
    if (!timeout) return -1;
    PyObject *r = PyObject_CallFunction(py_wait, "iOO", kind, target, timeout);
    Py_DECREF(timeout);
    if (!r) return -1;
    if (r == Py_NotImplemented) { /* not under a hub */
        Py_DECREF(r);
        return 0;
    }
    *value = r;
    return 1;
}

int green_truth(PyObject *value)
{
    int t = value == Py_True;
    Py_DECREF(value);
    return t;
}

PyObject *green_current(void)
{
    if (!green_maybe()) return NULL;
    PyObject *type, *exc, *tb;
    PyErr_Fetch(&type, &exc, &tb); /* a caller may be unwinding (__exit__) */
    PyObject *g = green_load() < 0 ? NULL : PyObject_CallNoArgs(py_current);
    if (g == Py_None) Py_CLEAR(g);
    PyErr_Clear(); /* no answer: the thread's rule */
    PyErr_Restore(type, exc, tb);
    return g;
}

int green_init(void)
{
    name_gevent = PyUnicode_InternFromString("gevent");
    name_eventlet = PyUnicode_InternFromString("eventlet");
    name_green = PyUnicode_InternFromString("squarefree._green");
    return name_gevent && name_eventlet && name_green ? 0 : -1;
}
