"""Calibration's labels line and its selection: one line above the figures says which
labels they use, the dialog chooses them, the choice is kept with the project, a second
annotator's later labels do not replace the first's under "alice only", and the report's
operating point equals the window's for the same selection, weighted by the labels' draw where it
is recorded and said to assume a uniform draw where it is not."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PySide6.QtCore import QTimer

from workstation.evaluation.selection import LabelSelection, load_selection
from workstation.methods.spatial.store import TASK, SpatialStore

pytestmark = pytest.mark.gui


@pytest.fixture
def panel(qtbot: Any, labelled_state: Any) -> Any:
    from ui.methods.spatial.calibration.panel import CalibrationPanel

    w = CalibrationPanel(labelled_state)
    qtbot.addWidget(w)
    w.resize(1500, 1000)
    w.show()
    qtbot.waitExposed(w)
    return w


def _audited(panel: Any) -> int:
    return int(panel.plots.confusion_title.text().split("(")[1].split()[0])


def _second_annotator(st: Any, k: int = 12) -> list[str]:
    """bob's later labels of k of alice's samples, each the other way."""
    ds = st.dataset
    rows = np.flatnonzero(st.human >= 0)[:k]
    ids = [str(ds.samples.sample_id[r]) for r in rows]
    for r, sid in zip(rows.tolist(), ids):
        other = "FAIL" if int(st.human[r]) == 0 else "PASS"
        st.project.labels.add(TASK, "sample", sid, "bob", other)
    st.reload_labels()
    return ids


def test_the_line_says_which_labels_and_the_dialog_chooses_them(qtbot: Any, panel: Any, labelled_state: Any,
                                                                tmp_path: Path) -> None:
    from ui.widgets.label_selection import LabelSelectionDialog

    st = labelled_state
    line = panel.labels_line.line()
    assert line.startswith("labels: every audit set and free labelling, every annotator, latest label wins — 200 items")
    assert "free labelling: no random draw, no sampling guarantee" in line
    assert _audited(panel) == 200
    before = st.calib_human.copy()
    ids = _second_annotator(st)
    assert "bob" in panel.labels_line.line() or "every annotator" in panel.labels_line.line()
    latest = st.calib_human.copy()
    assert (latest != before).sum() == len(ids)  # the rule of earlier versions: bob's later labels win

    def pick() -> None:
        dlg = panel.findChild(LabelSelectionDialog)
        if dlg is None:
            QTimer.singleShot(50, pick)
            return
        dlg.rule.setCurrentIndex(dlg.rule.findData("annotator:alice"))
        dlg.findChild(object, "label_selection_ok").click()

    QTimer.singleShot(50, pick)
    panel.labels_line.button.click()
    assert st.label_selection.rule == "annotator:alice"
    assert np.array_equal(st.calib_human, before)  # alice's audit, unchanged by bob
    assert panel.labels_line.line().startswith("labels: every audit set and free labelling, alice only")
    assert load_selection(st.project, TASK).rule == "annotator:alice"  # kept with the project
    st.set_label_selection(LabelSelection(rule="majority"))
    assert _audited(panel) == 200 - len(ids)
    assert panel.labels_line.line().endswith(", 12 disputed  ·  free labelling: no random draw, no sampling "
                                             "guarantee")
    assert panel.grab().save(str(tmp_path / "calibration_labels_line.png"))  # docs/images/ holds one


def test_the_reports_operating_point_equals_the_windows_for_the_same_selection(qtbot: Any, panel: Any,
                                                                              labelled_state: Any,
                                                                              tmp_path: Path) -> None:
    from workstation.methods.spatial.report import report_section

    st = labelled_state
    _second_annotator(st)
    st.set_label_selection(LabelSelection(annotators=("bob",)))
    store = SpatialStore(st.project)
    cid = store.save_config(st.config, note="as shown")
    store.save_verdicts(cid, st.dataset, st.verdicts)
    store.set_active_config(cid)
    panel.flush_intervals()
    qtbot.waitUntil(lambda: panel.plots.op_estimates is not None, timeout=30000)
    shown = {k: e.value for k, e in panel.plots.op_estimates.items()}
    sec = report_section(st.project, tmp_path / "report")
    with open(tmp_path / "report" / "data" / "operating_point.csv", newline="") as f:
        written = {r["statistic"]: float(r["value"]) for r in csv.DictReader(f)}
    assert set(shown) <= set(written)
    for k, v in shown.items():
        assert (np.isnan(v) and np.isnan(written[k])) or abs(v - written[k]) < 1e-9, k
    labels = sec.meta["provenance"]["labels"]
    assert labels["selection"]["annotators"] == ["bob"] and labels["audited_samples"] == 12
    assert "annotator_filter" not in labels
    assert labels["line"] == panel.labels_line.line().split("  ·  ")[0]


def test_the_operating_point_is_weighted_by_a_recorded_draw_in_the_window_as_in_the_report(
        qtbot: Any, panel: Any, labelled_state: Any, tmp_path: Path) -> None:
    from workstation.evaluation.audit_sets import AuditPopulation, draw_audit_set
    from workstation.methods.spatial.audit import STRATA_KEYS, stratum_codes
    from workstation.methods.spatial.method import LABELS as SCHEME
    from workstation.methods.spatial.report import report_section

    st = labelled_state
    store = SpatialStore(st.project)
    cid = store.save_config(st.config, note="as shown")
    store.save_verdicts(cid, st.dataset, st.verdicts)
    store.set_active_config(cid)
    ds, v = st.dataset, st.verdicts
    panel.flush_intervals()
    readout = panel.plots.readout.text()
    assert "these figures assume a uniform random draw, which these labels are not (free labelling)" in readout
    strata = {key: (codes, [n[0] for n in names]) for key in STRATA_KEYS
              for codes, names in (stratum_codes(ds, v, (key,)),)}
    pop = AuditPopulation(ids=ds.samples.sample_id, strata=strata, default_strata=("verdict",),
                          conf=np.asarray(v.conf), noun="samples")
    aid = draw_audit_set(st.project, SCHEME, pop, name="blind", size=40, seed=3, recheck_fraction=0.0)
    items = [t for t, rc in st.project.audit.items(aid) if not rc]
    for k, s in enumerate(items):
        st.project.labels.add(TASK, "sample", s, "carol", "PASS" if k % 3 else "FAIL", audit_set_id=aid)
    st.reload_labels()
    st.set_label_selection(LabelSelection(sets=(aid,), free=False, rechecks=False))
    panel.flush_intervals()
    qtbot.waitUntil(lambda: panel.plots.op_estimates is not None, timeout=30000)
    readout = panel.plots.readout.text()
    assert "weighted by the stratified draw's inclusion probabilities (1/π)" in readout
    shown = {k: e.value for k, e in panel.plots.op_estimates.items()}
    assert abs(panel.plots.point["coverage"] - shown["coverage"]) < 1e-12  # the readout shows the weighted figure
    sec = report_section(st.project, tmp_path / "report")
    with open(tmp_path / "report" / "data" / "operating_point.csv", newline="") as f:
        written = {r["statistic"]: float(r["value"]) for r in csv.DictReader(f)}
    for k, val in shown.items():
        assert (np.isnan(val) and np.isnan(written[k])) or abs(val - written[k]) < 1e-9, k
    assert sec.meta["provenance"]["labels"]["operating_point"].startswith("weighted by the stratified draw")
    rows = np.flatnonzero(st.calib_human >= 0)
    plain = operating_point_plain(v, rows, st.calib_human, float(st.config.tau))
    assert any(abs(plain[k] - shown[k]) > 1e-6 for k in ("coverage", "risk"))


def operating_point_plain(v: Any, rows: np.ndarray, human: np.ndarray, tau: float) -> dict[str, float]:
    from workstation.methods.spatial.calibration import operating_point

    e = operating_point(np.asarray(v.verdict)[rows], np.asarray(v.conf)[rows], human[rows].astype(np.int64), None,
                        tau, n_boot=0)
    return {k: x.value for k, x in e.items()}
