"""The audit-plan panel (`ui/widgets/audit_plan.py`) on a demo project, offscreen: state a goal,
start the plan, label the targets it gives, watch the estimate and the interval follow, see
"Goal reached", and find the same plan after the project is closed and opened again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PySide6.QtCore import Qt

from workstation.methods import get_method
from workstation.methods.metalogic.results import LABEL_SCHEME
from workstation.store import Project


@pytest.fixture
def demo_project(tmp_path: Path) -> Path:
    folder = tmp_path / "demo"
    with Project.create(folder) as p:
        get_method("spatial").build_demo(p, small=True, workers=0)
        get_method("metalogic").build_demo(p, small=True, workers=0)
    return folder


def _truth(p: Any) -> dict[str, str]:
    from workstation.methods import audit_sources

    t = audit_sources.audit_table(p, "metalogic")
    rng = np.random.default_rng(1)
    return {i: ("MISALIGNED" if o == 1 else "ALIGNED") if rng.random() > 0.15 else "UNDECIDABLE"
            for i, o in zip(t.item_id.tolist(), t.outcome.tolist())}


def test_the_panel_plans_labels_and_reaches_the_goal(qtbot: Any, demo_project: Path) -> None:
    from ui.widgets.audit_plan import AuditPlanPanel

    panel = AuditPlanPanel()
    qtbot.addWidget(panel)
    panel.resize(1200, 800)
    panel.show()
    assert "Open a project" in panel.goal_label.text()
    p = Project.open(demo_project)
    try:
        panel.set_project(p)
        methods = [panel.method_combo.itemData(i) for i in range(panel.method_combo.count())]
        assert methods == ["metalogic", "spatial"]
        assert "No audit plan yet" in panel.goal_label.text() and not panel.next_button.isEnabled()
        panel.method_combo.setCurrentIndex(methods.index("metalogic"))
        panel.quantity_combo.setCurrentIndex(panel.quantity_combo.findData("rate"))
        panel.width_spin.setValue(12.0)
        qtbot.mouseClick(panel.start_button, Qt.MouseButton.LeftButton)
        plan = panel.plan
        assert plan is not None and plan.plan_id == 1 and panel.plan_combo.count() == 1
        assert "true misalignment rate to ±12.0 % at 95 %" in panel.goal_label.text()
        assert "no estimate yet" in panel.estimate_label.text() and panel.reached_label.text() == "labelling…"
        truth = _truth(p)
        got: list[list[Any]] = []
        panel.targets_ready.connect(got.append)
        rounds = 0
        while panel.reached_label.text() != "Goal reached" and rounds < 30:
            panel.batch_spin.setValue(3)
            panel.next_button.click()
            assert got and got[-1], "the panel hands out targets until the goal is reached"
            assert panel.next_list.count() >= 1
            for t in got[-1]:
                for pid in t.targets:
                    p.labels.add(LABEL_SCHEME.task, "pair", pid, "erin", truth[pid], audit_set_id=plan.audit_set_id)
            panel.refresh()
            rounds += 1
        st = panel.status
        assert st is not None and st.reached
        assert panel.reached_label.text() == "Goal reached"
        true_rate = np.mean([v == "MISALIGNED" for v in truth.values()])
        assert st.estimate.low <= true_rate <= st.estimate.high
        assert f"labels used: <b>{st.labels}</b>" in panel.labels_label.text()
        assert panel.table.rowCount() == 3 and panel.table.item(0, 3).text() == str(st.labels)
        assert panel.table.item(0, 1).text() == f"{100 * st.estimate.value:.1f} %"
        xs, ys = panel._curve.getData()
        assert len(xs) >= 1 and ys[-1] == pytest.approx(st.estimate.value)
        assert panel.width_bar.value() == 1000
        shot = panel.grab()
        assert shot.width() > 600 and shot.height() > 400
    finally:
        panel.set_project(None)
        p.close()
    # closed and opened again: the same plan, the same estimate
    p2 = Project.open(demo_project)
    try:
        panel2 = AuditPlanPanel()
        qtbot.addWidget(panel2)
        panel2.set_project(p2)
        assert panel2.plan_combo.count() == 1 and panel2.plan is not None
        assert panel2.status is not None and panel2.status.estimate.value == pytest.approx(st.estimate.value)
        assert panel2.reached_label.text() == "Goal reached"
    finally:
        p2.close()


def test_a_read_only_project_shows_its_plans_but_draws_nothing(qtbot: Any, demo_project: Path) -> None:
    from ui.widgets.audit_plan import AuditPlanPanel
    from workstation.evaluation.plan import Goal
    from workstation.methods import audit_sources

    with Project.open(demo_project) as p:
        audit_sources.create_plan(p, "spatial", Goal("rate", 0.2), name="spatial rate")
    panel = AuditPlanPanel()
    qtbot.addWidget(panel)
    with Project.open(demo_project, read_only=True) as ro:
        panel.set_project(ro)
        assert not panel.start_button.isEnabled()
        assert panel.plan is not None and "true PASS rate to ±20.0 %" in panel.goal_label.text()
        assert not panel.next_button.isEnabled() and panel.request_targets() == []
        panel.set_project(None)


def test_a_goal_with_nothing_in_scope_says_why(qtbot: Any, tmp_path: Path) -> None:
    """A checker that decided nothing has no PASS precision to audit: the panel says so and
    stores nothing."""
    from ui.widgets.audit_plan import AuditPlanPanel
    from workstation.methods.spatial.config import CheckerConfig
    from workstation.methods.spatial.store import SpatialStore

    folder = tmp_path / "undecided"
    with Project.create(folder) as p:
        get_method("spatial").build_demo(p, small=True, workers=0)
        SpatialStore(p).save_config(CheckerConfig(name="never decides", margin=0.99), note="abstains")
    panel = AuditPlanPanel()
    qtbot.addWidget(panel)
    with Project.open(folder) as p:
        panel.set_project(p)
        panel.quantity_combo.setCurrentIndex(panel.quantity_combo.findData("precision"))
        assert panel.start_plan() is None
        assert "nothing to audit" in panel.error_label.text()
        assert panel.plan_combo.count() == 0 and p.plans.all() == []
        panel.set_project(None)


def test_audit_plans_from_the_window_hand_their_targets_to_the_judging_page(qtbot: Any, open_window: Any,
                                                                         demo_project: Path) -> None:
    """Audit → Audit plans…: start a plan, "Label next" opens the plan's audit set on the method's
    judging page at a drawn target; a label pressed there moves the plan's estimate."""
    from ui import menus

    w = open_window(demo_project)
    menus.open_audit_plans(w)
    win = w.audit_plans_window
    panel = win.panel
    assert win.isVisible() and panel.project is w.state.project
    panel.method_combo.setCurrentIndex(panel.method_combo.findData("metalogic"))
    panel.quantity_combo.setCurrentIndex(panel.quantity_combo.findData("rate"))
    plan = panel.start_plan()
    assert plan is not None and plan.audit_set_id is not None
    panel.batch_spin.setValue(2)
    qtbot.mouseClick(panel.next_button, Qt.MouseButton.LeftButton)
    drawn = {pid for t in plan.pending() for pid in t.targets}
    assert drawn
    views = w.method_views["metalogic"]
    c = views.controller(w)
    assert c.audit is not None and c.audit.audit_set_id == plan.audit_set_id
    assert c.core.target_id(c.core.current) in drawn  # the judging page shows a drawn target
    assert c.audit.blind and "audit set" in w.statusBar().currentMessage()
    before = panel.status.labels
    c.record("MISALIGNED")
    assert panel.status.labels == before + 1  # the estimate followed the label
    # a project closed and another opened: the window follows it
    w.close_project()
    assert panel.project is None and "Open a project" in panel.goal_label.text()


def test_a_spoiled_plan_is_named_with_its_reason_and_a_shrunk_one_says_what_left(qtbot: Any,
                                                                                 demo_project: Path) -> None:
    """A stored plan whose goal the project no longer holds as a goal is listed and, chosen,
    shows why it cannot be used (nothing to label); a plan whose items partly left the project
    shows its estimate over the rest and says how many left."""
    from ui.widgets.audit_plan import AuditPlanPanel
    from workstation.evaluation.plan import Goal
    from workstation.methods import audit_sources

    with Project.open(demo_project) as p:
        audit_sources.create_plan(p, "metalogic", Goal("rate", 0.2), name="broken")
        audit_sources.create_plan(p, "spatial", Goal("rate", 0.2), name="shrinks")
        p.con.execute("UPDATE audit_plans SET goal = '{\"quantity\": \"rate\", \"half_width\": NaN}' WHERE plan_id = 1")
        # two of the spatial plan's images leave the project (as `runs remove` takes them)
        gone = [r[0] for r in p.con.execute("SELECT item_id FROM audit_plan_items WHERE plan_id = 2 "
                                            "ORDER BY row_no LIMIT 2").fetchall()]
        p.con.execute("DELETE FROM samples WHERE sample_id IN (SELECT unnest(?))", [gone])
    panel = AuditPlanPanel()
    qtbot.addWidget(panel)
    with Project.open(demo_project) as p:
        panel.set_project(p)
        assert panel.plan_combo.count() == 2 and "goal unreadable" in panel.plan_combo.itemText(0)
        panel.plan_combo.setCurrentIndex(0)
        assert panel.plan is None and not panel.next_button.isEnabled()
        assert "audit plan #1 cannot be used: its goal is not valid JSON" in panel.goal_label.text()
        panel.plan_combo.setCurrentIndex(1)
        assert panel.plan is not None and panel.status is not None and panel.status.removed == 2
        assert "2 of the" in panel.message_label.text() and "no longer in the project" in panel.message_label.text()
        got: list[list[Any]] = []
        panel.targets_ready.connect(got.append)
        panel.batch_spin.setValue(50)
        panel.request_targets()
        assert got and not {t for x in got[-1] for t in x.targets} & set(gone)
        panel.set_project(None)


def test_the_plans_window_follows_a_run_removed_from_the_jobs_menu(qtbot: Any, open_window: Any,
                                                                    demo_project: Path) -> None:
    """Jobs → Remove run… says what each plan loses; the plans window then shows the plan as
    stale (every item gone) and hands nothing out."""
    from PySide6.QtWidgets import QMessageBox

    from ui import menus
    from ui.jobs_menu import remove_run_dialog
    from workstation.evaluation.plan import Goal
    from workstation.methods import audit_sources

    from .conftest import on_next_modal

    with Project.open(demo_project) as p:
        plan = audit_sources.create_plan(p, "metalogic", Goal("rate", 0.2), name="misalignment")
        audit_sources.next_targets(p, plan, 3)
        runs = sorted({r[0] for r in p.con.execute(
            "SELECT DISTINCT run_id FROM metalogic_outcomes").fetchall()})
    w = open_window(demo_project)
    menus.open_audit_plans(w)
    panel = w.audit_plans_window.panel
    assert panel.plan is not None and panel.status is not None and panel.status.removed == 0
    seen: list[str] = []

    def yes(box: Any) -> None:
        seen.append(box.text())
        box.button(QMessageBox.Yes).click()

    for rid in runs:
        on_next_modal(qtbot, yes)
        assert remove_run_dialog(w, rid)
    assert any("audit plan #1 loses" in t for t in seen), seen
    assert panel.plan is not None and panel.plan.stale
    assert "stale" in panel.message_label.text() and not panel.next_button.isEnabled()
    assert panel.request_targets() == []


def test_the_panel_lists_a_method_by_its_own_audit_source_s_title(qtbot: Any, tmp_path: Path) -> None:
    """A fifth method (the Lamp method of the tests) is listed under the title its method object's
    audit source gives, beside the others, with no list of titles outside its folder."""
    from tests import toy_method
    from ui.widgets.audit_plan import AuditPlanPanel

    panel = AuditPlanPanel()
    qtbot.addWidget(panel)
    with toy_method.registered(views=False):
        with Project.create(tmp_path / "p") as p:
            get_method("lamp").build_demo(p, small=True)
            get_method("metalogic").build_demo(p, small=True, workers=0)
            panel.set_project(p)
            listed = {panel.method_combo.itemData(i): panel.method_combo.itemText(i)
                      for i in range(panel.method_combo.count())}
            assert listed == {"lamp": "Lamp: the threshold's outcomes",
                              "metalogic": "MetaLogic: the comparison's outcomes"}
            panel.set_project(None)


def test_what_a_method_s_plan_may_choose_comes_from_its_audit_source(qtbot: Any, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The Lamp method's audit source says which options a new plan may choose (a threshold),
    what the plan is made on and what a stored plan was made on: the panel shows them, and the
    plan is made with what its widgets say."""
    from PySide6.QtWidgets import QDoubleSpinBox, QLabel

    from tests import toy_method
    from tests.toy_method import audit_source
    from ui.widgets.audit_plan import AuditPlanPanel
    from workstation.evaluation.base import PlanOption

    option = PlanOption("threshold", "lamp threshold", default=0.4, minimum=0.0, maximum=1.0, decimals=2)
    monkeypatch.setattr(audit_source, "plan_options", lambda project: [option], raising=False)
    monkeypatch.setattr(audit_source, "plan_basis", lambda project: "Uses the lamps as they stand.",
                        raising=False)
    monkeypatch.setattr(audit_source, "made_on", lambda table: f"at threshold {table.source['threshold']}",
                        raising=False)
    panel = AuditPlanPanel()
    qtbot.addWidget(panel)
    panel.show()
    with toy_method.registered(views=False):
        with Project.create(tmp_path / "p") as p:
            get_method("lamp").build_demo(p, small=True)
            get_method("metalogic").build_demo(p, small=True, workers=0)
            panel.set_project(p)
            panel.method_combo.setCurrentIndex(panel.method_combo.findData("lamp"))
            spin = panel.findChild(QDoubleSpinBox, "plan_threshold")
            assert spin is not None and spin.isVisible() and spin.value() == pytest.approx(0.4)
            assert any(lab.text() == "lamp threshold" and lab.isVisible()
                       for lab in panel.findChildren(QLabel))
            assert panel.uses_label.isVisible() and panel.uses_label.text() == "Uses the lamps as they stand."
            spin.setValue(0.25)
            assert panel.options() == {"threshold": 0.25}
            qtbot.mouseClick(panel.start_button, Qt.MouseButton.LeftButton)
            assert panel.plan is not None and panel.plan.table.source["threshold"] == pytest.approx(0.25)
            assert "· at threshold 0.25" in panel.labels_label.text()
            # MetaLogic's source has no options of its own, nor a line of what its plan is made on
            panel.method_combo.setCurrentIndex(panel.method_combo.findData("metalogic"))
            assert not spin.isVisible() and not panel.option_row.isVisible()
            assert not panel.uses_label.isVisible()
            assert panel.options() == {}
            panel.set_project(None)


def test_a_plan_names_a_second_judge_from_the_methods_judges_and_reopens_with_it(qtbot: Any,
                                                                                demo_project: Path) -> None:
    """The goal form lists the method's judges as a second judge; a plan made with GenEval's
    position rule records it, its status names it, and the plan opens again after the project is
    closed (the judge taken from the method's judges, not given again)."""
    from ui.widgets.audit_plan import AuditPlanPanel
    from workstation.methods import audit_sources

    panel = AuditPlanPanel()
    qtbot.addWidget(panel)
    with Project.open(demo_project) as p:
        panel.set_project(p)
        panel.method_combo.setCurrentIndex(panel.method_combo.findData("spatial"))
        names = [panel.judge_combo.itemData(i) for i in range(panel.judge_combo.count())]
        assert names[0] is None and panel.judge_combo.isEnabled()
        geneval = next(n for n in names[1:] if str(n).startswith("spatial.geneval"))
        panel.judge_combo.setCurrentIndex(names.index(geneval))
        panel.quantity_combo.setCurrentIndex(panel.quantity_combo.findData("rate"))
        plan = panel.start_plan()
        assert plan is not None, panel.error_label.text()
        assert plan.second_judge is not None and plan.second_judge.name == geneval
        assert 0 < plan.second_judge.judged <= len(plan.table)
        assert plan.status().second_judge.startswith(geneval)
        assert f"second judge {geneval}" in panel.labels_label.text()
        pid = plan.plan_id
        panel.set_project(None)
    with Project.open(demo_project) as p:
        again = audit_sources.open_plan(p, pid)
        assert again.second_judge is not None and again.second_judge.digest == plan.second_judge.digest
        # a judge the method does not have: one line naming it and the judges there are
        with pytest.raises(Exception, match="no judge"):
            audit_sources.second_judge_of(p, "spatial", "spatial.nothing")(again.table)
