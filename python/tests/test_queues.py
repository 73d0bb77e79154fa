"""squarefree's queues with threads and tasks on one object: every item
counted (none lost, none duplicated, FIFO order per producer) with
producers and consumers of both kinds on two event loops; cancellation
(a cancel, a time-out) at random points losing nothing, including after
an item reached the cancelled task; time-outs;
shutdown with waiters of both kinds; join and task_done across kinds;
janus's shape (a few of janus's own cases); references neither leaked nor
dropped early.  The tests that take the `lib` fixture run under every
library (asyncio, uvloop, trio, anyio on asyncio and on trio); those named
asyncio_only use asyncio's loop or task internals on purpose."""
import asyncio
import gc
import queue
import random
import sys
import threading
import time
import tracemalloc
import weakref

import pytest

import squarefree as sf
from aiocompat import timeout
from libs import Lib, joined
from test_primitives import Interrupted, interrupt_main_after, usr1_raises  # noqa: F401

QUEUES = [sf.Queue, sf.LifoQueue, sf.PriorityQueue]


def run_in_loop(coro, lib=Lib("asyncio")):
    """Run coro in an event loop of its own thread (never this one's)."""
    t, out = lib.in_thread(lambda: coro)
    return joined(t, out)


def driver_of(loop):
    return getattr(loop, "_squarefree_driver")


# --- the surface ----------------------------------------------------------------------

def test_exceptions_are_queues_own():
    assert sf.Empty is queue.Empty and sf.Full is queue.Full
    assert sf.QueueShutDown is sf.ShutDown
    assert sf.ShutDown is getattr(queue, "ShutDown", sf.ShutDown)
    assert issubclass(sf.ShutDown, Exception)
    if sys.version_info >= (3, 9):
        assert sf.Queue[int] is not None and sf.SimpleQueue[int] is not None
    else:  # as queue.Queue's: no generic alias before 3.9
        pytest.raises(TypeError, lambda: sf.Queue[int])


@pytest.mark.parametrize("cls", QUEUES)
def test_order_of_each_kind(cls):
    q = cls()
    for x in (3, 1, 2):
        q.put(x)
    got = [q.get(), q.get(), q.get()]
    assert got == {sf.Queue: [3, 1, 2], sf.LifoQueue: [2, 1, 3], sf.PriorityQueue: [1, 2, 3]}[cls]

    async def main():
        for x in (3, 1, 2):
            await q.async_put(x)
        return [await q.async_get() for _ in range(3)]
    assert run_in_loop(main()) == got


def test_maxsize_grows_and_shrinks():
    q = sf.Queue(2)
    q.put(1)
    q.put(2)
    q.maxsize = 3  # one slot more, at once
    q.put(3)
    pytest.raises(sf.Full, q.put_nowait, 4)
    q.maxsize = 1  # two slots retired as items leave
    assert q.get() == 1 and q.get() == 2
    pytest.raises(sf.Full, q.put_nowait, 4)
    assert q.get() == 3
    q.put_nowait(4)
    pytest.raises(sf.Full, q.put_nowait, 5)
    q.maxsize = 0  # unbounded
    for i in range(10):
        q.put_nowait(i)
    q.maxsize = 12  # bounded again: 11 items, one slot
    q.put_nowait("x")
    pytest.raises(sf.Full, q.put_nowait, "y")
    assert q.qsize() == 12 and q.full()


# --- threads and tasks on one queue -------------------------------------------------

def test_mixed_producers_and_consumers_two_loops(lib):
    """3 producer threads, 2 consumer threads, and on each of two event
    loops 2 producer and 2 consumer tasks, over a bounded queue (so both
    sides wait); every item got once, each producer's items in order."""
    N = 300
    q = sf.Queue(maxsize=7)
    got = {}  # consumer -> list of items
    producers_done = sf.CountdownEvent(7)

    def thread_producer(pid):
        for i in range(N):
            q.put((pid, i))
        producers_done.down()

    def thread_consumer(cid):
        mine = got[cid] = []
        while True:
            x = q.get()
            q.task_done()
            if x is None:
                return
            mine.append(x)

    async def loop_main(tag):
        async def producer(pid):
            for i in range(N):
                await q.async_put((pid, i))
            producers_done.down()

        async def consumer(cid):
            mine = got[cid] = []
            while True:
                x = await q.async_get()
                q.task_done()
                if x is None:
                    return
                mine.append(x)
                if random.random() < 0.1:
                    await lib.sleep(0)
        await lib.gather(lambda: producer(f"{tag}p0"), lambda: producer(f"{tag}p1"),
                         lambda: consumer(f"{tag}c0"), lambda: consumer(f"{tag}c1"))

    threads = [threading.Thread(target=thread_producer, args=(f"tp{i}",)) for i in range(3)]
    threads += [threading.Thread(target=thread_consumer, args=(f"tc{i}",)) for i in range(2)]
    loops = [lib.in_thread(loop_main, tag) for tag in ("a", "b")]
    for t in threads:
        t.start()
    assert producers_done.wait(60)
    q.join()  # every real item is done
    for _ in range(6):
        q.put(None)
    for t in threads:
        t.join(30)
        assert not t.is_alive()
    for t, out in loops:
        joined(t, out)
    assert q.unfinished_tasks == 0 and q.empty()
    items = [x for mine in got.values() for x in mine]
    assert len(items) == 7 * N and len(set(items)) == 7 * N
    for mine in got.values():
        last = {}
        for pid, i in mine:
            assert i > last.get(pid, -1), "a producer's items out of order"
            last[pid] = i


def test_join_and_task_done_across_kinds(lib):
    q = sf.Queue()
    for i in range(5):
        q.put(i)
    joined_by_thread = []
    t = threading.Thread(target=lambda: joined_by_thread.append(q.join()))
    t.start()

    async def main():
        assert await q.async_join(timeout=0.02) is False
        async with lib.group() as g:
            waiter = g.spawn(q.async_join)
            for _ in range(5):
                await q.async_get()
                q.task_done()
            assert await waiter.result() is True
        with pytest.raises(ValueError):
            q.task_done()
    run_in_loop(main(), lib)
    t.join(30)
    assert joined_by_thread == [None]


# --- cancellation -----------------------------------------------------------------

def test_asyncio_only_cancelled_get_after_its_item_arrived_leaves_it_first(backend):
    """(asyncio's task internals: _fut_waiter.)  The item reaches the task
    (its permit taken at dispatch), then the task is cancelled before it runs: the item stays first in line."""
    async def main():
        q = sf.Queue()
        loop = asyncio.get_running_loop()
        for resolved_first in (True, False):
            task = asyncio.ensure_future(q.async_get())
            await asyncio.sleep(0.01)  # it waits
            q.put("a")
            if resolved_first:
                driver_of(loop).dispatch()  # the permit reaches the task
                assert task._fut_waiter.done()  # resolved; the task has yet to run
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            q.put("b")
            assert q.qsize() == 2
            assert [q.get_nowait(), q.get_nowait()] == ["a", "b"]
            pytest.raises(sf.Empty, q.get_nowait)
    run_in_loop(main())


def test_asyncio_only_cancelled_put_has_not_put(backend):
    """(asyncio's task internals: _fut_waiter.)"""
    async def main():
        q = sf.Queue(1)
        q.put("first")
        loop = asyncio.get_running_loop()
        for resolved_first in (True, False):
            task = asyncio.ensure_future(q.async_put("never"))
            await asyncio.sleep(0.01)
            assert q.get() == "first"
            if resolved_first:
                driver_of(loop).dispatch()  # the slot reaches the task
                assert task._fut_waiter.done()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert q.empty()
            q.put_nowait("first")  # the slot was given back
            pytest.raises(sf.Full, q.put_nowait, "more")
        assert q.unfinished_tasks == 3  # the three puts of "first"
    run_in_loop(main())


def test_random_cancellations_lose_nothing(backend, lib):
    """Producer threads feed a bounded queue; on an event loop, consumer
    and producer tasks are cancelled at random points (a cancel from
    another task, a time-out around the wait or around the task's whole
    coroutine: task.cancel(), asyncio.timeout, wait_for under asyncio,
    cancel scopes under trio and anyio).  Every put that returned is got exactly
    once; none that was cancelled is."""
    N = 400
    q = sf.Queue(maxsize=4)
    put_ok = []  # items whose put returned (appended under the GIL)

    def producer(pid):
        for i in range(N):
            q.put((pid, i))
            put_ok.append((pid, i))

    async def main():
        rnd = random.Random(7)
        got = []

        async def getter():
            got.append(await q.async_get())

        async def putter(i):
            await q.async_put(("task", i))
            put_ok.append(("task", i))

        async def getter_timeout(seconds):
            async with lib.move_on_after(seconds):
                got.append(await q.async_get())

        async def cancelled_after(seconds, fn, *args):
            async with lib.group() as g:
                task = g.spawn(fn, *args)
                await lib.sleep(seconds)
                task.cancel()
            assert (await task.outcome()).state in ("ok", "cancelled")

        i = 0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            roll = rnd.random()
            if roll < 0.3:
                await cancelled_after(rnd.random() * 0.002, getter)
            elif roll < 0.5:
                await getter_timeout(rnd.random() * 0.002)
            elif roll < 0.65:
                async with lib.move_on_after(rnd.random() * 0.002):
                    await putter(i)
            elif roll < 0.75:
                await cancelled_after(0, putter, i)
            else:
                got.append(await q.async_get())
            i += 1
            if len(got) >= 3 * N and not threads_alive():
                break
        while True:  # what is left
            try:
                got.append(q.get_nowait())
            except sf.Empty:
                break
        return got

    threads = [threading.Thread(target=producer, args=(f"t{p}",)) for p in range(3)]

    def threads_alive():
        return any(t.is_alive() for t in threads)
    for t in threads:
        t.start()
    got = run_in_loop(main(), lib)
    for t in threads:
        t.join(30)
    assert sorted(got) == sorted(put_ok), "an item lost, duplicated, or put by a cancelled put"
    assert len(set(got)) == len(got)
    assert sum(1 for x in got if x[0] != "task") == 3 * N


def test_asyncio_only_get_of_a_dropped_loop_takes_nothing(backend):
    """(asyncio's loop API: loop.close.)  A task waiting in async_get when
    its loop is closed and dropped: its wait ends when the collector closes its coroutine, leaving the
    next item (and its wake-up) to a thread, and the queue it waited on
    lives until then."""
    q = sf.Queue()
    ref = weakref.ref(q)
    loop = asyncio.new_event_loop()
    task = loop.create_task(q.async_get())
    loop.run_until_complete(asyncio.sleep(0.01))  # the task now waits
    assert not task.done()
    loop.close()
    del q
    assert ref() is not None  # the waiting task holds it
    del task, loop
    gc.collect()
    assert ref() is None
    q = sf.Queue()
    loop = asyncio.new_event_loop()
    task = loop.create_task(q.async_get())
    loop.run_until_complete(asyncio.sleep(0.01))
    loop.close()
    del task, loop
    gc.collect()
    got = []
    t = threading.Thread(target=lambda: got.append(q.get(timeout=3)))
    t.start()
    time.sleep(0.05)  # the thread sleeps on the items' word
    begin = time.monotonic()
    q.put("x")
    t.join(10)
    assert got == ["x"] and time.monotonic() - begin < 1.5 and q.empty()


def test_simplequeue_cancelled_get_takes_nothing(backend, lib):
    async def main():
        q = sf.SimpleQueue()
        for _ in range(20):
            async with lib.move_on_after(0.001):
                await q.async_get()
        q.put(1)
        await q.async_put(2)
        assert [await q.async_get(), await q.async_get()] == [1, 2]
        pytest.raises(sf.Empty, q.get_nowait)
    run_in_loop(main(), lib)


# --- time-outs ----------------------------------------------------------------------

def test_timeouts_threads_and_tasks():
    q = sf.Queue(1)
    t0 = time.monotonic()
    pytest.raises(sf.Empty, q.get, timeout=0.05)
    assert time.monotonic() - t0 >= 0.04
    q.put(1)
    pytest.raises(sf.Full, q.put, 2, timeout=0.05)
    with pytest.raises(ValueError):
        q.put(2, timeout=-1)
    with pytest.raises(ValueError):
        q.get(timeout=-1)

    async def main():
        with pytest.raises(sf.Full):
            await q.async_put(2, timeout=0.02)
        with pytest.raises(sf.Full):
            await q.async_put(2, block=False)
        assert await q.async_get(timeout=0.02) == 1
        with pytest.raises(sf.Empty):
            await q.async_get(timeout=0.02)
        with pytest.raises(sf.Empty):
            await q.async_get(block=False)
        with pytest.raises(ValueError):
            await q.async_get(timeout=-1)
    run_in_loop(main())
    assert q.empty() and q.unfinished_tasks == 1


def test_blocked_get_woken_by_a_put_from_another_kind(lib):
    q = sf.Queue()

    async def main():
        threading.Timer(0.05, q.put, ("from a thread",)).start()
        return await q.async_get(timeout=30)
    assert run_in_loop(main(), lib) == "from a thread"

    async def put_later():
        await lib.sleep(0.05)
        await q.async_put("from a task")
    t, out = lib.in_thread(put_later)
    assert q.get(timeout=30) == "from a task"
    joined(t, out)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach only the main thread")
def test_signal_interrupts_put_and_get(usr1_raises):
    """A signal handler that raises stops a blocked get or put, which takes
    (or puts) nothing: the queue then works as before."""
    q = sf.Queue(1)
    t = interrupt_main_after(0.05)
    with pytest.raises(Interrupted):
        q.get(timeout=5)
    t.join()
    q.put("a")
    t = interrupt_main_after(0.05)
    with pytest.raises(Interrupted):
        q.put("b", timeout=5)
    t.join()
    assert q.qsize() == 1 and q.get(timeout=1) == "a"
    q.put_nowait("c")  # one slot, as before
    pytest.raises(sf.Full, q.put_nowait, "d")
    assert q.get_nowait() == "c" and q.unfinished_tasks == 2


# --- shutdown -----------------------------------------------------------------------

def _wait_for(pred, timeout=10.0):
    end = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < end
        time.sleep(0.005)


def test_shutdown_wakes_blocked_puts_and_gets_of_both_kinds(backend, lib):
    full, empty = sf.Queue(1), sf.Queue()
    full.put("x")
    results = []

    def thread_side(fn):
        try:
            fn()
        except sf.ShutDown:
            results.append("shutdown")

    async def task_side():
        async def one(coro):
            try:
                await coro
            except sf.ShutDown:
                results.append("shutdown")
        await lib.gather(*[lambda i=i: one(full.async_put(i)) for i in range(3)],
                         *[lambda: one(empty.async_get()) for _ in range(3)])
    threads = [threading.Thread(target=thread_side, args=(lambda: full.put("y"),))
               for _ in range(3)]
    threads += [threading.Thread(target=thread_side, args=(empty.get,)) for _ in range(3)]
    for t in threads:
        t.start()
    lt = lib.in_thread(task_side)
    time.sleep(0.2)  # every waiter asleep (a late one raises ShutDown too)
    assert results == []
    full.shutdown()
    empty.shutdown()
    for t in threads:
        t.join(30)
        assert not t.is_alive()
    joined(*lt)
    assert results == ["shutdown"] * 12
    assert full.get() == "x"  # immediate=False: what is left drains
    pytest.raises(sf.ShutDown, full.get)
    pytest.raises(sf.ShutDown, full.get_nowait)
    pytest.raises(sf.ShutDown, full.put, 1)
    pytest.raises(sf.ShutDown, full.put_nowait, 1)


def test_shutdown_immediate_discards_and_releases_join():
    q = sf.Queue()
    for i in range(4):
        q.put(i)
    assert q.get() == 0  # got, not done: join still waits for it
    joiners = []
    t = threading.Thread(target=lambda: joiners.append(q.join()))
    t.start()

    async def ajoin():
        return await q.async_join()
    lt = Lib("asyncio").in_thread(ajoin)
    time.sleep(0.05)
    q.shutdown(immediate=True)
    assert q.qsize() == 0 and q.unfinished_tasks == 1 and t.is_alive()
    pytest.raises(sf.ShutDown, q.get_nowait)
    q.task_done()
    t.join(30)
    assert joiners == [None] and joined(*lt) is True
    pytest.raises(ValueError, q.task_done)


def test_async_q_shutdown_raises_asyncios_exception():
    async def main():
        q = sf.Queue()
        q.async_q.put_nowait(1)
        q.async_q.shutdown()
        assert await q.async_q.get() == 1
        exc = getattr(asyncio, "QueueShutDown", sf.ShutDown)
        with pytest.raises(exc):
            await q.async_q.get()
        with pytest.raises(exc):
            q.async_q.put_nowait(2)
    run_in_loop(main())


# --- janus's shape (cases after janus's own tests) -------------------------------------

def test_janus_maxsize_and_views():
    async def main():
        q = sf.Queue(5)
        assert q.sync_q.maxsize == 5 and q.async_q.maxsize == 5
        assert sf.Queue().async_q.maxsize == 0
        assert q.async_q is q.async_q
    run_in_loop(main())


def test_janus_sync_put_async_get():
    async def main():
        q = sf.Queue()
        loop = asyncio.get_running_loop()
        for _ in range(3):
            f = loop.run_in_executor(None, lambda: [q.sync_q.put(i) for i in range(5)])
            assert [await q.async_q.get() for _ in range(5)] == list(range(5))
            assert q.async_q.empty()
            await f
        assert q.async_q.unfinished_tasks == 15
    run_in_loop(main())


def test_janus_async_put_sync_get_and_join():
    async def main():
        q = sf.Queue(2)
        loop = asyncio.get_running_loop()

        def threaded():
            for i in range(5):
                assert q.sync_q.get() == i
                q.sync_q.task_done()
        f = loop.run_in_executor(None, threaded)
        for i in range(5):
            await q.async_q.put(i)
        await q.async_q.join()
        await f
        assert q.async_q.empty() and q.sync_q.unfinished_tasks == 0
    run_in_loop(main())


def test_janus_sync_join_async_done():
    async def main():
        q = sf.Queue()
        loop = asyncio.get_running_loop()

        def threaded():
            for i in range(5):
                q.sync_q.put(i)
            q.sync_q.join()
        f = loop.run_in_executor(None, threaded)
        for i in range(5):
            assert await q.async_q.get() == i
            q.async_q.task_done()
        await f
    run_in_loop(main())


def test_janus_nowait_exceptions():
    async def main():
        q = sf.Queue(1)
        with pytest.raises(asyncio.QueueEmpty):
            q.async_q.get_nowait()
        with pytest.raises(queue.Empty):
            q.sync_q.get_nowait()
        q.async_q.put_nowait(1)
        assert q.async_q.full() and q.async_q.qsize() == 1
        with pytest.raises(asyncio.QueueFull):
            q.async_q.put_nowait(2)
        with pytest.raises(queue.Full):
            q.sync_q.put_nowait(2)
    run_in_loop(main())


def test_janus_close():
    async def main():
        q = sf.Queue()
        assert not q.closed
        with pytest.raises(RuntimeError):
            await q.wait_closed()
        q.sync_q.put(1)
        waiter = asyncio.ensure_future(q.async_q.join())
        await asyncio.sleep(0.01)
        q.close()
        q.close()  # twice is harmless
        assert q.closed and q.async_q.closed and q.sync_q.closed
        with pytest.raises(RuntimeError):
            await waiter
        for op in (lambda: q.sync_q.put(2), q.sync_q.get, q.async_q.get_nowait,
                   lambda: q.async_q.put_nowait(2), q.sync_q.task_done, q.sync_q.join):
            with pytest.raises(RuntimeError, match="closed queue"):
                op()
        with pytest.raises(RuntimeError):
            await q.async_q.get()
        with pytest.raises(RuntimeError):
            await q.async_q.put(3)
        await q.wait_closed()
        q2 = sf.Queue()
        await q2.aclose()
        assert q2.closed
    run_in_loop(main())


def test_janus_close_wakes_blocked_get_of_a_thread():
    q = sf.Queue()
    out = []

    def get():
        try:
            q.sync_q.get()
        except RuntimeError as e:
            out.append(e)
    t = threading.Thread(target=get)
    t.start()
    time.sleep(0.05)
    q.close()
    t.join(30)
    assert len(out) == 1


# --- references -------------------------------------------------------------------

class Item:
    def __lt__(self, other):  # for PriorityQueue
        return id(self) < id(other)


def test_references_through_cancellation_timeouts_and_shutdown(backend):
    """Objects put, got, and timed out or cancelled around, many times:
    each item's count back to where it was, and a dropped queue frees
    what it held (and nothing before)."""
    items = [Item() for _ in range(50)]
    before = [sys.getrefcount(x) for x in items]

    async def churn(q):
        for round_ in range(30):
            for x in items[:5]:
                await q.async_put(x)
            for _ in range(5):  # puts that time out on the full queue
                with pytest.raises(sf.Full):
                    await q.async_put(items[-1], timeout=0)
            task = asyncio.ensure_future(q.async_put(items[-1]))
            await asyncio.sleep(0)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            for _ in range(5):
                assert (await q.async_get()) in items
                q.task_done()
            for _ in range(3):  # gets cancelled and timed out on the empty queue
                task = asyncio.ensure_future(q.async_get())
                await asyncio.sleep(0)
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                try:
                    async with timeout(0.0005):
                        await q.async_get()
                except TimeoutError:
                    pass

    for cls in QUEUES:
        q = cls(5)
        run_in_loop(churn(q))
        for _ in range(100):
            pytest.raises(sf.Empty, q.get, timeout=0)
        q.put(items[0])
        q.shutdown(immediate=True)
        pytest.raises(sf.ShutDown, q.get)
        del q
        gc.collect()
        assert [sys.getrefcount(x) for x in items] == before

    # hooks that raise, and thread time-outs: nothing kept, nothing lost
    class Failing(sf.Queue):
        n = 0

        def _put(self, item):
            self.n += 1
            if self.n % 2:
                raise KeyError("put")
            super()._put(item)

        def _get(self):
            self.n += 1
            if self.n % 3 == 0:
                raise KeyError("get")
            return super()._get()
    q = Failing(3)
    kept = 0
    for round_ in range(200):
        try:
            q.put(items[round_ % 50], timeout=0.0)
        except (KeyError, sf.Full):
            pass
        if round_ % 2:
            try:
                q.get(timeout=0.0)
            except (KeyError, sf.Empty):
                pass
    kept = q.qsize()
    assert 0 < kept <= 3 and q._items.value == kept and q._slots.value == 3 - kept
    del q
    gc.collect()
    assert [sys.getrefcount(x) for x in items] == before

    # a queue dropped with items in it frees them, and only then
    q = sf.Queue()
    held = Item()
    ref = weakref.ref(held)
    q.put(held)
    del held
    gc.collect()
    assert ref() is not None
    assert q.get() is ref()
    q.put(Item())
    ref2 = weakref.ref(q.queue[0])
    del q
    gc.collect()
    assert ref() is None and ref2() is None


def test_a_queue_in_a_cycle_is_collected():
    for cls in QUEUES + [sf.SimpleQueue]:
        q = cls()
        q.put(q if cls is not sf.PriorityQueue else (0, q))
        if cls is not sf.SimpleQueue:
            q.async_q  # the view refers back to the queue
        ref = weakref.ref(q)
        del q
        gc.collect()
        assert ref() is None, cls


def test_no_memory_growth_with_repeated_timeouts_and_cancels():
    async def cycle(q, n):
        for _ in range(n):
            try:
                async with timeout(0):
                    await q.async_get()
            except TimeoutError:
                pass
            await q.async_put(Item())
            q.task_done()
            await q.async_get()

    async def main():
        q = sf.Queue(1)
        await cycle(q, 200)  # warm up caches
        gc.collect()
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            await cycle(q, 2000)
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - base
        finally:
            tracemalloc.stop()
        return grown
    assert run_in_loop(main()) < 64 * 1024


# --- one thread: the same answers as queue's own --------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

OPS = st.lists(st.one_of(
    st.tuples(st.just("put"), st.integers(0, 9)),
    st.tuples(st.just("get")),
    st.tuples(st.just("done")),
    st.tuples(st.just("maxsize"), st.integers(-1, 6)),
), max_size=60)


@settings(max_examples=150, deadline=None, database=None)  # writes no .hypothesis/
@given(kind=st.sampled_from(["Queue", "LifoQueue", "PriorityQueue"]),
       maxsize=st.integers(-1, 5), ops=OPS)
def test_same_answers_as_queue(kind, maxsize, ops):
    """Non-blocking operations and changes of maxsize, on ours and on
    queue's: the same items, exceptions and sizes at every step."""
    ours, theirs = getattr(sf, kind)(maxsize), getattr(queue, kind)(maxsize)

    def run(q, op):
        try:
            if op[0] == "put":
                return q.put_nowait(op[1])
            if op[0] == "get":
                return q.get_nowait()
            if op[0] == "done":
                return q.task_done()
            q.maxsize = op[1]
        except (queue.Empty, queue.Full, ValueError) as e:
            return type(e)

    for op in ops:
        assert run(ours, op) == run(theirs, op), op
        assert (ours.qsize(), ours.full(), ours.empty(), ours.unfinished_tasks) == \
            (theirs.qsize(), theirs.full(), theirs.empty(), theirs.unfinished_tasks)
