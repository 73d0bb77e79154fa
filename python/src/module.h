/* module.h: what the files of the squarefree extension share.
 *
 * Each class embeds one C primitive of the library, which the extension
 * compiles in (python/setup.py): nothing else is needed at run time.  Every
 * blocking call runs the primitive's wait protocol (src/waitop.h: the same
 * step functions the C library's blocking calls and event loops run) with
 * one of two drivers:
 *   - blocking.c, for a thread: the C blocking driver, except that the GIL
 *     is released while the thread sleeps and a signal handler that raises
 *     (Ctrl-C's KeyboardInterrupt) stops the wait as a cancellation would;
 *   - aio.c, for an asyncio task: the library's event-loop driver (one
 *     sqf_loop per asyncio loop), resolving a future at dispatch;
 *   - green.c (and squarefree/_green.py), for a greenlet under a gevent or
 *     eventlet hub: aio.c's driver again, one per hub, watched by the hub,
 *     the greenlet switched out until its op's callback.  green_wait is
 *     the seam every blocking method passes once its try has failed; it
 *     answers "block as a thread" unless the caller runs under a hub.
 * A primitive's file holds its type and its thread methods; it tells aio.c
 * how a task or a greenlet waits on it through its kind (enum aio_kind).
 *
 * Objects are never freed while a thread waits on them: a method call
 * holds a reference to its object for the whole call, and a task's pending
 * wait holds one until its callback has run.
 *
 * Every symbol here is the extension's own: it is built with hidden
 * visibility, and only PyInit__squarefree is exported.
 */
#ifndef SQFPY_MODULE_H
#define SQFPY_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The newer C API calls, on the older Pythons too. */
#include "compat.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>

#include <squarefree.h>

/* The one internal header of the library: the module is a driver of the
 * wait protocol. */
#include "waitop.h"

/* --- arguments and results (convert.c) ------------------------------------ */

/* threading.TIMEOUT_MAX, read at import: a longer timeout raises
 * OverflowError where threading's would. */
extern double timeout_max;

/* A timeout argument (None: for ever) as a deadline, as threading reads it:
 * a negative one has passed already (a try).  0; 1 if it is longer than
 * timeout_max (then *out is a past deadline: a try, whose time-out means
 * OverflowError, see too_large); -1 with an exception set on a bad one. */
int deadline_of(PyObject *timeout, sqf_deadline *out);

/* A timed wait's result r after deadline_of said `large`: threading raises
 * OverflowError for a timeout past TIMEOUT_MAX only when the call would
 * wait, and a try with such a timeout that timed out would have waited.
 * r, or -1 with OverflowError set. */
int too_large(int large, int r);

/* "module.qualname" of self's class, as threading's reprs name it. */
PyObject *class_label(PyObject *self);

/* tp_dealloc of a type whose objects own no references: clears their weak
 * references and frees them. */
void plain_dealloc(PyObject *self);

/* A wait's result as threading's: True, False on a time-out, or raised. */
PyObject *bool_result(int r, const char *what);

/* A C error that bad input or misuse can cause, as Python's exception. */
PyObject *raise_errno(int e, const char *what);

/* __exit__'s result from the release it made: False (exceptions pass). */
PyObject *exit_result(PyObject *released);

/* __init__'s guard: a second call would reset a word that sleepers may be
 * using (a lost wake-up), or free what they use, so it is refused:
 * RuntimeError and -1 if *initialised, else 0.  The caller sets
 * *initialised once its __init__ has succeeded. */
int init_once(int initialised, PyObject *self);

/* n (a count argument, 1 if absent) in 1..max, else ValueError. */
int count_arg(PyObject *arg, unsigned long max, unsigned *out, const char *what);

/* --- the thread driver (blocking.c) --------------------------------------- */

/* Set up the GIL turnstile (once, at import): 0, or -1 with an exception. */
int blocking_init(void);

/* Release the GIL, and take it back through the turnstile. */
PyThreadState *gil_release(void);
void gil_take_back(PyThreadState *ts);

/* Run a wait protocol to its end; the step's result.  *raised is set if an
 * exception is pending (the caller gives back what the wait took, if
 * anything, and returns NULL). */
int run_wait(struct sqf_waitop *op, sqf_step_fn step, int *raised);

/* --- the objects ------------------------------------------------------------ */

/* Every object has a weak reference list (`weakrefs`, tp_weaklistoffset),
 * as threading's primitives do.
 *
 * Placement (shared.c).  The objects whose state is C words only (Lock,
 * RLock, Condition, the semaphores, Event, Latch, CountdownEvent, Barrier,
 * RobustLock) keep that state in a `struct *_state`, and reach it through
 * one pointer, `st`: to `own`, inside the object, for a private object; into
 * shared memory for a shared one (a block the module maps, or the caller's
 * buffer).  Every method goes through `st`, so both kinds run the same code.
 * What stays in the object is process-local (the weak references, a
 * Condition's Python lock object, a Barrier's action and default timeout).
 * A state begins with `magic`, written last when it is initialised, which
 * names its type: attaching to memory another process initialised checks
 * it.  Every state is 8-byte aligned, its size a multiple of 8. */

#define SQF_STATE_ALIGN 8

/* Where a shareable object's state is. */
struct placement {
    struct shm_block *block; /* a named mapping held for this object, or NULL */
    Py_buffer view;          /* the caller's buffer, exported while the object lives
                                (view.obj NULL: none) */
    PyObject *name;          /* the shared-memory name a pickle carries, or NULL (a private
                                object, or memory without a name: fork only) */
    Py_ssize_t offset;       /* the state's offset in the memory named */
    int shared;              /* the state is in shared memory: SQF_SHARED words */
    void *own;               /* while shared: the object's own state, for st to return to */
};

#define SHAREABLE_HEAD(state_type)                                                                 \
    PyObject_HEAD state_type *st;                                                                  \
    struct placement where;                                                                        \
    int initialised; /* __init__ (or attach) ran: a second __init__ is refused */

typedef struct {
    SHAREABLE_HEAD(void)
} ShareableObject;

/* tp_new of a shareable type: its state is `own` until __init__ places it. */
#define SHAREABLE_NEW(fn, Obj)                                                                     \
    static PyObject *fn(PyTypeObject *type, PyObject *args, PyObject *kw)                          \
    {                                                                                              \
        Obj *o = (Obj *)PyType_GenericNew(type, args, kw);                                         \
        if (o) o->st = &o->own;                                                                    \
        return (PyObject *)o;                                                                      \
    }

/* The flags for the C library's init: SQF_SHARED for a shared object. */
#define SQF_FLAGS_OF(o) ((o)->where.shared ? SQF_SHARED : SQF_PRIVATE)

/* The magic numbers, one per C type (a state's first word). */
enum state_magic {
    MAGIC_LOCK = 0x53514601, /* "SQF" and the type */
    MAGIC_RLOCK,
    MAGIC_COND,
    MAGIC_SEM,
    MAGIC_BSEM,
    MAGIC_BINSEM,
    MAGIC_BBINSEM,
    MAGIC_EVENT,
    MAGIC_LATCH,
    MAGIC_COUNTDOWN,
    MAGIC_BARRIER,
    MAGIC_ROBUST,
};

/* Place a new object's state (its __init__, after its arguments are
 * checked and before it initialises the state): `shared` as the keyword
 * gives it (NULL, None or False: private; True: a block the module
 * allocates; a SharedMemory, an mmap or any writable buffer: there, at
 * `offset`, NULL meaning 0).  0, or -1 raised with nothing changed. */
int placement_place(ShareableObject *o, PyObject *shared, PyObject *offset, size_t size);
/* The state is initialised: write its magic (a release). */
void placement_done(ShareableObject *o, uint32_t magic);
/* Free what the placement holds (dealloc). */
void placement_release(ShareableObject *o);
/* tp_dealloc of a shareable type whose objects own no references. */
void shareable_dealloc(PyObject *self);
/* The pid of this process, cached (updated in a child of fork). */
long proc_id(void);
/* Add attach, __reduce__, shared_size and the `shared` property to the
 * shareable types (at import, after PyType_Ready): 0, or -1 raised. */
int shared_init(PyObject *m);
/* A shareable object's process-local extras, for its pickle (NULL: none),
 * and their restoring in the process that attaches: Barrier and
 * Condition define them. */
PyObject *barrier_extras(PyObject *self);
int barrier_attached(PyObject *self, PyObject *extras);
PyObject *cond_extras(PyObject *self);
int cond_attached(PyObject *self, PyObject *extras);

struct event_state {
    _Alignas(SQF_STATE_ALIGN) uint32_t magic;
    sqf_event ev;
};

typedef struct {
    SHAREABLE_HEAD(struct event_state)
    PyObject *weakrefs;
    struct event_state own;
} EventObject;

struct latch_state {
    _Alignas(SQF_STATE_ALIGN) uint32_t magic;
    sqf_latch l;
};

typedef struct {
    SHAREABLE_HEAD(struct latch_state)
    PyObject *weakrefs;
    struct latch_state own;
} LatchObject;

struct countdown_state {
    _Alignas(SQF_STATE_ALIGN) uint32_t magic;
    sqf_countdown c;
};

typedef struct {
    SHAREABLE_HEAD(struct countdown_state)
    PyObject *weakrefs;
    struct countdown_state own;
} CountdownObject;

struct sem_state {
    _Alignas(SQF_STATE_ALIGN) uint32_t magic;
    int bounded;
    unsigned bound; /* a BoundedSemaphore's initial value */
    sqf_sem s;
};

typedef struct {
    SHAREABLE_HEAD(struct sem_state)
    PyObject *weakrefs;
    struct sem_state own;
} SemObject;

/* Lock is an sqf_mutex, which records no owner: any thread may release it,
 * and releasing it unlocked is an error, as threading.Lock.  An RLock's
 * owner is (pid, owner): lock_owner_now() names a thread or a task within
 * a process, and pid says which process (0 for a private RLock, whose
 * owners are all in one process). */
struct lock_state {
    _Alignas(SQF_STATE_ALIGN) uint32_t magic;
    sqf_mutex mu;
    unsigned long owner; /* RLock: the holder's lock_owner_now(), or 0 */
    unsigned long count; /* RLock: its recursion depth */
    long pid;            /* RLock: the holder's process, for a shared one */
};

typedef struct {
    SHAREABLE_HEAD(struct lock_state)
    PyObject *weakrefs;
    struct lock_state own;
} LockObject;

/* threading.Barrier over an sqf_barrier (barrier.c says how it resets). */
struct barrier_state {
    _Alignas(SQF_STATE_ALIGN) uint32_t magic;
    int resetting; /* a reset is under way (atomic: processes share it) */
    sqf_barrier b;
    sqf_event reset_done; /* set while no reset is under way */
};

typedef struct {
    SHAREABLE_HEAD(struct barrier_state)
    PyObject *action;     /* or NULL */
    PyObject *timeout;    /* the default timeout (None: for ever) */
    unsigned long runner; /* the thread running the action, or 0 (under the GIL) */
    PyObject *weakrefs;
    struct barrier_state own;
} BarrierObject;

/* Whether a reset is under way (in any process, for a shared barrier). */
#define BARRIER_RESETTING(o) __atomic_load_n(&(o)->st->resetting, __ATOMIC_RELAXED)

/* Two ways to wait, chosen by the lock:
 *   - a squarefree Lock or RLock (threading's default: a new RLock): the
 *     sqf_cond waits on the lock's own mutex.  wait() releases the lock,
 *     sleeps, and takes it back before it returns, whatever it returns (an
 *     RLock held several times is released entirely and restored), and
 *     notify_all() moves the waiters onto the mutex with one system call;
 *   - any other lock (threading.Lock, a user's class): the sqf_cond waits
 *     on `gate`, a mutex of the Condition's own.  A waiter takes the gate,
 *     then releases the lock (its _release_save, or release()), sleeps on
 *     the cond (which releases the gate), and once woken releases the gate
 *     and takes the lock back (_acquire_restore, or acquire()).  A notifier
 *     holds the lock, and signals under the gate: a waiter holds the gate
 *     from before it releases the lock until it sleeps, so no notification
 *     made under the lock can fall between the two.  The gate is never held
 *     while waiting for the lock, so the two cannot deadlock.
 * `waiting` counts the waiters, threads and tasks (of every process, for
 * a shared Condition: changed atomically), and bounds notify(n).  A task
 * waits (aio.c's AK_COND) on the fast path only, and a shared Condition
 * is always on the fast path (over a shared Lock or RLock). */
struct cond_state {
    _Alignas(SQF_STATE_ALIGN) uint32_t magic;
    sqf_cond c;
    sqf_mutex gate; /* any other lock: the mutex c waits on */
    unsigned long waiting;
};

typedef struct {
    SHAREABLE_HEAD(struct cond_state)
    PyObject *lock;
    int fast; /* lock is a squarefree Lock or RLock: c waits on its mutex */
    PyObject *weakrefs;
    struct cond_state own;
} CondObject;

/* A Condition's waiter count, changed by every process that waits. */
#define COND_WAITING(o)        __atomic_load_n(&(o)->st->waiting, __ATOMIC_RELAXED)
#define COND_WAITING_ADD(o, d) __atomic_add_fetch(&(o)->st->waiting, (d), __ATOMIC_RELAXED)

/* RobustLock (robust.c): an sqf_robust_mutex. */
struct robust_state {
    _Alignas(SQF_STATE_ALIGN) uint32_t magic;
    sqf_robust_mutex m;
};

typedef struct {
    SHAREABLE_HEAD(struct robust_state)
    PyObject *weakrefs;
    struct robust_state own;
} RobustObject;

extern PyTypeObject RobustLockType;
extern PyObject *OwnerDiedError, *LockNotRecoverableError;

/* A barrier wait's action: the completion barrier_action runs. */
struct barrier_call {
    BarrierObject *self;
    int raised; /* the action raised: its exception is set */
};
void barrier_action(void *arg);

/* The kinds of wait a loop op (aio.c) makes: the package names them in
 * _KINDS; the blocking methods pass them to green_wait. */
enum aio_kind {
    AK_LOCK,
    AK_SEM,
    AK_EVENT,
    AK_LATCH,
    AK_COUNTDOWN,
    AK_BARRIER,
    AK_BARRIER_GATE,
    AK_LIMITER,
    AK_RLOCK, /* an RLock's mutex: the package records the owner once it has it */
    AK_COND,  /* a Condition's wait: the op ends with the mutex held again */
    AK_ONCE,  /* a greenlet's wait for a Once's run to end (once_idle) */
};

extern PyTypeObject EventType, LatchType, CountdownType, SemType, BSemType, LockType, RLockType,
    CondType, OnceType, BarrierType, DriverType, AOpType;

/* _QueueCore and _SimpleQueueCore (queue.c): queue_init readies them and
 * puts them, and the exceptions they raise, in the module m at import: 0,
 * or -1 raised. */
int queue_init(PyObject *m);

/* The asyncio driver (aio.c): aio_init adds _KINDS, the kinds of wait
 * _LoopDriver.start knows by name, to the module m at import. */
int aio_init(PyObject *m);
extern PyMethodDef aio_functions[]; /* the module's functions: _try */

/* BinarySemaphore and BoundedBinarySemaphore (binsem.c): Semaphore's
 * subtypes, so a task waits on them as on a Semaphore (AK_SEM). */
extern PyTypeObject BinSemType, BBinSemType;

/* CapacityLimiter and RCapacityLimiter (limiter.c).  A task's wait for a
 * token (AK_LIMITER) targets a _LimiterWait, made by the limiter's
 * _async_prepare: it waits on limiter_wait_sem, limiter_wait_value makes
 * the wait's value (on 0 it records the borrower, in the callback that the
 * completion runs), and limiter_wait_undo gives back what a task that gave
 * up was given.  limiter_init readies the internal types and adds
 * WouldBlock to the module (at import). */
extern PyTypeObject LimiterType, RLimiterType, LimiterWaitType;
sqf_sem *limiter_wait_sem(PyObject *wait);
PyObject *limiter_wait_value(PyObject *wait, int r);
void limiter_wait_undo(PyObject *wait);
int limiter_init(PyObject *module);

extern PyObject *BrokenLatchError;   /* squarefree.BrokenLatchError */
extern PyObject *BrokenBarrierError; /* threading.BrokenBarrierError */
extern PyObject *Again;              /* a barrier's reset ended: the task arrives again */

/* A latch wait's result: True, False on a time-out, or BrokenLatchError. */
PyObject *latch_result(int r);

/* Lock's and RLock's methods, which Condition forwards to. */
PyObject *Lock_acquire(LockObject *self, PyObject *args, PyObject *kw);
PyObject *Lock_release(LockObject *self, PyObject *unused);
PyObject *RLock_acquire(LockObject *self, PyObject *args, PyObject *kw);
PyObject *RLock_release(LockObject *self, PyObject *unused);
int lock_is_owned(LockObject *self); /* by the caller (a Lock: held at all) */
/* Record an RLock's holder and depth (0, 0: nobody); with its process, for
 * a shared one. */
void lock_set_owner(LockObject *self, unsigned long owner, unsigned long count);

/* Lock.acquire's arguments (blocking=True, timeout=-1), as threading reads
 * them: 0 with *deadline set (SQF_FOREVER, or 0 for one try), -1 raised. */
int lock_args(PyObject *args, PyObject *kw, sqf_deadline *deadline);

/* Who takes an RLock now: the asyncio or trio task running in this
 * thread, if any, else the greenlet running under a hub (not its thread's
 * main one), else the thread (lock.c says why). */
unsigned long lock_owner_now(void);

/* trio (trio.c): whether a trio task runs now in this thread, as sniffio
 * tells (trio sets its context variable to "trio"); that task (a new
 * reference), or NULL if none does (no exception set either way).
 * trio_init adds _trio_running, the first as a function, to the module m
 * at import. */
int trio_running(void);
PyObject *trio_current_task(void);
int trio_init(PyObject *m);

/* Take mu until deadline (0: one try), the GIL released while asleep; a
 * signal handler that raises stops the wait.  1 taken, 0 not, -1 raised. */
int mutex_take(sqf_mutex *mu, sqf_deadline deadline);

/* A Once's event that is set while no run of its fn is under way: a
 * greenlet waits on it (AK_ONCE), then tries again. */
sqf_event *once_idle(PyObject *once);

/* --- greenlets (green.c) ---------------------------------------------------- */

/* The seam of the blocking methods: called once the method's try has
 * failed (the wait would sleep).  If the calling greenlet runs under a
 * gevent or eventlet hub, the wait is the hub's: a loop op of kind on
 * target until deadline, the greenlet switched out meanwhile.  Returns 0
 * (not under a hub: block as a thread), 1 (*value is the method's value,
 * as the loop op gives it: True/False, a barrier's index...), or -1 (an
 * exception: the hub's Timeout, GreenletExit..., after the wait gave back
 * what had reached it).  A deadline that has passed is the thread's (a
 * try), except for a cond wait (it must take its lock back).  Costs two
 * dictionary lookups (sys.modules) when neither library is imported. */
int green_wait(int kind, PyObject *target, sqf_deadline deadline, PyObject **value);

/* Whether gevent or eventlet is imported (without either no hub exists):
 * for a caller that would prepare something for green_wait. */
int green_maybe(void);

/* green_wait's value as a truth: 1 or 0 (the reference dropped). */
int green_truth(PyObject *value);

/* The current greenlet if it runs under a hub and is not its thread's
 * main greenlet (a new reference), else NULL, no exception either way:
 * the owner of an RLock and the default borrower of a limiter. */
PyObject *green_current(void);

/* Intern its names at import: 0, or -1 raised. */
int green_init(void);

#endif
