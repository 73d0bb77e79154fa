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


def print_plot(draw):
    """Call draw() (which returns the files it wrote) and say where the plot
    went, or why there is none: matplotlib lives in Debian's python3, which
    may not be the interpreter the runs use."""
    try:
        made = draw()
    except ImportError as e:
        print("  no plot: %s (Debian: python3-matplotlib; run this script with "
              "/usr/bin/python3 and --python)" % e)
    else:
        print("  plot: %s" % ", ".join(made))
