"""squarefree's primitives shared between processes: made with shared=True
(or in a SharedMemory, an mmap, a buffer), inherited by fork, pickled to
spawn and forkserver children; exclusion, permits and wake-alls across
processes, threads and asyncio tasks of several processes on one object,
a waiter killed while asleep, a RobustLock's holder killed, and nothing
left in /dev/shm.  Every wait has a generous timeout that guards a hang;
nothing is timed."""
import asyncio
import contextlib
import gc
import mmap
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import squarefree as sf

METHODS = ["fork", "spawn", "forkserver"]
LONG = 60.0  # a hang guard, never a measure


def ctx_of(method):
    import multiprocessing
    return multiprocessing.get_context(method)


def shm_names(pids=None):
    """The module's blocks in /dev/shm, of the given processes (all if None)."""
    names = [n for n in os.listdir("/dev/shm") if n.startswith("squarefree")]
    if pids is None:
        return names
    return [n for n in names if any(n.startswith("squarefree-%d-" % p) for p in pids)]


@contextlib.contextmanager
def processes(ctx, target, args_list):
    """One started process per args tuple; any still alive at the end is killed."""
    ps = [ctx.Process(target=target, args=args) for args in args_list]
    for p in ps:
        p.start()
    try:
        yield ps
    finally:
        for p in ps:
            if p.is_alive():
                p.kill()
                p.join()


def joined(ps):
    """Join them (a hang guard): every exit code is 0."""
    stop = time.monotonic() + 2 * LONG
    for p in ps:
        p.join(max(0.0, stop - time.monotonic()))
    assert not any(p.is_alive() for p in ps), "a process is still blocked (a lost wake-up?)"
    assert [p.exitcode for p in ps] == [0] * len(ps)


def notify_until_gone(cond, ps):
    """A notify reaches only the waiters asleep by then: notify all until the
    processes have left (each exits after one wake-up)."""
    deadline = time.monotonic() + LONG
    while any(p.is_alive() for p in ps) and time.monotonic() < deadline:
        with cond:
            cond.notify_all()
        time.sleep(0.05)


def run(ctx, target, args_list):
    """Start one process per args tuple, join them; every exit code is 0."""
    with processes(ctx, target, args_list) as ps:
        joined(ps)


# --- exclusion: a counter in shared memory never loses an update ---------------------

def _count(lock, counter, rounds):
    for _ in range(rounds):
        if isinstance(lock, sf.RLock):
            with lock:
                with lock:  # reentrant within the process
                    v = counter.value
                    counter.value = v + 1
        else:
            with lock:
                v = counter.value
                counter.value = v + 1


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("kind", ["Lock", "RLock", "RobustLock"])
def test_exclusion(method, kind):
    ctx = ctx_of(method)
    lock = getattr(sf, kind)(shared=True)
    counter = ctx.RawValue("q", 0)
    run(ctx, _count, [(lock, counter, 2000)] * 4)
    assert counter.value == 4 * 2000
    assert not lock.locked() if kind != "RLock" else lock._recursion_count() == 0


# --- permits: never more holders than the semaphore's value ----------------------------

def _hold(sem, guard, holders, worst, rounds):
    for _ in range(rounds):
        assert sem.acquire(timeout=LONG)
        with guard:
            holders.value += 1
            worst.value = max(worst.value, holders.value)
        with guard:
            holders.value -= 1
        sem.release()


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("kind,value", [("Semaphore", 2), ("BoundedSemaphore", 3),
                                        ("BinarySemaphore", 1), ("BoundedBinarySemaphore", 1)])
def test_permits(method, kind, value):
    ctx = ctx_of(method)
    sem = getattr(sf, kind)(value, shared=True)
    guard = sf.Lock(shared=True)
    holders, worst = ctx.RawValue("q", 0), ctx.RawValue("q", 0)
    run(ctx, _hold, [(sem, guard, holders, worst, 1000)] * 4)
    assert 1 <= worst.value <= value
    assert holders.value == 0
    assert sem.value == value  # every permit back, none made


# --- one wake-all reaches every process --------------------------------------------------

def _wait_event(ready, ev):
    ready.count_down()
    assert ev.wait(LONG)


def _wait_latch(ready, latch):
    ready.count_down()
    assert latch.wait(LONG)


def _wait_countdown(ready, cd):
    ready.count_down()
    assert cd.wait(LONG)


def _wait_barrier(ready, barrier, indices):
    ready.count_down()
    i = barrier.wait(LONG)
    with indices.get_lock():
        indices.value |= 1 << i


def _wait_cond(ready, cond, flag):
    with cond:
        ready.count_down()  # under the lock: the notifier takes it after this wait began
        while not flag.value:
            assert cond.wait(LONG)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("kind", ["Event", "Latch", "CountdownEvent", "Barrier", "Condition"])
def test_wake_all(method, kind):
    ctx = ctx_of(method)
    n = 4
    ready = sf.Latch(n, shared=True)
    if kind == "Event":
        obj = sf.Event(shared=True)
        target, extra, fire = _wait_event, (), obj.set
    elif kind == "Latch":
        obj = sf.Latch(1, shared=True)
        target, extra, fire = _wait_latch, (), obj.count_down
    elif kind == "CountdownEvent":
        obj = sf.CountdownEvent(1, shared=True)
        target, extra, fire = _wait_countdown, (), obj.down
    elif kind == "Barrier":
        obj = sf.Barrier(n + 1, shared=True)
        indices = ctx.Value("q", 0)
        target, extra = _wait_barrier, (indices,)

        def fire():
            i = obj.wait(LONG)
            with indices.get_lock():
                indices.value |= 1 << i
    else:
        obj = sf.Condition(shared=True)
        flag = ctx.RawValue("q", 0)
        target, extra = _wait_cond, (flag,)

        def fire():
            with obj:
                flag.value = 1
                obj.notify_all()
    with processes(ctx, target, [(ready, obj) + extra] * n) as ps:
        assert ready.wait(LONG)
        fire()
        joined(ps)
    if kind == "Barrier":
        assert indices.value == (1 << (n + 1)) - 1  # each arrival index once


# --- threads and asyncio tasks of two processes on one object ------------------------------

def _threads_and_tasks(lock, counter, ev, ready, rounds):
    def thread():
        for _ in range(rounds):
            with lock:
                v = counter.value
                counter.value = v + 1
        assert ev.wait(LONG)

    async def task():
        for _ in range(rounds):
            async with lock:
                v = counter.value
                await asyncio.sleep(0)  # let another task try the lock meanwhile
                counter.value = v + 1
        assert await ev.async_wait(LONG)

    async def tasks():
        await asyncio.gather(task(), task())

    ts = [threading.Thread(target=thread) for _ in range(2)]
    for t in ts:
        t.start()
    ready.count_down()
    asyncio.run(tasks())
    for t in ts:
        t.join(LONG)
        assert not t.is_alive()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_threads_and_tasks_in_two_processes(method):
    ctx = ctx_of(method)
    lock, ev = sf.Lock(shared=True), sf.Event(shared=True)
    ready = sf.Latch(2, shared=True)
    counter = ctx.RawValue("q", 0)
    with processes(ctx, _threads_and_tasks, [(lock, counter, ev, ready, 300)] * 2) as ps:
        assert ready.wait(LONG)
        time.sleep(0.2)  # most tasks and threads asleep on the event (not required)
        ev.set()
        joined(ps)
    assert counter.value == 2 * 4 * 300


def _task_waits(obj, kind, ready):
    async def main():
        ready.count_down()
        if kind == "Semaphore":
            assert await obj.async_acquire(LONG)
        elif kind == "Condition":
            async with obj:
                assert await obj.async_wait(LONG)
        else:
            assert await obj.async_wait(LONG)
    asyncio.run(main())


@pytest.mark.parametrize("kind", ["Event", "Latch", "CountdownEvent", "Semaphore",
                                  "Condition"])
def test_tasks_of_other_processes_woken(kind):
    """asyncio tasks asleep in several processes (io_uring's futex waits on
    the shared word): one release or wake-all from this process reaches
    them all."""
    ctx = ctx_of("spawn")
    n = 3
    obj = {"Event": lambda: sf.Event(shared=True), "Latch": lambda: sf.Latch(1, shared=True),
           "CountdownEvent": lambda: sf.CountdownEvent(1, shared=True),
           "Semaphore": lambda: sf.Semaphore(0, shared=True),
           "Condition": lambda: sf.Condition(shared=True)}[kind]()
    ready = sf.Latch(n, shared=True)
    with processes(ctx, _task_waits, [(obj, kind, ready)] * n) as ps:
        assert ready.wait(LONG)
        time.sleep(0.3)  # the tasks asleep, most likely (not required but for Condition)
        if kind == "Event":
            obj.set()
        elif kind == "Latch":
            obj.count_down()
        elif kind == "CountdownEvent":
            obj.down()
        elif kind == "Semaphore":
            obj.release(n)
        else:
            notify_until_gone(obj, ps)
        joined(ps)


# --- a waiter killed while asleep ----------------------------------------------------------

def _sleep_on(kind, obj, ready):
    ready.count_down()
    if kind == "Event":
        assert obj.wait(LONG)
    elif kind == "Semaphore":
        assert obj.acquire(timeout=LONG)
    elif kind == "Lock":
        assert obj.acquire(timeout=LONG)
        obj.release()
    elif kind == "Condition":
        with obj:
            assert obj.wait(LONG)
    elif kind == "Barrier":
        obj.wait(LONG)


@pytest.mark.parametrize("kind", ["Event", "Semaphore", "Lock", "Condition", "Barrier"])
def test_waiter_killed_while_asleep(kind):
    """A process killed while it sleeps: the others are still woken, and
    nothing is lost (the killed one stays counted, as the C headers say)."""
    ctx = ctx_of("fork")
    n = 3
    obj = {"Event": lambda: sf.Event(shared=True),
           "Semaphore": lambda: sf.Semaphore(0, shared=True),
           "Lock": lambda: sf.Lock(shared=True),
           "Condition": lambda: sf.Condition(sf.Lock(shared=True), shared=True),
           "Barrier": lambda: sf.Barrier(n + 1, shared=True)}[kind]()
    if kind == "Lock":
        obj.acquire()
    ready = sf.Latch(n, shared=True)
    with processes(ctx, _sleep_on, [(kind, obj, ready)] * n) as ps:
        assert ready.wait(LONG)
        time.sleep(0.3)  # asleep, most likely: the test holds either way
        os.kill(ps[0].pid, signal.SIGKILL)
        ps[0].join(LONG)
        assert ps[0].exitcode == -signal.SIGKILL
        if kind == "Event":
            obj.set()
        elif kind == "Semaphore":
            obj.release(n - 1)  # one permit per live waiter
        elif kind == "Lock":
            obj.release()
        elif kind == "Condition":
            notify_until_gone(obj, ps[1:])
        elif kind == "Barrier":
            obj.wait(LONG)  # the dead party arrived before it died: this completes the phase
        joined(ps[1:])
    if kind == "Semaphore":
        assert obj.value == 0  # the dead waiter took no permit, the live ones one each
    if kind == "Lock":
        assert obj.acquire(timeout=LONG)  # free again: nobody lost the hand-off
        obj.release()


# --- RobustLock: a holder killed ------------------------------------------------------------

def _hold_forever(lock, ready):
    assert lock.acquire(timeout=LONG)
    ready.set()
    time.sleep(10 * LONG)


@pytest.mark.parametrize("method", METHODS)
def test_robust_holder_killed(method):
    ctx = ctx_of(method)
    lock = sf.RobustLock(shared=True)
    ready = sf.Event(shared=True)
    p = ctx.Process(target=_hold_forever, args=(lock, ready))
    p.start()
    try:
        assert ready.wait(LONG)
        assert lock.locked()
        assert not lock.acquire(blocking=False)
        os.kill(p.pid, signal.SIGKILL)
        p.join(LONG)
    finally:
        if p.is_alive():
            p.kill()
            p.join()
    with pytest.raises(sf.OwnerDiedError):
        lock.acquire(timeout=LONG)
    assert lock.locked()  # held by this thread now
    with pytest.raises(RuntimeError):
        lock.acquire(blocking=False)  # not reentrant: this thread holds it
    lock.consistent()
    lock.release()
    with lock:
        assert lock.locked()
    assert not lock.locked()


def test_robust_unrepaired_is_not_recoverable():
    ctx = ctx_of("fork")
    lock = sf.RobustLock(shared=True)
    ready = sf.Event(shared=True)
    p = ctx.Process(target=_hold_forever, args=(lock, ready))
    p.start()
    assert ready.wait(LONG)
    p.kill()
    p.join(LONG)
    with pytest.raises(sf.OwnerDiedError):
        lock.acquire()
    lock.release()  # without consistent(): unusable for good
    with pytest.raises(sf.LockNotRecoverableError):
        lock.acquire(timeout=LONG)
    with pytest.raises(RuntimeError):
        lock.consistent()  # not held


def test_robust_thread_exit_and_misuse():
    lock = sf.RobustLock()
    assert not lock.shared
    t = threading.Thread(target=lock.acquire)
    t.start()
    t.join(LONG)
    with pytest.raises(sf.OwnerDiedError):  # the thread exited holding it
        lock.acquire(timeout=LONG)
    lock.consistent()
    with pytest.raises(RuntimeError):
        lock.consistent()  # repaired already
    lock.release()
    with pytest.raises(RuntimeError):
        lock.release()  # not held
    assert lock.acquire(timeout=0.01)
    other = threading.Thread(target=lambda: results.append(lock.acquire(timeout=0.05)))
    results = []
    other.start()
    other.join(LONG)
    assert results == [False]
    lock.release()


# --- placement, attach, pickling ---------------------------------------------------------------

SHAREABLE = [lambda **k: sf.Lock(**k), lambda **k: sf.RLock(**k),
             lambda **k: sf.Semaphore(2, **k), lambda **k: sf.BoundedSemaphore(2, **k),
             lambda **k: sf.BinarySemaphore(**k), lambda **k: sf.BoundedBinarySemaphore(**k),
             lambda **k: sf.Event(**k), lambda **k: sf.Latch(2, **k),
             lambda **k: sf.CountdownEvent(2, **k), lambda **k: sf.Barrier(2, **k),
             lambda **k: sf.RobustLock(**k)]


@pytest.mark.parametrize("make", SHAREABLE)
def test_private_objects_refuse_to_pickle(make):
    import copy
    obj = make()
    assert not obj.shared
    with pytest.raises(TypeError, match="private"):
        pickle.dumps(obj)
    with pytest.raises(TypeError):
        copy.copy(obj)
    with pytest.raises(TypeError, match="private"):
        pickle.dumps(sf.Condition())


@pytest.mark.parametrize("make", SHAREABLE)
def test_shared_objects_pickle_by_name(make):
    obj = make(shared=True)
    assert obj.shared
    twin = pickle.loads(pickle.dumps(obj))
    assert type(twin) is type(obj) and twin.shared and twin is not obj
    assert repr(twin).split(" at ")[0] == repr(obj).split(" at ")[0]


def test_twin_shares_state():
    lock = sf.Lock(shared=True)
    twin = pickle.loads(pickle.dumps(lock))
    lock.acquire()
    assert twin.locked() and not twin.acquire(blocking=False)
    twin.release()
    assert not lock.locked()
    sem = sf.BoundedSemaphore(1, shared=True)
    stwin = pickle.loads(pickle.dumps(sem))
    with pytest.raises(ValueError):
        stwin.release()  # the bound is shared state
    cond = sf.Condition(shared=True)
    ctwin = pickle.loads(pickle.dumps(cond))
    assert ctwin._lock.shared
    b = sf.Barrier(2, action=print, timeout=5.0, shared=True)
    btwin = pickle.loads(pickle.dumps(b))
    assert btwin.parties == 2


def test_anonymous_mmap_is_fork_only():
    m = mmap.mmap(-1, 4096)
    lock = sf.Lock(shared=m, offset=64)
    assert lock.shared
    with pytest.raises(TypeError, match="fork"):
        pickle.dumps(lock)
    with pytest.raises(BufferError):
        m.close()  # exported while the lock lives
    counter = ctx_of("fork").RawValue("q", 0)
    run(ctx_of("fork"), _count, [(lock, counter, 1000)] * 3)
    assert counter.value == 3000
    del lock
    gc.collect()
    m.close()


def test_caller_memory_and_attach():
    from multiprocessing import shared_memory
    shm = shared_memory.SharedMemory(create=True, size=4096)
    try:
        size = sf.Semaphore.shared_size
        assert size % 8 == 0 and size > 0
        sem = sf.Semaphore(3, shared=shm, offset=0)
        ev = sf.Event(shared=shm.buf, offset=size)  # a plain buffer: no name
        again = sf.Semaphore.attach(shm, 0)
        assert again.value == 3 and again.acquire(blocking=False) and sem.value == 2
        assert sf.Event.attach(shm.buf, size).is_set() is False
        ev.set()
        assert sf.Event.attach(shm, size).is_set()
        twin = pickle.loads(pickle.dumps(sem))  # a SharedMemory has a name
        assert twin.value == 2
        with pytest.raises(TypeError, match="fork"):
            pickle.dumps(ev)
        with pytest.raises(ValueError, match="no"):
            sf.Lock.attach(shm, 0)  # a Semaphore lives there
        with pytest.raises(ValueError, match="aligned"):
            sf.Lock(shared=shm, offset=4)
        with pytest.raises(ValueError, match="bytes"):
            sf.Lock(shared=shm, offset=4096 - 8)
        with pytest.raises(ValueError):
            sf.Lock(shared=shm, offset=-8)
        with pytest.raises(ValueError, match="offset"):
            sf.Lock(shared=True, offset=0)
        with pytest.raises(ValueError, match="offset"):
            sf.Lock(offset=0)
        with pytest.raises(BufferError):
            sf.Lock(shared=b"read-only bytes")
        with pytest.raises(TypeError):
            sf.Lock.attach(True)
        with pytest.raises(TypeError, match="lock="):
            sf.Condition.attach(shm, 512)
        with pytest.raises(ValueError, match="shared"):
            sf.Condition(sf.Lock(), shared=True)  # a shared Condition needs a shared lock
        lock = sf.Lock(shared=shm, offset=512)
        cond = sf.Condition(lock, shared=shm, offset=1024)
        cond2 = sf.Condition.attach(shm, 1024, lock=sf.Lock.attach(shm, 512))
        assert cond2._lock.shared
        b = sf.Barrier(1, shared=shm, offset=2048)
        assert sf.Barrier.attach(shm, 2048, timeout=1.0).wait() == 0
        assert b.n_waiting == 0
        del sem, ev, again, twin, lock, cond, cond2, b
        gc.collect()
    finally:
        shm.close()
        shm.unlink()


def _use_attached(name, ready):
    from multiprocessing import shared_memory
    shm = shared_memory.SharedMemory(name=name)
    lock = sf.Lock.attach(shm, 0)
    ev = sf.Event.attach(shm, 64)
    with lock:
        ready.count_down()
    assert ev.wait(LONG)
    del lock, ev
    shm.close()


def test_attach_in_a_spawned_child():
    from multiprocessing import shared_memory
    shm = shared_memory.SharedMemory(create=True, size=4096)
    try:
        lock = sf.Lock(shared=shm, offset=0)
        ev = sf.Event(shared=shm, offset=64)
        ready = sf.Latch(1, shared=True)
        ctx = ctx_of("spawn")
        p = ctx.Process(target=_use_attached, args=(shm.name, ready))
        p.start()
        assert ready.wait(LONG)
        ev.set()
        p.join(LONG)
        assert p.exitcode == 0
        assert not lock.locked()
        del lock, ev
        gc.collect()
    finally:
        shm.close()
        shm.unlink()


def _child_of_fork(lock, out):
    out.value = 1 if not lock.acquire(blocking=False) else 2  # the parent holds it
    assert lock.acquire(timeout=LONG)  # until it lets go
    lock.release()


def test_lock_inherited_across_fork():
    lock = sf.Lock(shared=True)
    ctx = ctx_of("fork")
    out = ctx.RawValue("q", 0)
    lock.acquire()
    p = ctx.Process(target=_child_of_fork, args=(lock, out))
    p.start()
    deadline = time.monotonic() + LONG
    while out.value == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    lock.release()
    p.join(LONG)
    assert p.exitcode == 0 and out.value == 1
    lock._at_fork_reinit()  # a shared lock is left alone by it
    lock.acquire()
    lock._at_fork_reinit()
    assert lock.locked()
    lock.release()


def _rlock_owner(rlock, ready, go):
    with rlock:
        ready.set()
        assert go.wait(LONG)


def test_shared_rlock_owner_names_the_process():
    """A thread of another process holding a shared RLock is not this
    process's thread of the same ident."""
    rlock = sf.RLock(shared=True)
    ready, go = sf.Event(shared=True), sf.Event(shared=True)
    ctx = ctx_of("fork")
    p = ctx.Process(target=_rlock_owner, args=(rlock, ready, go))  # forked from this thread
    p.start()
    try:
        assert ready.wait(LONG)
        assert not rlock._is_owned() and rlock._recursion_count() == 0
        with pytest.raises(RuntimeError):
            rlock.release()
        assert not rlock.acquire(blocking=False)
        go.set()
        assert rlock.acquire(timeout=LONG)
        rlock.release()
        p.join(LONG)
        assert p.exitcode == 0
    finally:
        if p.is_alive():
            p.kill()
            p.join()


# --- the fallback loop backend --------------------------------------------------------------

def test_fallback_backend_refuses_shared_waits():
    script = textwrap.dedent("""
        import asyncio, errno, squarefree as sf
        async def main():
            lock = sf.Lock(shared=True)
            lock.acquire()
            try:
                await lock.async_acquire(1.0)
            except OSError as e:
                assert e.errno == errno.ENOTSUP, e
                print("ENOTSUP", e)
            else:
                raise AssertionError("waited")
            private = sf.Lock()
            private.acquire()
            assert await private.async_acquire(0.01) is False  # private waits still work
        asyncio.run(main())
    """)
    env = dict(os.environ, SQF_LOOP_BACKEND="fallback")
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                       timeout=LONG)
    assert r.returncode == 0, r.stderr
    assert "ENOTSUP" in r.stdout and "fallback" in r.stdout


# --- nothing left in /dev/shm ---------------------------------------------------------------

def test_no_block_left_after_a_run_with_a_killed_child(tmp_path):
    """A program that makes shared objects, hands them to spawn and fork
    children, has one SIGKILLed while it waits and one while it holds a
    RobustLock, keeps some objects to the end, and exits: none of its
    blocks (nor its children's) is left in /dev/shm."""
    script = textwrap.dedent("""
        import multiprocessing as mp, os, signal, sys, time
        import squarefree as sf

        def waiter(ev, ready):
            ready.count_down()
            ev.wait(60)

        def holder(lock, ready):
            lock.acquire()
            ready.count_down()
            time.sleep(600)

        def maker(pids):
            pids.put(os.getpid())
            keep = [sf.Event(shared=True) for _ in range(70)]  # two blocks of its own
            del keep[::2]

        if __name__ == "__main__":
            kept = [sf.Lock(shared=True) for _ in range(100)]  # more than one block
            ev, robust = sf.Event(shared=True), sf.RobustLock(shared=True)
            pids = [os.getpid()]
            for method in ("spawn", "fork"):
                ctx = mp.get_context(method)
                ready = sf.Latch(2, shared=True)
                w = ctx.Process(target=waiter, args=(ev, ready))
                h = ctx.Process(target=holder, args=(robust, ready))
                q = ctx.Queue()
                m = ctx.Process(target=maker, args=(q,))
                for p in (w, h, m):
                    p.start()
                pids += [w.pid, h.pid, m.pid]
                assert ready.wait(60)
                os.kill(w.pid, signal.SIGKILL)
                os.kill(h.pid, signal.SIGKILL)
                for p in (w, h, m):
                    p.join(60)
                assert m.exitcode == 0
                try:
                    robust.acquire(timeout=60)
                except sf.OwnerDiedError:
                    robust.consistent()
                robust.release()
            del kept[:50]
            print(" ".join(map(str, pids)))
            sys.stdout.flush()
    """)
    path = tmp_path / "program.py"  # spawn's children import the functions from a file
    path.write_text(script)
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                       timeout=4 * LONG)
    assert r.returncode == 0, r.stderr
    pids = [int(p) for p in r.stdout.split()]
    assert len(pids) == 7
    assert shm_names(pids) == []


def test_no_block_of_this_process_left():
    """Every shared object this module's tests made is gone: so are its
    blocks."""
    gc.collect()
    assert shm_names([os.getpid()]) == []
