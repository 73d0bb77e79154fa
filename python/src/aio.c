/* aio.c: the asyncio driver: a task's wait on an sqf_loop per event loop. */
#include "module.h"

#include <poll.h>
#include <string.h>

/* A _LoopDriver is one sqf_loop, made for one asyncio event loop (the
 * package's _driver() makes it on first use and watches its descriptor with
 * loop.add_reader(fd, driver.dispatch)).  A task's wait is a _LoopOp: the
 * library's loop form of the wait (the same step protocol as the blocking
 * call: a thread's release can hand a lock or a permit to a task, and one
 * wake-all reaches threads and tasks alike), and an asyncio future that its
 * callback resolves at dispatch.  No thread per wait, none per loop.
 *
 * Every call on a driver comes from its event loop's thread (the package
 * looks the driver up by the running loop), as sqf_loop requires.
 *
 * Cancellation takes nothing, and is final when the task sees it: a task
 * cancelled (or whose coroutine is closed) while its op is pending
 * abandons the op: sqf_loop_cancel, then this loop is dispatched (its
 * descriptor polled, the GIL released) until the op's callback has run,
 * before the CancelledError goes on into the task's code.  The cancel
 * makes the step stop at once, so the wait is short; and waiting for it
 * matters: the cancel is recorded at once but the step acts on it only
 * when it runs, and until then the op still counts where it waits (a
 * barrier arrival that a thread could complete a phase with, after the
 * task was told it had left).  The callback then finds the op abandoned:
 *   - it ended with an error (ECANCELED, a time-out, a broken barrier):
 *     nothing was taken; a barrier's stopped arrival broke the barrier, as
 *     a thread's time-out does;
 *   - it ended with 0 (the lock or a permit was handed to it, or the phase
 *     completed, before the cancel took effect): a lock is unlocked and a
 *     permit released, as if never taken; a barrier arrival stands (the
 *     phase it completed has passed, and the other parties are released
 *     with it), and an event's, a latch's or a countdown's wait took
 *     nothing.
 * The same holds when the op had completed with 0 before the task saw it
 * (the future resolved, the task not yet resumed): abandon gives back at
 * once.  asyncio.wait_for's cancellation gives the same results. */

/* enum aio_kind: module.h. */

/* References: the asyncio loop holds its driver (through the reader it
 * watches), the driver its pending ops, an op its future (and through its
 * callbacks the waiting task, and the task its loop).  A waiting task thus
 * lives as long as its loop, as with asyncio's own primitives, and when the
 * whole lot becomes garbage, the collector finalises the task's coroutine,
 * which finishes its op (abandon with closing) before anything is cleared.
 * Neither type clears its references in tp_clear: a pending op's memory is
 * in the sqf_loop, and its target's words in the kernel's queues, until its
 * callback has run. */
typedef struct {
    PyObject_HEAD sqf_loop *loop; /* no reference to the asyncio loop: it may go */
    PyObject *pending;            /* a set of the ops whose callbacks have yet to run */
} DriverObject;

typedef struct {
    PyObject_HEAD sqf_loop_op op; /* never moves: Python objects stay put */
    DriverObject *driver;
    PyObject *target; /* the primitive's object: kept alive while the op lives */
    PyObject *lock;   /* a cond wait's lock, whose mutex the op takes back: kept too */
    PyObject *future; /* NULL until the op is pending */
    int kind;
    int pending;              /* the callback has yet to run */
    int result;               /* its result, once it ran */
    int abandoned;            /* the task gave up: a 0 result is given back */
    int orphaned;             /* a cond wait whose coroutine was closed (see orphan()) */
    unsigned index;           /* a barrier's arrival index */
    struct barrier_call call; /* a barrier's action */
} AOpObject;

PyObject *Again; /* a barrier's reset ended: the task arrives again */

static int Driver_init(DriverObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, ":_LoopDriver", kwlist)) return -1;
    if (self->loop) {
        PyErr_SetString(PyExc_RuntimeError, "_LoopDriver initialised twice");
        return -1;
    }
    self->pending = PySet_New(NULL);
    if (!self->pending) return -1;
    int e = sqf_loop_create(&self->loop, 0);
    if (e) {
        errno = e;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    return 0;
}

static int Driver_traverse(DriverObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->pending);
    return 0;
}

static int no_clear(PyObject *self)
{
    (void)self; /* see "References" above */
    return 0;
}

static void Driver_dealloc(DriverObject *self)
{
    /* Pending ops hold a reference to their driver: none is left here. */
    PyObject_GC_UnTrack(self);
    if (self->loop) sqf_loop_destroy(self->loop);
    Py_XDECREF(self->pending);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Driver_fileno(DriverObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->loop) return raise_errno(EINVAL, "_LoopDriver not initialised");
    return PyLong_FromLong(sqf_loop_fd(self->loop));
}

static PyObject *Driver_dispatch(DriverObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->loop) return raise_errno(EINVAL, "_LoopDriver not initialised");
    return PyLong_FromLong(sqf_loop_dispatch(self->loop));
}

static PyObject *Driver_backend(DriverObject *self, void *closure)
{
    (void)closure;
    if (!self->loop) Py_RETURN_NONE;
    return PyUnicode_FromString(sqf_loop_backend(self->loop));
}

/* Give back what a wait that ended with 0 took, for a task that gave up. */
static void aop_undo(AOpObject *o)
{
    if (o->kind == AK_LOCK || o->kind == AK_RLOCK)
        sqf_mutex_unlock(&((LockObject *)o->target)->st->mu);
    if (o->kind == AK_SEM) sqf_sem_release(&((SemObject *)o->target)->st->s, 1);
    if (o->kind == AK_LIMITER) limiter_wait_undo(o->target);
    /* Events, latches, countdowns, a barrier's phase and gate: nothing taken.
     * A cond wait keeps the mutex it took back: its waiter must hold it. */
}

/* A task's (or a greenlet's) wait on a process-shared object where the loop's backend cannot
 * serve it: the fallback backend's user-space wait table does not see a
 * wake made by another process (the C library ends such a wait with
 * ENOTSUP); io_uring's futex waits do. */
static PyObject *shared_wait_unsupported(void)
{
    PyObject *args = Py_BuildValue(
        "(is)", ENOTSUP,
        "a task or a greenlet cannot wait on a process-shared object with the fallback loop "
        "backend (no io_uring futex waits here): wait in a thread (loop.run_in_executor, a "
        "thread pool), or use a private object");
    if (args) {
        PyErr_SetObject(PyExc_OSError, args);
        Py_DECREF(args);
    }
    return NULL;
}

/* The Python value of a finished wait, or NULL with the exception set. */
static PyObject *aop_value(AOpObject *o, int r)
{
    if (r == ENOTSUP) return shared_wait_unsupported();
    switch (o->kind) {
    case AK_LATCH:
        return latch_result(r);
    case AK_LIMITER:
        return limiter_wait_value(o->target, r);
    case AK_BARRIER:
        if (o->call.raised) return NULL; /* the action's exception */
        if (r == 0) return PyLong_FromUnsignedLong(o->index);
        if (r == EPIPE || r == ETIMEDOUT || r == ECANCELED) {
            PyErr_SetNone(BrokenBarrierError);
            return NULL;
        }
        return raise_errno(r, "Barrier.async_wait failed");
    case AK_BARRIER_GATE:
        if (r == 0) return Py_NewRef(Again);
        return bool_result(r, "Barrier.async_wait failed");
    case AK_COND: /* cancelled: the package raises the task's CancelledError */
        return bool_result(r == ECANCELED ? ETIMEDOUT : r, "Condition.async_wait failed");
    default:
        return bool_result(r, "wait failed");
    }
}

/* Resolve the future with the value (or the exception) of result r. */
static void aop_resolve(AOpObject *o, int r)
{
    PyObject *value = aop_value(o, r), *done;
    if (value) {
        done = PyObject_CallMethod(o->future, "set_result", "O", value);
        Py_DECREF(value);
    } else {
        PyObject *type, *exc, *tb;
        PyErr_Fetch(&type, &exc, &tb);
        PyErr_NormalizeException(&type, &exc, &tb);
        if (tb) PyException_SetTraceback(exc, tb);
        done = PyObject_CallMethod(o->future, "set_exception", "O", exc);
        Py_XDECREF(type);
        Py_XDECREF(exc);
        Py_XDECREF(tb);
    }
    if (done)
        Py_DECREF(done);
    else
        PyErr_WriteUnraisable(o->future);
}

/* A cond wait over another lock than squarefree's (a greenlet's only:
 * tasks are refused it) that ended with r holds the Condition's gate
 * again: free it now, as a thread frees it once awake.  Held until the
 * greenlet runs, it would stop the hub's next notifier, whose wait for
 * the gate is a thread's: the gate is held only across a few C steps. */
static void gate_free(AOpObject *o, int r)
{
    if (o->kind != AK_COND || ((CondObject *)o->target)->fast) return;
    if (r == 0 || r == ETIMEDOUT || r == ECANCELED) /* (else it never let go) */
        sqf_mutex_unlock(&((CondObject *)o->target)->st->gate);
}

/* The sqf_loop callback, from dispatch on the loop's thread (GIL held). */
static void aop_done(sqf_loop_op *op, int r, void *arg)
{
    (void)op;
    AOpObject *o = arg;
    o->pending = 0;
    o->result = r;
    gate_free(o, r);
    PyObject *type = NULL, *exc = NULL, *tb = NULL;
    PyErr_Fetch(&type, &exc, &tb); /* a barrier action's, set aside while we call Python */
    if (!o->abandoned) {
        PyObject *cancelled = PyObject_CallMethod(o->future, "cancelled", NULL);
        if (!cancelled) {
            PyErr_WriteUnraisable(o->future);
        } else {
            o->abandoned = PyObject_IsTrue(cancelled) == 1; /* the future was cancelled */
            Py_DECREF(cancelled);
        }
    }
    PyErr_Restore(type, exc, tb);
    if (o->orphaned) {
        /* The cond op took the mutex back for a coroutine that is gone: free
         * it, and pass on a notify it consumed. */
        CondObject *c = (CondObject *)o->target;
        if (r == 0 && COND_WAITING(c)) sqf_cond_signal(&c->st->c);
        sqf_mutex_unlock(&((LockObject *)o->lock)->st->mu);
    } else if (o->abandoned) {
        if (r == 0) aop_undo(o);
        if (PyErr_Occurred()) PyErr_WriteUnraisable(o->target); /* nobody to raise it in */
    } else {
        aop_resolve(o, r);
    }
    if (PySet_Discard(o->driver->pending, (PyObject *)o) < 0) /* may free o */
        PyErr_WriteUnraisable((PyObject *)o->driver);
}

/* Start the op's wait; the sqf_loop result. */
static int aop_start(AOpObject *o, sqf_deadline deadline)
{
    sqf_loop *l = o->driver->loop;
    PyObject *t = o->target;
    switch (o->kind) {
    case AK_LOCK:
    case AK_RLOCK:
        return sqf_loop_mutex_lock(l, &o->op, &((LockObject *)t)->st->mu, deadline, NULL, aop_done,
                                   o);
    case AK_COND: {
        /* Over another lock (a greenlet's wait only: see aop_done), the
         * cond waits on the Condition's gate, as a thread's wait does. */
        CondObject *c = (CondObject *)t;
        if (!o->lock) return EINVAL;
        sqf_mutex *m = c->fast ? &((LockObject *)o->lock)->st->mu : &c->st->gate;
        return sqf_loop_cond_wait(l, &o->op, &c->st->c, m, deadline, NULL, aop_done, o);
    }
    case AK_ONCE:
        return sqf_loop_event_wait(l, &o->op, once_idle(t), deadline, NULL, aop_done, o);
    case AK_SEM:
        return sqf_loop_sem_acquire(l, &o->op, &((SemObject *)t)->st->s, deadline, NULL, aop_done,
                                    o);
    case AK_EVENT:
        return sqf_loop_event_wait(l, &o->op, &((EventObject *)t)->st->ev, deadline, NULL, aop_done,
                                   o);
    case AK_LATCH:
        return sqf_loop_latch_wait(l, &o->op, &((LatchObject *)t)->st->l, deadline, NULL, aop_done,
                                   o);
    case AK_COUNTDOWN:
        return sqf_loop_countdown_wait(l, &o->op, &((CountdownObject *)t)->st->c, deadline, NULL,
                                       aop_done, o);
    case AK_BARRIER_GATE:
        return sqf_loop_event_wait(l, &o->op, &((BarrierObject *)t)->st->reset_done, deadline, NULL,
                                   aop_done, o);
    case AK_LIMITER:
        return sqf_loop_sem_acquire(l, &o->op, limiter_wait_sem(t), deadline, NULL, aop_done, o);
    case AK_BARRIER: {
        BarrierObject *b = (BarrierObject *)t;
        o->call.self = b;
        return sqf_loop_barrier_wait_fn(l, &o->op, &b->st->b, deadline, NULL,
                                        b->action ? barrier_action : NULL, &o->call, &o->index,
                                        aop_done, o);
    }
    default:
        return EINVAL;
    }
}

static PyTypeObject *const aio_types[] = {
    [AK_LOCK] = &LockType,
    [AK_SEM] = &SemType,
    [AK_EVENT] = &EventType,
    [AK_LATCH] = &LatchType,
    [AK_COUNTDOWN] = &CountdownType,
    [AK_BARRIER] = &BarrierType,
    [AK_BARRIER_GATE] = &BarrierType,
    [AK_LIMITER] = &LimiterWaitType,
    [AK_RLOCK] = &RLockType,
    [AK_COND] = &CondType,
    [AK_ONCE] = &OnceType,
};

/* _try(kind, target, timeout): the wait's value (True) if it can end now
 * without waiting, else None.  The package calls it before it looks up
 * the running loop and its driver, which costs far more than the try: an
 * uncontended lock, a free permit or a set event then costs no loop at
 * all.  It takes what it finds exactly as the op's first step would (the
 * same trylock), so the task's result is the same.  The timeout is checked
 * first, so bad input gets its exception whether or not the try succeeds;
 * the other kinds always return None, and so does a trio task's try (a
 * trio wait is a checkpoint, even when it need not wait: the package's
 * trio driver takes it after checking for a cancellation). */
static PyObject *aio_try(PyObject *unused, PyObject *const *args, Py_ssize_t nargs)
{
    (void)unused;
    int kind;
    sqf_deadline deadline;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "_try(kind, target, timeout)");
        return NULL;
    }
    kind = PyLong_AsLong(args[0]);
    if (kind == -1 && PyErr_Occurred()) return NULL;
    if (kind < 0 || kind >= (int)(sizeof aio_types / sizeof aio_types[0]) ||
        !PyObject_TypeCheck(args[1], aio_types[kind])) {
        PyErr_SetString(PyExc_TypeError, "_try: wrong kind or object");
        return NULL;
    }
    if (kind == AK_BARRIER && args[2] == Py_None) Py_RETURN_NONE; /* its own default */
    if (deadline_of(args[2], &deadline) < 0) return NULL;
    if (trio_running()) Py_RETURN_NONE; /* trio's every wait is a checkpoint: _trio.py's */
    PyObject *t = args[1];
    int done = 0;
    switch (kind) {
    case AK_LOCK:
    case AK_RLOCK:
        done = sqf_mutex_trylock(&((LockObject *)t)->st->mu) == 0;
        break;
    case AK_SEM:
        done = sqf_sem_tryacquire(&((SemObject *)t)->st->s) == 0;
        break;
    case AK_EVENT:
        done = sqf_event_is_set(&((EventObject *)t)->st->ev);
        break;
    default:
        break;
    }
    if (done) Py_RETURN_TRUE;
    Py_RETURN_NONE;
}

PyMethodDef aio_functions[] = {
    {"_try", (PyCFunction)(void (*)(void))aio_try, METH_FASTCALL,
     "_try(kind, target, timeout)\n\nEnd a task's wait now if it need not wait: True, else "
     "None (internal)."},
    {NULL, NULL, 0, NULL}};

/* The kinds, as the package names them: _c._KINDS["lock"] and so on. */
static const char *const aio_kind_names[] = {
    [AK_LOCK] = "lock",
    [AK_SEM] = "sem",
    [AK_EVENT] = "event",
    [AK_LATCH] = "latch",
    [AK_COUNTDOWN] = "countdown",
    [AK_BARRIER] = "barrier",
    [AK_BARRIER_GATE] = "barrier_gate",
    [AK_LIMITER] = "limiter",
    [AK_RLOCK] = "rlock",
    [AK_COND] = "cond",
    [AK_ONCE] = "once",
};

int aio_init(PyObject *m)
{
    PyObject *kinds = PyDict_New();
    if (!kinds) return -1;
    for (int k = 0; k < (int)(sizeof aio_kind_names / sizeof aio_kind_names[0]); k++) {
        PyObject *v = PyLong_FromLong(k);
        if (!v || PyDict_SetItemString(kinds, aio_kind_names[k], v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(kinds);
            return -1;
        }
        Py_DECREF(v);
    }
    int r = PyModule_AddObjectRef(m, "_KINDS", kinds);
    Py_DECREF(kinds);
    return r;
}

/* Dispatch o's loop (the GIL released while it polls) until o's callback
 * has run: for an op that its event loop will not dispatch. */
static void aop_drain(AOpObject *o)
{
    sqf_loop *l = o->driver->loop;
    while (o->pending) {
        struct pollfd p = {sqf_loop_fd(l), POLLIN, 0};
        Py_BEGIN_ALLOW_THREADS poll(&p, 1, 100);
        Py_END_ALLOW_THREADS sqf_loop_dispatch(l);
    }
}

/* driver.start(kind, target, timeout, loop): the wait's value if it
 * completed at once (or its exception), else a pending _LoopOp whose
 * .future (made by loop.create_future) the task awaits. */
static PyObject *Driver_start(DriverObject *self, PyObject *args)
{
    int kind;
    PyObject *target, *timeout, *aloop;
    if (!PyArg_ParseTuple(args, "iOOO:start", &kind, &target, &timeout, &aloop)) return NULL;
    if (!self->loop) return raise_errno(EINVAL, "_LoopDriver not initialised");
    if (kind < 0 || kind >= (int)(sizeof aio_types / sizeof aio_types[0]) ||
        !PyObject_TypeCheck(target, aio_types[kind])) {
        PyErr_SetString(PyExc_TypeError, "_LoopDriver.start: wrong kind or object");
        return NULL;
    }
    if (kind != AK_LIMITER && ((ShareableObject *)target)->where.shared &&
        strcmp(sqf_loop_backend(self->loop), "fallback") == 0)
        return shared_wait_unsupported();
    sqf_deadline deadline;
    if (kind == AK_BARRIER && timeout == Py_None) timeout = ((BarrierObject *)target)->timeout;
    int large = deadline_of(timeout, &deadline);
    if (large < 0) return NULL;
    if (large) deadline = SQF_FOREVER; /* asyncio has no TIMEOUT_MAX */
    if (kind == AK_BARRIER && BARRIER_RESETTING((BarrierObject *)target)) kind = AK_BARRIER_GATE;
    AOpObject *o = PyObject_GC_New(AOpObject, &AOpType);
    if (!o) return NULL;
    o->driver = (DriverObject *)Py_NewRef(self);
    o->target = Py_NewRef(target);
    o->lock = kind == AK_COND ? Py_XNewRef(((CondObject *)target)->lock) : NULL;
    o->future = NULL;
    o->kind = kind;
    o->pending = 0;
    o->result = 0;
    o->abandoned = 0;
    o->orphaned = 0;
    o->index = 0;
    o->call.self = NULL;
    o->call.raised = 0;
    PyObject_GC_Track(o);
    int r = aop_start(o, deadline);
    if (r != EINPROGRESS) { /* at once: no callback, no future */
        gate_free(o, r);
        PyObject *value = aop_value(o, r);
        Py_DECREF(o);
        return value;
    }
    o->pending = 1;
    if (PySet_Add(self->pending, (PyObject *)o) < 0) { /* (no memory): wait here */
        PyObject *type, *exc, *tb;
        PyErr_Fetch(&type, &exc, &tb);
        o->abandoned = 1;
        sqf_loop_cancel(self->loop, &o->op);
        aop_drain(o);
        PyErr_Restore(type, exc, tb);
        Py_DECREF(o);
        return NULL;
    }
    o->future = PyObject_CallMethod(aloop, "create_future", NULL);
    if (!o->future) { /* give the wait up; its callback drops it from pending */
        o->abandoned = 1;
        sqf_loop_cancel(self->loop, &o->op);
        Py_DECREF(o);
        return NULL;
    }
    return (PyObject *)o;
}

static void AOp_dealloc(AOpObject *o)
{
    PyObject_GC_UnTrack(o);
    Py_XDECREF(o->future);
    Py_XDECREF(o->target);
    Py_XDECREF(o->lock);
    Py_XDECREF(o->driver);
    PyObject_GC_Del(o);
}

static int AOp_traverse(AOpObject *o, visitproc visit, void *arg)
{
    Py_VISIT(o->future);
    Py_VISIT(o->target);
    Py_VISIT(o->lock);
    Py_VISIT(o->driver);
    return 0;
}

/* op.abandon(): the task gave up (cancelled, or its coroutine closed).  A
 * pending op is cancelled and dispatched here until its callback has run,
 * so that its effect is final before the task's code sees the
 * cancellation (see "Cancellation" at the top); a finished one that took
 * something gives it back now. */
static PyObject *AOp_abandon(AOpObject *o, PyObject *unused)
{
    (void)unused;
    if (o->abandoned) Py_RETURN_NONE;
    o->abandoned = 1;
    if (!o->pending) {
        if (o->result == 0) aop_undo(o);
        Py_RETURN_NONE;
    }
    sqf_loop_cancel(o->driver->loop, &o->op);
    Py_INCREF(o); /* its callback drops the driver's reference */
    aop_drain(o);
    Py_DECREF(o);
    Py_RETURN_NONE;
}

/* op.rearm(loop): the awaiting task was cancelled during a wait that
 * must finish before the task goes on (a cond wait, which ends with the
 * mutex taken back): cancel the wait and return a new future, which the
 * callback resolves once the op is over.  Unlike abandon(), the event
 * loop keeps running meanwhile: the mutex may be held by another task of
 * the same loop. */
static PyObject *AOp_rearm(AOpObject *o, PyObject *aloop)
{
    if (!o->pending) {
        PyErr_SetString(PyExc_RuntimeError, "_LoopOp.rearm: the wait is over");
        return NULL;
    }
    PyObject *future = PyObject_CallMethod(aloop, "create_future", NULL);
    if (!future) return NULL;
    Py_XSETREF(o->future, future);
    sqf_loop_cancel(o->driver->loop, &o->op); /* (asked twice: no change) */
    return Py_NewRef(future);
}

/* op.orphan(): a cond wait's coroutine is closed without its loop (the
 * loop was closed, or the collector finalises the task), so it can
 * neither wait for the mutex to come back nor hold it afterwards; and
 * draining here would wait for ever if the mutex's holder is another task
 * that will never run.  A pending op is cancelled and marked: when its
 * callback runs (if its loop is ever dispatched again), it releases the
 * mutex it took back and passes on a notify it consumed.  True if so (the
 * caller does not hold the lock); False if the op had ended already (the
 * caller holds the lock, as after any wait). */
static PyObject *AOp_orphan(AOpObject *o, PyObject *unused)
{
    (void)unused;
    if (o->kind != AK_COND) {
        PyErr_SetString(PyExc_TypeError, "_LoopOp.orphan: not a cond wait");
        return NULL;
    }
    if (!o->pending) Py_RETURN_FALSE;
    o->abandoned = 1;
    o->orphaned = 1;
    sqf_loop_cancel(o->driver->loop, &o->op);
    Py_RETURN_TRUE;
}

static PyObject *AOp_pending(AOpObject *o, void *closure)
{
    (void)closure;
    return PyBool_FromLong(o->pending);
}

/* The finished op's value, recomputed from its result (a cond wait's). */
static PyObject *AOp_result(AOpObject *o, void *closure)
{
    (void)closure;
    if (o->pending) {
        PyErr_SetString(PyExc_RuntimeError, "_LoopOp.result: the wait is not over");
        return NULL;
    }
    return PyLong_FromLong(o->result);
}

static PyObject *AOp_future(AOpObject *o, void *closure)
{
    (void)closure;
    if (!o->future) Py_RETURN_NONE;
    return Py_NewRef(o->future);
}

static PyMethodDef AOp_methods[] = {
    {"abandon", (PyCFunction)AOp_abandon, METH_NOARGS,
     "The awaiting task gave up: cancel the wait, dispatch until it is over, and give back "
     "what it took."},
    {"orphan", (PyCFunction)AOp_orphan, METH_NOARGS,
     "A cond wait's coroutine is closed without its loop: cancel the wait, and release the "
     "mutex when it comes back. True if the wait was still pending."},
    {"rearm", (PyCFunction)AOp_rearm, METH_O,
     "rearm(loop)\n\nThe awaiting task was cancelled: cancel the wait, and return a new "
     "future that resolves when the wait is over (the loop keeps running)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef AOp_getset[] = {
    {"future", (getter)AOp_future, NULL, "The future the wait resolves.", NULL},
    {"pending", (getter)AOp_pending, NULL, "Whether the wait's callback has yet to run.", NULL},
    {"result", (getter)AOp_result, NULL, "The finished wait's result (0 or an errno).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject AOpType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._LoopOp",
    .tp_basicsize = sizeof(AOpObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)AOp_traverse,
    .tp_clear = no_clear,
    .tp_doc = "One pending wait of an asyncio task (internal).",
    .tp_dealloc = (destructor)AOp_dealloc,
    .tp_methods = AOp_methods,
    .tp_getset = AOp_getset,
};

static PyMethodDef Driver_methods[] = {
    {"fileno", (PyCFunction)Driver_fileno, METH_NOARGS,
     "The descriptor that is readable while completions wait for dispatch()."},
    {"dispatch", (PyCFunction)Driver_dispatch, METH_NOARGS,
     "Run the callbacks of the waits that ended (resolving their futures)."},
    {"start", (PyCFunction)Driver_start, METH_VARARGS,
     "start(kind, target, timeout, loop)\n\nStart a task's wait: its value if it completed at "
     "once, "
     "else a pending _LoopOp."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Driver_getset[] = {
    {"backend", (getter)Driver_backend, NULL, "'io_uring' or 'fallback'.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject DriverType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._LoopDriver",
    .tp_basicsize = sizeof(DriverObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)Driver_traverse,
    .tp_clear = no_clear,
    .tp_doc = "_LoopDriver()\n\nThe sqf_loop of one asyncio event loop (internal).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Driver_init,
    .tp_dealloc = (destructor)Driver_dealloc,
    .tp_methods = Driver_methods,
    .tp_getset = Driver_getset,
};
