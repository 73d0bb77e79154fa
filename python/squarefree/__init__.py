"""squarefree: synchronization primitives that never meet the square.

Drop-in for threading's Lock, RLock, Condition, Event, Semaphore,
BoundedSemaphore and Barrier, and the
seed's cures for the square: Latch (start n threads, wake them with one
call) and CountdownEvent (a count that many threads move and wait on).
A wake-all is one system call whatever the number of waiters; every
blocking call releases the GIL while it sleeps and is interrupted by a
signal handler that raises (Ctrl-C) in the main thread, leaving nothing
taken.
"""
import time as _time

from ._squarefree import (Barrier, BoundedSemaphore, BrokenBarrierError, BrokenLatchError,
                          CountdownEvent, Event, Latch, Lock, Once, RLock, Semaphore, _Condition)

__all__ = ["Barrier", "BoundedSemaphore", "BrokenBarrierError", "BrokenLatchError", "Condition",
           "CountdownEvent", "Event", "Latch", "Lock", "Once", "RLock", "Semaphore"]


class Condition(_Condition):
    """Condition(lock=None)

    A condition variable, as threading.Condition, over a squarefree Lock or
    RLock (a new RLock by default).  notify_all() moves the waiters onto the
    lock with one system call instead of waking them all to fight for it.
    """

    def wait_for(self, predicate, timeout=None):
        """Wait until predicate() is true, at most timeout seconds; return
        the last value of predicate(), as threading.Condition.wait_for."""
        end = None if timeout is None else _time.monotonic() + timeout
        result = predicate()
        while not result:
            if end is not None:
                left = end - _time.monotonic()
                if left <= 0:
                    break
                self.wait(left)
            else:
                self.wait()
            result = predicate()
        return result

    def notifyAll(self):
        """Deprecated alias of notify_all(), as in threading."""
        self.notify_all()
