"""RLock owned by tasks, and Condition waited on by tasks beside threads:
ownership, exclusion, notify between threads and tasks, time-outs, and
cancellation that never leaves the lock unheld or a notify lost; under
every library (the `lib` fixture: asyncio, uvloop, trio, anyio on asyncio
and on trio).  The tests named asyncio_only close a waiting coroutine
without its loop, with asyncio's loop API."""
import asyncio
import gc
import threading
import time

import pytest

import squarefree
from libs import joined


def run(lib, fn):
    """fn() under lib, on a thread of its own: a hang fails the test."""
    return joined(*lib.in_thread(fn), timeout=20)


# --- RLock --------------------------------------------------------------------------

def test_rlock_task_reenters_and_other_task_waits(lib):
    lock = squarefree.RLock()
    order = []

    async def holder(entered):
        async with lock:
            async with lock:  # the same task: one more level
                assert lock.acquire()  # a blocking call from the owning task reenters too
                assert lock._recursion_count() == 3
                entered.set()
                await lib.sleep(0.05)
                order.append("holder")
                lock.release()
        order.append("holder out")

    async def other(entered):
        await entered.wait()
        assert not lock._is_owned()  # another task of the same thread does not own it
        with pytest.raises(RuntimeError):
            lock.release()
        assert await lock.async_acquire(timeout=0.01) is False
        async with lock:
            order.append("other")

    async def main():
        entered = lib.event()
        await lib.gather(lambda: holder(entered), lambda: other(entered))

    run(lib, main)
    assert order == ["holder", "holder out", "other"]
    assert not lock._is_owned() and "unlocked" in repr(lock)


def test_rlock_threads_and_tasks_exclude_each_other(lib):
    lock = squarefree.RLock()
    inside = [0]
    total = [0]

    def bump():
        inside[0] += 1
        assert inside[0] == 1
        total[0] += 1
        inside[0] -= 1

    def thread_worker():
        for _ in range(300):
            with lock:
                with lock:
                    bump()

    async def task_worker():
        for _ in range(300):
            async with lock:
                async with lock:
                    bump()
                    await lib.sleep(0)
                    bump()

    async def main():
        await lib.gather(*[task_worker] * 3)

    threads = [threading.Thread(target=thread_worker) for _ in range(3)]
    for t in threads:
        t.start()
    run(lib, main)
    for t in threads:
        t.join()
    assert total[0] == 3 * 300 + 3 * 300 * 2


def test_rlock_cancelled_task_takes_nothing(lib):
    lock = squarefree.RLock()

    async def main():
        lock.acquire()  # the main task holds it
        got = 0
        async with lib.group() as g:
            waiters = [g.spawn(lock.async_acquire) for _ in range(20)]
            await lib.sleep(0.01)
            for w in waiters[::2]:
                w.cancel()
            lock.release()
            while waiters:  # in the order they end (the lock's, which need not be theirs)
                await lib.sleep(0.001)
                for w in [w for w in waiters if w.done()]:
                    waiters.remove(w)
                    out = await w.outcome()
                    if out.state == "cancelled":
                        continue
                    assert out.unwrap() is True
                    got += 1
                    # the owner is the task that awaited: here that task is w, which is
                    # done, so this (main) task does not own it; release it as its owner
                    # would
                    assert not lock._is_owned()
                    lock._release_save()  # every level, whoever holds it
        return got

    assert run(lib, main) == 10
    assert lock.acquire(False)
    lock.release()


# --- Condition ------------------------------------------------------------------------

@pytest.mark.parametrize("locktype", [squarefree.Lock, squarefree.RLock])
def test_tasks_and_threads_notify_each_other(locktype, lib):
    cond = squarefree.Condition(locktype())
    items = []
    got = []

    def thread_consumer():
        with cond:
            while not items:
                cond.wait()
            got.append(("thread", items.pop()))

    async def task_consumer():
        async with cond:
            while not items:
                await cond.async_wait()
            got.append(("task", items.pop()))

    async def task_producer(n):
        for i in range(n):
            await lib.sleep(0.005)
            async with cond:
                items.append(i)
                cond.notify()

    threads = [threading.Thread(target=thread_consumer) for _ in range(4)]
    for t in threads:
        t.start()

    async def main():
        await lib.gather(*[task_consumer] * 4, lambda: task_producer(8))

    run(lib, main)
    for t in threads:
        t.join(10)
    assert sorted(i for _, i in got) == list(range(8))
    assert {k for k, _ in got} == {"thread", "task"} or len(got) == 8


def test_notify_all_reaches_threads_and_tasks_of_two_loops(lib):
    cond = squarefree.Condition()
    state = {"go": False}
    woke = []
    ready = threading.Semaphore(0)

    def thread_waiter():
        with cond:
            ready.release()
            cond.wait_for(lambda: state["go"], 10)
            woke.append("thread")

    async def task_waiter(tag):
        async with cond:
            ready.release()
            assert await cond.async_wait_for(lambda: state["go"], 10)
            woke.append(tag)

    def loop_thread(tag):
        async def main():
            await lib.gather(*[lambda: task_waiter(tag)] * 5)
        lib.run(main)

    threads = [threading.Thread(target=thread_waiter) for _ in range(5)]
    threads += [threading.Thread(target=loop_thread, args=(t,)) for t in ("loop1", "loop2")]
    for t in threads:
        t.start()
    for _ in range(15):
        assert ready.acquire(timeout=10)
    with cond:
        state["go"] = True
        cond.notify_all()
    for t in threads:
        t.join(10)
    assert sorted(woke) == ["loop1"] * 5 + ["loop2"] * 5 + ["thread"] * 5


def test_async_wait_times_out_holding_the_lock(lib):
    cond = squarefree.Condition(squarefree.RLock())

    async def main():
        async with cond:
            async with cond:  # two levels, both restored after the wait
                t0 = time.monotonic()
                assert await cond.async_wait(0.05) is False
                assert time.monotonic() - t0 >= 0.04
                assert cond._is_owned() and cond._lock._recursion_count() == 2
                assert await cond.async_wait(-1) is False  # passed already, as threading's
        assert not cond._is_owned()

    run(lib, main)


def test_cancelled_wait_takes_the_lock_back_without_blocking_its_loop(lib):
    cond = squarefree.Condition(squarefree.Lock())
    events = []

    async def waiter():
        async with cond:
            try:
                await cond.async_wait()
            except lib.cancelled_exc():
                # the lock is held again before the cancellation goes on
                events.append(("cancelled, lock held", cond._lock.locked()))
                raise

    async def main():
        async with lib.group() as g:
            w = g.spawn(waiter)
            await lib.sleep(0.01)
            async with cond:  # this task holds the lock while w is cancelled
                w.cancel()
                await lib.sleep(0.05)  # w must wait for the lock without blocking the loop
                events.append("holder releases")
            assert (await w.outcome()).state == "cancelled"
        assert not cond._lock.locked()

    run(lib, main)
    assert events == ["holder releases", ("cancelled, lock held", True)]


def test_notify_reaching_a_cancelled_task_goes_on(lib):
    for _ in range(20):  # the notified waiter is the first sleeper: cancel it each time
        cond = squarefree.Condition()

        async def main():
            async with lib.group() as g:
                w1 = g.spawn(waiter)
                await lib.sleep(0.005)
                w2 = g.spawn(waiter)
                await lib.sleep(0.005)
                async with cond:
                    cond.notify(1)
                    w1.cancel()
                assert (await w1.outcome()).state == "cancelled"
                return await w2.result()  # (within 10 s: its wait's timeout)

        async def waiter():
            async with cond:
                return await cond.async_wait(10)

        assert run(lib, main) is True


def test_cancellation_at_random_points_loses_no_notify(lib):
    cond = squarefree.Condition()
    items = []
    consumed = []

    async def consumer():
        while True:
            async with cond:
                while not items:
                    await cond.async_wait()
                x = items.pop(0)
                if x is None:
                    return
                consumed.append(x)

    async def main():
        import random
        rnd = random.Random(7)
        async with lib.group() as g:
            consumers = [g.spawn(consumer) for _ in range(6)]
            for i in range(300):
                async with cond:
                    items.append(i)
                    cond.notify()
                if i % 10 == 0:
                    victim = consumers[rnd.randrange(len(consumers))]
                    victim.cancel()
                    assert (await victim.outcome()).state in ("ok", "cancelled")
                    consumers.remove(victim)
                    consumers.append(g.spawn(consumer))
                await lib.sleep(0)
            async with cond:
                items.extend([None] * len(consumers))
                cond.notify_all()
        for c in consumers:
            await c.result()

    run(lib, main)
    assert sorted(consumed) == sorted(set(consumed))  # none twice
    assert len(consumed) == 300  # none lost (a cancelled consumer never held an item)


def test_async_wait_misuse_changes_nothing(lib):
    async def main():
        cond = squarefree.Condition()
        with pytest.raises(RuntimeError):
            await cond.async_wait(0.01)  # not held
        foreign = squarefree.Condition(threading.Lock())
        with foreign:
            with pytest.raises(TypeError):
                await foreign.async_wait(0.01)
            assert foreign._is_owned()
        with pytest.raises(TypeError):
            async with foreign:
                pass
        assert repr(cond).endswith(", 0)>")

    run(lib, main)


def test_no_op_is_left_after_cancelled_waits(lib):
    cond = squarefree.Condition()

    async def main():
        for _ in range(50):
            async def waiter():
                async with cond:
                    await cond.async_wait()
            async with lib.group() as g:
                w = g.spawn(waiter)
                await lib.sleep(0)
                await lib.sleep(0)
                w.cancel()
                assert (await w.outcome()).state == "cancelled"

    run(lib, main)
    gc.collect()
    assert not [o for o in gc.get_objects() if type(o).__name__ == "_LoopOp"]
    assert repr(cond).endswith(", 0)>")


# --- a waiting coroutine closed without its loop ------------------------------------------

def _waiter_and_holder(cond):
    """A task waiting in async_wait, and another task of the same loop
    holding the lock and suspended; the loop is returned stopped."""
    async def waiter():
        async with cond:
            await cond.async_wait()

    async def holder(entered):
        async with cond:
            entered.set_result(None)
            await asyncio.sleep(3600)

    loop = asyncio.new_event_loop()
    ta = loop.create_task(waiter())
    loop.run_until_complete(asyncio.sleep(0.02))
    entered = loop.create_future()  # of this loop (an asyncio.Event binds at creation before 3.10)
    tb = loop.create_task(holder(entered))
    loop.run_until_complete(entered)
    return loop, ta, tb


def test_asyncio_only_collected_waiter_neither_hangs_nor_releases_the_holders_lock():
    # (Over an RLock, the collected holder could not release it either: a task's
    # coroutine finalised outside its loop is no longer the running task that owns it.)
    cond = squarefree.Condition(squarefree.Lock())
    loop, ta, tb = _waiter_and_holder(cond)
    loop.close()
    del loop, ta, tb
    unraisable = []
    import sys
    old, sys.unraisablehook = sys.unraisablehook, unraisable.append
    try:
        gc.collect()  # closes both coroutines: the waiter's first; it must not wait
    finally:
        sys.unraisablehook = old
    assert not [u for u in unraisable if isinstance(u.exc_value, RuntimeError)], unraisable
    assert not cond._lock.locked()


def test_asyncio_only_closed_while_taking_the_lock_back_keeps_exclusion():
    cond = squarefree.Condition(squarefree.Lock())
    loop, ta, tb = _waiter_and_holder(cond)
    ta.cancel()  # the waiter now waits to take the lock back, which the holder has
    loop.run_until_complete(asyncio.sleep(0.02))
    ta.get_coro().close()  # ... and is closed meanwhile
    assert cond._lock.locked()  # still the holder's: the closed waiter released nothing
    tb.cancel()
    loop.run_until_complete(asyncio.sleep(0.02))
    assert tb.cancelled()  # the holder's own release worked
    loop.run_until_complete(asyncio.sleep(0.02))  # the orphaned wait ends, and lets go
    assert cond._lock.acquire(timeout=2)
    cond._lock.release()
    loop.close()


def test_init_twice_is_refused():
    """A second __init__ would reset what sleepers use (freeing it, for a
    Condition's lock or a Queue's semaphores): refused, and nothing changes."""
    sf = squarefree
    for obj, args in [(sf.Lock(), ()), (sf.RLock(), ()), (sf.Condition(), ()),
                      (sf.Queue(), ()), (sf.Event(), ()), (sf.Latch(1), (1,)),
                      (sf.CountdownEvent(1), (1,)), (sf.Semaphore(0), (0,)),
                      (sf.BoundedSemaphore(1), (1,)), (sf.BinarySemaphore(0), (0,)),
                      (sf.Once(), ()), (sf.Barrier(2), (2,))]:
        with pytest.raises(RuntimeError):
            obj.__init__(*args)
    ev = sf.Event()
    ev.set()
    with pytest.raises(RuntimeError):
        ev.__init__()
    assert ev.is_set()
    with pytest.raises(TypeError):  # a first __init__ that fails may be retried
        sf.Semaphore.__new__(sf.Semaphore).__init__("x")
