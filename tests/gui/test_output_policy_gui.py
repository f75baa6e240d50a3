"""The window's exports follow the output policy of the command line (`workstation.util.outpaths`):
the judging bar's label export (spatial's own exporter and every method's plain CSV) and DyEval's
tree export never write the project's database, its images/ or jobs/, or through a link, and
replace an existing file only when it was chosen in the save dialog (which asks first)."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pytest

from tests.digest import tree_digest
from workstation.methods.dyeval.config import DyEvalConfig
from workstation.methods.dyeval.runner import DyEvalRunner
from workstation.methods.spatial.store import SpatialStore
from workstation.store import Project

pytestmark = pytest.mark.gui

VICTIM = "every number here took a year\n"


@pytest.fixture
def project(sbuc_project: Path) -> Path:
    """The imported fixture (spatial), a label, a DyEval tree, a job folder with a spec."""
    with Project.open(sbuc_project) as p:
        sid = p.con.execute("SELECT sample_id FROM samples ORDER BY sample_id LIMIT 1").fetchone()[0]
        SpatialStore(p).add_labels_bulk({"sample_id": [sid], "annotator": ["alice"], "verdict": ["PASS"]})
        DyEvalRunner.create(p, DyEvalConfig(n_i=2, n_x=2), tree_id="t", topics=["Animals"])
    job = sbuc_project / "jobs" / "generate-x"
    job.mkdir(parents=True)
    (job / "spec.json").write_text('{"job_id": "generate-x"}', encoding="utf-8")
    (sbuc_project / "exports").mkdir()  # where the save dialogs start (made when one first opens)
    return sbuc_project


def _rows(project: Any) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, through the window's own connection (it holds the project)."""
    names = [r[0] for r in project.con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()]
    return {n: [tuple("NaN" if isinstance(x, float) and math.isnan(x) else x for x in row)
                for row in project.con.execute(f'SELECT * FROM "{n}" ORDER BY ALL').fetchall()] for n in names}


def _state(w: Any, folder: Path) -> tuple[Any, ...]:
    return _rows(w.state.project), tree_digest(folder, skip=("project.duckdb", "project.duckdb.wal"))


def _forbidden(folder: Path, outside: Path) -> list[Path]:
    os.symlink(outside / "victim.txt", outside / "link.csv")
    return [folder / "project.duckdb", folder / "project.duckdb.wal", folder / "jobs" / "generate-x" / "spec.json",
            folder / "images" / "x.csv", folder / "labels.csv", folder, outside / "link.csv"]


def test_the_judging_bars_export_refuses_every_forbidden_target(open_window: Any, project: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import ui.widgets.judge as judge

    w = open_window(project, annotator="alice")
    bar = w.labeling  # the spatial bar: its own exporter (CSV, SpatialBench-UC JSON, Parquet)
    plain = w.spatial.controller  # every method's plain CSV export
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text(VICTIM, encoding="utf-8")
    before = _state(w, project)
    for target in _forbidden(project, outside):
        # typed in, or chosen in the save dialog (which asked "replace it?"): refused all the same
        monkeypatch.setattr(judge.QFileDialog, "getSaveFileName", staticmethod(lambda *a, t=target: (str(t), "")))
        for how in (lambda t=target: bar.export(str(t)), lambda: bar.export()):
            assert how() == 0
            msg = w.statusBar().currentMessage()
            assert msg.startswith("labels not exported: ") and str(target) in msg, msg
        with pytest.raises(Exception, match="label file"):
            plain.export_csv(target, overwrite=True)
    assert _state(w, project) == before, "the project changed"
    assert (outside / "victim.txt").read_text(encoding="utf-8") == VICTIM and (outside / "link.csv").is_symlink()


def test_the_judging_bar_replaces_a_file_only_when_the_save_dialog_chose_it(open_window: Any, project: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import ui.widgets.judge as judge

    w = open_window(project, annotator="alice")
    bar = w.labeling
    out = project / "exports" / "labels.csv"
    out.write_text("my own notes\n", encoding="utf-8")
    assert bar.export(str(out)) == 0  # a path given without the dialog: an existing file stays
    assert "already exists" in w.statusBar().currentMessage()
    assert out.read_text(encoding="utf-8") == "my own notes\n"
    monkeypatch.setattr(judge.QFileDialog, "getSaveFileName", staticmethod(lambda *a: (str(out), "")))
    assert bar.export() == 1  # the dialog asked before it let the user pick an existing file
    assert out.read_text(encoding="utf-8").startswith("sample_id,") and not out.is_symlink()
    assert [q.name for q in out.parent.iterdir()] == ["labels.csv"], "no temporary file is left"


def test_the_dyeval_tree_export_follows_the_policy(open_window: Any, project: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import ui.methods.dyeval.page as page_module

    w = open_window(project, annotator="alice")
    w.show_tab("DyEval")
    page = w.dyeval_page
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text(VICTIM, encoding="utf-8")
    messages: list[str] = []
    monkeypatch.setattr(page.session, "message", lambda text, *a, **k: messages.append(text))
    before = _state(w, project)
    for target in _forbidden(project, outside):
        monkeypatch.setattr(page_module.QFileDialog, "getSaveFileName", staticmethod(lambda *a, t=target: (str(t), "")))
        assert page.export(str(target)) == "" and page.export() == ""
        assert all(str(target) in m for m in messages[-2:]), messages[-2:]
    assert _state(w, project) == before
    assert (outside / "victim.txt").read_text(encoding="utf-8") == VICTIM
    out = project / "exports" / "tree.json"
    assert page.export(str(out)) == str(out) and out.is_file()


def test_write_report_asks_before_replacing_and_the_command_refuses_what_is_not_a_report(
        qtbot: Any, open_window: Any, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """File → Write report… goes through the command line's `report`: a folder that exists is
    replaced only when the user says so (then with --overwrite), and even then only a report the
    program wrote; a folder inside the project's images/ is refused, the project unchanged."""
    from ui import import_report

    errors: list[str] = []
    asked: list[str] = []
    answer = [import_report.QMessageBox.No]
    monkeypatch.setattr(import_report.QMessageBox, "critical", lambda *a: errors.append(a[2]))
    monkeypatch.setattr(import_report.QMessageBox, "question", lambda *a: (asked.append(a[2]), answer[0])[1])
    monkeypatch.setattr(import_report.QDesktopServices, "openUrl", lambda url: None)
    w = open_window(project)
    thesis = tmp_path / "thesis"
    thesis.mkdir()
    (thesis / "chapter.tex").write_text(VICTIM, encoding="utf-8")

    def dialog(out: Path) -> Any:
        dlg = import_report.ReportDialog(w)
        dlg.out.setText(str(out))
        dlg.evaluate.setChecked(False)
        return dlg

    assert import_report.write_report(w, dialog(thesis)) is None  # asked, and the user said no
    assert asked and str(thesis) in asked[0] and not errors
    answer[0] = import_report.QMessageBox.Yes
    before = _state(w, project)
    for out, words in ((thesis, "not a report this program wrote"), (project / "images" / "report", "images/")):
        run = import_report.write_report(w, dialog(out))
        assert run is not None
        with qtbot.waitSignal(run.finished, timeout=120000) as sig:
            pass
        assert sig.args[0] is False
        assert errors and str(out) in errors[-1] and words in errors[-1], errors
    assert (thesis / "chapter.tex").read_text(encoding="utf-8") == VICTIM and sorted(thesis.iterdir()) == [
        thesis / "chapter.tex"]
    assert _state(w, project) == before
