"""Audit → Judges… (`ui/judges_window.py`) on a demo project, offscreen: the window lists each
method's judges and their agreement table — with the humans through the kept label selection —
with the same numbers as the `judges` command (and so the report), computed off the GUI thread."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from workstation.methods import get_method
from workstation.store import Project

pytestmark = pytest.mark.gui


@pytest.fixture
def demo_project(tmp_path: Path) -> Path:
    from workstation.methods.spatial.store import TASK

    folder = tmp_path / "demo"
    with Project.create(folder) as p:
        get_method("spatial").build_demo(p, small=True, workers=0)
        get_method("metalogic").build_demo(p, small=True, workers=0)
        ids = p.samples.load_dataset(method="spatial").samples.sample_id
        for k, sid in enumerate(ids):
            p.labels.add(TASK, "sample", str(sid), "erin", ("PASS", "FAIL", "UNDECIDABLE")[k % 3])
    return folder


def _same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    """Equal rows, an undefined figure (NaN) equal to an undefined one."""
    def norm(v: Any) -> Any:
        return "nan" if isinstance(v, float) and math.isnan(v) else v

    return [{k: norm(v) for k, v in r.items()} for r in a] == [{k: norm(v) for k, v in r.items()} for r in b]


def _shown(t: Any) -> list[list[str]]:
    return [[t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())]


def _wait(qtbot: Any, w: Any) -> None:
    qtbot.waitUntil(lambda: w.tables is not None and not w.is_running(), timeout=60000)


def test_the_window_shows_the_commands_numbers(qtbot: Any, open_window: Any, demo_project: Path) -> None:
    from ui import menus
    from ui.judges_window import agreement_cells, judge_cells
    from workstation.commands.judges import tables
    from workstation.evaluation.judges import interval_text as _num

    win = open_window(demo_project)
    qtbot.waitUntil(lambda: "spatial" in win.method_views, timeout=20000)
    # the MetaLogic page stores its comparison's outcomes once it has evaluated: a judge of its own
    from workstation.methods import method_judges

    qtbot.waitUntil(lambda: len(method_judges(win.state.project, "metalogic").judges) == 2, timeout=30000)
    menus.open_judges(win)
    jw = win.judges_window
    assert jw.isVisible() and jw.windowTitle() == "Judges"
    methods = [jw.method_combo.itemData(i) for i in range(jw.method_combo.count())]
    assert set(methods) == {"spatial", "metalogic"}
    p = win.state.project
    want = tables(p, [get_method(m) for m in methods])
    for m in methods:
        jw.set_method(m)
        _wait(qtbot, jw)
        got = jw.tables
        assert got is not None
        assert _same(got["judges"], want[m]["judges"])
        assert _same(got["judge_agreement"], want[m]["judge_agreement"]) and got["judge_agreement"]
        assert _shown(jw.judges_table) == [judge_cells(r) for r in want[m]["judges"]]
        shown = _shown(jw.agreement_table)
        assert shown == [agreement_cells(r) for r in want[m]["judge_agreement"]]
        for row, r in zip(shown, want[m]["judge_agreement"]):  # the figures read as the command prints them
            assert row[4:] == [_num(r, "coverage"), _num(r, "accuracy"), _num(r, "kappa")]
    # the spatial table sets each judge against the humans of the kept selection, with intervals
    jw.set_method("spatial")
    _wait(qtbot, jw)
    names = [r[0] for r in _shown(jw.judges_table)]
    assert "spatial.geneval" in names and "spatial.twin" in names and "human" in names
    human = [r for r in _shown(jw.agreement_table) if r[1] == "human"]
    assert human and all("[" in r[5] for r in human if r[5] != "—")
    assert any(r[5] != "—" for r in human)
    assert jw.labels_line.isVisible() and "labels:" in jw.labels_line.line()
    from workstation.evaluation.selection import resolve_project
    from workstation.methods.spatial.store import TASK

    n = len(resolve_project(p, TASK))
    assert n > 0 and f"— {n} items" in jw.labels_line.line()


def test_the_window_cancels_and_computes_again(qtbot: Any, open_window: Any, demo_project: Path) -> None:
    from ui import menus

    win = open_window(demo_project)
    qtbot.waitUntil(lambda: "spatial" in win.method_views, timeout=20000)
    menus.open_judges(win)
    jw = win.judges_window
    jw.set_method("spatial")
    if jw.is_running():
        jw.cancel()
        assert not jw.is_running() and jw.tables is None
        assert "cancelled" in jw.status.text() and jw.compute_button.isEnabled()
        assert jw.agreement_table.rowCount() == 0
    jw.compute_button.click()
    _wait(qtbot, jw)
    assert jw.agreement_table.rowCount() > 0 and "pairs compared" in jw.status.text() and "3 judges and the humans" in jw.status.text()


def test_no_judge_is_computed_before_the_window_is_shown(qtbot: Any, open_window: Any, demo_project: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import ui.judges_window as jwm

    calls: list[str] = []
    real = jwm.compute_tables

    def spy(project: Any, method: str, n_boot: Any = None) -> Any:
        calls.append(method)
        return (yield from real(project, method, n_boot))

    monkeypatch.setattr(jwm, "compute_tables", spy)
    win = open_window(demo_project)
    qtbot.waitUntil(lambda: "spatial" in win.method_views, timeout=20000)
    jw = jwm.JudgesWindow(win)
    qtbot.addWidget(jw)
    jw.set_method("metalogic")
    assert calls == [] and not jw.is_running()
    win.judges_window = jw
    jwm.open_judges(win)
    _wait(qtbot, jw)
    assert len(calls) == 1


def test_in_a_blind_audit_the_window_opens_only_after_a_recorded_pause(qtbot: Any, open_window: Any,
                                                                       demo_project: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from ui import menus
    from ui.widgets import audit_pause
    from workstation.methods.spatial.store import TASK

    answers: list[bool] = []
    monkeypatch.setattr(audit_pause, "ask", lambda *_a: answers.pop(0))
    win = open_window(demo_project)
    qtbot.waitUntil(lambda: "spatial" in win.method_views, timeout=20000)
    p = win.state.project
    ids = [str(x) for x in p.samples.load_dataset(method="spatial").samples.sample_id[:2]]
    aid = p.audit.create_set("blind", TASK, ids, {}, blind=True)
    assert menus.start_audit_set(win, aid) == 2
    answers.append(False)  # Stay in audit: no window, no pause
    menus.open_judges(win)
    assert getattr(win, "judges_window", None) is None
    assert not p.con.execute("SELECT count(*) FROM audit_pauses").fetchone()[0]
    answers.append(True)  # Pause: recorded, then the window
    menus.open_judges(win)
    assert win.judges_window.isVisible()
    assert p.con.execute("SELECT count(*) FROM audit_pauses").fetchone()[0] == 1
    _wait(qtbot, win.judges_window)


def test_review_where_two_judges_disagree_makes_their_disagreements_the_queue(
        qtbot: Any, open_window: Any, demo_project: Path) -> None:
    import numpy as np

    from ui import menus

    win = open_window(demo_project)
    qtbot.waitUntil(lambda: "spatial" in win.method_views, timeout=20000)
    menus.open_judges(win)
    jw = win.judges_window
    jw.set_method("spatial")
    _wait(qtbot, jw)
    assert not jw.review_button.isEnabled()  # no row chosen
    rows = jw.tables["judge_agreement"]
    human = next(i for i, r in enumerate(rows) if r["judge_b"] == "human")
    jw.agreement_table.clearSelection()
    jw.agreement_table.selectRow(human)
    assert not jw.review_button.isEnabled()  # a row against the humans has no judge pair
    # the two judges that disagree most often
    pairs = [i for i, r in enumerate(rows) if "human" not in (r["judge_a"], r["judge_b"]) and r["both_decided"]]
    k = max(pairs, key=lambda i: rows[i]["both_decided"] * (1 - rows[i]["accuracy"]))
    a, b = rows[k]["judge_a"], rows[k]["judge_b"]
    jw.agreement_table.clearSelection()  # one row chosen (a modifier key left down would add to it)
    jw.agreement_table.selectRow(k)
    assert jw.review_button.isEnabled()
    assert jw.review_disagreements()
    # the queue is every sample both decided and decided differently (the judges' own outputs)
    from workstation.evaluation.judges import JudgeRun
    from workstation.methods.spatial.judges import spatial_judges

    run = JudgeRun(win.state.project, spatial_judges(win.state.project))
    g, t = run.output(a), run.output(b)
    differ = g.decided & t.decided & (g.outcome != t.outcome)
    want = {str(x) for x in run.targets.ids[differ].tolist()}
    assert 0 < len(want) == rows[k]["both_decided"] - round(rows[k]["accuracy"] * rows[k]["both_decided"])
    # Browse's judges come in off the GUI thread; the review starts once they are
    qtbot.waitUntil(lambda: win.tabs.currentWidget() is win.review, timeout=30000)
    ds = win.spatial.dataset
    assert {str(ds.samples.sample_id[r]) for r in np.asarray(win.spatial.queue)} == want
    assert win.browser.filters.spec().judges_disagree == [a, b]
