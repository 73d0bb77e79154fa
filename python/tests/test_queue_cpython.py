"""CPython's own tests run against squarefree's queues:

- test.test_queue (the interpreter's) on Queue, LifoQueue, PriorityQueue
  and SimpleQueue, the way it tests queue's pure-Python and C queues: its
  mixins with ``queue`` set to a namespace that holds ours beside queue's
  Empty and Full;
- test.test_asyncio.test_queues on the queues' async_q views (janus's
  asyncio.Queue interface), its ``asyncio`` name bound to a namespace whose
  Queue, LifoQueue and PriorityQueue make ours.

Where a newer CPython's copies of these files are on this machine (3.13
and later: shutdown's tests), they run too, loaded from their files.  A
test that reads a CPython-private detail, or counts event-loop iterations
(see ASYNC_SKIPS), is skipped, named here with its reason."""
import asyncio
import glob
import importlib.util
import os
import types
import unittest

import pytest

import squarefree as sf
from squarefree._queue import _AsyncQueueView

try:
    from test import test_queue as cpython
    from test.test_asyncio import test_queues as cpython_asyncio
except ImportError as e:  # a failure, not a skip: the suite must run
    cpython = cpython_asyncio = None
    MISSING = e

    def test_cpython_test_queue_importable():
        pytest.fail("CPython's test.test_queue cannot be imported (%s): install Debian's "
                    "libpython3.11-testsuite" % MISSING)

# test.test_queue's tests skipped: none.
SKIPS = {}

_LATENCY = ("a task woken by another task of its loop runs after the loop's driver "
            "dispatches: an iteration or two later than asyncio.Queue's, which the test "
            "counts with sleep(0)")
_PRIVATE = "reads asyncio.Queue's private state (_getters, _putters, _format, repr)"
ASYNC_SKIPS = {
    "test_repr": _PRIVATE,
    "test_str": _PRIVATE,
    "test_format": _PRIVATE,
    "test_cancelled_getters_not_being_held_in_self_getters": _PRIVATE,
    "test_cancelled_puts_not_being_held_in_self_putters": _PRIVATE,
    "test_get_with_putters": _PRIVATE,
    "test_maxsize": _LATENCY,
    "test_put_cancelled_race": _LATENCY,
    "test_shutdown_empty": _LATENCY,
    "test_shutdown_nonempty": _LATENCY,
    "test_shutdown_immediate_with_unfinished": _LATENCY,
}

SQF = types.SimpleNamespace(Queue=sf.Queue, LifoQueue=sf.LifoQueue,
                            PriorityQueue=sf.PriorityQueue, SimpleQueue=sf.SimpleQueue,
                            Empty=sf.Empty, Full=sf.Full, ShutDown=sf.ShutDown)


def _view_of(cls):
    """A class whose instances are cls(maxsize).async_q: what the asyncio
    tests take for asyncio's queue class."""
    class View(_AsyncQueueView):
        __class_getitem__ = classmethod(types.GenericAlias)

        def __init__(self, maxsize=0):
            super().__init__(cls(maxsize))
    View.__name__ = View.__qualname__ = cls.__name__
    return View


class _Asyncio(types.ModuleType):
    """asyncio, but for its queue classes (and QueueShutDown before 3.13)."""

    def __getattr__(self, name):
        return getattr(asyncio, name)


AIO = _Asyncio("asyncio")
AIO.Queue, AIO.LifoQueue, AIO.PriorityQueue = map(_view_of, (sf.Queue, sf.LifoQueue,
                                                           sf.PriorityQueue))
AIO.QueueShutDown = getattr(asyncio, "QueueShutDown", sf.ShutDown)

ADOPTED = []  # the test classes made here: (class, its skip table)


def _make(name, bases, attrs, skips):
    """A test class of this module (pytest collects it), skips applied."""
    cls = type(name, bases, attrs)
    for test, reason in skips.items():
        if hasattr(cls, test):
            setattr(cls, test, unittest.skip(reason)(getattr(cls, test)))
    globals()[name] = cls
    ADOPTED.append((cls, skips))


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


QUEUE_MIXINS = ("QueueTest", "LifoQueueTest", "PriorityQueueTest", "FailingQueueTest",
                "CSimpleQueueTest")

if cpython is not None:
    # A copy of its own: its tests look `asyncio` up when they run.
    cpython_asyncio = _load(cpython_asyncio.__file__, "_test_asyncio_queues")
    cpython_asyncio.asyncio = AIO
    NEWER = glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[3-9]*/lib/python3.1[3-9]/test"))
    modules = [("", cpython, cpython_asyncio)]
    if NEWER:
        newest = sorted(NEWER)[-1]
        newer_asyncio = _load(os.path.join(newest, "test_asyncio", "test_queues.py"),
                              "_newer_test_asyncio_queues")
        newer_asyncio.asyncio = AIO
        modules.append(("Newer", _load(os.path.join(newest, "test_queue.py"),
                                       "_newer_test_queue"), newer_asyncio))
    for tag, q_module, a_module in modules:
        for name in QUEUE_MIXINS:
            mixin = getattr(q_module, name)
            bases = (mixin,) if name == "CSimpleQueueTest" else (mixin, unittest.TestCase)
            _make(f"Test{tag}{name}", bases, {"queue": SQF}, SKIPS)
        for name, value in sorted(vars(a_module).items()):
            if isinstance(value, type) and issubclass(value, unittest.TestCase):
                attrs = {}
                if getattr(value, "q_class", None) is not None:
                    attrs["q_class"] = getattr(AIO, value.q_class.__name__)
                _make(f"TestAsyncio{tag}{name}", (value,), attrs, ASYNC_SKIPS)
    if not NEWER:
        @pytest.mark.skip(reason="no newer CPython's tests on this machine")
        def test_newer_cpython_tests():
            pass

    def test_skips_name_existing_tests():
        for skips in (SKIPS, ASYNC_SKIPS):
            for name in skips:
                assert any(hasattr(c, name) for c, s in ADOPTED if s is skips), name
