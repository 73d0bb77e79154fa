"""BinarySemaphore and BoundedBinarySemaphore (aiologic's): Semaphores whose
value is 0 or 1 (binsem.c), for threads and asyncio tasks."""
from . import _squarefree as _c
from . import Semaphore


class BinarySemaphore(_c.BinarySemaphore, Semaphore):
    __doc__ = _c.BinarySemaphore.__doc__ + """

A release that finds the value at 1 leaves it at 1.  For asyncio tasks:
``async with sem`` and ``await sem.async_acquire()``, as Semaphore."""
    __module__ = "squarefree"


class BoundedBinarySemaphore(_c.BoundedBinarySemaphore, BinarySemaphore):
    __doc__ = _c.BoundedBinarySemaphore.__doc__
    __module__ = "squarefree"
