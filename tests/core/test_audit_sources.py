"""An audit plan on every method's own data (`workstation.methods.audit_sources`): the plan is
made and stored, its targets are labelled the way the window labels them (label events in the
log, in the plan's audit set), its estimate follows, the goal is reached, and closing and
reopening the project keeps the plan, its queue and its estimate."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workstation.evaluation.plan import Goal, PlanStale
from workstation.methods import audit_sources as A
from workstation.methods import get_method
from workstation.store import Project
from workstation.types import WorkstationError


def _run(project: Any, plan: Any, label: Any, batch: int = 4, cap: int = 2000) -> int:
    """Label the plan's targets until its goal is reached; returns how many units were labelled."""
    done = 0
    while not plan.status().reached and done < cap:
        targets = A.next_targets(project, plan, batch)
        assert targets, "a plan short of its goal always has a target"
        for t in targets:
            label(t)
            done += 1
        A.refresh(project, plan)
    return done


def _reopen_and_check(folder: Path, plan: Any) -> None:
    st = plan.status()
    with Project.open(folder) as p:
        listed = p.plans.all()
        assert [x["plan_id"] for x in listed] == [plan.plan_id]
        again = A.open_plan(p, plan.plan_id)
        st2 = again.status()
        assert st2.estimate.value == pytest.approx(st.estimate.value)
        assert st2.estimate.half_width == pytest.approx(st.estimate.half_width)
        assert st2.labels == st.labels and st2.reached == st.reached
        assert [(str(again.unit_ids[u]), r) for u, r in again.draws] == [(str(plan.unit_ids[u]), r) for u, r in plan.draws]
        items = p.audit.items(listed[0]["audit_set_id"])
        n_targets = sum(len(plan.target_of(u, r).targets) for u, r in plan.draws)
        assert len(items) == n_targets
        assert p.audit.sets()[0]["blind"] is True


# ---- spatial: the published run, an annotator simulated from its verdicts ----------------------------


def test_spatial_plan_for_the_checkers_pass_precision(tmp_path: Path, sbuc_parsed: Any) -> None:
    from workstation.methods.spatial.store import SpatialStore

    folder = tmp_path / "sbuc"
    ds = sbuc_parsed.dataset
    rng = np.random.default_rng(11)
    rec = sbuc_parsed.recorded.verdict.astype(int)
    truth = np.where(rng.random(ds.n) < 0.12, rng.integers(0, 3, ds.n), rec)  # the annotator's labels
    names = ("PASS", "FAIL", "UNDECIDABLE")
    row = {s: i for i, s in enumerate(ds.samples.sample_id.tolist())}
    with Project.create(folder) as p:
        p.samples.add_run(sbuc_parsed.run_id, method="sd15_boxdiff")
        p.samples.add_dataset(ds)
        SpatialStore(p).save_config(sbuc_parsed.config)
        plan = A.create_plan(p, "spatial", Goal("precision", 0.05), name="PASS precision", seed=3)
        assert plan.table.source["config_id"] == 1 and plan.n_items == int((rec == 0).sum())

        def label(t: Any) -> None:
            for sid in t.targets:
                SpatialStore(p).add_label(sid, "alice", names[truth[row[sid]]], audit_set_id=plan.audit_set_id,
                                          source="recheck" if t.recheck else "ui")

        labelled = _run(p, plan, label)
        st = plan.status()
        in_scope = rec == 0
        true_precision = float((truth[in_scope] == 0).mean())
        assert st.reached and st.estimate.half_width <= 0.05
        assert st.estimate.low <= true_precision <= st.estimate.high
        assert labelled < plan.n_items  # fewer labels than the checker's passes
        drawn = [int(row[str(plan.unit_ids[u])]) for u, _r in plan.draws]
        assert (rec[drawn] == 0).all()  # it labels only what the goal is about
        assert "PASS precision" in st.goal_text and "the checker" in st.goal_text
    _reopen_and_check(folder, plan)


def test_spatial_plan_of_whole_prompts_for_the_true_pass_rate(tmp_path: Path, sbuc_parsed: Any) -> None:
    from workstation.methods.spatial.store import SpatialStore

    folder = tmp_path / "sbuc_prompts"
    ds = sbuc_parsed.dataset
    rec = sbuc_parsed.recorded.verdict.astype(int)
    row = {s: i for i, s in enumerate(ds.samples.sample_id.tolist())}
    with Project.create(folder) as p:
        p.samples.add_run(sbuc_parsed.run_id, method="sd15_boxdiff")
        p.samples.add_dataset(ds)
        SpatialStore(p).save_config(sbuc_parsed.config)
        plan = A.create_plan(p, "spatial", Goal("rate", 0.08, 0.95, "cluster"), seed=1)
        t = A.next_targets(p, plan, 1)[0]
        assert len(t.targets) == 4 and len({ds.samples.prompt_id[row[s]] for s in t.targets}) == 1

        def label(t: Any) -> None:
            for sid in t.targets:
                SpatialStore(p).add_label(sid, "bob", ("PASS", "FAIL", "UNDECIDABLE")[rec[row[sid]]])

        _run(p, plan, label, batch=2)
        st = plan.status()
        assert st.reached and st.labels % 4 == 0 and st.units_labelled * 4 == st.labels
        assert st.estimate.low <= float((rec == 0).mean()) <= st.estimate.high
    _reopen_and_check(folder, plan)


# ---- MetaLogic: the demo's image pairs ----------------------------------------------------------------


def test_metalogic_plan_for_the_true_misalignment_rate(tmp_path: Path) -> None:
    from workstation.methods.metalogic.results import LABEL_SCHEME

    folder = tmp_path / "metalogic"
    with Project.create(folder) as p:
        get_method("metalogic").build_demo(p, small=True, workers=0)
        table = A.audit_table(p, "metalogic")
        rng = np.random.default_rng(2)
        truth = {pid: ("MISALIGNED" if (o == 1) != (rng.random() < 0.1) and o != -1 else
                       "ALIGNED" if o != -1 else ("MISALIGNED", "ALIGNED", "UNDECIDABLE")[int(rng.integers(3))])
                 for pid, o in zip(table.item_id.tolist(), table.outcome.tolist())}
        plan = A.create_plan(p, "metalogic", Goal("rate", 0.1), seed=0)
        assert "misalignment" in plan.status().goal_text

        def label(t: Any) -> None:
            for pid in t.targets:
                p.labels.add(LABEL_SCHEME.task, "pair", pid, "carol", truth[pid], audit_set_id=plan.audit_set_id)

        _run(p, plan, label)
        st = plan.status()
        true_rate = np.mean([v == "MISALIGNED" for v in truth.values()])
        assert st.reached and st.estimate.low <= true_rate <= st.estimate.high
        if st.exhausted:  # 20 pairs: labelling them all gives the rate exactly
            assert st.estimate.value == pytest.approx(true_rate) and st.estimate.half_width == 0.0
    _reopen_and_check(folder, plan)
    # the report: each estimate with its interval, the estimator and the labels it used
    from workstation.cli import main

    out = folder.parent / "report"
    assert main(["report", "--project", str(folder), "--out", str(out)]) == 0
    meta = json.loads((out / "report_meta.json").read_text(encoding="utf-8"))
    sec = next(x for x in meta["sections"] if x["method"] == "audit_plans")
    rows = sec["tables"]["estimates"]
    assert [r["estimator"] for r in rows] == [st.estimate.title] + [e.title for e in st.alternatives]
    first = rows[0]
    assert first["estimate"] == pytest.approx(st.estimate.value) and first["labels"] == st.labels
    assert (first["low"], first["high"]) == (pytest.approx(st.estimate.low), pytest.approx(st.estimate.high))
    assert first["goal"] == st.goal_text and first["assumes"] and first["reached"] is True
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "Audit plans" in page and f"{100 * st.estimate.value:.1f} %" in page
    with open(out / "audit_plans" / "estimates.csv", encoding="utf-8") as fh:
        assert len(list(csv.DictReader(fh))) == len(rows)


# ---- ProtoBias: a toy metric's preferences against the demo's ratings -------------------------------


def test_protobias_plan_for_a_metrics_agreement_with_human_ratings(tmp_path: Path) -> None:
    from workstation.methods.protobias.labels import FIDELITY_SCHEME
    from workstation.methods.protobias.project_demo import add_demo

    folder = tmp_path / "protobias"
    with Project.create(folder) as p:
        add_demo(p, small=True)
        table = A.audit_table(p, "protobias", metric="toy_proto@p=0.7")
        assert table.source == {"metric": "toy_proto@p=0.7"} and all(len(t) == 2 for t in table.targets)
        with pytest.raises(WorkstationError, match="no metric"):
            A.audit_table(p, "protobias", metric="nope")
        # a rater who sees the correct image as better rates every image the demo's raters left
        rated = {e.target_id for e in p.labels.latest(FIDELITY_SCHEME.task) if e.value}
        for corr, adv in table.targets.tolist():
            for sid, v in ((corr, "4"), (adv, "2")):
                if sid not in rated:
                    p.labels.add(FIDELITY_SCHEME.task, "image", sid, "dana", v)
        plan = A.create_plan(p, "protobias", Goal("agreement", 0.2), seed=4, metric="toy_proto@p=0.7")
        assert "toy_proto@p=0.7's agreement" in plan.status().goal_text
        _run(p, plan, lambda t: None)  # every triplet is rated: each drawn one is labelled at once
        st = plan.status()
        now = A.audit_table(p, "protobias", metric="toy_proto@p=0.7")
        decided = now.outcome != -1
        assert (now.human >= 0).all()
        true_agree = float((now.human[decided] == now.outcome[decided]).mean())
        assert st.reached and st.estimate.low <= true_agree <= st.estimate.high
        assert st.labels == st.units_labelled == len([d for d in plan.draws if not d[1]]) and st.labels >= 2
    _reopen_and_check(folder, plan)


# ---- DyEval: pre-marks against the demo oracle's PASS / FAIL -----------------------------------------


def test_dyeval_plan_for_the_true_pass_rate_by_whole_prompts(tmp_path: Path) -> None:
    from workstation.methods.dyeval.config import DyEvalConfig
    from workstation.methods.dyeval.demo import DEMO_SCORER, DEMO_THRESHOLD
    from workstation.methods.dyeval.runner import DyEvalRunner
    from workstation.methods.dyeval.store import TreeStore

    with Project.create(tmp_path / "plain") as p:  # a tree without a threshold has no pre-marks to plan on
        DyEvalRunner.create(p, DyEvalConfig(n_i=1, n_x=1), topics=["Animals"])
        with pytest.raises(WorkstationError, match="pre-mark threshold"):
            A.audit_table(p, "dyeval")
    folder = tmp_path / "dyeval"
    with Project.create(folder) as p:
        get_method("dyeval").build_demo(p, small=True)
        tree = TreeStore(p).load(TreeStore(p).resolve(None), persist=False)
        ids = sorted(tree.images)
        labels = {e.target_id: e.value for e in p.labels.latest("dyeval.image")}
        # the demo pre-marks its images with its own object finder, named as such, at its threshold
        table = A.audit_table(p, "dyeval")
        assert table.source["scorer"] == DEMO_SCORER and table.source["threshold"] == DEMO_THRESHOLD
        assert DEMO_SCORER in table.outcome_title and "CLIPScore" not in table.outcome_title
        scored = np.array([tree.images[i].clip_score is not None for i in table.item_id.tolist()])
        assert scored.sum() > len(ids) // 2 and ((table.outcome >= 0) == scored).all()
        plan = A.create_plan(p, "dyeval", Goal("rate", 0.15, 0.9, "cluster"), seed=0, threshold=25.0)
        _run(p, plan, lambda t: None)  # the demo oracle judged every image already
        st = plan.status()
        true_rate = np.mean([labels[i] == "PASS" for i in ids])
        assert st.reached and st.estimate.low <= true_rate <= st.estimate.high
        assert st.estimate.confidence == 0.9
    _reopen_and_check(folder, plan)


def test_every_method_has_an_audit_source() -> None:
    from workstation.methods import method_names

    assert sorted(A.source_names()) == sorted(method_names())


# ---- a fifth method: its audit source is its method object's own ------------------------------------


def test_a_method_of_its_own_folder_is_planned_for_through_its_method_object(tmp_path: Path) -> None:
    """The Lamp method of the tests names its audit source on its method object only: once it
    is registered, plans are made, labelled, estimated and reopened on its table; taken out of
    the registry, it has no source (and the four methods of the application keep theirs)."""
    from tests import toy_method
    from tests.toy_method.core import LABEL_SCHEME

    four = ["dyeval", "metalogic", "protobias", "spatial"]
    assert A.source_names() == four and "lamp" not in A.SOURCES
    folder = tmp_path / "lamp"
    with toy_method.registered(views=False):
        assert A.source_names() == sorted(four + ["lamp"])
        assert A.title_of("lamp") == "Lamp: the threshold's outcomes"
        with Project.create(folder) as p:
            get_method("lamp").build_demo(p, small=True)
            assert "lamp" in A.available(p)
            table = A.audit_table(p, "lamp", threshold=40.0)
            assert table.source == {"threshold": 40.0} and len(table) == 12
            with pytest.raises(WorkstationError, match="takes the options threshold"):
                A.audit_table(p, "lamp", metric="x")
            level = {sid: float(p.samples.load_dataset(method="lamp").prompts.attrs[i]["level"])
                     for i, sid in enumerate(get_method("lamp").load(p).ids.tolist())}
            plan = A.create_plan(p, "lamp", Goal("rate", 0.3), seed=2)

            def label(t: Any) -> None:  # a human who sees a lamp lit from level 50 up
                for sid in t.targets:
                    p.labels.add(LABEL_SCHEME.task, "sample", sid, "dana", "LIT" if level[sid] >= 50 else "DARK",
                                 audit_set_id=plan.audit_set_id)

            assert _run(p, plan, label) >= 2
            st = plan.status()
            assert st.reached and st.labels >= 2
        _reopen_and_check(folder, plan)
    assert A.source_names() == four
    with Project.open(folder) as p, pytest.raises(PlanStale, match="its method 'lamp' has no audit source"):
        A.open_plan(p, plan.plan_id)
