"""An assertion that fails in a helper thread fails its test (pytest would
otherwise only warn)."""


def pytest_configure(config):
    config.addinivalue_line("filterwarnings",
                            "error::pytest.PytestUnhandledThreadExceptionWarning")
