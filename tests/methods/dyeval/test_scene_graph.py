"""Scene graphs: elements, rendering, F_split (App. B.1), merging (Fig. 11), editing, parsing."""

from __future__ import annotations

import json

import pytest

from workstation.methods.dyeval import (
    Relation,
    SceneGraph,
    SceneObject,
    merge_graphs,
    merge_keys,
    parse_text,
    render_text,
    split_graph,
)
from workstation.methods.dyeval.scene_graph import (
    LEVEL_ATTRIBUTES,
    LEVEL_DROP_ATTRIBUTE,
    LEVEL_OBJECTS,
    LEVEL_RELATIONS,
)
from workstation.types import WorkstationError

KIMONO = "A luxurious silk kimono with elegant floral embroidery in vibrant hues."
MOON = "A tiny black crescent moon within a big white cloud."


def _txt(g: SceneGraph, keys: frozenset[str]) -> str:
    return g.restrict(keys).render()


def test_the_papers_two_prompts_parse_to_their_graphs_and_render_back_word_for_word() -> None:
    k = parse_text(KIMONO)
    assert k.to_paper_dict() == {
        "context": [],
        "entities": {"kimono": {"attributes": ["luxurious", "silk"], "article": "a"},
                     "embroidery": {"attributes": ["elegant", "floral"], "article": ""},
                     "hues": {"attributes": ["vibrant"], "article": ""}},
        "relations": [{"with": {"entities": ["kimono", "embroidery"], "attributes": []}},
                      {"in": {"entities": ["embroidery", "hues"], "attributes": []}}],
    }
    assert k.render() == KIMONO
    m = parse_text(MOON)
    assert [(o.name, o.attributes) for o in m.objects] == [("moon", ("tiny", "black", "crescent")),
                                                           ("cloud", ("big", "white"))]
    assert [(r.predicate, r.subject, r.object) for r in m.relations] == [("within", "o1", "o2")]
    assert m.render() == MOON
    # elements: 3 objects + 5 attributes + 2 relations = 10 for the kimono; 2 + 5 + 1 = 8 for the moon
    assert k.size == 10 and m.size == 8
    assert m.elements() == ("o:o1", "a:o1:tiny", "a:o1:black", "a:o1:crescent", "o:o2", "a:o2:big",
                            "a:o2:white", "r:r1")


def test_rendering_rules() -> None:
    g = SceneGraph(
        (SceneObject("o1", "greyhound", ("sleek", "elegant")), SceneObject("o2", "body", ("slender",)),
         SceneObject("o3", "legs", ("long",), "")),
        (Relation("r1", "with", "o1", "o2"), Relation("r2", "with", "o1", "o3")), ("in the park",))
    # relations sharing subject and predicate share the predicate
    assert g.render() == "A sleek elegant greyhound with a slender body and long legs in the park."
    assert SceneGraph(context=("across the room",)).render() == "A scene across the room."
    assert SceneGraph((SceneObject("o1", "owl", ("old",)),)).render() == "An old owl."
    assert SceneGraph((SceneObject("o1", "owl", ("unique",)),)).render() == "A unique owl."
    two = SceneGraph((SceneObject("o1", "cat"), SceneObject("o2", "dog", (), "the")))
    assert two.render() == "A cat and the dog."
    assert render_text(SceneGraph()) == ""


def test_restriction_keeps_dependencies_and_draws_a_relation_only_with_both_objects() -> None:
    m = parse_text(MOON)
    # an attribute brings its object
    assert m.restrict({"a:o2:big"}).render() == "A big cloud."
    # a relation without one of its objects is not drawn (it waits for the other half)
    assert m.restrict({"o:o1", "r:r1"}).render() == "A moon."
    assert m.restrict({"o:o1", "r:r1", "o:o2"}).render() == "A moon within a cloud."
    with pytest.raises(WorkstationError, match="unknown element"):
        m.restrict({"o:o9"})


def test_split_follows_relations_then_objects_then_attributes_then_drops_the_last_attribute() -> None:
    k = parse_text(KIMONO)
    s = split_graph(k)
    assert s is not None and s.level == LEVEL_RELATIONS
    assert (_txt(k, s.first), _txt(k, s.second)) == (
        "A luxurious silk kimono with elegant floral embroidery.", "Elegant floral embroidery in vibrant hues.")
    # the shared object (embroidery) is in both halves
    assert "o:o2" in s.first and "o:o2" in s.second

    m = parse_text(MOON)
    s = split_graph(m)
    assert s is not None and s.level == LEVEL_OBJECTS
    assert (_txt(m, s.first), _txt(m, s.second)) == ("A tiny black crescent moon.", "A big white cloud.")
    assert s.bridge == frozenset({"r:r1"})

    cloud = m.restrict(s.second)
    s = split_graph(cloud)
    assert s is not None and s.level == LEVEL_ATTRIBUTES
    assert (_txt(m, s.first), _txt(m, s.second)) == ("A big cloud.", "A white cloud.")

    s = split_graph(m.restrict({"a:o2:big"}))
    assert s is not None and s.level == LEVEL_DROP_ATTRIBUTE
    assert _txt(m, s.first) == "A cloud." and s.second == frozenset() and s.dropped == frozenset({"a:o2:big"})

    assert split_graph(m.restrict({"o:o2"})) is None  # one element: atomic
    with pytest.raises(WorkstationError, match="empty"):
        split_graph(SceneGraph())


def test_odd_counts_give_the_first_half_the_extra_unit() -> None:
    g = SceneGraph((SceneObject("o1", "moon", ("tiny", "black", "crescent")),))
    s = split_graph(g)
    assert s is not None
    assert (_txt(g, s.first), _txt(g, s.second)) == ("A tiny black moon.", "A crescent moon.")
    ctx = SceneGraph((SceneObject("o1", "cat"),), (), ("in the park", "at night"))
    s = split_graph(ctx)
    assert s is not None and s.level == LEVEL_OBJECTS
    assert (_txt(ctx, s.first), _txt(ctx, s.second)) == ("A cat in the park.", "A scene at night.")


def test_merging_the_halves_gives_the_graph_back_fig_11() -> None:
    for text in (KIMONO, MOON, "A red apple on a wooden table in the kitchen at night.",
                 "A child gently hugging a small puppy next to a tall tree."):
        g = parse_text(text)
        s = split_graph(g)
        assert s is not None
        assert merge_keys(g, s.first, s.second, s.bridge, s.dropped) == g
        assert len(s.first) < g.size and len(s.second) < g.size


def test_graph_json_round_trips_in_both_layouts_and_rejects_bad_graphs() -> None:
    g = parse_text(KIMONO)
    assert SceneGraph.from_dict(json.loads(json.dumps(g.to_dict()))) == g
    back = SceneGraph.from_paper_dict(json.loads(json.dumps(g.to_paper_dict())))
    assert back.render() == KIMONO
    # the paper's layout has no articles: plural-looking and counted entities get none
    bare = {"context": ["in the park"], "entities": {"Greyhound": {"attributes": ["Two", "sleek"]},
                                                     "legs": {"attributes": ["long"]}},
            "relations": {"with": {"entities": ["Greyhound", "legs"], "attributes": []}}}
    assert SceneGraph.from_paper_dict(bare).render() == "Two sleek Greyhound with long legs in the park."
    # the paper's own example: relations as a dict, a three-entity relation becomes a chain
    paper = {"context": [], "entities": {"future": {"attributes": []}, "past": {"attributes": []},
                                         "present": {"attributes": []}, "time": {"attributes": ["concept of"]},
                                         "flowing river": {"attributes": []}},
             "relations": {"as": {"attributes": [], "entities": ["time", "flowing river"]},
                           "merging together": {"attributes": [], "entities": ["past", "present", "future"]}}}
    pg = SceneGraph.from_paper_dict(paper)
    assert [(r.predicate, r.subject, r.object) for r in pg.relations] == [
        ("as", "o4", "o5"), ("merging together", "o2", "o3"), ("merging together", "o3", "o1")]
    with pytest.raises(WorkstationError, match="unknown object"):
        SceneGraph((SceneObject("o1", "cat"),), (Relation("r1", "on", "o1", "o2"),))
    with pytest.raises(WorkstationError, match="itself"):
        SceneGraph((SceneObject("o1", "cat"),), (Relation("r1", "on", "o1", "o1"),))
    with pytest.raises(WorkstationError, match="repeated attribute"):
        SceneGraph((SceneObject("o1", "cat", ("red", "red")),))
    with pytest.raises(WorkstationError, match="malformed"):
        SceneGraph.from_dict({"objects": [{"name": "cat"}]})


def test_the_auditor_can_correct_a_graph() -> None:
    g = parse_text("A dog wagging its tail.")
    assert g.render() == "A dog wagging its tail."
    g2, owner = g.with_object("owner", (), "its")
    g2, _ = g2.with_relation("next to", "o1", owner)
    g2 = g2.with_attribute("o1", "happy").renamed("o2", "fluffy tail", "its").with_context("in the park")
    assert g2.render() == "A happy dog wagging its fluffy tail next to its owner in the park."
    g3 = g2.without_relation("r1").without_attribute("o1", "happy").without_context("in the park")
    assert g3.render() == "A dog next to its owner and its fluffy tail."
    assert g3.without_object("o3").render() == "A dog and its fluffy tail."
    with pytest.raises(WorkstationError):
        g.without_attribute("o1", "purple")


def test_merge_graphs_unifies_objects_by_name() -> None:
    a = parse_text("A tiny black crescent moon.")
    b = parse_text("A moon within a big white cloud.")
    assert merge_graphs(a, b).render() == MOON


@pytest.mark.parametrize("text, expected", [
    ("A fluffy white cat across the room.",
     {"context": ["across the room"], "entities": {"cat": {"attributes": ["fluffy", "white"]}}, "relations": []}),
    ("A sleek and elegant greyhound with a slender body and long legs.",
     {"context": [], "entities": {"greyhound": {"attributes": ["sleek", "elegant"]},
                                  "body": {"attributes": ["slender"]}, "legs": {"attributes": ["long"]}},
      "relations": [{"with": {"entities": ["greyhound", "body"], "attributes": []}},
                    {"with": {"entities": ["greyhound", "legs"], "attributes": []}}]}),
    ("A red apple on a wooden table in the kitchen at night.",
     {"context": ["in the kitchen", "at night"], "entities": {"apple": {"attributes": ["red"]},
                                                              "table": {"attributes": ["wooden"]}},
      "relations": [{"on": {"entities": ["apple", "table"], "attributes": []}}]}),
    ("A child gently hugging a puppy.",
     {"context": [], "entities": {"child": {"attributes": []}, "puppy": {"attributes": []}},
      "relations": [{"hugging": {"entities": ["child", "puppy"], "attributes": ["gently"]}}]}),
    ("Three fuzzy kittens sleeping.",
     {"context": [], "entities": {"kittens": {"attributes": ["three", "fuzzy", "sleeping"]}}, "relations": []}),
])
def test_rule_parser(text: str, expected: dict) -> None:
    got = parse_text(text).to_paper_dict()
    for e in got["entities"].values():
        e.pop("article")
    assert got == expected


def test_parser_round_trips_its_own_renderings() -> None:
    for text in ("A bird flying over a lake.", "A dog wagging its tail.", "Two red apples next to a blue cup.",
                 "A child gently hugging a puppy in the park."):
        assert parse_text(text).render() == text
