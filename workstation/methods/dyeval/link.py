"""The tree and the project kept in step: prompts out, images, judgements and pre-marks in.

See `store.py` for how a tree lives in a project. `sync_tree` brings into a tree whatever the
project holds that the tree has not recorded yet — samples of its prompts (images), the latest
human judgements of those samples, CLIPScore pre-marks — each as one tree event, and repeats
until nothing changes (a judgement can finish a failure-location step, whose successors may
already have images from an earlier session).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...dataset import Prompts
from .store import METHOD, TASK
from .tree import GenerationRequest, TestTree


def prompt_id_for(tree_id: str, owner: str) -> str:
    """The project prompt id of a tree prompt ("p3") or a location step ("L1/s4")."""
    return f"dyeval-{tree_id}-{owner.replace('/', '-')}"


def prompt_prefix(tree_id: str) -> str:
    return f"dyeval-{tree_id}-"


def owners(tree: TestTree) -> dict[str, str]:
    """project prompt id → owner, for every prompt and rendered step of the tree."""
    out = {prompt_id_for(tree.tree_id, p): p for p in tree.prompts}
    for loc in tree.locations.values():
        for s in loc.machine.steps[1:]:
            if s.reused_from is None:
                o = loc.owner(s.step_id)
                out[prompt_id_for(tree.tree_id, o)] = o
    return out


def owner_info(tree: TestTree, owner: str) -> dict[str, Any]:
    """What a project prompt of ``owner`` carries: kind, node, text, graph, group."""
    if owner in tree.prompts:
        p = tree.prompts[owner]
        node = tree.nodes[p.node_id]
        return {"kind": "prompt", "node": p.node_id, "text": p.text, "graph": p.graph, "topic": node.topic,
                "group": f"{tree.tree_id}/{p.node_id}"}
    lid, _, step = owner.partition("/s")
    loc = tree.locations[lid]
    s = loc.machine.step(int(step))
    return {"kind": "step", "node": loc.node_id, "text": s.text, "graph": s.graph,
            "topic": tree.nodes[loc.node_id].topic, "group": f"{tree.tree_id}/{owner}", "location": lid,
            "step": s.step_id, "prompt": loc.prompt_id}


def request_prompts(tree: TestTree, owner_ids: Iterable[str]) -> Prompts:
    """Project prompts (method "dyeval") for these owners (see `store.py`)."""
    ids, texts, ents, attrs, groups = [], [], [], [], []
    for o in dict.fromkeys(owner_ids):
        info = owner_info(tree, o)
        g = info["graph"]
        ids.append(prompt_id_for(tree.tree_id, o))
        texts.append(info["text"])
        ents.append(tuple(ob.name.lower() for ob in g.objects) if g is not None else ())
        a: dict[str, Any] = {"tree": tree.tree_id, "owner": o, "kind": info["kind"], "node": info["node"],
                             "topic": info["topic"], "graph": None if g is None else g.to_dict()}
        if info["kind"] == "step":
            a.update(location=info["location"], step=info["step"], prompt=info["prompt"])
        attrs.append(a)
        groups.append(info["group"])
    return Prompts.build(ids, texts, method=METHOD, suite=f"dyeval:{tree.tree_id}", entities=ents, attrs=attrs,
                         group_id=groups)


def seeds_of(request: GenerationRequest) -> tuple[int, ...]:
    return tuple(range(request.have, request.have + request.count))


@dataclass
class SyncReport:
    images: int = 0
    labels: int = 0
    premarks: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> int:
        return self.images + self.labels + self.premarks

    def __iadd__(self, o: "SyncReport") -> "SyncReport":
        self.images += o.images
        self.labels += o.labels
        self.premarks += o.premarks
        self.notes.extend(o.notes)
        return self


def _wanting(tree: TestTree) -> dict[str, int]:
    """owner → how many more images it takes now."""
    return {r.owner: r.count for r in tree.generation_requests()}


def sync_images(project: Any, tree: TestTree) -> int:
    """Add the project's samples of the tree's prompts that the tree lacks (lowest seeds first; a
    seed an owner already has is not taken twice)."""
    want = _wanting(tree)
    if not want:
        return 0
    pid_owner = {prompt_id_for(tree.tree_id, o): o for o in want}
    rows = project.con.execute(
        "SELECT sample_id, prompt_id, seed, image_path FROM samples WHERE starts_with(prompt_id, ?) "
        "ORDER BY seed, ord", [prompt_prefix(tree.tree_id)]).fetchall()
    added = 0
    for sid, pid, seed, path in rows:
        o = pid_owner.get(pid)
        if o is None or sid in tree.images or want.get(o, 0) <= 0:
            continue
        if any(tree.images[i].seed == int(seed) for i in tree._owner_images(o) or []):
            continue
        tree.add_image(o, sid, str(path or ""), int(seed))
        want[o] -= 1
        added += 1
    return added


def latest_judgements(project: Any, image_ids: Sequence[str], selection: Any = None
                      ) -> dict[str, tuple[str | None, str]]:
    """image id → (value, annotator) that counts under the label selection (the project's kept
    one for DyEval when none is given; `workstation.evaluation.selection`): by default per
    annotator the latest first-pass event (a consistency re-check measures the annotator, it does
    not judge the image again), then the most recent of those that hold a value. An image whose
    annotators disagree under a majority or unanimous rule is (`DISPUTED`, their names); an image
    every annotator took theirs back from is (None, "")."""
    from ...evaluation.selection import DISPUTED, resolve_project

    if not image_ids:
        return {}
    wanted = set(str(i) for i in image_ids)
    res = resolve_project(project, TASK, selection)
    out: dict[str, tuple[str | None, str]] = {}
    if len(res):
        ann = _annotators_of(project, wanted, res.selection)
        for t, v in zip(res.target_ids.tolist(), res.values.tolist()):
            if t in wanted:
                out[t] = (str(v), ann.get(t, ("", ""))[0] if v != DISPUTED else ", ".join(sorted(ann.get(t, ("", ""))[1])))
    # an image whose every selected label was taken back reads as no label
    for t in _with_events(project, wanted):
        out.setdefault(t, (None, ""))
    return out


def _annotators_of(project: Any, ids: set[str], selection: Any) -> dict[str, tuple[str, set[str]]]:
    """image id → (the annotator of its latest selected label, every annotator with one standing)."""
    rows = project.con.execute(
        "SELECT event_id, target_id, annotator, value, audit_set_id, source FROM label_events WHERE task = ? "
        "AND target_id IN (SELECT unnest(?)) ORDER BY event_id", [TASK, sorted(ids)]).fetchall()
    standing: dict[tuple[str, str], tuple[int, Any]] = {}
    for eid, t, a, v, aid, src in rows:
        if selection.counts(str(a), aid, src):
            standing[(str(t), str(a))] = (int(eid), None if selection.restricted and src == "undo-restore" else v)
    per: dict[str, list[tuple[int, str]]] = {}
    for (t, a), (eid, v) in standing.items():
        if v is not None:
            per.setdefault(t, []).append((eid, a))
    return {t: (max(lst)[1], {a for _e, a in lst}) for t, lst in per.items()}


def _with_events(project: Any, ids: set[str]) -> list[str]:
    return [str(r[0]) for r in project.con.execute(
        "SELECT DISTINCT target_id FROM label_events WHERE task = ? AND target_id IN (SELECT unnest(?))",
        [TASK, sorted(ids)]).fetchall()]


def sync_labels(project: Any, tree: TestTree, selection: Any = None) -> int:
    """Bring the judgements the label selection gives into the tree (a disputed image: no label,
    marked disputed)."""
    from ...evaluation.selection import DISPUTED

    ids = list(tree.images)
    changed = 0
    for iid, (value, annotator) in latest_judgements(project, ids, selection).items():
        img = tree.images[iid]
        disputed = value == DISPUTED
        v = None if disputed else value
        if img.label == v and img.disputed == disputed and (v is None or img.annotator == annotator):
            continue
        tree.record_label(iid, v, annotator, disputed=disputed)
        changed += 1
    return changed


def premark_scores(project: Any, tree: TestTree) -> tuple[str, dict[str, float]]:
    """(scorer id, image id → score) of the tree's pre-mark scorer: scores of any weights of that
    scorer against the image's own text; the scorer id with the most of them."""
    name = tree.config.premark_scorer
    ids = list(tree.images)
    if not ids or not name:
        return "", {}
    rows = project.con.execute(
        "SELECT sample_id, scorer, text, score FROM scores WHERE sample_id IN (SELECT unnest(?)) "
        "AND (scorer = ? OR starts_with(scorer, ?)) ORDER BY scorer", [ids, name, name + "@"]).fetchall()
    by: dict[str, dict[str, float]] = {}
    for sid, scorer, text, score in rows:
        img = tree.images[str(sid)]
        if score is None or text != tree.step_owner_text(img.owner):
            continue
        by.setdefault(str(scorer), {})[str(sid)] = float(score)
    if not by:
        return "", {}
    best = max(sorted(by), key=lambda s: len(by[s]))
    return best, by[best]


def sync_premarks(project: Any, tree: TestTree) -> int:
    if tree.config.premark_threshold is None:
        return 0
    _scorer, scores = premark_scores(project, tree)
    n = 0
    for iid, score in scores.items():
        img = tree.images[iid]
        if img.clip_score is not None and abs(img.clip_score - score) < 1e-9:
            continue
        tree.premark(iid, score)
        n += 1
    return n


def sync_tree(project: Any, tree: TestTree, *, max_rounds: int = 50, selection: Any = None) -> SyncReport:
    """Bring the project's images, judgements and pre-marks into the tree (see the module docstring)."""
    total = SyncReport()
    for _ in range(max_rounds):
        r = SyncReport(images=sync_images(project, tree))
        r.premarks = sync_premarks(project, tree)
        r.labels = sync_labels(project, tree, selection)
        total += r
        if not r.changed:
            break
    return total
