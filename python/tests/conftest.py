"""An assertion that fails in a helper thread fails its test (pytest would
otherwise only warn)."""


def pytest_configure(config):
    config.addinivalue_line("filterwarnings",
                            "error::pytest.PytestUnhandledThreadExceptionWarning")
    # anyio 3.6's trio backend subclasses trio.MultiError, which trio 0.22 deprecates.
    config.addinivalue_line("filterwarnings", "ignore:trio.MultiError is deprecated")
    # eventlet 0.33 (Debian 12) still uses distutils' LooseVersion at import.
    config.addinivalue_line("filterwarnings",
                            "ignore:distutils Version classes are deprecated:DeprecationWarning")


import importlib  # noqa: E402
import os  # noqa: E402

import pytest  # noqa: E402

from libs import LIBS, Lib  # noqa: E402

# The Debian package of each library the tests run beside (scripts/deps.sh).
PACKAGES = {"trio": "python3-trio", "anyio": "python3-anyio", "uvloop": "python3-uvloop",
            "sniffio": "python3-sniffio", "gevent": "python3-gevent",
            "eventlet": "python3-eventlet", "janus": "python3-janus"}


def missing(*modules):
    """The first of modules that does not import here, or None."""
    for m in modules:
        try:
            importlib.import_module(m)
        except ImportError:
            return m
    return None


def require(*modules, module_level=False):
    """Import modules, or stop the test: Debian's python3 has every one
    (deps.sh installs them), so there a missing one fails, naming its
    package; the pyversions configuration (SQF_TEST_MISSING_LIBS=skip) runs
    interpreters that Debian's compiled libraries do not serve, where a
    missing one skips, saying so."""
    m = missing(*modules)
    if m is None:
        return
    why = f"{m} is not importable by this interpreter ({PACKAGES.get(m, m)})"
    if os.environ.get("SQF_TEST_MISSING_LIBS") == "skip":
        pytest.skip(why, allow_module_level=module_level)
    pytest.fail(why + ": scripts/deps.sh installs it", pytrace=False)


LIB_MODULES = {"asyncio": (), "uvloop": ("uvloop",), "trio": ("trio", "sniffio"),
               "anyio-asyncio": ("anyio",), "anyio-trio": ("anyio", "trio", "sniffio")}


@pytest.fixture(params=LIBS)
def lib(request):
    """The library a test's tasks run under (libs.py): asyncio, uvloop,
    trio, anyio-asyncio, anyio-trio."""
    require(*LIB_MODULES[request.param])
    return Lib(request.param)


@pytest.fixture(params=["uring", "fallback"])
def backend(request, monkeypatch):
    """The loop backend the event loops (and trio runs) made in this test
    get."""
    from squarefree import _squarefree as _c
    monkeypatch.setenv("SQF_LOOP_BACKEND", request.param)
    try:
        d = _c._LoopDriver()
    except OSError:
        pytest.skip(f"the {request.param} loop backend is not available here")
    name = d.backend
    del d
    assert name == {"uring": "io_uring", "fallback": "fallback"}[request.param]
    return request.param
