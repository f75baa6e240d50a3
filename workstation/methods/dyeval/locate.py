"""Dynamic failure location (seed 002, §4.2.2, Algorithm 1) as a resumable state machine.

Given the scene graph c₀ of a failing prompt, Algorithm 1 keeps a queue Q of pairs (c, l) — a
*cell* c still to be narrowed and its *context* l — starting with (c₀, ∅). It pops a pair; unless
|c| = 1 it splits c into c₁, c₂ (`split_graph`), tests c₁ ∪ l and c₂ ∪ l, and

* pushes (c₁, l) if c₁ ∪ l fails, and (c₂, l) if c₂ ∪ l fails;
* if both pass, pushes (c₁, c₂ ∪ l) and (c₂, c₁ ∪ l): "one half is retained as a baseline while
  the other is further subdivided".

Here a test is a **step**: a sub-prompt (text rendered from c ∪ l, its graph, the step it came
from, the cell and the context) whose verdict comes back later — when its images have been
generated and judged, possibly after a restart. `FailureLocation` holds the whole state (steps,
queue, the split in progress, triggers) as plain data (`to_dict` / `from_dict`) at every point:

* `pending()` — the steps waiting for a verdict (what needs rendering and judging now);
* `record(step_id, verdict)` — a verdict; the machine then runs as far as it can without another
  verdict and returns the steps it emitted.

Choices where the paper leaves a rule open
------------------------------------------
* **Q is a stack** (Python's ``list.pop()``, as the pseudo-code's ``Q.pop()`` reads): after a
  both-pass split the second half (pushed last) is narrowed first. This is the order of §5.4's
  second case: "A tiny black crescent moon." and "A big white cloud." pass, *then* "A big white
  cloud." is split with the moon as context.
* **Bridge.** An object split cuts the relation between the halves (`GraphSplit.bridge`); the
  halves are tested without it (as in §5.4: "A tiny black crescent moon." / "A big white cloud."),
  and when both pass the bridge joins the kept half in the context, so that c₁ ∪ c₂ ∪ bridge = c
  ("merge them with 'A tiny black crescent moon.'" gives "... moon within a big cloud.").
* **Dropping the last attribute.** One object with one attribute has only one drawable half, the
  bare object ("split ... to 'A cloud' by deleting attributes"): one step. If it passes, the
  attribute (on that object, with the context) is the trigger.
* **Same test twice.** A step whose graph equals an earlier step's (c ∪ l as a set of elements) is
  not rendered again: it takes that step's verdict (``reused_from``). §5.4's "A big cloud." and
  "A white cloud." both narrow to "A cloud" with the moon: one rendered test.
* **Triggers.** A popped cell of one element is a trigger: the element, with its context
  (empty context: it fails alone, as "A kimono." does; otherwise a combination, as "a cloud" with
  the moon). Triggers with equal (cell, context) are reported once.

Invariant and termination
-------------------------
**Invariant:** for every pair (c, l) in Q, the test c ∪ l is known to fail. It holds for (c₀, ∅)
(the prompt failed). A pair pushed after "c_i ∪ l fails" is (c_i, l). After "both pass", the pairs
are (c₁, c₂ ∪ B ∪ l) and (c₂, c₁ ∪ B ∪ l) whose union is c ∪ l, which fails by the invariant of the
popped pair (c₁ ∪ c₂ ∪ B = c). Hence every reported trigger fails, with its context, under the
verdicts received — the consistency the tests check with scripted oracles. A dropped-attribute
trigger (c, l) is reported from a popped pair, so c ∪ l fails too, while its bare object with l
passed. Every popped pair that is not a single element pushes a pair or reports a trigger, so a
location of a failing prompt always reports at least one trigger.

**Bound (proved here, checked by the tests).** Let the graph have, for each object o, k_o
attributes and m_o = max(1, number of relations on o); let C be the number of context phrases.
Then the number of steps after the root is at most

    B(c₀) = 2 · (Σ_o m_o + C − 1) + Σ_o m_o · max(0, 3·k_o − 2)

(and 0 for a one-element graph). Proof: every split makes at most two steps and every step
pushes at most one pair, so steps ≤ 2 × (two-way splits) + (one-way splits), and it suffices to
bound the splits of the recursion tree in which every pair has as children the pairs its split can
push (at most two). Relation and object splits (levels 1–2) partition *units*: at level 1 the
relations, free objects and context phrases; at level 2 the objects and context phrases; a half
is a set of whole units, and a level-1 half with ≤ 1 relation continues at level 2 with its
objects and context as units. Following splits down to single units, the leaves are *object
occurrences* and context phrases. An object o occurs in one level-1 leaf group per group of
relations containing a relation on o — at most deg(o) groups, since groups have disjoint
relations — and once in a level-2 group; a free object occurs once: at most m_o occurrences.
A binary tree with L leaves has L − 1 two-way splits: at most Σ_o m_o + C − 1, i.e. 2·(Σ m_o + C
− 1) steps. Below an object occurrence with k ≥ 1 attributes, attribute splits (level 3) form a
binary tree over the k attributes (k − 1 two-way splits, 2(k − 1) steps) and each single-attribute
leaf makes one drop step (k steps): 3k − 2 steps; 0 when k = 0. A relation is never a unit below
level 1 (it rides in a half or in the bridge), so relations add no splits of their own. Every
pair's cell is strictly smaller than its parent's (`GraphSplit`), so the process ends; with the
bound it ends after at most B(c₀) steps and B(c₀) + 1 pops. For 12 elements B ≤ 2·(12 − 1) = 22
when all are context phrases or unrelated objects, and 31 for one object with 11 attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...types import WorkstationError
from .scene_graph import LEVEL_DROP_ATTRIBUTE, SceneGraph, split_graph

PASS, FAIL = "PASS", "FAIL"
TRIGGER_ELEMENT = "element"  # a single element, alone or with its context
TRIGGER_ATTRIBUTE = "attribute"  # an attribute whose bare object passes with the same context


@dataclass
class LocateStep:
    """One test of Algorithm 1: the sub-prompt c ∪ l.

    ``parent`` is the step that tested the cell being narrowed (a failing half, or after a
    both-pass split the passing half now narrowed with the other as context), so the steps form a
    tree under the root; ``half`` is 1 or 2 (0 for the root); ``level`` the split rule used.
    """

    step_id: int
    cell: tuple[str, ...]
    context: tuple[str, ...]
    parent: int | None
    half: int
    level: str
    text: str
    graph: SceneGraph
    verdict: str | None = None
    reused_from: int | None = None

    @property
    def needs_images(self) -> bool:
        """Waiting for images and judgements (a reused step takes its twin's verdict)."""
        return self.verdict is None and self.reused_from is None

    def to_dict(self) -> dict[str, Any]:
        return {"step_id": self.step_id, "cell": list(self.cell), "context": list(self.context),
                "parent": self.parent, "half": self.half, "level": self.level, "text": self.text,
                "graph": self.graph.to_dict(), "verdict": self.verdict, "reused_from": self.reused_from}


@dataclass(frozen=True)
class Trigger:
    """A failure trigger: ``cell`` fails with ``context`` (shown by step ``step``)."""

    kind: str
    cell: tuple[str, ...]
    context: tuple[str, ...]
    step: int
    cell_text: str
    context_text: str
    text: str
    elements: tuple[str, ...] = ()  # human descriptions of the cell's elements
    context_elements: tuple[str, ...] = ()  # and of the context's (a cut relation included)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "cell": list(self.cell), "context": list(self.context), "step": self.step,
                "cell_text": self.cell_text, "context_text": self.context_text, "text": self.text,
                "elements": list(self.elements), "context_elements": list(self.context_elements)}


@dataclass
class _Pair:
    cell: tuple[str, ...]
    context: tuple[str, ...]
    step: int  # the step whose failure shows that cell ∪ context fails
    origin: int  # the step that tested this cell (its steps' parent)

    def to_dict(self) -> dict[str, Any]:
        return {"cell": list(self.cell), "context": list(self.context), "step": self.step, "origin": self.origin}


@dataclass
class _Split:
    """The split in progress: the popped pair, its steps and what to do with their verdicts."""

    pair: _Pair
    level: str
    halves: tuple[tuple[str, ...], ...]
    bridge: tuple[str, ...]
    steps: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"pair": self.pair.to_dict(), "level": self.level, "halves": [list(h) for h in self.halves],
                "bridge": list(self.bridge), "steps": list(self.steps)}


def _pair(d: Mapping[str, Any]) -> _Pair:
    return _Pair(tuple(d["cell"]), tuple(d["context"]), int(d["step"]), int(d["origin"]))


@dataclass
class FailureLocation:
    """The state of one dynamic failure location (see the module docstring)."""

    root: SceneGraph
    steps: list[LocateStep] = field(default_factory=list)
    queue: list[_Pair] = field(default_factory=list)
    current: _Split | None = None
    triggers: list[Trigger] = field(default_factory=list)

    # --- construction -----------------------------------------------------------------------------

    @classmethod
    def start(cls, graph: SceneGraph, text: str | None = None) -> FailureLocation:
        """Begin with the failing prompt's graph (its step 0 is the prompt itself, verdict FAIL)."""
        if graph.size == 0:
            raise WorkstationError("failure location: the prompt's scene graph is empty")
        keys = graph.elements()
        loc = cls(root=graph)
        loc.steps.append(LocateStep(0, keys, (), None, 0, "root", text or graph.render(), graph, FAIL))
        loc.queue.append(_Pair(keys, (), 0, 0))
        loc._run()
        return loc

    # --- queries --------------------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self.current is None and not self.queue

    def pending(self) -> list[LocateStep]:
        """Steps waiting for a verdict from images (reused steps excluded)."""
        return [s for s in self.steps if s.needs_images]

    def step(self, step_id: int) -> LocateStep:
        if not 0 <= step_id < len(self.steps):
            raise WorkstationError(f"failure location: no step {step_id}")
        return self.steps[step_id]

    def rendered_steps(self) -> list[LocateStep]:
        """Steps that needed (or need) their own images: the root excluded, reuses excluded."""
        return [s for s in self.steps[1:] if s.reused_from is None]

    # --- transitions --------------------------------------------------------------------------------

    def record(self, step_id: int, verdict: str) -> list[LocateStep]:
        """Give a step its verdict (PASS / FAIL); returns the steps this made the machine emit."""
        v = str(verdict).upper()
        if v not in (PASS, FAIL):
            raise WorkstationError(f"failure location: verdict must be PASS or FAIL, not {verdict!r}")
        s = self.step(step_id)
        if not s.needs_images:
            raise WorkstationError(f"failure location: step {step_id} is not waiting for a verdict")
        n0 = len(self.steps)
        s.verdict = v
        for other in self.steps:
            if other.reused_from == step_id and other.verdict is None:
                other.verdict = v
        self._run()
        return self.steps[n0:]

    def _new_step(self, cell: Iterable[str], context: Iterable[str], parent: int, half: int,
                  level: str) -> int:
        c = self.root.sort_keys(cell)
        ctx = self.root.sort_keys(context)
        union = frozenset(c) | frozenset(ctx)
        g = self.root.restrict(union)
        twin = next((s for s in self.steps if frozenset(s.cell) | frozenset(s.context) == union), None)
        sid = len(self.steps)
        reused = None
        verdict = None
        if twin is not None:
            reused = twin.step_id if twin.reused_from is None else twin.reused_from
            verdict = twin.verdict
        self.steps.append(LocateStep(sid, c, ctx, parent, half, level, g.render(), g, verdict, reused))
        return sid

    def _trigger(self, kind: str, pair: _Pair) -> None:
        if any(t.cell == pair.cell and t.context == pair.context for t in self.triggers):
            return
        cell_g = self.root.restrict(pair.cell)
        ctx_g = self.root.restrict(pair.context) if pair.context else None
        full = self.root.restrict(set(pair.cell) | set(pair.context))
        self.triggers.append(Trigger(
            kind, pair.cell, pair.context, pair.step, cell_g.render(),
            ctx_g.render() if ctx_g is not None else "", full.render(),
            tuple(self.root.describe(k) for k in pair.cell), tuple(self.root.describe(k) for k in pair.context)))

    def _run(self) -> None:
        """Advance until a verdict is missing or the queue is empty."""
        while True:
            if self.current is not None:
                verdicts = [self.steps[i].verdict for i in self.current.steps]
                if any(v is None for v in verdicts):
                    return
                self._finish(self.current, verdicts)  # type: ignore[arg-type]
                self.current = None
            if not self.queue:
                return
            pair = self.queue.pop()
            sp = split_graph(self.root.restrict(pair.cell))
            if sp is None:
                self._trigger(TRIGGER_ELEMENT, pair)
                continue
            halves = tuple(self.root.sort_keys(h) for h in (sp.first, sp.second) if h)
            ids = tuple(self._new_step(h, pair.context, pair.origin, i + 1, sp.level) for i, h in enumerate(halves))
            self.current = _Split(pair, sp.level, halves, self.root.sort_keys(sp.bridge), ids)

    def _finish(self, sp: _Split, verdicts: list[str]) -> None:
        pair = sp.pair
        if sp.level == LEVEL_DROP_ATTRIBUTE:
            if verdicts[0] == FAIL:
                self.queue.append(_Pair(sp.halves[0], pair.context, sp.steps[0], sp.steps[0]))
            else:
                self._trigger(TRIGGER_ATTRIBUTE, pair)
            return
        for h, v, sid in zip(sp.halves, verdicts, sp.steps):
            if v == FAIL:
                self.queue.append(_Pair(h, pair.context, sid, sid))
        if all(v == PASS for v in verdicts):
            c1, c2 = sp.halves
            s1, s2 = sp.steps
            base = set(sp.bridge) | set(pair.context)
            self.queue.append(_Pair(c1, self.root.sort_keys(base | set(c2)), pair.step, s1))
            self.queue.append(_Pair(c2, self.root.sort_keys(base | set(c1)), pair.step, s2))

    # --- serialisation --------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {"root": self.root.to_dict(), "steps": [s.to_dict() for s in self.steps],
                "queue": [p.to_dict() for p in self.queue],
                "current": self.current.to_dict() if self.current is not None else None,
                "triggers": [t.to_dict() for t in self.triggers], "done": self.done}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FailureLocation:
        try:
            root = SceneGraph.from_dict(d["root"])
            steps = [LocateStep(int(s["step_id"]), tuple(s["cell"]), tuple(s["context"]),
                                None if s["parent"] is None else int(s["parent"]), int(s["half"]), str(s["level"]),
                                str(s["text"]), SceneGraph.from_dict(s["graph"]), s["verdict"],
                                None if s["reused_from"] is None else int(s["reused_from"])) for s in d["steps"]]
            queue = [_pair(p) for p in d["queue"]]
            cur = d.get("current")
            current = None if cur is None else _Split(
                _pair(cur["pair"]), str(cur["level"]), tuple(tuple(h) for h in cur["halves"]), tuple(cur["bridge"]),
                tuple(int(i) for i in cur["steps"]))
            triggers = [Trigger(str(t["kind"]), tuple(t["cell"]), tuple(t["context"]), int(t["step"]),
                                str(t["cell_text"]), str(t["context_text"]), str(t["text"]),
                                tuple(t.get("elements", ())), tuple(t.get("context_elements", ())))
                        for t in d["triggers"]]
        except (KeyError, TypeError, ValueError) as e:
            raise WorkstationError(f"failure location: malformed state ({e.__class__.__name__}: {e})") from None
        for i, s in enumerate(steps):
            if s.step_id != i:
                raise WorkstationError("failure location: steps out of order")
        return cls(root, steps, queue, current, triggers)


def location_bound(graph: SceneGraph) -> int:
    """B(c₀) of the module docstring: the most steps (after the root) a location can take."""
    if graph.size <= 1:
        return 0
    deg: dict[str, int] = {o.id: 0 for o in graph.objects}
    for r in graph.relations:
        deg[r.subject] += 1
        deg[r.object] += 1
    m = {oid: max(1, d) for oid, d in deg.items()}
    leaves = sum(m.values()) + len(graph.context)
    attr = sum(m[o.id] * max(0, 3 * len(o.attributes) - 2) for o in graph.objects)
    return 2 * (leaves - 1) + attr


Oracle = Callable[[SceneGraph], str]


def run_location(graph: SceneGraph, oracle: Oracle, *, text: str | None = None) -> FailureLocation:
    """Run a whole location with a scripted judge (a function from a sub-graph to PASS/FAIL),
    answering pending steps in order and round-tripping the state through `to_dict` after every
    verdict (as a restart would)."""
    loc = FailureLocation.start(graph, text)
    while not loc.done:
        pend = loc.pending()
        if not pend:
            raise WorkstationError("failure location: stuck with no pending step")  # pragma: no cover
        s = pend[0]
        loc.record(s.step_id, oracle(s.graph))
        loc = FailureLocation.from_dict(loc.to_dict())
    return loc
