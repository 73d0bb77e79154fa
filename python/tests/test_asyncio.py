"""Tasks on squarefree's objects, beside threads, under every library the
package serves (the `lib` fixture: asyncio, uvloop, trio, anyio on asyncio
and on trio): every async form completes at once or when a thread (or
another loop's task) releases; time-outs; two event loops and plain
threads on one Lock (mutual exclusion checked), one Semaphore (permits
conserved), one Event (everyone woken); cancellation racing releases takes
nothing.  The tests named asyncio_only use asyncio's own loop API on
purpose (a coroutine closed with its loop leaves no kernel wait behind):
they run on asyncio's loop and uvloop's.  Every test runs on both loop
backends (io_uring, where the kernel has it, and the fallback)."""
import asyncio
import gc
import random
import threading
import time

import pytest

import squarefree as sf
from conftest import require
from libs import joined, later


@pytest.fixture(params=["asyncio", "uvloop"])
def new_loop(request):
    """An asyncio event loop factory: asyncio's own, or uvloop's."""
    if request.param == "uvloop":
        require("uvloop")
        import uvloop
        return uvloop.new_event_loop
    return asyncio.new_event_loop


# --- each async form ------------------------------------------------------------------

def test_at_once_and_timeouts(backend, lib):
    async def main():
        lock, sem, ev = sf.Lock(), sf.Semaphore(1), sf.Event()
        la, cd, b = sf.Latch(0), sf.CountdownEvent(0), sf.Barrier(1)
        assert await lock.async_acquire() is True and lock.locked()
        assert await lock.async_acquire(timeout=0.02) is False
        lock.release()
        async with lock:
            assert lock.locked()
        assert not lock.locked()
        assert await sem.async_acquire() is True and sem.value == 0
        assert await sem.async_acquire(timeout=0.02) is False
        sem.release()
        async with sem:
            assert sem.value == 0
        assert sem.value == 1
        assert await ev.async_wait(0.02) is False
        ev.set()
        assert await ev.async_wait() is True
        assert await la.async_wait() is True
        assert await cd.async_wait() is True
        assert await b.async_wait() == 0
        cd.up()
        assert await cd.async_wait(0.02) is False
        ev.clear()
        assert await ev.async_wait(-1) is False  # a timeout that has passed
        with pytest.raises(ValueError):
            await ev.async_wait(float("nan"))
        # A wait that need not wait still checks its timeout (it ends before the loop is
        # looked up), and takes nothing when the timeout is bad.
        ev.set()
        for bad, exc in [(float("nan"), ValueError), ("1", TypeError)]:
            with pytest.raises(exc):
                await ev.async_wait(bad)
            with pytest.raises(exc):
                await lock.async_acquire(bad)
            assert not lock.locked()
            with pytest.raises(exc):
                await sem.async_acquire(bad)
            assert sem.value == 1
        return True

    assert lib.run(main)


def test_woken_by_threads(backend, lib):
    async def main():
        lock, sem, ev = sf.Lock(), sf.Semaphore(0), sf.Event()
        la, cd = sf.Latch(1), sf.CountdownEvent(1)
        lock.acquire()
        timers = [later(0.02, lock.release), later(0.02, sem.release), later(0.02, ev.set),
                  later(0.02, la.count_down), later(0.02, cd.down)]
        got = await lib.gather(lock.async_acquire, sem.async_acquire, ev.async_wait,
                               la.async_wait, cd.async_wait)
        for t in timers:
            t.join()
        assert got == [True] * 5
        assert lock.locked() and sem.value == 0  # the lock and the permit reached the tasks
        lock.release()
        return True

    assert lib.run(main)


def test_barrier_threads_and_tasks(backend, lib):
    """Two threads and two tasks of one loop are the parties of each phase;
    the action runs once per phase, on whichever arrives last."""
    actions = []
    b = sf.Barrier(4, action=lambda: actions.append(1))
    indices = []
    lock = threading.Lock()

    def party():
        for _ in range(20):
            i = b.wait(10)
            with lock:
                indices.append(i)

    async def tasks():
        async def one():
            for _ in range(20):
                i = await b.async_wait(10)
                with lock:
                    indices.append(i)
        await lib.gather(one, one)

    ts = [threading.Thread(target=party) for _ in range(2)]
    for t in ts:
        t.start()
    joined(*lib.in_thread(tasks))
    for t in ts:
        t.join(10)
    assert len(actions) == 20
    assert sorted(indices) == sorted(list(range(4)) * 20)


def test_barrier_action_raises_in_a_task(backend, lib):
    class Boom(Exception):
        pass

    def action():
        raise Boom()

    async def main():
        b = sf.Barrier(2, action=action)
        t = threading.Thread(target=lambda: pytest.raises(sf.BrokenBarrierError, b.wait, 10))
        t.start()
        while b.n_waiting < 1:
            await lib.sleep(0.001)
        with pytest.raises(Boom):
            await b.async_wait(10)  # arrives last: runs the action here
        t.join(10)
        assert b.broken
        with pytest.raises(sf.BrokenBarrierError):
            await b.async_wait()
        return True

    assert lib.run(main)


def test_barrier_reset_with_a_waiting_task(backend, lib):
    async def main():
        b = sf.Barrier(2)
        async with lib.group() as g:
            task = g.spawn(b.async_wait, 10)
            while b.n_waiting < 1:
                await lib.sleep(0.001)
            b.reset()  # from the task's own loop: dispatches it out of the barrier
            with pytest.raises(sf.BrokenBarrierError):
                await task.result()
        assert not b.broken
        t = threading.Thread(target=b.wait, args=(10,))
        t.start()
        assert await b.async_wait(10) in (0, 1)
        t.join(10)
        return True

    assert lib.run(main)


def test_latch_abort_reaches_tasks(backend, lib):
    async def main():
        la = sf.Latch(1)
        t = later(0.02, la.abort)
        with pytest.raises(sf.BrokenLatchError):
            await la.async_wait(10)
        t.join()
        return True

    assert lib.run(main)


# --- threads and two event loops on one object -------------------------------------------

def test_lock_mutual_exclusion_threads_and_two_loops(backend, lib):
    lock = sf.Lock()
    state = {"inside": 0, "count": 0, "bad": 0}
    rounds = 300

    def critical():
        state["inside"] += 1
        if state["inside"] != 1:
            state["bad"] += 1
        n = state["count"]
        time.sleep(0)  # let others run while we hold it
        state["count"] = n + 1
        state["inside"] -= 1

    def thread_main():
        for _ in range(rounds):
            with lock:
                critical()

    async def loop_main():
        async def task():
            for _ in range(rounds):
                async with lock:
                    critical()
                    await lib.sleep(0)  # a task holds it across a switch
        await lib.gather(*[task] * 4)
        return True

    loops = [lib.in_thread(loop_main) for _ in range(2)]
    ts = [threading.Thread(target=thread_main) for _ in range(3)]
    for t in ts:
        t.start()
    for t, out in loops:
        assert joined(t, out)
    for t in ts:
        t.join(30)
    assert state["bad"] == 0
    assert state["count"] == rounds * (3 + 2 * 4)
    assert not lock.locked()


def test_semaphore_permits_conserved_with_cancellation(backend, lib):
    """Threads and tasks of two loops take and give back permits; tasks are
    cancelled (by a time-out and a cancel from another task: asyncio.timeout
    and task.cancel, or cancel scopes) at random moments, racing
    the releases.  At the end every permit is back: none lost, none made."""
    permits = 3
    sem = sf.Semaphore(permits)
    state = {"held": 0, "max": 0}
    guard = threading.Lock()

    def take():
        with guard:
            state["held"] += 1
            state["max"] = max(state["max"], state["held"])

    def give():
        with guard:
            state["held"] -= 1

    def thread_main(seed):
        rnd = random.Random(seed)
        for _ in range(200):
            if sem.acquire(timeout=rnd.choice([0.0005, 0.002, 1])):
                take()
                time.sleep(rnd.choice([0, 0, 0.0002]))
                give()
                sem.release()

    async def loop_main(seed):
        rnd = random.Random(seed)

        async def user():
            for _ in range(150):
                async with lib.move_on_after(rnd.choice([0.0003, 0.001, 0.01])):
                    async with sem:
                        take()
                        try:  # a cancel may land here too
                            await lib.sleep(rnd.choice([0, 0, 0.0002]))
                        finally:
                            give()

        async def canceller(tasks):
            while not all(t.done() for t in tasks):
                await lib.sleep(rnd.choice([0.0002, 0.001]))
                victim = rnd.choice(tasks)
                if not victim.done():
                    victim.cancel()

        async with lib.group() as g:
            tasks = [g.spawn(user) for _ in range(4)]
            await canceller(tasks)
        for t in tasks:
            assert (await t.outcome()).state in ("ok", "cancelled")
        return True

    loops = [lib.in_thread(loop_main, s) for s in (1, 2)]
    ts = [threading.Thread(target=thread_main, args=(s,)) for s in range(3)]
    for t in ts:
        t.start()
    for t, out in loops:
        assert joined(t, out, 60)
    for t in ts:
        t.join(60)
    assert state["held"] == 0
    assert state["max"] <= permits  # never more holders than permits
    assert sem.value == permits  # none lost, none made


def test_event_wakes_threads_and_tasks_of_two_loops(backend, lib):
    ev = sf.Event()
    n_tasks, n_threads = 300, 50
    ready = sf.CountdownEvent(2 * n_tasks + n_threads)
    woke = []

    async def loop_main():
        async def task():
            ready.down()
            return await ev.async_wait(20)
        return await lib.gather(*[task] * n_tasks)

    def thread_main():
        ready.down()
        woke.append(ev.wait(20))

    loops = [lib.in_thread(loop_main) for _ in range(2)]
    ts = [threading.Thread(target=thread_main) for _ in range(n_threads)]
    for t in ts:
        t.start()
    assert ready.wait(20)
    time.sleep(0.05)  # let them go to sleep
    ev.set()  # one call wakes all of them
    for t, out in loops:
        assert joined(t, out) == [True] * n_tasks
    for t in ts:
        t.join(20)
    assert woke == [True] * n_threads


def test_cancel_racing_release_takes_nothing(backend, lib):
    """A task whose wait is cancelled just as a thread releases: either the
    task got the permit (and returns it) or the permit stays; never lost."""
    async def main():
        sem = sf.Semaphore(0)
        got = 0
        for i in range(300):
            async with lib.group() as g:
                task = g.spawn(sem.async_acquire)
                await lib.sleep(0)  # the task is waiting now (under asyncio; trio: may be)
                rel = threading.Thread(target=sem.release)
                rel.start()
                if i % 3:
                    await lib.sleep(0)
                task.cancel()
                out = await task.outcome()
                assert out.state in ("ok", "cancelled"), out
                if out.state == "ok" and out.value:
                    got += 1
            rel.join()
            # Whatever happened, the one permit exists exactly once.
            assert sem.value + got == 1, (i, sem.value, got)
            if got:
                sem.release()
                got = 0
            assert await sem.async_acquire(timeout=1) is True
        return True

    assert lib.run(main)


def test_asyncio_only_closed_coroutine_leaves_no_wait_behind(backend, new_loop):
    """(asyncio's loop API: loop.close.)  A task still waiting when its loop
    is closed: its coroutine is closed when the loop and the task are
    collected, and must finish its wait there; otherwise a kernel wait left
    queued on the word would swallow the next wake-up meant for a thread."""
    sem = sf.Semaphore(0)
    loop = new_loop()
    task = loop.create_task(sem.async_acquire())
    loop.run_until_complete(asyncio.sleep(0.01))  # the task now waits
    assert not task.done()
    loop.close()
    del task, loop  # the loop, its tasks and their waits are garbage now
    gc.collect()  # the coroutine is closed here
    got = []
    t = threading.Thread(target=lambda: got.append(sem.acquire(timeout=3)))
    t.start()
    time.sleep(0.05)  # the thread sleeps on the word
    begin = time.monotonic()
    sem.release()
    t.join(10)
    # The release's wake-up reached the thread (not its time-out, after
    # which it would find the permit anyway).
    assert got == [True] and time.monotonic() - begin < 1.5


def test_many_tasks_one_latch(backend, lib):
    """1,000 tasks across two loops and 200 threads on one Latch."""
    la = sf.Latch(1)

    async def loop_main():
        return await lib.gather(*[lambda: la.async_wait(20)] * 500)

    loops = [lib.in_thread(loop_main) for _ in range(2)]
    woke = []
    ts = [threading.Thread(target=lambda: woke.append(la.wait(20))) for _ in range(200)]
    for t in ts:
        t.start()
    time.sleep(0.1)
    la.count_down()
    for t, out in loops:
        assert joined(t, out) == [True] * 500
    for t in ts:
        t.join(20)
    assert woke == [True] * 200


def test_asyncio_only_closed_coroutine_passes_on_a_wake_it_got(backend, new_loop):
    """(asyncio's loop API: loop.close.)  As above, but the release comes
    while the loop no longer runs: its wake-up reached the task's wait (queued first), not the thread asleep
    behind it.  Closing the coroutine must finish that wait, which takes
    the permit and gives it back, waking the thread."""
    sem = sf.Semaphore(0)
    loop = new_loop()
    task = loop.create_task(sem.async_acquire())
    loop.run_until_complete(asyncio.sleep(0.01))  # the task waits, first in the queue
    got = []
    t = threading.Thread(target=lambda: got.append(sem.acquire(timeout=3)))
    t.start()
    time.sleep(0.05)  # the thread sleeps behind it
    sem.release()  # one wake-up: to the task's wait, which no loop dispatches
    time.sleep(0.05)
    loop.close()
    del task, loop  # the loop, its tasks and their waits are garbage now
    begin = time.monotonic()
    gc.collect()  # the coroutine is closed here
    t.join(10)
    # Woken by the permit, not by its time-out (after which it would find it).
    assert got == [True] and time.monotonic() - begin < 1.5
    assert sem.value == 0
