"""An audit plan follows its population, and a stored plan is read as a file from outside.

* `runs remove` takes the removed run's samples out of every plan made on them: the plan never
  draws or hands them out again, their labels count in no estimate, the estimate (window, report)
  is over the items that remain and says so, and the command says what each plan loses; a plan
  with none of its items left is refused as stale, in one line;
* what the project holds of a plan (goal, design, frozen items, draws, its method and audit set)
  is checked when it is opened: a value that is not a plan's is one line naming the plan, never a
  traceback, and `report` names the plan as stale instead of estimating it;
* `create_plan` refuses a seed, bins or re-check fraction out of range in one line.
"""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.hostile import MAX_MESSAGE
from workstation.cli import main
from workstation.commands.pipeline import PipelineRequest, create_pipeline
from workstation.evaluation.plan import Goal, PlanStale
from workstation.jobs.queue import JobQueue
from workstation.methods import audit_sources as A
from workstation.methods.spatial.store import SpatialStore
from workstation.store import Project
from workstation.types import WorkstationError

GEN = {"width": 64, "height": 64}


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A spatial project with runs 'keep' and 'drop' (8 images each), evaluated."""
    folder = tmp_path_factory.mktemp("two_runs") / "p"
    p = Project.create(folder)
    try:
        for rid in ("keep", "drop"):
            specs = create_pipeline(p, PipelineRequest(pairs=1, seeds=2, params=GEN, perturbations=[], run_id=rid))
            q = JobQueue(p)
            for i, s in enumerate(specs):
                q.submit(s.job_id, after=[x.job_id for x in specs[:i]])
            assert all(r.status == "done" for r in q.run_all(poll=0.05))
    finally:
        p.close()
    return folder


@pytest.fixture
def project(two_runs: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "p"
    shutil.copytree(two_runs, folder)
    return folder


def _run_of(p: Project) -> dict[str, str]:
    return dict(p.con.execute("SELECT sample_id, run_id FROM samples").fetchall())


def _plan_with_labels(folder: Path, n_drawn: int = 10) -> tuple[int, set[str]]:
    """A true-PASS-rate plan over all 16 images, ``n_drawn`` drawn and labelled PASS; returns the
    plan id and the labelled sample ids."""
    with Project.open(folder) as p:
        plan = A.create_plan(p, "spatial", Goal("rate", 0.02), seed=5, recheck_fraction=0.0)
        assert plan.n_items == 16
        targets = A.next_targets(p, plan, n_drawn)
        labelled = {t for x in targets for t in x.targets}
        for sid in labelled:
            SpatialStore(p).add_label(sid, "alice", "PASS", audit_set_id=plan.audit_set_id)
        return int(plan.plan_id), labelled  # type: ignore[arg-type]


def test_runs_remove_takes_its_samples_out_of_every_plan(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pid, labelled = _plan_with_labels(project)
    with Project.open(project, read_only=True) as p:
        run_of = _run_of(p)
    dropped = {s for s in labelled if run_of[s] == "drop"}
    kept = labelled - dropped
    assert dropped and kept  # the plan drew from both runs

    capsys.readouterr()
    assert main(["runs", "remove", "--project", str(project), "drop", "--yes"]) == 0
    out = capsys.readouterr().out
    assert f"audit plan #{pid} loses 8 of its 16 item(s) (its estimate is over the rest)" in out

    with Project.open(project) as p:
        plan = A.open_plan(p, pid)
        st = plan.status()
        assert st.items == 8 and st.removed == 8 and st.units == 8
        assert st.labels == len(kept) and st.estimate.labels == len(kept)  # the removed samples' labels count nowhere
        assert st.units_drawn == len(kept)
        assert "8 of the 16 images the plan was made on are no longer in the project" in st.message
        assert "the estimate is over the 8 that remain" in st.message
        # nothing of the removed run is handed out, now or later
        handed = [t for x in A.next_targets(p, plan, 50) for t in x.targets]
        assert handed and not {run_of[s] for s in handed} - {"keep"}
        assert all(run_of[t] == "keep" for x in plan.pending() for t in x.targets)
        assert plan.status().exhausted or plan.status().units_drawn == 8
        drawn_now = [str(plan.unit_ids[u]) for u, r in plan.draws if not r]
        assert len(drawn_now) == len(set(drawn_now))  # nothing drawn twice

    # the report's plan section: the estimate over what remains, and how many left
    out_dir = project.parent / "report"
    assert main(["report", "--project", str(project), "--out", str(out_dir)]) == 0
    with open(out_dir / "audit_plans" / "estimates.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and all(r["items_in_scope"] == "8" and r["removed"] == "8" for r in rows)
    assert "8 of the 16 images" in rows[0]["note"]
    page = (out_dir / "index.html").read_text(encoding="utf-8")
    assert "(8 removed from the project)" in page


def test_an_open_plan_follows_a_removal_made_while_it_is_open(project: Path) -> None:
    from workstation.commands.runs import remove_run

    pid, _labelled = _plan_with_labels(project, n_drawn=4)
    with Project.open(project) as p:
        plan = A.open_plan(p, pid)  # as the window holds it
        assert plan.status().items == 16
        remove_run(p, "drop")
        A.refresh(p, plan)
        assert plan.status().items == 8 and plan.status().removed == 8
        run_of = _run_of(p)
        assert all(run_of.get(t) == "keep" for x in A.next_targets(p, plan, 20) for t in x.targets)


def test_a_plan_none_of_whose_items_is_left_is_refused_as_stale(project: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from workstation.commands.runs import remove_run

    with Project.open(project) as p:
        plan = A.create_plan(p, "spatial", Goal("rate", 0.1), seed=1)
        A.next_targets(p, plan, 3)
        remove_run(p, "drop")
        remove_run(p, "keep")
        with pytest.raises(PlanStale) as e:
            A.open_plan(p, int(plan.plan_id))  # type: ignore[arg-type]
        msg = str(e.value)
        assert "\n" not in msg and len(msg) < MAX_MESSAGE
        assert "audit plan #1 cannot be used" in msg and "no longer in the project" in msg
        A.refresh(p, plan)  # the plan held open says so too, and draws nothing
        assert plan.stale and "stale" in plan.status().message and A.next_targets(p, plan, 5) == []
    out_dir = project.parent / "report_stale"
    # no samples are left: the report has nothing to report, and says so in one line
    capsys.readouterr()
    assert main(["report", "--project", str(project), "--out", str(out_dir)]) != 0
    assert "Traceback" not in capsys.readouterr().err


# ---- a stored plan is a file from outside -----------------------------------------------------------


def _set(sql: str, *params: Any) -> Callable[[Project], None]:
    def spoil(p: Project) -> None:
        p.con.execute(sql, list(params))
    return spoil


def _design(**change: Any) -> Callable[[Project], None]:
    def spoil(p: Project) -> None:
        d = json.loads(p.con.execute("SELECT design FROM audit_plans WHERE plan_id = 1").fetchone()[0])
        d.update(change)
        p.con.execute("UPDATE audit_plans SET design = ? WHERE plan_id = 1", [json.dumps(d)])
    return spoil


def _goal(**change: Any) -> Callable[[Project], None]:
    def spoil(p: Project) -> None:
        g = json.loads(p.con.execute("SELECT goal FROM audit_plans WHERE plan_id = 1").fetchone()[0])
        g.update(change)
        p.con.execute("UPDATE audit_plans SET goal = ? WHERE plan_id = 1", [json.dumps(g)])
    return spoil


def _deep(p: Project) -> None:
    p.con.execute("UPDATE audit_plans SET design = ? WHERE plan_id = 1", ["[" * 100_000 + "]" * 100_000])


def _draw_twice(p: Project) -> None:
    p.con.execute("INSERT INTO audit_plan_draws SELECT plan_id, seq + 100, unit_id, is_recheck, created_at "
                  "FROM audit_plan_draws WHERE plan_id = 1 AND seq = 0")


def _recheck_first(p: Project) -> None:
    p.con.execute("UPDATE audit_plan_draws SET is_recheck = true WHERE plan_id = 1 AND seq = 0")


SPOILED = [
    ("seed-negative", _design(seed=-1), "seed"),
    ("seed-huge", _design(seed=2**64), "seed"),
    ("seed-text", _design(seed="3"), "seed"),
    ("seed-fraction", _design(seed=1.5), "seed"),
    ("bins-zero", _design(bins=0), "bins"),
    ("bins-fraction", _design(bins=2.5), "bins"),
    ("bins-huge", _design(bins=10**9), "bins"),
    ("bins-true", _design(bins=True), "bins"),
    ("recheck-big", _design(recheck_fraction=3), "re-check fraction"),
    ("min-per-stratum-zero", _design(min_per_stratum=0), "first labels per stratum"),
    ("design-nan", _set("UPDATE audit_plans SET design = '{\"bins\": NaN}' WHERE plan_id = 1"), "design"),
    ("design-list", _set("UPDATE audit_plans SET design = '[1, 2]' WHERE plan_id = 1"), "design"),
    ("design-deep", _deep, "nested"),
    ("goal-not-json", _set("UPDATE audit_plans SET goal = '{quantity' WHERE plan_id = 1"), "goal"),
    ("goal-width-text", _goal(half_width="0.1"), "goal"),
    ("goal-width-big", _goal(half_width=7), "half-width"),
    ("goal-quantity-unknown", _goal(quantity="recall"), "quantity"),
    ("goal-unit-list", _goal(unit=["item"]), "unit"),
    ("meta-list", _set("UPDATE audit_plans SET meta = '[]' WHERE plan_id = 1"), "meta"),
    ("method-gone", _set("UPDATE audit_plans SET method = 'nope' WHERE plan_id = 1"), "method"),
    ("audit-set-gone", _set("DELETE FROM audit_sets WHERE audit_set_id = 1"), "audit set #1"),
    ("cluster-null", _set("UPDATE audit_plan_items SET cluster = NULL WHERE plan_id = 1 AND row_no = 3"), "item 4"),
    ("item-id-empty", _set("UPDATE audit_plan_items SET item_id = '' WHERE plan_id = 1 AND row_no = 5"), "item 6"),
    ("item-ids-repeat", _set("UPDATE audit_plan_items SET item_id = 'x' WHERE plan_id = 1 AND row_no < 2"), "repeat"),
    ("outcome-7", _set("UPDATE audit_plan_items SET outcome = 7 WHERE plan_id = 1 AND row_no = 0"), "outcome code 7"),
    ("confidence-nan", _set("UPDATE audit_plan_items SET confidence = 'nan'::DOUBLE WHERE plan_id = 1 AND row_no = 2"),
     "confidence"),
    ("confidence-big", _set("UPDATE audit_plan_items SET confidence = 5 WHERE plan_id = 1 AND row_no = 2"),
     "confidence"),
    ("targets-empty", _set("UPDATE audit_plan_items SET targets = [] WHERE plan_id = 1 AND row_no = 1"),
     "label target"),
    ("no-items", _set("DELETE FROM audit_plan_items WHERE plan_id = 1"), "no items"),
    ("draw-unknown", _set("UPDATE audit_plan_draws SET unit_id = 'ghost' WHERE plan_id = 1 AND seq = 0"),
     "not a unit"),
    ("draw-null", _set("UPDATE audit_plan_draws SET is_recheck = NULL WHERE plan_id = 1 AND seq = 1"), "draw 2"),
    ("draw-twice", _draw_twice, "drawn twice"),
    ("recheck-before-draw", _recheck_first, "before its draw"),
]


@pytest.mark.parametrize(("spoil", "words"), [pytest.param(s, w, id=i) for i, s, w in SPOILED])
def test_a_spoiled_stored_plan_is_refused_in_one_line(project: Path, spoil: Callable[[Project], None], words: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    with Project.open(project) as p:
        plan = A.create_plan(p, "spatial", Goal("rate", 0.1), seed=2, name="mine")
        A.next_targets(p, plan, 4)
        spoil(p)
    with Project.open(project) as p:
        with pytest.raises(PlanStale) as e:
            A.open_plan(p, 1)
        msg = str(e.value)
        assert msg.startswith("audit plan #1 cannot be used: ") and words.lower() in msg.lower(), msg
        assert "\n" not in msg and len(msg) < MAX_MESSAGE, msg
        assert p.plans.all()[0]["plan_id"] == 1  # the list of plans still reads
        assert A.plans_losing(p, "drop") == [] or words != "method"
    # the report names the plan as stale (with the reason) and estimates nothing of it
    out_dir = project.parent / "report"
    capsys.readouterr()
    rc = main(["report", "--project", str(project), "--out", str(out_dir)])
    err = capsys.readouterr().err
    assert rc == 0 and "Traceback" not in err, err
    if (out_dir / "audit_plans" / "estimates.csv").is_file():  # a plan of a method the report covers
        with open(out_dir / "audit_plans" / "estimates.csv", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        assert [r["estimator"] for r in rows] == ["stale"] and words.lower() in rows[0]["note"].lower()
    else:
        assert words == "method"


@pytest.mark.parametrize(("kw", "words"), [
    ({"seed": -1}, "seed"), ({"seed": 2**63}, "seed"), ({"seed": 1.5}, "seed"), ({"seed": True}, "seed"),
    ({"bins": float("nan")}, "bins"), ({"bins": 0}, "bins"), ({"bins": float("inf")}, "bins"),
    ({"bins": 2.0}, "bins"), ({"recheck_fraction": float("nan")}, "re-check fraction"),
    ({"recheck_fraction": -0.1}, "re-check fraction"), ({"name": 5}, "name"),
])
def test_create_plan_refuses_a_design_out_of_range_in_one_line(project: Path, kw: dict[str, Any], words: str) -> None:
    with Project.open(project) as p:
        with pytest.raises(WorkstationError) as e:
            A.create_plan(p, "spatial", Goal("rate", 0.1), **kw)
        msg = str(e.value)
        assert words in msg and "\n" not in msg and len(msg) < MAX_MESSAGE, msg
        assert p.plans.all() == [] and p.audit.sets() == []  # nothing stored


def test_a_goal_out_of_range_is_refused_in_one_line(project: Path) -> None:
    with Project.open(project) as p:
        for goal in (Goal("rate", float("nan")), Goal("rate", 0.1, float("nan")), Goal("rate", True),  # type: ignore[arg-type]
                     Goal(["rate"], 0.1)):  # type: ignore[arg-type]
            with pytest.raises(WorkstationError) as e:
                A.create_plan(p, "spatial", goal)
            assert "\n" not in str(e.value) and len(str(e.value)) < MAX_MESSAGE
        assert p.plans.all() == []


def test_options_a_method_does_not_take_are_refused_in_one_line(project: Path) -> None:
    with Project.open(project) as p:
        for kw in ({"metric": "clip"}, {"threshold": 25.0}, {"config_id": 1, "nope": 2}):
            with pytest.raises(WorkstationError) as e:
                A.create_plan(p, "spatial", Goal("rate", 0.1), **kw)
            assert "the spatial audit source takes the options config_id" in str(e.value)
        with pytest.raises(WorkstationError, match="no audit source for method"):
            A.create_plan(p, "nope", Goal("rate", 0.1))
        plan = A.create_plan(p, "spatial", Goal("rate", 0.1))
        for k in ("3", 2.5, None, True):
            with pytest.raises(WorkstationError, match="whole number"):
                A.next_targets(p, plan, k)  # type: ignore[arg-type]


def test_a_plan_with_a_second_judge_reopens_only_with_the_same_judge(project: Path) -> None:
    from workstation.evaluation.plan import SecondJudge

    def judge(scale: float) -> Callable[[Any], SecondJudge]:
        return lambda table: SecondJudge("geneval-position", np.linspace(0.0, 1.0, len(table)) * scale)

    with Project.open(project) as p:
        plan = A.create_plan(p, "spatial", Goal("rate", 0.05), seed=2, second_judge=judge(1.0))
        A.next_targets(p, plan, 3)
        pid, strata = int(plan.plan_id), plan.stratum.copy()  # type: ignore[arg-type]
        assert p.plans.get(pid)["design"]["second_judge"]["name"] == "geneval-position"
    with Project.open(project) as p:
        again = A.open_plan(p, pid, second_judge=judge(1.0))
        assert (again.stratum == strata).all() and len(again.draws) == len(plan.draws)
        assert again.status().second_judge.startswith("geneval-position: judged all 16 images")
        with pytest.raises(PlanStale, match="made with the second judge 'geneval-position': open it with"):
            A.open_plan(p, pid)
        with pytest.raises(PlanStale, match="second judge 'geneval-position' changed since the plan was made"):
            A.open_plan(p, pid, second_judge=judge(0.5))
