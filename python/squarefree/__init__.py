"""squarefree: synchronization primitives that never meet the square.

Drop-in for threading's Lock, RLock, Event, Semaphore and BoundedSemaphore, and the
seed's cures for the square: Latch (start n threads, wake them with one
call) and CountdownEvent (a count that many threads move and wait on).
A wake-all is one system call whatever the number of waiters; every
blocking call releases the GIL while it sleeps and is interrupted by a
signal handler that raises (Ctrl-C) in the main thread, leaving nothing
taken.
"""
from ._squarefree import (BoundedSemaphore, BrokenLatchError, CountdownEvent, Event, Latch, Lock,
                          RLock, Semaphore)

__all__ = ["BoundedSemaphore", "BrokenLatchError", "CountdownEvent", "Event", "Latch", "Lock",
           "RLock", "Semaphore"]
