#!/usr/bin/env bash
# run.sh: build squarefree (Release, gcc) into out/release and run the main
# job, `sqbench report`.  Installs its Debian packages first (scripts/deps.sh).
#
#   scripts/run.sh                 sqbench report --quick --csv out/report, then its
#                                  Python part: the seed's own scripts against the
#                                  Python module's cures (python/bench/seed_scripts.py
#                                  --quick, into out/report/seed_scripts.csv and .png),
#                                  and its queues against janus, queue.Queue and
#                                  asyncio.Queue (python/bench/queues.py --quick)
#   scripts/run.sh processes [ARGS...]
#                                  the seed's process scripts against the cures in
#                                  shared memory (python/bench/seed_scripts.py
#                                  --processes ARGS, e.g. `--cpus 1`, `--sched rr`),
#                                  into out/report/seed_processes.{txt,csv,png}: not
#                                  part of the quick report (the seed's start case
#                                  takes minutes at n = 400)
#   scripts/run.sh ARGS...         sqbench ARGS...   (e.g. `report`, `s2 --n 100,1600`)
#
# The quick report takes under 3 minutes on 2 cores; `scripts/run.sh report
# --csv out/full` is the full one (much longer: O1 alone runs 1 s per point).
# Raw runs go to out/report/sqbench.csv, plots next to it (PNG and SVG).
# Every report (the default, or ARGS starting with `report`) also writes its
# date, machine and summary into docs/results.md (scripts/results_page.py).
#
# Environment: SQF_JOBS (default 2) sets build parallelism.
# The numbers are only as quiet as the machine: do not run it while other
# heavy work (builds, tests) runs on the same cores.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
BUILD="$ROOT/out/release"
JOBS=${SQF_JOBS:-2}

bash "$ROOT/scripts/deps.sh"

echo "== run.sh: building Release (gcc) in out/release"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
    -DCMAKE_BUILD_TYPE=Release -DSQF_BUILD_TESTS=OFF -DSQF_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$BUILD" -j "$JOBS" --target sqbench

# The module built (Release) into a venv of Debian's python3, which sees
# Debian's site packages (janus is a peer in queues.py).
VENV="$ROOT/out/release/pyvenv"
python_venv() {
    rm -rf "$VENV" "$ROOT/python/build" "$ROOT"/python/*.egg-info
    /usr/bin/python3 -m venv --system-site-packages "$VENV"
    "$VENV/bin/pip" install --no-build-isolation --no-index "$ROOT/python" >"$ROOT/out/release/pip.log" 2>&1 ||
        { cat "$ROOT/out/release/pip.log" >&2; exit 2; }
    rm -rf "$ROOT/python/build" "$ROOT"/python/*.egg-info
}

if [ "${1:-}" = processes ]; then
    shift
    echo "== run.sh: python/bench/seed_scripts.py --processes $*"
    mkdir -p "$ROOT/out/report"
    python_venv
    (cd "$ROOT/out/release" && /usr/bin/python3 "$ROOT/python/bench/seed_scripts.py" --processes \
        --python "$VENV/bin/python" --csv "$ROOT/out/report/seed_processes.csv" \
        --plot "$ROOT/out/report" "$@") | tee "$ROOT/out/report/seed_processes.txt"
    exit 0
fi

if [ $# -gt 0 ]; then
    echo "== run.sh: bench/sqbench $*"
    echo
    if [ "$1" != report ]; then
        exec "$BUILD/bench/sqbench" "$@"
    fi
    mkdir -p "$ROOT/out"
    "$BUILD/bench/sqbench" "$@" | tee "$ROOT/out/last-report.txt"
    /usr/bin/python3 "$ROOT/scripts/results_page.py" "$ROOT/out/last-report.txt" "sqbench $*"
    exit 0
fi

echo "== run.sh: bench/sqbench report --quick --csv out/report"
echo
mkdir -p "$ROOT/out/report"
"$BUILD/bench/sqbench" report --quick --csv "$ROOT/out/report" | tee "$ROOT/out/report/report.txt"

# The Python part: the module built (Release) into a venv of Debian's python3.
echo
echo "== run.sh: the Python part: python/bench/seed_scripts.py and queues.py, --quick"
python_venv
# Debian's python3 (matplotlib) draws; the venv's runs each script.
(cd "$ROOT/out/release" && /usr/bin/python3 "$ROOT/python/bench/seed_scripts.py" --quick \
    --python "$VENV/bin/python" --csv "$ROOT/out/report/seed_scripts.csv" --plot "$ROOT/out/report") |
    tee "$ROOT/out/report/seed_scripts.txt"
echo
(cd "$ROOT/out/release" && /usr/bin/python3 "$ROOT/python/bench/queues.py" --quick \
    --python "$VENV/bin/python" --csv "$ROOT/out/report/queues.csv" --plot "$ROOT/out/report") |
    tee "$ROOT/out/report/queues.txt"
/usr/bin/python3 "$ROOT/scripts/results_page.py" "$ROOT/out/report/report.txt" \
    "sqbench report --quick --csv out/report" "$ROOT/out/report/seed_scripts.txt" \
    "$ROOT/out/report/queues.txt"
