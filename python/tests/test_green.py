"""Greenlets under gevent and eventlet: every blocking method waits in its
hub (a ticker greenlet keeps running meanwhile), beside threads that
release or wait on the same objects; interruption (the libraries' Timeout
and kill) loses and duplicates nothing; RLock is owned by greenlets; and
monkey-patched programs work, with their real threads still threads.

Each test runs in a fresh OS thread, which gets a fresh hub of its own
(hubs are per thread), so gevent's and eventlet's never share one."""
import os
import random
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import squarefree as sq

from conftest import require  # noqa: E402

require("gevent", "eventlet", module_level=True)
import eventlet  # noqa: E402
import eventlet.hubs  # noqa: E402
import gevent  # noqa: E402
import greenlet  # noqa: E402

HANG = 20  # seconds before a test counts as hung


class Gevent:
    name = "gevent"
    Timeout = gevent.Timeout

    @staticmethod
    def spawn(fn, *args):
        return gevent.spawn(fn, *args)

    @staticmethod
    def get(g):
        return g.get(timeout=HANG)

    @staticmethod
    def sleep(s):
        gevent.sleep(s)

    @staticmethod
    def kill(g):
        g.kill(block=False)

    @staticmethod
    def hub_call(fn):
        gevent.get_hub().loop.run_callback(fn)

    @staticmethod
    def done():
        gevent.get_hub().destroy(destroy_loop=True)


class Eventlet:
    name = "eventlet"
    Timeout = eventlet.Timeout

    @staticmethod
    def spawn(fn, *args):
        return eventlet.spawn(fn, *args)

    @staticmethod
    def get(g):
        with eventlet.Timeout(HANG):
            return g.wait()

    @staticmethod
    def sleep(s):
        eventlet.sleep(s)

    @staticmethod
    def kill(g):
        eventlet.spawn_n(g.kill)

    @staticmethod
    def hub_call(fn):
        eventlet.hubs.get_hub().schedule_call_global(0, fn)

    @staticmethod
    def done():
        eventlet.hubs.get_hub().abort(wait=False)


@pytest.fixture(params=[Gevent, Eventlet], ids=["gevent", "eventlet"])
def lib(request):
    return request.param


def in_thread(lib, body):
    """Run body(lib) in a new OS thread (its own hub); its result, or its
    exception raised here."""
    out = {}

    def run():
        try:
            out["r"] = body(lib)
        except BaseException as e:  # noqa: B902 (reported to the test)
            out["e"] = e
        finally:
            try:
                lib.done()
            except Exception:
                pass

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(HANG * 2)
    assert not t.is_alive(), "hung"
    if "e" in out:
        raise out["e"]
    return out.get("r")


class Ticker:
    """A greenlet that counts while the hub runs."""

    def __init__(self, lib):
        self.n = 0
        self.on = True
        self.g = lib.spawn(self._run, lib)

    def _run(self, lib):
        while self.on:
            self.n += 1
            lib.sleep(0.001)

    def stop(self, lib):
        self.on = False
        lib.get(self.g)


def wait_here(lib, wait, release, by_thread):
    """In a greenlet: wait(), while release() runs 30 ms later in another
    greenlet or a real thread.  wait()'s value; the ticker must advance
    during the wait (the hub was not blocked)."""
    ticker = Ticker(lib)
    lib.sleep(0.005)

    def later():
        lib.sleep(0.03)
        release()

    if by_thread:
        t = threading.Timer(0.03, release)
        t.start()
    else:
        lib.spawn(later)

    def waiter():
        before = ticker.n
        value = wait()
        return value, ticker.n - before

    value, ticks = lib.get(lib.spawn(waiter))
    ticker.stop(lib)
    if by_thread:
        t.join()
    assert ticks >= 3, "the hub did not run while the greenlet waited"
    return value


# --- every blocking method --------------------------------------------------------------

def held(lock):
    lock.acquire()
    return lock


def _cond_case(lock_factory):
    def case():
        cond = sq.Condition(lock_factory())
        box = []

        def wait():
            with cond:
                while not box:
                    assert cond.wait(HANG)
                assert cond._is_owned()
                return box.pop()

        def release():
            with cond:
                box.append("x")
                cond.notify()
        return wait, release, "x"
    return case


def _barrier_case():
    b = sq.Barrier(2)
    return (lambda: b.wait(HANG)), (lambda: b.wait(HANG)), 0  # the first arrival


CASES = {
    "Lock.acquire": lambda: (lambda l: (l.acquire, l.release, True))(held(sq.Lock())),
    "RLock.acquire": None,  # below: the holder must be another greenlet
    "Semaphore.acquire": lambda: (lambda s: (s.acquire, s.release, True))(sq.Semaphore(0)),
    "BoundedSemaphore.acquire": lambda: (lambda s: (s.acquire, s.release, True))(
        held(sq.BoundedSemaphore(1))),
    "BinarySemaphore.acquire": lambda: (lambda s: (s.acquire, s.release, True))(
        sq.BinarySemaphore(0)),
    "BoundedBinarySemaphore.acquire": lambda: (lambda s: (s.acquire, s.release, True))(
        held(sq.BoundedBinarySemaphore(1))),
    "Event.wait": lambda: (lambda e: (e.wait, e.set, True))(sq.Event()),
    "Latch.wait": lambda: (lambda l: (l.wait, l.count_down, True))(sq.Latch(1)),
    "Latch.arrive_and_wait": lambda: (lambda l: (l.arrive_and_wait, l.count_down, None))(
        sq.Latch(2)),
    "CountdownEvent.wait": lambda: (lambda c: (c.wait, c.down, True))(sq.CountdownEvent(1)),
    "Barrier.wait": _barrier_case,
    "Condition.wait(RLock)": _cond_case(sq.RLock),
    "Condition.wait(Lock)": _cond_case(sq.Lock),
    "Condition.wait(threading.Lock)": _cond_case(threading.Lock),
    "Queue.get": lambda: (lambda q: (q.get, lambda: q.put(7), 7))(sq.Queue()),
    "Queue.put": lambda: (lambda q: (lambda: q.put(2), q.get, None))(
        (lambda q: (q.put(1), q)[1])(sq.Queue(1))),
    "Queue.join": lambda: (lambda q: (q.join, lambda: (q.get(), q.task_done()), None))(
        (lambda q: (q.put(1), q)[1])(sq.Queue())),
    "LifoQueue.get": lambda: (lambda q: (q.get, lambda: q.put(7), 7))(sq.LifoQueue()),
    "PriorityQueue.get": lambda: (lambda q: (q.get, lambda: q.put(7), 7))(sq.PriorityQueue()),
    "SimpleQueue.get": lambda: (lambda q: (q.get, lambda: q.put(7), 7))(sq.SimpleQueue()),
    "CapacityLimiter.acquire": lambda: (lambda l: (
        lambda: l.acquire_on_behalf_of("me"), lambda: l.release_on_behalf_of("other"), True))(
        (lambda l: (l.acquire_on_behalf_of("other"), l)[1])(sq.CapacityLimiter(1))),
}
del CASES["RLock.acquire"]


@pytest.mark.parametrize("by_thread", [False, True], ids=["greenlet", "thread"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_blocking_method_waits_in_the_hub(lib, case, by_thread):
    def body(lib):
        wait, release, expected = CASES[case]()
        assert wait_here(lib, wait, release, by_thread) == expected
    in_thread(lib, body)


def test_once_waits_in_the_hub(lib):
    """A greenlet that finds fn running (in another greenlet of its hub,
    which switches out inside fn) waits in the hub, then finds it done."""
    def body(lib):
        once, ran, gate = sq.Once(), [], sq.Event()

        def fn():
            ran.append(1)
            gate.wait()

        runner = lib.spawn(once.run, fn)
        lib.sleep(0.005)
        assert wait_here(lib, lambda: once.run(lambda: ran.append(2)), gate.set, False) is False
        assert lib.get(runner) is True and ran == [1]

        # fn raises in its runner: a greenlet waiting for it runs it again.
        once2, gate2 = sq.Once(), sq.Event()

        def failing():
            gate2.wait()
            raise ValueError

        runner = lib.spawn(once2.run, failing)
        lib.sleep(0.005)
        assert wait_here(lib, lambda: once2.run(lambda: ran.append(3)), gate2.set, True)
        with pytest.raises(ValueError):
            lib.get(runner)
        assert ran == [1, 3]
    in_thread(lib, body)


def test_rlock_is_owned_by_greenlets(lib):
    def body(lib):
        r = sq.RLock()
        hold, go = sq.Event(), sq.Event()

        def owner():
            with r:
                with r:  # reentrant for its owner
                    hold.set()
                    go.wait()

        g = lib.spawn(owner)
        hold.wait()
        assert not r.acquire(blocking=False)  # the main greenlet is not the owner
        with pytest.raises(RuntimeError):
            r.release()

        def take():
            assert r.acquire()
            assert r._is_owned() and r._recursion_count() == 1
            r.release()
            return True
        assert wait_here(lib, take, go.set, False) is True
        lib.get(g)
        assert not r._is_owned() and r.acquire(blocking=False)
        r.release()
    in_thread(lib, body)


def test_main_greenlet_lock_across_hub_creation(lib):
    """The main greenlet is its thread: an RLock it took before its hub
    existed is still its own after."""
    def body(lib):
        r = sq.RLock()
        r.acquire()  # no hub yet in this thread
        lib.sleep(0)  # makes the hub
        assert r._is_owned()
        r.release()
    in_thread(lib, body)


@pytest.mark.parametrize("locktype", ["RLock", "Lock"])
def test_condition_notify_all_wakes_greenlets_threads_and_tasks(lib, locktype):
    """One notify_all reaches greenlets and threads waiting on one
    Condition, and each takes the lock back in turn."""
    def body(lib):
        cond = sq.Condition(getattr(sq, locktype)())
        state = {"go": False, "woken": 0}

        def waiter():
            with cond:
                while not state["go"]:
                    cond.wait(HANG)
                state["woken"] += 1

        threads = [threading.Thread(target=waiter) for _ in range(3)]
        for t in threads:
            t.start()
        glets = [lib.spawn(waiter) for _ in range(3)]
        deadline = time.monotonic() + HANG
        while n_waiting(cond) < 6 and time.monotonic() < deadline:
            lib.sleep(0.001)
        assert n_waiting(cond) == 6
        with cond:
            state["go"] = True
            cond.notify_all()
        for g in glets:
            lib.get(g)
        for t in threads:
            t.join(HANG)
        assert state["woken"] == 6
    in_thread(lib, body)


def test_event_set_wakes_greenlets_threads_and_tasks(lib):
    """Greenlets of two hubs (two threads), plain threads and asyncio tasks
    wait on one Event; one set() wakes them all."""
    import asyncio
    ev = sq.Event()
    woken = []
    lock = threading.Lock()

    def note(who):
        with lock:
            woken.append(who)

    def green_side(lib):
        gs = [lib.spawn(lambda: (ev.wait(HANG), note("g"))) for _ in range(5)]
        for g in gs:
            lib.get(g)

    async def tasks():
        await asyncio.gather(*[ev.async_wait(HANG) for _ in range(5)])
        for _ in range(5):
            note("t")

    hubs = [threading.Thread(target=in_thread, args=(lib, green_side)) for _ in range(2)]
    plain = [threading.Thread(target=lambda: (ev.wait(HANG), note("p"))) for _ in range(5)]
    aio = threading.Thread(target=asyncio.run, args=(tasks(),))
    for t in hubs + plain + [aio]:
        t.start()
    time.sleep(0.2)
    assert woken == []
    ev.set()
    for t in hubs + plain + [aio]:
        t.join(HANG)
    assert sorted(woken) == ["g"] * 10 + ["p"] * 5 + ["t"] * 5


def n_waiting(cond):
    """The waiters a Condition counts (its repr, as threading's)."""
    return int(repr(cond).rsplit(",", 1)[1].strip(" )>"))


# --- timeouts given to the methods -----------------------------------------------------

def test_method_timeouts_return_as_threads(lib):
    def body(lib):
        ticker = Ticker(lib)
        lock = held(sq.Lock())
        r = sq.RLock()
        other = lib.spawn(lambda: (r.acquire(), lib.sleep(1)))
        lib.sleep(0.005)
        c = sq.Condition()
        q = sq.Queue(1)
        q.put(1)
        lim = sq.CapacityLimiter(1)
        lim.acquire_on_behalf_of("x")
        b = sq.Barrier(2)
        results = {}

        def cond_wait():
            with c:
                return c.wait(0.02)

        checks = {
            "lock": lambda: lock.acquire(timeout=0.02),
            "rlock": lambda: r.acquire(timeout=0.02),
            "sem": lambda: sq.Semaphore(0).acquire(timeout=0.02),
            "event": lambda: sq.Event().wait(0.02),
            "latch": lambda: sq.Latch(1).wait(0.02),
            "countdown": lambda: sq.CountdownEvent(1).wait(0.02),
            "cond": cond_wait,
            "limiter": lambda: lim.acquire(timeout=0.02),
        }
        before = ticker.n
        for name, fn in checks.items():
            results[name] = lib.get(lib.spawn(fn))
        assert results == {name: False for name in checks}
        with pytest.raises(sq.Full):
            lib.get(lib.spawn(lambda: q.put(2, timeout=0.02)))
        with pytest.raises(sq.Empty):
            lib.get(lib.spawn(lambda: sq.Queue().get(timeout=0.02)))
        with pytest.raises(sq.BrokenBarrierError):
            lib.get(lib.spawn(lambda: b.wait(0.02)))
        assert b.broken  # a time-out breaks it, as a thread's
        assert ticker.n - before >= 10
        assert lock.acquire(timeout=0) is False and lock.acquire(blocking=False) is False
        lib.kill(other)
        ticker.stop(lib)
    in_thread(lib, body)


# --- interruption ------------------------------------------------------------------------

def run_interruptible(lib, how, fn, seconds):
    """fn() in a greenlet that `how` interrupts after `seconds`: its value,
    or the interruption's exception class name."""
    def body():
        if how == "timeout":
            try:
                with lib.Timeout(seconds):
                    return fn()
            except lib.Timeout:
                return "interrupted"
        try:
            return fn()
        except greenlet.GreenletExit:
            return "interrupted"
    g = lib.spawn(body)
    if how == "kill":
        def killer():
            lib.sleep(seconds)
            lib.kill(g)
        lib.spawn(killer)
    return g


def green_result(lib, g):
    try:
        r = lib.get(g)
    except greenlet.GreenletExit:
        return "interrupted"
    return "interrupted" if r is None or isinstance(r, greenlet.GreenletExit) else r


@pytest.mark.parametrize("how", ["timeout", "kill"])
def test_interrupted_semaphore_waits_lose_no_permit(lib, how):
    """Greenlets wait for permits a thread releases one at a time while
    they are interrupted at random moments: every permit released is held
    by a greenlet that got True or is still in the semaphore."""
    def body(lib):
        rnd = random.Random(7)
        sem = sq.Semaphore(0)
        n, released = 60, 40
        gs = [run_interruptible(lib, how, sem.acquire, rnd.uniform(0, 0.06))
              for _ in range(n)]

        def releaser():
            for _ in range(released):
                sem.release()
                time.sleep(rnd.uniform(0, 0.002))
        t = threading.Thread(target=releaser)
        t.start()
        while t.is_alive():
            lib.sleep(0.002)
        t.join()
        lib.sleep(0.1)
        got = [green_result(lib, g) for g in gs]
        assert set(got) <= {True, "interrupted"}
        assert got.count(True) + sem.value == released
    in_thread(lib, body)


@pytest.mark.parametrize("how", ["timeout", "kill"])
def test_interrupted_lock_waits_leave_it_free(lib, how):
    """Greenlets and threads take one Lock in turn while greenlets are
    interrupted: exclusion holds, and the lock is free at the end."""
    def body(lib):
        rnd = random.Random(3)
        lock = sq.Lock()
        inside = [0]
        taken = [0]

        def use():
            assert lock.acquire()
            try:
                inside[0] += 1
                assert inside[0] == 1
                taken[0] += 1
                lib.sleep(0.001)
            finally:
                inside[0] -= 1
                lock.release()
            return True

        def thread_use():
            for _ in range(20):
                with lock:
                    taken[0] += 1
        ts = [threading.Thread(target=thread_use) for _ in range(2)]
        for t in ts:
            t.start()
        gs = [run_interruptible(lib, how, use, rnd.uniform(0, 0.05)) for _ in range(40)]
        got = [green_result(lib, g) for g in gs]
        for t in ts:
            t.join(HANG)
        assert set(got) <= {True, "interrupted"}
        assert "interrupted" in got and True in got
        assert lock.acquire(blocking=False)
        lock.release()
    in_thread(lib, body)


@pytest.mark.parametrize("how", ["timeout", "kill"])
def test_interrupted_queue_gets_lose_no_item(lib, how):
    """Items a thread puts reach exactly one getter or stay in the queue,
    however many getters are interrupted."""
    def body(lib):
        rnd = random.Random(11)
        q = sq.Queue(5)
        n = 50
        gs = [run_interruptible(lib, how, q.get, rnd.uniform(0, 0.08)) for _ in range(80)]

        put = []

        def producer():  # until every getter has left and the queue is full
            for i in range(n):
                try:
                    q.put(i, timeout=0.5)
                except sq.Full:
                    return
                put.append(i)
        t = threading.Thread(target=producer)
        t.start()
        while t.is_alive():
            lib.sleep(0.002)
        t.join()
        lib.sleep(0.1)
        got = [green_result(lib, g) for g in gs]
        items = [x for x in got if x != "interrupted"]
        left = []
        while not q.empty():
            left.append(q.get_nowait())
        assert sorted(items + left) == put
    in_thread(lib, body)


@pytest.mark.parametrize("how", ["timeout", "kill"])
def test_interrupted_limiter_waits_keep_tokens(lib, how):
    def body(lib):
        rnd = random.Random(5)
        lim = sq.CapacityLimiter(2)

        def use():
            with lim:
                lib.sleep(0.002)
            return True
        gs = [run_interruptible(lib, how, use, rnd.uniform(0, 0.05)) for _ in range(40)]
        got = [green_result(lib, g) for g in gs]
        assert set(got) <= {True, "interrupted"} and True in got
        assert lim.borrowed_tokens == 0 and lim.statistics().borrowers == ()
    in_thread(lib, body)


@pytest.mark.parametrize("how", ["timeout", "kill"])
def test_interrupted_barrier_wait_breaks_it(lib, how):
    def body(lib):
        b = sq.Barrier(3)
        other = lib.spawn(lambda: b.wait(HANG))
        lib.sleep(0.005)
        g = run_interruptible(lib, how, lambda: b.wait(HANG), 0.02)
        assert green_result(lib, g) == "interrupted"
        with pytest.raises(sq.BrokenBarrierError):
            lib.get(other)
        assert b.broken
    in_thread(lib, body)


@pytest.mark.parametrize("how", ["timeout", "kill"])
def test_interrupted_condition_wait_passes_its_notify_on(lib, how):
    """Waiter a is interrupted just after notify(1), while the notifier
    still holds the lock: whichever of a and b the notify reached, b wakes
    (a passes on a notify it consumed), and a leaves holding the lock,
    which its with then frees."""
    def body(lib):
        cond = sq.Condition(sq.Lock())

        def wait(timeout):
            with cond:
                return cond.wait(timeout)

        a = run_interruptible(lib, how, lambda: wait(HANG), 0.03)
        lib.sleep(0.01)
        b = lib.spawn(wait, 2)
        lib.sleep(0.01)
        with cond:
            cond.notify()
            lib.sleep(0.04)  # a is interrupted meanwhile, waiting for the lock
        ra, rb = green_result(lib, a), lib.get(b)
        assert (ra, rb) in (("interrupted", True), (True, False))
        assert ra == "interrupted", "the interruption came too late to test anything"
        assert cond._lock.acquire(blocking=False)
        cond._lock.release()
    in_thread(lib, body)


def test_barrier_reset_releases_greenlet_waiters(lib):
    """reset() in a greenlet, while greenlets of its hub wait: they leave
    with BrokenBarrierError (the reset dispatches the hub's driver), and
    the barrier is usable again."""
    def body(lib):
        b = sq.Barrier(3)
        gs = [lib.spawn(b.wait, HANG) for _ in range(2)]
        lib.sleep(0.01)
        b.reset()
        for g in gs:
            with pytest.raises(sq.BrokenBarrierError):
                lib.get(g)
        assert not b.broken
        gs = [lib.spawn(b.wait, HANG) for _ in range(3)]
        assert sorted(lib.get(g) for g in gs) == [0, 1, 2]
    in_thread(lib, body)


def test_interrupted_condition_wait_while_another_greenlet_holds_the_lock(lib):
    """Killed while the lock is held by another greenlet of its hub, a
    cond waiter waits for the lock in the hub (no deadlock), then raises."""
    def body(lib):
        cond = sq.Condition()
        order = []

        def waiter():
            with cond:
                try:
                    cond.wait(HANG)
                except greenlet.GreenletExit:
                    order.append(("killed", cond._is_owned()))
                    raise

        g = lib.spawn(waiter)
        lib.sleep(0.01)
        with cond:  # the main greenlet holds the lock while g is killed
            lib.kill(g)
            lib.sleep(0.02)
            order.append("holder done")
        try:
            lib.get(g)
        except greenlet.GreenletExit:
            pass
        assert order == ["holder done", ("killed", True)]
        assert not cond._is_owned()
    in_thread(lib, body)


# --- the hub itself and real threads -----------------------------------------------------

def test_hub_callback_and_real_threads_block_as_threads(lib):
    """Code running in the hub, and a thread with no hub, wait as threads."""
    def body(lib):
        ev = sq.Event()
        out = []
        lib.hub_call(lambda: out.append(ev.wait(0.01)))
        lib.sleep(0.05)
        assert out == [False]

        def thread():
            out.append(ev.wait(HANG))
        t = threading.Thread(target=thread)
        t.start()
        lib.sleep(0.02)
        ev.set()
        t.join(HANG)
        assert out == [False, True]
    in_thread(lib, body)


# --- monkey-patched programs (fresh interpreters) ----------------------------------------

PATCHED = {
    "gevent": """
        from gevent import monkey; monkey.patch_all()
        import gevent, threading
        spawn, sleep = gevent.spawn, gevent.sleep
        def in_real_thread(fn):
            return gevent.get_hub().threadpool.spawn(fn).get(timeout=20)
    """,
    "eventlet": """
        import eventlet; eventlet.monkey_patch()
        import eventlet.tpool, threading
        spawn, sleep = eventlet.spawn, eventlet.sleep
        def in_real_thread(fn):
            return eventlet.tpool.execute(fn)
    """,
}

PATCHED_BODY = """
    import squarefree as sq
    ticks = [0]
    run = [True]
    def ticker():
        while run[0]:
            ticks[0] += 1
            sleep(0.001)
    spawn(ticker)

    # threading.Thread is a greenlet here: its waits are the hub's.
    lock, cond, box = sq.Lock(), sq.Condition(), []
    def consumer():
        with cond:
            while not box:
                cond.wait(20)
            box.pop()
    ts = [threading.Thread(target=consumer) for _ in range(3)]
    for t in ts: t.start()
    sleep(0.02)
    for _ in range(3):
        with cond:
            box.append(1); cond.notify()
    for t in ts: t.join(20)
    assert not any(t.is_alive() for t in ts)

    # An RLock is owned per green thread.
    r = sq.RLock(); held = sq.Event(); go = sq.Event()
    def owner():
        with r:
            held.set(); go.wait(20)
    t = threading.Thread(target=owner); t.start(); held.wait(20)
    assert not r.acquire(blocking=False)
    go.set(); t.join(20)
    assert r.acquire(timeout=5); r.release()

    # A real thread (the threadpool's) blocks as a thread, on an Event a
    # greenlet sets while the hub keeps running.
    ev = sq.Event()
    def set_later():
        sleep(0.05); ev.set()
    spawn(set_later)
    before = ticks[0]
    assert in_real_thread(lambda: ev.wait(20)) is True
    assert ticks[0] - before >= 3

    # The main greenlet waits in the hub too.
    q = sq.Queue()
    spawn(lambda: (sleep(0.02), q.put("x")))
    before = ticks[0]
    assert q.get(timeout=20) == "x" and ticks[0] - before >= 3
    run[0] = False
    print("ok")
"""


@pytest.mark.parametrize("name", ["gevent", "eventlet"])
def test_monkey_patched_program(name):
    code = textwrap.dedent(PATCHED[name]) + textwrap.dedent(PATCHED_BODY)
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


FORKED = """
import os, sys
import squarefree
NAME, PATCH = sys.argv[1], sys.argv[2] == "patched"
if NAME == "gevent":
    import gevent
    if PATCH:
        import gevent.monkey; gevent.monkey.patch_all()
    spawn, sleep = gevent.spawn, gevent.sleep
else:
    import eventlet
    if PATCH:
        eventlet.monkey_patch()
    spawn, sleep = eventlet.spawn, eventlet.sleep
ready = squarefree.Latch(1, shared=True)
ev = squarefree.Event(shared=True)
sleep(0)  # the main thread's hub exists, and has run
w = squarefree.Event()
g = spawn(w.wait, 5)  # ... and has a driver, which a greenlet's wait made
w.set()
sleep(0.01)
from squarefree import _green
before = _green._hub().driver
pid = os.fork()
if pid == 0:
    h = _green._hub()
    if NAME == "gevent" and PATCH:  # gevent's fork re-initialised the hub: a new driver
        assert h is not None and h.driver is not before, h
    else:  # an inherited hub is no hub
        assert h is None, h
    ready.count_down()
    ok = ev.wait(30)  # the parent's set, seen in the child
    os._exit(0 if ok else 3)
assert ready.wait(30)
sleep(0.05)
ev.set()
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
print("ok")
"""


@pytest.mark.parametrize("patched", ["plain", "patched"])
@pytest.mark.parametrize("name", ["gevent", "eventlet"])
def test_forked_child_of_a_hub(name, patched):
    """A child forked from a thread with a hub: the hub it inherits shares
    the parent's epoll set and its driver the parent's io_uring ring, so
    neither is used there (it crashed: the child submitted on the parent's
    ring); its waits block as a thread's (or, where gevent's own fork
    re-initialised the hub, wait in it) and see the parent's wake-up."""
    r = subprocess.run([sys.executable, "-c", FORKED, name, patched], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr
