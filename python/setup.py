"""Build the squarefree extension module.

The library's C sources are compiled into the extension itself (static
linking, in effect): the installed module needs nothing else at run time.
Install into a virtual environment, offline, with:

    python3 -m venv venv && venv/bin/pip install --no-build-isolation ./python
"""
import os

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The library's sources this module needs (CMakeLists.txt's SQF_CORE_SOURCES
# and the Linux futex wait backend with its user-space table).
LIB = ["time.c", "cpu.c", "mutex.c", "combine.c", "cond.c", "sem.c", "once.c", "event.c",
       "latch.c", "barrier.c", "cancel.c", "rwlock.c", "countdown.c",
       "wait/futex_linux.c", "wait/table.c"]

ext = Extension(
    "squarefree._squarefree",
    sources=[os.path.join(HERE, "src", "module.c")] + [os.path.join(ROOT, "src", f) for f in LIB],
    include_dirs=[os.path.join(ROOT, "include"), os.path.join(ROOT, "src")],
    define_macros=[("SQF_NO_INLINE", None)],
    extra_compile_args=["-std=gnu11", "-Wall", "-Wextra", "-Werror"]
    + (["-O0", "-g"] if os.environ.get("SQF_PY_DEBUG") else []),
)

setup(
    name="squarefree",
    version="0.1.0",
    description="Synchronization primitives that never meet the square: threads and event "
    "loops on the same primitives",
    packages=["squarefree"],
    package_dir={"squarefree": os.path.join(HERE, "squarefree")},
    package_data={"squarefree": ["py.typed", "*.pyi"]},
    ext_modules=[ext],
    python_requires=">=3.10",
)
