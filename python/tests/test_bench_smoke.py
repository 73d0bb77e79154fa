"""python/bench/seed_scripts.py runs every case and variant, and refuses
bad input (a smoke test on tiny sizes; the figures are the benchmark's)."""
import os
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "bench", "seed_scripts.py")
CASES = [("start", "seed"), ("start", "latch"), ("mutex", "seed"), ("mutex", "countdown"),
         ("notify", "seed"), ("notify", "release-n"), ("notify", "latch"),
         ("floor", "threads")]


@pytest.mark.parametrize("case,variant", CASES)
def test_one_run(case, variant):
    out = subprocess.run([sys.executable, SCRIPT, "--one", case, variant, "10"],
                         capture_output=True, text=True, timeout=60, check=True)
    assert float(out.stdout) > 0


def test_report_on_tiny_sizes(tmp_path):
    csv = tmp_path / "seed.csv"
    out = subprocess.run([sys.executable, SCRIPT, "--n", "8,16", "--runs", "5", "--csv",
                          str(csv)], capture_output=True, text=True, timeout=300, check=True)
    assert "targets met" in out.stdout and "exponent" in out.stdout
    lines = csv.read_text().splitlines()
    assert lines[0] == "case,variant,n,run,seconds"
    assert len(lines) == 1 + len(CASES) * 2 * 5


PROCESS_CASES = [("pstart", "seed"), ("pstart", "latch"), ("pmutex", "seed"),
                 ("pmutex", "countdown"), ("pfloor", "processes")]


@pytest.mark.parametrize("case,variant", PROCESS_CASES)
def test_one_process_run(case, variant):
    out = subprocess.run([sys.executable, SCRIPT, "--one", case, variant, "6", "--cpus", "1"],
                         capture_output=True, text=True, timeout=120, check=True)
    assert float(out.stdout) > 0


def test_process_report_on_tiny_sizes(tmp_path):
    csv = tmp_path / "procs.csv"
    out = subprocess.run([sys.executable, SCRIPT, "--processes", "--n", "3,6", "--runs", "5",
                          "--csv", str(csv)], capture_output=True, text=True, timeout=300,
                         check=True)
    assert "targets met" in out.stdout and "exponent" in out.stdout
    lines = csv.read_text().splitlines()
    assert lines[0] == "case,variant,n,run,seconds"
    assert len(lines) == 1 + len(PROCESS_CASES) * 2 * 5


def test_refuses_few_runs():
    out = subprocess.run([sys.executable, SCRIPT, "--runs", "2"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode != 0 and "at least 5" in out.stderr


QUEUES = os.path.join(os.path.dirname(__file__), "..", "bench", "queues.py")
QUEUE_RUNS = [("PQ1-t2a", "sqf"), ("PQ1-t2a", "janus"), ("PQ1-a2t", "sqf"), ("PQ1-a2t", "janus"),
              ("PQ2", "sqf"), ("PQ2", "queue.Queue"), ("PQ3", "sqf"), ("PQ3", "asyncio.Queue"),
              ("PQ4", "sqf"), ("PQ4", "janus"), ("PQ4", "floor")]


@pytest.mark.parametrize("exp,variant", QUEUE_RUNS)
@pytest.mark.parametrize("size", [1, 3])
def test_queues_one_run(exp, variant, size):
    out = subprocess.run([sys.executable, QUEUES, "--one", exp, variant, str(size), "300"],
                         capture_output=True, text=True, timeout=60, check=True)
    secs, cpu = (float(x) for x in out.stdout.split())
    assert secs > 0 and cpu >= 0


def test_queues_report_on_tiny_sizes(tmp_path):
    csv = tmp_path / "queues.csv"
    out = subprocess.run([sys.executable, QUEUES, "--rounds", "5", "--items", "200", "--pairs",
                          "1,2", "--n", "4,8", "--csv", str(csv)], capture_output=True,
                         text=True, timeout=300, check=True)
    assert "targets met" in out.stdout and "exponent" in out.stdout
    lines = csv.read_text().splitlines()
    assert lines[0] == "experiment,variant,size,round,seconds,cpu_seconds"
    assert len(lines) == 1 + 4 * 2 * 5 * 2 + 2 * 5 * 3
