"""CapacityLimiter and RCapacityLimiter: anyio's capacity limiter for
threads and asyncio tasks on the same object.  The tokens, their records,
their waits and every thread method are C (limiter.c), so that no
exception or signal handler can come between a token's take and its
record; this adds the tasks' methods."""
import collections as _collections
import sys as _sys

from . import _squarefree as _c
from ._squarefree import WouldBlock  # noqa: F401 (the package's)
from . import _wait

# aio.c's enum aio_kind: a task's wait for a limiter's token.
_LIMITER = _c._KINDS["limiter"]


class CapacityLimiterStatistics(_collections.namedtuple(
        "CapacityLimiterStatistics", "borrowed_tokens total_tokens borrowers tasks_waiting")):
    """CapacityLimiter.statistics(): anyio's fields (tasks_waiting counts
    threads and tasks)."""

    __module__ = "squarefree"
    __slots__ = ()


def _current_task():
    if _c._trio_running():
        return _sys.modules["trio"].lowlevel.current_task()
    asyncio = _sys.modules.get("asyncio")
    if asyncio is None:
        return None
    loop = asyncio._get_running_loop()
    return None if loop is None else asyncio.current_task(loop)


class CapacityLimiter(_c.CapacityLimiter):
    """CapacityLimiter(total_tokens=1)

    anyio's capacity limiter, for threads and asyncio tasks at once: at most
    total_tokens borrowers hold a token at a time, and a borrower holds at
    most one (RuntimeError on a second).  The borrower is the current task
    when called from one, else the current thread, or any object with the
    ``*_on_behalf_of`` forms (compared by identity).  total_tokens may be
    changed at any time.  Threads: ``with limiter``, ``acquire()``; tasks:
    ``async with limiter``, ``await limiter.async_acquire()``.  Cancelling a
    waiting task takes nothing: a token that reached it as it was cancelled
    is given back.
    """

    __module__ = "squarefree"

    async def async_acquire(self, timeout=None):
        """Borrow a token for the current task, waiting for one if needed:
        True, or False if the timeout (seconds) passed first."""
        task = _current_task()
        if task is None:
            raise RuntimeError("async_acquire needs a running asyncio task")
        return await self.async_acquire_on_behalf_of(task, timeout)

    async def async_acquire_on_behalf_of(self, borrower, timeout=None):
        """As acquire_on_behalf_of(), for a task: True, or False if the
        timeout passed first."""
        if _c._trio_running():  # a checkpoint, even when it need not wait
            from . import _trio_driver
            return await _trio_driver().limiter_acquire(self, borrower, timeout)
        wait = self._async_prepare(borrower)
        if wait is None:  # a reentrant limiter's borrower that held one: counted
            return True
        return await _wait(_LIMITER, wait, timeout)

    def statistics(self):
        """A snapshot: borrowed_tokens, total_tokens, borrowers (a tuple)
        and tasks_waiting (the threads and tasks waiting for a token)."""
        return CapacityLimiterStatistics(self.borrowed_tokens, self.total_tokens,
                                         self.borrowers, self.waiting)

    async def __aenter__(self):
        await self.async_acquire()

    async def __aexit__(self, exc_type, exc, tb):
        self.release()

    def __repr__(self):
        return (f"<{type(self).__module__}.{type(self).__qualname__} object at {id(self):#x} "
                f"[total_tokens={self.total_tokens!r}, borrowed={self.borrowed_tokens}]>")


class RCapacityLimiter(_c.RCapacityLimiter, CapacityLimiter):
    """RCapacityLimiter(total_tokens=1)

    A reentrant CapacityLimiter (aiologic's): a borrower that holds a token
    may acquire again at once (counted, see count_of()); it holds its one
    token until it has released as many times as it acquired.
    """

    __module__ = "squarefree"
