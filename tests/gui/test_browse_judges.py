"""Browse's judge columns and its filter "judges disagree" (`ui/methods/spatial/browse_judges.py`):
every judge of the samples computed once off the GUI thread when the window is idle, shown as a
column each, filtered and sorted by numpy beside the live verdicts, the disagreements made the
review queue — and, during a blind audit, no judge column, no judge filter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication

from workstation.methods import get_method
from workstation.store import Project

pytestmark = pytest.mark.gui


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    folder = tmp_path / "demo"
    with Project.create(folder) as p:
        get_method("spatial").build_demo(p, small=True, workers=0)
    return folder


def _judged(qtbot: Any, w: Any) -> Any:
    m = w.browser.model
    qtbot.waitUntil(lambda: len(m.q.judges) > 0 and not m.judges.computing, timeout=30000)
    return m


def _headers(m: Any) -> list[str]:
    from PySide6.QtCore import Qt

    return [m.headerData(c, Qt.Orientation.Horizontal) for c in range(m.columnCount())]


def test_each_judge_is_a_column_with_the_outcome_and_score_the_judges_give(qtbot: Any, open_window: Any,
                                                                          demo: Path) -> None:
    from workstation.evaluation.judges import JudgeRun
    from workstation.methods.spatial.browse import COLUMNS
    from workstation.methods.spatial.judges import spatial_judges

    w = open_window(demo)
    m = _judged(qtbot, w)
    heads = _headers(m)
    assert heads[:len(COLUMNS)] == list(COLUMNS)
    assert "GenEval" in heads and "twin" in heads and any(h.startswith("checker v") for h in heads)
    # the cells say what the judges say of every sample (the `judges` command's outputs)
    run = JudgeRun(w.state.project, spatial_judges(w.state.project))
    ids = list(map(str, run.targets.ids.tolist()))
    for k, j in enumerate(m.q.judges):
        out = run.output(j.name)
        c = len(COLUMNS) + k
        for i in range(m.rowCount()):
            row = m.dataset_row(i)
            at = ids.index(str(w.spatial.dataset.samples.sample_id[row]))
            text = m.data(m.index(i, c))
            want = out.outcome[at]
            assert text.split(" ")[0] == (want if want is not None else "—"), (j.name, text, want)
            if np.isfinite(out.score[at]):
                assert text.endswith(f"{out.score[at]:.2f}")
    assert not w.browser.table.isColumnHidden(heads.index("GenEval"))


def test_the_filter_keeps_the_samples_two_judges_decide_differently_and_reviews_them(
        qtbot: Any, open_window: Any, demo: Path) -> None:
    w = open_window(demo)
    m = _judged(qtbot, w)
    bar = w.browser.filters
    texts = [bar.judges.itemText(i) for i in range(bar.judges.count())]
    assert "checker (live) ≠ GenEval" in texts and "GenEval ≠ twin" in texts
    g = next(j for j in m.q.judges if j.name == "spatial.geneval")
    v = w.spatial.verdicts.verdict
    want = np.flatnonzero((g.code <= 1) & (v >= 0) & (v <= 1) & (g.code >= 0) & (g.code != v))
    assert len(want) > 0, "the demo's checker and GenEval never differ"
    bar.pick_judges("checker", "spatial.geneval")
    qtbot.waitUntil(lambda: m.total == len(want), timeout=5000)
    assert bar.judges.currentText() == "checker (live) ≠ GenEval"
    assert sorted(m.dataset_row(i) for i in range(m.rowCount())) == sorted(want.tolist())[:m.rowCount()]
    # "Review these" makes the disagreements the review queue
    w.browser._review_all()
    QApplication.processEvents()
    assert sorted(w.spatial.queue) == sorted(want.tolist())
    # a slider move changes the live verdicts: the filter follows them, the judges are not computed again
    cols = w.spatial.judge_columns
    cfg = w.spatial.config
    w.spatial.set_config(cfg.replace(margin=round(cfg.margin + 0.05, 4)))
    qtbot.waitUntil(lambda: w.spatial.verdicts is not None and not w.spatial.previewing, timeout=10000)
    QApplication.processEvents()
    v = w.spatial.verdicts.verdict
    want = np.flatnonzero((g.code <= 1) & (g.code >= 0) & (v >= 0) & (v <= 1) & (g.code != v))
    qtbot.waitUntil(lambda: m.total == len(want), timeout=5000)
    assert w.spatial.judge_columns is cols


def test_sorting_by_a_judge_column_orders_its_outcomes(qtbot: Any, open_window: Any, demo: Path) -> None:
    from PySide6.QtCore import Qt

    from workstation.methods.spatial.browse import COLUMNS

    w = open_window(demo)
    m = _judged(qtbot, w)
    k = next(i for i, j in enumerate(m.q.judges) if j.name == "spatial.twin")
    m.sort(len(COLUMNS) + k, Qt.SortOrder.AscendingOrder)
    codes = [int(m.q.judges[k].code[m.dataset_row(i)]) for i in range(m.rowCount())]
    key = [c if c >= 0 else 99 for c in codes]
    assert key == sorted(key) and len(set(codes)) > 1


def test_a_saved_filter_of_two_judges_comes_back(qtbot: Any, open_window: Any, demo: Path) -> None:
    w = open_window(demo)
    m = _judged(qtbot, w)
    bar = w.browser.filters
    bar.pick_judges("spatial.twin", "spatial.geneval")  # either order names the pair
    assert bar.judges.currentText() == "GenEval ≠ twin"
    bar.save_as("judges differ")
    n = m.total
    bar.set_spec(type(bar.spec())())
    assert m.total == m.all_count
    bar.saved.setCurrentIndex(bar.saved.findData("judges differ"))
    bar._apply_saved(bar.saved.currentIndex())
    assert sorted(bar.spec().judges_disagree) == ["spatial.geneval", "spatial.twin"] and m.total == n


def test_a_blind_audit_has_no_judge_column_and_no_judge_filter(qtbot: Any, open_window: Any, demo: Path) -> None:
    from ui import menus
    from workstation.methods.spatial.browse import COLUMNS

    w = open_window(demo)
    m = _judged(qtbot, w)
    w.browser.filters.pick_judges("checker", "spatial.geneval")
    ids = [str(x) for x in w.spatial.dataset.samples.sample_id[:4]]
    aid = w.state.project.audit.create_set("blind", "spatial.verdict", ids, {}, blind=True)
    menus.start_audit_set(w, aid)
    QApplication.processEvents()
    assert m.columnCount() == len(COLUMNS)
    assert "GenEval" not in _headers(m)
    assert not w.browser.filters.judges.isEnabled()
    assert m.spec.judges_disagree == [] and m.total == m.all_count  # the filter selects nothing hidden
    # a saved filter on two judges, applied during the audit, shows neither judge and selects nothing
    bar = w.browser.filters
    w.state.project.audit.save_filter("pair", {"judges_disagree": ["spatial.twin", "spatial.geneval"]})
    bar.reload_choices()
    bar.saved.setCurrentIndex(bar.saved.findData("pair"))
    bar._apply_saved(bar.saved.currentIndex())
    assert bar.judges.currentText() == bar.ANY_JUDGES and m.spec.judges_disagree == []
    menus.leave_audit(w)
    QApplication.processEvents()
    assert "GenEval" in _headers(m) and sorted(m.spec.judges_disagree) == ["spatial.geneval", "spatial.twin"]


def test_closing_the_project_while_the_judges_are_computed_waits_for_them_and_keeps_nothing(
        qtbot: Any, open_window: Any, demo: Path) -> None:
    w = open_window(demo)
    m = w.browser.model
    qtbot.waitUntil(lambda: w.spatial.verdicts is not None and not w.spatial.checking, timeout=20000)
    m.judges._start()  # the worker starts now, as the idle timer would start it
    assert m.judges.computing
    done = m.judges._released
    w.state.close_project()
    assert done is not None and done.is_set()  # the project closed only after the worker let go of it
    qtbot.wait(300)
    assert w.spatial.judge_columns is None and not m.judges.error and m.columnCount() == len(_headers(m))
