"""asyncio's newer helpers that the tests use, on every supported Python.

timeout(delay) is asyncio.timeout (3.11+).  Before 3.11 it is the same
cancellation by other means: a timer cancels the task at the deadline, and
the CancelledError that this caused leaves the block as TimeoutError (the
builtin one, as asyncio.timeout raises).  A wait it cuts short is a
cancelled wait either way, which is what the tests exercise.

uncancel(task) is task.uncancel() (3.11+), which lets a later timeout()
tell its own cancellation from an earlier one; before 3.11 tasks do not
count cancellations and there is nothing to undo."""
import asyncio

if hasattr(asyncio, "timeout"):
    timeout = asyncio.timeout

    def uncancel(task):
        return task.uncancel()
else:
    class timeout:  # noqa: N801 (asyncio's name)
        def __init__(self, delay):
            self._delay = delay
            self._handle = None
            self._fired = False

        async def __aenter__(self):
            if self._delay is not None:
                task = asyncio.current_task()
                self._handle = asyncio.get_running_loop().call_later(
                    max(self._delay, 0), self._fire, task)
            return self

        def _fire(self, task):
            self._fired = True
            task.cancel()

        async def __aexit__(self, kind, exc, tb):
            if self._handle is not None:
                self._handle.cancel()
            if self._fired and kind is asyncio.CancelledError:
                raise TimeoutError from exc
            return False

    def uncancel(task):
        return 0
