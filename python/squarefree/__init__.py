"""squarefree: synchronization primitives that never meet the square.

Drop-in for threading's Lock, RLock, Condition, Event, Semaphore,
BoundedSemaphore and Barrier (CPython's Lib/test/lock_tests.py passes on
them; the README lists the few differences), and the seed's cures for
the square: Latch (start n threads, wake them with one call) and
CountdownEvent (a count that many threads move and wait on).  A wake-all is one system call whatever the
number of waiters; every blocking call releases the GIL while it sleeps and
is interrupted by a signal handler that raises (Ctrl-C) in the main thread,
leaving nothing taken.

asyncio tasks wait on the same objects, beside threads: ``async with
lock``, ``await sem.async_acquire()``, ``await event.async_wait()`` and the
same on Latch, CountdownEvent and Barrier, from any number of event loops
in any number of threads.  A task's wait costs no thread: each event loop
gets one squarefree loop (an io_uring ring whose futex waits sit in the
same kernel queues as sleeping threads, or the portable fallback), watched
with ``loop.add_reader``.  Cancelling a waiting task (``task.cancel()``,
``asyncio.timeout``) takes nothing, and is final when the task sees its
CancelledError: a lock or permit that reached it as it was cancelled is
given back, and a barrier arrival is over (it broke the barrier, as a
time-out does, unless its phase had passed).  A task's negative timeout
has passed (None waits for ever), as a thread's does everywhere but in
Lock.acquire and RLock.acquire, which keep threading's -1 for ever.  Do not call a blocking method
(``acquire()``, ``wait()``) on an event loop's own thread: it blocks the
loop, and the tasks that would release it with it.  An RLock taken by a
task is owned by that task (another task of the same loop waits for it),
and a Condition's tasks wait with ``await cond.async_wait()`` beside its
threads.  Once is for threads and greenlets, not tasks.

Under uvloop, trio and anyio (on either backend) the same async methods
work: each call finds the library that runs it, as sniffio does (a trio
task waits through _trio.py's driver, anything else through the running
asyncio loop).  Under trio every call is a checkpoint, as trio.Lock's, and
a cancel scope ends a wait taking nothing; a cancelled Condition wait ends
with the lock taken back.

gevent and eventlet greenlets use the same objects with the blocking
methods: in a greenlet that runs under a hub, a blocking call waits in the
hub (one squarefree loop per hub) and blocks only that greenlet; the
libraries' Timeout and kill interrupt it, taking nothing (see _green.py).
Under a hub, an RLock is owned by the greenlet that took it.

Queue, LifoQueue, PriorityQueue and SimpleQueue are queue's, for threads
and tasks on the same object (async_put, async_get, async_join), with
janus's sync_q/async_q shape; shutdown() as Python 3.13's (ShutDown).

From anyio and aiologic, for threads and tasks alike: CapacityLimiter and
RCapacityLimiter, BinarySemaphore and BoundedBinarySemaphore, Flag and
ResourceGuard.

Between processes: Lock, RLock, Condition, Semaphore, BoundedSemaphore, the
binary semaphores, Event, Latch, CountdownEvent, Barrier and RobustLock
take ``shared=True`` (a shared-memory block the module allocates) or
``shared=<memory>, offset=k`` (a SharedMemory, an mmap, any writable
buffer); ``Type.attach(memory, offset)`` finds one another process made.
A shared object is inherited across fork and pickles by name for spawn
and forkserver children.  RobustLock tells the next locker that its
holder died (OwnerDiedError).  Queues, limiters, flags, guards and Once
stay within their process.
"""
import os as _os
import sys as _sys
import time as _time
import weakref as _weakref
from _thread import _local as _threading_local

from . import _squarefree as _c
from ._squarefree import (BoundedSemaphore as _BoundedSemaphore, BrokenBarrierError,
                          BrokenLatchError, CountdownEvent as _CountdownEvent, Event as _Event,
                          Latch as _Latch, Lock as _Lock, LockNotRecoverableError, Once,
                          OwnerDiedError, RLock as _RLock, RobustLock,
                          Semaphore as _Semaphore,
                          Barrier as _Barrier, _Condition)

__all__ = ["Barrier", "BoundedSemaphore", "BrokenBarrierError", "BrokenLatchError", "Condition",
           "BinarySemaphore", "BoundedBinarySemaphore", "BusyResourceError", "CapacityLimiter",
           "CountdownEvent", "Empty", "Event", "Flag", "Full", "Latch", "LifoQueue", "Lock",
           "LockNotRecoverableError", "Once", "OwnerDiedError", "PriorityQueue", "Queue",
           "QueueShutDown", "RCapacityLimiter", "RLock", "ResourceGuard", "RobustLock",
           "Semaphore", "ShutDown", "SimpleQueue", "WouldBlock"]

# --- greenlets: after a fork ------------------------------------------------------------


def _after_fork_in_child():
    """A forked child inherits its thread's gevent and eventlet hubs, which
    it cannot use unless gevent re-initialises them (_green.py says why),
    whether or not a greenlet has waited yet: registered at import, so that
    no fork comes before it."""
    if "gevent" in _sys.modules or "eventlet" in _sys.modules:
        from ._green import _after_fork_in_child as forget
        forget()


_os.register_at_fork(after_in_child=_after_fork_in_child)

# --- asyncio ---------------------------------------------------------------------------

# The kinds of wait _LoopDriver.start knows (aio.c's enum aio_kind).
_LOCK, _SEM, _EVENT, _LATCH, _COUNTDOWN, _BARRIER, _RLOCK, _COND = (
    _c._KINDS[k] for k in ("lock", "sem", "event", "latch", "countdown", "barrier", "rlock", "cond"))

_try = _c._try

# trio's tasks (trio itself, or anyio on trio) wait through _trio.py, imported
# on first use; _in_trio() tells, at each call, whether one runs here (trio.c:
# sniffio's context variable says "trio").
_in_trio = _c._trio_running
_trio_module = None


def _trio_driver():
    """The module _trio (imported on first use, from a trio task)."""
    global _trio_module
    if _trio_module is None:
        from . import _trio
        _trio_module = _trio
    return _trio_module


# One driver (an sqf_loop) per event loop, made on first use, stored on the
# loop itself: the loop, its driver, the pending waits and their tasks then
# form one cycle, which the collector can free when the loop is dropped,
# closing the tasks' coroutines, which finish their waits.  uvloop's Loop
# (a Python subclass of its Cython loop) has a __dict__ and is collected so
# too.  (A loop without a __dict__ keeps its driver in _drivers: its waiting
# tasks live as long as the interpreter.)
_drivers = _weakref.WeakKeyDictionary()


def _running_loop():
    """asyncio.get_running_loop(), without importing asyncio (tens of
    milliseconds) into programs of threads only: whoever runs a loop has
    imported it already."""
    asyncio = _sys.modules.get("asyncio")
    if asyncio is None:
        raise RuntimeError("no running event loop")
    return asyncio.get_running_loop()


def _driver(loop):
    d = getattr(loop, "_squarefree_driver", None)
    if d is None:
        d = _drivers.get(loop)
        if d is None:
            d = _c._LoopDriver()
            loop.add_reader(d.fileno(), d.dispatch)
            try:
                loop._squarefree_driver = d
            except AttributeError:
                _drivers[loop] = d
    return d


async def _wait(kind, target, timeout):
    """Wait as a task of the running loop (asyncio's, or trio's): the
    blocking call's value.  _try ends it first if it need not wait: no loop
    to look up (under trio it never does: there every wait is a checkpoint,
    which _trio.wait makes)."""
    if _try(kind, target, timeout):
        return True
    if _in_trio():
        return await _trio_driver().wait(kind, target, timeout)
    loop = _running_loop()
    d = _driver(loop)
    while True:
        r = d.start(kind, target, timeout, loop)
        if r.__class__ is _c._LoopOp:
            op = r
            try:
                r = await op.future
            except BaseException:  # cancelled or closed: end the wait, give back what it took
                op.abandon()
                raise
        if r is not _c._AGAIN:  # (a barrier's reset ended: arrive again)
            return r


async def _cond_wait(cond, timeout):
    """A task's wait on cond's sqf_cond: True, or False on a time-out.
    Whatever ends it (a notify, the timeout, a cancellation), the wait ends
    with the lock taken back, as asyncio.Condition.wait's does: a cancelled
    task waits for that (on its loop, which keeps running: the lock may be
    held by another of its tasks) before the CancelledError goes on.  A
    trio task's wait is _trio.cond_wait's, with the same ends."""
    if _in_trio():
        return await _trio_driver().cond_wait(cond, timeout)
    loop = _running_loop()
    d = _driver(loop)
    r = d.start(_COND, cond, timeout, loop)
    if r.__class__ is not _c._LoopOp:
        return r
    op = r
    try:
        return await op.future
    except GeneratorExit:
        _cond_orphan(op, cond)
        raise
    except BaseException:
        while op.pending:
            try:
                await op.rearm(loop)
            except GeneratorExit:
                _cond_orphan(op, cond)
                raise
            except BaseException:  # cancelled again: the lock is still to come
                pass
        if op.result == 0:  # a notify reached this task as it left: pass it on
            cond._pass_on()
        raise


def _cond_orphan(op, cond):
    """The waiting coroutine is closed without its loop (the loop was
    closed, or the collector finalises the task): it can wait for nothing,
    and whoever holds the lock may be a task that will never run.  A wait
    still pending is orphaned: its op releases the lock when it takes it
    back (if its loop is ever dispatched again) and passes on a notify it
    consumed.  Then async_wait and the Condition's ``async with``, which
    the same close() unwinds next in this thread (each level of a closed
    coroutine chain gets a GeneratorExit of its own, so the exception cannot
    carry the news), neither restore nor release a lock the task does not
    hold: _orphaned.cond says so until that ``async with`` has seen it."""
    if op.orphan():
        _orphaned.cond = cond
    elif op.result == 0:
        cond._pass_on()


_orphaned = _threading_local()


class Lock(_Lock):
    __doc__ = _Lock.__doc__ + """

For asyncio tasks: ``async with lock`` and ``await lock.async_acquire()``;
threads and tasks exclude each other."""

    async def async_acquire(self, timeout=None):
        """Take the lock as a task, waiting for it if needed (for ever, or
        timeout seconds): True, or False if the timeout passed first."""
        return await _wait(_LOCK, self, timeout)

    async def __aenter__(self):
        await _wait(_LOCK, self, None)

    async def __aexit__(self, exc_type, exc, tb):
        self.release()


async def _rlock_async_acquire(lock, timeout):
    if _in_trio():  # a checkpoint even when it reenters
        return await _trio_driver().rlock_acquire(lock, timeout)
    if lock._reenter():
        return True
    if await _wait(_RLOCK, lock, timeout):
        lock._own()  # no await since the wait: nobody else counted on it
        return True
    return False


class RLock(_RLock):
    __doc__ = _RLock.__doc__ + """

For asyncio tasks: ``async with rlock`` and ``await rlock.async_acquire()``;
the task that takes it owns it, and may take it again."""

    async def async_acquire(self, timeout=None):
        """Take the lock as a task, or one more level if this task holds it
        already, waiting for it if needed (for ever, or timeout seconds):
        True, or False if the timeout passed first."""
        return await _rlock_async_acquire(self, timeout)

    async def __aenter__(self):
        await _rlock_async_acquire(self, None)

    async def __aexit__(self, exc_type, exc, tb):
        self.release()


class Semaphore(_Semaphore):
    __doc__ = _Semaphore.__doc__ + """

For asyncio tasks: ``async with sem`` and ``await sem.async_acquire()``."""

    async def async_acquire(self, timeout=None):
        """Take a permit as a task, waiting for one if needed: True, or
        False if the timeout (seconds) passed first."""
        return await _wait(_SEM, self, timeout)

    async def __aenter__(self):
        await _wait(_SEM, self, None)

    async def __aexit__(self, exc_type, exc, tb):
        self.release()


class BoundedSemaphore(Semaphore, _BoundedSemaphore):
    __doc__ = _BoundedSemaphore.__doc__ + """

A Semaphore (a subclass, as threading's): ``async with`` and
``async_acquire()`` as Semaphore's."""


class Event(_Event):
    __doc__ = _Event.__doc__ + """

For asyncio tasks: ``await event.async_wait()``."""

    async def async_wait(self, timeout=None):
        """As wait(), for a task: True, or False if the timeout passed."""
        return await _wait(_EVENT, self, timeout)

    @property
    def _cond(self):
        """threading.Event's internal Condition (over a Lock), for code that
        reaches for it: made on first use.  The event itself never takes
        it: holding it does not hold off set(), clear() or wait()."""
        cond = self.__dict__.get("_cond")
        if cond is None:
            cond = self.__dict__["_cond"] = Condition(Lock())
        return cond

    def _at_fork_reinit(self):
        """For a child of fork, as threading.Event's: reinitialise _cond's
        lock; the flag is kept."""
        cond = self.__dict__.get("_cond")
        if cond is not None:
            cond._at_fork_reinit()


class Latch(_Latch):
    __doc__ = _Latch.__doc__ + """

For asyncio tasks: ``await latch.async_wait()``."""

    async def async_wait(self, timeout=None):
        """As wait(), for a task: True, or False if the timeout passed;
        BrokenLatchError once aborted."""
        return await _wait(_LATCH, self, timeout)


class CountdownEvent(_CountdownEvent):
    __doc__ = _CountdownEvent.__doc__ + """

For asyncio tasks: ``await countdown.async_wait()``."""

    async def async_wait(self, timeout=None):
        """As wait(), for a task: True, or False if the timeout passed."""
        return await _wait(_COUNTDOWN, self, timeout)


class Barrier(_Barrier):
    __doc__ = _Barrier.__doc__ + """

For asyncio tasks: ``await barrier.async_wait()``; threads and tasks may be
parties of the same phase.  When a task arrives last, the action runs on
its event loop's thread."""

    async def async_wait(self, timeout=None):
        """As wait(), for a task: the arrival index; BrokenBarrierError if
        the barrier is or becomes broken (a time-out breaks it, and so does
        cancelling the task while it waits, unless its phase has passed)."""
        return await _wait(_BARRIER, self, timeout)

    def reset(self):
        """Return the barrier to its initial, unbroken state; threads and
        tasks waiting on it get BrokenBarrierError."""
        if _in_trio():
            d = _trio_driver().current_driver()
        else:
            try:
                loop = _running_loop()
            except RuntimeError:  # no loop runs in this thread
                d = None
            else:
                d = getattr(loop, "_squarefree_driver", None) or _drivers.get(loop)
        if d is None and ("gevent" in _sys.modules or "eventlet" in _sys.modules):
            from ._green import driver  # a greenlet's: its hub's waiters leave as it dispatches
            d = driver()
        _Barrier.reset(self, d.dispatch if d is not None else None)


class _Remaining:
    """wait_for's timeout, as threading.Condition.wait_for counts it: the
    first wait gets the whole timeout (however short), each later one what
    is left, and none is made once nothing is."""

    def __init__(self, timeout):
        self.seconds = timeout
        self._end = None

    def more(self):
        if self.seconds is None:
            return True
        if self._end is None:
            self._end = _time.monotonic() + self.seconds
            return True
        self.seconds = self._end - _time.monotonic()
        return self.seconds > 0


class Condition(_Condition):
    """Condition(lock=None)

    A condition variable, as threading.Condition, over any lock (a new
    RLock by default).  Over a squarefree Lock or RLock, waiters sleep on
    the lock's own mutex, and notify_all() moves them onto it with one
    system call instead of waking them all to fight for it; over any other
    lock (threading.Lock, a class of your own), they sleep on a squarefree
    mutex of the condition's, and the lock is released and taken back with
    its _release_save() and _acquire_restore() if it has them, else with
    release() and acquire(), as threading does.

    For asyncio tasks, over a squarefree Lock or RLock: ``async with
    cond``, ``await cond.async_wait()`` and ``await
    cond.async_wait_for(predicate)``; threads and tasks notify each other.
    """

    def __init__(self, lock=None, *, shared=None, offset=None):
        if lock is None:
            lock = RLock(shared=True) if shared is True else RLock()
        _Condition.__init__(self, lock, shared=shared, offset=offset)

    def wait_for(self, predicate, timeout=None):
        """Wait until predicate() is true, at most timeout seconds; return
        the last value of predicate(), as threading.Condition.wait_for
        (which waits once, however short the timeout)."""
        left = _Remaining(timeout)
        result = predicate()
        while not result and left.more():
            self.wait(left.seconds)
            result = predicate()
        return result

    async def __aenter__(self):
        """``async with cond``: take its lock as a task."""
        lock = self._lock
        if isinstance(lock, _RLock):
            await _rlock_async_acquire(lock, None)
        elif isinstance(lock, _Lock):
            await _wait(_LOCK, lock, None)
        else:
            raise TypeError("async with needs a Condition over a squarefree Lock or RLock")

    async def __aexit__(self, exc_type, exc, tb):
        if isinstance(exc, GeneratorExit) and getattr(_orphaned, "cond", None) is self:
            _orphaned.cond = None  # a wait orphaned as its coroutine was closed: not held
            return
        self.release()

    async def async_wait(self, timeout=None):
        """As wait(), for a task holding the lock (``async with cond``):
        release it, wait until notified (by a thread or a task) or the
        timeout passes, and take it back, whatever ends the wait: True, or
        False on a time-out.  A cancelled task takes the lock back before
        its CancelledError goes on, and a notify that reached it as it was
        cancelled goes on to another waiter."""
        state = self._task_wait_begin()
        try:
            return await _cond_wait(self, timeout)
        except GeneratorExit:
            if getattr(_orphaned, "cond", None) is self:
                state = None  # orphaned: the lock is not this task's any more
            raise
        finally:
            self._task_wait_end(state)

    async def async_wait_for(self, predicate, timeout=None):
        """As wait_for(), for a task holding the lock: wait until
        predicate() is true, at most timeout seconds; the last value of
        predicate()."""
        left = _Remaining(timeout)
        result = predicate()
        while not result and left.more():
            await self.async_wait(left.seconds)
            result = predicate()
        return result

    def notifyAll(self):
        """Deprecated alias of notify_all() (DeprecationWarning), as in
        threading."""
        import warnings
        warnings.warn("notifyAll() is deprecated, use notify_all() instead",
                      DeprecationWarning, stacklevel=2)
        self.notify_all()


_SHARED_DOC = """

Between processes: shared=True puts its state in a shared-memory block
the module allocates; shared=<memory>, offset=k in a SharedMemory, an mmap
or any writable buffer (Type.shared_size bytes, 8-byte aligned), and
Type.attach(memory, offset) finds one another process made there.  A
shared object is inherited by fork and pickles by name for spawn and
forkserver children; a private one refuses to pickle (TypeError).  Threads
and tasks of every process wait on it (tasks need the io_uring loop
backend: OSError(ENOTSUP) with the fallback)."""

for _cls in (Lock, RLock, Semaphore, BoundedSemaphore, Event, Latch, CountdownEvent, Barrier,
             Condition):
    _cls.__doc__ += _SHARED_DOC
Condition.__doc__ += """  A shared Condition needs a shared
Lock or RLock (Condition(shared=True) makes a shared RLock)."""

# The queues wait with _wait on the types above: imported last.
from ._queue import (Empty, Full, LifoQueue, PriorityQueue, Queue,  # noqa: E402
                     QueueShutDown, ShutDown, SimpleQueue)

# aiologic's and anyio's primitives that threading lacks (need _wait above).
from ._binary import BinarySemaphore, BoundedBinarySemaphore  # noqa: E402
for _cls in (BinarySemaphore, BoundedBinarySemaphore):
    _cls.__doc__ += _SHARED_DOC
del _cls
from ._flags import Flag  # noqa: E402
from ._guards import BusyResourceError, ResourceGuard  # noqa: E402
from ._limiters import CapacityLimiter, RCapacityLimiter, WouldBlock  # noqa: E402
