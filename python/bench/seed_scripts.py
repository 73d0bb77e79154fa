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

With --processes, the seed's two process scripts instead (the fork start
method, as the seed sets it), each primitive of the cure in shared memory:

  pstart  seed      n processes each set their flag in a
                    multiprocessing.Array, then poll it with time.sleep(0)
                    until all have started
          latch     a shared squarefree.Latch(n): count_down(), then wait()
  pmutex  seed      the first process to take a multiprocessing.Lock holds
                    it until all n have arrived, then each passes the lock
                    and polls the Array until none is active
          countdown a shared squarefree.Lock instead, and a shared
                    CountdownEvent (up() before arriving, down() after the
                    lock, then wait()) instead of the polling
  pfloor  processes start and join n processes that do nothing

--cpus K runs everything on the first K CPUs (sched_setaffinity; the
children inherit it) and --sched rr under SCHED_RR (root only), the seed's
other two settings.  Each round runs every variant once at each n,
interleaved; the targets at the largest n (400 by default): every cure at
least 10x faster than the seed's code, and its exponent within 0.05 of the
floor's.

Usage:
  seed_scripts.py [--quick] [--runs R] [--n LIST] [--python EXE] [--csv FILE]
                  [--plot DIR] [--processes [--cpus K] [--sched rr]]
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
import glob
import multiprocessing
import os
import signal
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


# --- processes (the seed's two process scripts) -----------------------------------

PROCESS_CASES = {
    "pstart": ["seed", "latch"],
    "pmutex": ["seed", "countdown"],
    "pfloor": ["processes"],
}


def run_processes(n, work):
    processes = [multiprocessing.Process(target=work, args=[i]) for i in range(n)]
    for p in processes:
        p.daemon = True
        p.start()
    for p in processes:
        p.join()
        p.close()


def pstart_seed(n):
    started = multiprocessing.Array("b", n, lock=False)

    def work(i):
        started[i] = True
        while not all(started):
            time.sleep(0)

    start = time.perf_counter()
    run_processes(n, work)
    return time.perf_counter() - start


def pstart_latch(n):
    import squarefree
    started = squarefree.Latch(n, shared=True)

    def work(i):
        started.count_down()
        started.wait()

    start = time.perf_counter()
    run_processes(n, work)
    return time.perf_counter() - start


def pmutex_seed(n):
    active = multiprocessing.Array("b", n, lock=False)
    start_time = multiprocessing.Value("d", 0, lock=False)
    lock = multiprocessing.Lock()

    def work(i):
        active[i] = True
        with lock:
            if not start_time.value:
                while not all(active):
                    time.sleep(0)
                start_time.value = time.perf_counter()
        active[i] = False
        while any(active):
            time.sleep(0)

    run_processes(n, work)
    return time.perf_counter() - start_time.value


def pmutex_countdown(n):
    import squarefree
    arrived = multiprocessing.Array("b", n, lock=False)
    start_time = multiprocessing.Value("d", 0, lock=False)
    lock = squarefree.Lock(shared=True)
    active = squarefree.CountdownEvent(shared=True)

    def work(i):
        active.up()  # before it counts as arrived
        arrived[i] = True
        with lock:
            if not start_time.value:
                while not all(arrived):
                    time.sleep(0)
                start_time.value = time.perf_counter()
        active.down()
        active.wait()

    run_processes(n, work)
    return time.perf_counter() - start_time.value


def pfloor_processes(n):
    start = time.perf_counter()
    run_processes(n, lambda i: None)
    return time.perf_counter() - start


def settle(cpus, sched):
    """The seed's settings, for this process and (inherited) its children."""
    if cpus:
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:cpus])
    if sched == "rr":
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))


ONE = {
    ("start", "seed"): start_seed,
    ("start", "latch"): start_latch,
    ("mutex", "seed"): mutex_seed,
    ("mutex", "countdown"): mutex_countdown,
    ("notify", "seed"): notify_seed,
    ("notify", "release-n"): lambda n: notify_cure(n, False),
    ("notify", "latch"): lambda n: notify_cure(n, True),
    ("floor", "threads"): floor_threads,
    ("pstart", "seed"): pstart_seed,
    ("pstart", "latch"): pstart_latch,
    ("pmutex", "seed"): pmutex_seed,
    ("pmutex", "countdown"): pmutex_countdown,
    ("pfloor", "processes"): pfloor_processes,
}


TITLES = {
    "start": "start n threads",
    "mutex": "serialise n threads through a lock",
    "notify": "notify n threads",
    "pstart": "start n processes",
    "pmutex": "serialise n processes through a lock",
}


def plot(outdir, name, ns, med, limit, cases, floor, names, unit, title):
    """Each case's variants and the floor, log-log, one panel per case:
    cases maps a case to its variants, floor is the floor's (case, variant),
    names the legend's names of variants, unit the x axis's ("threads")."""
    P = plot_module()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    style = P.Styles(None)
    fig, axes = P.grid_of(plt, len(cases))
    for ax, (case, variants) in zip(axes, cases.items()):
        series = {}
        for c, variant in [(case, v) for v in variants] + [floor]:
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
        P.finish(ax, TITLES[case], "n (%s)" % unit, "median seconds", loc="upper left")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    P.save(plt, fig, outdir, name)
    return [os.path.join(outdir, name + ".png"), os.path.join(outdir, name + ".svg")]


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
    ap.add_argument("--processes", action="store_true",
                    help="the seed's process scripts instead of its thread ones")
    ap.add_argument("--cpus", type=int, default=0, metavar="K",
                    help="run on the first K CPUs only (processes)")
    ap.add_argument("--sched", choices=["other", "rr"], default="other",
                    help="the scheduling policy (processes; rr needs root)")
    a = ap.parse_args()
    if a.one:
        case, variant, n = a.one[0], a.one[1], int(a.one[2])
        if case.startswith("p"):
            multiprocessing.set_start_method("fork")  # as the seed's scripts
            settle(a.cpus, a.sched)
        print("%.9f" % ONE[(case, variant)](n))
        return 0
    if a.runs < 5:
        ap.error("--runs must be at least 5 (medians of fewer are not reported)")
    if a.processes:
        return main_processes(a)
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
        cases = {c: CASES[c] for c in ("start", "mutex", "notify")}
        title = ("The seed's Python experiments, CPython %s: threading against squarefree (%s; "
                 "k = fitted slope: 1 linear, 2 the square)"
                 % (sys.version.split()[0], plot_module().runs_text(a.runs)))
        print_plot(lambda: plot(a.plot, "seed_scripts", ns, med, a.limit, cases, ("floor", "threads"),
                                {"seed": "threading (seed)", "threads": "floor"}, "threads",
                                title))
    return 0


def main_processes(a):
    """The process scripts, interleaved: round r runs every variant once at
    each n (in an order rotated by r), so a ratio compares runs made close
    together; the ratio against the seed is the median of the rounds'."""
    ns = [int(x) for x in a.n.split(",")] if a.n else [50, 100, 200, 400]
    variants = [(c, v) for c, vs in PROCESS_CASES.items() for v in vs]
    extra = (["--cpus", str(a.cpus)] if a.cpus else []) + ["--sched", a.sched]
    times = {(c, v, n): [] for c, v in variants for n in ns}
    over = {}  # (case, variant) -> the first n over the limit
    rows = []
    for r in range(a.runs):
        for n in ns:
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            for c, v in order:
                if (c, v) in over and n >= over[(c, v)]:
                    continue
                # A session of its own: a run over the limit is killed with its
                # children, which would otherwise poll on for ever.
                p = subprocess.Popen(
                    [a.python, os.path.abspath(__file__), "--one", c, v, str(n)] + extra,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                    start_new_session=True)
                try:
                    out, err = p.communicate(timeout=a.limit)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.communicate()
                    # A creator killed so cannot unlink its shared-memory blocks
                    # (the README's Lifetime): their names go with it here.
                    for name in glob.glob("/dev/shm/squarefree-%d-*" % p.pid):
                        os.unlink(name)
                    t = None
                    over[(c, v)] = min(n, over.get((c, v), n))
                else:
                    if p.returncode != 0:
                        sys.stderr.write(err)
                        return 2
                    t = float(out.strip())
                rows.append((c, v, n, r, t))
                if t is not None:
                    times[(c, v, n)].append(t)
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("case,variant,n,run,seconds\n")
            for row in rows:
                f.write("%s,%s,%d,%d,%s\n" % (row[0], row[1], row[2], row[3],
                                             "" if row[4] is None else "%.9f" % row[4]))
    med = {k: (statistics.median(t), min(t), max(t)) if len(t) == a.runs else None
           for k, t in times.items()}
    last = ns[-1]
    setting = "%s CPUs, %s" % (a.cpus or len(os.sched_getaffinity(0)),
                               "SCHED_RR" if a.sched == "rr" else "SCHED_OTHER")
    print("== the seed's process scripts (CPython %s, multiprocessing, fork; %s), medians "
          "of %d interleaved rounds, seconds [min-max]" % (sys.version.split()[0], setting,
                                                          a.runs))
    exps = {}
    for c, v in variants:
        cells = []
        for n in ns:
            m = med[(c, v, n)]
            cells.append("n=%d %.4f [%.4f-%.4f]" % (n, *m) if m else "n=%d > limit" % n)
        ok = [n for n in ns if med[(c, v, n)]]
        exps[(c, v)] = exponent(ok, [med[(c, v, n)][0] for n in ok])
        print("  %-7s %-10s %s  exponent %.2f" % (c, v, "  ".join(cells), exps[(c, v)]))
    floor_e = exps[("pfloor", "processes")]
    met = total = 0
    print("  targets at n=%d (floor exponent %.2f):" % (last, floor_e))
    for c, vs in PROCESS_CASES.items():
        if c == "pfloor":
            continue
        for v in vs[1:]:
            seed_t, cure_t = times[(c, "seed", last)], times[(c, v, last)]
            if seed_t and len(seed_t) == len(cure_t):
                rs = [s_ / c_ for s_, c_ in zip(seed_t, cure_t)]
                ratio = statistics.median(rs)
                fig = "%.1fx [%.1f-%.1f]" % (ratio, min(rs), max(rs))
                fast = ratio >= 10
            elif med[(c, v, last)]:
                fig = "the seed's code over the %.0f s limit: >= %.1fx" % (
                    a.limit, a.limit / med[(c, v, last)][0])
                fast = a.limit >= 10 * med[(c, v, last)][0]
            else:
                fig, fast = "the cure over the limit", False
            e = exps[(c, v)]
            for what, ok, f in [("10x faster than the seed's code", fast, fig),
                                ("exponent within the floor's + 0.05", e <= floor_e + 0.05,
                                 "%.2f" % e)]:
                total += 1
                met += ok
                print("    [%s] %s %s: %s (%s)" % ("met" if ok else "MISSED", c, v, what, f))
    print("  %d of %d targets met" % (met, total))
    if a.plot:
        cases = {c: PROCESS_CASES[c] for c in ("pstart", "pmutex")}
        title = ("The seed's process scripts, CPython %s: multiprocessing against squarefree in "
                 "shared memory\n(%s; %s)" % (sys.version.split()[0], setting,
                                             plot_module().runs_text(a.runs)))
        print_plot(lambda: plot(a.plot, "seed_processes", ns, med, a.limit, cases,
                                ("pfloor", "processes"),
                                {"seed": "multiprocessing (seed)", "processes": "floor"},
                                "processes", title))
    return 0



if __name__ == "__main__":
    sys.exit(main())
