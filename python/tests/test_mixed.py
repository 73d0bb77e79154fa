"""Every kind of waiter in one process on one object: threads, asyncio
tasks, trio tasks, gevent greenlets and eventlet greenlets, each library in
a thread of its own.  One Event.set wakes them all, and (with the io_uring
loop backend, whose waits sit in the kernel's futex queue beside the
threads) costs the setter exactly one system call: a FUTEX_WAKE, counted
with strace.  A Semaphore's permits, given out one at a time by a thread,
reach every kind of waiter exactly once each."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import require

require("trio", "gevent", "eventlet", module_level=True)

# The program: N waiters of each kind block on one Event; once all are
# counted in, the main thread marks the trace (getppid, which glibc never
# caches), sets the event, and marks again.  Then it hands one permit per
# waiter of a Semaphore, one release at a time, and checks each was taken
# once.
PROGRAM = textwrap.dedent(r"""
    import asyncio, os, sys, threading, time
    import eventlet, gevent, trio
    import squarefree

    N = 3
    KINDS = ["thread", "asyncio", "trio", "gevent", "eventlet"]
    ev = squarefree.Event()
    sem = squarefree.Semaphore(0)
    ready = squarefree.CountdownEvent(N * len(KINDS))
    woken = squarefree.CountdownEvent(N * len(KINDS))
    got = {k: 0 for k in KINDS}
    lock = threading.Lock()

    def took(kind):
        with lock:
            got[kind] += 1

    def blocking(kind):  # a thread's or a greenlet's waiter
        ready.down()
        assert ev.wait(60)
        woken.down()
        assert sem.acquire(timeout=60)
        took(kind)

    async def a_waiter(kind):
        ready.down()
        assert await ev.async_wait(60)
        woken.down()
        assert await sem.async_acquire(timeout=60)
        took(kind)

    def asyncio_side():
        async def main():
            await asyncio.gather(*(a_waiter("asyncio") for _ in range(N)))
        asyncio.run(main())

    def trio_side():
        async def main():
            async with trio.open_nursery() as nursery:
                for _ in range(N):
                    nursery.start_soon(a_waiter, "trio")
        trio.run(main)

    def gevent_side():
        gevent.joinall([gevent.spawn(blocking, "gevent") for _ in range(N)], raise_error=True)

    def eventlet_side():
        for g in [eventlet.spawn(blocking, "eventlet") for _ in range(N)]:
            g.wait()

    sides = [threading.Thread(target=blocking, args=("thread",)) for _ in range(N)]
    sides += [threading.Thread(target=f)
              for f in (asyncio_side, trio_side, gevent_side, eventlet_side)]
    for t in sides:
        t.start()
    assert ready.wait(60)
    time.sleep(0.5)  # let the last counted waiters reach their sleep
    sys.setswitchinterval(30)  # no GIL hand-over between the marks
    print("setter", threading.get_native_id(), flush=True)
    os.getppid()
    ev.set()
    os.getppid()
    sys.setswitchinterval(0.005)
    assert woken.wait(60)
    for _ in range(N * len(KINDS)):
        sem.release()
    for t in sides:
        t.join(60)
        assert not t.is_alive()
    assert got == {k: N for k in KINDS}, got
    print("ok", flush=True)
""")


def run(env_extra, strace_to=None):
    env = dict(os.environ, **env_extra)
    cmd = [sys.executable, "-c", PROGRAM]
    if strace_to:
        cmd = ["strace", "-f", "-qq", "-e", "trace=futex,getppid", "-o", strace_to] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines()[-1] == "ok"
    return out.stdout


@pytest.mark.parametrize("backend", ["uring", "fallback"])
def test_every_kind_of_waiter_on_one_object(backend):
    run({"SQF_LOOP_BACKEND": backend})


def test_one_wake_all_is_one_system_call(tmp_path):
    from squarefree import _squarefree as _c
    os.environ["SQF_LOOP_BACKEND"] = "uring"
    try:
        backend = _c._LoopDriver().backend
    except OSError:
        backend = None
    finally:
        del os.environ["SQF_LOOP_BACKEND"]
    if backend != "io_uring":
        pytest.skip("the io_uring loop backend is not available here: the fallback's wake "
                    "adds an eventfd write per loop (loop.h)")
    if not shutil.which("strace"):
        pytest.fail("strace is missing (Debian: strace, in scripts/deps.sh)")
    trace = tmp_path / "trace"
    out = run({"SQF_LOOP_BACKEND": "uring"}, str(trace))
    setter = out.split("setter ")[1].split()[0]
    lines = [ln for ln in trace.read_text().splitlines() if ln.split(" ", 1)[0] == setter]
    # (strace splits a call that another thread's interrupts: "futex(...
    # <unfinished ...>", then "<... futex resumed>"; only the first names it.)
    marks = [i for i, ln in enumerate(lines) if "getppid(" in ln and "resumed" not in ln]
    assert len(marks) == 2, lines
    between = [ln for ln in lines[marks[0] + 1:marks[1]] if "resumed>" not in ln]
    assert len(between) == 1 and "FUTEX_WAKE" in between[0], between
