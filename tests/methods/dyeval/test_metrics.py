"""APR / AFR / #Bugs on a small hand-made tree, against values computed by hand (Eqs. 1, 7-9)."""

from __future__ import annotations

import pytest

from workstation.methods.dyeval import ACCEPTED, DyEvalConfig, TestTree, outcome, parse_text, summarize


def _judge(tree: TestTree, owner: str, labels: str, start: int) -> int:
    """Attach one image per letter (P / F / - for not judged yet) and label it."""
    for j, v in enumerate(labels):
        iid = f"{owner}-{start + j}"
        tree.add_image(owner, iid, f"img/{iid}.png", seed=j)
        if v != "-":
            tree.record_label(iid, "PASS" if v == "P" else "FAIL", "ann")
    return start + len(labels)


def build() -> tuple[TestTree, dict[str, str]]:
    t = TestTree.new(DyEvalConfig(n_i=3, n_x=4, rho=0.75, premark_threshold=20.0))
    ids: dict[str, str] = {}
    ids["n1"] = t.add_root("Material objects", "Object")
    ids["p1"] = t.add_prompt(ids["n1"], "A red apple on a table.", parse_text("A red apple on a table."))
    ids["p2"] = t.add_prompt(ids["n1"], "A silk kimono.", parse_text("A silk kimono."))
    ids["p3"] = t.add_prompt(ids["n1"], "A tiny blue boat.", parse_text("A tiny blue boat."))
    t.confirm_prompts(ids["n1"])
    _judge(t, ids["p1"], "PPPP", 0)
    _judge(t, ids["p2"], "PFFF", 0)
    _judge(t, ids["p3"], "PP--", 0)
    # latest label wins: p1's last image is relabelled FAIL
    t.record_label(f"{ids['p1']}-3", "FAIL", "ann")
    (prop,) = t.add_proposals(ids["n1"], ["Clothing"])
    ids["n2"] = t.decide_proposal(prop, ACCEPTED) or ""
    ids["q1"] = t.add_prompt(ids["n2"], "A kimono.", parse_text("A kimono."))
    ids["q2"] = t.add_prompt(ids["n2"], "A woolen hat.", parse_text("A woolen hat."))
    t.confirm_prompts(ids["n2"])
    _judge(t, ids["q1"], "FFFF", 0)
    _judge(t, ids["q2"], "PPPP", 0)
    return t, ids


def test_hand_computed_apr_afr_bugs() -> None:
    t, ids = build()
    # Node n1 (ρ = 0.75, n_x = 4):
    #   p1: P P P F (the F replaced an earlier P)  → 3/4 = 0.75, complete, not < 0.75 → not a bug
    #   p2: P F F F                                → 1/4 = 0.25 < 0.75              → bug
    #   p3: P P - -   (two images not judged)      → 2/2 judged; incomplete          → not decided
    #   tests = 4 + 4 + 2 = 10 judged pairs, passes = 3 + 1 + 2 = 6
    #   APR = 6/10 = 0.6, AFR = 0.4, #Bugs = 1
    o1, o2, o3 = (t.outcome(ids[p]) for p in ("p1", "p2", "p3"))
    assert (o1.pass_rate, o1.complete, o1.is_bug, o1.verdict) == (0.75, True, False, "PASS")
    assert (o2.pass_rate, o2.complete, o2.is_bug, o2.verdict) == (0.25, True, True, "FAIL")
    assert (o3.pass_rate, o3.complete, o3.is_bug, o3.verdict) == (1.0, False, False, None)
    s1 = t.node_summary(ids["n1"])
    assert (s1.tests, s1.passes, s1.fails, s1.bugs, s1.prompts, s1.complete_prompts) == (10, 6, 4, 1, 3, 2)
    assert s1.apr == pytest.approx(0.6) and s1.afr == pytest.approx(0.4)
    # Node n2: q1 F F F F → 0/4 bug; q2 P P P P → 4/4. tests 8, passes 4, APR 0.5, #Bugs 1
    s2 = t.node_summary(ids["n2"])
    assert (s2.tests, s2.passes, s2.bugs) == (8, 4, 1) and s2.apr == pytest.approx(0.5)
    # Tree: tests 10 + 8 = 18, passes 6 + 4 = 10 → APR 10/18 = 0.5556, AFR 8/18 = 0.4444, #Bugs 2
    st = t.tree_summary()
    assert (st.tests, st.passes, st.bugs) == (18, 10, 2)
    assert st.apr == pytest.approx(10 / 18) and st.afr == pytest.approx(8 / 18)
    assert t.subtree_summary(ids["n1"]) == st
    # Fig. 3's accumulated #Bugs in breadth-first order: n1 (1), then n2 (1 more)
    assert t.accumulated_bugs(ids["n1"]) == [1, 2]
    assert t.bugs(ids["n1"]) == [ids["p2"]]


def test_premarks_are_kept_apart_and_count_only_when_configured() -> None:
    t, ids = build()
    # p3's third image gets CLIPScore 12 < 20: pre-marked FAIL, no human label
    assert t.premark(f"{ids['p3']}-2", 12.0) is True
    assert t.premark(f"{ids['p3']}-3", 31.5) is False
    img = t.images[f"{ids['p3']}-2"]
    assert (img.label, img.premark_fail, img.clip_score) == (None, True, 12.0)
    # premark_counts off (default): nothing changes — n1 still 10 tests, 6 passes
    s = t.node_summary(ids["n1"])
    assert (s.tests, s.passes) == (10, 6)
    # premark_counts on: the pre-marked image counts as FAIL: 11 tests, 6 passes, APR 6/11
    t2 = TestTree.from_dict({**t.to_dict(), "config": {**t.config.to_dict(), "premark_counts": True}})
    s = t2.node_summary(ids["n1"])
    assert (s.tests, s.passes) == (11, 6) and s.apr == pytest.approx(6 / 11)
    # a human label overrides the pre-mark (and both are kept)
    t2.record_label(f"{ids['p3']}-2", "PASS", "ann")
    s = t2.node_summary(ids["n1"])
    assert (s.tests, s.passes) == (11, 7)
    assert t2.images[f"{ids['p3']}-2"].premark_fail is True


def test_failure_location_steps_do_not_count() -> None:
    t, ids = build()
    before = (t.node_summary(ids["n2"]), t.tree_summary())
    lid = t.start_location(ids["n2"], ids["q1"])
    # "A kimono." is one element: its own trigger, no step. Use p2 ("A silk kimono.", 2 elements).
    assert t.locations[lid].machine.done
    lid2 = t.start_location(ids["n1"], ids["p2"])
    (step,) = t.locations[lid2].machine.pending()
    assert step.text == "A kimono."
    _judge(t, t.locations[lid2].owner(step.step_id), "FFFF", 0)
    assert t.locations[lid2].machine.done
    assert (t.node_summary(ids["n2"]), t.tree_summary()) == before


def test_summaries_of_plain_label_lists() -> None:
    a = outcome("x", ["PASS", "FAIL", None], expected=3, rho=0.75)
    b = outcome("y", ["FAIL", "FAIL", "FAIL"], expected=3, rho=0.75)
    s = summarize([a, b])
    # a: 2 judged, 1 pass, incomplete; b: 3 judged, 0 pass, bug → tests 5, passes 1, APR 0.2, bugs 1
    assert (s.tests, s.passes, s.bugs) == (5, 1, 1) and s.apr == pytest.approx(0.2)
    empty = summarize([])
    assert (empty.apr, empty.afr) == (None, None)


def test_apr_carries_an_interval_that_resamples_prompts() -> None:
    import math

    from workstation.evaluation.intervals import wilson_interval
    from workstation.methods.dyeval.metrics import merge

    # 12 prompts of 4 images: a prompt's images agree (all pass or all fail)
    outs = [outcome(f"p{k}", ["PASS"] * 4 if k % 3 else ["FAIL"] * 4, expected=4, rho=0.5) for k in range(12)]
    s = summarize(outs)
    a = s.apr_estimate()
    assert (a.value, a.n, a.units) == (pytest.approx(8 / 12), 48, 12)
    naive = wilson_interval(32, 48)
    assert a.hi - a.lo > 1.4 * (naive[1] - naive[0])  # 12 prompts, not 48 independent images
    f = s.afr_estimate()
    assert (f.value, f.lo, f.hi) == pytest.approx((1 - a.value, 1 - a.hi, 1 - a.lo))
    d = s.to_dict()
    assert (d["apr_lo"], d["apr_hi"], d["afr_lo"]) == pytest.approx((a.lo, a.hi, 1 - a.hi)) and d["note"] == ""
    # one judged image per prompt: independent items, Wilson
    one = summarize([outcome(f"q{k}", ["PASS" if k < 3 else "FAIL"], expected=1, rho=0.5) for k in range(5)])
    e = one.apr_estimate()
    assert (e.lo, e.hi) == pytest.approx(wilson_interval(3, 5)) and one.to_dict()["note"] == "fewer than 10 judged images"
    # nothing judged: no APR, no interval
    none = summarize([outcome("z", [None, None], expected=2, rho=0.5)]).to_dict()
    assert none["apr"] is None and none["apr_lo"] is None and none["note"] == ""
    # a tree's summary is its nodes' prompts together
    both = merge([s, one])
    assert (both.tests, both.passes, both.apr_estimate().units) == (53, 35, 17)
    assert not math.isnan(both.apr_estimate().lo)


def test_outcomes_and_summaries_as_dicts_value_by_value() -> None:
    from workstation.evaluation.intervals import wilson_interval
    from workstation.methods.dyeval.metrics import Summary, merge

    o = outcome("p1", ["PASS", "FAIL", None, "PASS"], expected=4, rho=0.75)
    assert o.to_dict() == {"owner": "p1", "n_images": 4, "judged": 3, "passes": 2, "fails": 1,
                           "pass_rate": pytest.approx(2 / 3), "complete": False, "is_bug": False, "verdict": None}
    done = outcome("p2", ["PASS", "FAIL", "FAIL", "FAIL"], expected=4, rho=0.75)
    assert done.to_dict()["verdict"] == "FAIL" and done.is_bug and done.complete
    ok = outcome("p3", ["PASS"] * 3 + ["FAIL"], expected=4, rho=0.75)
    assert (ok.verdict, ok.is_bug) == ("PASS", False)  # 0.75 is not below ρ
    short = outcome("p4", ["PASS"] * 3, expected=4, rho=0.75)
    assert short.verdict is None and not short.complete  # fewer images than asked for
    assert outcome("p5", [None], expected=1, rho=0.5).pass_rate is None
    # a summary's dict: counts, rates and the bounds of APR and AFR
    s = summarize([o, done, ok])
    d = s.to_dict(n_boot=300, seed=2)
    a = s.apr_estimate(n_boot=300, seed=2)
    assert {k: d[k] for k in ("prompts", "complete_prompts", "tests", "passes", "fails", "bugs")} == {
        "prompts": 3, "complete_prompts": 2, "tests": 11, "passes": 6, "fails": 5, "bugs": 1}
    assert (d["apr"], d["afr"]) == (pytest.approx(6 / 11), pytest.approx(5 / 11))
    assert (d["apr_lo"], d["apr_hi"], d["afr_lo"], d["afr_hi"]) == (a.lo, a.hi, 1 - a.hi, 1 - a.lo)
    assert a.value == pytest.approx(6 / 11) and (a.n, a.units) == (11, 3)
    assert d["note"] == "fewer than 10 prompts"
    # one image per prompt: Wilson; and the estimate counts each prompt's passes, not its position
    one = summarize([outcome(f"q{k}", ["FAIL" if k % 3 else "PASS"], 1, 0.5) for k in range(12)])
    e = one.apr_estimate()
    assert (e.value, (e.lo, e.hi)) == (pytest.approx(4 / 12), pytest.approx(wilson_interval(4, 12)))
    assert one.to_dict()["note"] == ""
    assert summarize([]).to_dict()["apr_lo"] is None and summarize([]).to_dict()["note"] == ""
    assert summarize([o]).to_dict(n_boot=0)["apr_lo"] is None
    # inconsistent per-prompt counts are refused, not turned into a number
    for bad in (Summary(1, 1, 4, 2, 0, (2,), (3,)), Summary(1, 1, 4, 2, 0, (1,), (4,)),
                Summary(2, 1, 4, 2, 0, (2,), (4, 0))):
        with pytest.raises(ValueError, match="^the per-prompt counts do not add up to the summary's$"):
            bad.apr_estimate()
    # AFR mirrors APR: the same items, units, method and level; the seed reaches the resamples
    f = s.afr_estimate(n_boot=300, seed=2)
    assert (f.n, f.units, f.method, f.level) == (a.n, a.units, a.method, a.level)
    other = s.afr_estimate(n_boot=300, seed=9)
    assert (other.lo, other.hi) != (f.lo, f.hi) and other.value == f.value
    assert s.apr_estimate(n_boot=300, seed=9).lo == pytest.approx(1 - other.hi, abs=1e-12)  # up to rounding
    # the keys are there with None when there is no interval
    assert summarize([]).to_dict() == {"prompts": 0, "complete_prompts": 0, "tests": 0, "passes": 0, "fails": 0,
                                       "bugs": 0, "apr": None, "afr": None, "apr_lo": None, "apr_hi": None,
                                       "afr_lo": None, "afr_hi": None, "note": ""}
    m = merge([s, one])
    assert (m.prompts, m.complete_prompts, m.tests, m.passes, m.bugs) == (15, 14, 23, 10, 9)
    assert m.prompt_passes == s.prompt_passes + one.prompt_passes
    assert m.prompt_judged == s.prompt_judged + one.prompt_judged
