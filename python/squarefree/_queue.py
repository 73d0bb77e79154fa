"""Queues for threads and asyncio tasks on the same object: Queue,
LifoQueue and PriorityQueue (queue.Queue's interface, async_* methods for
tasks, and janus's sync_q/async_q shape) and SimpleQueue.

How they wait.  The items are counted by a squarefree Semaphore, the free
slots of a bounded queue by another, and the unfinished tasks by a
CountdownEvent; the storage is a Python container behind the _init,
_qsize, _put and _get hooks, called as queue.Queue calls them (under
``self.mutex``, held only for those O(1) steps, never across a wait).
Invariant, between any two of the queue's own operations: the item
semaphore's permits are at most the items stored, less those reserved by
getters that hold a permit and have not yet taken their item; the slot
semaphore's permits (less ``_debt``, after a shrink) are at most maxsize
less the items stored and reserved by putters.

- put: take a slot permit (bounded queue: waiting for one, as a thread in
  the thread driver, as a task in the loop driver), store the item, count
  it unfinished, add one item permit: that release wakes at most the one
  getter it satisfies, with one system call (none if nobody sleeps), so n
  blocked getters fed n items cost O(n) in all.
- get: take an item permit (waiting likewise), then the item, then free
  a slot.  A permit is a reservation of some item, not of a given one: a
  task cancelled after its permit arrived gives the permit back (the loop
  driver's abandon path) and the item never left its place.  A cancelled
  put gives its slot back likewise and has put nothing.
- shutdown: floods both semaphores with permits (one release each, one
  system call each, whatever number of threads and tasks wait); a woken
  getter that finds the queue shut down and empty, or a woken putter,
  raises ShutDown and returns its permit, so the flood never runs out.
  close() does the same and also empties the count of unfinished tasks,
  waking join().

Why not the C library's sqf_queue for the FIFO queue: it holds fixed-size
items in a bounded ring, while queue.Queue is unbounded by default, and its
organisation is the overridable hooks above (LifoQueue, PriorityQueue,
users' subclasses, CPython's own tests override them); and a task's pop
would happen at dispatch, so a task cancelled after that holds an item
that can only go back at the tail, out of order.  Semaphores of
reservations, with the items in the container, keep every item in place
until a getter that will return it takes it.
"""
import collections as _collections
import heapq as _heapq
import queue as _stdqueue
import time as _time
import types as _types
from queue import Empty, Full

from . import _COUNTDOWN, _SEM, _wait
from . import _squarefree as _c

__all__ = ["Empty", "Full", "LifoQueue", "PriorityQueue", "Queue", "QueueShutDown",
           "ShutDown", "SimpleQueue"]


if hasattr(_stdqueue, "ShutDown"):
    ShutDown = _stdqueue.ShutDown
else:
    class ShutDown(Exception):
        """Raised by put() on a queue that is shut down, and by get() on one
        that is shut down and empty (queue.ShutDown, which this is on
        Python 3.13 and later)."""

    ShutDown.__module__ = "squarefree"

QueueShutDown = ShutDown

_SEM_MAX = 0x7FFFFFFF  # SQF_SEM_VALUE_MAX
# A shut-down queue's semaphores hold at least this many permits: all its
# waiters wake, and every permit a woken waiter gives back still fits.
_FLOOD = 1 << 30
_STALE = object()  # _take found no item for its permit (see _take)
_CLOSED = "Operation on the closed queue is forbidden"  # janus's words


def _flood(sem):
    """Wake every waiter of sem with one release, leaving it plenty."""
    v = sem.value
    if v < _FLOOD:
        sem.release(_FLOOD - v)


def _deadline(block, timeout):
    """get()'s deadline (None: none), with queue's check of the timeout."""
    if not block or timeout is None:
        return None
    if timeout < 0:
        raise ValueError("'timeout' must be a non-negative number")
    return _time.monotonic() + timeout


def _left(deadline):
    return None if deadline is None else max(0.0, deadline - _time.monotonic())


class Queue:
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

    __class_getitem__ = classmethod(_types.GenericAlias)

    def __init__(self, maxsize=0):
        self._init(maxsize)
        self._maxsize = maxsize
        # Guards the hooks and the bookkeeping around them (queue.Queue's
        # mutex); never held across a wait.
        self.mutex = _c.Lock()
        self._items = _c.Semaphore(0)
        self._slots = _c.Semaphore(min(maxsize, _SEM_MAX) if maxsize > 0 else 0)
        self._debt = 0  # slots to retire instead of freeing (after a shrink)
        self._unfinished = _c.CountdownEvent(0)
        self.is_shutdown = False
        self._closed = False
        self._async_q = None

    # --- the hooks (queue.Queue's) ------------------------------------------------

    def _init(self, maxsize):
        self.queue = _collections.deque()

    def _qsize(self):
        return len(self.queue)

    def _put(self, item):
        self.queue.append(item)

    def _get(self):
        return self.queue.popleft()

    # --- size ------------------------------------------------------------------

    @property
    def maxsize(self):
        """The bound (<= 0: none).  Settable, as queue.Queue's: a larger
        bound frees slots at once; a smaller one retires them as items
        leave.  A change to or from 0 counts the slots from qsize() and is
        exact only while no put is under way."""
        return self._maxsize

    @maxsize.setter
    def maxsize(self, n):
        with self.mutex:
            old, self._maxsize = self._maxsize, n
            if self.is_shutdown:
                return
            if n <= 0:
                if old > 0:
                    _flood(self._slots)  # waiting putters go ahead
                return
            free = min(n, _SEM_MAX) - (min(old, _SEM_MAX) if old > 0 else self._qsize())
            if old <= 0:
                self._slots = _c.Semaphore(0)
                self._debt = 0
            while free < 0 and self._slots.acquire(False):
                free += 1
            if free < 0:
                self._debt -= free
            else:
                repaid = min(free, self._debt)
                self._debt -= repaid
                if free > repaid:
                    self._slots.release(free - repaid)

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
            return 0 < self._maxsize <= self._qsize()

    @property
    def unfinished_tasks(self):
        """Items put and not yet marked done by task_done()."""
        return self._unfinished.value

    # --- put -------------------------------------------------------------------

    def _check_closed(self):
        if self._closed:
            raise RuntimeError(_CLOSED)

    def _before_put(self, block, timeout):
        """A put's checks, then its slot: (None, False) unbounded; (slots,
        False) a slot taken without waiting; (slots, True) one to wait for.
        Full if not blocking and none is free."""
        self._check_closed()
        if self.is_shutdown:
            raise ShutDown
        if self._maxsize <= 0:
            return None, False
        slots = self._slots
        if not block:
            if not slots.acquire(False):
                raise Full
            return slots, False
        if timeout is not None and timeout < 0:
            raise ValueError("'timeout' must be a non-negative number")
        return slots, True

    def _insert(self, item, slots):
        """Store an item whose slot (from slots, if not None) is taken."""
        with self.mutex:
            try:
                self._check_closed()
                if self.is_shutdown:
                    raise ShutDown
                self._unfinished.up(1)
                try:
                    self._put(item)
                except BaseException:
                    self._unfinished.down(1)
                    raise
            except BaseException:
                if slots is not None:
                    slots.release(1)
                raise
            self._items.release(1)

    def put(self, item, block=True, timeout=None):
        """Put item into the queue, waiting for a free slot if it is
        bounded and full (for ever, or timeout seconds, then Full); Full at
        once if not block; ShutDown once shut down."""
        slots, wait = self._before_put(block, timeout)
        if wait and not slots.acquire(True, timeout):
            raise Full
        self._insert(item, slots)

    def put_nowait(self, item):
        """put(item, block=False)."""
        self.put(item, False)

    async def async_put(self, item, block=True, timeout=None):
        """put() for an asyncio task: waits as a task, never blocking its
        event loop.  Cancelled while it waits, it has put nothing."""
        slots, wait = self._before_put(block, timeout)
        if wait and not await _wait(_SEM, slots, timeout):
            raise Full
        self._insert(item, slots)

    # --- get -------------------------------------------------------------------

    def _take(self):
        """Take an item for an item permit just taken; _STALE if there is
        none although the queue is open (someone took it from self.queue
        behind the queue's back: the permit is dropped and the getter waits
        again)."""
        with self.mutex:
            if self._closed or (self.is_shutdown and not self._qsize()):
                self._items.release(1)  # to the flood: the next woken waiter's
                self._check_closed()
                raise ShutDown
            if not self._qsize():
                return _STALE
            try:
                item = self._get()
            except BaseException:
                self._items.release(1)
                raise
            if self._maxsize > 0:
                if self._debt:
                    self._debt -= 1
                else:
                    self._slots.release(1)
            return item

    def get(self, block=True, timeout=None):
        """Remove and return the next item, waiting for one (for ever, or
        timeout seconds, then Empty); Empty at once if not block; once shut
        down, the items left and then ShutDown."""
        deadline = _deadline(block, timeout)
        self._check_closed()
        while True:
            if not self._items.acquire(block, _left(deadline)):
                raise Empty
            item = self._take()
            if item is not _STALE:
                return item
            if not block:
                raise Empty

    def get_nowait(self):
        """get(block=False)."""
        return self.get(False)

    async def async_get(self, block=True, timeout=None):
        """get() for an asyncio task: waits as a task.  Cancelled while it
        waits, it takes nothing: an item that had reached it stays first in
        line."""
        deadline = _deadline(block, timeout)
        self._check_closed()
        while True:
            if block:
                got = await _wait(_SEM, self._items, _left(deadline))
            else:
                got = self._items.acquire(False)
            if not got:
                raise Empty
            item = self._take()
            if item is not _STALE:
                return item
            if not block:
                raise Empty

    # --- tasks done --------------------------------------------------------------

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
                    if self._unfinished.value:
                        self._unfinished.down(1)
            _flood(self._items)
            _flood(self._slots)

    def close(self):
        """janus's close(): every method but qsize, empty, full and the
        properties raises RuntimeError from now on; the items left are
        discarded and every blocked put, get and join wakes with it."""
        with self.mutex:
            self._closed = True
        self.shutdown(immediate=True)
        left = self._unfinished.value
        if left:
            self._unfinished.down(left)

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
        view = self._async_q
        if view is None:
            view = self._async_q = AsyncQueueView(self)
        return view


class AsyncQueueView:
    """The asyncio.Queue interface of a squarefree queue (its async_q), as
    janus's async_q: ``await put(item)``, ``await get()``, ``await join()``,
    put_nowait and get_nowait raising asyncio.QueueFull and
    asyncio.QueueEmpty, task_done, qsize, empty, full, maxsize,
    unfinished_tasks, closed, and shutdown (raising asyncio.QueueShutDown
    where asyncio has it, else squarefree.ShutDown)."""

    def __init__(self, queue):
        self._q = queue

    @staticmethod
    def _shut_down():
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
        self.queue = []

    def _qsize(self):
        return len(self.queue)

    def _put(self, item):
        self.queue.append(item)

    def _get(self):
        return self.queue.pop()


class PriorityQueue(Queue):
    """PriorityQueue(maxsize=0)

    As Queue, the lowest item first (queue.PriorityQueue: entries are
    typically (priority, data) tuples)."""

    def _init(self, maxsize):
        self.queue = []

    def _qsize(self):
        return len(self.queue)

    def _put(self, item):
        _heapq.heappush(self.queue, item)

    def _get(self):
        return _heapq.heappop(self.queue)


class SimpleQueue:
    """SimpleQueue()

    An unbounded FIFO queue, as queue.SimpleQueue: put never blocks, and
    is reentrant (it may be called from a __del__ or a signal handler while
    this thread is inside put or get); no task_done, join or shutdown.
    Tasks wait with async_get."""

    __class_getitem__ = classmethod(_types.GenericAlias)

    def __init__(self):
        self._queue = _collections.deque()
        self._items = _c.Semaphore(0)

    def put(self, item, block=True, timeout=None):
        """Put item into the queue; never blocks (block and timeout are
        there for queue.Queue's signature)."""
        self._queue.append(item)
        self._items.release(1)

    def put_nowait(self, item):
        """put(item)."""
        self.put(item)

    async def async_put(self, item):
        """put(item), for symmetry with async_get."""
        self.put(item)

    def get(self, block=True, timeout=None):
        """Remove and return the next item, waiting for one (for ever, or
        timeout seconds, then Empty); Empty at once if not block."""
        if not self._items.acquire(block, _left(_deadline(block, timeout))):
            raise Empty
        return self._queue.popleft()

    def get_nowait(self):
        """get(block=False)."""
        return self.get(False)

    async def async_get(self, block=True, timeout=None):
        """get() for an asyncio task.  Cancelled while it waits, it takes
        nothing."""
        if block:
            got = await _wait(_SEM, self._items, _left(_deadline(block, timeout)))
        else:
            got = self._items.acquire(False)
        if not got:
            raise Empty
        return self._queue.popleft()

    def empty(self):
        """True if the queue holds no item (a snapshot)."""
        return not self._queue

    def qsize(self):
        """The number of items in the queue (a snapshot)."""
        return len(self._queue)
