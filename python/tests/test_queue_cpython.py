"""CPython's own test.test_queue (the interpreter's) run against squarefree's
Queue, LifoQueue, PriorityQueue and SimpleQueue, the way it tests queue's
pure-Python and C queues: its mixins with ``queue`` set to a namespace
that holds ours beside queue's Empty and Full."""
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
                            Empty=sf.Empty, Full=sf.Full)


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

    def test_skips_name_existing_tests():
        classes = [TestQueue, TestLifoQueue, TestPriorityQueue, TestFailingQueue, TestSimpleQueue]
        for name in SKIPS:
            assert name.startswith("test") and any(hasattr(c, name) for c in classes), name
