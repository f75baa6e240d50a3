"""Opening projects: recent projects, a project held by another window or process (a clear
message and a read-only snapshot), creating one, the `gui` command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QPushButton

from tests.proc import Lines
from ui import project_dialogs
from ui.main_window import MainWindow

from .conftest import ROOT, on_next_modal
from workstation.methods.spatial.store import SpatialStore
from workstation.store import Project

pytestmark = pytest.mark.gui


def _click_button(qtbot, box, name: str) -> None:
    b = box.findChild(QPushButton, name)
    assert b is not None, f"no button {name} in {box.text()!r}"
    qtbot.mouseClick(b, Qt.LeftButton)


def test_recent_projects(qtbot, open_window, sbuc_project: Path, png_project: Path) -> None:
    w = open_window(sbuc_project)
    assert w.open_project(png_project)
    assert project_dialogs.recent_projects()[:2] == [str(png_project.resolve()), str(sbuc_project.resolve())]
    w.recent_menu.aboutToShow.emit()  # the menu is filled as it opens
    texts = [a.text() for a in w.recent_menu.actions()]
    assert texts[:2] == [str(png_project.resolve()), str(sbuc_project.resolve())]
    with qtbot.waitSignal(w.load_finished, timeout=30000) as blocker:  # read without blocking the window
        w.recent_menu.actions()[1].trigger()
    assert blocker.args == [True]
    assert w.spatial.project.folder.resolve() == sbuc_project.resolve()
    assert w.windowTitle().startswith("sbuc_project")


def test_settings_are_isolated_per_test(isolated_settings: Path) -> None:
    assert project_dialogs.recent_projects() == []
    assert project_dialogs.settings().fileName() == str(isolated_settings)


def test_second_window_gets_a_message_and_a_snapshot(qtbot, open_window, sbuc_images_project: Path) -> None:
    sbuc_project = sbuc_images_project
    w1 = open_window(sbuc_project)
    w1.method_views["spatial"].review_from_browse(w1, 0)
    qtbot.keyClick(w1, Qt.Key_P)  # a committed label, part of the snapshot
    w2 = MainWindow(ask_annotator=lambda: "bob")
    qtbot.addWidget(w2)
    w2.show()
    got = {}

    def answer(box) -> None:
        got["text"] = box.text() + " " + box.informativeText()
        _click_button(qtbot, box, "openSnapshot")

    seen = on_next_modal(qtbot, answer)
    assert w2.open_project(sbuc_project)
    assert seen and "open in another window or process" in got["text"]
    assert w2.spatial.project.read_only
    assert "read-only" in w2.windowTitle()
    assert len(SpatialStore(w2.spatial.project).latest_labels()) == 1
    assert not w2.labeling.buttons["PASS"].isEnabled()
    w2.close()
    # the first window still writes
    w1.activateWindow()
    qtbot.waitUntil(lambda: w1.isActiveWindow(), timeout=2000)
    qtbot.keyClick(w1, Qt.Key_F)
    assert len(SpatialStore(w1.spatial.project).latest_labels()) == 2


def test_another_process_holds_the_project(qtbot, open_window, sbuc_project: Path) -> None:
    code = ("import sys, time; from workstation.store import Project; p = Project.open(sys.argv[1]); "
            "print('HELD', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(sbuc_project)], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    held = Lines(holder, timeout=60)
    try:
        held.wait_for(lambda line: line.strip() == "HELD")
        w = open_window(None)
        got = {}

        def cancel(box) -> None:
            got["text"] = box.text() + " " + box.informativeText()
            box.button(QMessageBox.Cancel).click()

        seen = on_next_modal(qtbot, cancel)
        assert not w.open_project(sbuc_project)
        assert seen and "another process" in got["text"]
        assert w.spatial.project is None

        seen = on_next_modal(qtbot, lambda box: _click_button(qtbot, box, "openSnapshot"))
        assert w.open_project(sbuc_project)
        assert seen and w.spatial.project.read_only
        assert w.spatial.dataset.n == 800
        w.close_project()
    finally:
        held.close()


def test_read_only_when_locked_opens_a_snapshot_without_asking(qtbot, open_window, sbuc_project: Path) -> None:
    w1 = open_window(sbuc_project)
    w2 = open_window(None)
    assert w2.open_project(sbuc_project, read_only=True)
    assert w2.spatial.project.read_only
    assert w1.spatial.project is not None and not w1.spatial.project.read_only


def test_create_a_project(qtbot, open_window, tmp_path: Path) -> None:
    folder = tmp_path / "fresh"
    w = open_window(None)
    assert project_dialogs.create_project(w, folder)
    assert w.open_project(folder)
    assert w.browser.count_label.text() == "0 of 0 samples"
    assert w.viewer.left.view.message.startswith("Open a project")


def test_not_a_project(qtbot, open_window, tmp_path: Path) -> None:
    w = open_window(None)
    got = {}

    def read(box) -> None:
        got["text"] = box.text()
        box.accept()

    seen = on_next_modal(qtbot, read)
    assert not w.open_project(tmp_path)
    assert seen and "no project" in got["text"].lower()


def test_gui_command_reports_a_missing_project(tmp_path: Path) -> None:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    r = subprocess.run([sys.executable, "main.py", "gui", "--project", str(tmp_path / "nope")], cwd=ROOT,
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2
    assert "no project in" in r.stderr


def test_background_open_keeps_the_window_responsive(qtbot, open_window, sbuc_project: Path) -> None:
    w = open_window(None)
    with qtbot.waitSignal(w.load_finished, timeout=30000) as blocker:
        w.open_project_in_background(sbuc_project)
        assert w.spatial.project is None  # returned at once; the loading runs on a worker thread
        assert w.start_page.hint.text().startswith("Opening")
    assert blocker.args == [True]
    assert w.spatial.dataset.n == 800
    assert w.browser.count_label.text() == "800 of 800 samples"
    assert project_dialogs.recent_projects()[0] == str(sbuc_project.resolve())
    # a second background open of the same folder, here, meets the in-process lock
    got = {}

    def cancel(box) -> None:
        got["text"] = box.text()
        box.button(QMessageBox.Cancel).click()

    w2 = open_window(None)
    seen = on_next_modal(qtbot, cancel)
    with qtbot.waitSignal(w2.load_finished, timeout=30000) as blocker2:
        w2.open_project_in_background(sbuc_project)
    assert seen and blocker2.args == [False]


def test_jobs_panel_is_hosted_in_a_dock(qtbot, open_window, sbuc_project: Path) -> None:
    pytest.importorskip("ui.jobs_panel")
    w = open_window(sbuc_project)
    w.install_extra_panels()
    dock = w.docks["Jobs"]
    assert not dock.isVisible()
    qtbot.keyClick(w, Qt.Key_J, Qt.ControlModifier)
    assert dock.isVisible()
    assert dock.toggleViewAction() in w.panels_menu.actions()
    qtbot.keyClick(w, Qt.Key_J, Qt.ControlModifier)
    assert not dock.isVisible()


def test_add_panel_as_tab_and_dock(qtbot, open_window) -> None:
    from PySide6.QtWidgets import QLabel

    w = open_window(None)
    w.add_panel("Reports", QLabel("reports"), "tab")
    assert w.tabs.tabText(w.tabs.count() - 1) == "Reports"
    dock = w.add_panel("Notes", QLabel("notes"), "right")
    assert dock.widget().text() == "notes" and w.docks["Notes"] is dock
    with pytest.raises(ValueError):
        w.add_panel("Bad", QLabel("x"), "middle")


def test_background_open_says_what_it_is_doing(qtbot, open_window, sbuc_project) -> None:
    """While a project loads the window says so (status bar and the start page)."""
    w = open_window()
    with qtbot.waitSignal(w.load_finished, timeout=30000) as sig:
        w.open_project_in_background(sbuc_project)
        assert w.statusBar().currentMessage() == f"Opening {sbuc_project.name}…"
        # not "no project — File → Open" nor "Start here: open a project" while one is opening
        assert w.project_label.text() == f"opening {sbuc_project.name}…"
        assert w.start_page.hint.text().startswith(f"Opening <b>{sbuc_project.name}</b>")
    assert sig.args == [True]
    assert w.project_label.text() == sbuc_project.name
    assert w.browser.hint.text().startswith("Next:")
    # the samples are shown first; the checker evaluates them on a worker thread meanwhile
    assert w.spatial.dataset.n == 800 and w.spatial.verdicts is None and w.spatial.checking
    m = w.browser.model
    assert m.total == 800 and m.data(m.index(0, 5)) == "checking…"  # the Checker column says so
    assert w.statusBar().currentMessage() == (f"opened {sbuc_project.name}: 800 samples — the checker is "
                                              "evaluating them…")
    with qtbot.waitSignal(w.verdicts_checked, timeout=30000):
        pass
    assert w.statusBar().currentMessage() == f"opened {sbuc_project.name}: 800 samples"
    assert m.data(m.index(0, 5)) in ("PASS", "FAIL", "UNDECIDABLE")
    from workstation.methods.spatial.checker import evaluate

    want = evaluate(w.spatial.dataset, w.spatial.config)
    assert not w.spatial.checking and w.spatial.baseline is w.spatial.verdicts
    assert np.array_equal(w.spatial.verdicts.verdict, want.verdict)
    assert w.counts_label.text().startswith("PASS ")  # the status bar counts them


def test_the_background_check_starts_before_the_views_take_the_samples(qtbot, open_window, sbuc_project,
                                                                      monkeypatch) -> None:
    """The checker is already running while the views take the loaded samples (the two overlap:
    it does not wait for the event loop to start it), and its verdicts are taken once the
    adoption is done."""
    import threading

    from ui.methods.spatial import loading as loading_module

    w = open_window()
    running = threading.Event()
    evaluate_active = loading_module.evaluate_active

    def evaluating(*a):
        running.set()
        return evaluate_active(*a)

    monkeypatch.setattr(loading_module, "evaluate_active", evaluating)
    seen: list[bool] = []
    adopt = w.spatial._adopt

    def recording(loaded) -> None:  # the GUI thread: no event is handled until it returns
        seen.append(running.wait(timeout=10))
        adopt(loaded)

    monkeypatch.setattr(w.spatial, "_adopt", recording)
    with qtbot.waitSignal(w.load_finished, timeout=30000):
        w.open_project_in_background(sbuc_project)
    assert seen == [True]
    with qtbot.waitSignal(w.verdicts_checked, timeout=30000):
        pass
    assert not w.spatial.checking and w.spatial.verdicts is not None and w.spatial.verdicts is w.spatial.baseline


def test_a_slider_moved_before_the_background_check_ends_keeps_its_verdicts(qtbot, open_window,
                                                                             sbuc_project) -> None:
    """A config changed while the verdicts of the opened project are still being evaluated stays
    live; the check that arrives afterwards becomes the applied config's baseline only."""
    w = open_window()
    with qtbot.waitSignal(w.load_finished, timeout=30000):
        w.open_project_in_background(sbuc_project)
    assert w.spatial.checking
    active = w.spatial.config
    moved = active.replace(margin=active.margin + 0.05)
    w.spatial.set_config(moved)  # evaluated at once, on the GUI thread
    live = w.spatial.verdicts
    assert live is not None and live.config == moved
    with qtbot.waitSignal(w.verdicts_checked, timeout=30000):
        pass
    assert w.spatial.config == moved and w.spatial.verdicts is live
    assert w.spatial.baseline is not None and w.spatial.baseline.config == active


def test_closing_the_project_before_the_background_check_ends_leaves_nothing_behind(
        qtbot, open_window, sbuc_project) -> None:
    w = open_window()
    with qtbot.waitSignal(w.load_finished, timeout=30000):
        w.open_project_in_background(sbuc_project)
    assert w.spatial.checking
    w.close_project()
    assert w.spatial.project is None and not w.spatial.checking
    with qtbot.waitSignal(w.verdicts_checked, timeout=30000):
        pass  # the check of the closed project ends and is dropped
    assert w.spatial.verdicts is None and w.spatial.dataset is None
    # the project opens again at once, with its verdicts
    with qtbot.waitSignal(w.load_finished, timeout=30000):
        w.open_project_in_background(sbuc_project)
    with qtbot.waitSignal(w.verdicts_checked, timeout=30000):
        pass
    assert w.spatial.dataset.n == 800 and w.spatial.verdicts is not None and not w.spatial.checking


def test_a_closed_project_leaves_no_dataset_or_verdicts_behind(qtbot, open_window, sbuc_project) -> None:
    """Every view lets go of a closed project's arrays (a 1M-sample project's are ~2 GB): the
    calibration panel's summaries and tables, the Browse table's live columns, the pair viewer."""
    import gc
    import weakref

    w = open_window(sbuc_project)
    w.install_extra_panels()
    for tab in ("Calibration", "Browse"):
        w.show_tab(tab)
        qtbot.wait(50)
    st = w.spatial
    st.set_config(st.config.replace(margin=st.config.margin + 0.05))  # a live set beside the applied one
    w.show_tab("Calibration")
    qtbot.wait(50)
    w.method_views["spatial"].review_from_browse(w, 3)
    qtbot.wait(50)
    refs = {"dataset": weakref.ref(st.dataset), "verdicts": weakref.ref(st.verdicts),
            "applied verdicts": weakref.ref(st.baseline)}
    assert st.verdicts is not st.baseline
    w.close_project()
    qtbot.wait(50)
    gc.collect()
    assert {name: ref() is not None for name, ref in refs.items()} == dict.fromkeys(refs, False)
    assert w.statusBar().currentMessage() == f"closed {sbuc_project.name}"  # not "opened …" any more
    # and it opens again as before
    assert w.open_project(sbuc_project)
    assert w.spatial.dataset.n == 800 and w.spatial.verdicts is not None


def test_a_window_closed_while_its_project_loads_does_not_adopt_it(qtbot, open_window, sbuc_project,
                                                                   monkeypatch) -> None:
    """The window is closed while its project loads: the load is cancelled (or, when it had
    already ended, its project closed), nothing takes the project, and another window opens the
    folder at once."""
    import threading

    import ui.loading

    release = threading.Event()
    real = ui.loading.load_project
    loads: list[object] = []

    def held(*a, **k):
        release.wait(30)
        try:
            loaded = real(*a, **k)
        except ui.loading.OpeningCancelled as e:
            loads.append(e)
            raise
        loads.append(loaded)
        return loaded

    monkeypatch.setattr(ui.loading, "load_project", held)
    w = open_window()
    w.open_project_in_background(sbuc_project)
    assert w.opener.load_worker is not None
    w.close()
    release.set()
    qtbot.waitUntil(lambda: w.opener.load_worker is None, timeout=30000)
    assert len(loads) == 1 and w.spatial.project is None and w.spatial.dataset is None
    assert w.project_label.text() == "no project — File → Open (Ctrl+O)"
    assert isinstance(loads[0], ui.loading.OpeningCancelled)  # the close cancelled it before it read
    monkeypatch.setattr(ui.loading, "load_project", real)
    w2 = open_window()
    assert w2.open_project(sbuc_project)
    assert w2.spatial.dataset.n == 800


def test_a_background_open_that_fails_says_so_and_leaves_the_window_as_it_was(qtbot, open_window, sbuc_project,
                                                                             tmp_path) -> None:
    """A project whose database cannot be read: one message naming the problem; the window
    still shows the project it had, under its name, and Browse its samples."""
    bad = tmp_path / "broken"
    bad.mkdir()
    (bad / project_dialogs.DB_NAME).write_bytes(b"this is not a database" * 100)
    w = open_window(sbuc_project)
    got: dict[str, str] = {}

    def close(box) -> None:
        got["text"] = box.text()
        box.close()

    seen = on_next_modal(qtbot, close, timeout_ms=30000)
    with qtbot.waitSignal(w.load_finished, timeout=30000) as sig:
        w.open_project_in_background(bad)
        assert w.project_label.text() == "opening broken…"
    assert sig.args == [False] and seen
    assert "broken" in got["text"], got  # the error names the folder
    assert w.opener.load_worker is None
    assert w.spatial.project is not None and w.spatial.project.folder.resolve() == sbuc_project.resolve()
    assert w.project_label.text() == sbuc_project.name
    assert w.browser.count_label.text() == "800 of 800 samples"
    assert w.browser.hint.text().startswith("Next:")


def test_the_gui_command_starts_reading_the_project_before_it_builds_the_window(sbuc_project, monkeypatch) -> None:
    """`main.py gui --project DIR` reads the project on a thread of its own while Qt is imported
    and the window is built, and hands that load to the window."""
    import argparse

    import ui.app
    import ui.command

    seen: dict[str, object] = {}

    def run_app(project, read_only=False, argv=None, early=None, reopen_last=False) -> int:
        seen["early"] = early
        return 0

    monkeypatch.setattr(ui.app, "run", run_app)
    assert ui.command.run(argparse.Namespace(project=sbuc_project, read_only=False)) == 0
    early = seen["early"]
    assert early is not None and early.folder == sbuc_project and not early.read_only
    assert early.thread.name == "project-load" and early.thread.ident is not None  # started already
    got: dict[str, object] = {}
    early.then(lambda result, ok: got.update(result=result, ok=ok))
    early.thread.join(30)
    assert got["ok"] is True
    loaded = got["result"]
    try:
        part = loaded.parts["spatial"]
        assert part.dataset.n == 800 and part.verdicts is None  # the checker runs beside the views
    finally:
        loaded.project.close()


@pytest.mark.parametrize("ended_first", [False, True], ids=["still-loading", "ended-before"])
def test_the_window_takes_the_load_started_before_it(qtbot, open_window, sbuc_project, monkeypatch,
                                                     ended_first) -> None:
    from ui.loading import EarlyLoad

    w = open_window(None)
    second: list[object] = []
    monkeypatch.setattr(w.opener, "_load", lambda *a: second.append(a))
    early = EarlyLoad(sbuc_project)
    if ended_first:
        early.thread.join(30)
    with qtbot.waitSignal(w.load_finished, timeout=30000) as blocker:
        w.open_project_in_background(sbuc_project, early=early)
        assert w.spatial.project is None  # delivered through the event loop, even when the load had ended
    assert blocker.args == [True] and second == []  # no second load
    assert w.spatial.dataset.n == 800
    assert w.browser.count_label.text() == "800 of 800 samples"
    qtbot.waitUntil(lambda: not w.spatial.checking and w.spatial.verdicts is not None, timeout=30000)


def test_a_load_started_for_another_folder_is_closed_and_the_window_reads_its_own(
        qtbot, open_window, sbuc_project, png_project, monkeypatch) -> None:
    import ui.loading
    from ui.loading import EarlyLoad

    real = ui.loading.load_project
    loads: list[tuple[Path, object]] = []  # each load's folder, and what it gave or raised

    def recorded(folder, *a, **k):
        try:
            loads.append((Path(folder), real(folder, *a, **k)))
        except ui.loading.OpeningCancelled as e:
            loads.append((Path(folder), e))
            raise
        return loads[-1][1]

    monkeypatch.setattr(ui.loading, "load_project", recorded)
    early = EarlyLoad(png_project)
    w = open_window(None)
    with qtbot.waitSignal(w.load_finished, timeout=30000) as blocker:
        w.open_project_in_background(sbuc_project, early=early)
    assert blocker.args == [True]
    assert w.spatial.project.folder.resolve() == sbuc_project.resolve() and w.spatial.dataset.n == 800
    early.thread.join(30)
    # the early load (the window's own load of its folder is recorded too)
    early_loads = [x for f, x in loads if f.resolve() == png_project.resolve()]
    own = [x for _, x in loads if getattr(x, "project", None) is w.spatial.project]
    assert len(early_loads) == 1 and len(own) == 1 and len(loads) == 2
    (left,) = early_loads
    # nobody took it: it was cancelled, or, when it had already ended, its database was closed
    if not isinstance(left, ui.loading.OpeningCancelled):
        with pytest.raises(Exception, match="(?i)closed"):
            left.project.con.execute("SELECT 1")
    with Project.open(png_project) as p:  # nothing holds the folder
        assert p.samples.count() > 0


def test_an_open_says_how_far_it_has_read_and_can_be_cancelled(qtbot, open_window, sbuc_project, png_project,
                                                               monkeypatch) -> None:
    """Opening a project from the recent list reads it beside the window: the status bar says
    how many detections are read and offers to cancel; a cancel leaves the window on the
    project it had, and the cancelled project opens again at once."""
    import threading

    import ui.loading
    import workstation.store.samples as samples_mod

    monkeypatch.setattr(samples_mod, "SCAN_BATCH", 1000)
    held, release = threading.Event(), threading.Event()
    real = ui.loading.OpenProgress.detections

    def slow(self, done: int, total: int) -> None:
        real(self, done, total)
        if done >= 2000 and not release.is_set():  # the scan stops here until the test lets it go
            held.set()
            release.wait(30)
            self.check()

    monkeypatch.setattr(ui.loading.OpenProgress, "detections", slow)
    w = open_window(png_project)
    project_dialogs.add_recent(sbuc_project)
    w.recent_menu.aboutToShow.emit()
    (act,) = [a for a in w.recent_menu.actions() if a.text() == str(sbuc_project.resolve())]
    with qtbot.waitSignal(w.load_finished, timeout=30000) as blocker:
        act.trigger()
        assert held.wait(30)
        ind = w.opener.indicator
        qtbot.waitUntil(lambda: "(2,000 of" in w.statusBar().currentMessage(), timeout=5000)
        msg = w.statusBar().currentMessage()
        assert msg.startswith(f"Opening {sbuc_project.name}: reading detections: ") and "% (2,000 of " in msg
        assert ind.isVisible() and ind.cancel_button.isEnabled() and 0 < ind.bar.value() < 100
        # the project it had stays open and usable meanwhile
        assert w.spatial.project.folder.resolve() == png_project.resolve()
        qtbot.mouseClick(ind.cancel_button, Qt.LeftButton)
        assert not ind.cancel_button.isEnabled()
        assert w.statusBar().currentMessage() == f"Opening {sbuc_project.name}: cancelling…"
        release.set()
    assert blocker.args == [False]
    assert not w.opener.indicator.isVisible() and w.opener.load_worker is None
    assert w.statusBar().currentMessage() == f"opening {sbuc_project.name} cancelled"
    assert w.spatial.project.folder.resolve() == png_project.resolve()
    assert w.project_label.text() == png_project.name
    # nothing of the cancelled load holds the project: it opens here at once
    assert w.open_project(sbuc_project)
    assert w.spatial.dataset.n == 800


def test_a_second_open_while_one_runs_says_why_it_waits(qtbot, open_window, sbuc_project, png_project,
                                                        monkeypatch) -> None:
    import threading

    import ui.loading

    release = threading.Event()
    real = ui.loading.load_project

    def held(*a, **k):
        release.wait(30)
        return real(*a, **k)

    monkeypatch.setattr(ui.loading, "load_project", held)
    w = open_window()
    w.open_project_in_background(sbuc_project)
    with qtbot.waitSignal(w.load_finished, timeout=5000) as second:
        w.open_project_in_background(png_project)
    assert second.args == [False]
    assert w.statusBar().currentMessage() == (f"still opening {sbuc_project.name} — cancel it (the button on the "
                                              f"right) to open {png_project.name}")
    with qtbot.waitSignal(w.load_finished, timeout=30000) as first:
        release.set()
    assert first.args == [True] and w.spatial.project.folder.resolve() == sbuc_project.resolve()


def test_file_open_and_the_start_pages_list_read_the_project_beside_the_window(qtbot, open_window, sbuc_project,
                                                                               monkeypatch) -> None:
    w = open_window()
    monkeypatch.setattr(project_dialogs, "choose_folder", lambda *_a, **_k: str(sbuc_project))
    with qtbot.waitSignal(w.load_finished, timeout=30000) as blocker:
        w.open_dialog()
        assert w.opener.load_worker is not None  # returned at once: the read goes on beside the window
        assert w.project_label.text() == f"opening {sbuc_project.name}…"
    assert blocker.args == [True] and w.spatial.dataset.n == 800
    w.close_project()
    w.start_page.refresh()
    (item,) = w.start_page.recent.findItems(str(sbuc_project.resolve()), Qt.MatchFlag.MatchExactly)
    with qtbot.waitSignal(w.load_finished, timeout=30000) as blocker:
        w.start_page.recent.itemActivated.emit(item)
        assert w.opener.load_worker is not None
    assert blocker.args == [True] and w.spatial.project.folder.resolve() == sbuc_project.resolve()
