"""A disagreement-first audit set: drawn mostly where two judges disagree, every item's inclusion
probability recorded, so that the Horvitz–Thompson estimate over the whole population stays
unbiased."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from workstation.cli import main
from workstation.evaluation.audit_sets import disagreement_indices, draw_provenance
from workstation.types import WorkstationError

# a small population: 0 the judges agree, 1 they disagree, 2 one of them did not decide
STRATA = np.array([0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 0, 1])
Y = np.array([1, 0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 1])  # the truth an auditor's labels would give


def test_the_disagreements_get_their_share_and_each_stratum_its_recorded_probability() -> None:
    picked = disagreement_indices(STRATA, 6, seed=1, share=0.5)
    counts = np.bincount(STRATA[picked], minlength=3)
    assert counts.tolist() == [2, 3, 1]  # 3 of the 6 from the 4 disagreements, the rest 2 : 1 by size 6 : 2
    design, population, draw = draw_provenance(STRATA, picked, conf=None, conf_bins=1)
    assert (design, population) == ("stratified", len(STRATA))
    sizes = np.bincount(STRATA)
    assert draw["inclusion"] == [counts[STRATA[i]] / sizes[STRATA[i]] for i in picked.tolist()]
    # every seed draws the same number from each stratum: the design is fixed, only the items vary
    for seed in range(50):
        assert np.bincount(STRATA[disagreement_indices(STRATA, 6, seed=seed, share=0.5)], minlength=3).tolist() \
            == [2, 3, 1]


def test_the_horvitz_thompson_estimate_is_exactly_unbiased_over_the_recorded_design() -> None:
    picked = disagreement_indices(STRATA, 6, seed=4, share=0.5)
    _design, _population, draw = draw_provenance(STRATA, picked, conf=None, conf_bins=1)
    pi_of_stratum = {int(STRATA[i]): Fraction(p).limit_denominator(100) for i, p in
                     zip(picked.tolist(), draw["inclusion"])}
    n_h = {h: int(pi_of_stratum[h] * int((STRATA == h).sum())) for h in pi_of_stratum}
    # every sample the recorded design can give: n_h of each stratum's items, each set equally likely
    per_stratum = [list(itertools.combinations(np.flatnonzero(STRATA == h).tolist(), n_h[h])) for h in sorted(n_h)]
    estimates = []
    for parts in itertools.product(*per_stratum):
        items = [i for part in parts for i in part]
        estimates.append(sum(Fraction(int(Y[i])) / pi_of_stratum[int(STRATA[i])] for i in items))
    assert sum(estimates) / len(estimates) == Fraction(int(Y.sum()))  # exact: E[HT total] = the total
    # the unweighted share of the labelled items is not: it over-counts the disagreements
    naive = [Fraction(sum(int(Y[i]) for p in parts for i in p), 6) for parts in itertools.product(*per_stratum)]
    assert sum(naive) / len(naive) != Fraction(int(Y.sum()), len(Y))
    # and the draw itself takes each item of a stratum as often as its recorded probability says
    seen = np.zeros(len(STRATA))
    runs = 4000
    for seed in range(runs):
        seen[disagreement_indices(STRATA, 6, seed=seed, share=0.5)] += 1
    pi = np.array([float(pi_of_stratum[int(h)]) for h in STRATA])
    assert np.all(np.abs(seen / runs - pi) <= 4 * np.sqrt(pi * (1 - pi) / runs) + 1e-12)


def test_a_small_disagreement_stratum_is_taken_whole_and_bad_shares_are_refused() -> None:
    picked = disagreement_indices(STRATA, 8, seed=0, share=1.0)
    assert set(np.flatnonzero(STRATA == 1).tolist()) <= set(picked.tolist()) and len(picked) == 8
    assert len(disagreement_indices(STRATA, 100, seed=0)) == len(STRATA)
    with pytest.raises(WorkstationError, match="share"):
        disagreement_indices(STRATA, 4, seed=0, share=1.5)


def test_audit_sample_draws_from_the_disagreements_and_records_each_probability(
        project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from workstation.evaluation.draws import draws_of
    from workstation.evaluation.judges import JudgeRun, disagreement_strata
    from workstation.evaluation.selection import resolve_project
    from workstation.methods import method_judges
    from workstation.store import Project

    with Project.open(project) as p:
        spec = method_judges(p, "spatial")
        checker = next(j.name for j in spec.judges if j.name.startswith("spatial.checker:"))
        run = JudgeRun(p, spec)
        strata, _ = disagreement_strata(run.output(checker), run.output("spatial.geneval"))
        ids = run.targets.ids.tolist()
    sizes = np.bincount(strata, minlength=3)
    assert sizes[1] > 40  # the published run has enough disagreements to draw from
    out = tmp_path / "audit.csv"
    assert main(["audit-sample", "--project", str(project), "--size", "50", "--seed", "7", "--out", str(out),
                 "--disagree", f"{checker},spatial.geneval", "--disagree-share", "0.8"]) == 0
    assert "from 3 strata (judges)" in capsys.readouterr().out
    with Project.open(project) as p:
        (s,) = p.audit.sets("spatial.verdict")
        assert s["design"] == "stratified" and s["population"] == 800
        assert s["params"]["disagree"] == [checker, "spatial.geneval"]
        draw = draws_of(p, "spatial.verdict")[int(s["audit_set_id"])]
        code = dict(zip(ids, strata.tolist()))
        drawn = np.bincount([code[t] for t in draw.inclusion], minlength=3)
        assert drawn[1] == 40 and drawn.sum() == 50  # 80 % from the disagreements
        for t, pi in draw.inclusion.items():
            assert pi == pytest.approx(drawn[code[t]] / sizes[code[t]])
        # the Horvitz–Thompson count of the disagreements from the drawn items is exact
        assert sum(1 / pi for t, pi in draw.inclusion.items() if code[t] == 1) == pytest.approx(sizes[1])
        assert sum(1 / pi for pi in draw.inclusion.values()) == pytest.approx(800)
        # labels given in the set are one recorded draw: the label selection weights them by 1/π
        aid = int(s["audit_set_id"])
        for t in draw.inclusion:
            p.labels.add("spatial.verdict", "sample", t, "ann", "PASS", audit_set_id=aid)
        res = resolve_project(p, "spatial.verdict")
        assert res.known_draw and res.design == "stratified"
        assert float(res.weights().sum()) == pytest.approx(800)
        assert not math.isnan(float(res.inclusion.min()))
