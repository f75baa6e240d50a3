"""A scripted text-to-image "model" with known weaknesses: the ground truth of DyEval's demo.

The procedural generator draws a DyEval prompt's scene graph (`render.render_demo_row`); this
module decides, per image, which of the graph's elements the "model" gets wrong. A weakness is
an element the model fails on most of the time:

* an **object** it cannot draw ("kimono", most vehicles): something else is drawn instead;
* an **attribute** it ignores (see-through and shiny materials, counts above two);
* a **relation** it cannot lay out (occlusion and containment: "under", "behind", "inside");
* a **context** phrase it cannot show;
* objects it fails on only **together** ("moon" with "cloud", the paper's second worked
  example): each passes alone, the pair fails — a combination trigger for failure location.

Every element of a prompt that matches a weakness fails in an image with probability
``fail_rate``, independently; an image with no weak element still fails with probability
``noise`` (an object left out). The draws are seeded by (prompt text, seed), so the same text and
seed always give the same verdict, in any process — the demo's judgements and a test's scripted
oracle read the verdict from the image's truth (`ImageTruth`), never guess it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .scene_graph import ATTRIBUTE, CONTEXT, OBJECT, RELATION, SceneGraph

COUNT_WORDS: dict[str, int] = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "several": 3, "many": 5,
                               "few": 3, "pair": 2, "both": 2, "multiple": 3, "numerous": 6, "countless": 6}


@dataclass(frozen=True)
class Weak:
    """One element of a graph that matches a weakness: its element key(s), kind and description."""

    keys: tuple[str, ...]
    kind: str  # "object", "attribute", "relation", "context", "together"
    text: str  # "object kimono", "attribute glass of vase", "kimono and cloud together"

    def to_dict(self) -> dict[str, Any]:
        return {"keys": list(self.keys), "kind": self.kind, "text": self.text}


@dataclass(frozen=True)
class ImageTruth:
    """What the scripted model got right in one image."""

    passed: bool
    failed: tuple[Weak, ...]  # the weak elements it got wrong in this image
    weak: tuple[Weak, ...]  # every weak element of the prompt
    noise: bool = False  # failed without a weak element (an object left out)

    @property
    def expected(self) -> str:
        return "PASS" if self.passed else "FAIL"


@dataclass(frozen=True)
class KnownWeaknesses:
    """A profile of weaknesses (see the module docstring). Words are lower-case."""

    name: str
    objects: frozenset[str] = frozenset()
    attributes: frozenset[str] = frozenset()
    predicates: frozenset[str] = frozenset()
    contexts: frozenset[str] = frozenset()  # a context phrase containing one of these words
    together: tuple[frozenset[str], ...] = field(default=())
    fail_rate: float = 0.85
    noise: float = 0.04

    def weak_elements(self, g: SceneGraph) -> list[Weak]:
        out: list[Weak] = []
        names = {o.id: o.name for o in g.objects}
        for o in g.objects:
            if _norm(o.name) in self.objects:
                out.append(Weak((f"{OBJECT}:{o.id}",), "object", f"object {o.name}"))
            for a in o.attributes:
                if a.lower() in self.attributes:
                    out.append(Weak((f"{ATTRIBUTE}:{o.id}:{a}",), "attribute", f"attribute {a} of {o.name}"))
        for r in g.relations:
            if r.predicate.lower() in self.predicates:
                out.append(Weak((f"{RELATION}:{r.id}",), "relation",
                                f"relation {names[r.subject]} {r.predicate} {names[r.object]}"))
        for c in g.context:
            words = set(c.lower().split())
            if words & self.contexts:
                out.append(Weak((f"{CONTEXT}:{c}",), "context", f"context {c}"))
        for group in self.together:
            ids = [o.id for o in g.objects if _norm(o.name) in group]
            found = {_norm(names[i]) for i in ids}
            if found == set(group):
                out.append(Weak(tuple(f"{OBJECT}:{i}" for i in ids), "together",
                                " and ".join(sorted(group)) + " together"))
        return out

    def judge(self, g: SceneGraph, text: str, seed: int) -> ImageTruth:
        """Which weak elements fail in the image of ``text`` drawn with ``seed``."""
        weak = self.weak_elements(g)
        rng = truth_rng(text, seed)
        draws = rng.random(len(weak) + 1)
        failed = tuple(w for w, u in zip(weak, draws) if u < self.fail_rate)
        noise = not failed and g.size > 0 and bool(draws[-1] < self.noise)
        return ImageTruth(not failed and not noise, failed, tuple(weak), noise)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "objects": sorted(self.objects), "attributes": sorted(self.attributes),
                "predicates": sorted(self.predicates), "contexts": sorted(self.contexts),
                "together": [sorted(g) for g in self.together], "fail_rate": self.fail_rate, "noise": self.noise}


def _norm(name: str) -> str:
    """An object name as the profiles list it: lower-case, singular for a plain plural ("kimonos")."""
    n = name.lower().strip()
    if n.endswith("ies") and len(n) > 4:
        return n[:-3] + "y"
    if n.endswith("s") and not n.endswith("ss") and len(n) > 3:
        return n[:-1]
    return n


def truth_rng(text: str, seed: int) -> np.random.Generator:
    h = hashlib.sha256(f"dyeval-weakness|{' '.join(text.lower().split())}|{int(seed)}".encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:8], "little"))


#: the demo's model: good at its 30 drawable classes, colours, sizes and side-by-side layouts
DEMO_WEAKNESSES = KnownWeaknesses(
    name="demo-v1",
    objects=frozenset({"kimono", "train", "boat", "ship", "airplane", "scooter", "tractor", "helicopter",
                       "submarine", "sailboat", "taxi", "tram", "rocket"}),
    attributes=frozenset({"glass", "crystal", "transparent", "translucent", "metallic", "shiny", "glossy",
                          "three", "four", "five", "six"}),
    predicates=frozenset({"under", "behind", "inside", "below", "beneath", "underneath"}),
    contexts=frozenset({"fog", "underwater"}),
    together=(frozenset({"moon", "cloud"}),),
)

PROFILES: dict[str, KnownWeaknesses] = {DEMO_WEAKNESSES.name: DEMO_WEAKNESSES}


def profile(name: str | None) -> KnownWeaknesses:
    """A registered profile by name (the demo's when None or "")."""
    if not name:
        return DEMO_WEAKNESSES
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown weakness profile {name!r}; known: {', '.join(PROFILES)}") from None
