"""Every kind of task wait under every library (the `lib` fixture: asyncio,
uvloop, trio, anyio on asyncio and on trio), cancelled while a thread
releases at the same moment: what reached the cancelled task is given back
and nothing is made (permits, items, tokens and the lock counted after
each round).  trio's rules: every async call is a checkpoint, even one that
need not wait (a cancelled scope raises Cancelled and takes nothing).  One
wake-all (Event.set, Latch.count_down) releases threads, asyncio tasks and
trio tasks together."""
import random
import threading
import time

import pytest

import squarefree as sf
from conftest import require
from libs import Lib, joined


class Case:
    """One kind of wait: make() the object, blocked so the task waits;
    wait(obj) as the task; release(obj) from a thread; check(obj, out)
    after the round (out: the task's Outcome), giving back what the task
    got."""


class LockCase(Case):
    def make(self):
        lock = sf.Lock()
        lock.acquire()
        return lock

    async def wait(self, lock):
        return await lock.async_acquire()

    def release(self, lock):
        lock.release()

    def check(self, lock, out):
        if out.state == "ok":
            assert out.value is True and lock.locked()
            lock.release()
        assert not lock.locked()  # the lock given back, or never taken


class RLockCase(LockCase):
    def make(self):
        lock = sf.RLock()
        lock.acquire()  # by the task's loop thread: a thread releases it below
        return lock

    def release(self, lock):
        lock._release_save()  # every level, from another thread

    def check(self, lock, out):
        if out.state == "ok":
            assert out.value is True
            lock._release_save()  # the task that owns it is over
        assert lock.acquire(blocking=False)
        lock.release()


class SemCase(Case):
    def make(self):
        return sf.Semaphore(0)

    async def wait(self, sem):
        return await sem.async_acquire()

    def release(self, sem):
        sem.release()

    def check(self, sem, out):
        got = out.state == "ok" and out.value
        assert sem.value + got == 1  # the one permit, exactly once


class EventCase(Case):
    def make(self):
        return sf.Event()

    async def wait(self, ev):
        return await ev.async_wait()

    def release(self, ev):
        ev.set()

    def check(self, ev, out):
        assert out.state == "cancelled" or out.value is True
        assert ev.is_set()


class LatchCase(EventCase):
    def make(self):
        return sf.Latch(1)

    async def wait(self, la):
        return await la.async_wait()

    def release(self, la):
        la.count_down()

    def check(self, la, out):
        assert out.state == "cancelled" or out.value is True
        assert la.wait(0)


class CountdownCase(LatchCase):
    def make(self):
        return sf.CountdownEvent(1)

    def release(self, cd):
        cd.down()

    def check(self, cd, out):
        assert out.state == "cancelled" or out.value is True
        assert cd.value == 0


class BarrierCase(Case):
    def make(self):
        b = sf.Barrier(2)
        b.thread_result = None
        return b

    async def wait(self, b):
        return await b.async_wait(10)

    def release(self, b):
        try:
            b.thread_result = b.wait(10)
        except sf.BrokenBarrierError:
            b.thread_result = "broken"

    def check(self, b, out):
        if out.state == "ok":  # the phase passed with both: the thread passed too
            assert out.value in (0, 1) and b.thread_result in (0, 1)
            assert out.value != b.thread_result
        else:  # cancelled: its arrival broke the barrier, unless the phase had passed
            assert out.state == "cancelled"
            assert b.thread_result in (0, 1, "broken")
        assert b.n_waiting == 0


class CondCase(Case):
    def make(self):
        return sf.Condition(sf.Lock())

    async def wait(self, cond):
        async with cond:
            await cond.async_wait()
            assert cond._lock.locked()
            return True

    def release(self, cond):
        with cond:
            cond.notify()

    def check(self, cond, out):
        assert out.state == "cancelled" or out.value is True
        assert not cond._lock.locked()  # the cancelled wait took it back, then let go
        assert repr(cond).endswith(", 0)>")  # nobody counted as waiting


class QueueGetCase(Case):
    def make(self):
        return sf.Queue()

    async def wait(self, q):
        return await q.async_get()

    def release(self, q):
        q.put("item")

    def check(self, q, out):
        got = 1 if out.state == "ok" else 0
        if got:
            assert out.value == "item"
        assert q.qsize() + got == 1  # the item, exactly once
        if q.qsize():
            assert q.get_nowait() == "item"


class QueuePutCase(Case):
    def make(self):
        q = sf.Queue(1)
        q.put("first")
        return q

    async def wait(self, q):
        await q.async_put("second")
        return True

    def release(self, q):
        assert q.get(timeout=10) == "first"

    def check(self, q, out):
        put = out.state == "ok"
        assert q.qsize() == put  # the slot, used by the put or free again
        if put:
            assert q.get_nowait() == "second"
        q.put_nowait("x")  # one slot, as before
        pytest.raises(sf.Full, q.put_nowait, "y")


class LimiterCase(Case):
    def make(self):
        lim = sf.CapacityLimiter(1)
        lim.acquire_on_behalf_of("holder")
        return lim

    async def wait(self, lim):
        return await lim.async_acquire_on_behalf_of("task")

    def release(self, lim):
        lim.release_on_behalf_of("holder")

    def check(self, lim, out):
        got = out.state == "ok" and out.value
        assert lim.borrowers == (("task",) if got else ())
        assert lim.borrowed_tokens + lim.available_tokens == 1
        if got:
            lim.release_on_behalf_of("task")
        assert lim.acquire_on_behalf_of_nowait("next") is None
        lim.release_on_behalf_of("next")


CASES = {"lock": LockCase, "rlock": RLockCase, "sem": SemCase, "event": EventCase,
         "latch": LatchCase, "countdown": CountdownCase, "barrier": BarrierCase,
         "cond": CondCase, "queue_get": QueueGetCase, "queue_put": QueuePutCase,
         "limiter": LimiterCase}


@pytest.mark.parametrize("kind", list(CASES))
def test_cancel_during_each_wait_with_a_thread_releasing(lib, kind):
    """A task waits; a thread releases and the task is cancelled (a cancel
    scope under trio and anyio, task.cancel() under asyncio) at about the
    same moment, in random order.  Each round, whatever reached the task is
    counted once: the task has it (and gives it back) or it is free."""
    case = CASES[kind]()
    rnd = random.Random(kind)
    outcomes = set()

    async def main():
        for _ in range(40):
            obj = case.make()
            async with lib.group() as g:
                task = g.spawn(case.wait, obj)
                await lib.sleep(0.002)  # the task waits
                rel = threading.Thread(target=case.release, args=(obj,))
                rel.start()
                pause = rnd.choice([None, 0, 0.0002, 0.001])
                if pause is not None:
                    await lib.sleep(pause)
                task.cancel()
                out = await task.outcome()
            rel.join(10)
            assert not rel.is_alive()
            assert out.state in ("ok", "cancelled"), out
            outcomes.add(out.state)
            case.check(obj, out)
        return True

    assert joined(*lib.in_thread(main), timeout=60)
    assert "cancelled" in outcomes  # (the cancel came first at least once)


# --- trio: every call is a checkpoint ----------------------------------------------------

def _free_calls():
    """(name, make, call, taken): make() an object whose wait need not
    wait, call(obj) the async call, taken(obj) whether it took something
    (to check a cancelled call took nothing)."""
    def queue_with_item():
        q = sf.Queue()
        q.put(1)
        return q

    return [
        ("lock", sf.Lock, lambda o: o.async_acquire(), lambda o: o.locked()),
        ("sem", lambda: sf.Semaphore(1), lambda o: o.async_acquire(), lambda o: o.value == 0),
        ("event", lambda: _set(sf.Event()), lambda o: o.async_wait(), lambda o: False),
        ("latch", lambda: sf.Latch(0), lambda o: o.async_wait(), lambda o: False),
        ("countdown", lambda: sf.CountdownEvent(0), lambda o: o.async_wait(), lambda o: False),
        ("barrier", lambda: sf.Barrier(1), lambda o: o.async_wait(), lambda o: False),
        ("rlock", sf.RLock, lambda o: o.async_acquire(), lambda o: o._is_owned()),
        ("cond", sf.Condition, lambda o: o.__aenter__(), lambda o: o._is_owned()),
        ("queue_get", queue_with_item, lambda o: o.async_get(), lambda o: o.qsize() == 0),
        ("queue_put", lambda: sf.Queue(1), lambda o: o.async_put(1), lambda o: o.qsize() == 1),
        ("unbounded_put", sf.Queue, lambda o: o.async_put(1), lambda o: o.qsize() == 1),
        ("simple_put", sf.SimpleQueue, lambda o: o.async_put(1), lambda o: o.qsize() == 1),
        ("limiter", sf.CapacityLimiter, lambda o: o.async_acquire(),
         lambda o: o.borrowed_tokens == 1),
    ]


def _set(ev):
    ev.set()
    return ev


@pytest.mark.parametrize("name,make,call,taken", _free_calls(),
                         ids=[c[0] for c in _free_calls()])
def test_trio_a_wait_that_need_not_wait_is_a_checkpoint(name, make, call, taken):
    """As trio.Lock.acquire: a call on a free object lets other tasks run
    (assert_checkpoints), and in a cancelled scope it raises Cancelled and
    takes nothing."""
    require("trio")
    import trio
    import trio.testing

    async def main():
        obj = make()
        with trio.testing.assert_checkpoints():
            await call(obj)
        obj = make()
        with trio.CancelScope() as scope:
            scope.cancel()
            await call(obj)
        assert scope.cancelled_caught
        assert not taken(obj)
        # An RLock the task holds: taking it again is a checkpoint too.
        r = sf.RLock()
        async with r:
            with trio.testing.assert_checkpoints():
                await r.async_acquire()
            with trio.CancelScope() as scope:
                scope.cancel()
                await r.async_acquire()
            assert r._recursion_count() == 2
            r.release()

    trio.run(main)


def test_trio_cancelled_cond_wait_raises_cancelled_with_the_lock_held():
    """trio's own rule for Condition.wait: a cancelled wait ends holding the
    lock; a notify that reached it goes to the next waiter (a thread)."""
    require("trio")
    import trio
    cond = sf.Condition()
    woke = []

    def thread_waiter():
        with cond:
            woke.append(cond.wait(10))

    async def main():
        async def waiter(task_status=trio.TASK_STATUS_IGNORED):
            async with cond:
                task_status.started()
                try:
                    await cond.async_wait(10)
                except trio.Cancelled:
                    woke.append(("cancelled, lock held", cond._is_owned()))
                    raise

        async with trio.open_nursery() as n:
            await n.start(waiter)  # first in line
            t = threading.Thread(target=thread_waiter)
            t.start()
            while repr(cond).endswith(", 1)>"):
                await trio.sleep(0.001)
            async with cond:
                cond.notify(1)  # reaches the task's wait ...
                n.cancel_scope.cancel()  # ... which is cancelled: passed on to the thread
        t.join(10)

    trio.run(main)
    assert woke == [("cancelled, lock held", True), True]


# --- one wake-all for threads, asyncio tasks and trio tasks -------------------------------

@pytest.mark.parametrize("kind", ["event", "latch"])
def test_one_wake_all_reaches_threads_asyncio_and_trio_tasks(backend, kind):
    obj = sf.Event() if kind == "event" else sf.Latch(1)
    n_tasks, n_threads = 100, 20
    require("uvloop", "trio", "anyio", "sniffio")
    libs = [Lib("asyncio"), Lib("uvloop"), Lib("trio"), Lib("anyio-trio")]
    ready = sf.CountdownEvent(len(libs) * n_tasks + n_threads)
    woke = []

    async def task():
        ready.down()
        return await obj.async_wait(20)

    def thread_main():
        ready.down()
        woke.append(obj.wait(20))

    loops = [lib.in_thread(lambda lib=lib: lib.gather(*[task] * n_tasks)) for lib in libs]
    ts = [threading.Thread(target=thread_main) for _ in range(n_threads)]
    for t in ts:
        t.start()
    assert ready.wait(20)
    time.sleep(0.05)  # let them go to sleep
    obj.set() if kind == "event" else obj.count_down()  # one call wakes all of them
    for t, out in loops:
        assert joined(t, out) == [True] * n_tasks
    for t in ts:
        t.join(20)
    assert woke == [True] * n_threads


def test_library_detection_is_per_call():
    """asyncio and trio in two threads at once, on one lock: each call
    takes the path of the library that runs it."""
    require("trio", "sniffio")
    lock = sf.Lock()
    count = [0]

    async def worker():
        for _ in range(200):
            async with lock:
                n = count[0]
                await Lib(lib_name()).sleep(0)
                count[0] = n + 1

    def lib_name():
        import sniffio
        return sniffio.current_async_library()

    libs = [Lib("asyncio"), Lib("trio")]
    loops = [lib.in_thread(lambda lib=lib: lib.gather(worker, worker)) for lib in libs]
    for t, out in loops:
        joined(t, out)
    assert count[0] == 800
