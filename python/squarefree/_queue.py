"""Queues for threads and asyncio tasks on the same object: Queue,
LifoQueue and PriorityQueue (queue.Queue's interface, async_* methods for
tasks, and janus's sync_q/async_q shape) and SimpleQueue.

Queue stands on _QueueCore (python/src/queue.c, which says how they wait
and why the library's sqf_queue does not fit): a thread's put and get are
single C calls; a task waits on the same Semaphores in the loop driver,
then takes its item or stores its own with the core's _take and _insert,
with no await in between, so a cancelled task has taken or put nothing.
"""
import collections as _collections
import heapq as _heapq
import time as _time
import types as _types
from queue import Empty, Full

from . import _COUNTDOWN, _SEM, _in_trio, _trio_driver, _try, _wait
from . import _squarefree as _c

__all__ = ["Empty", "Full", "LifoQueue", "PriorityQueue", "Queue", "QueueShutDown",
           "ShutDown", "SimpleQueue"]

# queue.ShutDown on Python 3.13 and later, else squarefree's own.
ShutDown = QueueShutDown = _c.ShutDown

_STALE = _c._QUEUE_STALE  # _take found no item for its permit: wait again


def _deadline(block, timeout):
    """A get's deadline (None: none), with queue's check of the timeout."""
    if not block or timeout is None:
        return None
    if timeout < 0:
        raise ValueError("'timeout' must be a non-negative number")
    return _time.monotonic() + timeout


def _left(deadline):
    """The seconds left until deadline (None: for ever), never below 0."""
    return None if deadline is None else max(0.0, deadline - _time.monotonic())


class Queue(_c._QueueCore):
    """Queue(maxsize=0)

    A FIFO queue for threads and asyncio tasks at once: queue.Queue's
    interface for threads (put, get, put_nowait, get_nowait, task_done,
    join, qsize, empty, full, shutdown), the same as coroutines for tasks
    (async_put, async_get, async_join), and janus's shape (sync_q, async_q,
    close, wait_closed, aclose, closed).  maxsize <= 0: unbounded.

    A put wakes at most the one getter it satisfies, with one system call;
    shutdown() wakes every waiter with one call per semaphore.  Cancelling a
    task's async_get or async_put (task.cancel(), asyncio.timeout) takes
    nothing and puts nothing.  Subclasses organise the items by overriding
    _init, _qsize, _put and _get, as with queue.Queue; they run under
    self.mutex.  Change the items only through the queue's methods: an item
    added to self.queue directly is invisible to get()."""

    if hasattr(_types, "GenericAlias"):  # 3.9+: Queue[int], as queue.Queue (3.8 has neither)
        __class_getitem__ = classmethod(_types.GenericAlias)

    # --- the hooks (queue.Queue's) ------------------------------------------------

    def _init(self, maxsize):
        """Make the storage (queue.Queue's hook; called first by __init__)."""
        self.queue = _collections.deque()

    def _qsize(self):
        """The number of items stored (hook, under self.mutex)."""
        return len(self.queue)

    def _put(self, item):
        """Store item (hook, under self.mutex)."""
        self.queue.append(item)

    def _get(self):
        """Remove and return the next item (hook, under self.mutex)."""
        return self.queue.popleft()

    # --- size ------------------------------------------------------------------

    def qsize(self):
        """The number of items in the queue (a snapshot)."""
        with self.mutex:
            return self._qsize()

    def empty(self):
        """True if the queue holds no item (a snapshot)."""
        with self.mutex:
            return not self._qsize()

    def full(self):
        """True if the queue holds maxsize items or more (a snapshot)."""
        with self.mutex:
            return 0 < self.maxsize <= self._qsize()

    @property
    def unfinished_tasks(self):
        """Items put and not yet marked done by task_done()."""
        return self._unfinished.value

    # --- put and get -------------------------------------------------------------

    def put_nowait(self, item):
        """put(item, block=False)."""
        self.put(item, False)

    def get_nowait(self):
        """get(block=False)."""
        return self.get(False)

    async def async_put(self, item, block=True, timeout=None):
        """put() for an asyncio task: waits as a task, never blocking its
        event loop.  Cancelled while it waits, it has put nothing."""
        if not block:
            return self.put(item, False)
        slots = self._put_slots(timeout)  # (checks the timeout)
        if slots is None:  # unbounded: no wait, but a trio call is a checkpoint all the same
            if _in_trio():
                await _trio_driver().checkpoint()
        elif not (_try(_SEM, slots, None) or await _wait(_SEM, slots, timeout)):
            raise Full
        self._insert(item, slots)

    async def async_get(self, block=True, timeout=None):
        """get() for an asyncio task: waits as a task.  Cancelled while it
        waits, it takes nothing: an item that had reached it stays first in
        line."""
        if not block:
            return self.get(False)
        deadline = _deadline(block, timeout)
        self._check_closed()
        while True:
            # A free item is taken without a coroutine or the loop (_try), as
            # _wait's own first step would take it.
            if not (_try(_SEM, self._items, None)
                    or await _wait(_SEM, self._items, _left(deadline))):
                raise Empty
            item = self._take()
            if item is not _STALE:
                return item

    # --- tasks done --------------------------------------------------------------

    def _check_closed(self):
        """RuntimeError once close() was called, in janus's words."""
        if self._closed:
            raise RuntimeError("Operation on the closed queue is forbidden")

    def task_done(self):
        """Mark one item got as processed; join() returns once every item
        put is.  ValueError if called more times than items were put."""
        self._check_closed()
        try:
            self._unfinished.down(1)
        except ValueError:
            raise ValueError("task_done() called too many times") from None

    def join(self):
        """Wait until every item put has been marked done by task_done()."""
        self._check_closed()
        self._unfinished.wait()
        self._check_closed()

    async def async_join(self, timeout=None):
        """join() for an asyncio task, waiting at most timeout seconds if
        given: True, or False if the timeout passed first."""
        self._check_closed()
        done = await _wait(_COUNTDOWN, self._unfinished, timeout)
        self._check_closed()
        return done

    # --- the end -----------------------------------------------------------------

    def shutdown(self, immediate=False):
        """Shut the queue down, as Python 3.13's: put() raises ShutDown from
        now on; get() returns the items left, then raises ShutDown;
        immediate=True discards the items left first, marking each done
        (so join() returns once the items already got are done).  Every
        blocked put and get, of threads and tasks, wakes."""
        with self.mutex:
            self.is_shutdown = True
            if immediate:
                while self._qsize():
                    self._get()
                    self._done_up_to(1)
            self._wake_all()

    def _done_up_to(self, n):
        """Mark up to n tasks done (fewer if fewer are unfinished, even as
        task_done() races this)."""
        while n:
            left = self._unfinished.value
            try:
                if left:
                    self._unfinished.down(min(n, left))
                return
            except ValueError:  # a task_done came first: look again
                continue

    def close(self):
        """janus's close(): every method but qsize, empty, full and the
        properties raises RuntimeError from now on; the items left are
        discarded and every blocked put, get and join wakes with it."""
        with self.mutex:
            self._closed = True
        self.shutdown(immediate=True)
        self._done_up_to(self._unfinished.value)  # wakes every join

    @property
    def closed(self):
        """True once close() was called (janus)."""
        return self._closed

    async def wait_closed(self):
        """janus's: return once the queue is closed (close() leaves nothing
        running); RuntimeError if it is not closed."""
        if not self._closed:
            raise RuntimeError("Waiting for non-closed queue")

    async def aclose(self):
        """close(), then wait_closed() (janus)."""
        self.close()
        await self.wait_closed()

    # --- janus's shape ------------------------------------------------------------

    @property
    def sync_q(self):
        """janus's sync_q: the queue itself, whose methods are queue.Queue's."""
        return self

    @property
    def async_q(self):
        """janus's async_q: a view with asyncio.Queue's interface."""
        view = self.__dict__.get("_async_q")
        if view is None:
            view = self._async_q = _AsyncQueueView(self)
        return view


class _AsyncQueueView:
    """The asyncio.Queue interface of a squarefree queue (its async_q), as
    janus's async_q: ``await put(item)``, ``await get()``, ``await join()``,
    put_nowait and get_nowait raising asyncio.QueueFull and
    asyncio.QueueEmpty, task_done, qsize, empty, full, maxsize,
    unfinished_tasks, closed, and shutdown (raising asyncio.QueueShutDown
    where asyncio has it, else squarefree.ShutDown)."""

    def __init__(self, queue):
        """The view of queue (Queue.async_q makes it)."""
        self._q = queue

    @staticmethod
    def _shut_down():
        """The exception asyncio.Queue raises once shut down."""
        import asyncio
        return getattr(asyncio, "QueueShutDown", ShutDown)

    async def put(self, item):
        """Put item, waiting (as a task) for a free slot."""
        try:
            await self._q.async_put(item)
        except ShutDown:
            raise self._shut_down() from None

    async def get(self):
        """Remove and return the next item, waiting (as a task) for one."""
        try:
            return await self._q.async_get()
        except ShutDown:
            raise self._shut_down() from None

    def put_nowait(self, item):
        """Put item if a slot is free, else asyncio.QueueFull."""
        import asyncio
        try:
            self._q.put(item, False)
        except Full:
            raise asyncio.QueueFull from None
        except ShutDown:
            raise self._shut_down() from None

    def get_nowait(self):
        """The next item if there is one, else asyncio.QueueEmpty."""
        import asyncio
        try:
            return self._q.get(False)
        except Empty:
            raise asyncio.QueueEmpty from None
        except ShutDown:
            raise self._shut_down() from None

    async def join(self):
        """Wait (as a task) until every item put is marked done."""
        await self._q.async_join()

    def task_done(self):
        """As Queue.task_done()."""
        self._q.task_done()

    def shutdown(self, immediate=False):
        """As Queue.shutdown()."""
        self._q.shutdown(immediate)

    def qsize(self):
        """The number of items in the queue (a snapshot)."""
        return self._q.qsize()

    def empty(self):
        """True if the queue holds no item (a snapshot)."""
        return self._q.empty()

    def full(self):
        """True if the queue holds maxsize items or more (a snapshot)."""
        return self._q.full()

    @property
    def maxsize(self):
        """The queue's bound (<= 0: none)."""
        return self._q.maxsize

    @property
    def unfinished_tasks(self):
        """Items put and not yet marked done."""
        return self._q.unfinished_tasks

    @property
    def closed(self):
        """True once the queue is closed."""
        return self._q.closed


class LifoQueue(Queue):
    """LifoQueue(maxsize=0)

    As Queue, last in, first out (queue.LifoQueue)."""

    def _init(self, maxsize):
        """A list, its top last."""
        self.queue = []

    def _qsize(self):
        """The number of items stored."""
        return len(self.queue)

    def _put(self, item):
        """Push item on top."""
        self.queue.append(item)

    def _get(self):
        """Pop the top item."""
        return self.queue.pop()


class PriorityQueue(Queue):
    """PriorityQueue(maxsize=0)

    As Queue, the lowest item first (queue.PriorityQueue: entries are
    typically (priority, data) tuples)."""

    def _init(self, maxsize):
        """A list kept as a heap (heapq)."""
        self.queue = []

    def _qsize(self):
        """The number of items stored."""
        return len(self.queue)

    def _put(self, item):
        """Push item onto the heap."""
        _heapq.heappush(self.queue, item)

    def _get(self):
        """Pop the lowest item."""
        return _heapq.heappop(self.queue)


class SimpleQueue(_c._SimpleQueueCore):
    """SimpleQueue()

    An unbounded FIFO queue, as queue.SimpleQueue: put never blocks, and
    is reentrant (it may be called from a __del__ or a signal handler while
    this thread is inside put or get); no task_done, join or shutdown.
    Tasks wait with async_get."""

    if hasattr(_types, "GenericAlias"):  # 3.9+, as queue.SimpleQueue
        __class_getitem__ = classmethod(_types.GenericAlias)

    async def async_put(self, item):
        """put(item), for symmetry with async_get (under trio, a
        checkpoint first, as every trio call)."""
        if _in_trio():
            await _trio_driver().checkpoint()
        self.put(item)

    async def async_get(self, block=True, timeout=None):
        """get() for an asyncio task.  Cancelled while it waits, it takes
        nothing."""
        if not block:
            return self.get(False)
        _deadline(True, timeout)  # queue's check of the timeout
        if not await _wait(_SEM, self._items, timeout):
            raise Empty
        return self._take()
