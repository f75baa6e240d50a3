"""The DyEval test tree: topics, prompts, images, judgements, proposals, failure locations.

A `TestTree` changes only through **events** — small JSON-safe dicts ``{"seq", "kind", ...}`` —
applied by `TestTree.apply` (every mutating method builds one and applies it). The event log
(`TestTree.log`) can be stored row by row and replayed (`TestTree.from_events`) to resume exactly;
the snapshot (`to_dict` / `from_dict`) holds the same state. Event kinds:

=====================  =================================================================
tree_created           tree_id, config
node_added             node_id, parent_id, topic, perspective, n_i, n_x, order, proposal_id
prompt_added           prompt_id, node_id, text, graph, provenance, graph_provenance
prompt_removed         prompt_id (only while it has no images)
prompt_graph_set       prompt_id, graph, provenance (the auditor corrects the parse)
prompts_confirmed      node_id (its prompts go to generation)
image_added            image_id, owner, path, seed (owner: a prompt id or "L<k>/s<step>")
image_premarked        image_id, clip_score, threshold, fail
label                  image_id, value (PASS/FAIL, or null: the label taken back), annotator — the latest
                       label wins
proposals_added        node_id, proposals [{proposal_id, text, order, provenance}]
proposal_decided       proposal_id, decision (accepted/edited/rejected), text, child_id
proposals_reordered    node_id, order [proposal ids]
location_started       location_id, node_id, prompt_id, graph
reflection_set         node_id, text, provenance
node_closed            node_id
=====================  =================================================================

A failure location's steps are not events: they follow deterministically from its graph and the
verdicts of its steps, which come from the images' labels (a step fails when its pass rate is
< ρ, like a prompt). A step's verdict is fixed when its last image is judged; a later change of
label is kept on the image but does not rewind the location.

Node states are *derived* from these facts (`node_state`), never stored, so they cannot drift:

new → prompts_written → generating → judging → judged → locating / expanding → done

* new: no prompts; prompts_written: prompts not yet confirmed (the auditor may edit, drop, add);
* generating: a confirmed prompt lacks some of its n_x images; judging: an image lacks a judgement;
* judged: judged, and neither failure location nor expansion has begun;
* locating: APR < locate_apr — failure location of the node's bugs, then a reflection;
* expanding: APR ≥ expand_apr and depth < d_max — child topics proposed, waiting for decisions;
* done: nothing left (or the auditor closed the node).

Integration queries: `generation_requests()` (what needs images now), `judging_queue()` (which
images wait for a human), `pending_actions()` (what the engine or the auditor does next).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...evaluation.base import LabelScheme
from ...types import WorkstationError
from .config import LIMIT_REASONS, LIMITS, DyEvalConfig
from .locate import FailureLocation
from .metrics import FAIL, PASS, Outcome, Summary, outcome, summarize
from .provenance import HUMAN_PROVENANCE, Provenance
from .scene_graph import SceneGraph

MAX_TOPIC_CHARS = 1000  # characters of a node's topic
MAX_PROMPT_CHARS = 4000  # characters of a prompt

LABEL_SCHEME = LabelScheme(task="dyeval.image", target="image", values=(PASS, FAIL), keys=("P", "F"),
                           titles=("Pass", "Fail"), title="Does the image show what the text says?")

NEW, PROMPTS_WRITTEN, GENERATING, JUDGING, JUDGED, LOCATING, EXPANDING, DONE = (
    "new", "prompts_written", "generating", "judging", "judged", "locating", "expanding", "done")
NODE_STATES = (NEW, PROMPTS_WRITTEN, GENERATING, JUDGING, JUDGED, LOCATING, EXPANDING, DONE)

PROPOSED, ACCEPTED, EDITED, REJECTED = "proposed", "accepted", "edited", "rejected"
PROPOSAL_STATES = (PROPOSED, ACCEPTED, EDITED, REJECTED)

FORMAT = "dyeval.tree"
VERSION = 1


def _graph(d: Mapping[str, Any] | None) -> SceneGraph | None:
    return None if d is None else SceneGraph.from_dict(d)


@dataclass
class ImageRecord:
    """One generated image of a prompt or of a location step, with its judgements."""

    image_id: str
    owner: str
    path: str = ""
    seed: int | None = None
    label: str | None = None  # latest human label
    annotator: str = ""
    label_seq: int = 0  # event seq of that label
    clip_score: float | None = None
    premark_fail: bool = False  # CLIPScore pre-mark, kept apart from the human label
    disputed: bool = False  # annotators disagree under the label selection: no label counts

    def effective(self, premark_counts: bool) -> str | None:
        """The judgement that counts: the human label, else (if configured) the FAIL pre-mark."""
        if self.label is not None:
            return self.label
        return FAIL if premark_counts and self.premark_fail else None

    def to_dict(self) -> dict[str, Any]:
        return {"image_id": self.image_id, "owner": self.owner, "path": self.path, "seed": self.seed,
                "label": self.label, "annotator": self.annotator, "label_seq": self.label_seq,
                "clip_score": self.clip_score, "premark_fail": self.premark_fail, "disputed": self.disputed}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ImageRecord:
        return cls(str(d["image_id"]), str(d["owner"]), str(d.get("path", "")), d.get("seed"), d.get("label"),
                   str(d.get("annotator", "")), int(d.get("label_seq", 0)), d.get("clip_score"),
                   bool(d.get("premark_fail", False)), bool(d.get("disputed", False)))


@dataclass
class PromptRecord:
    prompt_id: str
    node_id: str
    text: str
    graph: SceneGraph | None
    provenance: Provenance
    graph_provenance: Provenance
    image_ids: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"prompt_id": self.prompt_id, "node_id": self.node_id, "text": self.text,
                "graph": None if self.graph is None else self.graph.to_dict(),
                "provenance": self.provenance.to_dict(), "graph_provenance": self.graph_provenance.to_dict(),
                "image_ids": list(self.image_ids)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PromptRecord:
        return cls(str(d["prompt_id"]), str(d["node_id"]), str(d["text"]), _graph(d.get("graph")),
                   Provenance.from_dict(d.get("provenance")), Provenance.from_dict(d.get("graph_provenance")),
                   [str(i) for i in d.get("image_ids", [])])


@dataclass
class TopicProposal:
    proposal_id: str
    node_id: str  # the parent node
    text: str
    order: int
    provenance: Provenance
    state: str = PROPOSED
    original_text: str = ""  # the proposed text when the auditor edited it
    child_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"proposal_id": self.proposal_id, "node_id": self.node_id, "text": self.text, "order": self.order,
                "provenance": self.provenance.to_dict(), "state": self.state,
                "original_text": self.original_text, "child_id": self.child_id}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TopicProposal:
        return cls(str(d["proposal_id"]), str(d["node_id"]), str(d["text"]), int(d["order"]),
                   Provenance.from_dict(d.get("provenance")), str(d.get("state", PROPOSED)),
                   str(d.get("original_text", "")), d.get("child_id"))


@dataclass
class Reflection:
    text: str
    provenance: Provenance

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "provenance": self.provenance.to_dict()}


@dataclass
class LocationRecord:
    """The failure location of one bug prompt of a node."""

    location_id: str
    node_id: str
    prompt_id: str
    machine: FailureLocation
    step_images: dict[int, list[str]] = field(default_factory=dict)

    def owner(self, step_id: int) -> str:
        return f"{self.location_id}/s{step_id}"

    def to_dict(self) -> dict[str, Any]:
        return {"location_id": self.location_id, "node_id": self.node_id, "prompt_id": self.prompt_id,
                "machine": self.machine.to_dict(),
                "step_images": {str(k): list(v) for k, v in sorted(self.step_images.items())}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LocationRecord:
        return cls(str(d["location_id"]), str(d["node_id"]), str(d["prompt_id"]),
                   FailureLocation.from_dict(d["machine"]),
                   {int(k): [str(i) for i in v] for k, v in d.get("step_images", {}).items()})


@dataclass
class Node:
    node_id: str
    parent_id: str | None
    topic: str
    depth: int
    perspective: str
    order: int
    n_i: int
    n_x: int
    proposal_id: str | None = None  # the proposal it was accepted from
    prompt_ids: list[str] = field(default_factory=list)
    prompts_confirmed: bool = False
    proposal_ids: list[str] = field(default_factory=list)
    location_ids: list[str] = field(default_factory=list)
    child_ids: list[str] = field(default_factory=list)
    reflection: Reflection | None = None
    closed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"node_id": self.node_id, "parent_id": self.parent_id, "topic": self.topic, "depth": self.depth,
                "perspective": self.perspective, "order": self.order, "n_i": self.n_i, "n_x": self.n_x,
                "proposal_id": self.proposal_id, "prompt_ids": list(self.prompt_ids),
                "prompts_confirmed": self.prompts_confirmed, "proposal_ids": list(self.proposal_ids),
                "location_ids": list(self.location_ids), "child_ids": list(self.child_ids),
                "reflection": None if self.reflection is None else self.reflection.to_dict(),
                "closed": self.closed}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Node:
        r = d.get("reflection")
        return cls(str(d["node_id"]), d.get("parent_id"), str(d["topic"]), int(d["depth"]),
                   str(d.get("perspective", "")), int(d.get("order", 0)), int(d["n_i"]), int(d["n_x"]),
                   d.get("proposal_id"), [str(x) for x in d.get("prompt_ids", [])],
                   bool(d.get("prompts_confirmed", False)), [str(x) for x in d.get("proposal_ids", [])],
                   [str(x) for x in d.get("location_ids", [])], [str(x) for x in d.get("child_ids", [])],
                   None if r is None else Reflection(str(r["text"]), Provenance.from_dict(r.get("provenance"))),
                   bool(d.get("closed", False)))


@dataclass(frozen=True)
class GenerationRequest:
    """Images to generate now: ``count`` more for ``owner`` (``have`` exist: the seed offset)."""

    owner: str
    node_id: str
    kind: str  # "prompt" or "step"
    text: str
    count: int
    have: int


@dataclass(frozen=True)
class JudgeRequest:
    """An image waiting for a human PASS / FAIL (``premark_fail``: CLIPScore pre-marked it)."""

    image_id: str
    owner: str
    node_id: str
    kind: str
    text: str
    path: str
    premark_fail: bool
    clip_score: float | None


@dataclass(frozen=True)
class Action:
    """Something to do next on a node. ``by`` is "engine" (automatic: `engine.advance`),
    "auditor" (a decision), or "jobs" / "judge" (generation / labelling, see the queries)."""

    kind: str
    node_id: str
    by: str
    detail: tuple[str, ...] = ()


class TestTree:
    """The state of one DyEval session (see the module docstring)."""

    __test__ = False  # not a pytest test class

    def __init__(self, config: DyEvalConfig | None = None, tree_id: str = "tree") -> None:
        self.tree_id = tree_id
        self.config = config or DyEvalConfig()
        self.nodes: dict[str, Node] = {}
        self.prompts: dict[str, PromptRecord] = {}
        self.images: dict[str, ImageRecord] = {}
        self.proposals: dict[str, TopicProposal] = {}
        self.locations: dict[str, LocationRecord] = {}
        self.counters: dict[str, int] = {"n": 0, "p": 0, "t": 0, "L": 0}
        self.log: list[dict[str, Any]] = []
        #: called with each event once it is applied and logged (a store persists it there)
        self.on_event: Callable[[dict[str, Any]], None] | None = None

    # --- creation, replay, snapshot -------------------------------------------------------------------

    @classmethod
    def new(cls, config: DyEvalConfig | None = None, tree_id: str = "tree") -> TestTree:
        cfg = config or DyEvalConfig()
        cfg.validate()
        t = cls(cfg, tree_id)
        t.apply({"kind": "tree_created", "tree_id": tree_id, "config": cfg.to_dict()})
        return t

    @classmethod
    def from_events(cls, events: Iterable[Mapping[str, Any]]) -> TestTree:
        """Replay a stored event log (its first event is tree_created)."""
        t = cls()
        for i, e in enumerate(events):
            if i == 0 and e.get("kind") != "tree_created":
                raise WorkstationError("DyEval events: the log must start with tree_created")
            t.apply(e)
        if not t.log:
            raise WorkstationError("DyEval events: empty log")
        return t

    def to_dict(self, *, include_events: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {
            "format": FORMAT, "version": VERSION, "tree_id": self.tree_id, "config": self.config.to_dict(),
            "counters": dict(self.counters),
            "nodes": [n.to_dict() for n in self.nodes.values()],
            "prompts": [p.to_dict() for p in self.prompts.values()],
            "images": [i.to_dict() for i in self.images.values()],
            "proposals": [p.to_dict() for p in self.proposals.values()],
            "locations": [loc.to_dict() for loc in self.locations.values()],
        }
        if include_events:
            d["events"] = [dict(e) for e in self.log]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TestTree:
        if d.get("format") != FORMAT:
            raise WorkstationError(f"not a DyEval tree (format {d.get('format')!r})")
        if int(d.get("version", 0)) > VERSION:
            raise WorkstationError(f"DyEval tree version {d.get('version')} is newer than this program ({VERSION})")
        t = cls(DyEvalConfig.from_dict(d["config"]), str(d["tree_id"]))
        t.counters = {str(k): int(v) for k, v in d.get("counters", {}).items()}
        t.nodes = {n["node_id"]: Node.from_dict(n) for n in d.get("nodes", [])}
        t.prompts = {p["prompt_id"]: PromptRecord.from_dict(p) for p in d.get("prompts", [])}
        t.images = {i["image_id"]: ImageRecord.from_dict(i) for i in d.get("images", [])}
        t.proposals = {p["proposal_id"]: TopicProposal.from_dict(p) for p in d.get("proposals", [])}
        t.locations = {x["location_id"]: LocationRecord.from_dict(x) for x in d.get("locations", [])}
        t.log = [dict(e) for e in d.get("events", [])]
        t._check_references()
        return t

    def _check_references(self) -> None:
        for n in self.nodes.values():
            if n.parent_id is not None and n.parent_id not in self.nodes:
                raise WorkstationError(f"DyEval tree: node {n.node_id} has an unknown parent {n.parent_id}")
            for pid in n.prompt_ids:
                if pid not in self.prompts:
                    raise WorkstationError(f"DyEval tree: node {n.node_id} lists an unknown prompt {pid}")
        for img in self.images.values():
            if self._owner_images(img.owner) is None:
                raise WorkstationError(f"DyEval tree: image {img.image_id} has an unknown owner {img.owner}")

    # --- the event dispatcher ---------------------------------------------------------------------------

    def apply(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """Validate and apply one event; append it to the log (with its seq) and return it.

        Nothing changes when the event is refused (a WorkstationError says why)."""
        kind = str(event.get("kind", ""))
        handler = getattr(self, f"_ev_{kind}", None)
        if handler is None:
            raise WorkstationError(f"DyEval: unknown event kind {kind!r}")
        e = dict(event)
        e["seq"] = len(self.log) + 1
        try:
            handler(e)
        except (KeyError, TypeError, ValueError) as err:
            raise WorkstationError(f"DyEval: malformed {kind} event ({err.__class__.__name__}: {err})") from None
        self.log.append(e)
        if self.on_event is not None:
            self.on_event(e)
        return e

    def _bump(self, prefix: str, ident: str) -> None:
        tail = ident[len(prefix):]
        if ident.startswith(prefix) and tail.isdigit():
            self.counters[prefix] = max(self.counters.get(prefix, 0), int(tail))

    def _next(self, prefix: str) -> str:
        return f"{prefix}{self.counters.get(prefix, 0) + 1}"

    def _node(self, node_id: str) -> Node:
        n = self.nodes.get(node_id)
        if n is None:
            raise WorkstationError(f"DyEval: no node {node_id!r}")
        return n

    def _prompt(self, prompt_id: str) -> PromptRecord:
        p = self.prompts.get(prompt_id)
        if p is None:
            raise WorkstationError(f"DyEval: no prompt {prompt_id!r}")
        return p

    def _image(self, image_id: str) -> ImageRecord:
        i = self.images.get(image_id)
        if i is None:
            raise WorkstationError(f"DyEval: no image {image_id!r}")
        return i

    def _ev_tree_created(self, e: dict[str, Any]) -> None:
        if self.log:
            raise WorkstationError("DyEval: tree_created must be the first event")
        cfg = DyEvalConfig.from_dict(e["config"])
        self.tree_id = str(e["tree_id"])
        self.config = cfg

    def _ev_node_added(self, e: dict[str, Any]) -> None:
        nid = str(e["node_id"])
        if nid in self.nodes:
            raise WorkstationError(f"DyEval: node {nid} exists")
        parent_id = e.get("parent_id")
        depth = 1
        if parent_id is not None:
            depth = self._node(parent_id).depth + 1
        topic = " ".join(str(e["topic"]).split())
        if not topic:
            raise WorkstationError("DyEval: a topic cannot be empty")
        if len(topic) > MAX_TOPIC_CHARS:
            raise WorkstationError(f"DyEval: a topic of {len(topic):,} characters is too long (at most {MAX_TOPIC_CHARS})")
        if not topic.isprintable():
            raise WorkstationError("DyEval: a topic holds a control character")
        n_i, n_x = e["n_i"], e["n_x"]
        for name, v in (("n_i", n_i), ("n_x", n_x)):
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= LIMITS[name]:
                raise WorkstationError(f"DyEval: {name} must be a whole number from 1 to {LIMITS[name]} "
                                       f"({LIMIT_REASONS[name]}), not {str(v)[:40]}")
        self._bump("n", nid)
        self.nodes[nid] = Node(nid, parent_id, topic, depth, str(e.get("perspective", "")), int(e.get("order", 0)),
                               n_i, n_x, e.get("proposal_id"))
        if parent_id is not None:
            self.nodes[parent_id].child_ids.append(nid)

    def _ev_prompt_added(self, e: dict[str, Any]) -> None:
        pid = str(e["prompt_id"])
        node = self._node(str(e["node_id"]))
        if pid in self.prompts:
            raise WorkstationError(f"DyEval: prompt {pid} exists")
        text = " ".join(str(e["text"]).split())
        if not text:
            raise WorkstationError("DyEval: a prompt cannot be empty")
        if len(text) > MAX_PROMPT_CHARS or not text.isprintable():
            raise WorkstationError(f"DyEval: a prompt must be one line of printable text of at most {MAX_PROMPT_CHARS:,} "
                                   "characters")
        graph = _graph(e.get("graph"))
        prov = Provenance.from_dict(e.get("provenance"))
        gprov = Provenance.from_dict(e.get("graph_provenance"))
        self._bump("p", pid)
        self.prompts[pid] = PromptRecord(pid, node.node_id, text, graph, prov, gprov)
        node.prompt_ids.append(pid)

    def _ev_prompt_removed(self, e: dict[str, Any]) -> None:
        p = self._prompt(str(e["prompt_id"]))
        if p.image_ids:
            raise WorkstationError(f"DyEval: prompt {p.prompt_id} has images and cannot be removed")
        if any(loc.prompt_id == p.prompt_id for loc in self.locations.values()):
            raise WorkstationError(f"DyEval: prompt {p.prompt_id} is being located")
        self.nodes[p.node_id].prompt_ids.remove(p.prompt_id)
        del self.prompts[p.prompt_id]

    def _ev_prompt_graph_set(self, e: dict[str, Any]) -> None:
        p = self._prompt(str(e["prompt_id"]))
        graph = _graph(e.get("graph"))
        p.graph = graph
        p.graph_provenance = Provenance.from_dict(e.get("provenance"))

    def _ev_prompts_confirmed(self, e: dict[str, Any]) -> None:
        node = self._node(str(e["node_id"]))
        if not node.prompt_ids:
            raise WorkstationError(f"DyEval: node {node.node_id} has no prompts to confirm")
        node.prompts_confirmed = True

    def _owner_images(self, owner: str) -> list[str] | None:
        if owner in self.prompts:
            return self.prompts[owner].image_ids
        loc_id, sep, step = owner.partition("/s")
        if sep and loc_id in self.locations and step.isdigit():
            loc = self.locations[loc_id]
            if int(step) < len(loc.machine.steps):
                return loc.step_images.setdefault(int(step), [])
        return None

    def _expected_images(self, owner: str) -> int:
        if owner in self.prompts:
            return self.nodes[self.prompts[owner].node_id].n_x
        loc = self.locations[owner.partition("/s")[0]]
        return self.nodes[loc.node_id].n_x

    def _ev_image_added(self, e: dict[str, Any]) -> None:
        iid, owner = str(e["image_id"]), str(e["owner"])
        if not iid:
            raise WorkstationError("DyEval: an image needs an id")
        if iid in self.images:
            raise WorkstationError(f"DyEval: image {iid} exists")
        ids = self._owner_images(owner)
        if ids is None:
            raise WorkstationError(f"DyEval: image {iid} for an unknown prompt or step {owner!r}")
        if owner in self.prompts:
            if not self.nodes[self.prompts[owner].node_id].prompts_confirmed:
                raise WorkstationError(f"DyEval: prompt {owner}'s node has not confirmed its prompts")
        else:
            loc = self.locations[owner.partition("/s")[0]]
            if not loc.machine.step(int(owner.partition("/s")[2])).needs_images:
                raise WorkstationError(f"DyEval: step {owner} needs no images")
        if len(ids) >= self._expected_images(owner):
            raise WorkstationError(f"DyEval: {owner} already has its {len(ids)} images")
        seed = e.get("seed")
        self.images[iid] = ImageRecord(iid, owner, str(e.get("path", "")), None if seed is None else int(seed))
        ids.append(iid)

    def _ev_image_premarked(self, e: dict[str, Any]) -> None:
        img = self._image(str(e["image_id"]))
        score = float(e["clip_score"])
        if not math.isfinite(score):
            raise WorkstationError(f"DyEval: CLIPScore of image {img.image_id} is not a number")
        img.clip_score = score
        img.premark_fail = bool(e["fail"])
        self._feed_step(img.owner)

    def _ev_label(self, e: dict[str, Any]) -> None:
        img = self._image(str(e["image_id"]))
        value = None if e.get("value") is None else LABEL_SCHEME.validate(e["value"])
        e["value"] = value
        img.label = value
        img.annotator = str(e.get("annotator", ""))
        img.label_seq = int(e["seq"])
        img.disputed = value is None and bool(e.get("disputed", False))
        self._feed_step(img.owner)

    def _feed_step(self, owner: str) -> None:
        """When a location step's images are all judged, give the location the step's verdict."""
        if owner in self.prompts:
            return
        loc_id, _, step = owner.partition("/s")
        loc = self.locations[loc_id]
        s = loc.machine.step(int(step))
        if not s.needs_images:
            return
        o = self.outcome(owner)
        if o.verdict is not None:
            loc.machine.record(s.step_id, o.verdict)

    def _ev_proposals_added(self, e: dict[str, Any]) -> None:
        node = self._node(str(e["node_id"]))
        if node.depth >= self.config.d_max:
            raise WorkstationError(f"DyEval: node {node.node_id} is at the deepest level ({self.config.d_max})")
        items = list(e["proposals"])
        seen: set[str] = set()
        for it in items:
            pid = str(it["proposal_id"])
            if pid in self.proposals or pid in seen or not " ".join(str(it["text"]).split()):
                raise WorkstationError(f"DyEval: proposal {pid} is repeated or empty")
            seen.add(pid)
        for it in items:
            pid = str(it["proposal_id"])
            self._bump("t", pid)
            self.proposals[pid] = TopicProposal(pid, node.node_id, " ".join(str(it["text"]).split()),
                                                int(it["order"]), Provenance.from_dict(it.get("provenance")))
            node.proposal_ids.append(pid)

    def _ev_proposal_decided(self, e: dict[str, Any]) -> None:
        p = self.proposals.get(str(e["proposal_id"]))
        if p is None:
            raise WorkstationError(f"DyEval: no proposal {e['proposal_id']!r}")
        decision = str(e["decision"])
        if decision not in (ACCEPTED, EDITED, REJECTED):
            raise WorkstationError(f"DyEval: a proposal is accepted, edited or rejected, not {decision!r}")
        if p.state != PROPOSED:
            raise WorkstationError(f"DyEval: proposal {p.proposal_id} was already {p.state}")
        text = " ".join(str(e.get("text") or "").split())
        if decision == EDITED and not text:
            raise WorkstationError("DyEval: an edited proposal needs its new text")
        child_id = e.get("child_id")
        parent = self.nodes[p.node_id]
        if decision != REJECTED and (not child_id or child_id in self.nodes):
            raise WorkstationError("DyEval: an accepted proposal needs a new child node id")
        if decision == EDITED:
            p.original_text, p.text = p.text, text
        p.state = decision
        if decision != REJECTED:
            p.child_id = str(child_id)
            self._ev_node_added({"node_id": child_id, "parent_id": parent.node_id, "topic": p.text,
                                 "perspective": parent.perspective, "n_i": parent.n_i, "n_x": parent.n_x,
                                 "order": p.order, "proposal_id": p.proposal_id})

    def _ev_proposals_reordered(self, e: dict[str, Any]) -> None:
        node = self._node(str(e["node_id"]))
        order = [str(x) for x in e["order"]]
        if sorted(order) != sorted(node.proposal_ids):
            raise WorkstationError(f"DyEval: the new order must list node {node.node_id}'s proposals once each")
        for i, pid in enumerate(order):
            p = self.proposals[pid]
            p.order = i
            if p.child_id is not None:
                self.nodes[p.child_id].order = i
        node.proposal_ids = order
        node.child_ids.sort(key=lambda c: self.nodes[c].order)

    def _ev_location_started(self, e: dict[str, Any]) -> None:
        lid = str(e["location_id"])
        node = self._node(str(e["node_id"]))
        p = self._prompt(str(e["prompt_id"]))
        if lid in self.locations:
            raise WorkstationError(f"DyEval: location {lid} exists")
        if p.node_id != node.node_id:
            raise WorkstationError(f"DyEval: prompt {p.prompt_id} is not in node {node.node_id}")
        if not self.outcome(p.prompt_id).is_bug:
            raise WorkstationError(f"DyEval: prompt {p.prompt_id} is not a bug (complete, pass rate < ρ)")
        graph = _graph(e.get("graph"))
        if graph is None:
            raise WorkstationError(f"DyEval: prompt {p.prompt_id} needs a scene graph to be located")
        machine = FailureLocation.start(graph, p.text)
        self._bump("L", lid)
        self.locations[lid] = LocationRecord(lid, node.node_id, p.prompt_id, machine)
        node.location_ids.append(lid)

    def _ev_reflection_set(self, e: dict[str, Any]) -> None:
        node = self._node(str(e["node_id"]))
        text = str(e["text"]).strip()
        if not text:
            raise WorkstationError("DyEval: a reflection cannot be empty")
        node.reflection = Reflection(text, Provenance.from_dict(e.get("provenance")))

    def _ev_node_closed(self, e: dict[str, Any]) -> None:
        self._node(str(e["node_id"])).closed = True

    # --- mutations (each one event) ---------------------------------------------------------------------

    def add_root(self, topic: str, perspective: str = "", *, n_i: int | None = None, n_x: int | None = None) -> str:
        nid = self._next("n")
        order = sum(1 for n in self.nodes.values() if n.parent_id is None)
        self.apply({"kind": "node_added", "node_id": nid, "parent_id": None, "topic": topic,
                    "perspective": perspective, "n_i": n_i or self.config.n_i, "n_x": n_x or self.config.n_x,
                    "order": order, "proposal_id": None})
        return nid

    def add_prompt(self, node_id: str, text: str, graph: SceneGraph | None = None,
                   provenance: Provenance = HUMAN_PROVENANCE, graph_provenance: Provenance | None = None) -> str:
        pid = self._next("p")
        self.apply({"kind": "prompt_added", "prompt_id": pid, "node_id": node_id, "text": text,
                    "graph": None if graph is None else graph.to_dict(), "provenance": provenance.to_dict(),
                    "graph_provenance": (graph_provenance or provenance).to_dict()})
        return pid

    def remove_prompt(self, prompt_id: str) -> None:
        self.apply({"kind": "prompt_removed", "prompt_id": prompt_id})

    def set_prompt_graph(self, prompt_id: str, graph: SceneGraph | None,
                         provenance: Provenance = HUMAN_PROVENANCE) -> None:
        self.apply({"kind": "prompt_graph_set", "prompt_id": prompt_id,
                    "graph": None if graph is None else graph.to_dict(), "provenance": provenance.to_dict()})

    def confirm_prompts(self, node_id: str) -> None:
        self.apply({"kind": "prompts_confirmed", "node_id": node_id})

    def add_image(self, owner: str, image_id: str, path: str = "", seed: int | None = None) -> None:
        self.apply({"kind": "image_added", "image_id": image_id, "owner": owner, "path": path, "seed": seed})

    def premark(self, image_id: str, clip_score: float) -> bool:
        """Record an image's CLIPScore; pre-mark it FAIL when below the configured threshold."""
        th = self.config.premark_threshold
        fail = th is not None and float(clip_score) < th
        self.apply({"kind": "image_premarked", "image_id": image_id, "clip_score": float(clip_score),
                    "threshold": th, "fail": fail})
        return fail

    def record_label(self, image_id: str, value: str | None, annotator: str = "", *, disputed: bool = False) -> None:
        """A human PASS / FAIL for an image (None takes the label back: undo; with ``disputed``,
        annotators disagree and no label counts)."""
        e: dict[str, Any] = {"kind": "label", "image_id": image_id, "value": value, "annotator": annotator}
        if disputed and value is None:
            e["disputed"] = True
        self.apply(e)

    def add_proposals(self, node_id: str, texts: Sequence[str], provenance: Provenance = HUMAN_PROVENANCE) -> list[str]:
        node = self._node(node_id)
        start = self.counters.get("t", 0)
        base = len(node.proposal_ids)
        ids = [f"t{start + i + 1}" for i in range(len(texts))]
        items = [{"proposal_id": pid, "text": t, "order": base + i, "provenance": provenance.to_dict()}
                 for i, (pid, t) in enumerate(zip(ids, texts))]
        self.apply({"kind": "proposals_added", "node_id": node_id, "proposals": items})
        return ids

    def decide_proposal(self, proposal_id: str, decision: str, text: str | None = None) -> str | None:
        """Accept, edit (accept with ``text``) or reject; returns the new child node's id."""
        child = None if decision == REJECTED else self._next("n")
        self.apply({"kind": "proposal_decided", "proposal_id": proposal_id, "decision": decision,
                    "text": text or "", "child_id": child})
        return child

    def reorder_proposals(self, node_id: str, proposal_ids: Sequence[str]) -> None:
        self.apply({"kind": "proposals_reordered", "node_id": node_id, "order": list(proposal_ids)})

    def start_location(self, node_id: str, prompt_id: str, graph: SceneGraph | None = None) -> str:
        g = graph if graph is not None else self._prompt(prompt_id).graph
        lid = self._next("L")
        self.apply({"kind": "location_started", "location_id": lid, "node_id": node_id, "prompt_id": prompt_id,
                    "graph": None if g is None else g.to_dict()})
        return lid

    def set_reflection(self, node_id: str, text: str, provenance: Provenance = HUMAN_PROVENANCE) -> None:
        self.apply({"kind": "reflection_set", "node_id": node_id, "text": text, "provenance": provenance.to_dict()})

    def close_node(self, node_id: str) -> None:
        self.apply({"kind": "node_closed", "node_id": node_id})

    # --- outcomes and metrics ---------------------------------------------------------------------------

    def outcome(self, owner: str) -> Outcome:
        """The outcome of a prompt or a location step from its images' effective judgements."""
        ids = self._owner_images(owner)
        if ids is None:
            raise WorkstationError(f"DyEval: no prompt or step {owner!r}")
        pc = self.config.premark_counts
        return outcome(owner, [self.images[i].effective(pc) for i in ids], self._expected_images(owner),
                       self.config.rho)

    def node_summary(self, node_id: str) -> Summary:
        """APR / AFR / #Bugs of a node's own prompts (failure-location steps excluded)."""
        return summarize(self.outcome(p) for p in self._node(node_id).prompt_ids)

    def subtree_ids(self, node_id: str) -> list[str]:
        out = [node_id]
        for c in self._node(node_id).child_ids:
            out.extend(self.subtree_ids(c))
        return out

    def subtree_summary(self, node_id: str) -> Summary:
        return summarize(self.outcome(p) for n in self.subtree_ids(node_id) for p in self.nodes[n].prompt_ids)

    def tree_summary(self) -> Summary:
        """APR / AFR / #Bugs of the whole tree (all roots)."""
        return summarize(self.outcome(p) for n in self.nodes.values() for p in n.prompt_ids)

    def bugs(self, node_id: str) -> list[str]:
        return [p for p in self._node(node_id).prompt_ids if self.outcome(p).is_bug]

    def bfs_order(self, root_id: str | None = None) -> list[str]:
        """Nodes breadth-first (by depth, then the order of their proposals along the path)."""
        def key(nid: str) -> tuple[int, tuple[int, ...]]:
            path: list[int] = []
            n: Node | None = self.nodes[nid]
            while n is not None:
                path.append(n.order)
                n = self.nodes[n.parent_id] if n.parent_id is not None else None
            return self.nodes[nid].depth, tuple(reversed(path))

        ids = self.subtree_ids(root_id) if root_id is not None else list(self.nodes)
        return sorted(ids, key=key)

    def accumulated_bugs(self, root_id: str) -> list[int]:
        """#Bugs accumulated over a root's nodes in breadth-first order (the paper's Fig. 3)."""
        out: list[int] = []
        total = 0
        for nid in self.bfs_order(root_id):
            total += self.node_summary(nid).bugs
            out.append(total)
        return out

    # --- node state and what to do next -----------------------------------------------------------------

    def wants_location(self, node_id: str) -> bool:
        apr = self.node_summary(node_id).apr
        return apr is not None and apr < self.config.locate_apr

    def wants_expansion(self, node_id: str) -> bool:
        apr = self.node_summary(node_id).apr
        return apr is not None and apr >= self.config.expand_apr and self._node(node_id).depth < self.config.d_max

    def node_state(self, node_id: str) -> str:
        n = self._node(node_id)
        if n.closed:
            return DONE
        if not n.prompt_ids:
            return NEW
        if not n.prompts_confirmed:
            return PROMPTS_WRITTEN
        pc = self.config.premark_counts
        if any(len(self.prompts[p].image_ids) < n.n_x for p in n.prompt_ids):
            return GENERATING
        if any(self.images[i].effective(pc) is None for p in n.prompt_ids for i in self.prompts[p].image_ids):
            return JUDGING
        low, high = self.wants_location(node_id), self.wants_expansion(node_id)
        if low:
            if not n.location_ids and n.reflection is None:
                return JUDGED
            if n.reflection is None or any(not self.locations[x].machine.done for x in n.location_ids):
                return LOCATING
        if high:
            if not n.proposal_ids:
                return EXPANDING if low else JUDGED
            if any(self.proposals[p].state == PROPOSED for p in n.proposal_ids):
                return EXPANDING
        return DONE

    def generation_requests(self) -> list[GenerationRequest]:
        """Images to generate now: confirmed prompts and pending location steps lacking images."""
        out: list[GenerationRequest] = []
        for nid in self.bfs_order():
            n = self.nodes[nid]
            if n.closed:
                continue
            if n.prompts_confirmed:
                for pid in n.prompt_ids:
                    p = self.prompts[pid]
                    if len(p.image_ids) < n.n_x:
                        out.append(GenerationRequest(pid, nid, "prompt", p.text, n.n_x - len(p.image_ids),
                                                     len(p.image_ids)))
            for lid in n.location_ids:
                loc = self.locations[lid]
                for s in loc.machine.pending():
                    have = len(loc.step_images.get(s.step_id, []))
                    if have < n.n_x:
                        out.append(GenerationRequest(loc.owner(s.step_id), nid, "step", s.text, n.n_x - have, have))
        return out

    def judging_queue(self, *, include_premarked: bool = True) -> list[JudgeRequest]:
        """Images without a human label, breadth-first; pre-marked ones last within their owner."""
        out: list[JudgeRequest] = []
        for nid in self.bfs_order():
            n = self.nodes[nid]
            if n.closed:
                continue
            owners: list[tuple[str, str, str, list[str]]] = [
                (pid, "prompt", self.prompts[pid].text, self.prompts[pid].image_ids) for pid in n.prompt_ids]
            for lid in n.location_ids:
                loc = self.locations[lid]
                for step_id, ids in sorted(loc.step_images.items()):
                    s = loc.machine.step(step_id)
                    if s.needs_images:
                        owners.append((loc.owner(step_id), "step", s.text, ids))
            for owner, kind, text, ids in owners:
                imgs = [self.images[i] for i in ids if self.images[i].label is None]
                imgs.sort(key=lambda im: im.premark_fail)
                for im in imgs:
                    if im.premark_fail and not include_premarked:
                        continue
                    out.append(JudgeRequest(im.image_id, owner, nid, kind, text, im.path, im.premark_fail,
                                            im.clip_score))
        return out

    def pending_actions(self) -> list[Action]:
        """What each node waits for, breadth-first."""
        out: list[Action] = []
        for nid in self.bfs_order():
            st = self.node_state(nid)
            n = self.nodes[nid]
            if st == NEW:
                out.append(Action("write_prompts", nid, "engine"))
            elif st == PROMPTS_WRITTEN:
                out.append(Action("confirm_prompts", nid, "auditor"))
            elif st == GENERATING:
                out.append(Action("generate", nid, "jobs"))
            elif st == JUDGING:
                out.append(Action("judge", nid, "judge"))
            elif st in (JUDGED, LOCATING, EXPANDING):
                out.extend(self._phase_actions(n, st))
        return out

    def _phase_actions(self, n: Node, st: str) -> list[Action]:
        nid = n.node_id
        if self.wants_location(nid) and (st in (JUDGED, LOCATING)):
            located = {self.locations[x].prompt_id for x in n.location_ids}
            todo = tuple(p for p in self.bugs(nid) if p not in located)
            if todo and n.reflection is None:
                return [Action("start_locations", nid, "engine", todo)]
            pending = [x for x in n.location_ids if not self.locations[x].machine.done]
            if pending:
                acts = [Action("generate", nid, "jobs")] if any(
                    r.node_id == nid for r in self.generation_requests()) else []
                if any(j.node_id == nid for j in self.judging_queue()):
                    acts.append(Action("judge", nid, "judge"))
                return acts
            if n.reflection is None:
                return [Action("reflect", nid, "engine")]
        if self.wants_expansion(nid):
            if not n.proposal_ids:
                return [Action("propose_topics", nid, "engine")]
            open_ = tuple(p for p in n.proposal_ids if self.proposals[p].state == PROPOSED)
            if open_:
                return [Action("decide_proposals", nid, "auditor", open_)]
        return []

    def step_owner_text(self, owner: str) -> str:
        """The text an owner's images were generated from."""
        if owner in self.prompts:
            return self.prompts[owner].text
        lid, _, step = owner.partition("/s")
        return self.locations[lid].machine.step(int(step)).text
