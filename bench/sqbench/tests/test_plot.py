#!/usr/bin/python3
"""test_plot.py: plot.py on synthetic sqbench CSVs.

    /usr/bin/python3 test_plot.py PATH/TO/plot.py

Writes CSVs shaped like sqbench's into a temporary folder: every experiment,
only the S rows, many limit and skipped rows, a header alone, garbage rows;
runs plot.py on each and checks which files appear and what they say.  Also
checks the failures: no CSV, a CSV that is not sqbench's, no matplotlib
(each one line on stderr, exit status 1).  Without matplotlib only those
failures can be checked, and plot.py must report them so.
"""

import importlib.util
import math
import os
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HEADER = "experiment,variant,threads,x,run,metric,value,status"
RUNS = 5
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL: " + what)


def model(N, h):
    """The M/M/1//N speedup, written out again (not taken from plot.py or stats.c)."""
    if h == 0:
        return float(N)
    if h == 1:
        return 1.0
    rho = h / (1 - h)
    total, term = 1.0, 1.0
    for j in range(1, N + 1):
        term *= (N - j + 1) * rho
        total += term
    return min(N, (1 - 1 / total) / h)


def jitter(run):
    """A small deterministic spread around the median (run 2 is the median)."""
    return 1 + 0.02 * (run - 2)


def s_rows(limits=False):
    rows = []
    ns = [100, 200, 400, 800, 1600]
    shapes = {
        "S1": {"seed": (2e-4, 1.16), "pthread": (1e-4, 1.0), "sqf": (9e-5, 1.0)},
        "S2": {"seed": (1.46 / 1600**2.12 * 1, 2.12), "pthread": (5e-5, 1.02), "sqf": (4e-5, 1.0),
               "sqf-combine": (3e-5, 1.0)},
        "S3": {"seed": (3e-5, 1.03), "sqf": (2e-5, 1.0), "sqf-batch": (1e-5, 1.0)},
        "S4": {"seed": (3e-5, 1.1), "sqf": (2e-5, 1.0)},
        "S5": {"pthread": (5e-5, 1.02), "c++20": (6e-5, 1.05), "sqf": (4e-5, 1.0)},
    }
    for exp, variants in shapes.items():
        for run in range(RUNS):
            for n in ns:
                for v, (c, k) in variants.items():
                    t = c * n**k
                    if limits and exp == "S2" and v == "seed" and n >= 800:
                        if n == 800:
                            rows.append((exp, v, n, n, run, "seconds", 5.02, "limit"))
                        else:
                            rows.append((exp, v, n, n, run, "seconds", "", "skipped"))
                        continue
                    rows.append((exp, v, n, n, run, "seconds", "%.9g" % (t * jitter(run)), "ok"))
            if limits:
                # A variant never measured, one that hit the limit at once, and
                # a NaN written as an empty value among ok rows.
                for n in ns:
                    rows.append(("S3", "allskip", n, n, run, "seconds", "", "skipped"))
                    st = "limit" if n == 100 else "skipped"
                    rows.append(("S4", "alllimit", n, n, run, "seconds", "5.1" if st == "limit" else "", st))
                rows.append(("S5", "sqf", 3200, 3200, run, "seconds", "", "ok"))
    return rows


def other_rows():
    rows = [("C1", "calibration", 1, 0, 0, "unit_ns", 1.7, "ok")]
    locks = ["pthread", "pthread-adaptive", "ttas", "ck-mcs", "nsync", "absl", "sqf"]
    for run in range(RUNS):
        rows.append(("C1", "no-lock", 1, 0, run, "units_per_s", 5e8, "ok"))
        for t in (1, 2, 4, 8):
            for hi in range(11):
                h = hi / 10
                for i, lock in enumerate(locks):
                    p = model(t, h) * (0.6 + 0.08 * i) * jitter(run)
                    # An invalid point (a validity guard failed) must not be drawn.
                    st = "invalid" if (lock == "ttas" and t == 1 and hi == 0) else "ok"
                    rows.append(("C1", lock, t, hi * 10, run, "parallelism", "%.6g" % (p * (3 if st != "ok" else 1)), st))
                    rows.append(("C1", lock, t, hi * 10, run, "efficiency", "%.6g" % (p / t), st))
                    rows.append(("C1", lock, t, hi * 10, run, "work_per_cpu_s", "%.6g" % (p / max(1, min(t, 2)) * 0.9), st))
    for t in (1, 2, 4, 8):
        for hi in range(11):
            rows.append(("C1", "model", t, hi * 10, 0, "model", "%.6g" % model(t, hi / 10), "ok"))
    intervals = [10, 31.6, 100, 316, 1000, 3162, 10000, 31623]
    for run in range(RUNS):
        for i, lock in enumerate(locks):
            for x in intervals:
                p = 2 * x / (x + 100 * (i + 1)) * jitter(run)
                rows.append(("C2", lock, 2, x, run, "mops", "%.6g" % (p * 20), "ok"))
                rows.append(("C2", lock, 2, x, run, "parallelism", "%.6g" % p, "ok"))
                rows.append(("C2", lock, 2, x, run, "cpu_ns_per_acq", "%.6g" % (2 * x + 100 * (i + 1)), "ok"))
    for run in range(RUNS):
        for i, v in enumerate(["pthread-cond", "c++20-latch", "futex", "sqf-event", "sqf-latch"]):
            for k in (1, 4, 16, 64, 256, 1024):
                rows.append(("W1", v, k + 1, k, run, "latency_us", "%.6g" % ((3 + i) * k**0.9 * jitter(run)), "ok"))
    for run in range(RUNS):
        for i, v in enumerate(["sqf-loop-event", "sqf-loop-latch", "eventfd-each", "threads-event"]):
            for k in (1, 4, 16, 64, 256, 1024):
                rows.append(("W2", v, k, k, run, "latency_us", "%.6g" % ((2 + i) * k**0.95 * jitter(run)), "ok"))
    for run in range(RUNS):
        for i, lock in enumerate(locks):
            for t in (1, 2, 4, 8, 16, 32, 64, 128, 256):
                if lock == "ck-mcs" and t >= 64:
                    rows.append(("O1", lock, t, t, run, "mops", "", "skipped"))
                    continue
                rows.append(("O1", lock, t, t, run, "mops", "%.6g" % (140 / (1 + i * math.log2(t)) * jitter(run)), "ok"))
                rows.append(("O1", lock, t, t, run, "jain", "%.4f" % max(0.3, 1 - 0.002 * i * t), "ok"))
                rows.append(("O1", lock, t, t, run, "cpu_ns_per_acq", "%.6g" % (20 * (1 + i) * math.log2(2 * t)), "ok"))
                rows.append(("O1", lock, t, t, run, "min_acq", 1000, "ok"))
                rows.append(("O1", lock, t, t, run, "max_acq", 3000, "ok"))
    u1 = {"pair/pthread": (7.1, 52), "pair/pthread-adaptive": (7.9, 60), "pair/ttas": (2.1, 12),
          "pair/ck-mcs": (4.8, 30), "pair/sqf": (3.0, 20), "trylock/pthread": (6.0, 40),
          "trylock/sqf": (2.5, 15), "sem/posix": (9.0, 70), "sem/sqf": (3.3, 22),
          "event/sqf": (0.3, None)}
    for run in range(RUNS):
        for v, (ns, _) in u1.items():
            rows.append(("U1", v, 1, 0, run, "ns_per_op", "%.6g" % (ns * jitter(run)), "ok"))
    for v, (_, ins) in u1.items():
        if ins is not None:
            rows.append(("U1", v, 1, 0, 0, "instr_per_op", ins, "ok"))
    for run in range(RUNS):
        for i, v in enumerate(["sqf", "sqf-batch", "mutex+cond", "ck_ring", "moodycamel", "pipe"]):
            for size in (8, 256):
                for pairs in (1, 2, 4, 16, 64):
                    var = "%dB/%s" % (size, v)
                    rows.append(("Q1", var, 2 * pairs, pairs, run, "mitems_per_s", "%.6g" % (30 / (1 + i) * jitter(run)), "ok"))
                    rows.append(("Q1", var, 2 * pairs, pairs, run, "cpu_ns_per_item", "%.6g" % (70 * (1 + i) * jitter(run)), "ok"))
        for i, v in enumerate(["sqf (one push_n)", "mutex+cond (n pushes)", "pipe (n writes)", "event wake-all (S4)"]):
            for n in (100, 200, 400, 800, 1600):
                rows.append(("Q2", v, n, n, run, "seconds", "%.6g" % (1e-5 * (1 + i) * n * jitter(run)), "ok"))
    return rows


def write(folder, rows, header=HEADER, extra=""):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "sqbench.csv"), "w") as f:
        f.write(header + "\n")
        for r in rows:
            f.write(",".join(str(c) for c in r) + "\n")
        f.write(extra)
    return folder


def run(plot, folder, env=None):
    p = subprocess.run([sys.executable, plot, folder], capture_output=True, text=True, env=env, timeout=300)
    return p.returncode, p.stdout, p.stderr


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", head[16:24])


def svg_text(path):
    """All text of an SVG (plot.py keeps text as text), or None if it does not parse."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return None
    return " ".join(t for t in root.itertext())


FAMILIES = ["square", "c1", "c2", "w1", "w2", "o1", "u1", "q1", "q2"]


def expect_files(folder, families, headline, what):
    for fam in FAMILIES:
        for ext in ("png", "svg"):
            path = os.path.join(folder, "%s.%s" % (fam, ext))
            if fam in families:
                check(os.path.isfile(path) and os.path.getsize(path) > 1000, "%s: %s.%s written" % (what, fam, ext))
                if ext == "png" and os.path.isfile(path):
                    check(png_size(path) is not None, "%s: %s.png is a PNG" % (what, fam))
                if ext == "svg" and os.path.isfile(path):
                    check(svg_text(path) is not None, "%s: %s.svg is well-formed XML" % (what, fam))
            else:
                check(not os.path.exists(path), "%s: no %s.%s (experiment absent)" % (what, fam, ext))
    path = os.path.join(folder, "headline.png")
    check(os.path.isfile(path) == headline, "%s: headline.png %s" % (what, "written" if headline else "absent"))
    if headline and os.path.isfile(path):
        size = png_size(path)
        check(size is not None and 700 <= size[0] <= 900 and 400 <= size[1] <= 600,
              "%s: headline.png about 800x500 (got %s)" % (what, size))
        check(os.path.getsize(path) < 200 * 1024, "%s: headline.png small (%d bytes)" % (what, os.path.getsize(path)))


def have_matplotlib():
    p = subprocess.run([sys.executable, "-c", "import matplotlib"], capture_output=True)
    return p.returncode == 0


def one_line_failure(rc, err, what):
    check(rc == 1, "%s: exit status 1 (got %d)" % (what, rc))
    lines = err.strip().splitlines()
    check(len(lines) == 1 and lines[0].startswith("plot.py: "), "%s: one line on stderr (got %r)" % (what, err))


def main():
    if len(sys.argv) != 2:
        print("usage: test_plot.py PATH/TO/plot.py", file=sys.stderr)
        return 2
    plot = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="sqbench-plot-") as tmp:
        # Failures first: they need no matplotlib.
        rc, _, err = run(plot, os.path.join(tmp, "nothing-here"))
        one_line_failure(rc, err, "missing CSV")
        rc, _, err = run(plot, write(os.path.join(tmp, "badheader"), [], header="a,b,c"))
        one_line_failure(rc, err, "not an sqbench CSV")
        rc, _, err = run(plot, write(os.path.join(tmp, "empty"), [], header=""))
        one_line_failure(rc, err, "empty file")
        # No matplotlib: a matplotlib package that cannot be imported shadows it.
        fake = os.path.join(tmp, "fakempl", "matplotlib")
        os.makedirs(fake)
        with open(os.path.join(fake, "__init__.py"), "w") as f:
            f.write("raise ImportError('no matplotlib here (test)')\n")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(fake))
        rc, _, err = run(plot, write(os.path.join(tmp, "nompl"), s_rows()), env=env)
        one_line_failure(rc, err, "no matplotlib")
        check(not os.path.exists(os.path.join(tmp, "nompl", "square.png")), "no matplotlib: no square.png")

        if not have_matplotlib():
            print("test_plot: %s has no matplotlib: only the failures were checked" % sys.executable)
        else:
            # Everything.
            d = write(os.path.join(tmp, "all"), s_rows(limits=True) + other_rows())
            rc, out, err = run(plot, d)
            check(rc == 0, "all: exit status 0 (got %d: %s)" % (rc, err.strip()))
            expect_files(d, FAMILIES, True, "all")
            text = svg_text(os.path.join(d, "square.svg")) or ""
            # Exact power laws with a symmetric spread: the fitted slopes are exact.
            check("sqf (k=1.00)" in text, "all: square.svg labels sqf with k=1.00")
            check("seed (k=2.12)" in text, "all: S2 seed's slope fitted over its ok points only")
            check("hit the time limit" in text, "all: square.svg marks the limit")
            check("allskip" not in text, "all: a variant with only skipped rows is left out")
            check("median of 5 runs" in text, "all: square.svg says median of 5 runs")
            text = svg_text(os.path.join(d, "c1.svg")) or ""
            check("M/M/1//N model" in text, "all: c1.svg has the model curve")
            check("efficiency" not in text and "calibration" not in text and "no-lock" not in text,
                  "all: c1.svg plots parallelism only")
            for t in ("1 thread", "2 threads", "4 threads", "8 threads"):
                check(t in text, "all: c1.svg has a panel for %s" % t)
            check("work per CPU-second" in text, "all: c1.svg has the CPU-cost row")
            for fam in ("c2", "o1"):
                text = svg_text(os.path.join(d, fam + ".svg")) or ""
                check("CPU-ns per acquisition" in text, "all: %s.svg has a CPU-cost panel" % fam)
            # Invalid points are left out of the plots.
            spec = importlib.util.spec_from_file_location("sqbench_plot", plot)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            data = mod.Data(mod.read_csv(os.path.join(d, "sqbench.csv")))
            ttas = data.series("C1", "parallelism", per_threads=True).get(("ttas", 1), [])
            check(ttas and all(p[0] != 0 for p in ttas), "all: an invalid C1 point is not drawn")
            text = svg_text(os.path.join(d, "u1.svg")) or ""
            check("pair/sqf" in text and "20 instr" in text, "all: u1.svg annotates instructions")
            text = svg_text(os.path.join(d, "o1.svg")) or ""
            check("Jain" in text and "256" in text, "all: o1.svg has fairness and 256 threads")
            text = svg_text(os.path.join(d, "w1.svg")) or ""
            check("sqf-latch" in text and "1024" in text, "all: w1.svg has the variants and k=1024")

            # Only the S rows (no limits).
            d = write(os.path.join(tmp, "sonly"), s_rows())
            rc, out, err = run(plot, d)
            check(rc == 0, "S only: exit status 0 (got %d: %s)" % (rc, err.strip()))
            expect_files(d, ["square"], True, "S only")
            text = svg_text(os.path.join(d, "square.svg")) or ""
            check("seed (k=2.12)" in text, "S only: S2 seed fitted k=2.12")

            # S without S2 (no headline), plus garbage rows that must be ignored.
            rows = [r for r in s_rows() if r[0] != "S2"]
            d = write(os.path.join(tmp, "nos2"), rows,
                      extra="S1,sqf,100\nS1,sqf,x,100,0,seconds,1,ok\nS1,sqf,100,100,0,seconds,1,weird\n")
            rc, out, err = run(plot, d)
            check(rc == 0, "no S2: exit status 0 (got %d: %s)" % (rc, err.strip()))
            expect_files(d, ["square"], False, "no S2")

            # One experiment of each other family alone.
            for exp, fam in (("C1", "c1"), ("C2", "c2"), ("W1", "w1"), ("W2", "w2"), ("O1", "o1"),
                             ("U1", "u1"), ("Q1", "q1"), ("Q2", "q2")):
                d = write(os.path.join(tmp, "only-" + fam), [r for r in other_rows() if r[0] == exp])
                rc, out, err = run(plot, d)
                check(rc == 0, "%s only: exit status 0 (got %d: %s)" % (exp, rc, err.strip()))
                expect_files(d, [fam], False, exp + " only")

            # A header alone: nothing to draw, not an error.
            d = write(os.path.join(tmp, "headeronly"), [])
            rc, out, err = run(plot, d)
            check(rc == 0, "header only: exit status 0 (got %d: %s)" % (rc, err.strip()))
            expect_files(d, [], False, "header only")

            # Every point of an experiment skipped: no figure, no crash.
            d = write(os.path.join(tmp, "allskipped"),
                      [("S1", "sqf", n, n, r, "seconds", "", "skipped") for n in (100, 200) for r in range(5)])
            rc, out, err = run(plot, d)
            check(rc == 0, "all skipped: exit status 0 (got %d: %s)" % (rc, err.strip()))
            expect_files(d, [], False, "all skipped")

        if os.environ.get("SQBENCH_PLOT_KEEP"):
            keep = os.environ["SQBENCH_PLOT_KEEP"]
            subprocess.run(["cp", "-r", tmp + "/.", keep], check=False)
    if FAILURES:
        print("test_plot: %d check(s) failed" % len(FAILURES))
        return 1
    print("test_plot: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
