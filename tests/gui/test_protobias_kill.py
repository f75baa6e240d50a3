"""End to end: the workstation as a separate process rates 14 images in the ProtoBias rating mode
with real key presses (1-4, some with notes), is killed with SIGKILL right after the 14th rating is
acknowledged (`ACK n protobias.fidelity <image>` on stdout), and every acknowledged rating and note
is in the project when it is opened again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.proc import Lines
from workstation.methods.protobias.project_demo import add_demo
from workstation.store import Project

from .conftest import ROOT

pytestmark = [pytest.mark.gui, pytest.mark.slow]
N = 14
START_TRIES = 1200  # × 50 ms: the driver waits at most a minute for the window to be ready

DRIVER = r'''
# runs inside the workstation process (WORKSTATION_TEST_DRIVER): real key events via QTest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest

w = window
KEYS = [Qt.Key_1, Qt.Key_2, Qt.Key_3, Qt.Key_4]
step = [0]


def tick():
    i = step[0]
    if i >= N:
        return  # wait to be killed
    page = w.protobias_page.rating
    if i % 5 == 0:
        QTest.mouseClick(page.bar.notes.viewport(), Qt.LeftButton)
        QTest.keyClicks(page.bar.notes, f"note {i}")
    page.panes["A"].view.setFocus()
    QTest.keyClick(page.panes["A"].view, KEYS[i % 4])
    step[0] += 1
    QTimer.singleShot(0, tick)


tries = [0]


def start():
    # bounded: a window that never becomes ready ends the process with why, never a silent wait
    page = getattr(w, "protobias_page", None)
    if page is None or not page.rating.controller.queue or not w.isActiveWindow():
        tries[0] += 1
        if tries[0] > START_TRIES:
            from PySide6.QtWidgets import QApplication

            print(f"DRIVER failed: after {START_TRIES} tries the window is not ready (page: {page is not None}, "
                  f"active window: {QApplication.activeWindow()!r}, modal: {QApplication.activeModalWidget()!r})",
                  flush=True)
            import os

            os._exit(4)
        w.raise_()
        w.activateWindow()
        QTimer.singleShot(50, start)
        return
    w.show_tab("ProtoBias")
    page.show_page("rating")
    print("DRIVER ready", flush=True)
    QTimer.singleShot(0, tick)


start()
'''


def test_ratings_survive_sigkill(tmp_path: Path) -> None:
    folder = tmp_path / "pb"
    with Project.create(folder) as p:
        add_demo(p, small=True)
        p.set_setting("annotator", "e2e")
    driver = tmp_path / "driver.py"
    driver.write_text(f"N = {N}\nSTART_TRIES = {START_TRIES}\n" + DRIVER, encoding="utf-8")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", WORKSTATION_ACK="1", WORKSTATION_TEST_DRIVER=str(driver),
               WORKSTATION_SETTINGS=str(tmp_path / "child.ini"))
    proc = subprocess.Popen([sys.executable, "main.py", "gui", "--project", str(folder)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    acked: list[str] = []
    with Lines(proc, timeout=180) as out:  # every read waits at most until this deadline
        for line in out:
            assert not line.startswith("DRIVER failed"), out.tail()
            if line.startswith("ACK "):
                _, n, task, target = line.split()
                assert task == "protobias.fidelity"
                acked.append(target)
                assert int(n) == len(acked)
                if int(n) == N:
                    os.kill(proc.pid, signal.SIGKILL)  # right after the last acknowledgement
                    break
        assert len(acked) == N, out.tail()
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL

    with Project.open(folder) as p:  # the lock went with the process; the WAL is replayed
        latest = {e.target_id: e for e in p.labels.latest("protobias.fidelity", "e2e")}
        assert [latest[t].value for t in acked] == [str(1 + i % 4) for i in range(N)]
        assert [latest[t].notes for t in acked] == [f"note {i}" if i % 5 == 0 else None for i in range(N)]
        assert all(latest[t].target_kind == "image" for t in acked) and len(latest) == N
        # two images per triplet, in the blind queue's order: the 14 ratings cover 7 whole triplets
        roles = [t.rpartition(":")[2].split("_")[0] for t in acked]
        assert sorted(roles) == ["adv"] * 7 + ["corr"] * 7
