#!/usr/bin/env bash
# pyversions.sh: build the CPython module (python/) with every CPython 3.8 to
# 3.13 installed under ~/.pyenv/versions and run its pytest suite on each,
# offline.  scripts/test.sh's `pyversions` configuration runs it.
#
#   scripts/pyversions.sh            every version 3.8 .. 3.13 that is present
#   scripts/pyversions.sh 3.8 3.13   only those
#
# Versions older than 3.8, which pyenv may hold too (2.7, 3.6, 3.7), are not
# tried: the package requires 3.8 (pyproject.toml's requires-python, as
# aiologic's), 3.6 and 3.7 are past their end of life, and 2.7 is Python 2.
# A 3.8+ version that is not present is named and skipped; the script fails
# if any present version fails to build or to pass.
#
# Nothing is downloaded.  pyenv's interpreters have pip but not always
# setuptools (3.12+ bundle none, 3.8's and 3.9's predate pyproject.toml's
# [project]), and never wheel, pytest or hypothesis.  Debian's pure-Python
# packages serve every version, each interpreter seeing only those (a
# directory of symlinks on PYTHONPATH), never all of Debian's dist-packages,
# whose compiled modules are for 3.11 alone:
#   build: setuptools 66, for `setup.py build` into out/test/pyversions/3.X/build
#          (Debian's setuptools cannot run `pip install` outside Debian's
#          python3: its install command expects install_layout, from Debian's
#          distutils; the `python` configuration tests the pip install);
#   tests: pytest 7.2 and hypothesis 6.67 with their dependencies (attrs,
#          iniconfig, packaging, pluggy, py, sortedcontainers; exceptiongroup
#          and tomli, which 3.8 to 3.10 need).
# The libraries the tests also run under (trio, anyio, uvloop, gevent,
# eventlet, janus) are Debian's, for its 3.11: where one does not import,
# its tests skip, each naming it (SQF_TEST_MISSING_LIBS=skip; in the
# `python` configuration a missing one fails instead).
# Each version's tests are its own: test_lock_tests.py and
# test_queue_cpython.py run that interpreter's test.lock_tests and
# test.test_queue (pyenv's builds ship the test package).  Not run here:
# test_bench_smoke.py (NOT_RUN below says why); the output names it.
#
# Output: out/test/pyversions/3.X/{build,pytest}.log, and a summary line per
# version.  Environment: SQF_PY_TIMEOUT (default 900) bounds each version's
# pytest run.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
OUT="$ROOT/out/test/pyversions"
DIST=/usr/lib/python3/dist-packages
PYENV_VERSIONS=${PYENV_ROOT:-$HOME/.pyenv}/versions
TIMEOUT=${SQF_PY_TIMEOUT:-900}

versions=("$@")
[[ ${#versions[@]} -gt 0 ]] || versions=(3.8 3.9 3.10 3.11 3.12 3.13)

# link_dir DIR NAME...: DIR holds a symlink to each of Debian's NAME (a
# package, a module or its metadata directory, which entry points and
# version checks read).
link_dir() {
    local dir=$1 name
    shift
    rm -rf "$dir"
    mkdir -p "$dir"
    for name in "$@"; do
        [[ -n "$name" && -e "$DIST/$name" ]] || { echo "pyversions: $DIST/$name is missing (scripts/deps.sh)" >&2; return 1; }
        ln -s "$DIST/$name" "$dir/$name"
    done
}

# meta NAME: Debian's metadata directory of distribution NAME.
meta() {
    local m
    m=$(cd "$DIST" && ls -d "$1"-[0-9]*.dist-info "$1"-[0-9]*.egg-info 2>/dev/null | head -1)
    [[ -n "$m" ]] || { echo "pyversions: no metadata for $1 in $DIST" >&2; return 1; }
    echo "$m"
}

mkdir -p "$OUT"
link_dir "$OUT/build-path" setuptools pkg_resources _distutils_hack "$(meta setuptools)"
link_dir "$OUT/test-path" pytest _pytest py pluggy iniconfig attr attrs packaging \
    exceptiongroup tomli sortedcontainers hypothesis _hypothesis_pytestplugin.py \
    _hypothesis_ftz_detector.py "$(meta pytest)" "$(meta pluggy)" "$(meta iniconfig)" \
    "$(meta attrs)" "$(meta packaging)" "$(meta exceptiongroup)" "$(meta tomli)" \
    "$(meta sortedcontainers)" "$(meta hypothesis)"

# Not run on these versions: the benchmark scripts' smoke test, which starts
# dozens of interpreters (scripts/run.sh runs the scripts with Debian's
# python3, and the `python` configuration runs this test).
NOT_RUN=(test_bench_smoke.py)
NOT_RUN_WHY="the benchmark scripts, run with Debian's python3: the python configuration tests them"
ignore=()
for f in "${NOT_RUN[@]}"; do ignore+=(--ignore="$ROOT/python/tests/$f"); done

summary=()
failed=0
for v in "${versions[@]}"; do
    # The newest patch release of 3.X that pyenv holds.
    py=""
    for d in $(ls -d "$PYENV_VERSIONS/$v".* 2>/dev/null | sort -V); do
        [[ -x "$d/bin/python$v" ]] && py="$d/bin/python$v"
    done
    if [[ -z "$py" ]]; then
        echo "python$v: not present, skipped"
        summary+=("$(printf '  python%-5s not present, skipped' "$v")")
        continue
    fi
    full=$("$py" -c 'import platform; print(platform.python_version())')
    dir="$OUT/$v"
    rm -rf "$dir"
    mkdir -p "$dir"
    echo
    echo "== pyversions: python$v ($full, $py)"
    t0=$SECONDS
    # A debug build with -Werror, as the `python` configuration's, into a
    # directory of its own: the package and its extension in build/lib.*.
    if ! (cd "$ROOT/python" && SQF_PY_DEBUG=1 PYTHONPATH="$OUT/build-path" "$py" setup.py build \
        --build-base "$dir/build") >"$dir/build.log" 2>&1; then
        cat "$dir/build.log" >&2
        echo "python$v: BUILD FAILED (log: $dir/build.log)" >&2
        summary+=("$(printf '  python%-5s FAIL  build failed (%s)' "$v" "$full")")
        failed=1
        continue
    fi
    lib=$(ls -d "$dir"/build/lib.*)
    # From elsewhere, so that the built module is the one imported; -rs
    # prints every skip with its reason.  Two warnings are pytest 7.2's own
    # on 3.12+: its assertion rewriting uses ast names that 3.12 deprecates,
    # and its unittest results have no addDuration.
    echo "python$v: not run: ${NOT_RUN[*]} (${NOT_RUN_WHY})"
    rc=0
    (cd "$dir" && SQF_TEST_MISSING_LIBS=skip PYTHONPATH="$lib:$OUT/test-path" timeout "$TIMEOUT" "$py" -m pytest -q \
        -rs -p no:cacheprovider -W "ignore::DeprecationWarning:_pytest.assertion.rewrite" \
        -W "ignore:TestResult has no addDuration method:RuntimeWarning" \
        "${ignore[@]}" "$ROOT/python/tests") 2>&1 | tee "$dir/pytest.log" || rc=$?
    # pytest's last line (an interpreter's messages at exit may follow it).
    result=$(grep -E '^=* ?([0-9]+ (passed|failed|skipped|errors?|deselected)|no tests ran).* in [0-9.]+s' \
        "$dir/pytest.log" | tail -1 | sed -E 's/^=+ //; s/ =+$//')
    if [[ $rc -ne 0 ]]; then
        summary+=("$(printf '  python%-5s FAIL  %4ds  %s (%s)' "$v" $((SECONDS - t0)) "$result" "$full")")
        failed=1
    else
        summary+=("$(printf '  python%-5s PASS  %4ds  %s (%s)' "$v" $((SECONDS - t0)) "$result" "$full")")
    fi
done

echo
echo "== pyversions summary"
for line in "${summary[@]}"; do echo "$line"; done
exit "$failed"
