"""squarefree's types as drop-ins for threading's, beyond lock_tests.py: the
same outcome as threading's for the same call (timeouts negative and too
large, reprs, the names threading's types have), weak references,
Condition over any lock, threading.Condition over squarefree's RLock,
BoundedSemaphore a Semaphore (and its asyncio forms), a cancelled task's
barrier arrival, and a KeyboardInterrupt in Barrier.wait."""
import asyncio
import gc
import re
import signal
import threading
import time
import weakref

import pytest

import squarefree as sf
from squarefree import _squarefree as _c
from aiocompat import timeout

# --- the same call, the same outcome -------------------------------------------------


def outcome(fn):
    """fn()'s result, or its exception's type."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 (the outcome is what is compared)
        return type(e)


def held(lock):
    lock.acquire()
    return lock


def barrier_outcome(b, timeout):
    return outcome(lambda: b.wait(timeout)), b.broken


def cond_wait(cond, timeout):
    with cond:
        return cond.wait(timeout)


# (what, call(module)): each call runs on threading's types and on
# squarefree's and must give the same outcome.
BIG = 1e100
CALLS = [
    ("Event.wait(-1)", lambda m: m.Event().wait(-1)),
    ("Event.wait(-1) set", lambda m: (lambda e: (e.set(), e.wait(-1)))(m.Event())),
    ("Event.wait(1e100)", lambda m: m.Event().wait(BIG)),
    ("Event.wait(1e100) set", lambda m: (lambda e: (e.set(), e.wait(BIG)))(m.Event())),
    ("Semaphore(0).acquire(timeout=-1)", lambda m: m.Semaphore(0).acquire(timeout=-1)),
    ("Semaphore(1).acquire(timeout=-1)", lambda m: m.Semaphore(1).acquire(timeout=-1)),
    ("Semaphore(0).acquire(timeout=1e100)", lambda m: m.Semaphore(0).acquire(timeout=BIG)),
    ("Semaphore(1).acquire(timeout=1e100)", lambda m: m.Semaphore(1).acquire(timeout=BIG)),
    ("BoundedSemaphore(0).acquire(timeout=-5)",
     lambda m: m.BoundedSemaphore(0).acquire(timeout=-5)),
    ("Condition.wait(-1)", lambda m: cond_wait(m.Condition(), -1)),
    ("Condition.wait(1e100)", lambda m: cond_wait(m.Condition(), BIG)),
    ("Condition(Lock).wait(-1)", lambda m: cond_wait(m.Condition(m.Lock()), -1)),
    ("Condition.wait_for(-1)",
     lambda m: (lambda c: (c.acquire(), c.wait_for(lambda: False, -1)))(m.Condition())),
    ("Barrier(2).wait(-1)", lambda m: barrier_outcome(m.Barrier(2), -1)),
    ("Barrier(1).wait(-1)", lambda m: barrier_outcome(m.Barrier(1), -1)),
    ("Barrier(2).wait(1e100)", lambda m: outcome(lambda: m.Barrier(2).wait(BIG))),
    ("Barrier(1).wait(1e100)", lambda m: barrier_outcome(m.Barrier(1), BIG)),
    ("Barrier(2, timeout=-1).wait()", lambda m: barrier_outcome(m.Barrier(2, timeout=-1), None)),
    ("Lock.acquire(timeout=-2)", lambda m: m.Lock().acquire(timeout=-2)),
    ("Lock.acquire(timeout=-1)", lambda m: m.Lock().acquire(timeout=-1)),
    ("Lock.acquire(timeout=1e100)", lambda m: m.Lock().acquire(timeout=BIG)),
    ("Lock.acquire(timeout=TIMEOUT_MAX+1)",
     lambda m: m.Lock().acquire(timeout=threading.TIMEOUT_MAX + 1)),
    ("held Lock.acquire(timeout=0)", lambda m: held(m.Lock()).acquire(timeout=0)),
    ("RLock.acquire(timeout=-2)", lambda m: m.RLock().acquire(timeout=-2)),
    ("RLock.acquire(timeout=1e100)", lambda m: m.RLock().acquire(timeout=BIG)),
    ("Condition.acquire(timeout=1e100)", lambda m: m.Condition().acquire(timeout=BIG)),
]


@pytest.mark.parametrize("call", [c for _, c in CALLS], ids=[w for w, _ in CALLS])
def test_same_outcome_as_threading(call):
    assert outcome(lambda: call(sf)) == outcome(lambda: call(threading))


def test_async_negative_timeout_has_passed():
    """A negative timeout is one that has passed, for a task as for a
    thread: ev.async_wait(deadline - loop.time()) works."""
    async def main():
        loop = asyncio.get_running_loop()
        deadline = loop.time() - 1
        ev, sem, lock = sf.Event(), sf.Semaphore(0), sf.Lock()
        la, cd, b = sf.Latch(1), sf.CountdownEvent(1), sf.Barrier(2)
        lock.acquire()
        assert await ev.async_wait(deadline - loop.time()) is False
        assert await sem.async_acquire(-1) is False
        assert await lock.async_acquire(-1) is False
        assert await la.async_wait(-1) is False
        assert await cd.async_wait(-1) is False
        with pytest.raises(threading.BrokenBarrierError):
            await b.async_wait(-1)
        assert b.broken
        ev.set()
        assert await ev.async_wait(-1) is True
        return True

    assert asyncio.run(main())


# --- reprs ----------------------------------------------------------------------------

def test_reprs_have_threadings_forms():
    addr = r"0x[0-9a-f]+"
    lk = sf.Lock()
    assert re.fullmatch(rf"<unlocked squarefree\.Lock object at {addr}>", repr(lk))
    lk.acquire()
    assert re.fullmatch(rf"<locked squarefree\.Lock object at {addr}>", repr(lk))
    r = sf.RLock()
    assert re.fullmatch(rf"<unlocked squarefree\.RLock object owner=0 count=0 at {addr}>",
                        repr(r))
    r.acquire()
    r.acquire()
    me = threading.get_ident()
    assert re.fullmatch(rf"<locked squarefree\.RLock object owner={me} count=2 at {addr}>",
                        repr(r))
    s = sf.Semaphore(3)
    assert re.fullmatch(rf"<squarefree\.Semaphore at {addr}: value=3>", repr(s))
    bs = sf.BoundedSemaphore(3)
    bs.acquire()
    assert re.fullmatch(rf"<squarefree\.BoundedSemaphore at {addr}: value=2/3>", repr(bs))
    e = sf.Event()
    assert re.fullmatch(rf"<squarefree\.Event at {addr}: unset>", repr(e))
    e.set()
    assert re.fullmatch(rf"<squarefree\.Event at {addr}: set>", repr(e))
    b = sf.Barrier(3)
    assert re.fullmatch(rf"<squarefree\.Barrier at {addr}: waiters=0/3>", repr(b))
    b.abort()
    assert re.fullmatch(rf"<squarefree\.Barrier at {addr}: broken>", repr(b))
    c = sf.Condition(lk)
    assert repr(c) == f"<Condition({lk!r}, 0)>"
    assert f"{id(lk):#x}" in repr(lk)  # the address is id(), as threading's


def test_barrier_repr_counts_waiters():
    b = sf.Barrier(3)
    t = threading.Thread(target=lambda: outcome(lambda: b.wait(10)))
    t.start()
    while b.n_waiting < 1:
        time.sleep(0.001)
    assert repr(b).endswith(": waiters=1/3>")
    b.abort()
    t.join()


# --- names ---------------------------------------------------------------------------

PAIRS = [
    (threading.Lock, sf.Lock), (threading.RLock, sf.RLock), (threading.Event, sf.Event),
    (threading.Condition, sf.Condition), (threading.Semaphore, sf.Semaphore),
    (threading.BoundedSemaphore, sf.BoundedSemaphore),
    (lambda: threading.Barrier(2), lambda: sf.Barrier(2)),
]
# threading's protocol names that code outside threading uses (the others
# of its Python classes' underscored names are their implementation).
PROTOCOL = {"_is_owned", "_release_save", "_acquire_restore", "_at_fork_reinit"}


@pytest.mark.parametrize("theirs,ours", PAIRS)
def test_every_name_of_threadings_type(theirs, ours):
    def names(obj):
        return {n for n in dir(obj) if not n.startswith("_") or n in PROTOCOL}

    assert names(theirs()) <= names(ours())


def test_lock_and_rlock_protocol():
    lk = sf.Lock()
    assert lk.acquire_lock() is True and lk.locked_lock() and lk._is_owned()
    lk.release_lock()
    assert not lk.locked() and not lk._is_owned()
    lk.acquire()
    assert lk._release_save() is None and not lk.locked()
    lk._acquire_restore(None)
    assert lk.locked()
    lk._at_fork_reinit()
    assert not lk.locked()

    r = sf.RLock()
    assert r._recursion_count() == 0 and not r._is_owned()
    with pytest.raises(RuntimeError):
        r._release_save()
    r.acquire()
    r.acquire()
    assert r._recursion_count() == 2 and r._is_owned()
    state = r._release_save()
    assert r._recursion_count() == 0 and not r._is_owned()
    other = []
    t = threading.Thread(target=lambda: other.append((r.acquire(False), r._recursion_count(),
                                                      r.release())))
    t.start()
    t.join()
    assert other == [(True, 1, None)]  # released entirely: another thread took it
    r._acquire_restore(state)
    assert r._recursion_count() == 2
    r._at_fork_reinit()
    assert r._recursion_count() == 0 and r.acquire(False)


def test_deprecated_aliases_warn_as_threadings():
    e, c = sf.Event(), sf.Condition()
    with pytest.warns(DeprecationWarning, match=r"isSet\(\) is deprecated"):
        assert e.isSet() is False
    with c, pytest.warns(DeprecationWarning, match=r"notifyAll\(\) is deprecated"):
        c.notifyAll()


# --- weak references -----------------------------------------------------------------

TYPES = [sf.Lock, sf.RLock, sf.Event, sf.Semaphore, sf.BoundedSemaphore, sf.Condition,
         sf.Once, lambda: sf.Latch(1), sf.CountdownEvent, lambda: sf.Barrier(2),
         _c.Lock, _c.Event, _c.Semaphore, _c.BoundedSemaphore, lambda: _c.Latch(1),
         _c.CountdownEvent, lambda: _c.Barrier(2)]


@pytest.mark.parametrize("make", TYPES)
def test_weak_references(make):
    obj = make()
    ref = weakref.ref(obj)
    assert ref() is obj
    del obj
    gc.collect()
    assert ref() is None


# --- Condition over any lock ---------------------------------------------------------

class PlainLock:
    """A lock with acquire and release only (threading's Condition takes
    it: owned means acquire(False) fails)."""

    def __init__(self):
        self._lk = threading.Lock()

    def acquire(self, blocking=True, timeout=-1):
        return self._lk.acquire(blocking, timeout)

    def release(self):
        self._lk.release()

    __enter__ = acquire

    def __exit__(self, *exc):
        self.release()


@pytest.mark.parametrize("make", [threading.Lock, threading.RLock, PlainLock],
                         ids=["threading.Lock", "threading.RLock", "plain"])
def test_condition_over_any_lock(make):
    lock = make()
    c = sf.Condition(lock)
    assert c._lock is lock
    n = 6
    items, got = [], []
    ready = sf.CountdownEvent(n)

    def consumer():
        with c:
            ready.down()
            while not items:
                assert c.wait(10)
            got.append(items.pop())

    ts = [threading.Thread(target=consumer) for _ in range(n)]
    for t in ts:
        t.start()
    assert ready.wait(10)
    for _ in range(n // 2):  # one at a time
        with c:
            items.append(1)
            c.notify()
        while items:
            time.sleep(0.001)
    with c:  # the rest at once
        items.extend([1] * (n - n // 2))
        c.notify_all()
    for t in ts:
        t.join(10)
    assert len(got) == n and not any(t.is_alive() for t in ts)
    with c:
        assert c.wait(0.01) is False and c._is_owned()  # timed out, lock held again
    assert not c._is_owned()
    with pytest.raises(RuntimeError):
        c.notify()


def test_threading_condition_over_squarefree_rlock():
    """threading.Condition over our RLock held twice: wait() releases both
    levels (RLock._release_save), so the notifier gets in, and restores
    them."""
    r = sf.RLock()
    cond = threading.Condition(r)
    state = []

    def notifier():
        took = r.acquire(timeout=5)
        state.append(took)
        if took:
            cond.notify()
            r.release()

    with cond:
        with cond:
            t = threading.Thread(target=notifier)
            t.start()
            assert cond.wait(5) is True
            assert r._recursion_count() == 2
        assert r._recursion_count() == 1
    t.join()
    assert state == [True]


# --- BoundedSemaphore ----------------------------------------------------------------

def test_bounded_semaphore_is_a_semaphore_with_async_forms():
    assert isinstance(sf.BoundedSemaphore(1), sf.Semaphore)
    assert issubclass(_c.BoundedSemaphore, _c.Semaphore)

    async def main():
        s = sf.BoundedSemaphore(1)
        assert await s.async_acquire() is True
        assert await s.async_acquire(timeout=0.01) is False
        s.release()
        async with s:
            assert s.value == 0
        with pytest.raises(ValueError):
            s.release()  # still bounded
        return s.value

    assert asyncio.run(main()) == 1


# --- a cancelled task's barrier arrival ------------------------------------------------

def thread_outcome(fn):
    out = []
    t = threading.Thread(target=lambda: out.append(outcome(fn)))
    t.start()
    t.join()
    return out[0]


@pytest.mark.parametrize("how", ["cancel", "timeout"])
def test_cancelled_barrier_arrival_is_gone_when_the_task_sees_it(how):
    """Once the task has seen its cancellation, its arrival is over (it
    broke the barrier, as a thread's time-out does): a lone thread cannot
    complete the phase with it, even before the loop turns again."""
    async def main():
        b = sf.Barrier(2)
        if how == "cancel":
            t = asyncio.create_task(b.async_wait())
            await asyncio.sleep(0.01)
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t
        else:
            with pytest.raises(TimeoutError):
                async with timeout(0.01):
                    await b.async_wait()
        return thread_outcome(lambda: b.wait(0.2)), b.broken

    assert asyncio.run(main()) == (threading.BrokenBarrierError, True)


def test_cancelled_lock_wait_holds_nothing_when_the_task_sees_it():
    async def main():
        lock, sem = sf.Lock(), sf.Semaphore(0)
        lock.acquire()
        tl = asyncio.create_task(lock.async_acquire())
        ts = asyncio.create_task(sem.async_acquire())
        await asyncio.sleep(0.01)
        lock.release()  # may be handed to the task: given back on cancel
        sem.release()
        tl.cancel()
        ts.cancel()
        for t in (tl, ts):
            try:
                await t
            except asyncio.CancelledError:
                pass
        assert tl.cancelled() and ts.cancelled()
        return thread_outcome(lambda: lock.acquire(False)), sem.value

    assert asyncio.run(main()) == (True, 1)


# --- KeyboardInterrupt in Barrier.wait --------------------------------------------------

def wait_blocking_alarm(b, out):
    """b.wait(10) on a thread that SIGALRM never lands on (it interrupts
    the main thread's wait only if the main thread takes it)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    out.append(outcome(lambda: b.wait(10)))


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach only the main thread")
def test_interrupted_barrier_wait_breaks_the_barrier():
    """The choice made (docstring, README): a signal handler that raises in
    Barrier.wait stops the arrival as a time-out would, and a stopped party
    breaks the barrier; threading withdraws the arrival instead."""
    b = sf.Barrier(3)
    other = []
    t = threading.Thread(target=wait_blocking_alarm, args=(b, other))
    t.start()
    while b.n_waiting < 1:
        time.sleep(0.001)

    def handler(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        with pytest.raises(KeyboardInterrupt):
            b.wait(10)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    t.join(10)
    assert other == [threading.BrokenBarrierError] and b.broken
    b.reset()
    assert not b.broken and b.n_waiting == 0


def test_overflowing_barrier_wait_breaks_the_barrier():
    """The same choice for OverflowError (a timeout past TIMEOUT_MAX): the
    arrival stops as a time-out would, and breaks the barrier."""
    b = sf.Barrier(2)
    with pytest.raises(OverflowError):
        b.wait(threading.TIMEOUT_MAX * 2)
    assert b.broken


# --- cycles ----------------------------------------------------------------------------

def test_cycles_through_a_condition_or_a_barrier_are_collected():
    """A lock that refers to its Condition, an action that refers to its
    Barrier: the collector frees them, as it frees threading's."""
    class Holder:
        def __init__(self):
            self.lock = threading.RLock()
            self.cond = sf.Condition(self)  # self is the lock: a cycle
            self.barrier = sf.Barrier(1, action=self.step)

        def acquire(self, *args):
            return self.lock.acquire(*args)

        def release(self):
            self.lock.release()

        def step(self):
            pass

    h = Holder()
    with h.cond:
        assert h.barrier.wait(1) == 0
    refs = [weakref.ref(h), weakref.ref(h.cond), weakref.ref(h.barrier)]
    del h
    gc.collect()
    assert [r() for r in refs] == [None, None, None]


def test_condition_over_threading_rlock_held_twice():
    """Over threading's RLock, wait() releases every level (the lock's
    _release_save), lets the notifier in, and restores them."""
    r = threading.RLock()
    c = sf.Condition(r)
    took = []

    def notifier():
        took.append(r.acquire(timeout=5))
        if took[0]:
            c.notify()
            r.release()

    with c, c:
        t = threading.Thread(target=notifier)
        t.start()
        assert c.wait(5) is True
        r.release()  # two levels are back: one release leaves it held
        assert r._is_owned()
        r.acquire()
    assert not r._is_owned()
    t.join()
    assert took == [True]


class Interrupted(Exception):
    pass


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach only the main thread")
@pytest.mark.parametrize("raises", [True, False], ids=["raises", "returns"])
def test_signal_in_a_condition_wait_over_any_lock(raises):
    """Over a lock that is not squarefree's: a handler that raises stops
    the wait with the lock held again; one that returns is no wake-up."""
    def handler(signum, frame):
        if raises:
            raise Interrupted

    lock = threading.Lock()
    c = sf.Condition(lock)
    old = signal.signal(signal.SIGALRM, handler)
    try:
        with c:
            signal.setitimer(signal.ITIMER_REAL, 0.02)
            begin = time.monotonic()
            if raises:
                with pytest.raises(Interrupted):
                    c.wait(5)
                assert time.monotonic() - begin < 2
            else:
                assert c.wait(0.3) is False
                assert time.monotonic() - begin >= 0.25
            assert lock.locked()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert not lock.locked()
    with c:  # nothing left behind: a notification still reaches a waiter
        t = threading.Thread(target=lambda: (lock.acquire(), c.notify(), lock.release()))
        t.start()
        assert c.wait(5) is True
    t.join()
