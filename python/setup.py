"""Build the squarefree extension module.

The library's C sources are compiled into the extension itself (static
linking, in effect): the installed module needs nothing else at run time.
The package's metadata is in pyproject.toml; this file defines the
extension, which setuptools reads beside it.  Install into a virtual
environment, offline, with:

    python3 -m venv venv && venv/bin/pip install --no-build-isolation ./python
"""
import glob
import os
import platform
import sysconfig

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The library's sources this module needs: its core (src/sources.txt, the
# list CMakeLists.txt reads too), the event-loop driver that asyncio's waits
# run on, and the Linux futex wait backend with its user-space table.
with open(os.path.join(ROOT, "src", "sources.txt")) as f:
    CORE = [line.strip() for line in f if line.strip() and not line.startswith("#")]
LIB = CORE + ["loop.c", "loop/split.c", "loop/uring.c", "loop/fallback.c",
              "wait/futex_linux.c", "wait/table.c"]

# The io_uring loop backend, when liburing's headers and static library are
# there (Debian: liburing-dev), linked in statically as the rest; without
# them asyncio's waits use the fallback backend, which works on any kernel.
# Only this machine's own: with Debian multiarch, another architecture's
# (liburing-dev:arm64, for a cross build) sits beside it in /usr/lib/<triplet>.
TRIPLET = sysconfig.get_config_var("MULTIARCH") or platform.machine() + "-linux-gnu"
URING_A = sorted(glob.glob("/usr/lib/%s/liburing.a" % TRIPLET) + glob.glob("/usr/lib/liburing.a")
                 + glob.glob("/usr/local/lib/liburing.a"))
URING = os.path.exists("/usr/include/liburing.h") and bool(URING_A) \
    and os.environ.get("SQF_PY_URING", "1") != "0"

ext = Extension(
    "squarefree._squarefree",
    # setuptools refuses absolute source paths: these are relative to this
    # directory, which setuptools runs in (pip runs it there).
    sources=sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, "src", "*.c")))
    + [os.path.join("..", "src", f) for f in LIB],
    include_dirs=[os.path.join(ROOT, "include"), os.path.join(ROOT, "src")],
    depends=[os.path.join(HERE, "src", h) for h in ("module.h", "compat.h")],
    define_macros=[("SQF_NO_INLINE", None)] + ([("SQF_HAVE_URING", None)] if URING else []),
    extra_objects=URING_A[:1] if URING else [],
    extra_link_args=["-Wl,--exclude-libs,ALL"],  # liburing's symbols stay private
    # Hidden visibility: the extension exports PyInit__squarefree alone.
    extra_compile_args=["-std=gnu11", "-fvisibility=hidden", "-Wall", "-Wextra", "-Werror"]
    + (["-O0", "-g"] if os.environ.get("SQF_PY_DEBUG") else []),
)

setup(
    packages=["squarefree"],
    package_data={"squarefree": ["py.typed", "*.pyi"]},
    ext_modules=[ext],
)
