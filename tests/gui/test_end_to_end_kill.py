"""End to end: the app as a separate process labels 20 items with keys and notes, is killed
with SIGKILL right after the 20th label is acknowledged, and every label and note is there
when the project is opened again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.proc import Lines
from workstation.store import Project

from .conftest import ROOT
from workstation.methods.spatial.store import SpatialStore

pytestmark = [pytest.mark.gui, pytest.mark.slow]

DRIVER = r'''
# runs inside the workstation process (WORKSTATION_TEST_DRIVER): real key events via QTest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

w = window
KEYS = {"P": Qt.Key_P, "F": Qt.Key_F, "U": Qt.Key_U}
step = [0]


def target():
    f = QApplication.focusWidget()
    return f if f is not None and f.isVisible() else w


def tick():
    i = step[0]
    if i >= 20:
        return  # wait to be killed
    if i % 3 == 0:
        QTest.keyClick(target(), Qt.Key_N)  # N: cursor to the notes field
        QTest.keyClicks(w.labeling.notes, f"note {i}")
        QTest.keyClick(w.labeling.notes, Qt.Key_Return)
    QTest.keyClick(target(), KEYS["PFU"[i % 3]])
    step[0] += 1
    QTimer.singleShot(0, tick)


tries = [0]


def start():
    if not w.isActiveWindow():
        tries[0] += 1
        if tries[0] > 3000:  # × 20 ms: bounded, and the process says why it gave up
            print(f"DRIVER failed: the window did not become active (active: {QApplication.activeWindow()!r}, "
                  f"modal: {QApplication.activeModalWidget()!r})", flush=True)
            import os

            os._exit(4)
        w.raise_()
        w.activateWindow()
        QTimer.singleShot(20, start)
        return
    w.method_views["spatial"].review_from_browse(w, 0)
    print("DRIVER ready", flush=True)
    QTimer.singleShot(0, tick)


start()
'''


def test_labels_survive_sigkill(tmp_path: Path, sbuc_images_project: Path) -> None:
    p = Project.open(sbuc_images_project)
    p.set_setting("annotator", "e2e")
    p.close()
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER, encoding="utf-8")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", WORKSTATION_ACK="1",
               WORKSTATION_TEST_DRIVER=str(driver), WORKSTATION_SETTINGS=str(tmp_path / "child.ini"))
    proc = subprocess.Popen([sys.executable, "main.py", "gui", "--project", str(sbuc_images_project)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    acked: list[str] = []
    with Lines(proc, timeout=120) as out:  # every read waits at most until this deadline
        for line in out:
            assert not line.startswith("DRIVER failed"), out.tail()
            if line.startswith("ACK "):
                parts = line.split()  # ACK <n> <task> <sample id>
                n, sid = parts[1], parts[-1]
                acked.append(sid)
                assert int(n) == len(acked)
                if int(n) == 20:
                    os.kill(proc.pid, signal.SIGKILL)  # right after the 20th acknowledgement
                    break
        assert len(acked) == 20, out.tail()
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL

    p = Project.open(sbuc_images_project)  # the lock was released by the kill; the WAL is replayed
    try:
        labels = {r.sample_id: r for r in SpatialStore(p).latest_labels("e2e")}
        assert [labels[s].verdict for s in acked] == ["PASS", "FAIL", "UNDECIDABLE"] * 6 + ["PASS", "FAIL"]
        for i, sid in enumerate(acked):
            assert labels[sid].notes == (f"note {i}" if i % 3 == 0 else None)
        assert len(labels) == 20
    finally:
        p.close()
