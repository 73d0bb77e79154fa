#!/usr/bin/env bash
# test.sh: build squarefree from scratch and run the whole test suite in
# every configuration that matters.  Installs its Debian packages first
# (scripts/deps.sh).
#
#   scripts/test.sh              all configurations (CI runs this)
#   scripts/test.sh --quick      only the release build with gcc
#   scripts/test.sh --only a,b   only the named configurations
#
# Configurations (each builds from scratch in its own directory out/test/NAME):
#   release    gcc, Release, futex wait backend, -Werror; the whole CTest suite
#   asan       clang, ASan+UBSan (SQF_SANITIZE=address); the whole suite
#   tsan       clang, TSan (SQF_SANITIZE=thread); the whole suite
#   portable   gcc, the portable pthread wait backend; the suite but the scheduler's
#              tests (explore, weak, fuzz: they do not use the backend)
#   warnings   clang, Debug, -Werror: everything builds without a warning
#   install    cmake --install of `release` into a prefix, then consumers built
#              through pkg-config, through find_package, and as C++ (g++)
#   python     the CPython module (python/): a debug build with -Werror installed
#              into a fresh venv with pip, offline, then its pytest suite
#   pyversions the module built (-Werror) and tested with every CPython 3.8 to 3.13
#              under ~/.pyenv/versions (scripts/pyversions.sh: one after another,
#              Debian's pure-Python pytest; an absent version is named and skipped)
#   arm64      gcc cross build for aarch64 (cmake/aarch64-linux-gnu.cmake), Release,
#              -Werror; the unit and stress tests under qemu-user in their short
#              form (SQF_SHORT), expecting the fallbacks for what qemu lacks
#              (see config_arm64)
#
# Environment: SQF_JOBS (default 2) sets build and test parallelism.
# Fails fast at the first failing configuration, then prints a summary.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
OUT="$ROOT/out/test"
JOBS=${SQF_JOBS:-2}
ALL_CONFIGS=(release asan tsan portable warnings install python pyversions arm64)

usage() {
    echo "usage: scripts/test.sh [--quick] [--only NAME[,NAME...]]   (names: ${ALL_CONFIGS[*]})"
}

configs=("${ALL_CONFIGS[@]}")
while [[ $# -gt 0 ]]; do
    case "$1" in
    --quick) configs=(release) ;;
    --only)
        [[ $# -ge 2 ]] || { echo "test.sh: --only needs a list of names" >&2; exit 2; }
        IFS=, read -r -a configs <<<"$2"
        for c in "${configs[@]}"; do
            [[ " ${ALL_CONFIGS[*]} " == *" $c "* ]] || {
                echo "test.sh: unknown configuration '$c' (names: ${ALL_CONFIGS[*]})" >&2
                exit 2
            }
        done
        shift
        ;;
    -h | --help) usage; exit 0 ;;
    *) echo "test.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

bash "$ROOT/scripts/deps.sh"
mkdir -p "$OUT"

# --- bookkeeping: one summary line per configuration --------------------------
summary=()
current=""
current_start=0
t_all=$SECONDS

header() {
    current=$1
    current_start=$SECONDS
    echo
    echo "================================================================================"
    echo "== test.sh: $1: $2"
    echo "================================================================================"
}

passed() {
    summary+=("$(printf '  %-10s PASS  %4ds  %s' "$current" $((SECONDS - current_start)) "$1")")
    current=""
}

on_exit() {
    local rc=$?
    if [[ -n "$current" ]]; then
        summary+=("$(printf '  %-10s FAIL  %4ds' "$current" $((SECONDS - current_start)))")
    fi
    echo
    echo "================================================================================"
    echo "== test.sh summary ($((SECONDS - t_all))s in all; logs in out/test/*.log)"
    for line in "${summary[@]}"; do echo "$line"; done
    local npass=0 nfail=0
    for line in "${summary[@]}"; do
        if [[ "$line" == *" PASS "* ]]; then npass=$((npass + 1)); else nfail=$((nfail + 1)); fi
    done
    if [[ $rc -ne 0 && $nfail -eq 0 ]]; then nfail=1; fi
    echo "configurations: $npass passed, $nfail failed"
    exit "$rc"
}
trap on_exit EXIT

# --- helpers --------------------------------------------------------------------
# configure_build DIR CMAKE_ARGS...: a fresh configure and build in DIR.
configure_build() {
    local dir=$1
    shift
    rm -rf "$dir"
    cmake -S "$ROOT" -B "$dir" -G Ninja "$@"
    cmake --build "$dir" -j "$JOBS"
}

# run_ctest NAME DIR [WRAPPER...]: the whole CTest suite, every test must run.
# Sets ctest_result to ctest's "N% tests passed..." line.
ctest_result=""
run_ctest() {
    local name=$1 dir=$2
    shift 2
    local log="$OUT/$name.log"
    (cd "$dir" && "$@" ctest --output-on-failure --no-tests=error -j "$JOBS" \
        ${CTEST_EXCLUDE:+-LE "$CTEST_EXCLUDE"}) 2>&1 | tee "$log"
    if grep -q "The following tests did not run" "$log"; then
        echo "test.sh: $name: some tests were skipped or not run (see above); tests must not be skipped" >&2
        return 1
    fi
    ctest_result=$(grep -E '^[0-9]+% tests passed' "$log" | tail -1)
    # The examples are programs, not tests, but each must run and exit 0.
    local ex n=0
    for ex in "$dir"/examples/example_*; do
        [[ -x "$ex" ]] || continue
        echo "-- running $(basename "$ex")"
        "$@" timeout 120 "$ex"
        n=$((n + 1))
    done
    ctest_result="$ctest_result; $n example(s) ran"
}

# A sanitizer runtime may refuse to start on this kernel or under ptrace.  Check
# with a tiny program and work around where possible; WRAP holds the wrapper.
WRAP=()
probe_sanitizer() {
    local kind=$1 dir=$2
    mkdir -p "$dir/probe"
    cat >"$dir/probe/probe.c" <<'EOF'
#include <pthread.h>
#include <stdlib.h>
static int x;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static void *f(void *a) { pthread_mutex_lock(&m); x++; pthread_mutex_unlock(&m); return a; }
int main(void) {
    pthread_t t;
    char *p = malloc(16);
    pthread_create(&t, 0, f, 0); f(0); pthread_join(t, 0);
    free(p);
    return x == 2 ? 0 : 1;
}
EOF
    clang -g -fsanitize="$kind" "$dir/probe/probe.c" -o "$dir/probe/probe" -pthread
    WRAP=()
    if "$dir/probe/probe" >"$dir/probe/out.txt" 2>&1; then
        return 0
    fi
    if [[ "$kind" == thread ]] && grep -q "unexpected memory mapping" "$dir/probe/out.txt" &&
        setarch "$(uname -m)" -R "$dir/probe/probe" >/dev/null 2>&1; then
        echo "test.sh: TSan needs ASLR off on this kernel: running the tests under setarch -R"
        WRAP=(setarch "$(uname -m)" -R)
        return 0
    fi
    if [[ "$kind" == address ]] && grep -q "LeakSanitizer" "$dir/probe/out.txt" &&
        ASAN_OPTIONS=detect_leaks=0 "$dir/probe/probe" >/dev/null 2>&1; then
        echo "test.sh: LeakSanitizer cannot run here (ptrace?): leak checking off"
        ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"
        return 0
    fi
    echo "test.sh: a trivial -fsanitize=$kind program does not run here:" >&2
    cat "$dir/probe/out.txt" >&2
    return 1
}

export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"

RELEASE_DIR="$OUT/release"
PREFIX="$OUT/prefix"

build_release() {
    # The install prefix is fixed at configure time (the pkg-config file
    # records it), so the release build is configured for the check's prefix.
    configure_build "$RELEASE_DIR" -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=Release \
        -DSQF_WAIT_BACKEND=futex -DCMAKE_INSTALL_PREFIX="$PREFIX"
}

# --- the configurations -----------------------------------------------------------
config_release() {
    header release "gcc, Release, futex backend, -Werror; all tests"
    build_release
    run_ctest release "$RELEASE_DIR"
    passed "$ctest_result"
}

config_asan() {
    header asan "clang, ASan+UBSan (SQF_SANITIZE=address); all tests"
    local dir="$OUT/asan"
    configure_build "$dir" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DSQF_SANITIZE=address
    probe_sanitizer address "$dir"
    run_ctest asan "$dir" "${WRAP[@]}"
    passed "$ctest_result"
}

config_tsan() {
    header tsan "clang, TSan (SQF_SANITIZE=thread); all tests"
    local dir="$OUT/tsan"
    configure_build "$dir" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DSQF_SANITIZE=thread
    probe_sanitizer thread "$dir"
    run_ctest tsan "$dir" "${WRAP[@]}"
    passed "$ctest_result"
}

config_portable() {
    header portable "gcc, portable wait backend (SQF_WAIT_BACKEND=portable); all tests but the scheduler's"
    local dir="$OUT/portable"
    configure_build "$dir" -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DSQF_WAIT_BACKEND=portable
    # The explore, weak and fuzz tests run on the deterministic scheduler's
    # own wait seam, whatever the backend: the release build runs them
    # with gcc, and here they would run the same code again.
    CTEST_EXCLUDE='explore|weak|fuzz' run_ctest portable "$dir"
    passed "$ctest_result"
}

config_warnings() {
    header warnings "clang, Debug, -Werror: library, tests, benchmarks and examples build cleanly"
    local dir="$OUT/warnings"
    configure_build "$dir" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DSQF_WERROR=ON \
        2>&1 | tee "$OUT/warnings.log"
    passed "clang build without warnings"
}

config_install() {
    header install "cmake --install, then consumers via pkg-config, find_package and g++"
    local src="$ROOT/tests/install" work="$OUT/install"
    # Normally `release` has just built it; bring it up to date in any case.
    if [[ -f "$RELEASE_DIR/build.ninja" ]]; then
        cmake --build "$RELEASE_DIR" -j "$JOBS"
    else
        build_release
    fi
    rm -rf "$PREFIX" "$work"
    mkdir -p "$work"
    cmake --install "$RELEASE_DIR" --prefix "$PREFIX"

    local pcdir
    pcdir=$(dirname "$(find "$PREFIX" -name squarefree.pc -print -quit)")
    [[ -f "$pcdir/squarefree.pc" ]] || { echo "test.sh: no squarefree.pc installed" >&2; return 1; }
    export PKG_CONFIG_PATH="$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    local libdir cflags libs static_libs
    libdir=$(pkg-config --variable=libdir squarefree)
    read -r -a cflags <<<"$(pkg-config --cflags squarefree)"
    read -r -a libs <<<"$(pkg-config --libs squarefree)"
    # Everything a static link needs but the library itself (-pthread, -luring).
    read -r -a static_libs <<<"$(pkg-config --static --libs-only-other squarefree) \
        $(pkg-config --static --libs-only-l squarefree | sed 's/-lsquarefree//')"
    echo "pkg-config: version $(pkg-config --modversion squarefree); cflags: ${cflags[*]}; libs: ${libs[*]}"
    # Every consumer run is bounded: a hang fails the check instead of the CI run.
    local run=(timeout 120)

    echo "-- the shared library exports only sqf_ symbols"
    local stray
    stray=$(nm -D --defined-only "$libdir/libsquarefree.so" | awk '{print $3}' | grep -v '^sqf_' || true)
    if [[ -n "$stray" ]]; then
        echo "test.sh: libsquarefree.so exports symbols without the sqf_ prefix:" >&2
        echo "$stray" >&2
        return 1
    fi

    echo "-- every public header compiles on its own, as C11 (gcc, clang) and C++17 (g++)"
    local h rel
    for h in "$PREFIX"/include/squarefree.h "$PREFIX"/include/squarefree/*.h; do
        rel=${h#"$PREFIX/include/"}
        printf '#include <%s>\nint sqf_header_check_;\n' "$rel" >"$work/hdr.c"
        gcc -std=c11 -Wall -Wextra -Wpedantic -Werror "${cflags[@]}" -fsyntax-only "$work/hdr.c"
        clang -std=c11 -Wall -Wextra -Wpedantic -Werror "${cflags[@]}" -fsyntax-only "$work/hdr.c"
        g++ -std=c++17 -Wall -Wextra -Wpedantic -Werror "${cflags[@]}" -fsyntax-only -x c++ "$work/hdr.c"
    done

    local warn=(-Wall -Wextra -Wpedantic -Werror)
    echo "-- pkg-config consumer, C11 (gcc), shared library"
    gcc -std=c11 "${warn[@]}" "$src/consumer.c" -o "$work/consumer_pc" "${cflags[@]}" "${libs[@]}"
    LD_LIBRARY_PATH="$libdir" "${run[@]}" "$work/consumer_pc"

    echo "-- the README's quick-start program, built as its comment says (pkg-config)"
    awk '/^```c/ { inside = 1; next } /^```/ { if (inside) exit } inside' "$ROOT/README.md" \
        >"$work/readme_hello.c"
    grep -q 'int main' "$work/readme_hello.c" || { echo "test.sh: README has no quick-start program" >&2; return 1; }
    gcc -std=c11 "${warn[@]}" "$work/readme_hello.c" -o "$work/readme_hello" "${cflags[@]}" "${libs[@]}"
    [[ $(LD_LIBRARY_PATH="$libdir" "${run[@]}" "$work/readme_hello" | wc -l) -eq 100 ]] ||
        { echo "test.sh: the README's program did not run its 100 workers" >&2; return 1; }

    echo "-- pkg-config consumer, C11 (clang), static library"
    clang -std=c11 "${warn[@]}" "$src/consumer.c" -o "$work/consumer_static" "${cflags[@]}" \
        "$libdir/libsquarefree.a" "${static_libs[@]}"
    "${run[@]}" "$work/consumer_static"

    echo "-- pkg-config consumer, C++17 (g++), shared library"
    g++ -std=c++17 "${warn[@]}" "$src/consumer.cpp" -o "$work/consumer_cxx" "${cflags[@]}" "${libs[@]}"
    LD_LIBRARY_PATH="$libdir" "${run[@]}" "$work/consumer_cxx"

    echo "-- CMake consumer: find_package(squarefree REQUIRED), shared, static and C++"
    cmake -S "$src" -B "$work/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" \
        -DCMAKE_BUILD_TYPE=Release
    cmake --build "$work/cmake" -j "$JOBS"
    "${run[@]}" "$work/cmake/consumer_cmake"
    "${run[@]}" "$work/cmake/consumer_cmake_static"
    "${run[@]}" "$work/cmake/consumer_cmake_cxx"
    passed "pkg-config (shared, static, C++), find_package (shared, static, C++)"
}

config_python() {
    header python "the CPython module: debug build (-Werror) into a venv with pip, then pytest"
    local dir="$OUT/python"
    rm -rf "$dir" "$ROOT/python/build" "$ROOT"/python/*.egg-info
    mkdir -p "$dir"
    # Debian's python3 (not a pyenv one on PATH): the venv sees Debian's pytest.
    /usr/bin/python3 -m venv --system-site-packages "$dir/venv"
    SQF_PY_DEBUG=1 "$dir/venv/bin/pip" install --no-build-isolation --no-index "$ROOT/python" \
        >"$dir/pip.log" 2>&1 || { cat "$dir/pip.log" >&2; return 1; }
    rm -rf "$ROOT/python/build" "$ROOT"/python/*.egg-info
    # From elsewhere, so that the installed module is the one imported.
    (cd "$dir" && timeout 600 "$dir/venv/bin/python" -m pytest -q -p no:cacheprovider \
        "$ROOT/python/tests") | tee "$dir/pytest.log"
    passed "$(tail -1 "$dir/pytest.log")"
}

config_pyversions() {
    header pyversions "the CPython module with every CPython 3.8..3.13 present (pyenv)"
    bash "$ROOT/scripts/pyversions.sh" 2>&1 | tee "$OUT/pyversions.log"
    # One result per version, from pyversions.sh's summary: "3.8 373+3s; 3.9 ..."
    # (passed+skipped), or "absent".
    passed "$(sed -n '/^== pyversions summary/,$p' "$OUT/pyversions.log" | awk '/^  python/ {
        sub("python", "", $1); r = "absent"
        if (match($0, /[0-9]+ passed/)) r = substr($0, RSTART, RLENGTH - 7)
        if (match($0, /[0-9]+ skipped/)) r = r "+" substr($0, RSTART, RLENGTH - 8) "s"
        printf "%s%s %s", sep, $1, r; sep = "; " }') (passed+skipped)"
}

# The arm64 configuration: the library and its unit and stress tests built
# for aarch64 with Debian's cross gcc, run by CTest under qemu-aarch64
# (CMAKE_CROSSCOMPILING_EMULATOR, set by the toolchain file), for a
# weakly-ordered CPU's view of every atomic protocol.
#
# qemu-user passes futex calls to the host kernel (private and process-shared
# alike) but implements neither io_uring_setup, futex_waitv nor
# set_robust_list (ENOSYS).  A probe run under qemu says which are missing,
# and the tests are told to expect what the library documents for each:
# - io_uring: the build links liburing (Debian's multiarch liburing-dev:arm64),
#   so the io_uring backend is compiled for aarch64 and its set-up fails at
#   run time; sqf_loop_create then refuses it (ENOTSUP) or chooses the
#   fallback on the user-space futex, which the loop tests run in full
#   (SQF_TEST_URING=OFF).  A build without liburing would test only the
#   stub that stands for the backend, never the run-time fallback.
# - the robust futex list: sqf_robust_mutex refuses with ENOTSUP
#   (SQF_TEST_ROBUST=OFF).
# - futex_waitv: a wait that must sleep with a cancellation token sleeps in
#   the library's user-space table instead (cancel.h), which every test of
#   cancellable waits then runs on; a process-shared one gets ENOTSUP, which
#   stress_cancel_handoff checks.
# Emulation runs the stress tests' short form (SQF_SHORT divides their
# iteration counts; every round and check still runs), so that the whole
# configuration takes a few minutes on 2 cores.

config_arm64() {
    header arm64 "aarch64 cross build (gcc, Release, -Werror); unit and stress tests under qemu-user"
    local dir="$OUT/arm64" probe="$OUT/arm64-probe" sysroot=/usr/aarch64-linux-gnu
    # As the toolchain file runs them (it says why the library path).
    local qemu=(qemu-aarch64 -L "$sysroot" -E "LD_LIBRARY_PATH=$sysroot/lib")
    rm -rf "$probe"
    mkdir -p "$probe"
    cat >"$probe/probe.c" <<'EOF'
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
/* Each call is malformed on purpose (EINVAL or EFAULT where it exists):
 * only ENOSYS matters. */
static void probe(const char *name, long r)
{
    printf("%s %s\n", name, r < 0 && errno == ENOSYS ? "absent" : "present");
}
int main(void)
{
    void *head = NULL;
    size_t len = 0;
    probe("io_uring", syscall(SYS_io_uring_setup, 0u, NULL));
    probe("futex_waitv", syscall(SYS_futex_waitv, NULL, 0u, 0u, NULL, 1));
    probe("robust_list", syscall(SYS_get_robust_list, 0, &head, &len));
    return 0;
}
EOF
    aarch64-linux-gnu-gcc -O2 "$probe/probe.c" -o "$probe/probe"
    qemu-aarch64 --version | head -1
    "${qemu[@]}" "$probe/probe" | tee "$probe/out.txt"
    local expect=()
    if grep -qx "io_uring absent" "$probe/out.txt"; then expect+=(-DSQF_TEST_URING=OFF); fi
    if grep -qx "robust_list absent" "$probe/out.txt"; then expect+=(-DSQF_TEST_ROBUST=OFF); fi

    configure_build "$dir" -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/aarch64-linux-gnu.cmake" \
        -DCMAKE_BUILD_TYPE=Release -DSQF_WAIT_BACKEND=futex -DSQF_WERROR=ON -DSQF_WITH_URING=ON \
        -DSQF_BUILD_BENCH=OFF -DSQF_BUILD_EXAMPLES=OFF "${expect[@]}"
    local log="$OUT/arm64.log"
    (cd "$dir" && SQF_SHORT=5 ctest --output-on-failure --no-tests=error -j "$JOBS" \
        -L 'unit|stress') 2>&1 | tee "$log"
    if grep -q "The following tests did not run" "$log"; then
        echo "test.sh: arm64: some tests were skipped or not run (see above); tests must not be skipped" >&2
        return 1
    fi
    passed "$(grep -E '^[0-9]+% tests passed' "$log" | tail -1); $(tr '\n' ' ' <"$probe/out.txt")"
}

for c in "${configs[@]}"; do
    "config_$c"
done
