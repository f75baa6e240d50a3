"""Several annotators: label files in and out, Cohen's κ and percent agreement, a queue of
disagreements to adjudicate."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication, QPushButton, QTableWidget

from workstation.evaluation.agreement import cohen_kappa, percent_agreement
from workstation.methods.spatial.labels_io import read_labels
from workstation.methods.spatial.types import VERDICT_CODE

from ui import menus

from .conftest import on_next_modal
from workstation.methods.spatial.store import SpatialStore

pytestmark = pytest.mark.gui


def _key(qtbot, w, key, modifier=Qt.NoModifier) -> None:
    if not w.isActiveWindow():
        w.activateWindow()
        qtbot.waitUntil(lambda: w.isActiveWindow(), timeout=2000)
    target = QApplication.focusWidget()
    qtbot.keyClick(target if target is not None and target.isVisible() else w, key, modifier)


def _label_first(qtbot, w, keys: str) -> list[str]:
    """Review from the first sample and press the given verdict keys; returns the sample ids."""
    w.method_views["spatial"].review_from_browse(w, 0)
    ids = []
    for k in keys:
        ids.append(str(w.spatial.dataset.samples.sample_id[w.spatial.current]))
        _key(qtbot, w, {"P": Qt.Key_P, "F": Qt.Key_F, "U": Qt.Key_U}[k])
    return ids


def _bob_file(tmp_path: Path, ids: list[str], verdicts: str) -> Path:
    path = tmp_path / "bob_labels.json"
    recs = [{"sample_id": s, "human_verdict": {"P": "PASS", "F": "FAIL", "U": "UNDECIDABLE"}[v], "notes": "",
             "timestamp": "2026-01-14T15:39:09.080Z", "annotator": "bob"} for s, v in zip(ids, verdicts)]
    path.write_text(json.dumps(recs), encoding="utf-8")
    return path


ALICE = "PPFFUPPFPU"
BOB = "PFFFUPUFPP"


def test_import_then_kappa_and_adjudicate(qtbot, open_window, sbuc_images_project: Path, tmp_path: Path) -> None:
    w = open_window(sbuc_images_project)
    ids = _label_first(qtbot, w, ALICE)
    menus.import_labels(w, str(_bob_file(tmp_path, ids, BOB)))
    st = w.spatial
    assert sorted(SpatialStore(st.project).annotators()) == ["alice", "bob"]
    assert "imported 10 label(s)" in w.statusBar().currentMessage()

    got = {}

    def read(dlg) -> None:
        t = dlg.findChild(QTableWidget, "agreementTable")
        got["rows"] = [[t.item(i, j).text() for j in range(t.columnCount())] for i in range(t.rowCount())]
        got["summary"] = dlg.summary.text()
        qtbot.mouseClick(dlg.findChild(QPushButton, "adjudicateButton"), Qt.LeftButton)

    seen = on_next_modal(qtbot, read)
    menus.show_agreement(w)
    assert seen
    a = np.array([VERDICT_CODE[{"P": "PASS", "F": "FAIL", "U": "UNDECIDABLE"}[x]] for x in ALICE])
    b = np.array([VERDICT_CODE[{"P": "PASS", "F": "FAIL", "U": "UNDECIDABLE"}[x]] for x in BOB])
    kappa = cohen_kappa(a, b)
    pct = percent_agreement(a, b)
    assert got["rows"] == [["alice", "bob", "10", f"{pct * 100:.1f}%", f"{kappa:.3f}"]]
    n_dis = int(np.sum(a != b))
    assert f"{n_dis} sample(s) have disagreeing labels" in got["summary"]
    # the adjudication queue: the disagreements, in project order
    dis = [s for s, x, y in zip(ids, ALICE, BOB) if x != y]
    assert [str(st.dataset.samples.sample_id[r]) for r in st.queue] == dis
    assert w.tabs.currentWidget() is w.review
    assert st.queue_visibility().outcome


def test_annotators_disagree_filter(qtbot, open_window, sbuc_images_project: Path, tmp_path: Path) -> None:
    w = open_window(sbuc_images_project)
    ids = _label_first(qtbot, w, ALICE)
    menus.import_labels(w, str(_bob_file(tmp_path, ids, BOB)))
    f = w.browser.filters
    qtbot.mouseClick(f.disagree, Qt.LeftButton, pos=QPoint(6, f.disagree.height() // 2))
    n_dis = sum(x != y for x, y in zip(ALICE, BOB))
    assert w.browser.count_label.text() == f"{n_dis} of 800 samples"
    m = w.browser.model
    assert all(m.data(m.index(i, 9)) == "annotators differ" for i in range(m.rowCount()))
    assert all("alice:" in m.data(m.index(i, 8)) and "bob:" in m.data(m.index(i, 8)) for i in range(m.rowCount()))


def test_export_labels_round_trip(qtbot, open_window, sbuc_images_project: Path, tmp_path: Path) -> None:
    w = open_window(sbuc_images_project)
    ids = _label_first(qtbot, w, "PFU")
    out = tmp_path / "export.csv"
    menus.export_labels(w, str(out))
    t = read_labels(out)
    assert list(zip(t.sample_id, t.annotator, t.verdict)) == [
        (ids[0], "alice", "PASS"), (ids[1], "alice", "FAIL"), (ids[2], "alice", "UNDECIDABLE")]
    assert "exported 3 label(s)" in w.statusBar().currentMessage()


def test_bad_label_file_gives_a_message(qtbot, open_window, sbuc_images_project: Path, tmp_path: Path) -> None:
    w = open_window(sbuc_images_project)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"sample_id": "no_such_sample", "human_verdict": "PASS"}]), encoding="utf-8")
    got = {}

    def read(box) -> None:
        got["text"] = box.text()
        box.accept()

    seen = on_next_modal(qtbot, read)
    menus.import_labels(w, str(bad))
    assert seen and "no_such_sample" in got["text"] and "bad.json" in got["text"]
    assert SpatialStore(w.spatial.project).annotators() == []
