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
 *     sqf_loop per asyncio loop), resolving a future at dispatch.
 * A primitive's file holds its type and its thread methods; it tells aio.c
 * how a task waits on it through its kind (enum aio_kind).
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

/* A wait taking (timeout=None): parse it, then run step on op (its part of
 * the union filled).  The step's result, or -1 with an exception set. */
int timed_wait(PyObject *args, PyObject *kw, struct sqf_waitop *op, sqf_step_fn step);

/* --- the objects ------------------------------------------------------------ */

/* Every object has a weak reference list (`weakrefs`, tp_weaklistoffset),
 * as threading's primitives do. */

typedef struct {
    PyObject_HEAD sqf_event ev;
    PyObject *weakrefs;
    int initialised;
} EventObject;

typedef struct {
    PyObject_HEAD sqf_latch l;
    PyObject *weakrefs;
    int initialised;
} LatchObject;

typedef struct {
    PyObject_HEAD sqf_countdown c;
    PyObject *weakrefs;
    int initialised;
} CountdownObject;

typedef struct {
    PyObject_HEAD sqf_sem s;
    int bounded;
    unsigned bound; /* a BoundedSemaphore's initial value */
    int initialised;
    PyObject *weakrefs;
} SemObject;

/* Lock is an sqf_mutex, which records no owner: any thread may release it,
 * and releasing it unlocked is an error, as threading.Lock. */
typedef struct {
    PyObject_HEAD sqf_mutex mu;
    unsigned long owner; /* RLock: the holder's thread ident, or 0 */
    unsigned long count; /* RLock: its recursion depth */
    int initialised;     /* __init__ ran: a second call is refused */
    PyObject *weakrefs;
} LockObject;

/* threading.Barrier over an sqf_barrier (barrier.c says how it resets). */
typedef struct {
    PyObject_HEAD sqf_barrier b;
    PyObject *action;     /* or NULL */
    PyObject *timeout;    /* the default timeout (None: for ever) */
    unsigned long runner; /* the thread running the action, or 0 (under the GIL) */
    int resetting;        /* under the GIL */
    sqf_event reset_done; /* set while no reset is under way */
    PyObject *weakrefs;
} BarrierObject;

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
 * `waiting` (under the GIL) counts the waiters, threads and tasks, and
 * bounds notify(n).  A task waits (aio.c's AK_COND) on the fast path only. */
typedef struct {
    PyObject_HEAD sqf_cond c;
    PyObject *lock;
    int fast;       /* lock is a squarefree Lock or RLock: c waits on its mutex */
    sqf_mutex gate; /* any other lock: the mutex c waits on */
    unsigned long waiting;
    PyObject *weakrefs;
} CondObject;

/* A barrier wait's action: the completion barrier_action runs. */
struct barrier_call {
    BarrierObject *self;
    int raised; /* the action raised: its exception is set */
};
void barrier_action(void *arg);

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

/* Who takes an RLock now: the asyncio task running in this thread, if
 * any, else the thread (lock.c says why). */
unsigned long lock_owner_now(void);

/* Take mu until deadline (0: one try), the GIL released while asleep; a
 * signal handler that raises stops the wait.  1 taken, 0 not, -1 raised. */
int mutex_take(sqf_mutex *mu, sqf_deadline deadline);

#endif
