/* trio.c: what the C side knows of trio: whether a trio task runs in this
 * thread, and which.
 *
 * The library that runs is detected as sniffio detects it: trio sets
 * sniffio's context variable current_async_library_cvar to "trio" in the
 * context of every task it runs (and anyio on trio runs trio's tasks).  A
 * trio task's waits go to the package's trio driver (squarefree/_trio.py),
 * its RLock levels and its capacity-limiter tokens are its own.  Nothing
 * is imported: sniffio is looked up in sys.modules until it is there
 * (whoever runs trio has imported it), so a program that never imports it
 * pays one dictionary lookup per call, and one that has, one context
 * variable read. */
#include "module.h"

static PyObject *library_cvar; /* sniffio.current_async_library_cvar, once imported */
static PyObject *current_task; /* trio.lowlevel.current_task, once a trio task asked */

/* sniffio's context variable, or NULL while sniffio is not imported (no
 * exception set either way). */
static PyObject *cvar(void)
{
    static PyObject *name;
    if (library_cvar) return library_cvar;
    PyObject *type, *exc, *tb;
    PyErr_Fetch(&type, &exc, &tb);
    if (!name) name = PyUnicode_InternFromString("sniffio");
    PyObject *sniffio = name ? PyImport_GetModule(name) : NULL;
    if (sniffio) {
        PyObject *v = PyObject_GetAttrString(sniffio, "current_async_library_cvar");
        if (v && PyContextVar_CheckExact(v))
            library_cvar = v; /* kept for good, as sniffio keeps it */
        else
            Py_XDECREF(v);
        Py_DECREF(sniffio);
    }
    PyErr_Clear(); /* sniffio absent or odd: no trio */
    PyErr_Restore(type, exc, tb);
    return library_cvar;
}

int trio_running(void)
{
    PyObject *var = cvar(), *value;
    if (!var) return 0;
    if (PyContextVar_Get(var, NULL, &value) < 0) { /* (only on a bad variable) */
        PyErr_Clear();
        return 0;
    }
    int trio =
        value && PyUnicode_Check(value) && PyUnicode_CompareWithASCIIString(value, "trio") == 0;
    Py_XDECREF(value);
    return trio;
}

PyObject *trio_current_task(void)
{
    if (!trio_running()) return NULL;
    PyObject *type, *exc, *tb, *task = NULL;
    PyErr_Fetch(&type, &exc, &tb); /* a caller may be unwinding (__exit__) */
    if (!current_task) {
        PyObject *lowlevel = PyImport_ImportModule("trio.lowlevel"); /* imported by trio */
        if (lowlevel) {
            current_task = PyObject_GetAttrString(lowlevel, "current_task");
            Py_DECREF(lowlevel);
        }
    }
    if (current_task) task = PyObject_CallNoArgs(current_task);
    PyErr_Clear(); /* the variable said trio, but no trio task runs here: none */
    PyErr_Restore(type, exc, tb);
    return task;
}

/* _trio_running(): whether a trio task runs now in this thread. */
static PyObject *py_trio_running(PyObject *unused, PyObject *noargs)
{
    (void)unused;
    (void)noargs;
    return PyBool_FromLong(trio_running());
}

static PyMethodDef trio_functions[] = {
    {"_trio_running", py_trio_running, METH_NOARGS,
     "Whether a trio task runs now in this thread, as sniffio tells (internal)."},
    {NULL, NULL, 0, NULL}};

int trio_init(PyObject *m)
{
    return PyModule_AddFunctions(m, trio_functions);
}
