"""No module that reaches Qt is first imported off the GUI thread while the window runs.

PySide creates a binding's types, enums and wrappers as a module first reaches them, and Qt
reads them from the GUI thread without Python's lock (an object's meta-object, looked up on
every event). A view module imported on a helper thread while the window was starting crashed
the process now and then (1 start in 20 in one loop; a segmentation fault in PySide's
meta-object lookup on the GUI thread, with the helper importing the worker library's Qt
compatibility layer)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# runs the window as `main.py gui --project P` does, with a hook that notes every first import
# made on a thread other than the main (GUI) one
LAUNCHER = """
import json, runpy, sys, threading
QT = ("PySide6", "shiboken6", "qtpy", "superqt", "pyqtgraph")
QT_FREE_UI = ("ui.loading",)  # the window's own modules that never import Qt
seen = []

class Recorder:
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        reaches_qt = top in QT or (top == "ui" and name not in QT_FREE_UI)
        if reaches_qt and threading.current_thread() is not threading.main_thread():
            seen.append([threading.current_thread().name, name])
        return None

sys.meta_path.insert(0, Recorder())
sys.path.insert(0, ".")  # this checkout's modules, as `python main.py` finds them
sys.argv = ["main.py", "gui", "--project", sys.argv[1]]
try:
    runpy.run_path("main.py", run_name="__main__")
except SystemExit:
    pass
print("OFF-THREAD " + json.dumps(seen), flush=True)
"""

# run once the project's verdicts are in: the window stays open, its event loop running, until
# every helper the open started has ended
DRIVER = """
import threading
from PySide6.QtCore import QTimer

def helpers():
    names = ("warm-imports", "project-load", "project-check")
    return [t.name for t in threading.enumerate() if t.name in names]

def poll():
    if window.spatial.dataset is not None and not window.spatial.checking and not helpers():
        print("OPENED", window.spatial.dataset.n, flush=True)
        window.close()
        app.quit()
    else:
        QTimer.singleShot(20, poll)

poll()
"""


def test_opening_a_project_imports_no_qt_module_off_the_gui_thread(
        tmp_path: Path, sbuc_project: Path) -> None:
    launcher = tmp_path / "launcher.py"
    launcher.write_text(LAUNCHER, encoding="utf-8")
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # PYTHONMALLOC set: the window's process is not started again (the hook would be gone)
    env.update(QT_QPA_PLATFORM="offscreen", WORKSTATION_TEST_DRIVER=str(driver), PYTHONMALLOC="malloc",
               WORKSTATION_SETTINGS=str(tmp_path / "settings.ini"),
               WORKSTATION_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, str(launcher), str(sbuc_project)], cwd=ROOT, env=env,
                       capture_output=True, text=True, check=False, timeout=180)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    assert "OPENED 800" in r.stdout, out[-3000:]  # the project was opened and checked
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("OFF-THREAD "))
    assert line == "OFF-THREAD []", line
