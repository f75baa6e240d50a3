"""Demo MetaLogic pairs: drawn with the same seed, errors injected per law, measured back through
the demo detector and the comparison."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workstation.demo.detector import SceneDetector
from workstation.methods.metalogic.compare import evaluate
from workstation.methods.metalogic.config import MetaLogicConfig
from workstation.methods.metalogic.demo import DEFAULT_ERROR_RATES, render_and_detect, render_pair
from workstation.methods.metalogic.laws import LAWS
from workstation.methods.metalogic.results import MISALIGNED, UNDECIDABLE
from workstation.methods.metalogic.suite import build_suite
from workstation.types import WorkstationError

SUITE = build_suite(objects="demo", n_pairs=800, seed=11)


def _spec(dim: str, n_order: int = 0):
    return next(p for p in SUITE.pairs if p.dimension == dim and len(p.expected_order) >= n_order)


def _centre(b: list[float], axis: int) -> float:
    return (b[axis] + b[axis + 2]) / 2


def test_same_pair_same_seed_same_pixels() -> None:
    spec = _spec("x", 2)
    a1, b1, t1 = render_pair(spec, size=256)
    a2, b2, t2 = render_pair(spec, size=256)
    assert a1.shape == (256, 256, 3) and a1.dtype == np.uint8
    assert np.array_equal(a1, a2) and np.array_equal(b1, b2) and t1 == t2
    a3, _, _ = render_pair(spec, seed=spec.seed + 1, size=256)
    assert not np.array_equal(a1, a3)
    # without an error both images are the same scene, pixel for pixel
    a, b, t = render_pair(spec, force="", size=256)
    assert np.array_equal(a, b) and not t["injected"] and t["expected_verdict"] == "ALIGNED"
    assert t["boxes_a"] == t["boxes_b"]
    # the drawn entities are the present ones, in the expected order on the axis
    ents = [e for e, c in zip(spec.entities, spec.expected_count) if c]
    assert sorted(t["boxes_a"]) == sorted(ents)
    xs = [_centre(t["boxes_a"][e][0], 0) for e in spec.expected_order]
    assert xs == sorted(xs)


def test_injected_errors_change_one_image_only() -> None:
    spec = _spec("y", 3)
    a, b, t = render_pair(spec, force="omission", size=256)
    side, (ent,) = t["side"], t["entities"]
    wrong, right = (t["boxes_a"], t["boxes_b"]) if side == "A" else (t["boxes_b"], t["boxes_a"])
    assert ent not in wrong and len(right[ent]) == 1 and t["expected_kind"] == "omission"
    assert not np.array_equal(a, b)
    a, b, t = render_pair(spec, force="duplication", size=256)
    (ent,) = t["entities"]
    wrong, right = (t["boxes_a"], t["boxes_b"]) if t["side"] == "A" else (t["boxes_b"], t["boxes_a"])
    assert len(wrong[ent]) == 2 and len(right[ent]) == 1
    a, b, t = render_pair(spec, force="swap", size=256)
    e1, e2 = t["entities"]
    assert spec.expected_order.index(e2) == spec.expected_order.index(e1) + 1
    wrong, right = (t["boxes_a"], t["boxes_b"]) if t["side"] == "A" else (t["boxes_b"], t["boxes_a"])
    assert _centre(right[e1][0], 1) < _centre(right[e2][0], 1)
    assert _centre(wrong[e1][0], 1) > _centre(wrong[e2][0], 1)
    assert t["expected_kind"] == "positional"
    with pytest.raises(WorkstationError, match="cannot take a swap"):
        render_pair(_spec("none"), force="swap")


def test_refuses_what_it_cannot_draw() -> None:
    coco = build_suite(n_pairs=5).pairs[0]
    with pytest.raises(WorkstationError, match="cannot draw"):
        render_pair(coco)
    with pytest.raises(WorkstationError, match="unknown law"):
        render_pair(SUITE.pairs[0], rates={"Transitive": 0.5})
    with pytest.raises(WorkstationError, match=r"in \[0, 1\]"):
        render_pair(SUITE.pairs[0], rates={"DeMorgan": 1.5})
    with pytest.raises(WorkstationError, match="unknown error kind"):
        render_pair(SUITE.pairs[0], force="blur")


@pytest.fixture(scope="module")
def detector() -> SceneDetector:
    return SceneDetector()


def test_no_errors_all_aligned_all_errors_all_misaligned(detector: SceneDetector) -> None:
    specs = list(SUITE.pairs[::20])  # 40 pairs over every cell
    for rate, want in ((0.0, 0), (1.0, 1)):
        data, truths = render_and_detect(specs, detector, rates={law: rate for law in LAWS})
        assert all(t["injected"] == bool(rate) for t in truths)
        r = evaluate(data, MetaLogicConfig())
        decided = r.verdict != UNDECIDABLE
        assert decided.mean() >= 0.9
        mis = (r.verdict == MISALIGNED)[decided]
        assert abs(mis.mean() - want) <= 0.1, (rate, mis.mean())


@pytest.mark.slow
def test_measured_misalignment_rate_per_law_matches_the_injected_rate(detector: SceneDetector) -> None:
    specs = list(SUITE.pairs[::2])  # 400 pairs, 80 per law
    data, truths = render_and_detect(specs, detector)
    r = evaluate(data, MetaLogicConfig())
    injected = np.array([t["injected"] for t in truths])
    law = np.array([LAWS.index(t["law"]) for t in truths])
    decided = r.verdict != UNDECIDABLE
    mis = r.verdict == MISALIGNED
    wrong = decided & (mis != injected)  # the detector's own mistakes, known from the truth
    assert decided.mean() >= 0.9, "abstains too often"
    assert wrong[decided].mean() <= 0.06, "the detector disagrees with what was drawn too often"
    # what type the comparison finds for a correctly found error
    found = decided & mis & injected
    want = np.array([t["expected_kind"] for t in truths], dtype=object)
    got = np.array(["", "omission", "duplication", "positional"], dtype=object)[r.kind]
    assert (got[found] == want[found]).mean() >= 0.9
    for k, name in enumerate(LAWS):
        sel = decided & (law == k)
        n = int(sel.sum())
        rate = DEFAULT_ERROR_RATES[name]
        measured = float(mis[sel].mean())
        # binomial sampling of the injection (99.9 %), plus the share of this law's pairs on which the
        # detector itself was wrong
        bound = 3.29 * math.sqrt(rate * (1 - rate) / n) + float(wrong[sel].mean())
        assert abs(measured - rate) <= bound, (name, measured, rate, n, bound)
    # the published ordering survives: Distributive is misaligned more often than Complement
    by_law = [float(mis[decided & (law == k)].mean()) for k in range(len(LAWS))]
    assert by_law[LAWS.index("Distributive")] > by_law[LAWS.index("Complement")]
