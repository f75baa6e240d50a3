"""The template writer and the strict parsers of LM output."""

from __future__ import annotations

import pytest

from workstation.methods.dyeval import (
    ParseFailure,
    ReflectionContext,
    TemplateLM,
    TestRecord,
    TopicContext,
    TriggerNote,
    deduplicate,
    parse_graph_json,
    parse_labelled_lines,
    parse_reflection,
    parse_text,
    subtopic_names,
)
from workstation.methods.dyeval.templates import choose_recipe, plural


@pytest.mark.parametrize("topic, recipe", [
    ("Material objects", "object"), ("Abstract objects", "abstract"), ("Explicit relations", "explicit"),
    ("Implicit relations", "implicit"), ("Static attributes", "static"), ("Dynamic attributes", "dynamic"),
    ("Style", "style"), ("Culture", "culture"), ("Knowledge", "knowledge"), ("Counting and groups", "count"),
])
def test_each_initial_topic_has_its_recipe(topic: str, recipe: str) -> None:
    assert choose_recipe(TopicContext(topic)) == recipe


def test_prompts_are_deterministic_distinct_and_carry_their_graphs() -> None:
    lm = TemplateLM(seed=1)
    for topic in subtopic_names():
        for depth in (1, 3):
            ctx = TopicContext(topic, depth=depth)
            a = lm.write_prompts(ctx, 5)
            assert [w.text for w in a.value] == [w.text for w in lm.write_prompts(ctx, 5).value]
            assert len(a.value) == 5
            texts = [w.text for w in a.value]
            assert deduplicate(texts).kept == (0, 1, 2, 3, 4)
            for w in a.value:
                assert w.graph.render() == w.text  # the graph is the prompt's, by construction
                assert w.text[0].isupper() and w.text.endswith(".")
            assert a.provenance.source == "templates" and a.provenance.settings["seed"] == 1
    assert TemplateLM(seed=2).write_prompts(TopicContext("Culture"), 5).value != \
        TemplateLM(seed=1).write_prompts(TopicContext("Culture"), 5).value


def test_deeper_nodes_get_harder_prompts_and_avoid_existing_ones() -> None:
    lm = TemplateLM()
    shallow = lm.write_prompts(TopicContext("Explicit relations", depth=1), 5).value
    deep = lm.write_prompts(TopicContext("Explicit relations", depth=3), 5).value
    assert sum(w.graph.size for w in deep) > sum(w.graph.size for w in shallow)
    first = [w.text for w in shallow]
    again = lm.write_prompts(TopicContext("Explicit relations", depth=1, existing=tuple(first)), 5).value
    assert not {w.text for w in again} & set(first)


def test_anchor_nouns_and_plurals() -> None:
    dogs = TemplateLM().write_prompts(TopicContext("Dogs", path=("Material objects", "Animals"), depth=3), 4).value
    assert all(any(o.name == "dog" for o in w.graph.objects) for w in dogs)
    assert [plural(w) for w in ("cat", "box", "cherry", "mouse", "day")] == ["cats", "boxes", "cherries", "mice", "days"]


def test_topic_proposals_from_tables_expansion_and_failures() -> None:
    lm = TemplateLM()
    got = lm.propose_topics(TopicContext("Material objects"), 3).value
    assert len(got) == 3 and set(got) <= {"Animals", "Vehicles", "Furniture", "Food", "Plants", "Clothing"}
    got = lm.propose_topics(TopicContext("Dog-human relationships"), 3).value
    assert got == ["Dog-human relationships with unusual colors", "Dog-human relationships in relation to people",
                   "Dog-human relationships in a cultural setting"]
    recs = (TestRecord("Culture", "A silk kimono at a tea ceremony.", 0),
            TestRecord("Culture", "A red kimono in the rain.", 0),
            TestRecord("Culture", "A red lantern in the rain.", 1))
    got = lm.propose_topics(TopicContext("Culture", records=recs, existing=("Festivals",)), 3).value
    assert got[0] == "Culture involving kimono" and "Festivals" not in got


def test_rule_reflection_summarises_figures_triggers_and_words() -> None:
    ctx = ReflectionContext(
        "Culture",
        records=(TestRecord("Culture", "A silk kimono at a tea ceremony.", 0),
                 TestRecord("Culture", "A red lantern in the rain.", 1)),
        triggers=(TriggerNote("element", "A kimono.", "", "A kimono.", ("object kimono",)),
                  TriggerNote("element", "A cloud.", "A tiny black crescent moon.",
                              "A tiny black crescent moon within a cloud.")),
        tests=8, passes=4, bugs=1, rho=0.75)
    text = TemplateLM().reflect(ctx).value
    lines = text.splitlines()
    assert lines[0] == ("1. Topic 'Culture': 8 text-image tests, 4 passed (APR 0.50); 1 of 2 test inputs are "
                        "bugs (pass rate < 0.75).")
    assert lines[1] == "2. Failure trigger: 'A kimono.' fails on its own (object kimono)."
    assert lines[2].startswith("3. Combination failure: 'A cloud.' fails together with 'A tiny black crescent moon.'")
    assert "kimono (1 failing / 0 passing)" in text


def test_strict_parsers() -> None:
    out = "Sure!\nTest Input: A red cat.\n2. Test Input 2: \"A blue dog.\"\nTest Input: <OUTPUT2>\nTest input: A red cat."
    with pytest.raises(ParseFailure, match="expected 3 'Test Input:' lines, found 2"):
        parse_labelled_lines(out, "Test Input", 3)
    assert parse_labelled_lines(out, "Test Input", 2) == ["A red cat.", "A blue dog."]
    assert parse_labelled_lines("- Next Test Topic: Dogs\n- Next Test Topic: Cats", "Next Test Topic", 2) == ["Dogs", "Cats"]
    long = "Test Input: " + "word " * 80
    with pytest.raises(ParseFailure):
        parse_labelled_lines(long, "Test Input", 1, max_words=77)
    g = parse_graph_json('Here: {"context": [], "entities": {"moon": {"attributes": ["tiny"]}, "cloud": '
                         '{"attributes": []}}, "relations": [{"within": {"entities": ["moon", "cloud"]}}]} ok')
    assert g.render() == "A tiny moon within a cloud."
    # loose JSON: nulls and numbers where names belong are skipped or read as text
    loose = parse_graph_json('{"entities": {"cat": {"attributes": [null, "red"]}, "": {}}, '
                             '"relations": [{"on": {"entities": ["cat", null, "mat"]}}], "context": [null, "at night"]}')
    assert loose.render() == "A red cat on a mat at night."
    for bad, why in (("no json here", "no JSON"), ('{"entities": {}', "invalid JSON"),
                     ('{"foo": 1}', "no 'entities'"), ('{"entities": {}}', "empty")):
        with pytest.raises(ParseFailure, match=why):
            parse_graph_json(bad)
    assert parse_reflection("  1. The model fails kimonos.  ") == "1. The model fails kimonos."
    with pytest.raises(ParseFailure):
        parse_reflection("?? !!")
    assert TemplateLM().parse_scene_graph("A red cat.").value == parse_text("A red cat.")
