"""CPython's own tests run against squarefree's queues:

- test.test_queue (the interpreter's) on Queue, LifoQueue, PriorityQueue
  and SimpleQueue, the way it tests queue's pure-Python and C queues: its
  mixins with ``queue`` set to a namespace that holds ours beside queue's
  Empty and Full;
- test.test_asyncio.test_queues on the queues' async_q views (janus's
  asyncio.Queue interface), its ``asyncio`` name bound to a namespace whose
  Queue, LifoQueue and PriorityQueue make ours (on 3.11 and later: see
  OWN_ASYNC_SKIP).

Where a newer CPython's copies of these files are on this machine (3.13
and later: shutdown's tests), they run too on 3.11 and later, loaded from
their files.  A
test that reads a CPython-private detail, or counts event-loop iterations
(see ASYNC_SKIPS), is skipped, named here with its reason."""
import asyncio
import glob
import importlib.util
import os
import sys
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
        if hasattr(types, "GenericAlias"):  # 3.9+, as asyncio.Queue
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

# Before 3.11, test_asyncio's queue tests run on test_utils.TestLoop, whose
# time is virtual and whose selector reports no I/O: a view's wait, woken
# through its loop's add_reader, never ends there.  (3.8's and 3.9's test
# the loop argument too, which asyncio dropped in 3.10.)  test_queues.py
# tests the views on every version.
OWN_ASYNC_SKIP = None if sys.version_info >= (3, 11) else (
    "this interpreter's test_asyncio.test_queues runs on a virtual-time loop that reports "
    "no I/O (the views' wake-ups come through loop.add_reader)")

if cpython is not None:
    if OWN_ASYNC_SKIP is None:
        # A copy of its own: its tests look `asyncio` up when they run.
        cpython_asyncio = _load(cpython_asyncio.__file__, "_test_asyncio_queues")
        cpython_asyncio.asyncio = AIO
    else:
        cpython_asyncio = None

        @pytest.mark.skip(reason=OWN_ASYNC_SKIP)
        def test_own_cpython_asyncio_tests():
            pass
    # A newer CPython's copies than this interpreter's own; they use 3.11's
    # test.support (threading_helper.requires_working_threading) and asyncio
    # (TaskGroup).
    NEWER = [d for d in glob.glob(os.path.expanduser(
        "~/.pyenv/versions/3.1[3-9]*/lib/python3.1[3-9]/test"))
        if (3, int(os.path.dirname(d).rsplit(".", 1)[1])) > sys.version_info[:2]]
    NEWER_SKIP = ("no newer CPython's tests on this machine" if not NEWER else
                  "a newer CPython's queue tests need 3.11's test.support and asyncio"
                  if sys.version_info < (3, 11) else None)
    modules = [("", cpython, cpython_asyncio)]
    if NEWER_SKIP is None:
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
        for name, value in sorted(vars(a_module).items() if a_module else ()):
            if isinstance(value, type) and issubclass(value, unittest.TestCase):
                attrs = {}
                if getattr(value, "q_class", None) is not None:
                    attrs["q_class"] = getattr(AIO, value.q_class.__name__)
                _make(f"TestAsyncio{tag}{name}", (value,), attrs, ASYNC_SKIPS)
    if NEWER_SKIP is not None:
        @pytest.mark.skip(reason=NEWER_SKIP)
        def test_newer_cpython_tests():
            pass

    def test_skips_name_existing_tests():
        # Queue shutdown's tests are 3.13's: here if a 3.13+ suite runs.
        shutdown = sys.version_info >= (3, 13) or NEWER_SKIP is None
        for skips in (SKIPS, ASYNC_SKIPS):
            adopted = [c for c, s in ADOPTED if s is skips]
            for name in skips:
                if adopted and (shutdown or "shutdown" not in name):
                    assert any(hasattr(c, name) for c in adopted), name
