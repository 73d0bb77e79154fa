"""The squarefree module: threading's semantics for the drop-in classes, the
seed's cures, bad input, interruption by a signal, and stress with many
threads (permits conserved, everyone woken)."""
import signal
import threading
import time

import pytest

import squarefree as sf


def start(fn, n):
    ts = [threading.Thread(target=fn) for _ in range(n)]
    for t in ts:
        t.start()
    return ts


def join_all(ts, timeout=20.0):
    stop = time.monotonic() + timeout
    for t in ts:
        t.join(max(0.0, stop - time.monotonic()))
    assert not any(t.is_alive() for t in ts), "a thread is still blocked (a lost wake-up?)"


# --- Event ---------------------------------------------------------------------------

def test_event_basics():
    e = sf.Event()
    assert not e.is_set()
    assert e.wait(0) is False
    assert e.wait(0.01) is False
    e.set()
    assert e.is_set()
    assert e.wait() is True
    assert e.wait(0) is True
    e.clear()
    assert not e.is_set()
    assert e.wait(0.01) is False


def test_event_wakes_every_waiter():
    e = sf.Event()
    woke = []
    ts = start(lambda: woke.append(e.wait(10)), 200)
    time.sleep(0.05)
    e.set()
    join_all(ts)
    assert woke == [True] * 200


def test_event_bad_timeout():
    e = sf.Event()
    assert e.wait(-1) is False  # as threading's: a timeout that has passed
    with pytest.raises(ValueError):
        e.wait(float("nan"))
    with pytest.raises(TypeError):
        e.wait("soon")
    with pytest.raises(TypeError):
        sf.Event(1)


# --- Latch ---------------------------------------------------------------------------

def test_latch_opens_at_zero():
    la = sf.Latch(3)
    assert la.wait(0) is False
    la.count_down()
    la.count_down(2)
    assert la.wait(0) is True
    assert la.wait() is True
    assert sf.Latch(0).wait(0) is True


def test_latch_bad_input():
    with pytest.raises(ValueError):
        sf.Latch(-1)
    la = sf.Latch(2)
    with pytest.raises(ValueError):
        la.count_down(0)
    with pytest.raises(ValueError):
        la.count_down(-3)
    with pytest.raises(ValueError):
        la.count_down(3)  # below zero: nothing changes
    assert la.wait(0) is False
    la.count_down(2)
    assert la.wait(0) is True


def test_latch_1000_threads():
    n = 1000
    la = sf.Latch(n)
    gate = sf.Latch(1)
    passed = []

    def worker():
        la.count_down()
        gate.wait()
        passed.append(1)

    ts = start(worker, n)
    assert la.wait(20) is True
    gate.count_down()
    join_all(ts)
    assert len(passed) == n


@pytest.mark.parametrize("kind", ["event", "countdown", "semaphore"])
def test_1000_threads_woken_by_one_call(kind):
    """1,000 threads asleep on one Event, CountdownEvent or Semaphore, all
    woken by one call (set, down, release(n)); a lost wake-up leaves one
    asleep (join_all fails), a duplicated permit shows in the count."""
    n = 1000
    arrived = sf.CountdownEvent(n)
    obj = {"event": sf.Event, "countdown": lambda: sf.CountdownEvent(1),
           "semaphore": lambda: sf.Semaphore(0)}[kind]()
    wait = obj.acquire if kind == "semaphore" else obj.wait
    got = []

    def worker():
        arrived.down()
        got.append(wait(timeout=30))

    ts = start(worker, n)
    assert arrived.wait(20)
    time.sleep(0.05)  # most are asleep now
    if kind == "event":
        obj.set()
    elif kind == "countdown":
        obj.down()
    else:
        obj.release(n + 5)  # five more permits than sleepers: they must stay
    join_all(ts, 40)
    assert got == [True] * n
    if kind == "semaphore":
        assert obj.value == 5


def test_latch_abort():
    la = sf.Latch(1)
    errors = []

    def waiter():
        try:
            la.wait()
        except sf.BrokenLatchError:
            errors.append(1)

    ts = start(waiter, 10)
    time.sleep(0.05)
    la.abort()
    join_all(ts)
    assert len(errors) == 10
    with pytest.raises(sf.BrokenLatchError):
        la.wait(0)
    with pytest.raises(sf.BrokenLatchError):
        la.count_down()


def test_latch_arrive_and_wait():
    la = sf.Latch(4)
    ts = start(la.arrive_and_wait, 4)
    join_all(ts)
    assert la.wait(0) is True


# --- CountdownEvent ----------------------------------------------------------------

def test_countdown():
    c = sf.CountdownEvent()
    assert c.value == 0 and c.wait(0) is True
    c.up(3)
    assert c.value == 3 and c.wait(0.01) is False
    c.down()
    c.down(2)
    assert c.value == 0 and c.wait() is True
    with pytest.raises(ValueError):
        c.down()  # below zero: nothing changes
    assert c.value == 0
    with pytest.raises(ValueError):
        sf.CountdownEvent(-1)
    with pytest.raises(ValueError):
        c.up(0)


def test_countdown_serialises_unknown_n():
    """The seed's S2 cure: each thread ups before it starts, downs when done."""
    c = sf.CountdownEvent()
    lock = threading.Lock()
    total = [0]

    def worker():
        with lock:
            total[0] += 1
        c.down()

    ts = []
    for _ in range(300):
        c.up()
        ts.append(threading.Thread(target=worker))
        ts[-1].start()
    assert c.wait(20) is True
    join_all(ts)
    assert total[0] == 300 and c.value == 0


# --- Semaphore, BoundedSemaphore ---------------------------------------------------------

def test_semaphore_basics():
    s = sf.Semaphore(2)
    assert s.acquire() and s.acquire(blocking=False)
    assert s.acquire(blocking=False) is False
    assert s.acquire(timeout=0.01) is False
    s.release()
    assert s.acquire(timeout=1) is True
    s.release(2)
    assert s.value == 2
    with s:
        assert s.value == 1
    assert s.value == 2


def test_semaphore_bad_input():
    with pytest.raises(ValueError):
        sf.Semaphore(-1)
    s = sf.Semaphore(0)
    with pytest.raises(ValueError):
        s.acquire(False, 1)
    assert s.acquire(timeout=-1) is False  # as threading's: a timeout that has passed
    with pytest.raises(ValueError):
        s.release(0)
    with pytest.raises(ValueError):
        s.release(-2)
    assert s.value == 0  # nothing changed


def test_bounded_semaphore():
    b = sf.BoundedSemaphore(2)
    with pytest.raises(ValueError):
        b.release()
    assert b.acquire()
    b.release()
    with pytest.raises(ValueError):
        b.release()
    assert b.value == 2
    z = sf.BoundedSemaphore(0)
    with pytest.raises(ValueError):
        z.release()
    assert z.value == 0


def test_semaphore_release_n_wakes_n():
    s = sf.Semaphore(0)
    got = []
    ts = start(lambda: got.append(s.acquire(timeout=20)), 100)
    time.sleep(0.05)
    s.release(100)
    join_all(ts)
    assert got == [True] * 100 and s.value == 0


def test_semaphore_permits_conserved():
    """8 threads, 3 permits, timed and untimed acquires racing releases:
    never more than 3 holders, and all 3 permits back at the end."""
    s = sf.Semaphore(3)
    lock = threading.Lock()
    holders = [0]
    worst = [0]

    def worker(i):
        for k in range(2000):
            ok = s.acquire(timeout=0.0005) if (i + k) % 3 == 0 else s.acquire()
            if not ok:
                continue
            with lock:
                holders[0] += 1
                worst[0] = max(worst[0], holders[0])
            with lock:
                holders[0] -= 1
            s.release()

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    join_all(ts, 60)
    assert worst[0] <= 3
    assert s.value == 3


# --- interruption by a signal --------------------------------------------------------

class Interrupted(Exception):
    pass


def interrupt_main_after(seconds):
    main = threading.main_thread().ident

    def fire():
        time.sleep(seconds)
        signal.pthread_kill(main, signal.SIGUSR1)

    t = threading.Thread(target=fire)
    t.start()
    return t


@pytest.fixture
def usr1_raises():
    def handler(signum, frame):
        raise Interrupted()

    old = signal.signal(signal.SIGUSR1, handler)
    yield
    signal.signal(signal.SIGUSR1, old)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach only the main thread")
def test_signal_interrupts_waits(usr1_raises):
    e, la, c, s = sf.Event(), sf.Latch(1), sf.CountdownEvent(1), sf.Semaphore(0)
    for wait in (e.wait, la.wait, c.wait, lambda timeout: s.acquire(timeout=timeout)):
        t = interrupt_main_after(0.05)
        begin = time.monotonic()
        with pytest.raises(Interrupted):
            wait(timeout=5)  # returns False after 5 s if the signal is not seen
        t.join()
        assert time.monotonic() - begin < 2  # not after the 5 s time-out
    # The interrupted waits left nothing behind: a permit released now is
    # taken by the next acquire, and the others still open as usual.
    s.release()
    assert s.acquire(timeout=1) is True and s.value == 0
    e.set()
    la.count_down()
    c.down()
    assert e.wait(0) and la.wait(0) and c.wait(0)


@pytest.fixture
def usr1_ignored():
    old = signal.signal(signal.SIGUSR1, lambda *args: None)
    yield
    signal.signal(signal.SIGUSR1, old)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach only the main thread")
def test_signal_that_does_not_raise_is_no_wake_up(usr1_ignored):
    """A handler that returns is no event: every wait sleeps on to its
    time-out, as threading's do (a Condition once returned True at once)."""
    cond = sf.Condition()
    e, la, c, s = sf.Event(), sf.Latch(1), sf.CountdownEvent(1), sf.Semaphore(0)

    def cond_wait(timeout):
        with cond:
            return cond.wait(timeout)

    for wait in (cond_wait, e.wait, la.wait, c.wait,
                 lambda timeout: s.acquire(timeout=timeout)):
        t = interrupt_main_after(0.02)
        begin = time.monotonic()
        assert wait(timeout=0.3) is False
        t.join()
        assert time.monotonic() - begin >= 0.25
    assert s.value == 0 and not e.is_set()


# --- Lock, RLock ---------------------------------------------------------------------

def test_lock_basics():
    lk = sf.Lock()
    assert not lk.locked()
    assert lk.acquire() is True and lk.locked()
    assert lk.acquire(False) is False
    assert lk.acquire(timeout=0.01) is False
    lk.release()
    assert not lk.locked()
    with pytest.raises(RuntimeError):
        lk.release()
    with lk:
        assert lk.locked()
    assert not lk.locked()
    assert lk.acquire(True, -1) is True
    lk.release()


def test_lock_bad_input():
    lk = sf.Lock()
    with pytest.raises(ValueError):
        lk.acquire(False, 1)
    with pytest.raises(ValueError):
        lk.acquire(timeout=-2)
    with pytest.raises(ValueError):
        lk.acquire(timeout=float("nan"))
    with pytest.raises(TypeError):
        lk.acquire(timeout="1")
    assert not lk.locked()  # nothing changed


def test_lock_released_by_another_thread():
    lk = sf.Lock()
    lk.acquire()
    t = threading.Thread(target=lk.release)
    t.start()
    t.join()
    assert not lk.locked()


def test_lock_mutual_exclusion():
    lk = sf.Lock()
    inside = [0]
    worst = [0]
    total = [0]

    def worker():
        for _ in range(3000):
            with lk:
                inside[0] += 1
                worst[0] = max(worst[0], inside[0])
                v = total[0]
                if v % 7 == 0:
                    time.sleep(0)  # invite a switch inside the critical section
                total[0] = v + 1
                inside[0] -= 1

    ts = start(worker, 8)
    join_all(ts, 60)
    assert worst[0] == 1 and total[0] == 8 * 3000 and not lk.locked()


def test_rlock():
    r = sf.RLock()
    assert r.acquire() and r.acquire() and r.acquire(False)
    assert r._is_owned()
    other = []
    t = threading.Thread(target=lambda: other.append(r.acquire(timeout=0.02)))
    t.start()
    t.join()
    assert other == [False]
    t = threading.Thread(target=lambda: other.append(pytest.raises(RuntimeError, r.release)))
    t.start()
    t.join()
    r.release()
    r.release()
    r.release()
    assert not r._is_owned()
    with pytest.raises(RuntimeError):
        r.release()
    with r:
        with r:
            assert r._is_owned()
    assert not r._is_owned()
    got = []
    t = threading.Thread(target=lambda: got.append(r.acquire(timeout=5)) or r.release())
    t.start()
    t.join()
    assert got == [True]


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach only the main thread")
def test_signal_interrupts_lock(usr1_raises):
    lk = sf.Lock()
    lk.acquire()
    t = interrupt_main_after(0.05)
    begin = time.monotonic()
    with pytest.raises(Interrupted):
        lk.acquire(timeout=5)
    t.join()
    assert time.monotonic() - begin < 2
    assert lk.locked()  # still ours: the interrupted acquire took nothing
    lk.release()
    assert lk.acquire(False) is True
    lk.release()


def test_fork_while_threads_wake():
    """A child forked while woken threads pass the turnstile that orders
    their return to the GIL can still wait and wake."""
    import os
    e = sf.Event()
    ts = start(lambda: e.wait(10), 50)
    time.sleep(0.02)
    e.set()  # the 50 are passing the turnstile now
    pid = os.fork()
    if pid == 0:
        try:
            la = sf.Latch(1)
            t = threading.Thread(target=la.wait, args=(5,))
            t.start()
            time.sleep(0.01)
            la.count_down()
            t.join(5)
            os._exit(0 if not t.is_alive() else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    join_all(ts)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


# --- Condition -----------------------------------------------------------------------

def test_condition_basics():
    for lock in (None, sf.Lock(), sf.RLock(), threading.Lock(), threading.RLock()):
        c = sf.Condition(lock)
        with pytest.raises(RuntimeError):
            c.wait(0.01)
        with pytest.raises(RuntimeError):
            c.notify()
        with pytest.raises(RuntimeError):
            c.notify_all()
        with c:
            assert c.wait(0.01) is False  # timed out, lock held again
            assert c._is_owned()
            c.notify()
            c.notify_all()
        assert c.acquire(False) is True
        c.release()


def test_condition_notify_counts():
    c = sf.Condition()
    woke = []
    ready = sf.CountdownEvent(5)

    def waiter():
        with c:
            ready.down()
            woke.append(c.wait(10))

    ts = start(waiter, 5)
    assert ready.wait(10)
    time.sleep(0.05)  # all five asleep in wait()
    with c:
        c.notify(2)
    time.sleep(0.1)
    assert len(woke) == 2
    with c:
        c.notify_all()
    join_all(ts)
    assert woke == [True] * 5


def test_condition_rlock_released_entirely():
    r = sf.RLock()
    c = sf.Condition(r)
    got = []
    with c:
        with c:  # held twice
            t = threading.Thread(target=lambda: got.append(r.acquire(timeout=5)) or
                                 (c.notify(), r.release()))
            t.start()
            assert c.wait(5) is True  # the other thread got the lock meanwhile
            assert r._is_owned()
        assert r._is_owned()  # still once
    t.join()
    assert got == [True] and not r._is_owned()


def test_condition_wait_for_and_items():
    c = sf.Condition(sf.Lock())
    items = []
    consumed = [0]
    n = 2000

    def consumer():
        while True:
            with c:
                c.wait_for(lambda: items, 10)
                if not items:
                    return
                if items[0] is None:
                    return  # the end marker stays for the others
                items.pop(0)
                consumed[0] += 1

    ts = start(consumer, 4)
    for i in range(n):
        with c:
            items.append(i)
            c.notify()
    with c:
        items.append(None)  # after every item: consumers stop when it is first
        c.notify_all()
    join_all(ts)
    assert consumed[0] == n
    with c:
        assert c.wait_for(lambda: False, 0.01) is False


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach only the main thread")
def test_signal_interrupts_condition(usr1_raises):
    c = sf.Condition()
    with c:
        t = interrupt_main_after(0.05)
        with pytest.raises(Interrupted):
            c.wait(5)
        t.join()
        assert c._is_owned()  # held again after the interrupted wait
    assert not c._is_owned()


# --- Once ----------------------------------------------------------------------------

def test_once_runs_once():
    o = sf.Once()
    calls = []
    gate = sf.Event()

    def fn():
        calls.append(1)
        gate.wait(5)  # the others arrive meanwhile and wait

    ran = []
    ts = start(lambda: ran.append(o.run(fn)), 20)
    time.sleep(0.05)
    gate.set()
    join_all(ts)
    assert calls == [1] and sorted(ran) == [False] * 19 + [True]
    assert o.done() and o.run(fn) is False and calls == [1]


def test_once_retries_after_an_exception():
    o = sf.Once()
    attempts = []

    def flaky():
        attempts.append(1)
        if len(attempts) == 1:
            raise KeyError("first")

    with pytest.raises(KeyError):
        o.run(flaky)
    assert not o.done()
    assert o.run(flaky) is True and o.done() and len(attempts) == 2
    with pytest.raises(TypeError):
        o.run(42)


def test_once_reentry_is_an_error():
    o = sf.Once()
    inner = []

    def fn():
        with pytest.raises(RuntimeError):
            o.run(fn)
        inner.append(1)

    assert o.run(fn) is True and inner == [1]


# --- Barrier (threading.Barrier's semantics, as Lib/test/lock_tests.py checks them) ----

N = 5


def run_parties(fn, n=N):
    ts = start(fn, n)
    join_all(ts)


def test_barrier_phases_and_indices():
    b = sf.Barrier(N)
    indices, phases = [], []
    lock = threading.Lock()

    def party():
        for phase in range(3):
            i = b.wait(10)
            with lock:
                indices.append((phase, i))
            # Nobody may start phase+1 before all have finished phase.
            with lock:
                phases.append(phase)
            b.wait(10)
            with lock:  # everyone appended before anyone passed the barrier
                assert phases.count(phase) == N

    run_parties(party)
    for phase in range(3):
        assert sorted(i for p, i in indices if p == phase) == list(range(N))
    assert b.n_waiting == 0 and not b.broken and b.parties == N


def test_barrier_action_runs_once_per_phase_before_release():
    ran = []
    results = []
    b = sf.Barrier(N, action=lambda: ran.append(len(results)))

    def party():
        b.wait(10)
        results.append(True)  # after the action of this phase

    run_parties(party)
    assert ran == [0] and len(results) == N


def test_barrier_action_raising_breaks_it():
    class Boom(Exception):
        pass

    def action():
        raise Boom()

    b = sf.Barrier(N, action=action)
    outcome = []

    def party():
        try:
            b.wait(10)
            outcome.append("ok")
        except Boom:
            outcome.append("boom")
        except threading.BrokenBarrierError:
            outcome.append("broken")

    run_parties(party)
    assert sorted(outcome) == ["boom"] + ["broken"] * (N - 1)
    assert b.broken
    with pytest.raises(threading.BrokenBarrierError):
        b.wait(1)


def test_barrier_timeout_breaks_it():
    b = sf.Barrier(N)
    begin = time.monotonic()
    with pytest.raises(sf.BrokenBarrierError):
        b.wait(0.05)
    assert 0.04 < time.monotonic() - begin < 5
    assert b.broken
    with pytest.raises(threading.BrokenBarrierError):
        b.wait()  # at once: no hang


def test_barrier_default_timeout():
    b = sf.Barrier(2, timeout=0.05)
    with pytest.raises(threading.BrokenBarrierError):
        b.wait()
    assert b.broken


def test_barrier_abort_wakes_waiters():
    b = sf.Barrier(N)
    outcome = []

    def party():
        try:
            b.wait(10)
            outcome.append("ok")
        except threading.BrokenBarrierError:
            outcome.append("broken")

    ts = start(party, N - 1)
    deadline = time.monotonic() + 10
    while b.n_waiting < N - 1 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert b.n_waiting == N - 1
    b.abort()
    join_all(ts)
    assert outcome == ["broken"] * (N - 1)
    assert b.broken and b.n_waiting == 0


def test_barrier_reset():
    """As lock_tests' test_reset: one party resets while the others wait;
    they get BrokenBarrierError, then all pass the barrier again."""
    b = sf.Barrier(N)
    broken, passed = [], []
    lock = threading.Lock()

    def party():
        i = b.wait(10)
        if i == N // 2:
            deadline = time.monotonic() + 10
            while b.n_waiting < N - 1 and time.monotonic() < deadline:
                time.sleep(0.001)
            b.reset()
        else:
            try:
                b.wait(10)
            except threading.BrokenBarrierError:
                with lock:
                    broken.append(True)
        b.wait(10)  # the barrier works again
        with lock:
            passed.append(True)

    run_parties(party)
    assert len(broken) == N - 1 and len(passed) == N
    assert not b.broken


def test_barrier_reset_repairs_a_broken_one():
    b = sf.Barrier(2)
    b.abort()
    assert b.broken
    b.reset()
    assert not b.broken
    run_parties(lambda: b.wait(10), 2)


def test_barrier_bad_input():
    with pytest.raises(ValueError):
        sf.Barrier(0)
    with pytest.raises(ValueError):
        sf.Barrier(-3)
    with pytest.raises(TypeError):
        sf.Barrier(2, action=42)
    with pytest.raises(ValueError):
        sf.Barrier(2, timeout=float("nan"))
    b = sf.Barrier(2)
    with pytest.raises(ValueError):
        b.wait(float("nan"))
    assert not b.broken  # bad input changes nothing

    def action():
        b.wait(1)

    b2 = sf.Barrier(1, action=lambda: b2.wait(1))
    with pytest.raises(RuntimeError):
        b2.wait(1)  # from its own action: an error, not a deadlock


def test_barrier_1000_threads_one_phase():
    n = 1000
    b = sf.Barrier(n)
    got = []
    run_parties(lambda: got.append(b.wait(30)), n)
    assert sorted(got) == list(range(n))


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach only the main thread")
def test_signal_interrupts_barrier(usr1_raises):
    b = sf.Barrier(2)
    t = interrupt_main_after(0.05)
    with pytest.raises(Interrupted):
        b.wait(5)
    t.join()
    assert b.broken  # a party that left breaks the phase, as a time-out does


def test_waiters_keep_their_object_alive():
    """Every reference to a primitive dropped while threads wait on it:
    their calls hold it, so it stays valid until they return (here by
    their time-out), and it goes once they have."""
    import gc
    import weakref

    got = []
    waiting = sf.CountdownEvent(20)
    ev = sf.Event()
    ev_ref = weakref.ref(ev)  # weak references work, as on threading's

    def waiter(ev):
        waiting.down()
        got.append(ev.wait(0.3))

    ts = [threading.Thread(target=waiter, args=(ev,)) for _ in range(20)]
    for t in ts:
        t.start()
    assert waiting.wait(10)
    time.sleep(0.02)
    del ev
    for t in ts:  # the Thread objects hold the argument: drop it there too
        t._args = ()
    gc.collect()
    assert ev_ref() is not None  # only the waiting calls hold it now
    join_all(ts)
    assert got == [False] * 20
    gc.collect()
    assert ev_ref() is None
