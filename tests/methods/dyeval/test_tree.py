"""The test tree: derived node states, events (replay = snapshot), refusals, integration queries."""

from __future__ import annotations

import json

import pytest

from workstation.methods.dyeval import (
    ACCEPTED,
    DONE,
    EDITED,
    EXPANDING,
    GENERATING,
    JUDGED,
    JUDGING,
    LABEL_SCHEME,
    LOCATING,
    NEW,
    PROMPTS_WRITTEN,
    REJECTED,
    DyEvalConfig,
    Provenance,
    TestTree,
    parse_text,
)
from workstation.types import WorkstationError
from workstation.util import dumps

KIMONO = "A luxurious silk kimono with elegant floral embroidery in vibrant hues."


def _images(t: TestTree, owner: str, n: int) -> list[str]:
    have = len(t.images)
    ids = [f"i{have + j}" for j in range(n)]
    for j, iid in enumerate(ids):
        t.add_image(owner, iid, f"images/{iid}.png", seed=j)
    return ids


def test_label_scheme() -> None:
    assert (LABEL_SCHEME.task, LABEL_SCHEME.target, LABEL_SCHEME.values, LABEL_SCHEME.keys) == (
        "dyeval.image", "image", ("PASS", "FAIL"), ("P", "F"))
    assert LABEL_SCHEME.value_for_key("f") == "FAIL"


def test_a_low_node_goes_new_to_done_through_location_driven_by_image_labels() -> None:
    t = TestTree.new(DyEvalConfig(n_i=2, n_x=2))
    n = t.add_root("Culture", "Context")
    assert t.node_state(n) == NEW
    p1 = t.add_prompt(n, KIMONO, parse_text(KIMONO))
    p2 = t.add_prompt(n, "A red lantern.", parse_text("A red lantern."))
    assert t.node_state(n) == PROMPTS_WRITTEN
    assert t.generation_requests() == []  # nothing is generated before confirmation
    t.confirm_prompts(n)
    assert t.node_state(n) == GENERATING
    reqs = t.generation_requests()
    assert [(r.owner, r.kind, r.count, r.have) for r in reqs] == [(p1, "prompt", 2, 0), (p2, "prompt", 2, 0)]
    a = _images(t, p1, 2)
    b = _images(t, p2, 1)
    assert [(r.owner, r.count, r.have) for r in t.generation_requests()] == [(p2, 1, 1)]
    b += _images(t, p2, 1)
    assert t.node_state(n) == JUDGING
    assert [j.image_id for j in t.judging_queue()] == a + b
    with pytest.raises(WorkstationError, match="not one of PASS, FAIL"):
        t.record_label(a[0], "F")  # a key, not a value: the UI maps keys with LABEL_SCHEME.value_for_key
    for i in a:
        t.record_label(i, "FAIL")
    t.record_label(b[0], "PASS")
    t.record_label(b[1], "pass")  # case-insensitive, stored as PASS
    assert t.images[b[1]].label == "PASS"
    # APR = 2/4 = 0.5 < locate_apr 0.6 → failure location of the bug p1
    assert t.node_state(n) == JUDGED
    assert [(x.kind, x.detail) for x in t.pending_actions()] == [("start_locations", (p1,))]
    lid = t.start_location(n, p1)
    assert t.node_state(n) == LOCATING
    # the location's steps are generated and judged like prompts; the judge fails any kimono
    while not t.locations[lid].machine.done:
        for r in t.generation_requests():
            assert r.kind == "step" and r.owner.startswith(f"{lid}/s")
            _images(t, r.owner, r.count)
        for j in t.judging_queue():
            t.record_label(j.image_id, "FAIL" if "kimono" in j.text else "PASS")
    m = t.locations[lid].machine
    assert [tr.text for tr in m.triggers] == ["A kimono."]
    assert [s.text for s in m.rendered_steps()] == [
        "A luxurious silk kimono with elegant floral embroidery.", "Elegant floral embroidery in vibrant hues.",
        "A luxurious silk kimono.", "Elegant floral embroidery.", "A luxurious kimono.", "A silk kimono.",
        "A kimono."]
    assert t.node_state(n) == LOCATING
    assert [x.kind for x in t.pending_actions()] == ["reflect"]
    t.set_reflection(n, "Kimonos fail.", Provenance("templates", "templates"))
    assert t.node_state(n) == DONE
    assert t.pending_actions() == []
    assert t.node_summary(n).tests == 4  # the 14 step images are not tests of the tree


def test_a_high_node_expands_breadth_first_with_proposal_decisions_and_order() -> None:
    t = TestTree.new(DyEvalConfig(n_i=1, n_x=1, d_max=2))
    n = t.add_root("Material objects", "Object")
    p = t.add_prompt(n, "A red apple.")
    t.confirm_prompts(n)
    (i,) = _images(t, p, 1)
    t.record_label(i, "PASS")
    assert t.node_state(n) == JUDGED
    assert [x.kind for x in t.pending_actions()] == ["propose_topics"]
    a, b, c = t.add_proposals(n, ["Animals", "Vehicles", "Food"], Provenance("templates", "templates"))
    assert t.node_state(n) == EXPANDING
    ca = t.decide_proposal(a, ACCEPTED)
    cb = t.decide_proposal(b, EDITED, "Boats")
    assert t.decide_proposal(c, REJECTED) is None
    assert t.node_state(n) == DONE
    assert (t.proposals[b].state, t.proposals[b].text, t.proposals[b].original_text) == (EDITED, "Boats", "Vehicles")
    assert [t.nodes[x].topic for x in t.bfs_order()] == ["Material objects", "Animals", "Boats"]
    assert t.nodes[ca].depth == 2 and t.nodes[ca].parent_id == n
    # the auditor changes the order: Boats before Animals
    t.reorder_proposals(n, [b, a, c])
    assert [t.nodes[x].topic for x in t.bfs_order()] == ["Material objects", "Boats", "Animals"]
    assert t.nodes[n].child_ids == [cb, ca]
    # depth 2 = d_max: no proposals below
    with pytest.raises(WorkstationError, match="deepest level"):
        t.add_proposals(ca, ["Dogs"])
    with pytest.raises(WorkstationError, match="already accepted"):
        t.decide_proposal(a, REJECTED)


def test_replaying_the_event_log_gives_the_same_tree_and_snapshots_round_trip() -> None:
    t = TestTree.new(DyEvalConfig(n_i=1, n_x=2, premark_threshold=25.0))
    n = t.add_root("Culture", "Context")
    p = t.add_prompt(n, "A silk kimono.", parse_text("A silk kimono."))
    t.confirm_prompts(n)
    ims = _images(t, p, 2)
    t.premark(ims[0], 12.5)
    t.record_label(ims[0], "FAIL", "ann")
    t.record_label(ims[1], "FAIL", "ann")
    lid = t.start_location(n, p)
    (step,) = t.locations[lid].machine.pending()
    s_ims = _images(t, t.locations[lid].owner(step.step_id), 2)
    t.record_label(s_ims[0], "PASS", "ann")
    # half-way through a step: replay and snapshot agree, through JSON text
    events = json.loads(dumps(t.log))
    assert TestTree.from_events(events).to_dict() == t.to_dict()
    assert TestTree.from_dict(json.loads(dumps(t.to_dict()))).to_dict() == t.to_dict()
    # continue on the restored tree: "A kimono." passes → "silk" is the trigger
    r = TestTree.from_events(events)
    r.record_label(s_ims[1], "PASS", "ann")
    (trig,) = r.locations[lid].machine.triggers
    assert (trig.kind, trig.cell_text) == ("attribute", "A silk kimono.")
    assert [e["seq"] for e in r.log] == list(range(1, len(r.log) + 1))


def test_refused_events_change_nothing() -> None:
    t = TestTree.new(DyEvalConfig(n_i=1, n_x=1))
    n = t.add_root("Style")
    p = t.add_prompt(n, "A cat as a watercolor painting.")
    snapshot = t.to_dict()
    bad = [
        lambda: t.add_image(p, "x"),  # prompts not confirmed
        lambda: t.record_label("nope", "PASS"),
        lambda: t.add_prompt(n, "   "),
        lambda: t.add_prompt("n9", "A dog."),
        lambda: t.confirm_prompts("n9"),
        lambda: t.apply({"kind": "teleport"}),
        lambda: t.apply({"kind": "label"}),  # malformed
        lambda: t.start_location(n, p),  # not a bug
        lambda: t.decide_proposal("t7", ACCEPTED),
    ]
    for f in bad:
        with pytest.raises(WorkstationError):
            f()
        assert t.to_dict() == snapshot
    t.confirm_prompts(n)
    t.add_image(p, "x")
    snapshot = t.to_dict()
    for f in (lambda: t.add_image(p, "y"),  # already has its n_x images
              lambda: t.add_image(p, "x"),
              lambda: t.record_label("x", "MAYBE"),
              lambda: t.premark("x", float("nan")),
              lambda: t.remove_prompt(p)):  # it has images
        with pytest.raises(WorkstationError):
            f()
        assert t.to_dict() == snapshot


def test_judging_queue_puts_premarked_images_last_and_latest_label_wins() -> None:
    t = TestTree.new(DyEvalConfig(n_i=1, n_x=3, premark_threshold=20.0))
    n = t.add_root("Knowledge")
    p = t.add_prompt(n, "A windmill in 17th century holland.")
    t.confirm_prompts(n)
    a, b, c = _images(t, p, 3)
    t.premark(a, 10.0)
    q = t.judging_queue()
    assert [(j.image_id, j.premark_fail) for j in q] == [(b, False), (c, False), (a, True)]
    assert [j.image_id for j in t.judging_queue(include_premarked=False)] == [b, c]
    t.record_label(b, "PASS", "ann1")
    t.record_label(b, "FAIL", "ann2")
    assert (t.images[b].label, t.images[b].annotator) == ("FAIL", "ann2")
    assert [j.image_id for j in t.judging_queue()] == [c, a]


def test_prompts_can_be_removed_and_graphs_corrected_before_generation() -> None:
    t = TestTree.new()
    n = t.add_root("Implicit relations", "Relation")
    p = t.add_prompt(n, "A teacher guiding a student.")
    q = t.add_prompt(n, "A teacher guiding a pupil.")
    t.remove_prompt(q)
    assert t.nodes[n].prompt_ids == [p]
    g = parse_text("A teacher guiding a student.")
    t.set_prompt_graph(p, g)
    assert t.prompts[p].graph == g and t.prompts[p].graph_provenance.source == "human"
    # ids are never reused
    assert t.add_prompt(n, "A mother comforting her child.") == "p3"


def test_the_paper_setting_every_node_expands_and_low_nodes_are_also_located() -> None:
    """expand_apr = 0 (the paper's runs) with locate_apr 0.6: a failing node is located, then
    expanded."""
    t = TestTree.new(DyEvalConfig(n_i=1, n_x=1, expand_apr=0.0))
    n = t.add_root("Culture")
    p = t.add_prompt(n, "A silk kimono.", parse_text("A silk kimono."))
    t.confirm_prompts(n)
    (i,) = _images(t, p, 1)
    t.record_label(i, "FAIL")
    assert t.node_state(n) == JUDGED
    lid = t.start_location(n, p)
    (s,) = t.locations[lid].machine.pending()
    (si,) = _images(t, t.locations[lid].owner(s.step_id), 1)
    t.record_label(si, "FAIL")
    t.set_reflection(n, "x x x")
    assert t.node_state(n) == EXPANDING
    assert [a.kind for a in t.pending_actions()] == ["propose_topics"]
