"""CPython's own test suite for threading's primitives (Lib/test/lock_tests.py,
the interpreter's version) run against squarefree's types, as CPython's
test_threading.py runs it against threading's.  The types are the
package's (squarefree.Lock and the others: the classes with the asyncio
methods, over the C types of squarefree._squarefree).

Debian ships lock_tests.py in libpython3.X-testsuite: without it this test
fails (it must not pass by skipping)."""
import sys
import unittest

import pytest

import squarefree as sf

try:
    from test import lock_tests
except ImportError as e:  # a failure, never a skip: the proof would be missing
    PACKAGE = "libpython%d.%d-testsuite" % sys.version_info[:2]
    raise ImportError(f"test.lock_tests is missing: install Debian's {PACKAGE} "
                      f"({e})") from e

# (lock_tests base class, attribute, the type under test), as test_threading.py
CASES = [
    (lock_tests.LockTests, "locktype", sf.Lock),
    (lock_tests.RLockTests, "locktype", sf.RLock),
    (lock_tests.EventTests, "eventtype", sf.Event),
    (lock_tests.RLockTests, "locktype", sf.Condition),  # Condition exports its RLock's API
    (lock_tests.ConditionTests, "condtype", sf.Condition),
    (lock_tests.SemaphoreTests, "semtype", sf.Semaphore),
    (lock_tests.BoundedSemaphoreTests, "semtype", sf.BoundedSemaphore),
    (lock_tests.BarrierTests, "barriertype", sf.Barrier),
]


# Tests skipped, by name or by case and name, wherever the interpreter's
# lock_tests.py has them.
SKIPS = {
    # 3.8's EventTests (not 3.9's): it reads threading.Event's private _cond
    # and calls its _reset_internal_locks, threading's after-fork hook.
    "test_reset_internal_locks": "reads threading.Event's private _cond and _reset_internal_locks",
    # Newer lock_tests.py than Debian 3.11.2's; test_threading.py skips it for
    # threading.Condition too.
    "RLockTests[squarefree.Condition].test_recursion_count":
        "Condition does not expose _recursion_count(), as test_threading.py says of threading's",
}


def _case_id(case):
    base, _, kind = case
    return f"{base.__name__}[{kind.__module__}.{kind.__name__}]"


def _tests():
    for case in CASES:
        base, attr, kind = case
        cls = type(base.__name__, (base,), {attr: staticmethod(kind)})
        for name in unittest.TestLoader().getTestCaseNames(cls):
            test_id = f"{_case_id(case)}.{name}"
            reason = SKIPS.get(name) or SKIPS.get(test_id)
            marks = [pytest.mark.skip(reason=reason)] if reason else []
            yield pytest.param(cls, name, id=test_id, marks=marks)


@pytest.mark.parametrize("cls,name", list(_tests()))
def test_lock_tests(cls, name):
    result = unittest.TestResult()
    cls(name).run(result)
    assert not result.skipped, result.skipped
    assert not result.unexpectedSuccesses, result.unexpectedSuccesses
    problems = result.errors + result.failures
    assert not problems, "\n".join(text for _, text in problems)
