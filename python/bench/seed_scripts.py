#!/usr/bin/env python3
"""seed_scripts.py: the seed's own Python experiments (the square problem),
as written with threading, against squarefree's cures, and a floor.

Each run is a fresh interpreter (`python3 seed_scripts.py --one CASE VARIANT
N`) that prints one elapsed time, measured as the seed measures it.  Cases
and variants:

  start   seed      n threads each pop a shared counter, then poll it
                    with time.sleep(0) until all have started
          latch     squarefree.Latch(n): count_down(), then wait()
  mutex   seed      the first thread holds a threading.Lock until all n
                    have arrived, then each passes the lock and polls
          countdown the same lock kept, squarefree.CountdownEvent: up()
                    before, down() after, then wait()
  notify  seed      the last thread wakes the n - 1 others with n - 1
                    Semaphore.release() calls; all then poll
          release-n squarefree.Semaphore: one release(n - 1), then a Latch
                    instead of the polling
          latch     a squarefree.Latch opened by the last thread, and a
                    second one instead of the polling
  floor   threads   start and join n threads that do nothing: what any
                    cure costs at least

Usage:
  seed_scripts.py [--quick] [--runs R] [--n LIST] [--python EXE] [--csv FILE]
                  [--plot DIR]
--python is the interpreter that runs each script (one with squarefree
installed); --plot draws DIR/seed_scripts.png and .svg (log-log, one panel
per case) and needs matplotlib in the interpreter running this script
(Debian: python3-matplotlib, so /usr/bin/python3).
The report: medians (min-max) in seconds, factors against the smallest n,
fitted exponents, and the targets (at the largest n every cure within 1.5x
the floor and at least 20x faster than the seed's code; exponents at most
the floor's + 0.05), each met or missed.
"""
import argparse
import os
import statistics
import subprocess
import sys
import threading
import time

from _common import exponent, plot_module, print_plot

CASES = {
    "start": ["seed", "latch"],
    "mutex": ["seed", "countdown"],
    "notify": ["seed", "release-n", "latch"],
    "floor": ["threads"],
}


def run_threads(n, work):
    threads = [threading.Thread(target=work) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


# --- start -----------------------------------------------------------------------

def start_seed(n):
    count = [None] * n
    start = time.perf_counter()

    def work():
        count.pop()
        while count:
            time.sleep(0)

    run_threads(n, work)
    return time.perf_counter() - start


def start_latch(n):
    import squarefree
    started = squarefree.Latch(n)
    start = time.perf_counter()

    def work():
        started.count_down()
        started.wait()

    run_threads(n, work)
    return time.perf_counter() - start


# --- mutex -----------------------------------------------------------------------

def mutex_seed(n):
    count = []
    start_time = None
    lock = threading.Lock()

    def work():
        nonlocal start_time
        count.append(None)
        with lock:
            if start_time is None:
                while len(count) < n:
                    time.sleep(0)
                start_time = time.perf_counter()
        count.pop()
        while count:
            time.sleep(0)

    run_threads(n, work)
    return time.perf_counter() - start_time


def mutex_countdown(n):
    import squarefree
    count = []
    start_time = None
    lock = threading.Lock()
    active = squarefree.CountdownEvent()

    def work():
        nonlocal start_time
        active.up()  # before it counts as arrived
        count.append(None)
        with lock:
            if start_time is None:
                while len(count) < n:
                    time.sleep(0)
                start_time = time.perf_counter()
        active.down()
        active.wait()

    run_threads(n, work)
    return time.perf_counter() - start_time


# --- notify ----------------------------------------------------------------------

def notify_seed(n):
    count = [None] * (n - 1)
    start_time = None
    sem = threading.Semaphore(0)

    def work():
        nonlocal start_time
        try:
            count.pop()
        except IndexError:
            start_time = time.perf_counter()
            for _ in range(n - 1):
                sem.release()
        else:
            sem.acquire()
        count.append(None)
        while len(count) < n:
            time.sleep(0)

    run_threads(n, work)
    return time.perf_counter() - start_time


def notify_cure(n, use_latch):
    import squarefree
    count = [None] * (n - 1)
    start_time = None
    sem = squarefree.Semaphore(0)
    go = squarefree.Latch(1)
    done = squarefree.Latch(n)

    def work():
        nonlocal start_time
        try:
            count.pop()
        except IndexError:
            start_time = time.perf_counter()
            if use_latch:
                go.count_down()
            else:
                sem.release(n - 1)
        else:
            if use_latch:
                go.wait()
            else:
                sem.acquire()
        done.count_down()
        done.wait()

    run_threads(n, work)
    return time.perf_counter() - start_time


# --- floor -----------------------------------------------------------------------

def floor_threads(n):
    start = time.perf_counter()
    run_threads(n, lambda: None)
    return time.perf_counter() - start


ONE = {
    ("start", "seed"): start_seed,
    ("start", "latch"): start_latch,
    ("mutex", "seed"): mutex_seed,
    ("mutex", "countdown"): mutex_countdown,
    ("notify", "seed"): notify_seed,
    ("notify", "release-n"): lambda n: notify_cure(n, False),
    ("notify", "latch"): lambda n: notify_cure(n, True),
    ("floor", "threads"): floor_threads,
}


TITLES = {
    "start": "start n threads",
    "mutex": "serialise n threads through a lock",
    "notify": "notify n threads",
}


def plot(outdir, ns, med, runs, limit):
    """The table as a figure: each case's variants and the floor, log-log."""
    P = plot_module()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    style = P.Styles(None)
    names = {"seed": "threading (seed)", "threads": "floor"}
    fig, axes = P.grid_of(plt, 3)
    for ax, case in zip(axes, ["start", "mutex", "notify"]):
        series = {}
        for c, variant in [(case, v) for v in CASES[case]] + [("floor", "threads")]:
            pts = []
            for n in ns:
                m = med[(c, variant, n)]
                if m is None:  # over the time limit from here on
                    pts.append((n, "limit", limit))
                    break
                pts.append((n, "ok", m[0]))
            series[(names.get(variant, "sqf " + variant), None)] = pts

        def label(variant, _threads, pts):
            k = P.slope([(p[0], p[2]) for p in pts if p[1] == "ok"])
            return "%s (k=%.2f)" % (variant, k) if k is not None else variant

        P.plot_lines(ax, series, style, label)
        P.log_axis(ax, "x", ticks=ns)
        P.log_axis(ax, "y")
        P.finish(ax, TITLES[case], "n (threads)", "median seconds", loc="upper left")
    fig.suptitle("The seed's Python experiments, CPython %s: threading against squarefree "
                 "(%s; k = fitted slope: 1 linear, 2 the square)"
                 % (sys.version.split()[0], P.runs_text(runs)), fontsize=11)
    fig.tight_layout()
    P.save(plt, fig, outdir, "seed_scripts")
    return [os.path.join(outdir, "seed_scripts.png"), os.path.join(outdir, "seed_scripts.svg")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--one", nargs=3, metavar=("CASE", "VARIANT", "N"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--n", default=None)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--csv", default=None)
    ap.add_argument("--plot", default=None, metavar="DIR")
    ap.add_argument("--limit", type=float, default=60.0, help="seconds per run at most")
    a = ap.parse_args()
    if a.one:
        case, variant, n = a.one[0], a.one[1], int(a.one[2])
        print("%.9f" % ONE[(case, variant)](n))
        return 0
    if a.runs < 5:
        ap.error("--runs must be at least 5 (medians of fewer are not reported)")
    ns = [int(x) for x in a.n.split(",")] if a.n else ([100, 200, 400] if a.quick
                                                        else [100, 200, 400, 800])
    rows = []
    med = {}
    over = set()
    for case, variants in CASES.items():
        for variant in variants:
            for n in ns:
                if (case, variant) in over:
                    med[(case, variant, n)] = None
                    continue
                times = []
                for run in range(a.runs):
                    try:
                        out = subprocess.run(
                            [a.python, os.path.abspath(__file__), "--one", case, variant,
                             str(n)], capture_output=True, text=True, timeout=a.limit,
                            check=True)
                        t = float(out.stdout.strip())
                    except subprocess.TimeoutExpired:
                        t = None
                    except subprocess.CalledProcessError as e:
                        sys.stderr.write(e.stderr)
                        return 2
                    rows.append((case, variant, n, run, t))
                    if t is None:
                        over.add((case, variant))
                        break
                    times.append(t)
                med[(case, variant, n)] = (statistics.median(times), min(times), max(times)) \
                    if len(times) == a.runs else None
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("case,variant,n,run,seconds\n")
            for r in rows:
                f.write("%s,%s,%d,%d,%s\n" % (r[0], r[1], r[2], r[3],
                                             "" if r[4] is None else "%.9f" % r[4]))
    last = ns[-1]
    floor = med[("floor", "threads", last)]
    floor_exp = exponent(ns, [med[("floor", "threads", n)][0] for n in ns])
    print("== the seed's Python experiments (CPython %s, threading), medians of %d runs, "
          "seconds [min-max]" % (sys.version.split()[0], a.runs))
    for case, variants in CASES.items():
        print("  %s" % case)
        for variant in variants:
            cells = []
            for n in ns:
                m = med[(case, variant, n)]
                cells.append("n=%d %.4f [%.4f-%.4f]" % (n, *m) if m else "n=%d > limit" % n)
            ys = [med[(case, variant, n)][0] for n in ns if med[(case, variant, n)]]
            e = exponent(ns[:len(ys)], ys)
            print("    %-10s %s  exponent %.2f" % (variant, "  ".join(cells), e))
    met = total = 0
    print("  targets at n=%d (floor %.4f s, exponent %.2f):" % (last, floor[0], floor_exp))
    for case, variants in CASES.items():
        if case == "floor":
            continue
        seed = med[(case, "seed", last)]
        for variant in variants[1:]:
            m = med[(case, variant, last)]
            ys = [med[(case, variant, n)][0] for n in ns]
            e = exponent(ns, ys)
            checks = [
                ("within 1.5x the floor", m[0] <= 1.5 * floor[0], "%.2fx" % (m[0] / floor[0])),
                ("20x faster than the seed's code",
                 seed is not None and seed[0] >= 20 * m[0],
                 "%.1fx" % (seed[0] / m[0]) if seed else "seed over the limit"),
                ("exponent <= floor's + 0.05", e <= floor_exp + 0.05, "%.2f" % e),
            ]
            for what, ok, fig in checks:
                total += 1
                met += ok
                print("    [%s] %s %s: %s (%s)" % ("met" if ok else "MISSED", case, variant,
                                                 what, fig))
    print("  %d of %d targets met" % (met, total))
    if a.plot:
        print_plot(lambda: plot(a.plot, ns, med, a.runs, a.limit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
