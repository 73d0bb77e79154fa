#!/usr/bin/env python3
"""queues.py: squarefree's queues against the queues Python programmers use.

Experiments (docs/benchmarks.md defines them and their targets):

  PQ1  thread producers to asyncio consumers (t2a), and tasks to threads
       (a2t); P pairs, each pair its own queue (maxsize 64).  Peer: janus.
       Target: squarefree >= 2x janus's items/s.
  PQ2  threads to threads, P pairs.  Peer: queue.Queue.  Target: >= 1x.
  PQ3  tasks to tasks in one event loop, P pairs.  Peer: asyncio.Queue,
       which pays for no thread safety.  Target: >= 0.8x.
  PQ4  the square: n threads and n tasks (one event loop) blocked on one
       empty queue, then one producer puts 2n items; the time from the
       first put until every consumer has its item, against n.  Peer:
       janus (sync_q for the threads, async_q for the tasks); floor:
       starting and joining n threads that do nothing.  Target: the
       exponent of squarefree's time at most the floor's + 0.05; n = 100
       to 800, in the quick form too.

Every run is a fresh interpreter (`queues.py --one EXP VARIANT SIZE
ITEMS`), which prints its elapsed seconds and the process's CPU seconds.
Variants run interleaved within each round (round r runs every variant of
an experiment once, in an order rotated by r), so that each round's ratio
compares runs made close together on this noisy machine; a ratio is
reported as the median of the rounds' ratios, with their min-max.

Usage:
  queues.py [--quick] [--rounds R] [--items N] [--n LIST] [--pairs LIST]
            [--python EXE] [--csv FILE] [--plot DIR]
--python is the interpreter that runs each experiment (one with squarefree
and janus importable); --plot draws DIR/queues.png and .svg and needs
matplotlib in the interpreter running this script (Debian:
python3-matplotlib, so /usr/bin/python3).
"""
import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import threading
import time

from _common import exponent, plot_module, print_plot

MAXSIZE = 64

# (experiment, variant) -> the peer the ratio is taken against, and the target.
EXPERIMENTS = {
    "PQ1-t2a": (["sqf", "janus"], "janus", 2.0),
    "PQ1-a2t": (["sqf", "janus"], "janus", 2.0),
    "PQ2": (["sqf", "queue.Queue"], "queue.Queue", 1.0),
    "PQ3": (["sqf", "asyncio.Queue"], "asyncio.Queue", 0.8),
}
SQUARE = ["sqf", "janus", "floor"]


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Loop:
    """An asyncio event loop running in a thread of its own."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


# --- the queues, behind one shape --------------------------------------------------

def make_queue(variant, maxsize):
    """Called on the event loop's thread (janus needs a running loop)."""
    if variant == "sqf":
        import squarefree
        return squarefree.Queue(maxsize)
    if variant == "janus":
        import janus
        return janus.Queue(maxsize)
    if variant == "queue.Queue":
        import queue
        return queue.Queue(maxsize)
    if variant == "asyncio.Queue":
        return asyncio.Queue(maxsize)
    raise ValueError(variant)


async def close_queues(queues):
    """janus's close: its pending notifications run before the loop goes."""
    for q in queues:
        if hasattr(q, "wait_closed"):
            q.close()
            await q.wait_closed()


def thread_side(q):
    """The blocking put and get of q, for a thread."""
    if hasattr(q, "sync_q") and not hasattr(q, "async_get"):  # janus
        return q.sync_q.put, q.sync_q.get
    return q.put, q.get


def task_side(q):
    """The coroutine put and get of q, for a task."""
    if hasattr(q, "async_get"):  # squarefree
        return q.async_put, q.async_get
    if hasattr(q, "async_q"):  # janus
        return q.async_q.put, q.async_q.get
    return q.put, q.get  # asyncio.Queue


# --- PQ1 to PQ3: throughput ---------------------------------------------------------

def throughput(exp, variant, pairs, items):
    """Move `items` items through `pairs` pairs; (seconds, CPU seconds)."""
    per = items // pairs
    loop = Loop() if exp != "PQ2" else None

    async def make_all():
        return [make_queue(variant, MAXSIZE) for _ in range(pairs)]

    queues = loop.run(make_all()) if loop else [make_queue(variant, MAXSIZE)
                                                for _ in range(pairs)]
    go = threading.Event()

    def producer_thread(q):
        put = thread_side(q)[0]
        go.wait()
        for i in range(per):
            put(i)

    def consumer_thread(q):
        get = thread_side(q)[1]
        go.wait()
        for _ in range(per):
            get()

    async def producer_task(q):
        put = task_side(q)[0]
        for i in range(per):
            await put(i)

    async def consumer_task(q):
        get = task_side(q)[1]
        for _ in range(per):
            await get()

    threads = []
    tasks_side = None
    if exp == "PQ1-t2a":
        threads = [threading.Thread(target=producer_thread, args=(q,)) for q in queues]
        tasks_side = [consumer_task(q) for q in queues]
    elif exp == "PQ1-a2t":
        threads = [threading.Thread(target=consumer_thread, args=(q,)) for q in queues]
        tasks_side = [producer_task(q) for q in queues]
    elif exp == "PQ2":
        threads = [threading.Thread(target=f, args=(q,)) for q in queues
                   for f in (producer_thread, consumer_thread)]
    elif exp == "PQ3":
        tasks_side = [f(q) for q in queues for f in (producer_task, consumer_task)]
    for t in threads:
        t.start()

    async def gather_tasks():
        await asyncio.gather(*tasks_side)

    time.sleep(0.02)  # every thread is waiting on `go`
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    go.set()
    if tasks_side:
        loop.run(gather_tasks())
    for t in threads:
        t.join()
    elapsed, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    if loop:
        loop.run(close_queues(queues))
        loop.close()
    return elapsed, cpu


# --- PQ4: the square ------------------------------------------------------------------

def square(variant, n):
    """n threads and n tasks blocked on one empty queue; one producer puts
    2n items.  Seconds from the first put until every consumer has one."""
    if variant == "floor":
        t0 = time.perf_counter()
        threads = [threading.Thread(target=lambda: None) for _ in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return time.perf_counter() - t0, 0.0
    loop = Loop()

    async def make():
        return make_queue(variant, 0)

    q = loop.run(make())
    lock = threading.Lock()
    counts = {"ready": 0, "done": 0}
    all_ready = threading.Event()
    all_done = threading.Event()
    end = [0.0]

    def mark(what, event):
        with lock:
            counts[what] += 1
            if counts[what] == 2 * n:
                if what == "done":
                    end[0] = time.perf_counter()
                event.set()

    def consumer_thread():
        get = thread_side(q)[1]
        mark("ready", all_ready)
        get()
        mark("done", all_done)

    async def consumer_task():
        get = task_side(q)[1]
        mark("ready", all_ready)
        await get()
        mark("done", all_done)

    async def start_tasks():
        return [asyncio.ensure_future(consumer_task()) for _ in range(n)]

    threads = [threading.Thread(target=consumer_thread) for _ in range(n)]
    for t in threads:
        t.start()
    tasks = loop.run(start_tasks())
    all_ready.wait()
    time.sleep(0.05 + n * 1e-4)  # each consumer is now asleep in its get
    put = thread_side(q)[0]
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    for i in range(2 * n):
        put(i)
    all_done.wait()
    cpu = cpu_seconds() - cpu0
    for t in threads:
        t.join()

    async def finish():
        await asyncio.gather(*tasks)

    loop.run(finish())
    loop.run(close_queues([q]))
    loop.close()
    return end[0] - t0, cpu


# --- the report ------------------------------------------------------------------

def run_one(python, args, limit):
    out = subprocess.run([python, os.path.abspath(__file__), "--one"] + [str(a) for a in args],
                         capture_output=True, text=True, timeout=limit)
    if out.returncode != 0:
        sys.stderr.write(out.stderr)
        raise SystemExit("queues.py: %s failed" % " ".join(map(str, args)))
    secs, cpu = (float(x) for x in out.stdout.split())
    return secs, cpu


def mmm(xs):
    return statistics.median(xs), min(xs), max(xs)


def report_throughput(a, rows):
    met = total = 0
    print("== PQ1-PQ3: items/s (median [min-max] of %d rounds), CPU us per item, and the "
          "ratio to the peer within each round" % a.rounds)
    results = {}
    for exp, (variants, peer, target) in EXPERIMENTS.items():
        for pairs in a.pairs:
            rate = {v: [] for v in variants}
            cpu = {v: [] for v in variants}
            ratios = []
            for r in range(a.rounds):
                order = variants[r % len(variants):] + variants[:r % len(variants)]
                got = {}
                for v in order:
                    secs, c = run_one(a.python, [exp, v, pairs, a.items], a.limit)
                    rows.append((exp, v, pairs, r, secs, c))
                    got[v] = (a.items // pairs * pairs / secs, c / a.items * 1e6)
                    rate[v].append(got[v][0])
                    cpu[v].append(got[v][1])
                ratios.append(got["sqf"][0] / got[peer][0])
            results[(exp, pairs)] = (rate, cpu, ratios)
            print("  %s, %d pair%s" % (exp, pairs, "" if pairs == 1 else "s"))
            for v in variants:
                m, lo, hi = mmm(rate[v])
                print("    %-14s %9.0f items/s [%.0f-%.0f]  CPU %.2f us/item"
                      % (v, m, lo, hi, statistics.median(cpu[v])))
            m, lo, hi = mmm(ratios)
            ok = m >= target
            total += 1
            met += ok
            print("    [%s] sqf / %s = %.2fx [%.2f-%.2f] (target >= %.1fx)"
                  % ("met" if ok else "MISSED", peer, m, lo, hi, target))
    return met, total, results


def report_square(a, rows):
    med = {}
    print("== PQ4: n threads and n tasks blocked on an empty queue, one producer puts 2n "
          "items; seconds (median [min-max] of %d rounds)" % a.rounds)
    times = {(v, n): [] for v in SQUARE for n in a.n}
    for n in a.n:
        for r in range(a.rounds):
            for v in SQUARE[r % 3:] + SQUARE[:r % 3]:
                secs, c = run_one(a.python, ["PQ4", v, n, 0], a.limit)
                rows.append(("PQ4", v, n, r, secs, c))
                times[(v, n)].append(secs)
    for v in SQUARE:
        cells = []
        for n in a.n:
            med[(v, n)] = mmm(times[(v, n)])
            cells.append("n=%d %.4f [%.4f-%.4f]" % ((n,) + med[(v, n)]))
        e = exponent(a.n, [med[(v, n)][0] for n in a.n])
        print("    %-6s %s  exponent %.2f" % (v, "  ".join(cells), e))
    floor_e = exponent(a.n, [med[("floor", n)][0] for n in a.n])
    sqf_e = exponent(a.n, [med[("sqf", n)][0] for n in a.n])
    ok = sqf_e <= floor_e + 0.05
    last = a.n[-1]
    print("    [%s] sqf's exponent %.2f <= the floor's %.2f + 0.05; at n=%d sqf is %.2fx "
          "janus's time" % ("met" if ok else "MISSED", sqf_e, floor_e, last,
                            med[("sqf", last)][0] / med[("janus", last)][0]))
    return int(ok), 1, med


def plot(outdir, a, results, med):
    P = plot_module()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = P.grid_of(plt, 5)
    for ax, exp in zip(axes, EXPERIMENTS):
        variants = EXPERIMENTS[exp][0]
        width = 0.8 / len(variants)
        for i, v in enumerate(variants):
            xs = [j + i * width for j in range(len(a.pairs))]
            ms = [statistics.median(results[(exp, p)][0][v]) for p in a.pairs]
            los = [m - min(results[(exp, p)][0][v]) for m, p in zip(ms, a.pairs)]
            his = [max(results[(exp, p)][0][v]) - m for m, p in zip(ms, a.pairs)]
            ax.bar(xs, ms, width, yerr=[los, his], capsize=3,
                   label=v if v != "sqf" else "squarefree")
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(a.pairs))])
        ax.set_xticklabels(["%d pair%s" % (p, "" if p == 1 else "s") for p in a.pairs])
        P.finish(ax, exp, None, "items/s")
    series = {}
    for v in SQUARE:
        series[({"sqf": "squarefree", "floor": "floor (n threads)"}.get(v, v), None)] = \
            [(n, "ok", med[(v, n)][0]) for n in a.n]

    def label(variant, _threads, pts):
        k = P.slope([(p[0], p[2]) for p in pts])
        return "%s (k=%.2f)" % (variant, k) if k is not None else variant

    ax = axes[4]
    P.plot_lines(ax, series, P.Styles(None), label)
    P.log_axis(ax, "x", ticks=a.n)
    P.log_axis(ax, "y")
    P.finish(ax, "PQ4: 2n blocked getters fed 2n items", "n (threads, and as many tasks)",
             "median seconds", loc="upper left")
    fig.suptitle("Queues, CPython %s: squarefree against janus, queue.Queue and asyncio.Queue "
                 "(%d rounds, interleaved)" % (sys.version.split()[0], a.rounds), fontsize=11)
    fig.tight_layout()
    P.save(plt, fig, outdir, "queues")
    return [os.path.join(outdir, "queues.png"), os.path.join(outdir, "queues.svg")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--one", nargs=4, metavar=("EXP", "VARIANT", "SIZE", "ITEMS"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--items", type=int, default=None)
    ap.add_argument("--n", default=None, help="PQ4's sizes")
    ap.add_argument("--pairs", default="1,8")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--csv", default=None)
    ap.add_argument("--plot", default=None, metavar="DIR")
    ap.add_argument("--limit", type=float, default=120.0, help="seconds per run at most")
    a = ap.parse_args()
    if a.one:
        exp, variant, size, items = a.one[0], a.one[1], int(a.one[2]), int(a.one[3])
        if exp == "PQ4":
            secs, cpu = square(variant, size)
        elif exp in EXPERIMENTS and variant in EXPERIMENTS[exp][0] and size >= 1:
            secs, cpu = throughput(exp, variant, size, items)
        else:
            ap.error("no experiment %s %s %d" % (exp, variant, size))
        print("%.9f %.9f" % (secs, cpu))
        return 0
    a.rounds = a.rounds or (5 if a.quick else 9)
    if a.rounds < 5:
        ap.error("--rounds must be at least 5 (medians of fewer are not reported)")
    a.items = a.items or (20000 if a.quick else 100000)
    a.pairs = [int(x) for x in a.pairs.split(",")]
    # PQ4's runs are short: the quick form keeps every size, since a fit
    # over 100..400 alone is swayed by the fixed costs of the smallest.
    a.n = [int(x) for x in a.n.split(",")] if a.n else [100, 200, 400, 800]
    if min(a.pairs) < 1 or a.items < max(a.pairs) or min(a.n) < 1:
        ap.error("pairs and n must be at least 1, and items at least the pairs")
    rows = []
    met1, total1, results = report_throughput(a, rows)
    met2, total2, med = report_square(a, rows)
    print("  %d of %d targets met" % (met1 + met2, total1 + total2))
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("experiment,variant,size,round,seconds,cpu_seconds\n")
            for r in rows:
                f.write("%s,%s,%d,%d,%.9f,%.9f\n" % r)
    if a.plot:
        print_plot(lambda: plot(a.plot, a, results, med))
    return 0


if __name__ == "__main__":
    sys.exit(main())
