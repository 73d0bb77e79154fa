"""What the Python benchmarks share: sqbench's plotting module and its fit."""
import functools
import importlib.util
import os


@functools.lru_cache(maxsize=None)
def plot_module():
    """sqbench's plot.py (standard library only at import), for its fit and
    its figure helpers, so that every plot of the report looks alike."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                        "sqbench", "plot.py")
    spec = importlib.util.spec_from_file_location("sqbench_plot", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def exponent(ns, ys):
    """The fitted exponent k of y ~ n^k, as sqbench fits it (nan if it cannot)."""
    k = plot_module().slope(list(zip(ns, ys)))
    return float("nan") if k is None else k
