"""CPython's own test.test_queue (the interpreter's) run against squarefree's
Queue, LifoQueue, PriorityQueue and SimpleQueue, the way it tests queue's
pure-Python and C queues: its mixins with ``queue`` set to a namespace
that holds ours beside queue's Empty and Full.  Where a newer CPython's
test_queue.py is on this machine (3.13 and later: shutdown's tests), it
runs too, loaded from its file."""
import glob
import importlib.util
import os
import types
import unittest

import pytest

import squarefree as sf

try:
    from test import test_queue as cpython
except ImportError as e:  # a failure, not a skip: the suite must run
    cpython = None
    MISSING = e

    def test_cpython_test_queue_importable():
        pytest.fail("CPython's test.test_queue cannot be imported (%s): install Debian's "
                    "libpython3.11-testsuite" % MISSING)

# A test that reads a CPython-private detail would be skipped here, named
# with its reason; none is.
SKIPS = {}

SQF = types.SimpleNamespace(Queue=sf.Queue, LifoQueue=sf.LifoQueue,
                            PriorityQueue=sf.PriorityQueue, SimpleQueue=sf.SimpleQueue,
                            Empty=sf.Empty, Full=sf.Full, ShutDown=sf.ShutDown)


def _skipping(cls):
    for name, reason in SKIPS.items():
        if hasattr(cls, name):
            setattr(cls, name, unittest.skip(reason)(getattr(cls, name)))
    return cls


if cpython is not None:
    @_skipping
    class TestQueue(cpython.QueueTest, unittest.TestCase):
        queue = SQF

    @_skipping
    class TestLifoQueue(cpython.LifoQueueTest, unittest.TestCase):
        queue = SQF

    @_skipping
    class TestPriorityQueue(cpython.PriorityQueueTest, unittest.TestCase):
        queue = SQF

    @_skipping
    class TestFailingQueue(cpython.FailingQueueTest, unittest.TestCase):
        queue = SQF

    @_skipping
    class TestSimpleQueue(cpython.CSimpleQueueTest):
        """The C SimpleQueue's tests (reentrancy included), on ours."""
        queue = SQF

# A newer CPython's test_queue.py (pyenv's, say), if there is one.
NEWER = sorted(glob.glob(os.path.expanduser(
    "~/.pyenv/versions/3.1[3-9]*/lib/python3.1[3-9]/test/test_queue.py")))
newer = None
if cpython is not None and NEWER:
    spec = importlib.util.spec_from_file_location("_newer_test_queue", NEWER[-1])
    newer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(newer)

    TestNewerQueue = _skipping(type("TestNewerQueue", (newer.QueueTest, unittest.TestCase),
                                    {"queue": SQF}))
    TestNewerLifoQueue = _skipping(type("TestNewerLifoQueue",
                                        (newer.LifoQueueTest, unittest.TestCase),
                                        {"queue": SQF}))
    TestNewerPriorityQueue = _skipping(type("TestNewerPriorityQueue",
                                            (newer.PriorityQueueTest, unittest.TestCase),
                                            {"queue": SQF}))
    TestNewerFailingQueue = _skipping(type("TestNewerFailingQueue",
                                           (newer.FailingQueueTest, unittest.TestCase),
                                           {"queue": SQF}))
    TestNewerSimpleQueue = _skipping(type("TestNewerSimpleQueue", (newer.CSimpleQueueTest,),
                                          {"queue": SQF}))
else:
    @pytest.mark.skip(reason="no newer CPython's test_queue.py on this machine")
    def test_newer_cpython_test_queue():
        pass


if cpython is not None:
    def test_skips_name_existing_tests():
        classes = [TestQueue, TestLifoQueue, TestPriorityQueue, TestFailingQueue, TestSimpleQueue]
        for name in SKIPS:
            assert name.startswith("test") and any(hasattr(c, name) for c in classes), name
