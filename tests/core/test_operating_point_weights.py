"""The operating point weighted by the labels' draw: over every possible draw of a stratified
audit set, and of a precision plan's PASS-only draw, the weighted estimates' mean is the
population's figure exactly, where the plain counts' mean is not; labels of no recorded draw
still give figures, with a line that says they assume a uniform draw; the report says the same
and its figures are the weighted ones."""

from __future__ import annotations

import csv
import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workstation.evaluation.selection import LabelSelection, save_selection
from workstation.methods.spatial.calibration import operating_point
from workstation.methods.spatial.types import FAIL, PASS

KEYS = ("coverage", "risk", "fpr_pass")


def _exact_means(strata: list[np.ndarray], take: list[int], checker: np.ndarray, conf: np.ndarray,
                 human: np.ndarray, tau: float) -> tuple[dict[str, float], dict[str, float]]:
    """The mean of the weighted and of the plain operating point over every draw of ``take[h]``
    of stratum h's rows (each draw equally likely: a stratified draw without replacement)."""
    sums_w = dict.fromkeys(KEYS, 0.0)
    sums_u = dict.fromkeys(KEYS, 0.0)
    n_draws = 0
    for picks in itertools.product(*(itertools.combinations(s.tolist(), k) for s, k in zip(strata, take))):
        rows = np.array([r for p in picks for r in p])
        w = np.concatenate([np.full(k, len(s) / k) for s, k in zip(strata, take)])
        ew = operating_point(checker[rows], conf[rows], human[rows], None, tau, weights=w, n_boot=0)
        eu = operating_point(checker[rows], conf[rows], human[rows], None, tau, n_boot=0)
        for k in KEYS:
            sums_w[k] += ew[k].value
            sums_u[k] += eu[k].value
        n_draws += 1
    return {k: v / n_draws for k, v in sums_w.items()}, {k: v / n_draws for k, v in sums_u.items()}


def _population_figures(checker: np.ndarray, conf: np.ndarray, human: np.ndarray, tau: float) -> dict[str, float]:
    e = operating_point(checker, conf, human, None, tau, n_boot=0)
    return {k: e[k].value for k in KEYS}


def test_a_stratified_draws_weighted_operating_point_is_the_populations_on_average() -> None:
    # three cells of ten samples: four confident PASS (two wrong), three confident FAIL (two
    # wrong), and three unsure PASS below τ; the set draws 1, 3 and 1 of them: unequal shares
    checker = np.array([PASS] * 4 + [FAIL] * 3 + [PASS] * 3)
    conf = np.array([0.9] * 7 + [0.2] * 3)
    human = np.array([PASS, PASS, FAIL, FAIL, PASS, PASS, FAIL, PASS, FAIL, PASS])
    strata = [np.arange(0, 4), np.arange(4, 7), np.arange(7, 10)]
    weighted, plain = _exact_means(strata, [1, 3, 1], checker, conf, human, 0.5)
    truth = _population_figures(checker, conf, human, 0.5)
    assert truth == pytest.approx({"coverage": 0.7, "risk": 4 / 7, "fpr_pass": 0.5})
    for k in ("coverage", "risk"):
        assert weighted[k] == pytest.approx(truth[k], abs=1e-12), k
        assert abs(plain[k] - truth[k]) > 0.04, k  # the plain counts over-represent the drawn-heavy cells


def test_a_pass_only_plans_weighted_operating_point_is_the_pass_parts_on_average() -> None:
    # a precision plan draws the checker's PASS only, by confidence stratum: 1 of 4 confident
    # PASS (none wrong), 2 of 3 unsure PASS (two wrong); the checker's FAIL are out of its reach
    checker = np.array([PASS] * 7 + [FAIL] * 3)
    conf = np.array([0.9] * 4 + [0.6] * 3 + [0.9] * 3)
    human = np.array([PASS] * 4 + [FAIL, FAIL, PASS] + [FAIL] * 3)
    strata = [np.arange(0, 4), np.arange(4, 7)]
    weighted, plain = _exact_means(strata, [1, 2], checker, conf, human, 0.5)
    pass_part = np.arange(7)
    truth = _population_figures(checker[pass_part], conf[pass_part], human[pass_part], 0.5)
    assert truth["fpr_pass"] == pytest.approx(2 / 7)
    for k in ("fpr_pass", "risk"):
        assert weighted[k] == pytest.approx(truth[k], abs=1e-12), k
        assert plain[k] - truth[k] > 0.1, k  # the unsure, error-prone stratum drawn twice as often


def test_equal_weights_are_the_plain_counts_and_bad_weights_are_refused() -> None:
    from workstation.types import WorkstationError

    rng = np.random.default_rng(0)
    checker = rng.choice([PASS, FAIL], 30)
    conf = rng.random(30)
    human = rng.choice([PASS, FAIL], 30)
    prompts = np.repeat(np.arange(10), 3).astype(object)
    plain = operating_point(checker, conf, human, prompts, 0.3)
    same = operating_point(checker, conf, human, prompts, 0.3, weights=np.full(30, 7.5))
    for k in plain:
        assert (plain[k].value, plain[k].lo, plain[k].hi) == (same[k].value, same[k].lo, same[k].hi)
    with pytest.raises(WorkstationError, match="one positive number per audited sample"):
        operating_point(checker, conf, human, prompts, 0.3, weights=np.ones(29))


@pytest.fixture
def stratified_project(project: Path) -> Any:
    """The fixture project with a stratified blind audit set labelled by a1, and free labels."""
    from workstation.evaluation.audit_sets import draw_audit_set
    from workstation.methods.spatial.method import LABELS as SCHEME
    from workstation.methods.spatial.store import TASK
    from workstation.store import Project

    from .test_label_selection import _population

    with Project.open(project) as p:
        ds, v, pop = _population(p)
        aid = draw_audit_set(p, SCHEME, pop, name="blind", size=40, seed=3, recheck_fraction=0.0)
        items = [t for t, rc in p.audit.items(aid) if not rc]
        for k, s in enumerate(items):
            p.labels.add(TASK, "sample", s, "a1", "PASS" if k % 3 else "FAIL", audit_set_id=aid)
        free = [str(s) for s in ds.samples.sample_id.tolist() if str(s) not in set(items)][:15]
        for s in free:
            p.labels.add(TASK, "sample", s, "a1", "FAIL")
        yield p, aid, ds, v


def _written(folder: Path) -> dict[str, float]:
    with open(folder / "data" / "operating_point.csv", newline="") as f:
        return {r["statistic"]: float(r["value"]) for r in csv.DictReader(f)}


def test_the_reports_operating_point_is_weighted_by_the_draw_and_says_so(stratified_project: Any,
                                                                        tmp_path: Path) -> None:
    from workstation.methods.spatial.report import report_section
    from workstation.methods.spatial.store import TASK, SpatialStore

    p, aid, ds, v = stratified_project
    one = LabelSelection(sets=(aid,), free=False, rechecks=False)
    save_selection(p, TASK, one)
    sec = report_section(p, tmp_path / "one")
    chosen = SpatialStore(p).human_selected(ds, one)
    w, note = chosen.draw_basis(ds.n)
    assert w is not None and not np.all(w == w[0])  # the cells' shares differ
    assert note.startswith("weighted by the stratified draw's inclusion probabilities")
    rows = np.flatnonzero(chosen.codes >= 0)
    cfg = SpatialStore(p).get_config(SpatialStore(p).active_config_id())
    args = (np.asarray(v.verdict)[rows], np.asarray(v.conf)[rows], chosen.codes[rows].astype(np.int64), None, cfg.tau)
    weighted = operating_point(*args, weights=w, n_boot=0)
    plain = operating_point(*args, n_boot=0)
    got = _written(tmp_path / "one")
    for k in ("coverage", "risk", "fpr_pass"):
        assert math.isclose(got[k], weighted[k].value, abs_tol=1e-12) or (math.isnan(got[k])
                                                                          and math.isnan(weighted[k].value)), k
    assert any(abs(weighted[k].value - plain[k].value) > 1e-6 for k in ("coverage", "risk", "fpr_pass"))
    assert sec.meta["provenance"]["labels"]["operating_point"] == note
    from workstation.methods.spatial.commands.audit import audit_metrics

    cli = audit_metrics(p)  # `audit-metrics` reads the same kept selection and weights
    assert cli["audited"] == len(rows) and cli["operating_point_draw"] == note
    assert cli["operating_point"]["risk"]["value"] == pytest.approx(weighted["risk"].value, abs=1e-12)
    page = (tmp_path / "one" / "index.html").read_text(encoding="utf-8")
    assert "weighted by the stratified draw&#x27;s inclusion probabilities" in page
    beside = page.split("id='operating_point'>", 1)[1].split("</p>", 1)[0]
    assert f"(labels: audit set #{aid} (blind), every annotator, first passes, latest label wins — " in beside

    # every label, pooled: still computed, on the plain counts, and said to assume a uniform draw
    save_selection(p, TASK, LabelSelection())
    sec = report_section(p, tmp_path / "pooled")
    pooled = SpatialStore(p).human_selected(ds, LabelSelection())
    assert pooled.draw_basis(ds.n) == (None, "these figures assume a uniform random draw, which these labels "
                                             "are not (several draws pooled)")
    prow = np.flatnonzero(pooled.codes >= 0)
    pl = operating_point(np.asarray(v.verdict)[prow], np.asarray(v.conf)[prow], pooled.codes[prow].astype(np.int64),
                         None, cfg.tau, n_boot=0)
    assert math.isclose(_written(tmp_path / "pooled")["coverage"], pl["coverage"].value, abs_tol=1e-12)
    assert "which these labels are not (several draws pooled)" in \
        (tmp_path / "pooled" / "index.html").read_text(encoding="utf-8")
    assert sec.meta["provenance"]["labels"]["operating_point"].startswith("these figures assume a uniform")
