"""Audit plans (`workstation.evaluation.plan`): coverage in small simulations with prompt-level
correlation, and the stopping rule's behaviour. The full-size figures are printed by
`tests/benchmarks/bench_audit_plans.py`."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from audit_sim import Population, population  # noqa: E402
from workstation.evaluation.plan import (  # noqa: E402
    AuditPlan,
    AuditTable,
    Goal,
    SecondJudge,
    _quantile_bins,
    make_strata,
    margin_confidence,
)
from workstation.evaluation.ppi import design_estimate, wilson_estimate  # noqa: E402
from workstation.types import WorkstationError  # noqa: E402

SMALL = 100  # prompts × 4 seeds = 400 images


def _label_until_reached(pop: Population, goal: Goal, seed: int, cap: int = 10_000) -> AuditPlan:
    human = np.full(pop.n, -1, np.int8)
    plan = AuditPlan(pop.table(human), goal, seed=seed)
    steps = 0
    while not plan.reached() and steps < cap:
        new = plan.draw(1)
        assert new, "a plan that has not reached its goal always has a unit left to draw"
        for it in new[0].items:
            i = int(it[1:])
            human[i] = pop.human[i]
        plan.update_labels(human)
        steps += 1
    return plan


@pytest.mark.parametrize("unit", ["item", "cluster"])
def test_the_plan_covers_the_true_rate_at_its_stopping_point(unit: str) -> None:
    hits, labels = [], []
    for r in range(120):
        pop = population(1000 + r, n_prompts=SMALL)
        plan = _label_until_reached(pop, Goal("rate", 0.07, 0.95, unit), seed=r)
        e = plan.estimate()
        assert plan.status().reached and e.half_width <= 0.07 + 1e-12
        hits.append(e.low <= pop.truth_rate() <= e.high)
        labels.append(e.labels)
    assert np.mean(hits) >= 0.90, np.mean(hits)
    assert np.mean(labels) < pop.n  # it stopped before labelling everything


def test_the_precision_plan_covers_and_labels_only_the_checkers_passes() -> None:
    hits = []
    for r in range(120):
        pop = population(2000 + r, n_prompts=SMALL)
        plan = _label_until_reached(pop, Goal("precision", 0.05), seed=r)
        drawn = [int(plan.unit_ids[u][1:]) for u, _rc in plan.draws]
        assert (pop.verdict[drawn] == 0).all()
        e = plan.estimate()
        hits.append(e.low <= pop.truth_precision() <= e.high)
    assert np.mean(hits) >= 0.90, np.mean(hits)


def test_whole_prompt_audits_need_prompt_level_intervals() -> None:
    """Labelling every seed of 25 random prompts of 400: Wilson (images independent) under-covers,
    the design over prompts covers."""
    wilson, design = [], []
    big = 400
    for r in range(300):
        pop = population(3000 + r, n_prompts=big)
        rng = np.random.default_rng(r)
        chosen = rng.choice(big, 25, replace=False)
        rows = np.flatnonzero(np.isin(pop.prompt, chosen))
        z = (pop.human == 1).astype(float)
        truth = z.mean()
        w = wilson_estimate(z[rows])
        tot = np.bincount(pop.prompt[rows], weights=z[rows], minlength=big)
        zt = np.where(np.isin(np.arange(big), chosen), tot, np.nan)
        d = design_estimate(np.zeros(big), zt, np.zeros(big, np.int64), pop.n, items_per_unit=np.full(big, 4.0))
        wilson.append(w.low <= truth <= w.high)
        design.append(d.low <= truth <= d.high)
    assert np.mean(design) >= 0.90, np.mean(design)
    assert np.mean(wilson) <= np.mean(design) - 0.06, (np.mean(wilson), np.mean(design))


# ---- the stopping rule ------------------------------------------------------------------------------


def _plan(seed: int = 0, goal: Goal | None = None, **kw: object) -> tuple[Population, AuditPlan, np.ndarray]:
    pop = population(seed, n_prompts=SMALL)
    human = np.full(pop.n, -1, np.int8)
    return pop, AuditPlan(pop.table(human), goal or Goal("rate", 0.05), seed=seed, **kw), human  # type: ignore[arg-type]


def _label(pop: Population, plan: AuditPlan, human: np.ndarray, targets: list) -> None:  # type: ignore[type-arg]
    for t in targets:
        for it in t.items:
            human[int(it[1:])] = pop.human[int(it[1:])]
    plan.update_labels(human)


def test_the_goal_is_not_reached_before_every_stratum_has_its_first_labels() -> None:
    pop, plan, human = _plan(goal=Goal("rate", 0.45))  # a goal so loose any estimate meets it
    st = plan.status()
    assert not st.reached and not st.estimate.defined and "first labels" in st.message
    seen = 0
    while not plan.reached():
        _label(pop, plan, human, plan.draw(1))
        seen += 1
        if seen < 2 * plan.n_strata:
            assert plan.status().strata_started < plan.n_strata and not plan.reached()
    assert 2 * plan.n_strata <= seen <= 2 * plan.n_strata + 10  # the first two of every stratum, then a few
    assert plan.status().strata_started == plan.n_strata


def test_the_goal_is_reached_once_the_half_width_is_small_enough_and_not_before() -> None:
    pop, plan, human = _plan(goal=Goal("rate", 0.06))
    widths = []
    while not plan.reached():
        _label(pop, plan, human, plan.draw(1))
        e = plan.estimate()
        if plan.status().strata_started == plan.n_strata:
            widths.append(e.half_width)
    assert widths[-1] <= 0.06 and all(w > 0.06 for w in widths[:-1])
    st = plan.status()
    assert st.reached and "goal reached" in st.message and st.labels == len(plan.draws)


def test_labelling_everything_gives_the_exact_rate() -> None:
    pop, plan, human = _plan(goal=Goal("rate", 0.001))
    while plan.draw(50):
        pass
    _label(pop, plan, human, [plan.target_of(u) for u, _r in plan.draws])
    st = plan.status()
    assert st.exhausted and st.reached and st.estimate.half_width == 0.0
    assert st.estimate.value == pytest.approx(pop.truth_rate())
    assert plan.draw(1) == []


def test_a_drawn_target_without_a_label_stays_next() -> None:
    pop, plan, human = _plan()
    first, new = plan.next_targets(1)
    assert len(first) == 1 and new == first
    again, new2 = plan.next_targets(1)
    assert again == first and new2 == []  # nothing new is drawn while it waits
    _label(pop, plan, human, first)
    nxt, _ = plan.next_targets(1)
    assert nxt != first


def test_draws_never_repeat_and_follow_the_seed() -> None:
    _pop, a, _h = _plan(seed=5)
    _pop, b, _h = _plan(seed=5)
    ta, tb = a.draw(80), b.draw(80)
    assert [t.unit for t in ta] == [t.unit for t in tb]
    units = [t.unit for t in ta]
    assert len(set(units)) == len(units)
    _pop, c, _h = _plan(seed=6)
    assert [t.unit for t in c.draw(80)] != units


def test_what_the_plan_draws_does_not_depend_on_the_labels() -> None:
    """The allocation follows the automated outcome's confidence, never the labels seen so far
    (steering by them biases a stratum that happened to start with agreeing labels)."""
    pop, a, human_a = _plan(seed=4)
    _pop, b, human_b = _plan(seed=4)
    agreeing = np.ones(pop.n, np.int8)  # every label PASS: no stratum varies
    for _ in range(120):
        ta, tb = a.draw(1), b.draw(1)
        assert [t.unit for t in ta] == [t.unit for t in tb]
        for t in ta:
            for it in t.items:
                human_a[int(it[1:])] = pop.human[int(it[1:])]
                human_b[int(it[1:])] = agreeing[int(it[1:])]
        a.update_labels(human_a)
        b.update_labels(human_b)


def test_a_plan_restored_from_its_draws_is_the_same_plan() -> None:
    pop, plan, human = _plan(seed=2, recheck_fraction=0.1)
    for _ in range(60):
        _label(pop, plan, human, plan.draw(1))
    restored = AuditPlan(pop.table(human), plan.goal, seed=2, recheck_fraction=0.1,
                         draws=[(str(plan.unit_ids[u]), r) for u, r in plan.draws])
    assert restored.estimate() == plan.estimate()
    assert [t.unit for t in restored.draw(5)] == [t.unit for t in plan.draw(5)]


def test_rechecks_come_back_blind_and_add_no_unit() -> None:
    pop, plan, human = _plan(recheck_fraction=0.2)
    entries = []
    for _ in range(40):
        new = plan.draw(1)
        entries += new
        _label(pop, plan, human, [t for t in new if not t.recheck])
    rechecks = [t for t in entries if t.recheck]
    fresh = [t for t in entries if not t.recheck]
    assert len(fresh) == 40 and len(rechecks) == 8  # 20 % of the new units
    assert {t.unit for t in rechecks} <= {t.unit for t in fresh}
    assert plan.status().units_drawn == 40
    for t in rechecks:  # a re-check comes at least three new units after its original
        first = next(i for i, e in enumerate(entries) if e.unit == t.unit and not e.recheck)
        back = next(i for i, e in enumerate(entries) if e is t)
        assert sum(1 for e in entries[first + 1:back] if not e.recheck) >= 3


def test_labels_the_plan_did_not_draw_do_not_count() -> None:
    pop, plan, human = _plan()
    plan.update_labels(np.where(pop.human >= 0, pop.human, -1).astype(np.int8))  # everything labelled elsewhere
    st = plan.status()
    assert st.labels == 0 and not st.estimate.defined


def test_a_label_already_in_the_log_counts_once_its_unit_is_drawn() -> None:
    pop, plan, human = _plan()
    plan.update_labels(pop.human.astype(np.int8))
    t = plan.draw(1)[0]
    assert plan.pending() == [] and plan.status().labels == 1 and t.unit in plan.unit_ids.tolist()


# ---- the pieces ---------------------------------------------------------------------------------------


def test_goals_are_checked() -> None:
    for bad in (Goal("speed", 0.1), Goal("rate", 0.0), Goal("rate", 0.6), Goal("rate", 0.1, 1.0),
                Goal("rate", 0.1, 0.95, "image")):
        with pytest.raises(WorkstationError):
            bad.validate()
    g = Goal("precision", 0.02)
    assert Goal.from_dict(g.to_dict()) == g


def test_nothing_in_scope_is_a_clear_error() -> None:
    t = AuditTable("m", "m.task", ["a", "b"], ["p", "p"], [-1, -1], [0.0, 0.0], [-1, -1],
                   outcome_title="the checker")
    with pytest.raises(WorkstationError, match="nothing to audit"):
        AuditPlan(t, Goal("precision", 0.05))


def test_tables_reject_bad_codes_and_repeated_ids() -> None:
    with pytest.raises(WorkstationError, match="repeat"):
        AuditTable("m", "t", ["a", "a"], ["p", "q"], [1, 0], [0.5, 0.5], [-1, -1])
    with pytest.raises(WorkstationError, match="outcome code"):
        AuditTable("m", "t", ["a", "b"], ["p", "q"], [3, 0], [0.5, 0.5], [-1, -1])
    with pytest.raises(WorkstationError, match="human code"):
        AuditTable("m", "t", ["a", "b"], ["p", "q"], [1, 0], [0.5, 0.5], [5, -1])


def test_strata_keep_equal_confidences_together() -> None:
    conf = np.r_[np.zeros(60), np.linspace(0.1, 1, 60)]
    b = _quantile_bins(conf, 4)
    assert len(set(b[:60].tolist())) == 1 and b.max() >= 1
    s = make_strata(np.r_[np.zeros(120, np.int64), np.ones(15, np.int64)], np.r_[conf, np.ones(15)], 4, 20)
    assert s.max() + 1 == len(np.unique(s))  # numbered without gaps
    assert len(np.unique(s[120:])) == 1  # a group too small to split stays one stratum


def test_margin_confidence_is_a_rank() -> None:
    c = margin_confidence(np.array([3.0, np.nan, 1.0, 2.0, 2.0]))
    assert c.tolist() == [1.0, 0.0, 0.0, 0.5, 0.5]


# ---- a second judge -----------------------------------------------------------------------------------


def _judge(pop: Population, rho: float, seed: int) -> np.ndarray:
    """A simulated second judge whose score correlates about ``rho`` with the human PASS."""
    z = (pop.human == 1).astype(float)
    eps = np.random.default_rng([seed, 77]).normal(size=pop.n)
    lo, hi = 0.0, 30.0
    for _ in range(40):
        a = (lo + hi) / 2
        s = 1 / (1 + np.exp(-(a * (2 * z - 1) + eps)))
        lo, hi = (a, hi) if np.corrcoef(s, z)[0, 1] < rho else (lo, a)
    return s


def _label_with_judge(pop: Population, goal: Goal, seed: int, judge: SecondJudge | None) -> AuditPlan:
    human = np.full(pop.n, -1, np.int8)
    plan = AuditPlan(pop.table(human), goal, seed=seed, second_judge=judge)
    while not plan.reached():
        new = plan.draw(1)
        assert new
        for it in new[0].items:
            human[int(it[1:])] = pop.human[int(it[1:])]
        plan.update_labels(human)
    return plan


def test_a_second_judge_covers_at_the_stopping_point_with_fewer_labels() -> None:
    hits, with_judge, without = [], [], []
    for r in range(60):
        pop = population(3000 + r, n_prompts=SMALL)
        goal = Goal("rate", 0.07, 0.95, "item")
        plan = _label_with_judge(pop, goal, r, SecondJudge("sim", _judge(pop, 0.85, r)))
        e = plan.estimate()
        hits.append(e.low <= pop.truth_rate() <= e.high)
        with_judge.append(e.labels)
        without.append(_label_with_judge(pop, goal, r, None).estimate().labels)
        st = plan.status()
        assert st.effective_labels > st.labels  # it reports what its labels are worth
        assert "as good as" in st.message or st.exhausted
    assert np.mean(hits) >= 0.90, np.mean(hits)
    assert np.mean(with_judge) < 0.85 * np.mean(without), (np.mean(with_judge), np.mean(without))


def test_the_second_judges_score_stratifies_and_items_it_did_not_judge_are_their_own_strata() -> None:
    pop = population(5, n_prompts=SMALL)
    s = _judge(pop, 0.8, 5)
    s[::5] = np.nan  # it did not judge every fifth image
    plan = AuditPlan(pop.table(np.full(pop.n, -1, np.int8)), Goal("rate", 0.05), seed=1,
                     second_judge=SecondJudge("sim", s))
    judged = np.isfinite(s)
    for h in range(plan.n_strata):
        members = plan.stratum == h
        assert judged[members].all() or not judged[members].any()  # never mixed, never a guessed score
        assert len(np.unique(pop.outcome[members])) == 1  # inside one of the checker's outcome groups
    abst = (pop.outcome == -1) & judged
    strata_in_abstentions = np.unique(plan.stratum[abst])
    assert len(strata_in_abstentions) >= 2  # the score splits what the checker left undecided
    means = sorted(float(s[plan.stratum == h].mean()) for h in strata_in_abstentions)
    assert means[-1] - means[0] > 0.3
    assert "judged 320 of the 400 images" in plan.status().second_judge


def test_the_second_judge_is_the_prediction_of_the_prediction_powered_estimate() -> None:
    pop = population(6, n_prompts=SMALL)
    z = (pop.human == 1).astype(float)
    plan = AuditPlan(pop.table(pop.human), Goal("rate", 0.05), seed=0, second_judge=SecondJudge("oracle", z))
    for _ in range(40):
        plan.draw(1)
    st = plan.status()
    ppi = st.alternatives[0]
    assert "oracle as the prediction" in ppi.title
    assert ppi.value == pytest.approx(pop.truth_rate(), abs=1e-9)  # a judge equal to the labels leaves no error
    assert ppi.defined and ppi.low <= pop.truth_rate() <= ppi.high


def test_a_second_judge_is_checked() -> None:
    pop = population(7, n_prompts=10)
    t = pop.table()
    with pytest.raises(WorkstationError, match="scores 3 items, the table holds 40"):
        AuditPlan(t, Goal("rate", 0.1), second_judge=SecondJudge("j", [0.1, 0.2, 0.3]))
    with pytest.raises(WorkstationError, match="scores item 2 1.5"):
        SecondJudge("j", [0.1, 1.5, np.nan])
    with pytest.raises(WorkstationError, match="needs a name"):
        SecondJudge(" ", [0.1])
    j = SecondJudge.aligned("j", t, {"i0": 0.9, "i3": 0.1})
    assert j.judged == 2 and np.isnan(j.scores[1]) and j.scores[3] == 0.1
    assert j.digest != SecondJudge("j", np.where(np.isnan(j.scores), np.nan, j.scores * 0.5)).digest


def test_the_second_judge_benchmarks_uniform_baseline_is_the_design_estimate() -> None:
    from tests.benchmarks.bench_second_judge import uniform_path

    rng = np.random.default_rng(0)
    for p in (0.3, 0.95, 1.0):
        zs = (rng.random(200) < p).astype(float)
        n, lo, hi, hw = uniform_path(zs)
        for m in (1, 2, 3, 10, 50, 199):
            zz = np.full(200, np.nan)
            zz[:m] = zs[:m]
            e = design_estimate(np.zeros(200), zz, np.zeros(200, np.int64), 200)
            assert (e.half_width, e.low, e.high) == pytest.approx((hw[m - 1], lo[m - 1], hi[m - 1]), abs=1e-9)
