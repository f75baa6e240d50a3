"""Three raters, one protocol, for each method, from the draw to the figures.

On the method's small demo project the lead auditor imports the demo's known truth as gold
answers, sets a qualification rule (r3 fails it) and draws a blind overlap set with three raters
on every item and three gold items seeded into it. Each rater opens the set as the window's
annotator and labels their queue with the judging page's keys; r3 answers every gold item wrong.
Then:

* the Raters window shows each rater's items and gold accuracy, and r3 as left out;
* r3's labels leave the estimates: the selection's line names r3 as left out, and the values
  the labels resolve to stay the same when r3's labels are all changed (and would change
  without the rule);
* a disagreement of r1 and r2 is in the adjudication queue, the adjudicator records the final
  label in the Adjudicate… window, and under the `adjudicated` rule that label is the one the
  method's human figures take (spatial: the calibration's human codes and its confusion table;
  the others: the value the selection resolves to, which their human tables read).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication, QLineEdit, QPushButton

from ui import menus
from workstation.evaluation.audit_sets import draw_audit_set
from workstation.evaluation.raters import (
    Qualification,
    adjudication_queue,
    save_qualification,
    set_adjudicators,
)
from workstation.evaluation.selection import DISPUTED, LabelSelection, resolve_project, save_selection
from workstation.methods.spatial.types import VERDICT_CODE, VERDICTS

from .test_judging_contract import (  # noqa: F401 - the fixtures are used by name
    _key,
    _window,
    demo,
    lamp_method_registered,
    project,
)
from .test_rater_monitor import _audit_action

pytestmark = pytest.mark.gui

METHODS = ["dyeval", "metalogic", "protobias", "spatial"]
RATERS = ("r1", "r2", "r3")


def _switch(w: Any, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setattr("ui.project_dialogs.ask_annotator", lambda *a: name)
    menus.change_annotator(w)
    assert w.state.annotator == name


def _label_queue(qtbot: Any, w: Any, views: Any, c: Any, rater: str, answer: Any) -> dict[str, str]:
    """The rater labels every item of their queue with the page's keys: ``answer(target)`` is
    the value's position in the scheme. Returns target → the value recorded."""
    s = c.scheme
    views.bar(w).auto.setChecked(False)
    got: dict[str, str] = {}
    for i in range(len(c.queue)):
        c.go(i)
        QApplication.processEvents()
        target = str(c.current)
        _key(qtbot, w, s.keys[answer(target)])
        ev = w.state.project.labels.events(task=s.task, target_id=target)[-1]
        assert (ev.annotator, ev.value) == (rater, s.values[answer(target)]), \
            f"{rater}'s key on {target} recorded {ev.annotator}: {ev.value}"
        got[target] = str(ev.value)
    return got


def _method_human(name: str, p: Any, selection: LabelSelection) -> tuple[str, dict[str, Any]] | None:
    """ProtoBias's human tables resolve the labels themselves (`selected_ratings`): their line
    and the rating per image they take; the other methods' read `resolve_project`."""
    if name != "protobias":
        return None
    from workstation.methods.protobias.data import load_project_data, selected_ratings

    got = selected_ratings(load_project_data(p), selection)
    r = got.ratings
    per_image = {f"{i}/{side}": float(v) for i, side, v in zip(r.triplet_id.tolist(), r.role.tolist(),
                                                               r.rating.tolist())}
    return got.line(), per_image


@pytest.mark.parametrize("demo", METHODS, indirect=True)
def test_three_raters_gold_qualification_monitor_and_adjudication(
        qtbot: Any, open_window: Any, project: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    name, folder = project
    w, views, c = _window(open_window, qtbot, name, folder)
    p = w.state.project
    s = c.scheme
    pop = views.audit_population(w)
    assert pop is not None and len(pop) >= 8, f"{name}: too few targets in its demo"
    ids = [str(t) for t in pop.ids.tolist()]
    right, wrong, other = 0, len(s.values) - 1, 1  # positions in the scheme's values

    # the lead auditor: the demo's known truth as gold answers, a qualification rule, the overlap set;
    # three gold items are seeded among the drawn ones
    gold_answers = ids
    p.audit.add_gold(s.task, [(t, s.values[right], "known") for t in gold_answers], "test")
    size = min(8, len(ids) - 3)
    save_qualification(p, Qualification(min_accuracy=0.9, min_items=2))
    set_adjudicators(p, ["lead"])
    aid = draw_audit_set(p, s, pop, name="three raters", size=size, seed=3, recheck_fraction=0.0,
                         raters=RATERS, k=3, gold_rate=3 / (size + 3))
    seeded = {t for _a, t in p.audit.gold_items(aid)}
    assert len(seeded) == 3 and seeded <= set(gold_answers)
    items = [t for t, _rc in p.audit.items(aid)]
    drawn = [t for t in items if t not in seeded]
    assert len(drawn) == size and all(sorted(v) == sorted(items) for v in p.audit.assignments(aid).values())
    disputed = drawn[0]  # r1 and r2 disagree here; r3's label would decide it

    def answers(rater: str) -> Any:
        def answer(t: str) -> int:
            if t in seeded:
                return wrong if rater == "r3" else right
            if rater == "r3":
                return other
            return other if (rater == "r2" and t == disputed) else right
        return answer

    recorded: dict[str, dict[str, str]] = {}
    for rater in RATERS:
        _switch(w, monkeypatch, rater)
        assert menus.start_audit_set(w, aid) == len(items)
        assert c.audit is not None and c.audit.blind and sorted(c.queue) == sorted(items)
        recorded[rater] = _label_queue(qtbot, w, views, c, rater, answers(rater))
        assert sorted(recorded[rater]) == sorted(items)
        menus.leave_audit(w)

    # (a) the Raters window: each rater's items and gold accuracy, r3 left out
    _audit_action(w, "Raters…").trigger()
    win = w.raters_window
    panel = win.panel
    panel.n_boot = 60
    panel.select_task(s.task)
    panel.refresh()
    rows = {panel.cell(panel.raters, i, "rater"): i for i in range(panel.raters.rowCount())}
    assert set(RATERS) <= set(rows), rows
    for rater in RATERS:
        i = rows[rater]
        shown = panel.cell(panel.raters, i, "items")
        assert shown == str(len(items)), (rater, shown)
        gold = panel.cell(panel.raters, i, "gold (%)")
        assert gold.startswith("0.0%" if rater == "r3" else "100.0%"), (rater, gold)
    assert panel.cell(panel.raters, rows["r3"], "qualification") == "left out: gold 0/3 < 90 %"
    assert panel.cell(panel.raters, rows["r1"], "qualification") == "qualified"
    assert panel.cell(panel.raters, rows["r2"], "qualification") == "qualified"
    win.close()

    # (b) r3's labels leave the estimates
    majority = LabelSelection(sets=(aid,), free=False, rule="majority")
    before = resolve_project(p, s.task, majority)
    assert "r3 left out: gold 0/3 < 90 %" in before.describe()
    values = dict(zip(before.target_ids.tolist(), before.values.tolist()))
    assert sorted(values) == sorted(drawn)  # the gold items are no population label
    assert values[disputed] == DISPUTED and all(values[t] == s.values[right] for t in drawn if t != disputed)
    mean = LabelSelection(sets=(aid,), free=False, rule="mean")  # ProtoBias's default rule
    human_line = _method_human(name, p, majority)
    human_mean = _method_human(name, p, mean)
    if human_line is not None and human_mean is not None:  # the method's own human tables
        assert "r3 left out: gold 0/3 < 90 %" in human_line[0], human_line[0]
        assert len(human_line[1]) == len(before.as_dict())  # the images the drawn targets rate
        assert "r3 left out: gold 0/3 < 90 %" in human_mean[0], human_mean[0]
    save_qualification(p, None)  # without the rule r3 decides the disputed target
    assert resolve_project(p, s.task, majority).as_dict()[disputed] == s.values[other]
    save_qualification(p, Qualification(min_accuracy=0.9, min_items=2))
    for t in drawn:  # r3 changes every label of the drawn items
        flipped = s.values[wrong] if recorded["r3"][t] != s.values[wrong] else s.values[right]
        p.labels.add(s.task, s.target, t, "r3", flipped, audit_set_id=aid)
    after = resolve_project(p, s.task, majority)
    assert dict(zip(after.target_ids.tolist(), after.values.tolist())) == values
    assert "r3 left out" in after.describe()
    if human_line is not None:
        assert _method_human(name, p, majority) == human_line
        assert _method_human(name, p, mean) == human_mean

    # (c) the disagreement goes to adjudication; the final label reaches the human figures
    queue = {it.target_id: it for it in adjudication_queue(p, s.task)}
    assert disputed in queue and "raters disagree" in queue[disputed].reason
    adjudicated = LabelSelection(sets=(aid,), free=False, rule="adjudicated")
    save_selection(p, s.task, adjudicated)
    if name == "spatial":
        w.spatial.set_label_selection(adjudicated)
        row = int(w.spatial.dataset.sample_index()[disputed])
        assert w.spatial.calib_human[row] == -1  # disputed before the adjudication
        confusion = views.calibration_panel(w).plots.confusion_view
        w.tabs.setCurrentWidget(w._calibration_tab)
        QApplication.processEvents()
        fail = VERDICTS.index("FAIL")
        assert int(confusion.matrix.sum()) == size - 1 and int(confusion.matrix[:, fail].sum()) == 0
    pending = resolve_project(p, s.task)  # the kept selection
    assert pending.values.tolist()[pending.target_ids.tolist().index(disputed)] == DISPUTED
    _switch(w, monkeypatch, "lead")
    adj = menus.open_adjudication(w)
    assert adj is not None and adj.scheme.task == s.task
    k = next(i for i, it in enumerate(adj.items) if it.target_id == disputed)
    adj.table.selectRow(k)
    QApplication.processEvents()
    assert c.current == disputed
    final = s.values[other]
    adj.findChild(QLineEdit, "adjudicationNote").setText("read against the instructions")
    adj.findChild(QPushButton, f"adjudicate_{final}").click()
    ev = p.labels.events(task=s.task, target_id=disputed)[-1]
    assert (ev.annotator, ev.value, ev.source) == ("lead", final, "adjudication")
    adj.close()
    res = resolve_project(p, s.task)
    assert res.as_dict()[disputed] == final and res.n_adjudicated == 1
    assert "1 adjudicated" in res.describe() and "r3 left out" in res.describe()
    if name == "spatial":
        assert w.spatial.calib_human[row] == VERDICT_CODE[final]
        # the confusion table: the adjudicated sample is audited, in the human FAIL column
        w.tabs.setCurrentWidget(w._calibration_tab)
        QApplication.processEvents()
        assert final == "FAIL" and int(confusion.matrix.sum()) == size
        assert int(confusion.matrix[:, fail].sum()) == 1
