"""DyEval's built-in suite and its part of the demo project.

`builtin_suite` — the paper's nine initial topics (four perspectives) with n_i template prompts
each, as generic prompts (their scene graphs in ``attrs``), for `main.py suite --method dyeval`
and `generate --method dyeval --suite builtin`.

`build_demo` grows one tree in a project the way an auditor would, with the scripted model of
known weaknesses (`weakness.DEMO_WEAKNESSES`) standing in for the text-to-image model and for
the judges: root "Material objects" → template prompts → procedural images → judgements read
from each image's truth (label events of annotator "demo-oracle") → the root passes and gets
three child topics, two of which are accepted (the third is left for the auditor to decide) →
their prompts, images and judgements → a failing child ("Vehicles": the model cannot draw most
vehicles) gets one failure location, run to its end with the same scripted judgements, which
finds the object the model fails on → the passing child gets its proposals, and (full demo)
its first one is accepted and tested one level deeper. The failing child's other bugs, and the
open proposals, are left as the auditor's next steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...dataset import Prompts
from .config import DyEvalConfig
from .runner import DyEvalRunner

DEMO_TREE = "demo"
DEMO_ROOT = "Material objects"
ORACLE = "demo-oracle"


def builtin_suite(n_i: int = 5, seed: int = 0, topics: Sequence[str] | None = None) -> Prompts:
    """The nine initial topics' template prompts (or those of the topics named)."""
    from .engine import add_perspective_roots, write_prompts
    from .link import request_prompts
    from .templates import TemplateLM
    from .tree import TestTree

    t = TestTree.new(DyEvalConfig(n_i=int(n_i), lm_seed=int(seed)), "suite")
    roots = add_perspective_roots(t, list(topics) if topics else None)
    lm = TemplateLM(int(seed))
    for r in roots:
        write_prompts(t, r, lm)
    return request_prompts(t, list(t.prompts))


def judge_by_truth(runner: DyEvalRunner, annotator: str = ORACLE) -> int:
    """Label every image waiting for a judgement with its truth (the scripted judge)."""
    truth = runner.project.samples.truth()
    rows = [(j.image_id, str(truth[j.image_id]["expected"]), annotator, None)
            for j in runner.tree.judging_queue() if j.image_id in truth]
    return runner.import_labels(rows, source="demo")


def build_demo(project: Any, *, small: bool = False,
               progress: Callable[[int, int], None] | Any = None) -> dict[str, Any]:
    cfg = DyEvalConfig(n_i=3 if small else 5, n_x=2 if small else 4, d_max=2 if small else 3)
    size = 128 if small else 256
    r = DyEvalRunner.create(project, cfg, tree_id=DEMO_TREE, topics=[DEMO_ROOT])
    t = r.tree
    steps = 6
    done = [0]

    def tick() -> None:
        done[0] += 1
        if callable(progress):
            progress(done[0], steps)
        elif progress is not None and hasattr(progress, "update"):
            progress.update(done[0], steps)

    def grow() -> None:
        r.run_automatic(("write",), confirm=True)
        r.render_inline(size=size)
        judge_by_truth(r)

    grow()  # the root: prompts, images, judgements
    tick()
    r.run_automatic(("propose",))
    root = next(iter(t.nodes))
    props = list(t.nodes[root].proposal_ids)
    # accept all but one; the failing topic first so that the demo digs into it
    failing = [p for p in props if t.proposals[p].text.lower() == "vehicles"]
    order = failing + [p for p in props if p not in failing]
    if order != props:
        r.reorder(root, order)
    for pid in order[:-1]:
        r.accept(pid)
    tick()
    grow()  # the accepted children
    tick()
    bad = [n for n in t.bfs_order() if t.wants_location(n) and t.bugs(n)]
    if bad:
        node = bad[0]
        r.start_location(node, t.bugs(node)[0])
        for _ in range(40):  # every split round: images of the new steps, judged
            if not r.tree.generation_requests():
                break
            r.render_inline(size=size)
            judge_by_truth(r)
    tick()
    r.run_automatic(("propose",))  # passing children get their proposals (up to d_max)
    if not small:  # one level deeper under the first passing child: its first proposal
        deeper = [n for n in t.bfs_order() if t.nodes[n].depth == 2 and t.nodes[n].proposal_ids]
        if deeper:
            r.accept(t.nodes[deeper[0]].proposal_ids[0])
            grow()
            r.run_automatic(("propose",))
    tick()
    s = t.tree_summary()
    triggers = [tr.text for loc in t.locations.values() for tr in loc.machine.triggers]
    tick()
    return {"method": "dyeval", "tree_id": t.tree_id, "nodes": len(t.nodes), "prompts": len(t.prompts),
            "images": len(t.images), "tests": s.tests, "apr": s.apr, "bugs": s.bugs,
            "locations": len(t.locations), "triggers": triggers,
            "next": [a.text for a in r.next_actions()]}
