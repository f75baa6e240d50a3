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


FOUR = ("spatial", "metalogic", "protobias", "dyeval")


@pytest.fixture
def four_methods(demo_project: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The demo project with the small demos of ProtoBias and DyEval too (each method's own labels:
    ProtoBias's planted raters, DyEval's oracle), and the `report` written of it."""
    from workstation.cli import main

    with Project.open(demo_project) as p:
        for m in ("protobias", "dyeval"):
            get_method(m).build_demo(p, small=True)
    report = tmp_path / "report"
    assert main(["report", "--project", str(demo_project), "--out", str(report)]) == 0
    return demo_project, report


def _csv_same(path: Path, rows: list[dict[str, Any]]) -> bool:
    """The report's CSV table holds ``rows``, figure for figure (an undefined figure: nan)."""
    import csv

    with open(path, newline="", encoding="utf-8") as fh:
        got = list(csv.DictReader(fh))

    def cell(v: Any) -> Any:
        try:
            x = float(v)
        except (TypeError, ValueError):
            return str(v)
        return "nan" if math.isnan(x) else x

    return [{k: cell(v) for k, v in r.items()} for r in got] == [{k: cell(v) for k, v in r.items()} for r in rows]


def _same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    """Equal rows, an undefined figure (NaN) equal to an undefined one."""
    def norm(v: Any) -> Any:
        return "nan" if isinstance(v, float) and math.isnan(v) else v

    return [{k: norm(v) for k, v in r.items()} for r in a] == [{k: norm(v) for k, v in r.items()} for r in b]


def _shown(t: Any) -> list[list[str]]:
    return [[t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())]


def _wait(qtbot: Any, w: Any) -> None:
    qtbot.waitUntil(lambda: w.tables is not None and not w.is_running(), timeout=60000)


def test_the_window_shows_the_commands_numbers(qtbot: Any, open_window: Any,
                                              four_methods: tuple[Path, Path]) -> None:
    """For each of the four methods on the demo: the window's judges and agreement table are the
    `judges` command's and the report's (tables/judges.csv, tables/judge_agreement.csv), and the
    agreement table has a row with an interval."""
    from ui import menus
    from ui.judges_window import agreement_cells, judge_cells
    from workstation.commands.judges import tables
    from workstation.evaluation.judges import interval_text as _num

    demo_project, report = four_methods
    win = open_window(demo_project)
    qtbot.waitUntil(lambda: "spatial" in win.method_views, timeout=20000)
    # the MetaLogic page stores its comparison's outcomes once it has evaluated: a judge of its own
    from workstation.methods import method_judges

    qtbot.waitUntil(lambda: len(method_judges(win.state.project, "metalogic").judges) == 2, timeout=30000)
    menus.open_judges(win)
    jw = win.judges_window
    assert jw.isVisible() and jw.windowTitle() == "Judges"
    methods = [jw.method_combo.itemData(i) for i in range(jw.method_combo.count())]
    assert sorted(methods) == sorted(FOUR)
    p = win.state.project
    want = tables(p, [get_method(m) for m in methods])
    for m in FOUR:
        jw.set_method(m)
        _wait(qtbot, jw)
        got = jw.tables
        assert got is not None
        assert _same(got["judges"], want[m]["judges"]), m
        assert _same(got["judge_agreement"], want[m]["judge_agreement"]) and got["judge_agreement"], m
        # the report's tables are the window's, figure for figure
        assert _csv_same(report / m / "tables" / "judges.csv", got["judges"]), m
        assert _csv_same(report / m / "tables" / "judge_agreement.csv", got["judge_agreement"]), m
        assert _shown(jw.judges_table) == [judge_cells(r) for r in want[m]["judges"]]
        shown = _shown(jw.agreement_table)
        assert shown == [agreement_cells(r) for r in want[m]["judge_agreement"]]
        for row, r in zip(shown, want[m]["judge_agreement"]):  # the figures read as the command prints them
            assert row[4:] == [_num(r, "coverage"), _num(r, "accuracy"), _num(r, "kappa")]
        # each method's table has a row whose accuracy has a finite interval around it
        finite = [r for r in got["judge_agreement"]
                  if all(math.isfinite(r[k]) for k in ("accuracy", "accuracy_lo", "accuracy_hi"))
                  and r["accuracy_lo"] <= r["accuracy"] <= r["accuracy_hi"] and r["both_decided"] > 0]
        assert finite, f"{m}: no agreement row with an interval"
        assert any(f"{r['accuracy']:.4f} [" in row[5] for r in finite for row in shown), m
    # DyEval's demo is pre-marked by its own object finder, named so, against the oracle's labels
    dy = {r["judge"]: r for r in want["dyeval"]["judges"]}
    assert "demo-objects" in dy["dyeval.premark"]["title"] and "CLIPScore" not in dy["dyeval.premark"]["title"]
    assert 0 < dy["dyeval.premark"]["covered"] <= dy["dyeval.premark"]["items"]
    assert any(r["judge_a"] == "dyeval.premark" and r["judge_b"] == "human" and r["both_decided"] > 0
               for r in want["dyeval"]["judge_agreement"])
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
    jw.agreement_table.setCurrentCell(human, 0)
    assert not jw.review_button.isEnabled()  # a row against the humans has no judge pair
    # the two judges that disagree most often
    pairs = [i for i, r in enumerate(rows) if "human" not in (r["judge_a"], r["judge_b"]) and r["both_decided"]]
    k = max(pairs, key=lambda i: rows[i]["both_decided"] * (1 - rows[i]["accuracy"]))
    a, b = rows[k]["judge_a"], rows[k]["judge_b"]
    jw.agreement_table.clearSelection()
    jw.agreement_table.setCurrentCell(k, 0)  # the row clicked (others a modifier key added aside)
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
