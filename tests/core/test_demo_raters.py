"""The demo's multi-rater audit: three simulated raters with their stated error rates and speeds on a
blind k = 3 set with gold items from the known truth; the speeder fails the qualification and is
left out of the estimates; a few items are adjudicated to the known truth."""

from __future__ import annotations

from pathlib import Path
from statistics import median
from typing import Any

import pytest

from workstation.evaluation.draws import draws_of
from workstation.evaluation.raters import adjudicated, gold_accuracy, gold_answers, rater_progress, unqualified
from workstation.evaluation.selection import load_selection, resolve_project
from workstation.methods.spatial import demo_raters
from workstation.methods.spatial.demo import add_demo
from workstation.methods.spatial.method import LABELS
from workstation.methods.spatial.suite import spatial_suite
from workstation.store import Project

TASK = LABELS.task


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("raters_demo") / "p"
    with Project.create(folder) as p:
        add_demo(p, n_seeds=4, prompts=spatial_suite(20), size=128, workers=0)
        summary = demo_raters.add_rater_audit(p, LABELS)
    with Project.open(folder, read_only=True) as p:
        yield p, summary


def test_three_raters_label_a_blind_overlap_set_with_gold(demo: Any) -> None:
    p, s = demo
    aid = s["audit_set_id"]
    (info,) = [a for a in p.audit.sets(TASK) if a["audit_set_id"] == aid]
    assert info["blind"] and info["params"]["k"] == 3 and info["params"]["raters"] == ["r1", "r2", "r3"]
    gold = {t for _a, t in p.audit.gold_items(aid)}
    assert len(gold) == s["gold"] == 24
    answers = gold_answers(p, TASK)
    truth = {k: v["expected"] for k, v in p.samples.truth().items()}
    assert all(answers[t] == truth[t] for t in gold)
    # every rater labelled their whole queue
    for r in rater_progress(p, aid):
        assert r["labelled"] == r["assigned"] > 100
    # the stated error rates, on the gold and overall
    acc = gold_accuracy(p, TASK)
    assert {r: (a.correct, a.n) for r, a in acc.items()} == {"r1": (23, 24), "r2": (22, 24), "r3": (16, 24)}
    first = [t for t, rc in p.audit.items(aid) if not rc]
    for rater, rate, _s in demo_raters.RATERS:
        mine = {t: v for t, a, rc, v in p.labels.pass_latest(TASK, aid) if a == rater and not rc}
        wrong = sum(mine[t] != truth[t] for t in first)
        assert abs(wrong / len(first) - rate) < 0.02, rater
    # the speeder is fast: their median time between labels far below the others'
    def gaps(rater: str) -> float:
        times = sorted(e.created_at for e in p.labels.events(task=TASK) if e.annotator == rater)
        return median((b - a).total_seconds() for a, b in zip(times, times[1:]))
    assert gaps("r3") < 5 < 15 < gaps("r2") < gaps("r1")


def test_the_speeder_is_left_out_and_the_adjudications_are_the_truth(demo: Any) -> None:
    p, s = demo
    assert unqualified(p, TASK) == {"r3": "gold 16/24 < 90 %"} == s["left_out"]
    truth = {k: v["expected"] for k, v in p.samples.truth().items()}
    adj = adjudicated(p, TASK)
    assert len(adj) == demo_raters.N_ADJUDICATED and all(v == truth[t] for t, (v, _n, who) in adj.items())
    assert {who for _v, _n, who in adj.values()} == {"lead"}
    res = resolve_project(p, TASK)  # the selection the demo keeps for the spatial method
    sel = load_selection(p, TASK)
    assert sel.rule == "adjudicated" and sel.sets == (s["audit_set_id"],) and not sel.rechecks
    assert res.left_out == (("r3", "gold 16/24 < 90 %"),) and res.n_adjudicated == demo_raters.N_ADJUDICATED
    assert "r3 left out: gold 16/24 < 90 %" in res.describe() and "r3" not in res.annotators
    # the estimate's labels are the drawn items only, with their inclusion probabilities
    d = draws_of(p, TASK)[s["audit_set_id"]]
    assert not set(res.target_ids.tolist()) & d.gold and res.known_draw
    decided = {t: v for t, v in res.as_dict().items()}
    right = sum(v == truth[t] for t, v in decided.items())
    assert right / len(decided) > 0.9  # r1 and r2 agreeing, or the lead's decision: mostly the truth


def test_the_adjudicated_labels_reach_the_spatial_figures_and_the_speeder_does_not(demo: Any) -> None:
    """The spatial method's human column (its confusion, risk–coverage and calibration use it)
    under the demo's selection: the adjudicated items hold the lead's label, an item only the
    speeder would decide is not decided by them."""
    from workstation.evaluation.selection import LabelSelection
    from workstation.methods.spatial.store import SpatialStore
    from workstation.methods.spatial.types import VERDICT_CODE

    p, s = demo
    ds = p.samples.load_dataset(method="spatial")
    idx = ds.sample_index()
    hs = SpatialStore(p).human_selected(ds)
    for t, (v, _n, _who) in adjudicated(p, TASK).items():
        assert hs.codes[idx[t]] == VERDICT_CODE[v]
    # without the adjudications (the majority of r1 and r2) those items are disputed or another value
    plain = SpatialStore(p).human_selected(ds, LabelSelection(sets=(s["audit_set_id"],), free=False, rechecks=False,
                                                              rule="majority"))
    assert any(plain.codes[idx[t]] != hs.codes[idx[t]] for t in adjudicated(p, TASK))
    # the speeder's labels count in no figure
    assert hs.resolved.left_out and "r3" not in hs.resolved.annotators
