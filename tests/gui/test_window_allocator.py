"""The window's process keeps its Python objects in the C library's heap (PYTHONMALLOC=malloc),
where memory freed by a closed project goes back to the system page by page; the user's own
PYTHONMALLOC is kept, and other commands are left as they are."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import main

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")


def _env_without_a_choice() -> dict[str, str]:
    """This environment, less any allocator choice (the user's or a restart's marker)."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONMALLOC", "WORKSTATION_ALLOCATOR_CHOSEN")}


def _ready_line(tmp_path: Path, **extra: str) -> str:
    env = _env_without_a_choice()
    env.update(QT_QPA_PLATFORM="offscreen", WORKSTATION_EXIT_WHEN_READY="1",
               WORKSTATION_SETTINGS=str(tmp_path / "settings.ini"), **extra)
    r = subprocess.run([sys.executable, "main.py", "gui"], cwd=ROOT, env=env, capture_output=True, text=True, check=False,
                       timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return next(ln for ln in r.stdout.splitlines() if ln.startswith("READY"))


def test_the_window_runs_on_the_c_allocator_unless_the_user_chose_one(tmp_path: Path) -> None:
    assert "allocator=malloc" in _ready_line(tmp_path)
    assert "allocator=pymalloc" in _ready_line(tmp_path, PYTHONMALLOC="pymalloc")


def test_only_the_commands_that_open_the_window_restart(tmp_path: Path) -> None:
    assert main.opens_the_window([])
    assert main.opens_the_window(["gui", "--project", "p"])
    assert main.opens_the_window(["demo", "--project", "p"])
    assert not main.opens_the_window(["demo", "--project", "p", "--no-gui"])
    assert not main.opens_the_window(["gui", "--help"])
    assert not main.opens_the_window(["evaluate", "p"])
    # a command line run stays on Python's own allocator
    env = _env_without_a_choice()
    code = ("import sys, runpy; sys.argv = ['main.py', '--help']\n"
            "try:\n    runpy.run_path('main.py', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "from workstation.util.memory import python_allocator; print('ALLOC', python_allocator())")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                       check=False, timeout=120)
    assert "ALLOC pymalloc" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]


_HOLD = """
import sys
import numpy as np
from workstation.util.memory import keep_freed_memory_for_reuse, trim_heap
def rss_mb():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096 / 2**20
if sys.argv[1] == "keep":
    keep_freed_memory_for_reuse()
base = rss_mb()
blocks = [np.ones(1 << 20) for _ in range(32)]  # 32 blocks of 8 MB, as a move's result arrays
del blocks
freed = rss_mb()
trim_heap()
print("MB", round(freed - base), round(rss_mb() - base))
"""


@pytest.mark.parametrize("mode", ["keep", "default"])
def test_the_window_keeps_freed_blocks_for_the_next_move_until_its_idle_trim(mode: str) -> None:
    """In the window (`keep_freed_memory_for_reuse`) a freed 8 MB block stays in the heap for
    the next slider move to reuse without faulting its pages in again, until the heap is
    trimmed; by default glibc hands such blocks back to the system as they are freed."""
    r = subprocess.run([sys.executable, "-c", _HOLD, mode], cwd=ROOT, env=_env_without_a_choice(),
                       capture_output=True, text=True, check=False, timeout=120)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("MB")), "")
    assert line, r.stdout[-2000:] + r.stderr[-2000:]
    freed, trimmed = (int(x) for x in line.split()[1:])
    if mode == "keep":
        assert freed > 200 and trimmed < 40, line  # held while freed, handed back by the trim
    else:
        assert freed < 40, line
