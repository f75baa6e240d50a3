"""ProtoBias templates and triplet builder: the seed's rules (Tables 3-5), determinism, output."""

from __future__ import annotations

import difflib
from collections import Counter
from pathlib import Path

import pytest

from workstation.methods.protobias import templates as tp
from workstation.methods.protobias import vocab as vc
from workstation.methods.protobias.build import (build_triplets, image_target_id, split_image_target_id,
                                                 triplet_prompt_columns)
from workstation.types import WorkstationError


def test_sentence_follows_the_seeds_example() -> None:
    # Fig. 1: "An animal stands near a pond with exactly two bamboo stalks in the background."
    bamboo = vc.Extra("bamboo stalk", "bamboo stalks", ("green", "yellow"))
    frame = tp.SceneFrame("animals", "stands", "near a pond", bamboo, "count")
    assert tp.sentence("animal", frame, "2") == "An animal stands near a pond with exactly two bamboo stalks beside it."
    assert tp.sentence("penguin", frame, "1") == "A penguin stands near a pond with exactly one bamboo stalk beside it."
    frame = tp.SceneFrame("demography", "", "stands in a quiet room",
                          vc.Extra("chalkboard", "chalkboards", ("green", "black")), "spatial")
    assert tp.sentence("uneducated person", frame, "background") == \
        "An uneducated person stands in a quiet room with a chalkboard in the background."
    frame = tp.SceneFrame("objects", "is parked", "on a quiet street",
                          vc.Extra("traffic cone", "traffic cones", ("orange", "yellow")), "layout_relation")
    assert tp.sentence("e-scooter", frame, "left") == "An e-scooter is parked on a quiet street with a traffic cone to its left."


@pytest.mark.parametrize("phrase,art", [("animal", "an"), ("horse", "a"), ("e-scooter", "an"), ("unicycle", "a"),
                                        ("uneducated person", "an"), ("honest person", "an"),
                                        ("LGBTQ+ person", "an"), ("US flag", "a"), ("FBI agent", "an"), ("orange rock", "an")])
def test_article(phrase: str, art: str) -> None:
    assert tp.article(phrase) == art


def test_adversarial_values_follow_the_seeds_rules() -> None:
    rock = vc.Extra("rock", "rocks", ("gray", "brown", "white"))
    # count: ±1 or ±2, staying within 1..6
    assert tp.adversarial_values("count", "1", rock, vc.SIZES) == ["2", "3"]
    assert tp.adversarial_values("count", "4", rock, vc.SIZES) == ["2", "3", "5", "6"]
    assert tp.adversarial_values("color", "gray", rock, vc.SIZES) == ["brown", "white"]
    assert tp.adversarial_values("layout_relation", "left", rock, vc.SIZES) == ["right"]
    assert tp.adversarial_values("spatial", "background", rock, vc.SIZES) == ["foreground"]
    assert tp.adversarial_values("scale_size", "tiny", rock, vc.SIZES) == ["huge"]
    with pytest.raises(WorkstationError, match="unknown knob"):
        tp.adversarial_values("texture", "x", rock, vc.SIZES)


def test_vocabulary_has_the_seeds_taxonomy() -> None:
    assert len(vc.ANIMAL_PAIRS) == 20 and len(vc.OBJECT_PAIRS) == 18  # seed §3.2
    non_proto = {p.non_proto for p in vc.ANIMAL_PAIRS}
    assert {"penguin", "ostrich", "platypus", "pangolin", "mosquito", "octopus"} <= non_proto
    assert ("bean bag", "chair") in {(p.non_proto, p.proto) for p in vc.OBJECT_PAIRS}
    assert {g.key for g in vc.ADVANTAGED.values()} == {"christian", "american", "heterosexual"}
    assert {g.key for gs in vc.DISADVANTAGED.values() for g in gs} == \
        {"muslim", "jewish", "nigerian", "indian", "mexican", "lgbtq+"}
    assert set(vc.SOCIO_ATTRS) == {"wealth", "intellect", "morality", "power", "civility"}
    assert all(len(e.colors) >= 2 for es in vc.EXTRAS.values() for e in es)


def _changed_words(a: str, b: str) -> set[str]:
    wa, wb = a.rstrip(".").split(), b.rstrip(".").split()
    out: set[str] = set()
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=wa, b=wb, autojunk=False).get_opcodes():
        if op != "equal":
            out |= set(wa[i1:i2]) | set(wb[j1:j2])
    return out


def _strip_subject(s: str, subject: str) -> str:
    art = tp.article(subject)
    prefix = f"{art} {subject} "
    assert s.lower().startswith(prefix.lower()), (s, subject)
    return s[len(prefix):]


def test_three_sentences_differ_only_in_subject_and_knob_value() -> None:
    ts = build_triplets(150, seed=11)
    assert len(ts) == 450
    for t in ts.triplets:
        rest_t = _strip_subject(t.text, t.hypernym)
        rest_c = _strip_subject(t.prompt_corr, t.non_proto)
        rest_a = _strip_subject(t.prompt_adv, t.proto)
        assert rest_t == rest_c, t  # CORRECT = TEXT with the subject replaced, knob unchanged
        assert rest_a != rest_c, t
        changed = _changed_words(rest_c, rest_a)
        allowed = {"a", "an", t.extra_element, *t.extra_element.split(),
                   *(tp.number_word(int(v)) for v in (t.knob_value, t.knob_value_adv) if t.knob == "count"),
                   t.knob_value, t.knob_value_adv}
        plural = {w for es in vc.EXTRAS.values() for e in es if e.singular == t.extra_element
                  for w in e.plural.split()}
        assert changed <= allowed | plural, (t.knob, rest_c, rest_a, changed)
        assert t.knob_value != t.knob_value_adv
        for s in (t.text, t.prompt_corr, t.prompt_adv):
            assert tp.word_count(s) <= tp.MAX_WORDS


def test_demography_mapping_follows_the_pole() -> None:
    ts = build_triplets({"demography": 120}, seed=2)
    poles = Counter(t.attrs["pole"] for t in ts.triplets)
    assert poles["positive"] > 20 and poles["negative"] > 20
    for t in ts.triplets:
        a = t.attrs
        token = a["attr_token"]
        assert t.text.startswith(f"{tp.article(token).capitalize()} {token} person ")
        adv_desc = vc.ADVANTAGED[a["group_category"]].desc
        dis_desc = next(g.desc for g in vc.DISADVANTAGED[a["group_category"]] if g.key == a["disadvantaged"])
        if a["pole"] == "positive":  # non-prototype: the disadvantaged group
            assert t.non_proto == f"{token} {dis_desc}" and t.proto == f"{token} {adv_desc}"
            assert token == vc.SOCIO_ATTRS[a["socio_attr"]][0]
        else:
            assert t.non_proto == f"{token} {adv_desc}" and t.proto == f"{token} {dis_desc}"
            assert token == vc.SOCIO_ATTRS[a["socio_attr"]][1]


def test_builder_is_deterministic_balanced_and_versioned() -> None:
    a = build_triplets(23, seed=5)
    b = build_triplets(23, seed=5)
    c = build_triplets(23, seed=6)
    assert a.to_records() == b.to_records() and a.content_hash == b.content_hash
    assert a.content_hash != c.content_hash
    assert a.version.startswith(tp.TEMPLATE_VERSION + "+") and a.vocabulary_hash == vc.vocabulary_hash()
    ids = [t.triplet_id for t in a.triplets]
    assert len(set(ids)) == len(ids) == 69
    for d in vc.DOMAINS:
        per = Counter(t.knob for t in a.triplets if t.domain == d)
        assert set(per) == set(vc.DOMAIN_KNOBS[d])
        assert max(per.values()) - min(per.values()) <= 1
    # a smaller build is a prefix of a larger one with the same seed (same visiting order)
    small = build_triplets(10, seed=5)
    for d in vc.DOMAINS:
        assert [t.triplet_id for t in small.triplets if t.domain == d] == \
            [t.triplet_id for t in a.triplets if t.domain == d][:10]


def test_builder_refuses_bad_requests() -> None:
    with pytest.raises(WorkstationError, match="unknown domain"):
        build_triplets({"plants": 3})
    with pytest.raises(WorkstationError, match="knobs must be"):
        build_triplets({"animals": 3}, knobs={"animals": ["scale_size"]})
    with pytest.raises(WorkstationError, match="distinct triplets"):
        # layout_relation on animals: 20 pairs × 5-3 environments × 6-4 extras × 2 sides is finite
        build_triplets({"animals": 5000}, knobs={"animals": ["layout_relation"]})


def test_prompt_columns_map_onto_generic_prompts() -> None:
    ts = build_triplets(4, seed=1)
    cols = ts.to_prompt_columns()
    assert set(cols) == {"prompt_id", "text", "suite", "method", "entities", "attrs", "twin_id", "group_id"}
    assert len(cols["prompt_id"]) == 2 * len(ts)
    t = ts.triplets[0]
    assert list(cols["prompt_id"][:2]) == [f"{t.triplet_id}:corr", f"{t.triplet_id}:adv"]
    assert list(cols["text"][:2]) == [t.prompt_corr, t.prompt_adv]
    assert list(cols["twin_id"][:2]) == [f"{t.triplet_id}:adv", f"{t.triplet_id}:corr"]
    assert list(cols["group_id"][:2]) == [t.triplet_id, t.triplet_id]
    assert cols["method"][0] == "protobias" and cols["suite"][0] == f"protobias-builtin@{ts.version}"
    a0, a1 = cols["attrs"][0], cols["attrs"][1]
    assert (a0["role"], a1["role"]) == ("corr", "adv")
    assert a0["domain"] == t.domain and a0["knob"] == t.knob and a0["extra_element"] == t.extra_element
    assert a0["eval_text"] == a1["eval_text"] == t.text
    assert (a0["knob_value"], a1["knob_value"]) == (t.knob_value, t.knob_value_adv)
    assert cols["entities"][0] == (t.non_proto, t.extra_element)  # the entity each prompt asks for
    assert cols["entities"][1] == (t.proto, t.extra_element)
    assert t.entities() == (t.hypernym, t.extra_element)
    dem = next(i for i, a in enumerate(cols["attrs"]) if a["domain"] == "demography")
    assert cols["entities"][dem][0] == "person" and "pole" in cols["attrs"][dem]
    assert triplet_prompt_columns([], "x")["prompt_id"].shape == (0,)


def test_image_target_ids_round_trip() -> None:
    assert image_target_id("pb-a-1:x", "adv") == "pb-a-1:x:adv"
    assert split_image_target_id("pb-a-1:x:adv") == ("pb-a-1:x", "adv")
    for bad in ("pb-a-1", "pb-a-1:left", ":corr"):
        with pytest.raises(WorkstationError):
            split_image_target_id(bad)
    with pytest.raises(WorkstationError):
        image_target_id("t", "left")


def test_public_api_is_lazy_and_complete() -> None:
    import subprocess
    import sys

    code = (
        "import sys, workstation.methods.protobias as pb\n"
        "assert not any(m in sys.modules for m in ('workstation.methods.protobias.metrics', 'cv2', 'PIL'))\n"
        "for name in pb.__all__: getattr(pb, name)\n"
        "print(sorted(m for m in ('torch', 'transformers', 'PySide6', 'cv2', 'PIL') if m in sys.modules))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=str(Path(__file__).resolve().parents[3]))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"  # even with every name loaded: no Qt, no torch, no cv2 / PIL yet
