/* limiter.c: CapacityLimiter and RCapacityLimiter (anyio's capacity
 * limiter, for threads and asyncio tasks alike), over one sqf_sem.
 *
 * The tokens.  total_n tokens exist: total_tokens, or SQF_SEM_VALUE_MAX for
 * math.inf and larger ints (more borrowers than a process can have).  Each
 * is free (a permit of s) or borrowed (one record in `borrowers`), and when
 * total_tokens is lowered below what is borrowed, the difference is debt:
 * a token that comes back pays it off instead of returning to s.  So, at
 * every moment Python code can run:
 *     value(s) + len(borrowers) == total_n + debt
 *     debt > 0  implies  value(s) == 0
 * A borrower's record holds one token whatever its count (the
 * acquisitions of an RCapacityLimiter's borrower not yet released).
 *
 * No token is taken without its record, nor returned without its record's
 * removal, at any moment an exception, a signal handler or another thread
 * could see: every change is C code holding the GIL that calls no Python
 * code between the two halves.  Records are keyed by the borrower's
 * identity (an int) so that no dictionary operation runs a borrower's
 * __hash__ or __eq__; everything an acquisition may fail to allocate is
 * allocated before its token is taken (struct claim); and the last
 * reference to a record (and so perhaps to its borrower, whose finaliser
 * may run) goes after the token is back.  A thread records the borrower in
 * the same C call whose wait step took the token; a task's wait (aio.c's
 * AK_LIMITER, whose target is a _LimiterWait) does it in the callback that
 * the step's completion runs, before the future is resolved, and a task
 * that gives up (cancelled) releases what its wait recorded or took. */
#include "module.h"

#include <math.h>

/* One borrower's record: the value of `borrowers` at id(borrower). */
typedef struct {
    PyObject_HEAD PyObject *borrower;
    Py_ssize_t count; /* acquisitions not yet released: 1 but in an RCapacityLimiter */
} BorrowObject;

typedef struct {
    PyObject_HEAD sqf_sem s; /* the free tokens */
    PyObject *total;         /* total_tokens as set: an int or math.inf */
    unsigned total_n;
    unsigned debt;
    PyObject *borrowers; /* {id(borrower): _Borrow} */
    int reentrant;
} LimiterObject;

enum { WAIT_NONE, WAIT_HELD, WAIT_DONE };

/* A task's wait for a token: its claim, and how far it got. */
typedef struct {
    PyObject_HEAD LimiterObject *lim;
    PyObject *key;
    PyObject *rec;
    int state; /* WAIT_NONE: no token recorded; HELD: recorded; DONE: given back */
} LimiterWaitObject;

static PyObject *WouldBlock, *asyncio_name, *threading_name;

static const char held_msg[] =
    "this borrower is already holding one of this CapacityLimiter's tokens";
static const char not_held_msg[] =
    "this borrower isn't holding any of this CapacityLimiter's tokens";

/* --- the records ------------------------------------------------------------- */

static int Borrow_traverse(BorrowObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->borrower);
    return 0;
}

static void Borrow_dealloc(BorrowObject *self)
{
    PyObject_GC_UnTrack(self);
    Py_XDECREF(self->borrower);
    PyObject_GC_Del(self);
}

static PyTypeObject BorrowType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._Borrow",
    .tp_basicsize = sizeof(BorrowObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A borrower's record in a CapacityLimiter (internal).",
    .tp_traverse = (traverseproc)Borrow_traverse,
    .tp_dealloc = (destructor)Borrow_dealloc,
};

/* A token comes back: it pays off debt, or is free again. */
static void give_back(LimiterObject *self)
{
    if (self->debt)
        self->debt--;
    else
        sqf_sem_release(&self->s, 1); /* within total_n: see the invariants */
}

/* What an acquisition needs once its token is taken, made beforehand. */
struct claim {
    PyObject *key; /* id(borrower) */
    PyObject *rec; /* its record, count 1 */
};

static void claim_drop(struct claim *c)
{
    Py_CLEAR(c->key);
    Py_CLEAR(c->rec);
}

/* Before taking a token for borrower: 0, c made (take one, then commit);
 * 1, the borrower of a reentrant limiter held one already and its count
 * went up (nothing to take); -1 raised (RuntimeError: it holds one). */
static int claim_prepare(LimiterObject *self, PyObject *borrower, struct claim *c)
{
    c->key = PyLong_FromVoidPtr(borrower);
    c->rec = NULL;
    if (!c->key) return -1;
    BorrowObject *held = (BorrowObject *)PyDict_GetItemWithError(self->borrowers, c->key);
    if (held || PyErr_Occurred()) {
        Py_CLEAR(c->key);
        if (!held) return -1;
        if (self->reentrant) {
            held->count++;
            return 1;
        }
        PyErr_SetString(PyExc_RuntimeError, held_msg);
        return -1;
    }
    BorrowObject *rec = PyObject_GC_New(BorrowObject, &BorrowType);
    if (!rec) {
        Py_CLEAR(c->key);
        return -1;
    }
    rec->borrower = Py_NewRef(borrower);
    rec->count = 1;
    PyObject_GC_Track(rec);
    c->rec = (PyObject *)rec;
    return 0;
}

/* A token was just taken for c: record it (0), or give it back (-1,
 * raised).  Another acquisition for the same borrower may have recorded
 * one while this one waited: a reentrant limiter counts it, and the token
 * goes back. */
static int claim_commit(LimiterObject *self, struct claim *c)
{
    PyObject *got = PyDict_SetDefault(self->borrowers, c->key, c->rec);
    if (got == c->rec) return 0;
    give_back(self);
    if (!got) return -1; /* (no memory) */
    if (self->reentrant) {
        ((BorrowObject *)got)->count++;
        return 0;
    }
    PyErr_SetString(PyExc_RuntimeError, held_msg);
    return -1;
}

/* One release for the borrower whose id is key: 0, or 1 if it holds
 * nothing (nothing changes). */
static int release_key(LimiterObject *self, PyObject *key)
{
    BorrowObject *held = (BorrowObject *)PyDict_GetItemWithError(self->borrowers, key);
    if (!held) return PyErr_Occurred() ? -1 : 1;
    if (held->count > 1) {
        held->count--;
        return 0;
    }
    Py_INCREF(held); /* its last reference goes once the token is back */
    if (PyDict_DelItem(self->borrowers, key) < 0) {
        Py_DECREF(held);
        return -1;
    }
    give_back(self);
    Py_DECREF(held);
    return 0;
}

/* --- the limiter ---------------------------------------------------------------- */

/* total_tokens as anyio takes it: an int >= 1 or math.inf (TypeError,
 * ValueError); *n the tokens that exist for it. */
static int total_arg(PyObject *v, unsigned *n)
{
    if (PyFloat_Check(v) && isinf(PyFloat_AS_DOUBLE(v))) {
        if (PyFloat_AS_DOUBLE(v) < 0) goto small;
        *n = SQF_SEM_VALUE_MAX;
        return 0;
    }
    if (!PyLong_Check(v)) {
        PyErr_SetString(PyExc_TypeError, "total_tokens must be an int or math.inf");
        return -1;
    }
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (x == -1 && PyErr_Occurred()) return -1;
    if (overflow < 0 || (!overflow && x < 1)) goto small;
    *n = overflow || x > SQF_SEM_VALUE_MAX ? SQF_SEM_VALUE_MAX : (unsigned)x;
    return 0;
small:
    PyErr_SetString(PyExc_ValueError, "total_tokens must be >= 1");
    return -1;
}

static int Limiter_init(LimiterObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"total_tokens", NULL};
    PyObject *total = NULL;
    unsigned n = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:CapacityLimiter", kwlist, &total)) return -1;
    if (self->borrowers) {
        PyErr_SetString(PyExc_RuntimeError, "CapacityLimiter initialised twice");
        return -1;
    }
    if (total && total_arg(total, &n) < 0) return -1;
    PyObject *borrowers = PyDict_New(), *t = total ? Py_NewRef(total) : PyLong_FromLong(1);
    if (!borrowers || !t) {
        Py_XDECREF(borrowers);
        Py_XDECREF(t);
        return -1;
    }
    Py_XSETREF(self->total, t);
    self->total_n = n;
    self->debt = 0;
    self->reentrant = PyObject_TypeCheck(self, &RLimiterType);
    sqf_sem_init(&self->s, n, 0, SQF_PRIVATE);
    self->borrowers = borrowers; /* last: ready() from now on */
    return 0;
}

static int Limiter_traverse(LimiterObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->borrowers);
    return 0;
}

static void Limiter_dealloc(LimiterObject *self)
{
    /* A waiting thread or task holds a reference: nobody waits on s. */
    PyObject_GC_UnTrack(self);
    Py_XDECREF(self->borrowers);
    Py_XDECREF(self->total);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int ready(LimiterObject *self)
{
    if (self->borrowers) return 0;
    PyErr_SetString(PyExc_RuntimeError, "CapacityLimiter not initialised");
    return -1;
}

/* The current asyncio or trio task (new reference), or None if no task
 * runs in this thread; NULL raised.  asyncio is looked up, not imported:
 * whoever runs a loop has imported it. */
static PyObject *current_task(void)
{
    PyObject *trio_task = trio_current_task();
    if (trio_task) return trio_task;
    PyObject *asyncio = PyImport_GetModule(asyncio_name);
    if (!asyncio) return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    PyObject *task, *loop = PyObject_CallMethod(asyncio, "_get_running_loop", NULL);
    if (!loop || loop == Py_None)
        task = loop;
    else
        task = PyObject_CallMethod(asyncio, "current_task", "O", loop);
    if (task != loop) Py_DECREF(loop);
    Py_DECREF(asyncio);
    return task;
}

/* The default borrower: the current asyncio or trio task when called
 * from one, else the current greenlet under a hub (as an RLock's owner),
 * else the current thread (a new reference; NULL raised). */
static PyObject *current_borrower(void)
{
    PyObject *task = current_task();
    if (task != Py_None) return task;
    Py_DECREF(task);
    PyObject *g = green_current();
    if (g) return g;
    PyObject *threading = PyImport_Import(threading_name);
    if (!threading) return NULL;
    PyObject *thread = PyObject_CallMethod(threading, "current_thread", NULL);
    Py_DECREF(threading);
    return thread;
}

/* A task's or a greenlet's wait for a token, made of the claim c (whose
 * references move to it; c is left empty), or NULL raised (c intact). */
static LimiterWaitObject *wait_of_claim(LimiterObject *self, struct claim *c)
{
    LimiterWaitObject *w = PyObject_GC_New(LimiterWaitObject, &LimiterWaitType);
    if (!w) return NULL;
    w->lim = (LimiterObject *)Py_NewRef(self);
    w->key = c->key;
    w->rec = c->rec;
    c->key = c->rec = NULL;
    w->state = WAIT_NONE;
    PyObject_GC_Track(w);
    return w;
}

/* A greenlet under a hub waits for its token in the hub, as a task does
 * (AK_LIMITER: the op's callback records it): 1 taken and recorded, 0
 * timed out, -1 raised (what reached it given back), with c's references
 * moved into the wait; 2 if the caller is no such greenlet (c intact). */
static int limiter_green(LimiterObject *self, struct claim *c, sqf_deadline deadline)
{
    if (!green_maybe()) return 2;
    LimiterWaitObject *w = wait_of_claim(self, c);
    if (!w) return -1;
    PyObject *v;
    int g = green_wait(AK_LIMITER, (PyObject *)w, deadline, &v);
    if (g == 0) { /* the claim goes back to the thread's wait */
        c->key = w->key;
        c->rec = w->rec;
        w->key = w->rec = NULL;
    }
    Py_DECREF(w);
    return g == 0 ? 2 : g < 0 ? -1 : green_truth(v);
}

/* One acquisition for borrower (NULL: the default): 1 taken, 0 not (not
 * blocking, or the deadline passed), -1 raised. */
static int acquire_for(LimiterObject *self, PyObject *borrower, int blocking, sqf_deadline deadline)
{
    if (ready(self) < 0) return -1;
    PyObject *dflt = borrower ? NULL : current_borrower();
    if (!borrower && !dflt) return -1;
    struct claim c;
    int r = claim_prepare(self, borrower ? borrower : dflt, &c);
    Py_XDECREF(dflt); /* a thread or task: alive while it runs this */
    if (r) return r;
    if (!blocking) {
        r = sqf_sem_tryacquire(&self->s) == 0 ? 0 : ETIMEDOUT;
    } else if (sqf_sem_tryacquire(&self->s) == 0) {
        r = 0;
    } else if ((r = limiter_green(self, &c, deadline)) != 2) {
        claim_drop(&c);
        return r;
    } else {
        struct sqf_waitop op = sqf_op_blocking(deadline, NULL);
        op.u.sem.s = &self->s;
        int raised;
        r = run_wait(&op, sqf_sem_acquire_step_, &raised);
        if (raised) {
            if (r == 0) give_back(self); /* taken as the signal came */
            r = -1;
        }
    }
    if (r == 0 && claim_commit(self, &c) < 0) r = -1;
    claim_drop(&c);
    if (r < 0) return -1;
    if (r == 0) return 1;
    if (r == ETIMEDOUT) return 0;
    raise_errno(r, "acquire failed");
    return -1;
}

/* acquire's and acquire_on_behalf_of's blocking=True, timeout=None. */
static PyObject *acquire_args(LimiterObject *self, PyObject *borrower, int blocking,
                              PyObject *timeout)
{
    if (!blocking && timeout != Py_None) {
        PyErr_SetString(PyExc_ValueError, "can't specify timeout for non-blocking acquire");
        return NULL;
    }
    sqf_deadline deadline;
    int large = deadline_of(timeout, &deadline); /* as Semaphore's: negative has passed */
    if (large < 0) return NULL;
    int r = acquire_for(self, borrower, blocking, deadline);
    if (r == 0 && too_large(large, ETIMEDOUT) < 0) return NULL;
    return r < 0 ? NULL : PyBool_FromLong(r);
}

static PyObject *Limiter_acquire(LimiterObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"blocking", "timeout", NULL};
    PyObject *timeout = Py_None;
    int blocking = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|pO:acquire", kwlist, &blocking, &timeout))
        return NULL;
    return acquire_args(self, NULL, blocking, timeout);
}

static PyObject *Limiter_acquire_on_behalf_of(LimiterObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"borrower", "blocking", "timeout", NULL};
    PyObject *borrower, *timeout = Py_None;
    int blocking = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|pO:acquire_on_behalf_of", kwlist, &borrower,
                                     &blocking, &timeout))
        return NULL;
    return acquire_args(self, borrower, blocking, timeout);
}

/* The _nowait forms: None, or WouldBlock. */
static PyObject *nowait_result(int r)
{
    if (r < 0) return NULL;
    if (r) Py_RETURN_NONE;
    PyErr_SetNone(WouldBlock);
    return NULL;
}

static PyObject *Limiter_acquire_nowait(LimiterObject *self, PyObject *unused)
{
    (void)unused;
    return nowait_result(acquire_for(self, NULL, 0, 0));
}

static PyObject *Limiter_acquire_on_behalf_of_nowait(LimiterObject *self, PyObject *borrower)
{
    return nowait_result(acquire_for(self, borrower, 0, 0));
}

static PyObject *Limiter_enter(LimiterObject *self, PyObject *unused)
{
    (void)unused;
    int r = acquire_for(self, NULL, 1, SQF_FOREVER);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

/* One release for borrower (NULL: the default): None, or RuntimeError if
 * it holds nothing. */
static PyObject *release_for(LimiterObject *self, PyObject *borrower)
{
    if (ready(self) < 0) return NULL;
    PyObject *dflt = borrower ? NULL : current_borrower();
    if (!borrower && !dflt) return NULL;
    PyObject *key = PyLong_FromVoidPtr(borrower ? borrower : dflt);
    Py_XDECREF(dflt);
    if (!key) return NULL;
    int r = release_key(self, key);
    Py_DECREF(key);
    if (r < 0) return NULL;
    if (r) {
        PyErr_SetString(PyExc_RuntimeError, not_held_msg);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *Limiter_release(LimiterObject *self, PyObject *unused)
{
    (void)unused;
    return release_for(self, NULL);
}

static PyObject *Limiter_release_on_behalf_of(LimiterObject *self, PyObject *borrower)
{
    return release_for(self, borrower);
}

static PyObject *Limiter_exit(LimiterObject *self, PyObject *args)
{
    (void)args;
    return exit_result(release_for(self, NULL));
}

/* _async_prepare(borrower): None if a reentrant limiter's borrower held a
 * token already (its count went up), else the _LimiterWait that a task's
 * wait (AK_LIMITER) completes. */
static PyObject *Limiter_async_prepare(LimiterObject *self, PyObject *borrower)
{
    if (ready(self) < 0) return NULL;
    struct claim c;
    int r = claim_prepare(self, borrower, &c);
    if (r) return r < 0 ? NULL : Py_NewRef(Py_None);
    LimiterWaitObject *w = wait_of_claim(self, &c);
    if (!w) claim_drop(&c);
    return (PyObject *)w;
}

static PyObject *Limiter_get_total(LimiterObject *self, void *closure)
{
    (void)closure;
    if (ready(self) < 0) return NULL;
    return Py_NewRef(self->total);
}

/* Raising total_tokens frees tokens (one release: one system call wakes as
 * many waiters as it frees); lowering it withdraws free tokens and owes
 * the rest, which new acquirers wait for. */
static int Limiter_set_total(LimiterObject *self, PyObject *value, void *closure)
{
    (void)closure;
    unsigned n;
    if (!value) {
        PyErr_SetString(PyExc_AttributeError, "can't delete total_tokens");
        return -1;
    }
    if (ready(self) < 0 || total_arg(value, &n) < 0) return -1;
    if (n > self->total_n) {
        unsigned up = n - self->total_n, pay = up < self->debt ? up : self->debt;
        self->debt -= pay;
        if (up > pay) sqf_sem_release(&self->s, up - pay);
    } else if (n < self->total_n) {
        unsigned down = self->total_n - n, got = 0;
        sqf_sem_tryacquire_n(&self->s, down, &got);
        self->debt += down - got;
    }
    self->total_n = n;
    Py_SETREF(self->total, Py_NewRef(value));
    return 0;
}

static PyObject *Limiter_borrowed(LimiterObject *self, void *closure)
{
    (void)closure;
    if (ready(self) < 0) return NULL;
    return PyLong_FromSsize_t(PyDict_GET_SIZE(self->borrowers));
}

static PyObject *Limiter_available(LimiterObject *self, void *closure)
{
    (void)closure;
    if (ready(self) < 0) return NULL;
    PyObject *borrowed = PyLong_FromSsize_t(PyDict_GET_SIZE(self->borrowers));
    if (!borrowed) return NULL;
    PyObject *r = PyNumber_Subtract(self->total, borrowed); /* inf stays inf; may be < 0 */
    Py_DECREF(borrowed);
    return r;
}

static PyObject *Limiter_waiting(LimiterObject *self, void *closure)
{
    (void)closure;
    unsigned n = 0;
    if (ready(self) < 0) return NULL;
    sqf_sem_getwaiters(&self->s, &n);
    return PyLong_FromUnsignedLong(n);
}

static PyObject *Limiter_borrowers(LimiterObject *self, void *closure)
{
    (void)closure;
    if (ready(self) < 0) return NULL;
    PyObject *values = PyDict_Values(self->borrowers);
    if (!values) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(values);
    PyObject *r = PyTuple_New(n);
    for (Py_ssize_t i = 0; r && i < n; i++)
        PyTuple_SET_ITEM(r, i, Py_NewRef(((BorrowObject *)PyList_GET_ITEM(values, i))->borrower));
    Py_DECREF(values);
    return r;
}

static PyObject *Limiter_count(LimiterObject *self, PyObject *borrower)
{
    if (ready(self) < 0) return NULL;
    PyObject *key = PyLong_FromVoidPtr(borrower);
    if (!key) return NULL;
    BorrowObject *held = (BorrowObject *)PyDict_GetItemWithError(self->borrowers, key);
    Py_DECREF(key);
    if (!held && PyErr_Occurred()) return NULL;
    return PyLong_FromSsize_t(held ? held->count : 0);
}

static PyMethodDef Limiter_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))Limiter_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire(blocking=True, timeout=None) -> bool\n\nBorrow a token for the current task or "
     "thread, waiting for one if needed: True, or False if not blocking or if the timeout "
     "(seconds) passed first.  RuntimeError if it holds one already (an RCapacityLimiter "
     "counts it instead)."},
    {"acquire_nowait", (PyCFunction)Limiter_acquire_nowait, METH_NOARGS,
     "acquire_nowait()\n\nBorrow a token for the current task or thread if one is free now, "
     "else raise WouldBlock."},
    {"acquire_on_behalf_of_nowait", (PyCFunction)Limiter_acquire_on_behalf_of_nowait, METH_O,
     "acquire_on_behalf_of_nowait(borrower)\n\nBorrow a token for borrower if one is free "
     "now, else raise WouldBlock."},
    {"release", (PyCFunction)Limiter_release, METH_NOARGS,
     "release()\n\nGive back the current task's or thread's token; RuntimeError if it holds "
     "none."},
    {"__enter__", (PyCFunction)Limiter_enter, METH_NOARGS, "acquire()"},
    {"__exit__", (PyCFunction)Limiter_exit, METH_VARARGS, "release()"},
    {"acquire_on_behalf_of", (PyCFunction)(void (*)(void))Limiter_acquire_on_behalf_of,
     METH_VARARGS | METH_KEYWORDS,
     "acquire_on_behalf_of(borrower, blocking=True, timeout=None) -> bool\n\nBorrow a token "
     "for borrower, waiting for one if needed: True, or False if not blocking or if the "
     "timeout (seconds) passed first.  RuntimeError if borrower holds one already (an "
     "RCapacityLimiter counts it instead)."},
    {"release_on_behalf_of", (PyCFunction)Limiter_release_on_behalf_of, METH_O,
     "release_on_behalf_of(borrower)\n\nGive back borrower's token (an RCapacityLimiter: once "
     "every acquisition is released); RuntimeError if it holds none."},
    {"count_of", (PyCFunction)Limiter_count, METH_O,
     "count_of(borrower) -> int\n\nborrower's acquisitions not yet released (0: it holds no "
     "token; more than 1 only in an RCapacityLimiter)."},
    {"_async_prepare", (PyCFunction)Limiter_async_prepare, METH_O,
     "A task's acquisition for borrower (internal)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Limiter_getset[] = {
    {"total_tokens", (getter)Limiter_get_total, (setter)Limiter_set_total,
     "The tokens there are (an int >= 1, or math.inf); settable at any time: raising it wakes "
     "as many waiters as it frees, lowering it below borrowed_tokens makes acquirers wait "
     "until enough are returned.",
     NULL},
    {"borrowed_tokens", (getter)Limiter_borrowed, NULL, "The tokens borrowed now.", NULL},
    {"available_tokens", (getter)Limiter_available, NULL,
     "total_tokens - borrowed_tokens (negative while total_tokens is below what is borrowed).",
     NULL},
    {"waiting", (getter)Limiter_waiting, NULL,
     "The threads and tasks waiting for a token now (a snapshot).", NULL},
    {"borrowers", (getter)Limiter_borrowers, NULL,
     "A tuple of the borrowers holding a token now (a snapshot).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject LimiterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._squarefree.CapacityLimiter",
    .tp_basicsize = sizeof(LimiterObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "CapacityLimiter(total_tokens=1)\n\nanyio's capacity limiter: at most total_tokens "
              "borrowers hold a token at once; a borrower holds at most one.",
    .tp_traverse = (traverseproc)Limiter_traverse,
    .tp_dealloc = (destructor)Limiter_dealloc,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Limiter_init,
    .tp_methods = Limiter_methods,
    .tp_getset = Limiter_getset,
};

PyTypeObject RLimiterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._squarefree.RCapacityLimiter",
    .tp_basicsize = sizeof(LimiterObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "RCapacityLimiter(total_tokens=1)\n\nA reentrant CapacityLimiter: a borrower may "
              "acquire again (counted); it holds one token until it has released as many "
              "times.",
    .tp_traverse = (traverseproc)Limiter_traverse,
    .tp_dealloc = (destructor)Limiter_dealloc,
    .tp_base = &LimiterType,
};

/* --- a task's wait (aio.c's AK_LIMITER) ------------------------------------------- */

sqf_sem *limiter_wait_sem(PyObject *wait)
{
    return &((LimiterWaitObject *)wait)->lim->s;
}

/* The wait ended with r: on 0 (the token taken) record it, in the same
 * callback: True, or NULL with the exception (the token given back). */
PyObject *limiter_wait_value(PyObject *wait, int r)
{
    LimiterWaitObject *w = (LimiterWaitObject *)wait;
    if (r != 0) return bool_result(r, "CapacityLimiter.async_acquire failed");
    struct claim c = {w->key, w->rec};
    if (claim_commit(w->lim, &c) < 0) {
        w->state = WAIT_DONE;
        return NULL;
    }
    w->state = WAIT_HELD;
    Py_RETURN_TRUE;
}

/* The task gave up after its wait ended with 0: give back what reached it
 * (its record's acquisition, or the token it never recorded). */
void limiter_wait_undo(PyObject *wait)
{
    LimiterWaitObject *w = (LimiterWaitObject *)wait;
    int state = w->state;
    w->state = WAIT_DONE;
    if (state == WAIT_NONE)
        give_back(w->lim);
    else if (state == WAIT_HELD && release_key(w->lim, w->key) < 0)
        PyErr_WriteUnraisable((PyObject *)w->lim);
}

static int LimiterWait_traverse(LimiterWaitObject *w, visitproc visit, void *arg)
{
    Py_VISIT(w->lim);
    Py_VISIT(w->rec);
    return 0;
}

static void LimiterWait_dealloc(LimiterWaitObject *w)
{
    PyObject_GC_UnTrack(w);
    Py_XDECREF(w->rec);
    Py_XDECREF(w->key);
    Py_XDECREF(w->lim);
    PyObject_GC_Del(w);
}

PyTypeObject LimiterWaitType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "squarefree._LimiterWait",
    .tp_basicsize = sizeof(LimiterWaitObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A task's wait for a CapacityLimiter's token (internal).",
    .tp_traverse = (traverseproc)LimiterWait_traverse,
    .tp_dealloc = (destructor)LimiterWait_dealloc,
};

int limiter_init(PyObject *m)
{
    if (PyType_Ready(&BorrowType) < 0 || PyType_Ready(&LimiterWaitType) < 0) return -1;
    asyncio_name = PyUnicode_InternFromString("asyncio");
    threading_name = PyUnicode_InternFromString("threading");
    if (!asyncio_name || !threading_name) return -1;
    WouldBlock = PyErr_NewExceptionWithDoc(
        "squarefree.WouldBlock", "A _nowait call found nothing free (anyio.WouldBlock's role).",
        NULL, NULL);
    if (!WouldBlock) return -1;
    return PyModule_AddObjectRef(m, "WouldBlock", WouldBlock);
}
