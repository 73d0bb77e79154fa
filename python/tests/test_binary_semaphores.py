"""BinarySemaphore and BoundedBinarySemaphore: values 0 and 1 only, a
release at 1 kept at 1 (or ValueError when bounded), and threads and tasks
on one binary semaphore excluding each other."""
import asyncio

import pytest

import squarefree as sf
from together import run_together


@pytest.mark.parametrize("cls", [sf.BinarySemaphore, sf.BoundedBinarySemaphore])
def test_values(cls):
    s = cls()
    assert s.value == 1 and isinstance(s, sf.Semaphore)
    assert s.acquire() is True and s.value == 0
    assert s.acquire(timeout=0.01) is False
    s.release()
    assert s.value == 1
    assert cls(0).value == 0
    for bad in (-1, 2):
        with pytest.raises(ValueError):
            cls(bad)
    with pytest.raises(ValueError):
        s.release(2)
    with s:
        assert s.value == 0
    assert s.value == 1


def test_release_at_one():
    s = sf.BinarySemaphore(0)
    s.release()
    s.release()  # merges with the first
    assert s.value == 1
    assert s.acquire(blocking=False) and not s.acquire(blocking=False)
    b = sf.BoundedBinarySemaphore()
    with pytest.raises(ValueError, match="released too many times"):
        b.release()
    assert b.value == 1  # the failed release changed nothing


@pytest.mark.parametrize("cls", [sf.BinarySemaphore, sf.BoundedBinarySemaphore])
def test_threads_and_tasks_exclude_each_other(cls):
    s = cls()
    state = {"inside": 0, "bad": 0, "count": 0}

    def critical():
        state["inside"] += 1
        state["bad"] += state["inside"] != 1
        state["count"] += 1
        state["inside"] -= 1

    def thread_main():
        for _ in range(300):
            with s:
                critical()

    async def loop_main():
        async def task():
            for _ in range(300):
                async with s:
                    critical()
                    await asyncio.sleep(0)
            assert await s.async_acquire(timeout=5) is True
            s.release()
        await asyncio.gather(*(task() for _ in range(3)))

    run_together(thread_main, [()] * 3, loop_main, [()])
    assert state["bad"] == 0 and state["count"] == 6 * 300 and s.value == 1
