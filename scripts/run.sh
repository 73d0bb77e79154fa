#!/usr/bin/env bash
# run.sh: build squarefree (Release, gcc) into out/release and run the main
# job.  Installs its Debian packages first (scripts/deps.sh).
#
#   scripts/run.sh [ARGS...]     ARGS go to the main job
#
# The main job is, for now, two benchmarks: the uncontended lock+unlock
# microbenchmark bench/mutex_pair (BENCHMARKS.md U1, subset), then the
# wake-all latency bench/wake_all (W1); `sqbench report` replaces them once
# it exists.  ARGS go to mutex_pair.  Example: scripts/run.sh --csv out/mutex_pair.csv
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
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=Release \
    -DSQF_BUILD_TESTS=OFF -DSQF_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$BUILD" -j "$JOBS"

echo "== run.sh: main job 1/2: bench/mutex_pair $*"
echo
"$BUILD/bench/mutex_pair" "$@"
echo
echo "== run.sh: main job 2/2: bench/wake_all"
echo
exec "$BUILD/bench/wake_all"
