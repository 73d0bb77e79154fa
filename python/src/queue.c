/* queue.c: _QueueCore, the base of Queue, LifoQueue and PriorityQueue
 * (squarefree/_queue.py): a thread's put and get, whole, and the steps a
 * task's async_put and async_get take around their waits.
 *
 * The items are counted by one Semaphore, the free slots of a bounded
 * queue by another, the unfinished tasks by a CountdownEvent; the storage
 * is the subclass's, behind the _qsize, _put and _get hooks, called as
 * queue.Queue calls them: under `mutex`, which is held for those steps
 * only, never across a wait.  Invariants, between the queue's own
 * operations: the item permits are at most the items stored less those
 * reserved (a getter holds a permit and has yet to take its item); the
 * slot permits less `debt` are at most maxsize less the items stored and
 * reserved by putters.
 *
 * put takes a slot permit (bounded queue), stores the item, counts it
 * unfinished and adds an item permit, which wakes at most the one getter
 * it satisfies with one system call.  get takes an item permit, then the
 * item, then frees a slot.  A thread's put and get are one C call each, so
 * a signal handler that raises (Ctrl-C) either stops the wait, which gives
 * its permit back, or comes after the call: no permit is lost between the
 * wait and the take.  A task waits on the same Semaphores in the loop
 * driver (as Semaphore.async_acquire), which gives a cancelled task's
 * permit back: a permit reserves some item, not a given one, so the item
 * never left its place and a cancelled put has put nothing.
 *
 * Why not the library's sqf_queue: it holds fixed-size items in a bounded
 * ring, while queue.Queue is unbounded by default and organised by the
 * overridable hooks (LifoQueue, PriorityQueue and users' subclasses
 * override them, as CPython's own tests do); and a task's pop would take
 * the item at dispatch, so a task cancelled after that would hold an item
 * that can go back only at the tail, out of order.
 *
 * Shut down (or closed), both Semaphores are flooded with permits: one
 * release each wakes every waiter, of both kinds, with one system call; a
 * woken getter that finds the queue empty, or a woken putter, gives its
 * permit back and raises, so the flood never runs dry. */
#include "module.h"

#include <math.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD SemObject *items;
    SemObject *slots; /* replaced only by a change of maxsize from 0 */
    CountdownObject *unfinished;
    LockObject *mutex;
    PyObject *maxsize_obj; /* maxsize as given (an int or a float) */
    Py_ssize_t maxsize;    /* the items it lets in: <= 0, unbounded */
    Py_ssize_t debt;       /* slots a shrink retires: gets pay them instead of freeing */
    char shutdown;         /* under the mutex */
    char closed;           /* janus's close(): every operation raises RuntimeError */
} QueueObject;

/* A shut-down queue's Semaphores hold at least this many permits: every
 * waiter wakes, and every permit a woken waiter gives back still fits. */
#define FLOOD (1u << 30)

static PyObject *Empty, *Full, *ShutDown, *Stale, *Zero;
static PyObject *str_qsize, *str_put, *str_get, *str_init;

static const char closed_msg[] = "Operation on the closed queue is forbidden"; /* janus's */

static int q_ready(QueueObject *q)
{
    if (q->items) return 0;
    PyErr_SetString(PyExc_RuntimeError, "Queue.__init__() was not called");
    return -1;
}

static int q_lock(QueueObject *q)
{
    if (sqf_mutex_trylock(&q->mutex->st->mu) == 0) return 0;
    PyObject *none = PyTuple_New(0), *r = none ? Lock_acquire(q->mutex, none, NULL) : NULL;
    Py_XDECREF(none);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

static void q_unlock(QueueObject *q)
{
    sqf_mutex_unlock(&q->mutex->st->mu);
}

/* Permits to sem, as many as fit under the bound (none if n <= 0). */
static void sem_add(SemObject *sem, long long n)
{
    unsigned v = 0;
    sqf_sem_getvalue(&sem->st->s, &v);
    if (n > (long long)(SQF_SEM_VALUE_MAX - v)) n = SQF_SEM_VALUE_MAX - v;
    if (n > 0) sqf_sem_release(&sem->st->s, (unsigned)n);
}

/* Wake every waiter of sem with one release, leaving it plenty. */
static void sem_flood(SemObject *sem)
{
    unsigned v = 0;
    sqf_sem_getvalue(&sem->st->s, &v);
    if (v < FLOOD) sqf_sem_release(&sem->st->s, FLOOD - v);
}

/* Take a permit of sem, waiting until deadline if block: 1 taken, 0 not,
 * -1 raised (nothing taken). */
static int sem_take(SemObject *sem, int block, sqf_deadline deadline)
{
    if (sqf_sem_tryacquire(&sem->st->s) == 0) return 1;
    if (!block) return 0;
    PyObject *v;
    int g = green_wait(AK_SEM, (PyObject *)sem, deadline, &v); /* a greenlet's wait */
    if (g) return g < 0 ? -1 : green_truth(v);
    struct sqf_waitop op = sqf_op_blocking(deadline, NULL);
    op.u.sem.s = &sem->st->s;
    int raised, r = run_wait(&op, sqf_sem_acquire_step_, &raised);
    if (raised) {
        if (r == 0) sqf_sem_release(&sem->st->s, 1); /* taken as the signal came: give it back */
        return -1;
    }
    if (r == 0 || r == ETIMEDOUT) return r == 0;
    raise_errno(r, "queue wait failed");
    return -1;
}

/* queue's timeout: None for ever; ValueError below 0, in queue's words. */
static int q_deadline(PyObject *timeout, sqf_deadline *deadline)
{
    if (timeout != Py_None) {
        double t = PyFloat_AsDouble(timeout);
        if (t == -1.0 && PyErr_Occurred()) return -1;
        if (t < 0) {
            PyErr_SetString(PyExc_ValueError, "'timeout' must be a non-negative number");
            return -1;
        }
    }
    return deadline_of(timeout, deadline);
}

/* The checks every put and get begins with: 0, or -1 raised. */
static int q_open(QueueObject *q, int putting)
{
    if (q_ready(q) < 0) return -1;
    if (q->closed) {
        PyErr_SetString(PyExc_RuntimeError, closed_msg);
        return -1;
    }
    if (putting && q->shutdown) {
        PyErr_SetNone(ShutDown);
        return -1;
    }
    return 0;
}

/* self._qsize(), under the mutex: the size, or -1 raised. */
static Py_ssize_t q_size(QueueObject *q)
{
    PyObject *r = PyObject_CallMethodNoArgs((PyObject *)q, str_qsize);
    if (!r) return -1;
    Py_ssize_t n = PyNumber_AsSsize_t(r, PyExc_OverflowError);
    Py_DECREF(r);
    return n;
}

/* Store item, for a putter holding a permit of slots (NULL: unbounded).
 * 0, or -1 raised with the permit given back and nothing stored. */
static int q_insert(QueueObject *q, PyObject *item, SemObject *slots)
{
    if (q_lock(q) < 0) goto give_back;
    if (q_open(q, 1) < 0) goto unlock;
    int e = sqf_countdown_up(&q->unfinished->st->c, 1);
    if (e) {
        raise_errno(e, "too many unfinished tasks");
        goto unlock;
    }
    PyObject *r = PyObject_CallMethodOneArg((PyObject *)q, str_put, item);
    if (!r) {
        sqf_countdown_down_n(&q->unfinished->st->c, 1);
        goto unlock;
    }
    Py_DECREF(r);
    q_unlock(q);
    sem_add(q->items, 1);
    return 0;
unlock:
    q_unlock(q);
give_back:
    if (slots) sqf_sem_release(&slots->st->s, 1);
    return -1;
}

/* Take the item that an item permit just taken reserves: a new reference;
 * Stale (a new reference) if the queue is open and holds no item (someone
 * took it from the storage behind the queue's back: the permit is dropped
 * and the getter waits again); NULL raised, with the permit given back. */
static PyObject *q_take(QueueObject *q)
{
    PyObject *item = NULL;
    if (q_lock(q) < 0) goto give_back;
    if (q_open(q, 0) < 0) goto unlock;
    Py_ssize_t n = q_size(q);
    if (n < 0) goto unlock;
    if (n == 0 && q->shutdown) {
        PyErr_SetNone(ShutDown);
        goto unlock;
    }
    if (n == 0) {
        q_unlock(q);
        return Py_NewRef(Stale);
    }
    item = PyObject_CallMethodNoArgs((PyObject *)q, str_get);
    if (item && q->maxsize > 0) {
        if (q->debt > 0)
            q->debt--;
        else
            sem_add(q->slots, 1);
    }
unlock:
    q_unlock(q);
    if (item) return item;
give_back:
    sqf_sem_release(&q->items->st->s, 1);
    return NULL;
}

/* How many items a maxsize lets in, as queue.Queue's comparisons do (full
 * once qsize() >= maxsize): ceil for a float; <= 0 (or NaN) unbounded;
 * past PY_SSIZE_T_MAX clamped.  0, or -1 raised (not a number). */
static int capacity_of(PyObject *maxsize, Py_ssize_t *out)
{
    if (PyFloat_Check(maxsize)) {
        double d = PyFloat_AS_DOUBLE(maxsize);
        *out = !(d > 0) ? 0 : d >= (double)PY_SSIZE_T_MAX ? PY_SSIZE_T_MAX : (Py_ssize_t)ceil(d);
        return 0;
    }
    *out = PyNumber_AsSsize_t(maxsize, NULL); /* clamped */
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

static int Q_init(QueueObject *q, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"maxsize", NULL};
    PyObject *maxsize_obj = NULL;
    Py_ssize_t maxsize = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:Queue", kwlist, &maxsize_obj)) return -1;
    if (q->items) { /* getters and putters may be asleep on its semaphores */
        PyErr_SetString(PyExc_RuntimeError, "Queue.__init__ called twice");
        return -1;
    }
    if (!maxsize_obj) maxsize_obj = Zero;
    if (capacity_of(maxsize_obj, &maxsize) < 0) return -1;
    PyObject *r = PyObject_CallMethodOneArg((PyObject *)q, str_init, maxsize_obj);
    if (!r) return -1;
    Py_DECREF(r);
    unsigned slots = maxsize <= 0                  ? 0
                     : maxsize > SQF_SEM_VALUE_MAX ? SQF_SEM_VALUE_MAX
                                                   : (unsigned)maxsize;
    PyObject *items = PyObject_CallFunction((PyObject *)&SemType, "I", 0u);
    PyObject *free = PyObject_CallFunction((PyObject *)&SemType, "I", slots);
    PyObject *unfinished = PyObject_CallNoArgs((PyObject *)&CountdownType);
    PyObject *mutex = PyObject_CallNoArgs((PyObject *)&LockType);
    if (!items || !free || !unfinished || !mutex) {
        Py_XDECREF(items);
        Py_XDECREF(free);
        Py_XDECREF(unfinished);
        Py_XDECREF(mutex);
        return -1;
    }
    Py_XSETREF(q->items, (SemObject *)items);
    Py_XSETREF(q->slots, (SemObject *)free);
    Py_XSETREF(q->unfinished, (CountdownObject *)unfinished);
    Py_XSETREF(q->mutex, (LockObject *)mutex);
    Py_XSETREF(q->maxsize_obj, Py_NewRef(maxsize_obj));
    q->maxsize = maxsize;
    q->debt = 0;
    q->shutdown = 0;
    q->closed = 0;
    return 0;
}

static void Q_dealloc(QueueObject *q)
{
    Py_XDECREF(q->items);
    Py_XDECREF(q->slots);
    Py_XDECREF(q->unfinished);
    Py_XDECREF(q->mutex);
    Py_XDECREF(q->maxsize_obj);
    Py_TYPE(q)->tp_free((PyObject *)q);
}

static PyObject *Q_put(QueueObject *q, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"item", "block", "timeout", NULL};
    PyObject *item, *timeout = Py_None;
    int block = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|pO:put", kwlist, &item, &block, &timeout))
        return NULL;
    if (q_open(q, 1) < 0) return NULL;
    SemObject *slots = NULL;
    if (q->maxsize > 0) {
        sqf_deadline deadline = SQF_FOREVER;
        if (block && q_deadline(timeout, &deadline) < 0) return NULL;
        slots = (SemObject *)Py_NewRef(q->slots);
        int got = sem_take(slots, block, deadline);
        if (got <= 0) {
            Py_DECREF(slots);
            if (got == 0) PyErr_SetNone(Full);
            return NULL;
        }
    }
    int r = q_insert(q, item, slots);
    Py_XDECREF(slots);
    if (r < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Q_get(QueueObject *q, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"block", "timeout", NULL};
    PyObject *timeout = Py_None;
    int block = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|pO:get", kwlist, &block, &timeout)) return NULL;
    if (q_open(q, 0) < 0) return NULL;
    sqf_deadline deadline = SQF_FOREVER;
    if (block && q_deadline(timeout, &deadline) < 0) return NULL;
    for (;;) {
        int got = sem_take(q->items, block, deadline);
        if (got < 0) return NULL;
        PyObject *item = got ? q_take(q) : NULL;
        if (item != Stale) {
            if (!got) PyErr_SetNone(Empty);
            return item;
        }
        Py_DECREF(item);
        if (!block) {
            PyErr_SetNone(Empty);
            return NULL;
        }
    }
}

/* For async_put: the checks, then the Semaphore whose permit to wait for
 * (None: unbounded). */
static PyObject *Q_put_slots(QueueObject *q, PyObject *timeout)
{
    sqf_deadline deadline;
    if (q_open(q, 1) < 0) return NULL;
    if (q->maxsize <= 0) Py_RETURN_NONE;
    if (q_deadline(timeout, &deadline) < 0) return NULL;
    return Py_NewRef(q->slots);
}

static PyObject *Q_insert(QueueObject *q, PyObject *args)
{
    PyObject *item, *slots;
    if (!PyArg_ParseTuple(args, "OO:_insert", &item, &slots)) return NULL;
    if (q_ready(q) < 0) return NULL;
    if (slots != Py_None && !PyObject_TypeCheck(slots, &SemType)) {
        PyErr_SetString(PyExc_TypeError, "_insert: slots must be a Semaphore or None");
        return NULL;
    }
    if (q_insert(q, item, slots == Py_None ? NULL : (SemObject *)slots) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Q_take(QueueObject *q, PyObject *unused)
{
    (void)unused;
    if (q_ready(q) < 0) return NULL;
    return q_take(q);
}

static PyObject *Q_wake_all(QueueObject *q, PyObject *unused)
{
    (void)unused;
    if (q_ready(q) < 0) return NULL;
    sem_flood(q->items);
    sem_flood(q->slots);
    Py_RETURN_NONE;
}

static PyObject *Q_get_maxsize(QueueObject *q, void *closure)
{
    (void)closure;
    return Py_NewRef(q->maxsize_obj ? q->maxsize_obj : Zero);
}

/* A bound as the slot Semaphore counts it. */
static long long cap(Py_ssize_t n)
{
    return n > SQF_SEM_VALUE_MAX ? SQF_SEM_VALUE_MAX : n;
}

/* Change the bound to n, under the mutex: 0, or -1 raised (no change). */
static int q_resize(QueueObject *q, Py_ssize_t n)
{
    Py_ssize_t old = q->maxsize;
    long long delta;
    if (q->shutdown || (old <= 0 && n <= 0)) {
        q->maxsize = n;
        return 0;
    }
    if (n <= 0) { /* unbounded: the waiting putters go ahead */
        q->maxsize = n;
        sem_flood(q->slots);
        return 0;
    }
    if (old <= 0) { /* bounded again: count the free slots afresh */
        Py_ssize_t size = q_size(q);
        PyObject *fresh = size < 0 ? NULL : PyObject_CallFunction((PyObject *)&SemType, "I", 0u);
        if (!fresh) return -1;
        Py_SETREF(q->slots, (SemObject *)fresh);
        q->debt = 0;
        delta = cap(n) - size;
    } else {
        delta = cap(n) - cap(old);
    }
    q->maxsize = n;
    while (delta < 0 && sqf_sem_tryacquire(&q->slots->st->s) == 0) /* O(slots retired) */
        delta++;
    if (delta < 0) {
        q->debt -= (Py_ssize_t)delta;
    } else {
        long long repaid = delta < q->debt ? delta : q->debt;
        q->debt -= (Py_ssize_t)repaid;
        sem_add(q->slots, delta - repaid);
    }
    return 0;
}

static int Q_set_maxsize(QueueObject *q, PyObject *value, void *closure)
{
    (void)closure;
    if (!value) {
        PyErr_SetString(PyExc_AttributeError, "maxsize cannot be deleted");
        return -1;
    }
    Py_ssize_t n;
    if (capacity_of(value, &n) < 0 || q_ready(q) < 0 || q_lock(q) < 0) return -1;
    int r = q_resize(q, n);
    if (r == 0) Py_SETREF(q->maxsize_obj, Py_NewRef(value));
    q_unlock(q);
    return r;
}

static PyMethodDef Q_methods[] = {
    {"put", (PyCFunction)(void (*)(void))Q_put, METH_VARARGS | METH_KEYWORDS,
     "put(item, block=True, timeout=None)\n\nPut item into the queue, waiting for a free slot "
     "if it is bounded and full (for ever, or timeout seconds, then queue.Full); Full at once "
     "if not block; ShutDown once shut down."},
    {"get", (PyCFunction)(void (*)(void))Q_get, METH_VARARGS | METH_KEYWORDS,
     "get(block=True, timeout=None)\n\nRemove and return the next item, waiting for one (for "
     "ever, or timeout seconds, then queue.Empty); Empty at once if not block; once shut "
     "down, the items left and then ShutDown."},
    {"_put_slots", (PyCFunction)Q_put_slots, METH_O,
     "_put_slots(timeout)\n\nasync_put's checks; the Semaphore of the free slots to wait on, "
     "or None if unbounded (internal)."},
    {"_insert", (PyCFunction)Q_insert, METH_VARARGS,
     "_insert(item, slots)\n\nStore item for a putter holding a permit of slots (None: "
     "unbounded); raised, the permit is given back (internal)."},
    {"_take", (PyCFunction)Q_take, METH_NOARGS,
     "_take()\n\nThe item an item permit just taken reserves, or _QUEUE_STALE: wait again; "
     "raised, the permit is given back (internal)."},
    {"_wake_all", (PyCFunction)Q_wake_all, METH_NOARGS,
     "_wake_all()\n\nFlood both Semaphores: every waiter wakes (internal)."},
    {NULL, NULL, 0, NULL}};

static PyMemberDef Q_members[] = {
    {"mutex", T_OBJECT, offsetof(QueueObject, mutex), READONLY,
     "The Lock the hooks run under (queue.Queue's mutex)."},
    {"_items", T_OBJECT, offsetof(QueueObject, items), READONLY,
     "The Semaphore counting the items (internal)."},
    {"_slots", T_OBJECT, offsetof(QueueObject, slots), READONLY,
     "The Semaphore counting the free slots (internal)."},
    {"_unfinished", T_OBJECT, offsetof(QueueObject, unfinished), READONLY,
     "The CountdownEvent counting the unfinished tasks (internal)."},
    {"is_shutdown", T_BOOL, offsetof(QueueObject, shutdown), 0,
     "True once shutdown() was called (set it under mutex)."},
    {"_closed", T_BOOL, offsetof(QueueObject, closed), 0, "True once close() was called."},
    {NULL, 0, 0, 0, NULL}};

static PyGetSetDef Q_getset[] = {
    {"maxsize", (getter)Q_get_maxsize, (setter)Q_set_maxsize,
     "The bound (<= 0: none).  Settable, as queue.Queue's: a larger bound frees slots at "
     "once, a smaller one retires them as items leave (O(slots retired)); a change from 0 "
     "counts the free slots from qsize(), exactly only while no put is under way.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject QueueType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._squarefree._QueueCore",
    .tp_basicsize = sizeof(QueueObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "_QueueCore(maxsize=0)\n\nThe core of squarefree.Queue (internal): a thread's put "
              "and get, and the steps around a task's waits.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Q_init,
    .tp_dealloc = (destructor)Q_dealloc,
    .tp_methods = Q_methods,
    .tp_members = Q_members,
    .tp_getset = Q_getset,
};

/* --- _SimpleQueueCore ------------------------------------------------------------ */

/* queue.SimpleQueue's: a deque and the Semaphore counting its items (at
 * most the items stored less those reserved by getters).  No mutex: put
 * is a deque append and a release, both without a Python call, so it is
 * reentrant (a __del__ or a signal handler may put while this thread is
 * inside put or get), and an append and a pop need none. */
typedef struct {
    PyObject_HEAD SemObject *items;
    PyObject *deque;
} SimpleQueueObject;

static PyObject *deque_type, *str_append, *str_popleft;

static PyObject *SQ_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)args;
    (void)kw;
    SimpleQueueObject *q = (SimpleQueueObject *)type->tp_alloc(type, 0);
    if (!q) return NULL;
    q->items = (SemObject *)PyObject_CallFunction((PyObject *)&SemType, "I", 0u);
    q->deque = PyObject_CallNoArgs(deque_type);
    if (!q->items || !q->deque) {
        Py_DECREF(q);
        return NULL;
    }
    return (PyObject *)q;
}

static int SQ_init(SimpleQueueObject *q, PyObject *args, PyObject *kw)
{
    (void)q;
    static char *kwlist[] = {NULL};
    return PyArg_ParseTupleAndKeywords(args, kw, ":SimpleQueue", kwlist) ? 0 : -1;
}

static int SQ_traverse(SimpleQueueObject *q, visitproc visit, void *arg)
{
    Py_VISIT(q->deque);
    return 0;
}

static int SQ_clear(SimpleQueueObject *q)
{
    Py_CLEAR(q->deque); /* garbage: nobody waits on it (a waiter holds a reference) */
    return 0;
}

static void SQ_dealloc(SimpleQueueObject *q)
{
    PyObject_GC_UnTrack(q);
    Py_XDECREF(q->items);
    Py_XDECREF(q->deque);
    Py_TYPE(q)->tp_free((PyObject *)q);
}

static PyObject *SQ_put(SimpleQueueObject *q, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"item", "block", "timeout", NULL};
    PyObject *item, *timeout = Py_None;
    int block = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|pO:put", kwlist, &item, &block, &timeout))
        return NULL;
    if (!q->deque) return raise_errno(EINVAL, "SimpleQueue cleared");
    PyObject *r = PyObject_CallMethodOneArg(q->deque, str_append, item);
    if (!r) return NULL;
    Py_DECREF(r);
    sem_add(q->items, 1); /* (2^31 - 1 items at most: far beyond memory) */
    Py_RETURN_NONE;
}

static PyObject *SQ_put_nowait(SimpleQueueObject *q, PyObject *item)
{
    PyObject *args = PyTuple_Pack(1, item), *r = args ? SQ_put(q, args, NULL) : NULL;
    Py_XDECREF(args);
    return r;
}

/* The item a permit just taken reserves (a new reference). */
static PyObject *SQ_take(SimpleQueueObject *q, PyObject *unused)
{
    (void)unused;
    if (!q->deque) return raise_errno(EINVAL, "SimpleQueue cleared");
    return PyObject_CallMethodNoArgs(q->deque, str_popleft);
}

static PyObject *SQ_get(SimpleQueueObject *q, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"block", "timeout", NULL};
    PyObject *timeout = Py_None;
    int block = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|pO:get", kwlist, &block, &timeout)) return NULL;
    sqf_deadline deadline = SQF_FOREVER;
    if (block && q_deadline(timeout, &deadline) < 0) return NULL;
    int got = sem_take(q->items, block, deadline);
    if (got == 0) PyErr_SetNone(Empty);
    return got > 0 ? SQ_take(q, NULL) : NULL;
}

static PyObject *SQ_get_nowait(SimpleQueueObject *q, PyObject *unused)
{
    (void)unused;
    PyObject *args = Py_BuildValue("(O)", Py_False), *r = args ? SQ_get(q, args, NULL) : NULL;
    Py_XDECREF(args);
    return r;
}

static PyObject *SQ_qsize(SimpleQueueObject *q, PyObject *unused)
{
    (void)unused;
    return PyLong_FromSsize_t(q->deque ? PyObject_Length(q->deque) : 0);
}

static PyObject *SQ_empty(SimpleQueueObject *q, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(!q->deque || PyObject_Length(q->deque) == 0);
}

static PyMethodDef SQ_methods[] = {
    {"put", (PyCFunction)(void (*)(void))SQ_put, METH_VARARGS | METH_KEYWORDS,
     "put(item, block=True, timeout=None)\n\nPut item into the queue; never blocks (block "
     "and timeout are there for queue.Queue's signature); reentrant."},
    {"put_nowait", (PyCFunction)SQ_put_nowait, METH_O, "put_nowait(item)\n\nput(item)."},
    {"get", (PyCFunction)(void (*)(void))SQ_get, METH_VARARGS | METH_KEYWORDS,
     "get(block=True, timeout=None)\n\nRemove and return the next item, waiting for one (for "
     "ever, or timeout seconds, then queue.Empty); Empty at once if not block."},
    {"get_nowait", (PyCFunction)SQ_get_nowait, METH_NOARGS, "get_nowait()\n\nget(block=False)."},
    {"qsize", (PyCFunction)SQ_qsize, METH_NOARGS,
     "qsize()\n\nThe number of items in the queue (a snapshot)."},
    {"empty", (PyCFunction)SQ_empty, METH_NOARGS,
     "empty()\n\nTrue if the queue holds no item (a snapshot)."},
    {"_take", (PyCFunction)SQ_take, METH_NOARGS,
     "_take()\n\nThe item an item permit just taken reserves (internal)."},
    {NULL, NULL, 0, NULL}};

static PyMemberDef SQ_members[] = {{"_items", T_OBJECT, offsetof(SimpleQueueObject, items),
                                    READONLY, "The Semaphore counting the items (internal)."},
                                   {NULL, 0, 0, 0, NULL}};

static PyTypeObject SimpleQueueType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._squarefree._SimpleQueueCore",
    .tp_basicsize = sizeof(SimpleQueueObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "_SimpleQueueCore()\n\nThe core of squarefree.SimpleQueue (internal).",
    .tp_new = SQ_new,
    .tp_init = (initproc)SQ_init,
    .tp_traverse = (traverseproc)SQ_traverse,
    .tp_clear = (inquiry)SQ_clear,
    .tp_dealloc = (destructor)SQ_dealloc,
    .tp_methods = SQ_methods,
    .tp_members = SQ_members,
};

/* The types, and the exceptions they raise, into the module m. */
int queue_init(PyObject *m)
{
    str_qsize = PyUnicode_InternFromString("_qsize");
    str_put = PyUnicode_InternFromString("_put");
    str_get = PyUnicode_InternFromString("_get");
    str_init = PyUnicode_InternFromString("_init");
    Zero = PyLong_FromLong(0);
    str_append = PyUnicode_InternFromString("append");
    str_popleft = PyUnicode_InternFromString("popleft");
    Stale = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
    PyObject *collections = PyImport_ImportModule("collections");
    deque_type = collections ? PyObject_GetAttrString(collections, "deque") : NULL;
    Py_XDECREF(collections);
    PyObject *queue = PyImport_ImportModule("queue");
    if (!str_qsize || !str_put || !str_get || !str_init || !Zero || !str_append || !str_popleft ||
        !Stale || !deque_type || !queue) {
        Py_XDECREF(queue);
        return -1;
    }
    Empty = PyObject_GetAttrString(queue, "Empty");
    Full = PyObject_GetAttrString(queue, "Full");
    ShutDown = PyObject_GetAttrString(queue, "ShutDown"); /* Python 3.13 and later */
    Py_DECREF(queue);
    if (!ShutDown && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        ShutDown = PyErr_NewExceptionWithDoc(
            "squarefree.ShutDown",
            "Raised by put() on a queue that is shut down, and by get() on one that is shut "
            "down and empty (queue.ShutDown, which this is on Python 3.13 and later).",
            PyExc_Exception, NULL);
    }
    if (!Empty || !Full || !ShutDown) return -1;
    if (PyType_Ready(&QueueType) < 0 || PyType_Ready(&SimpleQueueType) < 0 ||
        PyModule_AddObjectRef(m, "_QueueCore", (PyObject *)&QueueType) < 0 ||
        PyModule_AddObjectRef(m, "_SimpleQueueCore", (PyObject *)&SimpleQueueType) < 0 ||
        PyModule_AddObjectRef(m, "ShutDown", ShutDown) < 0 ||
        PyModule_AddObjectRef(m, "_QUEUE_STALE", Stale) < 0)
        return -1;
    return 0;
}
