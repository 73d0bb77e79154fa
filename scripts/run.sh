#!/usr/bin/env bash
# run.sh: build squarefree (Release, gcc) into out/release and run the main
# job.  Installs its Debian packages first (scripts/deps.sh).
#
#   scripts/run.sh [ARGS...]     ARGS go to the main job
#
# The main job is, for now, the uncontended lock+unlock microbenchmark
# bench/mutex_pair (BENCHMARKS.md U1, subset); `sqbench report` replaces it
# once it exists.  Example: scripts/run.sh --csv out/mutex_pair.csv
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

echo "== run.sh: main job: bench/mutex_pair $*"
echo
exec "$BUILD/bench/mutex_pair" "$@"
