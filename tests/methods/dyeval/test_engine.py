"""The automatic loop with the template writer and a scripted judge: a full tree of the paper's
shape, resumable from its events at any point."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from workstation.methods.dyeval import (
    DONE,
    PERSPECTIVES,
    DyEvalConfig,
    TemplateLM,
    TestTree,
    add_perspective_roots,
    advance,
    subtopic_names,
)

ROOT = Path(__file__).resolve().parents[3]


def _run(t: TestTree, judge, lm: TemplateLM, *, restart_every: int = 0) -> TestTree:  # type: ignore[no-untyped-def]
    k = len(t.images)
    for rnd in range(100):
        reqs = t.generation_requests()
        for r in reqs:
            for j in range(r.count):
                k += 1
                t.add_image(r.owner, f"img{k}", f"images/{k}.png", seed=r.have + j)
        q = t.judging_queue()
        for item in q:
            t.record_label(item.image_id, judge(item.text), "script")
        n = advance(t, lm, auto_confirm=True, auto_accept=True)
        if restart_every and rnd % restart_every == 0:
            t = TestTree.from_events(list(t.log))  # a restart: resume from the stored events
        if not reqs and not q and not n:
            return t
    raise AssertionError("the loop did not settle")


def test_the_nine_initial_topics_are_the_papers_four_perspectives() -> None:
    assert [p.name for p in PERSPECTIVES] == ["Object", "Relation", "Attribute", "Context"]
    assert subtopic_names() == ["Material objects", "Abstract objects", "Explicit relations", "Implicit relations",
                                "Static attributes", "Dynamic attributes", "Style", "Culture", "Knowledge"]
    t = TestTree.new()
    roots = add_perspective_roots(t)
    assert [(t.nodes[r].topic, t.nodes[r].perspective, t.nodes[r].depth) for r in roots[:3]] == [
        ("Material objects", "Object", 1), ("Abstract objects", "Object", 1), ("Explicit relations", "Relation", 1)]


def test_a_passing_root_grows_the_papers_13_node_tree() -> None:
    """Everything passes: 1 + 3 + 9 nodes (§5.2), breadth-first, 13 × 5 prompts × 4 images."""
    t = TestTree.new(DyEvalConfig())
    (root,) = add_perspective_roots(t, ["Material objects"])
    t = _run(t, lambda text: "PASS", TemplateLM())
    order = t.bfs_order(root)
    assert [t.nodes[n].depth for n in order] == [1] + [2] * 3 + [3] * 9
    assert all(t.node_state(n) == DONE for n in order)
    s = t.tree_summary()
    assert (s.prompts, s.tests, s.passes, s.bugs) == (65, 260, 260, 0)
    assert t.accumulated_bugs(root) == [0] * 13
    assert not t.locations


def test_failures_are_located_reflected_and_the_run_resumes_from_events() -> None:
    def judge(text: str) -> str:
        return "FAIL" if ("kimono" in text or "sari" in text) else "PASS"

    t = TestTree.new(DyEvalConfig(n_i=4, n_x=2))
    add_perspective_roots(t, ["Culture"])
    a = _run(t, judge, TemplateLM())
    t2 = TestTree.new(DyEvalConfig(n_i=4, n_x=2))
    add_perspective_roots(t2, ["Culture"])
    b = _run(t2, judge, TemplateLM(), restart_every=1)
    assert a.to_dict() == b.to_dict()  # restarting after every round changes nothing
    triggers = {tr.text for loc in a.locations.values() for tr in loc.machine.triggers}
    assert triggers and triggers <= {"A kimono.", "A sari."}
    for loc in a.locations.values():
        node = a.nodes[loc.node_id]
        assert node.reflection is not None and "Failure trigger" in node.reflection.text
    assert all(a.node_state(n) == DONE for n in a.nodes)


def test_importing_the_package_loads_no_heavy_modules() -> None:
    code = ("import sys, workstation.methods.dyeval as d; d.TemplateLM(); "
            "print(sorted(m for m in ('torch', 'transformers', 'PySide6') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
