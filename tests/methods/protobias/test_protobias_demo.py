"""ProtoBias demo (procedural triplets, images, toy metric of known bias) and the label scheme."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from workstation.methods.protobias import (FIDELITY_SCHEME, ToyProtoMetric, blind_left_is_corr, blind_sides,
                                           build_demo_triplets, demo_scores, metric_table, parse_demo_text,
                                           render_demo)
from workstation.methods.protobias.demo import DEMO_DOMAIN_OF_SHAPE
from workstation.methods.protobias.metrics import TripletScores
from workstation.methods.protobias.vocab import DOMAIN_KNOBS, DOMAINS
from workstation.types import WorkstationError

Z = 3.29  # two-sided 99.9 % normal quantile


@pytest.fixture(scope="module")
def demo() -> object:
    return build_demo_triplets(100, seed=7)


@pytest.fixture(scope="module")
def rendered(demo: object) -> tuple[list[np.ndarray], list[np.ndarray]]:
    ts = demo.triplets  # type: ignore[attr-defined]
    return [render_demo(t, "corr") for t in ts], [render_demo(t, "adv") for t in ts]


def test_demo_triplets(demo: object) -> None:
    ts = demo.triplets  # type: ignore[attr-defined]
    assert len(ts) == 300 and len({t.triplet_id for t in ts}) == 300 and len({t.text for t in ts}) == 300
    for d in DOMAINS:
        per = Counter(t.knob for t in ts if t.domain == d)
        assert set(per) == set(DOMAIN_KNOBS[d]) and max(per.values()) - min(per.values()) <= 1
    for t in ts:
        assert DEMO_DOMAIN_OF_SHAPE[t.attrs["main_shape"]] == t.domain
        assert t.attrs["main_colour"] != t.attrs["extra_colour"]
        f = parse_demo_text(t.text)
        assert f is not None and f["main_colour"] == t.attrs["main_colour"]
        assert f["value"] == t.knob_value and f["value"] != t.knob_value_adv
    cols = demo.to_prompt_columns()  # type: ignore[attr-defined]
    t0 = ts[0]
    assert cols["entities"][1] == (f"{t0.attrs['main_colour']} {t0.attrs['main_shape']}", t0.extra_element)
    assert cols["text"][1] == t0.prompt_adv and cols["attrs"][1]["eval_text"] == t0.text
    assert build_demo_triplets(100, seed=7).content_hash == demo.content_hash  # type: ignore[attr-defined]
    assert build_demo_triplets(100, seed=8).content_hash != demo.content_hash  # type: ignore[attr-defined]


def test_rendering_is_deterministic(demo: object) -> None:
    t = demo.triplets[0]  # type: ignore[attr-defined]
    a = render_demo(t, "corr", seed=3)
    assert a.shape == (256, 256, 3) and a.dtype == np.uint8
    assert np.array_equal(a, render_demo(t, "corr", seed=3))
    assert not np.array_equal(a, render_demo(t, "corr", seed=4))
    assert not np.array_equal(a, render_demo(t, "adv", seed=3))
    assert render_demo(t, "adv", seed=0, size=128).shape == (128, 128, 3)
    with pytest.raises(WorkstationError, match="role"):
        render_demo(t, "left")


def test_images_show_what_the_prompts_say(demo: object, rendered: tuple[list, list]) -> None:
    """I_corr shows both facts of T in the unusual look; I_adv the canonical look with the knob
    violated. Checked on every demo triplet with the toy metric's own image reading."""
    m = ToyProtoMetric(p=0.0)
    for t, ic, ia in zip(demo.triplets, *rendered):  # type: ignore[attr-defined]
        fc = m.features(ic, t.text)
        fa = m.features(ia, t.text)
        assert fc is not None and fa is not None
        assert (fc["main"], fc["knob"]) == (1.0, 1.0), (t.text, t.prompt_corr, fc)
        assert (fa["main"], fa["knob"]) == (1.0, 0.0), (t.text, t.prompt_adv, fa)
        assert fa["proto"] > 0.8 and fc["proto"] < 0.3, (t.text, fc, fa)


@pytest.mark.parametrize("p", [0.0, 0.3, 0.7, 1.0])
def test_toy_metric_fails_with_probability_p(demo: object, rendered: tuple[list, list], p: float) -> None:
    metric = ToyProtoMetric(p=p, seed=11)
    ts = demo.triplets  # type: ignore[attr-defined]
    texts = [t.text for t in ts]
    scores = TripletScores.from_mapping([t.triplet_id for t in ts], [t.domain for t in ts], [t.knob for t in ts],
                                        {metric.name: (metric.score(rendered[0], texts),
                                                       metric.score(rendered[1], texts))})
    rows = metric_table(scores, n_boot=0)
    overall = next(r for r in rows if r["domain"] == "all")
    n = overall["n"]
    assert n == 300 and overall["n_missing"] == 0
    # it fails exactly on the texts its seeded draw marks biased (no hidden table of answers) ...
    c, a = scores.column("toy_proto")
    biased = np.array([metric.is_biased(t.text) for t in demo.triplets])  # type: ignore[attr-defined]
    assert np.array_equal(a >= c, biased)
    # ... so the failure count is Binomial(n, p): within Z standard errors of p
    fr = overall["failure_rate"]
    assert abs(fr - p) <= Z * math.sqrt(p * (1 - p) / n) + 1e-12, (fr, p)
    if p == 0.0:
        assert overall["n_fail"] == 0 and overall["correct_margin"] > 0.3
    if p == 1.0:
        assert overall["n_fail"] == 300 and overall["incorrect_margin"] > 0.3


def test_demo_scores_renders_and_scores(demo: object, rendered: tuple[list, list]) -> None:
    ts = demo.triplets[:12]  # type: ignore[attr-defined]
    m1, m2 = ToyProtoMetric(p=0.0, name="fair"), ToyProtoMetric(p=1.0, name="biased")
    s = demo_scores(ts, [m1, m2])
    assert s.metrics == ("fair", "biased") and s.triplet_id.tolist() == [t.triplet_id for t in ts]
    texts = [t.text for t in ts]
    assert np.array_equal(s.column("fair")[0], m1.score(rendered[0][:12], texts))
    assert np.array_equal(s.column("biased")[1], m2.score(rendered[1][:12], texts))
    rows = metric_table(s, n_boot=0)
    assert [r["failure_rate"] for r in rows if r["domain"] == "all"] == [0.0, 1.0]


def test_toy_metric_edge_cases() -> None:
    m = ToyProtoMetric(p=0.5)
    img = np.full((64, 64, 3), 200, np.uint8)
    s = m.score([img, img], ["A cat on a mat.", "A red circle with a blue square beside it."])
    assert math.isnan(s[0]) and 0.0 <= s[1] <= 1.0  # a text outside the demo grammar gets NaN
    with pytest.raises(WorkstationError, match="p must be in"):
        ToyProtoMetric(p=1.5)
    with pytest.raises(WorkstationError, match="2 images but 1 texts"):
        m.score([img, img], ["x"])
    # the bias draw is uniform: about half of 2000 texts are biased at p = 0.5
    k = sum(m.is_biased(f"text {i}") for i in range(2000))
    assert abs(k / 2000 - 0.5) <= Z * math.sqrt(0.25 / 2000)


def test_fidelity_label_scheme() -> None:
    s = FIDELITY_SCHEME
    assert (s.task, s.target, s.values, s.keys, s.ordinal) == (
        "protobias.fidelity", "image", ("1", "2", "3", "4"), ("1", "2", "3", "4"), True)
    assert s.validate(3.0) == "3" and s.validate(" 4 ") == "4" and s.value_for_key("2") == "2"
    with pytest.raises(WorkstationError):
        s.validate("5")


def test_blind_order_is_a_seeded_per_item_coin() -> None:
    ids = [f"pb-a-{i:05d}" for i in range(4000)]
    left = blind_left_is_corr(ids, seed=1)
    assert left.dtype == bool and len(left) == 4000
    assert abs(left.mean() - 0.5) <= Z * math.sqrt(0.25 / 4000)  # balanced
    assert np.array_equal(left, blind_left_is_corr(ids, seed=1))  # reproducible
    other = blind_left_is_corr(ids, seed=2)
    assert 0.4 < np.mean(left != other) < 0.6  # another seed is another, independent order
    # per item: the order does not depend on the other items in the queue
    assert blind_left_is_corr(ids[10:20][::-1], seed=1).tolist() == left[10:20][::-1].tolist()
    for i in (0, 1, 2, 3):
        assert blind_sides(ids[i], seed=1) == (("corr", "adv") if left[i] else ("adv", "corr"))
