"""Flag and ResourceGuard (aiologic's, non-blocking): their methods and
return values, and many threads and tasks racing on one object: exactly
one setter wins a Flag, and a ResourceGuard never lets two in at once."""
import asyncio
import threading

import pytest

import squarefree as sf
from together import run_together


def test_flag():
    f = sf.Flag()
    assert not f and repr(f) == "squarefree.Flag()"
    with pytest.raises(LookupError):
        f.get()
    assert f.get(None) is None and f.get(default_factory=list) == []
    assert f.set("a") is True and f and f.get() == "a"
    assert f.set("b") is False and f.get() == "a"  # the first setter's marker stays
    assert f.set("a") is True  # this very marker: True
    assert f.set() is False and repr(f) == "squarefree.Flag('a')"
    f.clear()
    assert not f and f.get(1) == 1
    assert f.set() is True  # a new marker of its own
    marker = f.get()
    assert f.set(marker) is True and f.set() is False
    assert sf.Flag(0).get() == 0 and sf.Flag(None)  # set from the start, even to falsy


def test_flag_as_aiologic():
    """aiologic's own cases: the constructor's marker (positional or
    keyword, None a marker too), repr, and no attributes but its own."""
    assert sf.Flag(None).get() is None and sf.Flag(marker="m").get() == "m"
    assert repr(sf.Flag(None)) == "squarefree.Flag(None)"
    assert repr(sf.Flag(marker="m")) == "squarefree.Flag('m')"
    assert sf.Flag() != sf.Flag() and sf.Flag(None) != sf.Flag(None)
    f = sf.Flag()
    with pytest.raises(AttributeError):
        f.other = 42
    marker = object()
    f.set(marker)
    assert f.get() is marker and f.get(default_factory=list) is marker
    f.clear()
    f.clear()  # twice: still unset
    assert not f


def test_flag_one_winner_among_threads():
    for _ in range(20):
        f = sf.Flag()
        start = threading.Barrier(8)
        wins = []

        def racer(i):
            start.wait()
            if f.set(i):
                wins.append(i)

        ts = [threading.Thread(target=racer, args=(i,)) for i in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert len(wins) == 1 and f.get() == wins[0]


def test_resource_guard():
    g = sf.ResourceGuard()
    assert not g and g.action == "using" and "unlocked" in repr(g)
    with g as entered:
        assert entered is g and g and "locked" in repr(g)
        with pytest.raises(sf.BusyResourceError,
                           match="another task is already using this resource"):
            with g:
                pass
        assert g  # the failed entry changed nothing
    assert not g
    with pytest.raises(TypeError):
        sf.ResourceGuard("reading")  # action is keyword-only, as aiologic
    r = sf.ResourceGuard(action="reading")
    with r, pytest.raises(sf.BusyResourceError, match="already reading"):
        r.__enter__()
    assert issubclass(sf.BusyResourceError, RuntimeError)


def test_resource_guard_excludes_threads_and_tasks():
    g = sf.ResourceGuard()
    state = {"inside": 0, "bad": 0, "busy": 0, "used": 0}
    lock = threading.Lock()

    def use():
        try:
            with g:
                with lock:
                    state["inside"] += 1
                    state["bad"] += state["inside"] != 1
                    state["used"] += 1
                with lock:
                    state["inside"] -= 1
        except sf.BusyResourceError:
            with lock:
                state["busy"] += 1

    def thread_main():
        for _ in range(2000):
            use()

    async def loop_main():
        async def task():
            for _ in range(500):
                use()
                await asyncio.sleep(0)
        await asyncio.gather(*(task() for _ in range(4)))

    run_together(thread_main, [()] * 3, loop_main, [()])
    assert state["bad"] == 0 and state["inside"] == 0
    assert state["used"] + state["busy"] == 3 * 2000 + 4 * 500
    assert not g
