/* level.c: Event, Latch and CountdownEvent, the level-triggered waits:
 * each sleeps until a condition holds, and one call wakes every waiter. */
#include "module.h"

SHAREABLE_NEW(Event_new, EventObject)

/* A level wait taking (timeout=None): parse it, then wait with step on op
 * (its part of the union filled) unless `ready` (the level holds: the
 * wait's first step ends it at once).  A greenlet under a hub waits in
 * its hub (green.c).  The wait's value, made by value_of from the step's
 * result (the hub's wait makes the same), or NULL raised (a timeout past
 * TIMEOUT_MAX: OverflowError if the wait would have slept). */
static PyObject *level_wait(PyObject *self, PyObject *args, PyObject *kw, struct sqf_waitop *op,
                            sqf_step_fn step, int kind, int ready, PyObject *(*value_of)(int))
{
    static char *kwlist[] = {"timeout", NULL};
    PyObject *timeout = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:wait", kwlist, &timeout)) return NULL;
    int large = deadline_of(timeout, &op->deadline);
    if (large < 0) return NULL;
    PyObject *v;
    int g = ready ? 0 : green_wait(kind, self, op->deadline, &v);
    if (g) return v;
    int raised, r = run_wait(op, step, &raised);
    if (raised || too_large(large, r) < 0) return NULL;
    return value_of(r);
}

static PyObject *event_value(int r)
{
    return bool_result(r, "Event.wait failed");
}

static int Event_init(EventObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"shared", "offset", NULL};
    PyObject *shared = NULL, *offset = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OO:Event", kwlist, &shared, &offset)) return -1;
    if (init_once(self->initialised, (PyObject *)self) < 0) return -1;
    if (placement_place((ShareableObject *)self, shared, offset, sizeof(struct event_state)) < 0)
        return -1;
    sqf_event_init(&self->st->ev, SQF_FLAGS_OF(self));
    placement_done((ShareableObject *)self, MAGIC_EVENT);
    self->initialised = 1;
    return 0;
}

static PyObject *Event_is_set(EventObject *self, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(sqf_event_is_set(&self->st->ev));
}

static PyObject *Event_set(EventObject *self, PyObject *unused)
{
    (void)unused;
    sqf_event_set(&self->st->ev);
    Py_RETURN_NONE;
}

static PyObject *Event_clear(EventObject *self, PyObject *unused)
{
    (void)unused;
    sqf_event_clear(&self->st->ev);
    Py_RETURN_NONE;
}

static PyObject *Event_wait(EventObject *self, PyObject *args, PyObject *kw)
{
    struct sqf_waitop op = sqf_op_blocking(SQF_FOREVER, NULL);
    op.u.event.e = &self->st->ev;
    return level_wait((PyObject *)self, args, kw, &op, sqf_event_wait_step_, AK_EVENT,
                      sqf_event_is_set(&self->st->ev), event_value);
}

/* threading's deprecated alias, with its warning. */
static PyObject *Event_isSet(EventObject *self, PyObject *unused)
{
    if (PyErr_WarnEx(PyExc_DeprecationWarning, "isSet() is deprecated, use is_set() instead", 1) <
        0)
        return NULL;
    return Event_is_set(self, unused);
}

static PyObject *Event_repr(EventObject *self)
{
    PyObject *label = class_label((PyObject *)self);
    if (!label) return NULL;
    PyObject *r = PyUnicode_FromFormat("<%U at %p: %s>", label, self,
                                       sqf_event_is_set(&self->st->ev) ? "set" : "unset");
    Py_DECREF(label);
    return r;
}

static PyMethodDef Event_methods[] = {
    {"is_set", (PyCFunction)Event_is_set, METH_NOARGS, "Return True if the flag is set."},
    {"isSet", (PyCFunction)Event_isSet, METH_NOARGS,
     "Deprecated alias of is_set() (DeprecationWarning), as in threading."},
    {"set", (PyCFunction)Event_set, METH_NOARGS,
     "Set the flag and wake every waiter (one system call, whatever their number)."},
    {"clear", (PyCFunction)Event_clear, METH_NOARGS, "Reset the flag."},
    {"wait", (PyCFunction)(void (*)(void))Event_wait, METH_VARARGS | METH_KEYWORDS,
     "wait(timeout=None) -> bool\n\nBlock until the flag is set or the timeout (seconds) "
     "passes; return the flag's state: True unless it timed out."},
    {NULL, NULL, 0, NULL}};

PyTypeObject EventType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._squarefree.Event",
    .tp_basicsize = sizeof(EventObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Event(*, shared=None, offset=None)\n\nA flag that threads wait for, as "
              "threading.Event: set() wakes every "
              "waiter with one system call, and the event can be cleared and reused.",
    .tp_weaklistoffset = offsetof(EventObject, weakrefs),
    .tp_dealloc = shareable_dealloc,
    .tp_repr = (reprfunc)Event_repr,
    .tp_new = Event_new,
    .tp_init = (initproc)Event_init,
    .tp_methods = Event_methods,
};

/* --- Latch ------------------------------------------------------------------- */

SHAREABLE_NEW(Latch_new, LatchObject)

static int Latch_init(LatchObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"count", "shared", "offset", NULL};
    long long count;
    PyObject *shared = NULL, *offset = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "L|$OO:Latch", kwlist, &count, &shared, &offset))
        return -1;
    if (init_once(self->initialised, (PyObject *)self) < 0) return -1;
    if (count < 0 || count > SQF_LATCH_MAX) {
        PyErr_Format(PyExc_ValueError, "count must be between 0 and %u", SQF_LATCH_MAX);
        return -1;
    }
    if (placement_place((ShareableObject *)self, shared, offset, sizeof(struct latch_state)) < 0)
        return -1;
    sqf_latch_init(&self->st->l, (unsigned)count, SQF_FLAGS_OF(self));
    placement_done((ShareableObject *)self, MAGIC_LATCH);
    self->initialised = 1;
    return 0;
}

PyObject *BrokenLatchError;

PyObject *latch_result(int r)
{
    if (r == EPIPE) {
        PyErr_SetString(BrokenLatchError, "the latch was aborted");
        return NULL;
    }
    return bool_result(r, "Latch.wait failed");
}

static PyObject *Latch_count_down(LatchObject *self, PyObject *args)
{
    PyObject *n_arg = NULL;
    unsigned n;
    if (!PyArg_ParseTuple(args, "|O:count_down", &n_arg)) return NULL;
    if (count_arg(n_arg, SQF_LATCH_MAX, &n, "n") < 0) return NULL;
    int e = sqf_latch_count_down(&self->st->l, n);
    if (e == EPIPE) return latch_result(e);
    if (e) return raise_errno(e, "count_down below zero");
    Py_RETURN_NONE;
}

static PyObject *Latch_wait(LatchObject *self, PyObject *args, PyObject *kw)
{
    struct sqf_waitop op = sqf_op_blocking(SQF_FOREVER, NULL);
    op.u.latch.l = &self->st->l;
    return level_wait((PyObject *)self, args, kw, &op, sqf_latch_wait_step_, AK_LATCH,
                      sqf_latch_try_wait(&self->st->l) != EBUSY, latch_result);
}

static PyObject *Latch_arrive_and_wait(LatchObject *self, PyObject *args)
{
    PyObject *n_arg = NULL;
    unsigned n;
    if (!PyArg_ParseTuple(args, "|O:arrive_and_wait", &n_arg)) return NULL;
    if (count_arg(n_arg, SQF_LATCH_MAX, &n, "n") < 0) return NULL;
    int e = sqf_latch_count_down(&self->st->l, n);
    if (e && e != EPIPE) return raise_errno(e, "count_down below zero");
    if (e == EPIPE) return latch_result(e);
    struct sqf_waitop op = sqf_op_blocking(SQF_FOREVER, NULL);
    op.u.latch.l = &self->st->l;
    PyObject *v;
    int g = sqf_latch_try_wait(&self->st->l) == EBUSY
                ? green_wait(AK_LATCH, (PyObject *)self, SQF_FOREVER, &v)
                : 0;
    if (g) { /* True, or raised */
        Py_XDECREF(v);
        if (g < 0 || !v) return NULL;
        Py_RETURN_NONE;
    }
    int raised, r = run_wait(&op, sqf_latch_wait_step_, &raised);
    if (raised) return NULL;
    if (r == 0) Py_RETURN_NONE;
    return latch_result(r);
}

static PyObject *Latch_abort(LatchObject *self, PyObject *unused)
{
    (void)unused;
    int e = sqf_latch_abort(&self->st->l);
    if (e) return raise_errno(e, "abort failed");
    Py_RETURN_NONE;
}

static PyMethodDef Latch_methods[] = {
    {"count_down", (PyCFunction)Latch_count_down, METH_VARARGS,
     "count_down(n=1)\n\nDecrease the count by n; the call that brings it to zero opens the "
     "latch and wakes every waiter. ValueError below zero; BrokenLatchError once aborted."},
    {"wait", (PyCFunction)(void (*)(void))Latch_wait, METH_VARARGS | METH_KEYWORDS,
     "wait(timeout=None) -> bool\n\nBlock until the count reaches zero: True, or False if the "
     "timeout (seconds) passed first. BrokenLatchError if the latch is aborted."},
    {"arrive_and_wait", (PyCFunction)Latch_arrive_and_wait, METH_VARARGS,
     "arrive_and_wait(n=1)\n\ncount_down(n), then wait()."},
    {"abort", (PyCFunction)Latch_abort, METH_NOARGS,
     "Break the latch: every waiter, now and later, gets BrokenLatchError."},
    {NULL, NULL, 0, NULL}};

PyTypeObject LatchType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._squarefree.Latch",
    .tp_basicsize = sizeof(LatchObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Latch(count, *, shared=None, offset=None)\n\nA single-use countdown: wait() blocks "
              "until count_down() has "
              "brought the count to zero, then every waiter is woken with one system call. "
              "The seed's cure for starting n threads.",
    .tp_weaklistoffset = offsetof(LatchObject, weakrefs),
    .tp_dealloc = shareable_dealloc,
    .tp_new = Latch_new,
    .tp_init = (initproc)Latch_init,
    .tp_methods = Latch_methods,
};

/* --- CountdownEvent ------------------------------------------------------------ */

SHAREABLE_NEW(Countdown_new, CountdownObject)

static int Countdown_init(CountdownObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"value", "shared", "offset", NULL};
    long long value = 0;
    PyObject *shared = NULL, *offset = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|L$OO:CountdownEvent", kwlist, &value, &shared,
                                     &offset))
        return -1;
    if (init_once(self->initialised, (PyObject *)self) < 0) return -1;
    if (value < 0 || value > SQF_COUNTDOWN_MAX) {
        PyErr_Format(PyExc_ValueError, "value must be between 0 and %u", SQF_COUNTDOWN_MAX);
        return -1;
    }
    if (placement_place((ShareableObject *)self, shared, offset, sizeof(struct countdown_state)) <
        0)
        return -1;
    sqf_countdown_init(&self->st->c, (unsigned)value, SQF_FLAGS_OF(self));
    placement_done((ShareableObject *)self, MAGIC_COUNTDOWN);
    self->initialised = 1;
    return 0;
}

static PyObject *Countdown_up(CountdownObject *self, PyObject *args)
{
    PyObject *n_arg = NULL;
    unsigned n;
    if (!PyArg_ParseTuple(args, "|O:up", &n_arg)) return NULL;
    if (count_arg(n_arg, SQF_COUNTDOWN_MAX, &n, "n") < 0) return NULL;
    int e = sqf_countdown_up(&self->st->c, n);
    if (e) return raise_errno(e, "up would overflow the count");
    Py_RETURN_NONE;
}

static PyObject *Countdown_down(CountdownObject *self, PyObject *args)
{
    PyObject *n_arg = NULL;
    unsigned n;
    if (!PyArg_ParseTuple(args, "|O:down", &n_arg)) return NULL;
    if (count_arg(n_arg, SQF_COUNTDOWN_MAX, &n, "n") < 0) return NULL;
    int e = sqf_countdown_down_n(&self->st->c, n);
    if (e) return raise_errno(e, "down below zero");
    Py_RETURN_NONE;
}

static PyObject *countdown_value(int r)
{
    return bool_result(r, "CountdownEvent.wait failed");
}

static PyObject *Countdown_wait(CountdownObject *self, PyObject *args, PyObject *kw)
{
    struct sqf_waitop op = sqf_op_blocking(SQF_FOREVER, NULL);
    op.u.countdown.c = &self->st->c;
    unsigned v = 1;
    sqf_countdown_value(&self->st->c, &v);
    return level_wait((PyObject *)self, args, kw, &op, sqf_countdown_wait_step_, AK_COUNTDOWN,
                      v == 0, countdown_value);
}

static PyObject *Countdown_value(CountdownObject *self, void *closure)
{
    (void)closure;
    unsigned v = 0;
    sqf_countdown_value(&self->st->c, &v);
    return PyLong_FromUnsignedLong(v);
}

static PyMethodDef Countdown_methods[] = {
    {"up", (PyCFunction)Countdown_up, METH_VARARGS, "up(n=1)\n\nIncrease the count by n."},
    {"down", (PyCFunction)Countdown_down, METH_VARARGS,
     "down(n=1)\n\nDecrease the count by n; reaching zero wakes every waiter. ValueError "
     "below zero."},
    {"wait", (PyCFunction)(void (*)(void))Countdown_wait, METH_VARARGS | METH_KEYWORDS,
     "wait(timeout=None) -> bool\n\nBlock until the count is zero: True, or False if the "
     "timeout (seconds) passed first."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Countdown_getset[] = {
    {"value", (getter)Countdown_value, NULL, "The current count.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject CountdownType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._squarefree.CountdownEvent",
    .tp_basicsize = sizeof(CountdownObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "CountdownEvent(value=0, *, shared=None, offset=None)\n\nA reusable count: up() and "
              "down() move it, and wait() "
              "blocks until it is zero. The seed's cure for serialising n threads whose number "
              "is not known in advance.",
    .tp_weaklistoffset = offsetof(CountdownObject, weakrefs),
    .tp_dealloc = shareable_dealloc,
    .tp_new = Countdown_new,
    .tp_init = (initproc)Countdown_init,
    .tp_methods = Countdown_methods,
    .tp_getset = Countdown_getset,
};
