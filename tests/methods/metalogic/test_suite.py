"""The built-in MetaLogic suites: published design, seeded, versioned, generic prompt records."""

from __future__ import annotations

import collections

import pytest

from workstation.detection.vocab import COCO_CLASSES
from workstation.methods.metalogic.forms import equivalent, parse, unique_model
from workstation.methods.metalogic.suite import build_suite, pair_seed, vocabulary
from workstation.demo.classes import DEMO_OBJECTS as SPATIAL_OBJECTS
from workstation.types import WorkstationError


@pytest.fixture(scope="module")
def main_suite():
    return build_suite()


def test_default_suite_has_the_published_design(main_suite) -> None:
    assert len(main_suite) == 800
    c = collections.Counter((p.law, p.modifier, p.dimension) for p in main_suite.pairs)
    for law in ("Commutative", "Associative", "Distributive", "DeMorgan", "Complement"):
        assert sum(v for k, v in c.items() if k[0] == law) == 160
        for mod in ("AND", "OR"):
            assert c[law, mod, "none"] == 40
            assert c[law, mod, "x"] == 20 and c[law, mod, "y"] == 20
    by_mod = collections.Counter(p.modifier for p in main_suite.pairs)
    by_dim = collections.Counter(p.dimension for p in main_suite.pairs)
    assert by_mod == {"AND": 400, "OR": 400}
    assert by_dim == {"none": 400, "x": 200, "y": 200}
    assert {p.axis for p in main_suite.pairs if p.dimension == "x"} == {"x"}
    assert {p.axis for p in main_suite.pairs if p.dimension == "none"} == {""}


def test_every_pair_is_equivalent_and_knows_its_images(main_suite) -> None:
    for p in main_suite.pairs:
        fa, fb = parse(p.form_a), parse(p.form_b)
        assert equivalent(fa, fb), p.pair_id
        world = unique_model(fa)
        for e, n in zip(p.entities, p.expected_count):
            assert n == int(world[next(a for a in world if a.kind == "has" and a.args == (e,))])
        assert len(set(p.entities)) == len(p.entities)
        assert set(p.entities) <= set(COCO_CLASSES)
        if p.axis:
            assert len(p.expected_order) >= 2
            assert all(p.expected_count[p.entities.index(e)] == 1 for e in p.expected_order)
            ranks = p.expected_rank
            assert sorted(r for r in ranks if r >= 0) == list(range(len(p.expected_order)))
        # negated entities are in the text and must be absent
        for e, n in zip(p.entities, p.expected_count):
            assert e in p.text_a and e in p.text_b


def test_same_arguments_same_suite_and_hash() -> None:
    a, b = build_suite(n_pairs=120, seed=7), build_suite(n_pairs=120, seed=7)
    assert a.pairs == b.pairs and a.content_hash == b.content_hash
    c = build_suite(n_pairs=120, seed=8)
    assert c.content_hash != a.content_hash
    # the hash is about content: order and suite name do not matter
    from workstation.methods.metalogic.suite import MetaLogicSuite

    rev = MetaLogicSuite("another name", tuple(reversed(a.pairs)))
    assert rev.content_hash == a.content_hash
    assert len(a.content_hash) == 16


def test_ids_name_the_content_and_pairs_share_one_seed(main_suite) -> None:
    ids = [p.pair_id for p in main_suite.pairs]
    assert len(set(ids)) == 800
    p = main_suite.pairs[0]
    assert p.pair_id.startswith("metalogic-1.main.commutative.and.none.")
    assert p.seed == pair_seed(p.pair_id) and 0 <= p.seed < 2 ** 31
    # a pair id in two suites of different sizes names the same texts
    small = {q.pair_id: q for q in build_suite(n_pairs=60).pairs}
    big = main_suite.by_id()
    for pid, q in small.items():
        if pid in big:
            assert (big[pid].text_a, big[pid].text_b, big[pid].seed) == (q.text_a, q.text_b, q.seed)


def test_prompt_records_map_onto_generic_prompts(main_suite) -> None:
    recs = main_suite.prompt_records()
    assert len(recs) == 1600
    a, b = recs[0], recs[1]
    p = main_suite.pairs[0]
    assert (a["prompt_id"], b["prompt_id"]) == (p.pair_id + ".A", p.pair_id + ".B")
    assert a["twin_id"] == b["prompt_id"] and b["twin_id"] == a["prompt_id"]
    assert a["group_id"] == b["group_id"] == p.pair_id
    assert a["method"] == "metalogic" and a["suite"] == main_suite.name
    assert a["text"] == p.text_a and b["text"] == p.text_b
    assert a["entities"] == p.entities
    assert a["attrs"]["side"] == "A" and b["attrs"]["side"] == "B"
    assert a["attrs"]["seed"] == b["attrs"]["seed"] == p.seed
    assert a["attrs"]["law"] == p.law and a["attrs"]["expected"]["counts"] == list(p.expected_count)
    assert a["attrs"]["form"] == p.form_a and b["attrs"]["form"] == p.form_b
    cols = main_suite.prompt_columns()
    assert set(cols) == {"prompt_id", "text", "suite", "method", "entities", "attrs", "twin_id", "group_id"}
    assert all(len(v) == 1600 and v.dtype == object for v in cols.values())
    import json

    json.dumps([r["attrs"] for r in recs])  # attrs are JSON-serialisable


def test_demo_vocabulary_and_custom_lists() -> None:
    demo = build_suite(objects="demo", n_pairs=200, seed=1)
    assert {e for p in demo.pairs for e in p.entities} <= set(SPATIAL_OBJECTS)
    assert demo.params["objects"] == "demo" and "demo" in demo.name
    custom = build_suite(objects=["Red Ball", "cube", "cone", "ring"], n_pairs=30)
    assert {e for p in custom.pairs for e in p.entities} <= {"red ball", "cube", "cone", "ring"}
    assert vocabulary("coco") == COCO_CLASSES
    with pytest.raises(WorkstationError, match="unknown vocabulary"):
        vocabulary("imagenet")
    with pytest.raises(WorkstationError, match="distinct"):
        build_suite(objects=["cat", "Cat", "dog"])
    with pytest.raises(WorkstationError, match="brackets"):
        build_suite(objects=["cat", "dog", "a[b]"])
    with pytest.raises(WorkstationError, match="distinct .* pairs"):
        build_suite(objects=["cat", "dog", "cow"], n_pairs=800)


def test_student_variant_has_twenty_categories() -> None:
    s = build_suite("student", objects="demo")
    assert len(s) == 200
    c = collections.Counter((p.law, p.dimension) for p in s.pairs)
    assert len(c) == 20 and set(c.values()) == {10}
    attr = [p for p in s.pairs if p.dimension == "attributes"]
    assert all(p.attributes and all(a or n == 0 for a, n in zip(p.attributes, p.expected_count)) for p in attr)
    assert all(p.attributes == () for p in s.pairs if p.dimension != "attributes")
    horiz = [p for p in s.pairs if p.dimension == "horizontal" and p.law == "Commutative"][0]
    e0, e1 = horiz.expected_order
    assert "to the left of" in horiz.text_a and "to the right of" in horiz.text_b
    assert horiz.text_b.startswith(f"a {e1}") or horiz.text_b.startswith(f"an {e1}")


def test_other_sizes_keep_the_proportions() -> None:
    s = build_suite(n_pairs=81)
    assert len(s) == 81
    c = collections.Counter(p.law for p in s.pairs)
    assert max(c.values()) - min(c.values()) <= 1
    assert len(build_suite(n_pairs=1)) == 1
    with pytest.raises(WorkstationError, match="at least one pair"):
        build_suite(n_pairs=0)
    with pytest.raises(WorkstationError, match="variant"):
        build_suite("other")
