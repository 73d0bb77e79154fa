"""trio's driver: trio tasks wait on squarefree's objects beside threads and
asyncio tasks, with the waits of the asyncio driver (aio.c).

The package sends a task's wait here when trio runs in its thread (sniffio's
context variable says "trio": trio.c).  Each trio run gets one _LoopDriver
(an sqf_loop), kept in a RunVar and so dropped with the run; one system
task watches its descriptor and dispatches it.  A waiting task parks in
wait_task_rescheduled; the op's "future" is a _Waiter, which the driver's
callback resolves by rescheduling the task (the C driver only calls
create_future() on the loop argument of start(), and set_result,
set_exception and cancelled on what that returns).

trio's rules hold:
  - every wait is a checkpoint, as trio.Lock.acquire's: a cancellation is
    checked before anything is taken (checkpoint_if_cancelled), and a wait
    that need not wait still lets other tasks run (cancel_shielded_checkpoint);
  - a cancelled wait takes nothing, and its end is final when the task sees
    its Cancelled: the abort function abandons the op (aio.c's
    "Cancellation": it is cancelled and dispatched here until its callback
    has run, and what reached it is given back) and the abort succeeds;
  - a cond wait ends with the lock taken back, cancelled or not: its abort
    fails, the op is cancelled and the run goes on (the lock may be held by
    another of its tasks); once the mutex is back the callback reschedules
    the task, which raises the cancellation then, after passing on a notify
    that reached it.
"""
import outcome
from trio.lowlevel import (Abort, RunVar, cancel_shielded_checkpoint, checkpoint_if_cancelled,
                           current_task, reschedule, spawn_system_task, wait_readable,
                           wait_task_rescheduled)

from . import _squarefree as _c
from . import _COND, _RLOCK, _cond_orphan

_LoopOp = _c._LoopOp
_AGAIN = _c._AGAIN
_LIMITER = _c._KINDS["limiter"]

_run_driver = RunVar("squarefree_driver")


def driver():
    """This trio run's driver, made (and watched) on first use."""
    try:
        return _run_driver.get()
    except LookupError:
        d = _c._LoopDriver()
        spawn_system_task(_dispatcher, d, name="squarefree loop driver")
        _run_driver.set(d)
        return d


def current_driver():
    """This run's driver if it has one, else None (Barrier.reset)."""
    try:
        return _run_driver.get()
    except LookupError:
        return None


async def _dispatcher(d):
    """The run's system task: dispatch whenever completions are ready.  It
    is cancelled when the run ends, when no task waits any more."""
    fd = d.fileno()
    while True:
        await wait_readable(fd)
        d.dispatch()


class _Waiter:
    """The future of one parked task's op, and its own factory (the loop
    argument of start() and rearm())."""

    __slots__ = ("task",)

    def __init__(self, task):
        self.task = task

    def create_future(self):
        return self

    def set_result(self, value):
        reschedule(self.task, outcome.Value(value))

    def set_exception(self, exc):
        reschedule(self.task, outcome.Error(exc))

    def cancelled(self):
        # A cancelled task abandons its op (the callback then skips this),
        # or rearms it (a cond wait, which is resolved all the same).
        return False


async def checkpoint():
    """A call that never waits (an unbounded queue's put) is a checkpoint
    all the same, before it does anything."""
    await checkpoint_if_cancelled()
    await cancel_shielded_checkpoint()


async def wait(kind, target, timeout):
    """_wait's trio form: a checkpoint, then the wait's value."""
    await checkpoint_if_cancelled()
    return await _wait_after_check(kind, target, timeout)


async def _wait_after_check(kind, target, timeout):
    d = driver()
    while True:
        r = d.start(kind, target, timeout, _Waiter(current_task()))
        if r.__class__ is not _LoopOp:  # at once (what it took is the task's now)
            await cancel_shielded_checkpoint()
        else:
            op = r

            def abort(raise_cancel):
                op.abandon()  # final, and what reached it given back, before Cancelled
                return Abort.SUCCEEDED

            try:
                r = await wait_task_rescheduled(abort)
            except BaseException:  # the wait's own error, or the coroutine closed
                op.abandon()
                raise
        if r is not _AGAIN:  # (a barrier's reset ended: arrive again)
            return r


async def rlock_acquire(lock, timeout):
    """An RLock's async_acquire for a trio task, which owns it."""
    await checkpoint_if_cancelled()
    if lock._reenter():
        await cancel_shielded_checkpoint()
        return True
    if await _wait_after_check(_RLOCK, lock, timeout):
        lock._own()  # this task, still: no other task owns a mutex it waits for
        return True
    return False


async def limiter_acquire(limiter, borrower, timeout):
    """CapacityLimiter.async_acquire_on_behalf_of for a trio task."""
    await checkpoint_if_cancelled()
    wait = limiter._async_prepare(borrower)
    if wait is None:  # a reentrant limiter's borrower that held one: counted
        await cancel_shielded_checkpoint()
        return True
    return await _wait_after_check(_LIMITER, wait, timeout)


async def cond_wait(cond, timeout):
    """_cond_wait's trio form: True, or False on a time-out; the lock is
    held again whatever ends the wait."""
    await checkpoint_if_cancelled()
    w = _Waiter(current_task())
    r = driver().start(_COND, cond, timeout, w)
    if r.__class__ is not _LoopOp:
        await cancel_shielded_checkpoint()
        return r
    op = r
    cancel = []

    def abort(raise_cancel):
        cancel.append(raise_cancel)
        if op.pending:
            op.rearm(w)  # cancel the wait; the callback reschedules once the mutex is back
        return Abort.FAILED

    try:
        r = await wait_task_rescheduled(abort)
    except GeneratorExit:  # the run is gone: nobody will take the lock back for it
        _cond_orphan(op, cond)
        raise
    if cancel:
        if op.result == 0:  # a notify reached this task as it left: pass it on
            cond._pass_on()
        cancel[0]()  # raises Cancelled (or KeyboardInterrupt)
    return r
