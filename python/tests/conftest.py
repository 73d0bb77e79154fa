"""An assertion that fails in a helper thread fails its test (pytest would
otherwise only warn)."""


def pytest_configure(config):
    config.addinivalue_line("filterwarnings",
                            "error::pytest.PytestUnhandledThreadExceptionWarning")
    # anyio 3.6's trio backend subclasses trio.MultiError, which trio 0.22 deprecates.
    config.addinivalue_line("filterwarnings", "ignore:trio.MultiError is deprecated")


import pytest  # noqa: E402

from libs import LIBS, Lib  # noqa: E402


@pytest.fixture(params=LIBS)
def lib(request):
    """The library a test's tasks run under (libs.py): asyncio, uvloop,
    trio, anyio-asyncio, anyio-trio."""
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
