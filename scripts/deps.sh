#!/usr/bin/env bash
# deps.sh: install every Debian 12 package that squarefree's build, tests and
# benchmarks need.  Fast when everything is already there (no apt at all).
#
#   scripts/deps.sh            install what is missing
#   scripts/deps.sh --list     print the package list and exit
#
# Runs apt-get as root, or through sudo when not root.
set -euo pipefail

PACKAGES=(
    build-essential gcc g++        # C compiler (gcc builds use -Werror), C++ for the header check
    clang libclang-rt-14-dev       # clang and its sanitizer runtimes (ASan, UBSan, TSan)
    cmake ninja-build pkg-config   # build system; pkg-config for the install check
    valgrind                       # callgrind instruction counts (BENCHMARKS.md U1)
    clang-format                   # the project's formatting
    libck-dev                      # Concurrency Kit: the MCS lock (C1/C2) and ck_ring (Q1) in sqbench
    libnsync-dev                   # nsync: mutex, cv, note and counter peers in sqbench
    libabsl-dev                    # Abseil: absl::Mutex, CondVar, Notification, Barrier peers in sqbench
    libconcurrentqueue-dev         # moodycamel::BlockingConcurrentQueue, a queue peer in sqbench Q1/Q2
    liburing-dev                   # io_uring: the event-loop backend (sqf_loop)
    libuv1-dev                     # libuv: examples/loop_libuv.c, sqbench W2 peers
    python3-matplotlib             # sqbench plots
    python3-dev python3-setuptools # the CPython module (python/)
    python3-wheel                  # ... built through pyproject.toml (setuptools' bdist_wheel)
    python3-venv python3-pytest    # ... installed into a venv by pip, and its tests
    python3-hypothesis             # ... property tests of the Python primitives
    python3-tomli                  # ... pytest on CPython 3.8-3.10 reads python/pyproject.toml
                                   # (scripts/pyversions.sh)
    libpython3.11-testsuite        # CPython's own lock_tests.py and test_queue.py, which the
                                   # drop-ins pass (it pulls the matching python3.11)
    python3-janus python3-anyio    # Python peers: janus's queue, anyio's CapacityLimiter
    python3-trio python3-uvloop python3-sniffio python3-outcome  # the libraries tasks run under
    python3-gevent python3-eventlet python3-greenlet
                                   # greenlets: the blocking methods wait in their hub (test_green.py)
    strace                         # test_mixed.py counts a wake-all's system calls
    gcc-aarch64-linux-gnu          # the arm64 test configuration: a cross build for aarch64 ...
    libc6-dev-arm64-cross          # ... against aarch64 glibc (only recommended by the compiler)
    qemu-user                      # ... whose tests run under qemu-aarch64
    liburing-dev:arm64             # ... with the io_uring backend built in (Debian's multiarch
                                   # package: the arm64 architecture is added below)
    git ca-certificates
)

if [[ "${1:-}" == "--list" ]]; then
    printf '%s\n' "${PACKAGES[@]}"
    exit 0
elif [[ $# -gt 0 ]]; then
    echo "deps.sh: unknown option '$1' (usage: scripts/deps.sh [--list])" >&2
    exit 2
fi

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
    echo "deps.sh: this script needs Debian's dpkg and apt-get (Debian 12 is the supported system)" >&2
    exit 1
fi

# Packages named NAME:ARCH are another architecture's (Debian multiarch): dpkg
# must know that architecture before apt can find them.
foreign=()
for p in "${PACKAGES[@]}"; do
    if [[ "$p" == *:* ]] && ! dpkg --print-foreign-architectures | grep -qx "${p#*:}" &&
        [[ " ${foreign[*]} " != *" ${p#*:} "* ]]; then
        foreign+=("${p#*:}")
    fi
done

# A name without :ARCH matches every architecture's instance of a package:
# only the native one (or an Architecture: all one) counts for it.
native=$(dpkg --print-architecture)
missing=()
for p in "${PACKAGES[@]}"; do
    if [[ "$p" == *:* ]]; then
        want="${p#*:} installed"
    else
        want="($native|all) installed"
    fi
    if ! dpkg-query -W -f='${Architecture} ${db:Status-Status}\n' "$p" 2>/dev/null |
        grep -qxE "$want"; then
        missing+=("$p")
    fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
    echo "deps.sh: all ${#PACKAGES[@]} packages installed"
    exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
else
    echo "deps.sh: missing packages (${missing[*]}) and not root, and no sudo to install them" >&2
    exit 1
fi

echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Wait for another apt/dpkg (a colleague's install) rather than failing on its lock.
APT_OPTS=(-o DPkg::Lock::Timeout=600 -o Acquire::Retries=3)
for a in "${foreign[@]}"; do
    echo "deps.sh: adding the $a architecture (dpkg --add-architecture $a)"
    "${SUDO[@]}" dpkg --add-architecture "$a"
done
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${APT_OPTS[@]}" update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${APT_OPTS[@]}" install -y -q --no-install-recommends "${missing[@]}"
echo "deps.sh: done"
