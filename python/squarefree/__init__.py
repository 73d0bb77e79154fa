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
time-out does, unless its phase had passed).  A negative timeout has
passed, for a task as for a thread.  Do not call a blocking method
(``acquire()``, ``wait()``) on an event loop's own thread: it blocks the
loop, and the tasks that would release it with it.  RLock, Condition and Once are for
threads only (their ownership is a thread's).
"""
import sys as _sys
import time as _time
import weakref as _weakref

from . import _squarefree as _c
from ._squarefree import (BoundedSemaphore as _BoundedSemaphore, BrokenBarrierError,
                          BrokenLatchError, CountdownEvent as _CountdownEvent, Event as _Event,
                          Latch as _Latch, Lock as _Lock, Once, RLock, Semaphore as _Semaphore,
                          Barrier as _Barrier, _Condition)

__all__ = ["Barrier", "BoundedSemaphore", "BrokenBarrierError", "BrokenLatchError", "Condition",
           "CountdownEvent", "Event", "Latch", "Lock", "Once", "RLock", "Semaphore"]

# --- asyncio ---------------------------------------------------------------------------

# The kinds of wait _LoopDriver.start knows (aio.c's enum aio_kind).
_LOCK, _SEM, _EVENT, _LATCH, _COUNTDOWN, _BARRIER = range(6)

# One driver (an sqf_loop) per event loop, made on first use, stored on the
# loop itself: the loop, its driver, the pending waits and their tasks then
# form one cycle, which the collector can free when the loop is dropped,
# closing the tasks' coroutines, which finish their waits.  (A loop without
# a __dict__ keeps its driver in _drivers: its waiting tasks live as long
# as the interpreter.)
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
    """Wait as a task of the running loop: the blocking call's value."""
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
        try:
            loop = _running_loop()
        except RuntimeError:  # no loop runs in this thread
            d = None
        else:
            d = getattr(loop, "_squarefree_driver", None) or _drivers.get(loop)
        _Barrier.reset(self, d.dispatch if d is not None else None)


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
    """

    def wait_for(self, predicate, timeout=None):
        """Wait until predicate() is true, at most timeout seconds; return
        the last value of predicate(), as threading.Condition.wait_for
        (which waits once, however short the timeout)."""
        end = None
        left = timeout
        result = predicate()
        while not result:
            if left is not None:
                if end is None:
                    end = _time.monotonic() + left
                else:
                    left = end - _time.monotonic()
                    if left <= 0:
                        break
            self.wait(left)
            result = predicate()
        return result

    def notifyAll(self):
        """Deprecated alias of notify_all() (DeprecationWarning), as in
        threading."""
        import warnings
        warnings.warn("notifyAll() is deprecated, use notify_all() instead",
                      DeprecationWarning, stacklevel=2)
        self.notify_all()
