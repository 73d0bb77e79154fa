"""The README's Python examples run as written (threads on a Latch; threads
and asyncio tasks sharing a Lock, whose final count they assert)."""
import os
import re
import subprocess
import sys

from conftest import require

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def python_blocks():
    with open(README, encoding="utf-8") as f:
        text = f.read()
    section = text[text.index("## Python\n"):]
    section = section[:section.index("\n## ", 1)]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_readme_has_the_examples():
    blocks = python_blocks()
    assert len(blocks) >= 2
    assert any("asyncio" in b and "async with lock" in b for b in blocks)


def test_readme_examples_run():
    for block in python_blocks():
        libs = [m for m in ("trio", "gevent", "eventlet", "anyio", "uvloop")
                if re.search(r"^import .*\b%s\b|^from %s\b" % (m, m), block, re.M)]
        require(*libs)
        # A fresh interpreter per example, as a user would run it.
        r = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
