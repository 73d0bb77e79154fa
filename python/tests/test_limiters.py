"""CapacityLimiter and RCapacityLimiter: anyio's own CapacityLimiter cases
(behaviour, ported to asyncio tasks), the thread forms, borrowers, and
threads with the tasks of two event loops on one limiter: never more
borrowed than total_tokens, no token lost or made, every waiter served,
total_tokens changed while tokens are held and waited for, cancellation at
random points taking nothing; no reference or memory left behind by many
cancelled and timed-out waits.  The tests that take the `lib` fixture run
under every library (asyncio, uvloop, trio, anyio on asyncio and on
trio); test_async_libs.py cancels limiter waits under each of them."""
import asyncio
import gc
import math
import random
import signal
import sys
import threading
import time
import tracemalloc
import weakref

import pytest

import squarefree as sf
from aiocompat import timeout, uncancel
from libs import joined
from test_primitives import Interrupted, interrupt_main_after, usr1_raises  # noqa: F401
from together import Holders, run_together


def run(coro_fn, *args):
    return asyncio.run(coro_fn(*args))


async def blocked():
    """Let every other task of this loop run until it waits (anyio's
    wait_all_tasks_blocked, roughly: a few passes of the loop)."""
    for _ in range(5):
        await asyncio.sleep(0.002)


def check_conserved(lim):
    """Every token is free or borrowed: borrowing what is free succeeds
    exactly available_tokens times, and the next one fails."""
    assert lim.borrowed_tokens == 0 and lim.waiting == 0
    owners = [object() for _ in range(lim.total_tokens)]
    for o in owners:
        assert lim.acquire_on_behalf_of(o, blocking=False)
    assert not lim.acquire_on_behalf_of(object(), blocking=False)
    for o in owners:
        lim.release_on_behalf_of(o)
    assert lim.available_tokens == lim.total_tokens


# --- anyio's cases ---------------------------------------------------------------------

def test_bad_total_tokens():
    with pytest.raises(TypeError, match="total_tokens must be an int or math.inf"):
        sf.CapacityLimiter(1.0)
    with pytest.raises(ValueError, match="total_tokens must be >= 1"):
        sf.CapacityLimiter(0)
    lim = sf.CapacityLimiter(total_tokens=1)  # a keyword, as anyio
    lim.total_tokens = 2
    for bad, exc in (("2", TypeError), (3.0, TypeError), (0, ValueError), (-1, ValueError),
                     (-math.inf, ValueError), (None, TypeError)):
        with pytest.raises(exc):
            lim.total_tokens = bad
    assert lim.total_tokens == 2  # bad input changed nothing
    with pytest.raises(AttributeError):
        del lim.total_tokens
    assert sf.CapacityLimiter().total_tokens == 1
    assert sf.CapacityLimiter(True).total_tokens is True  # an int, as anyio takes it
    assert sf.CapacityLimiter(10**30).available_tokens == 10**30


def test_borrow_and_statistics():
    async def main():
        lim = sf.CapacityLimiter(2)
        assert (lim.total_tokens, lim.available_tokens, lim.borrowed_tokens) == (2, 2, 0)
        assert lim.statistics() == (0, 2, (), 0)
        async with lim:
            assert (lim.total_tokens, lim.available_tokens, lim.borrowed_tokens) == (2, 1, 1)
            assert lim.borrowers == (asyncio.current_task(),)
            lim.total_tokens = 1

            async def waiter():
                async with lim:
                    pass

            waiters = []
            for i in range(1, 3):
                waiters.append(asyncio.ensure_future(waiter()))
                await blocked()
                assert lim.statistics().tasks_waiting == i
        await asyncio.gather(*waiters)
        assert lim.statistics().tasks_waiting == 0
        return True

    assert run(main)


def test_limit():
    async def main():
        lim = sf.CapacityLimiter(1)
        state = {"in": 0}

        async def taskfunc():
            for _ in range(5):
                async with lim:
                    assert state["in"] == 0
                    state["in"] = 1
                    await blocked()
                    state["in"] = 0

        await asyncio.gather(*(taskfunc() for _ in range(3)))
        return lim.borrowed_tokens

    assert run(main) == 0


def test_borrow_twice_and_bad_release():
    async def main():
        lim = sf.CapacityLimiter(1)
        await lim.async_acquire()
        with pytest.raises(RuntimeError,
                           match="this borrower is already holding one of this "
                           "CapacityLimiter's tokens"):
            await lim.async_acquire()
        lim.release()
        with pytest.raises(RuntimeError,
                           match="this borrower isn't holding any of this CapacityLimiter's "
                           "tokens"):
            lim.release()
        return True

    assert run(main)


def test_increase_tokens():
    async def main():
        lim = sf.CapacityLimiter(1)
        event1, event2 = asyncio.Event(), asyncio.Event()

        async def setter():
            await event1.wait()
            async with lim:  # only once total_tokens went up
                event2.set()

        async def waiter():
            async with lim:
                event1.set()
                await event2.wait()

        tasks = [asyncio.ensure_future(setter()), asyncio.ensure_future(waiter())]
        await blocked()
        assert event1.is_set() and not event2.is_set()
        lim.total_tokens = 2
        await asyncio.wait_for(asyncio.gather(*tasks), 5)
        return event2.is_set()

    assert run(main)


def test_increase_tokens_lets_others_acquire():
    async def main():
        lim = sf.CapacityLimiter(1)
        entered = [asyncio.Event() for _ in range(3)]
        go_on = asyncio.Event()

        async def worker(ev):
            async with lim:
                ev.set()
                await go_on.wait()

        tasks = [asyncio.ensure_future(worker(ev)) for ev in entered[:2]]
        await blocked()
        assert sum(ev.is_set() for ev in entered) == 1
        lim.total_tokens = 3
        tasks.append(asyncio.ensure_future(worker(entered[2])))
        await asyncio.wait_for(asyncio.gather(*(ev.wait() for ev in entered)), 5)
        go_on.set()
        await asyncio.gather(*tasks)
        return lim.borrowed_tokens

    assert run(main) == 0


def test_asyncio_deadlock():
    """A task cancelled while it waits does not keep the next one waiting."""
    async def main():
        lim = sf.CapacityLimiter(1)

        async def acquire():
            async with lim:
                await asyncio.sleep(0)

        task1 = asyncio.ensure_future(acquire())
        task2 = asyncio.ensure_future(acquire())
        await asyncio.sleep(0)
        task1.cancel()
        await asyncio.wait_for(task2, 5)
        return lim.borrowed_tokens

    assert run(main) == 0


def test_ordered_queue():
    async def main():
        lim = sf.CapacityLimiter(1)
        results = []
        event = asyncio.Event()

        async def append(x):
            async with lim:
                await event.wait()
                results.append(x)

        tasks = []
        for i in range(3):
            tasks.append(asyncio.ensure_future(append(i)))
            await blocked()
        event.set()
        await asyncio.gather(*tasks)
        return results

    assert run(main) == [0, 1, 2]


@pytest.mark.parametrize("release_first", [False, True])
def test_cancel_during_acquire(backend, release_first, lib):  # noqa: F811
    async def main():
        lim = sf.CapacityLimiter(1)
        acquired = []

        async def task():
            async with lim:
                acquired.append(1)

        await lim.async_acquire()
        async with lib.group() as g:
            t = g.spawn(task)
            for _ in range(5):  # (blocked(), in lib's terms)
                await lib.sleep(0.002)
            t.cancel()
            if release_first:
                lim.release()
                await lib.sleep(0.01)
            else:
                await lib.sleep(0.01)
                lim.release()
            assert (await t.outcome()).state == "cancelled"
        assert not acquired and lim.borrowed_tokens == 0 and lim.borrowers == ()
        check_conserved(lim)
        return True

    assert lib.run(main)


def test_nowait_forms():
    async def main():
        lim = sf.CapacityLimiter(1)
        lim.acquire_nowait()  # the current task
        assert lim.borrowers == (asyncio.current_task(),)
        with pytest.raises(sf.WouldBlock):
            lim.acquire_on_behalf_of_nowait("other")
        with pytest.raises(RuntimeError):
            lim.acquire_nowait()
        lim.release()
        lim.acquire_on_behalf_of_nowait("other")
        with pytest.raises(sf.WouldBlock):
            lim.acquire_nowait()
        lim.release_on_behalf_of("other")
        return True

    assert run(main)


# --- threads and borrowers -------------------------------------------------------------

def test_threads():
    lim = sf.CapacityLimiter(1)
    with lim as got:
        assert got is True and lim.borrowers == (threading.current_thread(),)
        with pytest.raises(RuntimeError):
            lim.acquire()
        assert lim.acquire_on_behalf_of("x", blocking=False) is False
        assert lim.acquire_on_behalf_of("x", timeout=0.01) is False
        with pytest.raises(ValueError):
            lim.acquire_on_behalf_of("x", False, 1)
        assert lim.acquire_on_behalf_of("x", timeout=-1) is False  # passed, as Semaphore's
        with pytest.raises(OverflowError):
            lim.acquire_on_behalf_of("x", timeout=threading.TIMEOUT_MAX * 2)
        errors = []

        def other():  # another thread is another borrower
            try:
                lim.release()
            except RuntimeError as e:
                errors.append(e)
            errors.append(lim.acquire(timeout=5))
            lim.release()

        t = threading.Thread(target=other)
        t.start()
        time.sleep(0.05)
    t.join(10)
    assert isinstance(errors[0], RuntimeError) and errors[1] is True
    assert lim.borrowed_tokens == 0


def test_borrowers_by_identity():
    """Any object may borrow, compared by identity (equal ones are two
    borrowers; unhashable ones work)."""
    lim = sf.CapacityLimiter(3)
    a, b, c = [1], [1], "x" * 3
    lim.acquire_on_behalf_of(a)
    lim.acquire_on_behalf_of(b)
    lim.acquire_on_behalf_of(c)
    assert lim.borrowed_tokens == 3 and lim.available_tokens == 0
    assert {id(x) for x in lim.borrowers} == {id(a), id(b), id(c)}
    with pytest.raises(RuntimeError):
        lim.release_on_behalf_of([1])
    for x in (a, b, c):
        assert lim.count_of(x) == 1
        lim.release_on_behalf_of(x)
        assert lim.count_of(x) == 0
    check_conserved(lim)


def test_reentrant():
    async def task_side(lim):
        async with lim:
            async with lim:
                assert lim.count_of(asyncio.current_task()) == 2
                assert await lim.async_acquire(timeout=0) is True
                assert lim.count_of(asyncio.current_task()) == 3
                lim.release()
        assert lim.count_of(asyncio.current_task()) == 0
        return True

    lim = sf.RCapacityLimiter(1)
    assert isinstance(lim, sf.CapacityLimiter)
    me = threading.current_thread()
    with lim:
        with lim:
            assert lim.count_of(me) == 2 and lim.borrowed_tokens == 1
            assert lim.acquire(blocking=False) is True
            lim.release()
            out = []
            t = threading.Thread(target=lambda: out.append(lim.acquire(timeout=0.05)))
            t.start()
            t.join(10)
            assert out == [False]  # one token, held by this thread
        assert lim.count_of(me) == 1 and lim.borrowed_tokens == 1
    assert lim.borrowed_tokens == 0
    with pytest.raises(RuntimeError):
        lim.release()
    assert run(task_side, lim)
    check_conserved(lim)


def test_total_tokens_while_held():
    """Lowered below what is borrowed: new acquirers wait until enough are
    returned; raised: as many waiters as it frees go in."""
    lim = sf.CapacityLimiter(3)
    holders = [object() for _ in range(3)]
    for h in holders:
        lim.acquire_on_behalf_of(h)
    lim.total_tokens = 1
    assert lim.available_tokens == -2
    lim.release_on_behalf_of(holders[0])
    lim.release_on_behalf_of(holders[1])
    assert not lim.acquire_on_behalf_of("new", blocking=False)
    lim.total_tokens = 2  # pays back one debt: still full
    assert lim.available_tokens == 1 and lim.acquire_on_behalf_of("new", blocking=False)
    assert not lim.acquire_on_behalf_of("newer", blocking=False)
    lim.release_on_behalf_of(holders[2])
    lim.release_on_behalf_of("new")
    lim.total_tokens = math.inf
    assert lim.available_tokens == math.inf
    many = [object() for _ in range(1000)]
    for m in many:
        assert lim.acquire_on_behalf_of(m, blocking=False)
    lim.total_tokens = 10  # from inf: withdraws the free tokens at once
    assert lim.available_tokens == -990
    for m in many:
        lim.release_on_behalf_of(m)
    check_conserved(lim)


def test_raise_wakes_threads_and_tasks(backend, lib):  # noqa: F811
    """total_tokens raised while threads and tasks of two loops wait: all
    of them get in."""
    lim = sf.CapacityLimiter(1)
    lim.acquire_on_behalf_of("gate")
    n_threads, n_tasks = 20, 30
    got = []

    async def loop_main():
        async def one():
            async with lim:
                got.append(1)
                await lib.sleep(0.05)
        await lib.gather(*[one] * n_tasks)
        return True

    def thread_main():
        with lim:
            got.append(1)
            time.sleep(0.05)

    loops = [lib.in_thread(loop_main) for _ in range(2)]
    ts = [threading.Thread(target=thread_main) for _ in range(n_threads)]
    for t in ts:
        t.start()
    deadline = time.monotonic() + 20
    while lim.waiting < n_threads + 2 * n_tasks and time.monotonic() < deadline:
        time.sleep(0.01)
    assert lim.waiting == n_threads + 2 * n_tasks
    assert got == []
    lim.total_tokens = n_threads + 2 * n_tasks + 1  # one release wakes them all
    for t, out in loops:
        assert joined(t, out)
    for t in ts:
        t.join(20)
    assert len(got) == n_threads + 2 * n_tasks
    lim.release_on_behalf_of("gate")
    check_conserved(lim)


# --- threads and two event loops, cancellation, total_tokens changing ---------------------

@pytest.mark.parametrize("reentrant", [False, True])
def test_mixed_stress(backend, reentrant):  # noqa: F811
    """Threads and the tasks of two loops borrow and return tokens, tasks
    are cancelled at random moments (asyncio.timeout, task.cancel), and a
    thread moves total_tokens between 2 and 4 meanwhile.  Never more than 4
    borrowed at once, and at the end every token is back, none made."""
    lim = (sf.RCapacityLimiter if reentrant else sf.CapacityLimiter)(3)
    holders = Holders()
    take, give = holders.take, holders.give
    stop = threading.Event()

    def thread_main(seed):
        rnd = random.Random(seed)
        for _ in range(400):
            if lim.acquire(timeout=rnd.choice([0.0005, 0.002, 1])):
                take()
                if reentrant and rnd.random() < 0.3:
                    assert lim.acquire(blocking=False)  # counted, no token
                    lim.release()
                time.sleep(rnd.choice([0, 0, 0.0002]))
                give()
                lim.release()

    def changer():
        rnd = random.Random(7)
        while not stop.is_set():
            lim.total_tokens = rnd.choice([2, 3, 4])
            time.sleep(0.001)
        lim.total_tokens = 3

    async def loop_main(seed):
        rnd = random.Random(seed)

        async def user():
            me = asyncio.current_task()
            for i in range(300):
                # Each round ends early at a random moment: asyncio.timeout
                # in even rounds, a plain task.cancel() in odd ones.
                delay = rnd.choice([0.0002, 0.001, 0.01])
                kill = asyncio.get_running_loop().call_later(delay, me.cancel) if i % 2 else None
                try:
                    async with timeout(None if kill else delay):
                        async with lim:
                            await holders.hold_a_while(rnd)
                except TimeoutError:
                    pass
                except asyncio.CancelledError:  # our own kill: go on
                    uncancel(me)
                finally:
                    if kill:
                        kill.cancel()

        await asyncio.gather(*(user() for _ in range(4)))
        return True

    ch = threading.Thread(target=changer)
    ch.start()
    try:
        run_together(thread_main, [(s,) for s in range(3)], loop_main, [(1,), (2,)])
    finally:
        stop.set()
    ch.join(10)
    assert holders.held == 0 and holders.served > 0
    assert holders.most <= 4  # never more than the largest total_tokens
    assert lim.borrowers == ()
    check_conserved(lim)


def test_cancel_racing_release(backend):  # noqa: F811
    """A task's wait cancelled just as a thread releases: the task got the
    token (recorded: it releases it) or the token is free; never both,
    never neither."""
    async def main():
        lim = sf.CapacityLimiter(1)
        for i in range(200):
            lim.acquire_on_behalf_of("holder")
            task = asyncio.ensure_future(lim.async_acquire())
            await asyncio.sleep(0)  # the task waits now
            rel = threading.Thread(target=lim.release_on_behalf_of, args=("holder",))
            rel.start()
            if i % 3:
                await asyncio.sleep(0)
            task.cancel()
            try:
                got = await task
            except asyncio.CancelledError:
                got = False
            rel.join()
            assert lim.borrowers == ((task,) if got else ())
            assert lim.borrowed_tokens + lim.available_tokens == 1
            if got:
                lim.release_on_behalf_of(task)
            assert lim.acquire_on_behalf_of_nowait("next") is None
            lim.release_on_behalf_of("next")
        return True

    assert run(main)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach only the main thread")
def test_signal_interrupts_a_thread_wait(usr1_raises):  # noqa: F811
    lim = sf.CapacityLimiter(1)
    lim.acquire_on_behalf_of("holder")
    t = interrupt_main_after(0.05)
    with pytest.raises(Interrupted):
        lim.acquire(timeout=5)
    t.join()
    assert lim.borrowers == ("holder",)
    lim.release_on_behalf_of("holder")
    check_conserved(lim)


def test_no_leaks_after_many_cancelled_waits(backend):  # noqa: F811
    """Cancelled and timed-out waits of tasks and threads leave no
    reference to the limiter or the tasks, and no memory behind."""
    lim = sf.CapacityLimiter(1)
    lim.acquire_on_behalf_of("holder")
    task_refs = []

    async def rounds(n):
        for i in range(n):
            t = asyncio.ensure_future(lim.async_acquire())
            task_refs.append(weakref.ref(t))
            await asyncio.sleep(0)
            if i % 2:
                t.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await t
            else:
                assert await lim.async_acquire(timeout=0.0002) is False
                t.cancel()
                await asyncio.gather(t, return_exceptions=True)
            assert lim.acquire(timeout=0.0001 if i % 10 == 0 else 0) is False

    asyncio.run(rounds(50))
    gc.collect()
    refs = sys.getrefcount(lim)
    tracemalloc.start()
    try:
        asyncio.run(rounds(400))  # warm up the interpreter's caches, traced
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        asyncio.run(rounds(1600))
        del task_refs[:-1]
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert sys.getrefcount(lim) == refs
    assert all(r() is None for r in task_refs)
    # 3,200 waits and 1,600 thread attempts: 64 bytes left by each would
    # be 200 KB, well above what the interpreter's own caches move by.
    assert after - before < 64 * 1024, after - before
    assert lim.borrowers == ("holder",) and lim.waiting == 0
    lim.release_on_behalf_of("holder")
    check_conserved(lim)


@pytest.mark.parametrize("reentrant", [False, True])
def test_two_waits_for_one_borrower(backend, reentrant):  # noqa: F811
    """A task and a thread wait on behalf of one borrower and both get a
    token: the second to record finds the first's record and gives its
    token back (RuntimeError, or counted by an RCapacityLimiter)."""
    lim = (sf.RCapacityLimiter if reentrant else sf.CapacityLimiter)(2)
    lim.acquire_on_behalf_of("g1")
    lim.acquire_on_behalf_of("g2")
    x = object()
    from_thread = []

    def thread_main():
        try:
            from_thread.append(lim.acquire_on_behalf_of(x, timeout=10))
        except RuntimeError as e:
            from_thread.append(e)

    async def main():
        task = asyncio.ensure_future(lim.async_acquire_on_behalf_of(x, timeout=10))
        th = threading.Thread(target=thread_main)
        th.start()
        for _ in range(2000):
            if lim.waiting == 2:
                break
            await asyncio.sleep(0.005)
        assert lim.waiting == 2
        lim.total_tokens = 4  # one release: a token for each
        got = await asyncio.gather(task, return_exceptions=True)
        th.join(10)
        return got + from_thread

    got = run(main)
    assert lim.borrowed_tokens == 3  # g1, g2 and x, whose second token went back
    if reentrant:
        assert got == [True, True] and lim.count_of(x) == 2
        lim.release_on_behalf_of(x)
    else:
        assert sorted(type(g).__name__ for g in got) == ["RuntimeError", "bool"]
        assert True in got and lim.count_of(x) == 1
    for b in ("g1", "g2", x):
        lim.release_on_behalf_of(b)
    check_conserved(lim)


def test_closed_coroutine_gives_back_its_token(backend):  # noqa: F811
    """A task waits, first in the queue, when its loop stops for good; the
    token released next wakes its wait, which no loop dispatches.  Closing
    the coroutine (when the loop and the task are collected) finishes that
    wait, which takes the token and gives it back, to the thread asleep
    behind it."""
    lim = sf.CapacityLimiter(1)
    lim.acquire_on_behalf_of("holder")
    loop = asyncio.new_event_loop()
    task = loop.create_task(lim.async_acquire())
    loop.run_until_complete(asyncio.sleep(0.01))  # the task waits, first in the queue
    got = []
    th = threading.Thread(target=lambda: got.append(lim.acquire(timeout=3)))
    th.start()
    time.sleep(0.05)  # the thread sleeps behind it
    lim.release_on_behalf_of("holder")
    time.sleep(0.05)
    loop.close()
    del task, loop
    begin = time.monotonic()
    gc.collect()  # the coroutine is closed here
    th.join(10)
    assert got == [True] and time.monotonic() - begin < 1.5  # woken, not timed out
    assert lim.borrowers == (th,)
    lim.release_on_behalf_of(th)
    check_conserved(lim)


def test_default_borrowers():
    lim = sf.CapacityLimiter(2)

    async def main():
        with pytest.raises(RuntimeError):
            await lim.async_acquire()  # the task holds one: its `with` took it
        assert set(lim.borrowers) == {asyncio.current_task(), threading.main_thread()}
        return True

    coro = lim.async_acquire()  # driven by hand: no loop, no task
    with pytest.raises(RuntimeError, match="running asyncio task"):
        coro.send(None)
    with lim:  # this thread's
        t = threading.Thread(target=lambda: asyncio.run(_with_in_a_task(lim, main)))
        t.start()
        t.join(10)
    assert lim.borrowed_tokens == 0


async def _with_in_a_task(lim, body):
    with lim:  # a blocking `with` in a task borrows for the task
        assert await body()


def test_collected_with_its_borrowers():
    """A limiter and a borrower that refer to each other (through its
    record and an attribute) are garbage together: the collector sees the
    records."""
    class Borrower:
        pass

    lim, b = sf.RCapacityLimiter(1), Borrower()
    lim.acquire_on_behalf_of(b)
    lim.acquire_on_behalf_of(b)
    b.limiter = lim
    refs = weakref.ref(lim), weakref.ref(b)
    del lim, b
    gc.collect()
    assert [r() for r in refs] == [None, None]


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach only the main thread")
def test_signals_at_random_points_lose_nothing(usr1_raises):  # noqa: F811
    """The main thread takes and returns tokens (`with`, acquire/release,
    waiting behind two other threads) while signals whose handler raises
    land at random points: wherever one lands, the token is free or
    recorded to the main thread, never lost."""
    lim = sf.CapacityLimiter(1)
    stop = threading.Event()
    me = threading.current_thread()

    def other():
        while not stop.is_set():
            with lim:
                time.sleep(0.0001)
            time.sleep(0.0003)  # (else the main thread, woken second, starves)

    def sender():
        rnd = random.Random(3)
        while not stop.is_set():
            time.sleep(rnd.choice([0.0005, 0.002, 0.005]))
            signal.pthread_kill(me.ident, signal.SIGUSR1)

    threads = [threading.Thread(target=other) for _ in range(2)]
    threads.append(threading.Thread(target=sender))
    for t in threads:
        t.start()
    hits = done = 0
    try:
        while done < 400:
            try:
                try:
                    with lim:
                        time.sleep(0.0001)
                    if lim.acquire(timeout=0.01):
                        lim.release()
                    done += 1
                except Interrupted:
                    hits += 1
                if me in lim.borrowers:  # only if one landed between acquire and release
                    lim.release()
            except Interrupted:
                hits += 1
    finally:
        signal.signal(signal.SIGUSR1, lambda *args: None)  # for a signal still on its way
        stop.set()
        for t in threads:
            t.join(10)
    assert hits > 0
    check_conserved(lim)
