"""Which labels count: provenance of every label, the selection, the consensus rules,
and the design weights of Learn then Test."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workstation.evaluation.audit_sets import AuditPopulation, draw_audit_set
from workstation.evaluation.plan import Goal
from workstation.evaluation.selection import (DISPUTED, LabelSelection, load_selection, resolve, resolve_project,
                                              save_selection)
from workstation.methods.audit_sources import create_plan
from workstation.methods.spatial.audit import STRATA_KEYS, stratum_codes
from workstation.methods.spatial.method import LABELS as SCHEME
from workstation.methods.spatial.sbuc_export import stored_verdicts
from workstation.methods.spatial.store import TASK, SpatialStore
from workstation.store import Project
from workstation.types import WorkstationError


def _population(p: Project) -> tuple[Any, Any, AuditPopulation]:
    ds = p.samples.load_dataset(method="spatial")
    store = SpatialStore(p)
    v = stored_verdicts(p, ds, store.active_config_id())
    strata = {}
    for key in STRATA_KEYS:
        codes, names = stratum_codes(ds, v, (key,))
        strata[key] = (codes, [n[0] for n in names])
    pop = AuditPopulation(ids=ds.samples.sample_id, strata=strata, default_strata=("verdict",),
                          conf=np.asarray(v.conf), noun="samples")
    return ds, v, pop


def _label(p: Project, target: str, who: str, value: str, aid: int | None = None, source: str = "ui") -> None:
    p.labels.add(TASK, "sample", target, who, value, audit_set_id=aid, source=source)


@pytest.fixture
def audited(project: Path) -> Any:
    """Free labelling, a stratified blind audit set, a PASS-precision plan's draws, re-checks and
    two annotators, on the imported fixture."""
    with Project.open(project) as p:
        ds, v, pop = _population(p)
        ids = [str(s) for s in ds.samples.sample_id.tolist()]
        free = ids[:10]
        for s in free:
            _label(p, s, "a1", "PASS")
        aid = draw_audit_set(p, SCHEME, pop, name="blind", size=24, seed=3, recheck_fraction=0.0)
        set_items = [t for t, rc in p.audit.items(aid) if not rc]
        for k, s in enumerate(set_items):
            _label(p, s, "a1", "PASS" if k % 3 else "FAIL", aid)
            _label(p, s, "a2", "PASS" if k % 4 else "FAIL", aid)
        for s in set_items[:3]:
            _label(p, s, "a1", "UNDECIDABLE", aid, source="recheck")
        plan = create_plan(p, "spatial", Goal("precision", 0.2), seed=1, recheck_fraction=0.0)
        now, new = plan.next_targets(8)
        from workstation.evaluation.plan import save_draws

        save_draws(p, plan, new)
        plan_items = [t for e in now for t in e.targets]
        for s in plan_items:
            _label(p, s, "a1", "PASS", plan.audit_set_id)
        yield p, aid, int(plan.audit_set_id), free, set_items, plan_items, ds, v


def test_the_pooled_count_is_every_label_and_a_selection_restricts_it(audited: Any) -> None:
    p, aid, plan_aid, free, set_items, plan_items, ds, _v = audited
    everything = resolve_project(p, TASK, LabelSelection())
    assert len(everything) == len(set(free) | set(set_items) | set(plan_items))
    assert everything.design == "mixed"
    # one audit set, one annotator, first passes: its items and nothing else
    one = resolve_project(p, TASK, LabelSelection(annotators=("a1",), sets=(aid,), free=False, rechecks=False))
    assert sorted(one.target_ids.tolist()) == sorted(set_items)
    assert one.design == "stratified" and one.known_draw
    assert one.describe().startswith(f"labels: audit set #{aid}, a1, first passes, latest label wins — "
                                     f"{len(set_items)} items")
    # re-checks: a later label of the same annotator; counted only when asked for
    with_rc = resolve_project(p, TASK, LabelSelection(annotators=("a1",), sets=(aid,), free=False))
    got = dict(zip(with_rc.target_ids.tolist(), with_rc.values.tolist()))
    assert all(got[s] == "UNDECIDABLE" for s in set_items[:3])
    assert all(v in ("PASS", "FAIL") for v in one.values.tolist())
    # the plan's draws: their own design, their inclusion probabilities recorded
    plan_only = resolve_project(p, TASK, LabelSelection(sets=(plan_aid,), free=False))
    assert sorted(plan_only.target_ids.tolist()) == sorted(set(plan_items))
    assert plan_only.design == "plan" and np.all((plan_only.inclusion > 0) & (plan_only.inclusion <= 1))
    # free labelling only: no draw, so no inclusion probability
    free_only = resolve_project(p, TASK, LabelSelection(sets=(), free=True))
    assert set(free_only.target_ids.tolist()) >= set(free) and free_only.design in ("free", "mixed")
    # the spatial columns follow the selection
    sel = SpatialStore(p).human_selected(ds, LabelSelection(annotators=("a1",), sets=(aid,), free=False,
                                                            rechecks=False))
    assert int((sel.codes >= 0).sum()) == len(set_items)
    assert sel.weights() is not None and len(sel.weights()) == len(set_items)


def test_the_stratified_sets_inclusion_is_its_cells_share(audited: Any) -> None:
    p, aid, *_ = audited
    rows = [r for r in p.audit.draw_items(TASK) if r[0] == aid]
    assert rows and all(r[3] is not None and 0 < r[3] <= 1 for r in rows)
    by_cell: dict[int, list[Any]] = {}
    for r in rows:
        by_cell.setdefault(r[4], []).append(r)
    for cell, rs in by_cell.items():
        assert all(math.isclose(r[3], len(rs) / r[5]) for r in rs), cell
    (s,) = [s for s in p.audit.sets(TASK) if s["audit_set_id"] == aid]
    assert s["design"] in ("stratified", "uniform") and s["population"] > 0


def test_the_selection_is_kept_with_the_project(audited: Any) -> None:
    p, aid, *_ = audited
    sel = LabelSelection(annotators=("a1", "a2"), sets=(aid,), free=False, rule="majority")
    save_selection(p, TASK, sel)
    assert load_selection(p, TASK) == sel
    p.set_setting("label_selection." + TASK, '{"rule": "loudest"}')
    with pytest.raises(WorkstationError, match="label_selection.spatial.verdict.*loudest"):
        load_selection(p, TASK)


def _events(rows: list[tuple[str, str, str | None, int | None, str]]) -> dict[str, Any]:
    return {"event_id": list(range(1, len(rows) + 1)), "target_id": [r[0] for r in rows],
            "annotator": [r[1] for r in rows], "value": [r[2] for r in rows], "rating": [None] * len(rows),
            "audit_set_id": [r[3] for r in rows], "source": [r[4] for r in rows]}


def test_a_later_label_of_another_annotator_is_decided_by_the_rule() -> None:
    """Item 3: a careful label, then a later careless one by someone else."""
    ev = _events([("s1", "careful", "FAIL", None, "ui"), ("s1", "careless", "PASS", None, "ui"),
                  ("s2", "careful", "PASS", None, "ui"), ("s2", "careless", "PASS", None, "ui")])
    def val(rule: str) -> dict[str, Any]:
        r = resolve(ev, LabelSelection(rule=rule))
        return dict(zip(r.target_ids.tolist(), r.values.tolist()))
    assert val("latest") == {"s1": "PASS", "s2": "PASS"}  # the rule of earlier versions, named
    assert val("annotator:careful") == {"s1": "FAIL", "s2": "PASS"}
    assert val("majority") == {"s1": DISPUTED, "s2": "PASS"}
    assert val("unanimous") == {"s1": DISPUTED, "s2": "PASS"}
    r = resolve(ev, LabelSelection(rule="majority"))
    assert r.n_disputed == 1 and r.describe().endswith("— 1 item, 1 disputed")
    # a majority of three decides; an undone label does not stand
    ev3 = _events([("s1", "a", "FAIL", None, "ui"), ("s1", "b", "PASS", None, "ui"), ("s1", "c", "FAIL", None, "ui"),
                   ("s1", "c", None, None, "ui")])
    assert dict(zip(*[x.tolist() for x in (resolve(ev3, LabelSelection(rule="majority")).target_ids,
                                           resolve(ev3, LabelSelection(rule="majority")).values)])) == {"s1": DISPUTED}


def test_an_undo_restore_is_no_label_of_the_set() -> None:
    ev = _events([("s1", "a", "PASS", None, "ui"), ("s1", "a", "FAIL", 4, "ui"), ("s1", "a", "PASS", 4, "undo-restore")])
    assert resolve(ev, LabelSelection()).values.tolist() == ["PASS"]
    assert len(resolve(ev, LabelSelection(sets=(4,), free=False))) == 0


def test_mean_of_ratings() -> None:
    ev = _events([("t", "a", "3", None, "ui"), ("t", "b", "4", None, "ui")])
    assert resolve(ev, LabelSelection(rule="mean")).values.tolist() == [3.5]


def test_bad_selections_are_one_line() -> None:
    with pytest.raises(WorkstationError, match="unknown consensus rule"):
        LabelSelection(rule="loudest")
    with pytest.raises(WorkstationError, match="holds no labels"):
        LabelSelection(sets=(), free=False)
    with pytest.raises(WorkstationError, match="unknown keys"):
        LabelSelection.from_dict({"rule": "latest", "who": 1})


def test_labels_select_shows_and_sets_the_selection(audited: Any, tmp_path: Path, capsys: Any) -> None:
    import json

    from workstation.cli import main

    p, aid, *_rest = audited
    folder = p.folder
    p.close()
    assert main(["labels", "select", "--project", str(folder)]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("spatial.verdict: labels: every audit set and free labelling, every annotator, "
                            "latest label wins — ") and "no sampling guarantee holds" in shown
    out = tmp_path / "sel.json"
    assert main(["labels", "select", "--project", str(folder), "--sets", str(aid), "--no-free", "--annotators", "a1",
                 "--first-passes", "--json", str(out)]) == 0
    got = json.loads(out.read_text())
    assert got["selection"] == {"annotators": ["a1"], "audit_sets": [aid], "free_labelling": False,
                                "rechecks": False, "rule": "latest"}
    assert got["design"] == "stratified" and got["items"] == 24
    assert main(["labels", "select", "--project", str(folder), "--json", str(out)]) == 2  # never replaced unasked
    with Project.open(folder, read_only=True) as q:
        assert load_selection(q, TASK).sets == (aid,)
