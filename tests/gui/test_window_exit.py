"""The window's process leaves cleanly while background work is still running: its workers are
asked to stop and waited for once the event loop ends, so none finds its signals deleted by the
interpreter's teardown ("RuntimeError: Signal source has been deleted" on stderr)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

DRIVER = """
import time
from superqt.utils import create_worker

def slow():
    time.sleep(0.8)
    print("WORKER-DONE", flush=True)
    return 42

worker = create_worker(slow, _start_thread=False)
worker.returned.connect(lambda r: print("RETURNED", r, flush=True))
worker.start()
del worker
print("QUITTING", flush=True)
window.close()
app.quit()
"""


def test_quitting_while_a_worker_runs_waits_for_it_and_prints_no_error(tmp_path: Path) -> None:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(QT_QPA_PLATFORM="offscreen", WORKSTATION_TEST_DRIVER=str(driver),
               WORKSTATION_SETTINGS=str(tmp_path / "settings.ini"))
    r = subprocess.run([sys.executable, "main.py", "gui"], cwd=ROOT, env=env, capture_output=True, text=True,
                       check=False, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    assert "QUITTING" in r.stdout
    assert "WORKER-DONE" in r.stdout, out[-3000:]  # it ran to its end before the process left
    assert "RETURNED" not in r.stdout  # asked to stop: its result goes nowhere after the window
    assert "Signal source has been deleted" not in out and "Traceback" not in out, out[-3000:]


def test_a_worker_that_outlasts_the_wait_is_reported_not_waited_for(qtbot, caplog) -> None:
    from superqt.utils import create_worker
    from ui.app import await_workers

    done: list[int] = []

    def slow() -> int:
        time.sleep(1.0)
        done.append(1)
        return 1

    worker = create_worker(slow, _start_thread=False)
    with qtbot.waitSignal(worker.started, timeout=5000):
        worker.start()
    t = time.perf_counter()
    with caplog.at_level("WARNING", logger="workstation.ui"):
        assert await_workers(timeout_ms=100) is False
    assert time.perf_counter() - t < 0.9 and not done
    assert "still running at exit" in caplog.text
    with qtbot.waitSignal(worker.finished, timeout=5000):
        pass
    assert done == [1]
    assert await_workers(timeout_ms=1000) is True


def test_a_window_that_leaves_once_its_verdicts_are_in_keeps_the_checkers_preparation(
        tmp_path: Path, sbuc_project: Path) -> None:
    """The checker's preparation is written on a thread started from the window's worker pool
    (here made to take a second, as a large one does); the process waits for it when it leaves,
    so the next open finds it whole."""
    from workstation.methods.spatial import prepared_cache

    cache = tmp_path / "user-cache"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(QT_QPA_PLATFORM="offscreen", WORKSTATION_EXIT_WHEN_READY="1", WORKSTATION_CACHE_DIR=str(cache),
               WORKSTATION_DETECTION_CACHE_MIN="0", WORKSTATION_SETTINGS=str(tmp_path / "settings.ini"),
               PYTHONMALLOC="malloc")  # the app in this process (no restart with the C allocator)
    slow_write = ("import runpy, sys, time\n"
                  "from workstation.methods.spatial import prepared_cache as pc\n"
                  "real = pc._save\n"
                  "pc._save = lambda *a: (time.sleep(1.0), real(*a))\n"
                  f"sys.argv = ['main.py', 'gui', '--project', {str(sbuc_project)!r}]\n"
                  "runpy.run_path('main.py', run_name='__main__')\n")
    for _ in range(2):  # the first open prepares and keeps it; the second maps it
        r = subprocess.run([sys.executable, "-c", slow_write], cwd=ROOT, env=env,
                           capture_output=True, text=True, check=False, timeout=120)
        out = r.stdout + r.stderr
        assert r.returncode == 0 and "READY" in r.stdout, out[-3000:]
        assert "Traceback" not in out and "unusable" not in out, out[-3000:]
        (kept,) = cache.glob(f"detections/*/{prepared_cache.PREFIX}*")
        assert (kept / "manifest.json").exists()
        assert not list(cache.glob("detections/*/.tmp-*"))


POOL_WRITE = """
import sys, time
from pathlib import Path

import numpy as np
from PySide6.QtCore import QCoreApplication, QRunnable, QThreadPool, QTimer

from workstation.methods.spatial import prepared_cache as pc

real = pc._save
pc._save = lambda *a: (time.sleep(1.0), real(*a))  # a large preparation takes a while
entry = Path(sys.argv[1])
entry.mkdir(parents=True)
slot = pc.Slot(entry, entry / (pc.PREFIX + "test"))
app = QCoreApplication([])


class Prepare(QRunnable):
    def run(self):  # a worker of the pool, as the window's evaluations are
        pc.save_in_background(slot, {"a": np.arange(10)})


QThreadPool.globalInstance().start(Prepare())
QTimer.singleShot(300, app.quit)
app.exec()
print("LEFT", flush=True)
"""


def test_a_preparation_kept_from_a_pool_worker_is_written_whole_before_the_process_leaves(tmp_path: Path) -> None:
    """Python's own wait at exit skips a thread started from a thread it did not start (a Qt
    pool worker's): the kept preparation's write is waited for at exit all the same."""
    entry = tmp_path / "entry"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["QT_QPA_PLATFORM"] = "offscreen"
    r = subprocess.run([sys.executable, "-c", POOL_WRITE, str(entry)], cwd=ROOT, env=env, capture_output=True,
                       text=True, check=False, timeout=120)
    assert r.returncode == 0 and "LEFT" in r.stdout, r.stdout + r.stderr
    kept = entry / "checker-prepared-test"
    assert (kept / "manifest.json").exists() and (kept / "a.npy").exists(), r.stderr
    assert not list(entry.glob(".tmp-*"))
