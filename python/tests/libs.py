"""Test helpers: run the same async test under each library the package
serves: asyncio, uvloop (asyncio's API on uvloop's loop), trio, and anyio
on its asyncio and its trio backend.  A test takes the `lib` fixture
(conftest.py), a Lib, and writes its tasks with it:

    async def main():
        async with lib.group() as g:
            t = g.spawn(sem.async_acquire)   # a task; t.cancel(), await t.outcome()
            await lib.sleep(0.01)
        ...
    lib.run(main)                            # or lib.in_thread(main) beside threads

The libraries' own cancellations are used: task.cancel() under asyncio, a
cancel scope's cancel() under trio and anyio; lib.move_on_after(s) is
asyncio.timeout (its TimeoutError swallowed), trio's or anyio's
move_on_after."""
import asyncio
import contextlib
import threading

from aiocompat import timeout

LIBS = ["asyncio", "uvloop", "trio", "anyio-asyncio", "anyio-trio"]


class Outcome:
    """How a spawned task ended: state "ok" (value), "cancelled", or
    "error" (error)."""

    def __init__(self, state, value=None, error=None):
        self.state, self.value, self.error = state, value, error

    def unwrap(self):
        """The value; the error raised; AssertionError if it was cancelled."""
        if self.state == "error":
            raise self.error
        assert self.state == "ok", "the task was cancelled"
        return self.value

    def __repr__(self):
        return f"Outcome({self.state!r}, {self.value!r}, {self.error!r})"


class Lib:
    """One library's way of running, spawning, sleeping and cancelling."""

    def __init__(self, name):
        self.name = name
        self.is_trio = name in ("trio", "anyio-trio")  # trio runs the tasks
        self.is_anyio = name.startswith("anyio")

    def __repr__(self):
        return f"Lib({self.name!r})"

    # --- running ---------------------------------------------------------------------

    def run(self, fn, *args):
        """fn(*args) under this library, in this thread, to its end."""
        if self.name == "asyncio":
            return asyncio.run(fn(*args))
        if self.name == "uvloop":
            import uvloop
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                return runner.run(fn(*args))
        if self.name == "trio":
            import trio
            return trio.run(fn, *args)
        import anyio
        return anyio.run(fn, *args, backend=self.name.split("-")[1])

    def in_thread(self, fn, *args):
        """Run fn(*args) under this library on a new thread; the thread and
        a list that gets the result (or the exception): see joined()."""
        out = []

        def main():
            try:
                out.append(self.run(fn, *args))
            except BaseException as e:  # reported by joined()
                out.append(e)

        t = threading.Thread(target=main, daemon=True)  # (one that hangs fails joined())
        t.start()
        return t, out

    # --- inside a task ---------------------------------------------------------------

    async def sleep(self, seconds):
        if self.is_anyio:
            import anyio
            await anyio.sleep(seconds)
        elif self.is_trio:
            import trio
            await trio.sleep(seconds)
        else:
            await asyncio.sleep(seconds)

    def cancelled_exc(self):
        """The exception a cancelled task sees (call it inside a task)."""
        if self.is_anyio:
            import anyio
            return anyio.get_cancelled_exc_class()
        if self.is_trio:
            import trio
            return trio.Cancelled
        return asyncio.CancelledError

    def event(self):
        """The library's own Event (set, wait), for tasks to meet."""
        if self.is_anyio:
            import anyio
            return anyio.Event()
        if self.is_trio:
            import trio
            return trio.Event()
        return asyncio.Event()

    def move_on_after(self, seconds):
        """``async with lib.move_on_after(s):`` the block is cancelled after
        s seconds, and goes on after the block."""
        if self.is_anyio:
            import anyio
            return _async_cm(anyio.move_on_after(seconds))
        if self.is_trio:
            import trio
            return _async_cm(trio.move_on_after(seconds))
        return _asyncio_move_on_after(seconds)

    def group(self):
        """``async with lib.group() as g:`` g.spawn(fn, *args) starts a task
        (a Task); the block ends when every task has."""
        if self.is_anyio:
            import anyio
            return _ScopedGroup(anyio.create_task_group, anyio.CancelScope, _ANYIO)
        if self.is_trio:
            import trio
            return _ScopedGroup(trio.open_nursery, trio.CancelScope, _TRIO)
        return _AsyncioGroup()

    async def gather(self, *fns):
        """Run the zero-argument coroutine functions fns as tasks at once;
        their values, in order (the first error raised)."""
        async with self.group() as g:
            tasks = [g.spawn(fn) for fn in fns]
        return [await t.result() for t in tasks]


@contextlib.asynccontextmanager
async def _async_cm(cm):
    with cm:
        yield


@contextlib.asynccontextmanager
async def _asyncio_move_on_after(seconds):
    try:
        async with timeout(seconds):
            yield
    except TimeoutError:
        pass


class Task:
    """A spawned task: cancel() it (at any time, even before it starts),
    await outcome() or result()."""

    def __init__(self):
        self.cancel_called = False
        self._outcome = None

    async def result(self):
        return (await self.outcome()).unwrap()


class _AsyncioTask(Task):
    def __init__(self, fn, args):
        super().__init__()
        self.task = asyncio.ensure_future(fn(*args))

    def cancel(self):
        self.cancel_called = True
        self.task.cancel()

    def done(self):
        return self.task.done()

    async def outcome(self):
        await asyncio.wait([self.task])
        if self.task.cancelled():
            return Outcome("cancelled")
        if self.task.exception() is not None:
            return Outcome("error", error=self.task.exception())
        return Outcome("ok", self.task.result())


class _ScopedTask(Task):
    """A trio or anyio task in a cancel scope of its own."""

    def __init__(self, lib):
        super().__init__()
        self.scope = None
        self.finished = lib.event()

    def cancel(self):
        self.cancel_called = True
        if self.scope is not None:
            self.scope.cancel()

    def done(self):
        return self._outcome is not None

    async def run(self, scope_type, fn, args):
        try:
            with scope_type() as self.scope:
                if self.cancel_called:
                    self.scope.cancel()
                value = await fn(*args)
                self._outcome = Outcome("ok", value)
            if self._outcome is None:
                self._outcome = Outcome("cancelled")
        except Exception as e:  # the task's error: its outcome
            self._outcome = Outcome("error", error=e)
        finally:
            if self._outcome is None:
                self._outcome = Outcome("cancelled")
            self.finished.set()

    async def outcome(self):
        await self.finished.wait()
        return self._outcome


class _AsyncioGroup:
    async def __aenter__(self):
        self.tasks = []
        return self

    def spawn(self, fn, *args):
        t = _AsyncioTask(fn, args)
        self.tasks.append(t)
        return t

    async def __aexit__(self, *exc):
        while self.tasks:
            t = self.tasks.pop()
            await asyncio.wait([t.task])


class _ScopedGroup:
    """A trio nursery or an anyio task group whose tasks run in cancel
    scopes of their own."""

    def __init__(self, open_group, scope_type, event_lib):
        self._cm, self._scope_type, self._event_lib = open_group(), scope_type, event_lib

    async def __aenter__(self):
        self._group = await self._cm.__aenter__()
        return self

    def spawn(self, fn, *args):
        t = _ScopedTask(self._event_lib)
        self._group.start_soon(t.run, self._scope_type, fn, args)
        return t

    async def __aexit__(self, *exc):
        return await self._cm.__aexit__(*exc)


_TRIO = Lib("trio")
_ANYIO = Lib("anyio-asyncio")  # (its event() is anyio's, whatever the backend)


def joined(t, out, timeout=30.0):
    """The result of lib.in_thread's run once its thread has ended (its
    exception raised here); fails if it is still running after timeout."""
    t.join(timeout)
    assert not t.is_alive(), "an event loop is still waiting (a lost wake-up?)"
    assert len(out) == 1
    if isinstance(out[0], BaseException):
        raise out[0]
    return out[0]


def later(seconds, fn, *args):
    """fn(*args) on a timer thread after seconds (join it)."""
    t = threading.Timer(seconds, fn, args)
    t.start()
    return t
