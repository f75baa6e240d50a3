"""The window's doors for a newcomer: File → Import a SpatialBench-UC run… and File → Write
report… (the command line's own commands, with progress and Cancel, then the project or the
report opened), export dialogs that start in the project's exports folder, and `gui` with no
project bringing back the last one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QFileDialog

from ui import import_report, project_dialogs
from workstation.store import Project

pytestmark = pytest.mark.gui

SBUC = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "spatialbench_uc"


def _run_dir() -> tuple[Path, Path]:
    if not SBUC.is_dir():
        pytest.skip(f"the SpatialBench-UC fixture is not at {SBUC} (../shared)")
    run = next(p.parent for p in SBUC.rglob("manifest.jsonl"))
    prompts = next(SBUC.rglob("prompts*.jsonl"), None) or next(SBUC.rglob("*.jsonl"))
    return run, prompts


def test_import_a_run_into_a_new_project_with_progress_then_it_opens(qtbot: Any, open_window: Any,
                                                                  tmp_path: Path) -> None:
    run_dir, prompts = _run_dir()
    w = open_window()
    dlg = import_report.ImportRunDialog(w)
    assert not dlg.into_open
    dlg.run_dir.setText(str(run_dir))
    dlg.prompts.setText(str(prompts))
    dlg.project.setText(str(tmp_path / "imported"))
    run = import_report.import_run(w, dlg)
    assert run is not None and run.dialog.isVisible()  # the progress shows while it runs
    with qtbot.waitSignal(run.finished, timeout=120000) as sig:
        pass
    assert sig.args[0] is True, run.output[-5:]
    assert w.state.project is not None and w.state.project.folder == tmp_path / "imported"
    assert w.spatial.dataset.n == 800 and w.tabs.currentWidget() is w.browser
    assert "imported run" in w.statusBar().currentMessage()


def test_a_failed_import_says_why_and_leaves_the_open_project_as_it_was(qtbot: Any, open_window: Any,
                                                                        sbuc_project: Path, tmp_path: Path,
                                                                        monkeypatch: Any) -> None:
    run_dir, prompts = _run_dir()
    w = open_window(sbuc_project)
    before = w.spatial.dataset.n
    errors: list[str] = []
    monkeypatch.setattr(import_report.QMessageBox, "critical", lambda *a: errors.append(a[2]))
    dlg = import_report.ImportRunDialog(w)
    assert dlg.into_open and dlg.project.text() == str(sbuc_project)
    dlg.run_dir.setText(str(run_dir))
    dlg.prompts.setText(str(prompts))  # the same run again: its id exists in the project
    run = import_report.import_run(w, dlg)
    with qtbot.waitSignal(run.finished, timeout=120000) as sig:
        pass
    assert sig.args[0] is False
    assert errors and "already exists" in errors[0] and errors[0].startswith("error:")
    assert w.state.project is not None and w.spatial.dataset.n == before  # opened again, unchanged


def test_write_report_with_progress_then_opens_it_and_a_cancel_leaves_nothing(qtbot: Any, open_window: Any,
                                                                              sbuc_project: Path,
                                                                              monkeypatch: Any) -> None:
    opened: list[str] = []
    errors: list[str] = []
    monkeypatch.setattr(import_report.QDesktopServices, "openUrl", lambda url: opened.append(url.toLocalFile()))
    monkeypatch.setattr(import_report.QMessageBox, "critical", lambda *a: errors.append(a[2]))
    w = open_window(sbuc_project)
    dlg = import_report.ReportDialog(w)
    out = Path(dlg.out.text())
    assert out.parent == sbuc_project / "exports"  # the project's exports folder by default
    run = import_report.write_report(w, dlg)
    with qtbot.waitSignal(run.finished, timeout=180000) as sig:
        pass
    assert sig.args[0] is True, (errors, run.output[-5:])
    assert opened == [str(out / "index.html")] and (out / "index.html").is_file()
    # a second report, cancelled at once: no folder is left
    dlg2 = import_report.ReportDialog(w)
    out2 = Path(dlg2.out.text() + "-cancelled")
    dlg2.out.setText(str(out2))
    run2 = import_report.write_report(w, dlg2)
    run2.cancel()
    with qtbot.waitSignal(run2.finished, timeout=60000) as sig2:
        pass
    assert sig2.args[0] is False and not out2.exists()
    assert "cancelled" in w.statusBar().currentMessage()


def test_no_report_while_a_blind_audit_is_open(qtbot: Any, open_window: Any, sbuc_project: Path,
                                               monkeypatch: Any) -> None:
    from ui import menus

    said: list[str] = []
    monkeypatch.setattr(import_report.QMessageBox, "information", lambda *a: said.append(a[2]))
    w = open_window(sbuc_project)
    ids = [str(x) for x in w.spatial.dataset.samples.sample_id[:5].tolist()]
    menus.start_audit_set(w, w.state.project.audit.create_set("a", "spatial.verdict", ids, {}, blind=True))
    assert import_report.write_report(w) is None
    assert said and "blind audit" in said[0]


def test_export_dialogs_start_in_the_projects_exports_folder(qtbot: Any, open_window: Any, sbuc_project: Path,
                                                             monkeypatch: Any) -> None:
    asked: list[str] = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda parent, title, start, *a: (asked.append(start), "")[1:] + ("",))
    w = open_window(sbuc_project)
    w.labeling.export()
    assert asked and Path(asked[0]).parent == sbuc_project / "exports"
    assert (sbuc_project / "exports").is_dir()


def test_gui_without_a_project_brings_back_the_last_one(qtbot: Any, sbuc_project: Path, tmp_path: Path) -> None:
    from ui.app import last_project

    assert last_project() is None
    project_dialogs.add_recent(sbuc_project)
    assert last_project() == sbuc_project
    project_dialogs.add_recent(tmp_path / "gone")  # removed since: not brought back
    assert last_project() is None
    with Project.open(sbuc_project):
        pass
