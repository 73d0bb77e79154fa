#!/usr/bin/python3
"""plot.py: draw sqbench's plots from DIR/sqbench.csv.

    /usr/bin/python3 plot.py DIR

sqbench runs this after it writes DIR/sqbench.csv (--csv DIR).  It writes,
next to the CSV and only for the experiments the CSV holds:

    square.png/.svg    S1-S5: median seconds against n, log-log, fitted slope k
    c1.png/.svg        C1: parallelism against hold fraction, with the model; work per CPU-second
    c2.png/.svg        C2: parallelism and CPU-ns per acquisition against the interval between locks
    w1.png/.svg        W1: wake-all latency against k waiters
    w2.png/.svg        W2: the same into an event loop (k pending loop waits)
    o1.png/.svg        O1: throughput, CPU per acquisition and Jain's index against threads
    u1.png/.svg        U1: uncontended ns (and instructions) per operation
    headline.png       S2 alone, small: the plot the README shows

Every point is the median over runs of one (experiment, variant, threads, x,
metric).  A point that hit the time limit is an upward triangle at the
limit; a skipped one is left out.  Needs Debian's python3-matplotlib (Agg
backend) and the standard library only.  Exit status: 0 done, 1 the CSV is
missing or unreadable or matplotlib is absent, 2 usage error.
"""

import csv
import math
import os
import re
import statistics
import sys

COLUMNS = ["experiment", "variant", "threads", "x", "run", "metric", "value", "status"]
STATUSES = ("ok", "limit", "skipped", "invalid")  # invalid: failed a validity guard, not drawn

S_TITLES = {
    "S1": "S1 start: n threads started",
    "S2": "S2 mutex: n threads through one lock",
    "S3": "S3 notify: n-1 woken by a semaphore",
    "S4": "S4 event: n woken by one event",
    "S5": "S5 barrier: n pass a barrier 10x",
    "S6": "S6 process start",
    "S7": "S7 process mutex",
}
HEADLINE_TITLE = "S2: n threads serialised through one lock"

# One colour per variant name, the same in every figure.  squarefree's
# variants are warm and drawn thicker; pthreads and peers are cool or grey.
COLOURS = {
    "seed": "#7f7f7f",
    "seed-wait": "#4d4d4d",
    "floor": "#000000",
    "pthread": "#1f77b4",
    "pthread-adaptive": "#17becf",
    "posix": "#1f77b4",
    "ttas": "#9467bd",
    "ck-mcs": "#8c564b",
    "c++20": "#2ca02c",
    "nsync": "#393b79",
    "nsync-note": "#393b79",
    "absl": "#637939",
    "absl-notification": "#637939",
    "futex": "#000000",
    "sqf": "#d62728",
    "sqf-combine": "#ff7f0e",
    "sqf-batch": "#ff7f0e",
    "sqf-latch": "#e377c2",
    "sqf-mutex": "#bcbd22",
}
FALLBACK = ["#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#bcbd22", "#7f7f7f"]
MARKERS = ["o", "s", "D", "v", "P", "X", "<", ">", "h", "*"]


def fail(msg, status=1):
    print("plot.py: " + msg, file=sys.stderr)
    sys.exit(status)


# --- reading ---------------------------------------------------------------------
def read_csv(path):
    """Rows of the CSV as tuples (exp, variant, threads, x, run, metric, value,
    status).  Rows that do not parse are left out; a file that is not an
    sqbench CSV is an error."""
    rows = []
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header != COLUMNS:
                fail("%s: not an sqbench CSV (expected the header %s)" % (path, ",".join(COLUMNS)))
            for rec in reader:
                if len(rec) != len(COLUMNS) or rec[7] not in STATUSES:
                    continue
                try:
                    threads = int(rec[2])
                    x = float(rec[3]) if rec[3] else math.nan
                    run = int(rec[4])
                    value = float(rec[6]) if rec[6] else math.nan
                except ValueError:
                    continue
                rows.append((rec[0], rec[1], threads, x, run, rec[5], value, rec[7]))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        fail("cannot read %s: %s" % (path, getattr(e, "strerror", None) or e))
    return rows


class Data:
    """The rows grouped by (experiment, variant, threads, x, metric)."""

    def __init__(self, rows):
        self.points = {}
        self.runs = {}  # (experiment, metric) -> set of run numbers
        self.order = {}  # (experiment, variant) -> first position in the file
        for exp, variant, threads, x, run, metric, value, status in rows:
            key = (exp, variant, threads, x, metric)
            self.points.setdefault(key, []).append((value, status))
            self.runs.setdefault((exp, metric), set()).add(run)
            self.order.setdefault((exp, variant), len(self.order))

    def has(self, exp, metric):
        """Whether there is anything to draw: a point measured or at the limit."""
        return (exp, metric) in self.runs and bool(self.series(exp, metric))

    def nruns(self, exp, metric):
        return len(self.runs.get((exp, metric), ()))

    def experiments(self, pattern):
        ids = {k[0] for k in self.runs if re.fullmatch(pattern, k[0])}
        return sorted(ids, key=lambda e: (re.sub(r"\d+", "", e), int(re.sub(r"\D", "", e) or 0)))

    def series(self, exp, metric, by="x", per_threads=False):
        """{(variant, threads or None): [(x, kind, y, lo, hi)]} sorted by x, where
        kind is "ok" (y the median of the ok runs, lo/hi their min and max) or
        "limit" (y the limit).  by="threads" uses the threads column as x.
        per_threads: one series per (variant, threads), else per variant (in
        the S experiments threads is n, the same as x)."""
        out = {}
        for (e, variant, threads, x, m), vals in self.points.items():
            if e != exp or m != metric:
                continue
            xv = float(threads) if by == "threads" else x
            key = (variant, threads if per_threads else None)
            ok = [v for v, s in vals if s == "ok" and math.isfinite(v)]
            lim = [v for v, s in vals if s == "limit" and math.isfinite(v)]
            if lim:
                point = (xv, "limit", min(lim), None, None)
            elif ok:
                point = (xv, "ok", statistics.median(ok), min(ok), max(ok))
            else:
                continue  # skipped (or nothing measured): left out
            out.setdefault(key, []).append(point)
        for pts in out.values():
            pts.sort(key=lambda p: p[0])
        return dict(sorted(out.items(), key=lambda kv: (self.order.get((exp, kv[0][0]), 0), kv[0][1] or 0)))


# --- helpers ---------------------------------------------------------------------
def slope(points):
    """Least-squares slope of log(y) over log(x), as sb_exponent() computes it;
    None with fewer than two usable points."""
    pts = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0]
    if len(pts) < 2 or max(p[0] for p in pts) - min(p[0] for p in pts) < 1e-9:
        return None  # no slope through points at one x
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    d = sum((p[0] - mx) ** 2 for p in pts)
    if d == 0:
        return None
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / d


class Styles:
    def __init__(self, data):
        self.data = data
        self.given = {}
        self.markers = {}

    def __call__(self, variant):
        """Colour, marker and line width of a variant ("pair/sqf" is styled as "sqf")."""
        base = variant.rsplit("/", 1)[-1]
        colour = COLOURS.get(base)
        if colour is None:
            colour = self.given.setdefault(base, FALLBACK[len(self.given) % len(FALLBACK)])
        marker = self.markers.setdefault(variant, MARKERS[len(self.markers) % len(MARKERS)])
        width = 2.2 if base.startswith("sqf") else 1.4
        return colour, marker, width


def plain(v, _pos=None):
    """Tick labels as plain numbers: 0.001, 20, 1600."""
    if v == 0:
        return "0"
    if abs(v) >= 1e6 or abs(v) < 1e-5:
        return "%g" % v
    return ("%.6f" % v).rstrip("0").rstrip(".")


def log_axis(ax, which, base=10, ticks=None):
    """A log axis labelled with plain numbers: ticks at the given values if
    any (the swept n, k or threads), else at 1-2-5 steps."""
    from matplotlib import ticker

    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log", base=base)
    if ticks:
        ticks = sorted(set(t for t in ticks if t > 0))
        if len(ticks) > 12:  # too many to label: every other one, ends kept
            ticks = ticks[::2] + ([ticks[-1]] if len(ticks) % 2 == 0 else [])
        axis.set_major_locator(ticker.FixedLocator(ticks))
    else:
        axis.set_major_locator(ticker.LogLocator(base=base, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(ticker.FuncFormatter(plain))
    axis.set_minor_locator(ticker.LogLocator(base=base, subs="auto"))
    axis.set_minor_formatter(ticker.NullFormatter())


def plot_lines(ax, series, style, label=None, markersize=5):
    """One line per series (medians), limit points as upward triangles.
    Returns every y drawn (for the reference lines)."""
    ys = []
    limit_shown = False
    for (variant, threads), pts in series.items():
        colour, marker, width = style(variant)
        text = label(variant, threads, pts) if label else variant
        ok = [p for p in pts if p[1] == "ok"]
        lim = [p for p in pts if p[1] == "limit"]
        ax.plot(
            [p[0] for p in ok],
            [p[2] for p in ok],
            marker=marker,
            color=colour,
            linewidth=width,
            markersize=markersize,
            label=text,
        )
        if lim:
            if ok and ok[-1][0] < lim[0][0]:
                # Dotted from the last measured point up to the limit.
                ax.plot([ok[-1][0], lim[0][0]], [ok[-1][2], lim[0][2]], linestyle=":", color=colour,
                        linewidth=width * 0.8)
            ax.plot(
                [p[0] for p in lim],
                [p[2] for p in lim],
                linestyle="none",
                marker="^",
                markersize=markersize + 4,
                markerfacecolor="white",
                markeredgecolor=colour,
                markeredgewidth=1.6,
                label=None if limit_shown else "hit the time limit",
            )
            limit_shown = True
        ys.extend(p[2] for p in pts)
    return ys


def finish(ax, title=None, xlabel=None, ylabel=None, legend=True, legend_size=8, loc="best"):
    if title:
        ax.set_title(title, fontsize=10)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.grid(True, which="major", color="#cccccc", linewidth=0.7)
    ax.grid(True, which="minor", color="#eeeeee", linewidth=0.5)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=legend_size, frameon=False, loc=loc)


def grid_of(plt, n, width=5.0, height=3.9, ncols_max=3):
    ncols = min(ncols_max, n)
    nrows = (n + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows + 0.6), squeeze=False)
    flat = [a for row in axes for a in row]
    for a in flat[n:]:
        a.set_visible(False)
    return fig, flat[:n]


def save(plt, fig, outdir, name, svg=True):
    fig.savefig(os.path.join(outdir, name + ".png"), dpi=100, metadata={"Software": None})
    if svg:
        fig.savefig(os.path.join(outdir, name + ".svg"), metadata={"Date": None})
    plt.close(fig)


def runs_text(n):
    return "median of %d run%s" % (n, "" if n == 1 else "s")


# --- the figures -----------------------------------------------------------------
def square_panel(ax, data, exp, style, title, markersize=5):
    series = data.series(exp, "seconds")

    def label(variant, _threads, pts):
        k = slope([(p[0], p[2]) for p in pts if p[1] == "ok"])
        return "%s (k=%.2f)" % (variant, k) if k is not None else "%s (k=n/a)" % variant

    ys = plot_lines(ax, series, style, label, markersize)
    xs = sorted({p[0] for pts in series.values() for p in pts})
    if xs and ys:
        # Faint reference slopes through the lowest point at the smallest n.
        x0, x1 = xs[0], xs[-1]
        y0 = min(p[2] for pts in series.values() for p in pts if p[0] == x0) if x0 else None
        if y0 and x1 > x0:
            for k, text in ((1, "slope 1"), (2, "slope 2")):
                y1 = y0 * (x1 / x0) ** k
                ax.plot([x0, x1], [y0, y1], linestyle="--", color="#999999", linewidth=0.9, alpha=0.6, zorder=0)
                ax.annotate(text, (x1, y1), xytext=(3, 0), textcoords="offset points", fontsize=7,
                            color="#888888", va="center", annotation_clip=False)
    if xs:
        log_axis(ax, "x", ticks=xs)
    log_axis(ax, "y")
    # Time grows to the right: the upper left is where the legend hides nothing.
    unit = "processes" if exp in ("S6", "S7") else "threads"
    finish(ax, title, "n (%s)" % unit, "median seconds", loc="upper left")


def fig_square(plt, data, outdir, style):
    exps = [e for e in data.experiments(r"S\d+") if data.has(e, "seconds")]
    if not exps:
        return []
    fig, axes = grid_of(plt, len(exps))
    for ax, exp in zip(axes, exps):
        square_panel(ax, data, exp, style, S_TITLES.get(exp, exp))
    n = max(data.nruns(e, "seconds") for e in exps)
    fig.suptitle(
        "Square experiments: time against n threads, log-log (%s); k = fitted slope, "
        "1 linear, 2 the square; \u25b3 = hit the time limit" % runs_text(n),
        fontsize=11,
    )
    fig.tight_layout()
    save(plt, fig, outdir, "square")
    made = ["square.png", "square.svg"]
    if "S2" in exps:
        fig, ax = plt.subplots(figsize=(8, 5))
        square_panel(ax, data, "S2", style, None, markersize=6)
        fig.suptitle(HEADLINE_TITLE, fontsize=13)
        ax.set_title("%s, log-log; k = fitted slope: 1 linear, 2 the square"
                     % runs_text(data.nruns("S2", "seconds")), fontsize=9, color="#555555")
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, "headline.png"), dpi=100, metadata={"Software": None})
        plt.close(fig)
        made.append("headline.png")
    return made


def fig_c1(plt, data, outdir, style):
    if not data.has("C1", "parallelism"):
        return []
    series = data.series("C1", "parallelism", per_threads=True)
    model = data.series("C1", "model", per_threads=True)
    cpu = data.series("C1", "work_per_cpu_s", per_threads=True) if data.has("C1", "work_per_cpu_s") else {}
    threads = sorted({t for _, t in series} | {t for _, t in model})
    # Parallelism on the first row, work per CPU-second below it.
    rows = 2 if cpu else 1
    fig, grid = plt.subplots(rows, len(threads), figsize=(4.6 * len(threads), 3.8 * rows),
                             squeeze=False)
    axes = list(grid[0])
    for ax, t in zip(grid[1] if cpu else [], threads):
        plot_lines(ax, {k: v for k, v in cpu.items() if k[1] == t}, style)
        ax.set_xlim(-2, 102)
        ax.set_ylim(bottom=0)
        finish(ax, "%d thread%s: CPU cost" % (t, "" if t == 1 else "s"), "hold fraction h (%)",
               "work per CPU-second (x a lone thread)", legend_size=7)
    for ax, t in zip(axes, threads):
        mine = {k: v for k, v in series.items() if k[1] == t}
        plot_lines(ax, mine, style)
        for (variant, mt), pts in model.items():
            if mt == t and variant == "model":
                ax.plot([p[0] for p in pts], [p[2] for p in pts], linestyle="--", color="#888888",
                        linewidth=3, alpha=0.8, label="M/M/1//N model", zorder=1)
        ax.set_xlim(-2, 102)
        ax.set_ylim(bottom=0)
        finish(ax, "%d thread%s" % (t, "" if t == 1 else "s"), "hold fraction h (%)",
               "parallelism", legend_size=7)
    fig.suptitle("C1: parallelism against hold fraction, with the M/M/1//N queueing model%s (%s)"
                 % (", and useful work per CPU-second" if cpu else "",
                    runs_text(data.nruns("C1", "parallelism"))), fontsize=11)
    fig.tight_layout()
    save(plt, fig, outdir, "c1")
    return ["c1.png", "c1.svg"]


def fig_c2(plt, data, outdir, style):
    if not data.has("C2", "parallelism"):
        return []
    series = data.series("C2", "parallelism", per_threads=True)
    several = len({t for _, t in series}) > 1

    def label(variant, threads, _pts):
        return "%s (%d threads)" % (variant, threads) if several else variant

    has_cpu = data.has("C2", "cpu_ns_per_acq")
    fig, axes = plt.subplots(1, 2 if has_cpu else 1, figsize=(7.5 * (2 if has_cpu else 1), 4.8),
                             squeeze=False)
    ax = axes[0][0]
    plot_lines(ax, series, style, label)
    xs = sorted({p[0] for pts in series.values() for p in pts})
    log_axis(ax, "x", ticks=xs if len(xs) <= 8 else None)
    ax.set_ylim(bottom=0)
    threads = sorted({t for _, t in series})
    finish(ax, "C2: parallelism against lock frequency, %s thread%s (%s)"
           % ("/".join(map(str, threads)), "" if threads == [1] else "s",
              runs_text(data.nruns("C2", "parallelism"))),
           "interval between locks (ns)", "parallelism")
    if has_cpu:
        ax = axes[0][1]
        plot_lines(ax, data.series("C2", "cpu_ns_per_acq", per_threads=True), style, label)
        log_axis(ax, "x", ticks=xs if len(xs) <= 8 else None)
        log_axis(ax, "y")
        finish(ax, "CPU cost (%s)" % runs_text(data.nruns("C2", "cpu_ns_per_acq")),
               "interval between locks (ns)", "CPU-ns per acquisition (user + system), log")
    fig.tight_layout()
    save(plt, fig, outdir, "c2")
    return ["c2.png", "c2.svg"]


def fig_wake(plt, data, outdir, style, exp, title, ylabel):
    if not data.has(exp, "latency_us"):
        return []
    series = data.series(exp, "latency_us")
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    plot_lines(ax, series, style)
    xs = sorted({p[0] for pts in series.values() for p in pts})
    if xs:
        log_axis(ax, "x", base=2, ticks=xs)
    log_axis(ax, "y")
    finish(ax, "%s: %s, log-log (%s)" % (exp, title, runs_text(data.nruns(exp, "latency_us"))),
           "k (waiters)", ylabel)
    fig.tight_layout()
    name = exp.lower()
    save(plt, fig, outdir, name)
    return [name + ".png", name + ".svg"]


def fig_w1(plt, data, outdir, style):
    return fig_wake(plt, data, outdir, style, "W1", "wake-all latency of k sleeping waiters",
                    "median \u00b5s until the last waiter runs")


def fig_w2(plt, data, outdir, style):
    return fig_wake(plt, data, outdir, style, "W2",
                    "wake-all latency of k waits pending in an event loop",
                    "median \u00b5s until the last callback ran")


def fig_o1(plt, data, outdir, style):
    metrics = [m for m in ("mops", "cpu_ns_per_acq", "jain") if data.has("O1", m)]
    if not metrics:
        return []
    fig, axes = plt.subplots(1, len(metrics), figsize=(6.2 * len(metrics), 4.8), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        series = data.series("O1", metric, by="threads")
        plot_lines(ax, series, style)
        xs = sorted({p[0] for pts in series.values() for p in pts})
        if xs:
            log_axis(ax, "x", base=2, ticks=xs)
        if metric == "mops":
            ax.set_ylim(bottom=0)
            finish(ax, "throughput (%s)" % runs_text(data.nruns("O1", metric)), "threads",
                   "million acquisitions per second")
        elif metric == "cpu_ns_per_acq":
            log_axis(ax, "y")
            finish(ax, "CPU cost (%s)" % runs_text(data.nruns("O1", metric)), "threads",
                   "CPU-ns per acquisition (user + system), log")
        else:
            ax.set_ylim(0, 1.05)
            finish(ax, "fairness: Jain's index, 1 = all equal (%s)" % runs_text(data.nruns("O1", metric)),
                   "threads", "Jain's index over per-thread acquisitions")
    fig.suptitle("O1: oversubscription, a tiny critical section", fontsize=11)
    fig.tight_layout()
    save(plt, fig, outdir, "o1")
    return ["o1.png", "o1.svg"]


def fig_u1(plt, data, outdir, style):
    if not data.has("U1", "ns_per_op"):
        return []
    ns = data.series("U1", "ns_per_op")
    instr = data.series("U1", "instr_per_op")
    bars = []
    for (variant, threads), pts in ns.items():
        ok = [p for p in pts if p[1] == "ok"]
        if not ok:
            continue
        p = ok[0]
        ins = [q[2] for q in instr.get((variant, threads), []) if q[1] == "ok"]
        bars.append((variant, p[2], p[3], p[4], ins[0] if ins else None))
    if not bars:
        return []
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.42 * len(bars)))
    ys = list(range(len(bars)))
    colours = [style(b[0])[0] for b in bars]
    ax.barh(ys, [b[1] for b in bars], color=colours, alpha=0.85, height=0.65,
            xerr=[[b[1] - b[2] for b in bars], [b[3] - b[1] for b in bars]],
            error_kw={"ecolor": "#444444", "elinewidth": 0.8, "capsize": 2})
    top = max(b[3] for b in bars)
    for y, (variant, med, _lo, hi, ins) in zip(ys, bars):
        text = "%.3g ns" % med + (", %.0f instr" % ins if ins is not None else "")
        ax.text(hi + top * 0.01, y, text, va="center", fontsize=8)
    ax.set_yticks(ys)
    ax.set_yticklabels([b[0] for b in bars])
    ax.invert_yaxis()
    ax.set_xlim(0, top * 1.3)
    note = "; instructions per operation from callgrind" if any(b[4] is not None for b in bars) else ""
    finish(ax, "U1: uncontended cost, ns per operation (%s, bars min-max%s)"
           % (runs_text(data.nruns("U1", "ns_per_op")), note), "ns per operation", None, legend=False)
    ax.grid(False, axis="y", which="both")
    fig.tight_layout()
    save(plt, fig, outdir, "u1")
    return ["u1.png", "u1.svg"]


def fig_q1(plt, data, outdir, style):
    metrics = [m for m in ("mitems_per_s", "cpu_ns_per_item") if data.has("Q1", m)]
    if not metrics:
        return []
    fig, axes = plt.subplots(1, len(metrics), figsize=(6.2 * len(metrics), 4.8), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        series = data.series("Q1", metric)
        plot_lines(ax, series, style)
        xs = sorted({p[0] for pts in series.values() for p in pts})
        if xs:
            log_axis(ax, "x", base=2, ticks=xs)
        log_axis(ax, "y")
        if metric == "mitems_per_s":
            finish(ax, "throughput (%s)" % runs_text(data.nruns("Q1", metric)),
                   "producer/consumer pairs", "million items per second, log")
        else:
            finish(ax, "CPU time per item (%s)" % runs_text(data.nruns("Q1", metric)),
                   "producer/consumer pairs", "CPU-ns per item (user + system), log")
    fig.suptitle("Q1: queue throughput, capacity 1024 (8B/, 256B/: item size)", fontsize=11)
    fig.tight_layout()
    save(plt, fig, outdir, "q1")
    return ["q1.png", "q1.svg"]


def fig_q2(plt, data, outdir, style):
    if not data.has("Q2", "seconds"):
        return []
    series = data.series("Q2", "seconds")
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    plot_lines(ax, series, style)
    xs = sorted({p[0] for pts in series.values() for p in pts})
    if xs:
        log_axis(ax, "x", base=2, ticks=xs)
    log_axis(ax, "y")
    finish(ax, "Q2: n consumers asleep on an empty queue, one producer pushes n, log-log (%s)"
           % runs_text(data.nruns("Q2", "seconds")), "n (consumers)",
           "median seconds until each has its item")
    fig.tight_layout()
    save(plt, fig, outdir, "q2")
    return ["q2.png", "q2.svg"]


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        fail("usage: plot.py DIR (the folder holding sqbench.csv)", 2)
    outdir = argv[1]
    path = os.path.join(outdir, "sqbench.csv")
    if not os.path.isfile(path):
        fail("%s: no such file (run sqbench --csv %s first)" % (path, outdir))
    rows = read_csv(path)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        fail("matplotlib is not available to %s (Debian: apt-get install python3-matplotlib): %s"
             % (sys.executable, e))
    plt.rcParams.update({
        "svg.fonttype": "none",  # text stays text: small SVG files
        "svg.hashsalt": "sqbench",  # the same CSV gives the same SVG
        "font.size": 9,
        "axes.titlesize": 10,
        "legend.handlelength": 2.5,
    })
    data = Data(rows)
    style = Styles(data)
    made = []
    for fig in (fig_square, fig_c1, fig_c2, fig_w1, fig_w2, fig_o1, fig_u1, fig_q1, fig_q2):
        made += fig(plt, data, outdir, style)
    if os.environ.get("SQBENCH_PLOT_VERBOSE"):
        print("plot.py: wrote %s in %s" % (", ".join(made) or "nothing", outdir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
