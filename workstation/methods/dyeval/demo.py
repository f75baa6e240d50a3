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

The tree's automatic pre-mark is the demo's own score, `DEMO_SCORER` ("demo-objects"), not a
CLIPScore: every image is scored when it arrives, before it is judged, by how well the image shows
the objects its prompt asks for — for each object the look the demo draws it with (its shape and
hue: a demo class's own, another name's by hash, a colour word's hue), found from the pixels
(`workstation.demo.detector.look_scores`); the image's score is that of its worst-shown object
(0-100), pre-marked FAIL below `DEMO_THRESHOLD`. It sees an object that was drawn as something
else or left out; it does not see attributes other than colour, relations or context, and an
object whose look its colour does not tell (white, grey, black, see-through, "vibrant") is not
scored — an image with no such object gets no score and no pre-mark; an object drawn mostly hidden
by another scores low.
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
#: the demo's pre-mark scorer (module docstring) and its threshold on its 0-100 score
DEMO_SCORER = "demo-objects"
DEMO_THRESHOLD = 30.0
#: an asked object whose colour is this unsaturated is not scored (the detector reads saturated colours)
_MIN_SATURATION = 0.5
_RANDOM_HUE = frozenset({"vibrant", "colorful", "pastel"})


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


def asked_looks(graph: Any) -> list[tuple[str, float] | None]:
    """The look (shape, hue in degrees) the demo draws each object of a scene graph with, None
    where its colour does not tell it (module docstring)."""
    from .render import COLOUR_HSV, SEE_THROUGH, _style

    out: list[tuple[str, float] | None] = []
    for o in graph.objects:
        shape, hsv = _style(o.name)
        low = [a.lower() for a in o.attributes]
        for a in low:
            if a in COLOUR_HSV:
                hsv = COLOUR_HSV[a]
        readable = not any(a in _RANDOM_HUE or a in SEE_THROUGH for a in low) and hsv[1] >= _MIN_SATURATION
        out.append((shape, float(hsv[0])) if readable else None)
    return out


def demo_object_score(graph: Any, img: Any) -> float | None:
    """`DEMO_SCORER`'s score of one image of ``graph``: 100 × the look score of its worst-shown
    object whose look is known; None when no object's is."""
    from ...demo.detector import look_scores

    looks = [lk for lk in asked_looks(graph) if lk is not None]
    if not looks:
        return None
    return round(100.0 * float(min(look_scores(img, looks))), 4)


def premark_demo_images(runner: DyEvalRunner) -> int:
    """Score every image of the tree that has no pre-mark score yet with `DEMO_SCORER` and record
    it as the image's pre-mark (the tree's config names the scorer and the threshold)."""
    from ...jobs.chunks import read_image
    from .link import owner_info
    from .parse import parse_text

    t = runner.tree
    n = 0
    for iid in sorted(t.images):
        img = t.images[iid]
        if img.clip_score is not None or not img.path:
            continue
        info = owner_info(t, img.owner)
        graph = info["graph"] if info["graph"] is not None else parse_text(str(info["text"]))
        score = demo_object_score(graph, read_image(runner.project.folder / img.path))
        if score is not None:
            t.premark(iid, score)
            n += 1
    return n


def build_demo(project: Any, *, small: bool = False,
               progress: Callable[[int, int], None] | Any = None) -> dict[str, Any]:
    cfg = DyEvalConfig(n_i=3 if small else 5, n_x=2 if small else 4, d_max=2 if small else 3,
                       premark_threshold=DEMO_THRESHOLD, premark_scorer=DEMO_SCORER)
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
        premark_demo_images(r)
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
            premark_demo_images(r)
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
