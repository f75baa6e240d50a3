"""MetaLogic prompt-pair suites: seeded, content-hashed, each pair knowing what its images hold.

`build_suite` instantiates the templates of `laws` over an object vocabulary — the 80 COCO class
names (``"coco"``, what real detectors report) or the demo's 30 procedural classes (``"demo"``,
what the built-in renderer draws and the demo detector finds) or any list of names.

The default main suite has **800 pairs**, as published: 160 per law, and per law 40 position-less
AND, 40 position-less OR, and 20 each of X-axis AND / OR and Y-axis AND / OR — so the AND / OR
modifiers have 400 pairs each, position-less 400 and the axes 200 each (other sizes keep these
proportions, largest remainder first). The student variant spreads its pairs evenly over its 20
categories (200 by default).

Every pair is a `PairSpec`: the two prompt texts, their instantiated propositional forms, and
what both images must show — derived from the forms' single model: the entities (slot order),
the expected count of each (1 present, 0 negated / absent), the order of the positioned
entities on the axis, and the attribute each must (or must not) have. Both prompts of a pair share
one image ``seed`` (derived from the pair id), so a generator renders A and B from the same noise.

Ids name the content (``metalogic-1.main.demorgan.or.x.cat.dog.apple``), so suites of other sizes
or seeds never give one id two texts; the same arguments always give the same suite and the same
`MetaLogicSuite.content_hash`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...types import WorkstationError
from .forms import Atom, FormError, linear_order, parse, substitute, to_text, unique_model
from .laws import (
    ATTRIBUTES,
    AXIS_WORDS,
    DIMENSION_AXIS,
    LAWS,
    MAIN_DIMENSIONS,
    Template,
    categories,
)

__all__ = ["PairSpec", "MetaLogicSuite", "build_suite", "vocabulary", "pair_seed", "instantiate",
           "expectation", "DEFAULT_VERSION", "DEFAULT_SIZES", "METHOD_NAME"]

METHOD_NAME = "metalogic"
DEFAULT_VERSION = "metalogic-1"
DEFAULT_SIZES = {"main": 800, "student": 200}
SLOTS = ("p", "q", "r")


#: names that take "a pair of" rather than an article (COCO's plural class names)
PAIR_OF: frozenset[str] = frozenset({"scissors", "skis"})


def _article(phrase: str, name: str = "") -> str:
    """'a cat', 'an apple', 'a red apple', 'a pair of scissors', 'a pair of red skis'."""
    if name in PAIR_OF:
        return "a pair of " + phrase
    return ("an " if phrase[:1].lower() in "aeiou" else "a ") + phrase


def _slug(name: str) -> str:
    return "-".join(name.split())


def vocabulary(name: str | Sequence[str]) -> tuple[str, ...]:
    """Object names: "coco" (80 COCO classes), "demo" (the demo's 30 drawable classes) or a list."""
    if isinstance(name, str):
        if name == "coco":
            from ...detection.vocab import COCO_CLASSES

            names: Sequence[str] = COCO_CLASSES
        elif name == "demo":
            from ...demo.classes import DEMO_OBJECTS as SPATIAL_OBJECTS

            names = SPATIAL_OBJECTS
        else:
            raise WorkstationError(
                f"unknown vocabulary {name!r}: use 'coco', 'demo' or a list of object names")
    else:
        names = name
    out = tuple(" ".join(str(n).split()).lower() for n in names)
    if any(not n for n in out):
        raise WorkstationError("object names of a MetaLogic suite must not be empty")
    if len(set(out)) != len(out):
        raise WorkstationError("object names of a MetaLogic suite must be distinct")
    if any(c in n for n in out for c in "[]<>:~&|()@{}\n\r\x00"):
        raise WorkstationError("object names must not contain brackets, operators or control characters")
    return out


def pair_seed(pair_id: str) -> int:
    """The image seed both prompts of a pair are rendered with (31 bits, from the id)."""
    digest = hashlib.sha256(f"metalogic-seed|{pair_id}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


@dataclass(frozen=True)
class PairSpec:
    """One MetaLogic pair and what its two images must both show.

    ``entities`` are lower-case names in slot order; ``expected_count[i]`` is how many of entity i
    a faithful image shows (1, or 0 for a negated entity); ``expected_order`` lists the positioned
    entities first to last on ``axis`` (left to right on "x", top to bottom on "y"; empty for
    position-less pairs); ``attributes[i]`` is "" , an attribute the entity must have ("red") or
    one it must not have ("not red"). ``form_a`` / ``form_b`` are the forms in `forms` text syntax.
    """

    pair_id: str
    variant: str
    law: str
    modifier: str
    dimension: str
    axis: str
    template: str
    text_a: str
    text_b: str
    form_a: str
    form_b: str
    entities: tuple[str, ...]
    expected_count: tuple[int, ...]
    expected_order: tuple[str, ...] = ()
    attributes: tuple[str, ...] = ()
    seed: int = 0
    source: str = ""  # suite name or file the pair came from

    @property
    def prompt_ids(self) -> tuple[str, str]:
        return f"{self.pair_id}.A", f"{self.pair_id}.B"

    @property
    def expected_rank(self) -> tuple[int, ...]:
        """Rank of each entity on the axis (0 = first), -1 for unpositioned entities."""
        pos = {e: i for i, e in enumerate(self.expected_order)}
        return tuple(pos.get(e, -1) for e in self.entities)

    def expected(self) -> dict[str, Any]:
        return {"entities": list(self.entities), "counts": list(self.expected_count),
                "order": list(self.expected_order), "attributes": list(self.attributes)}

    def to_record(self) -> dict[str, Any]:
        """A flat JSON record (the custom pair file format of `io`)."""
        return {"pair_id": self.pair_id, "law": self.law, "modifier": self.modifier,
                "dimension": self.dimension, "prompt_a": self.text_a, "prompt_b": self.text_b,
                "entities": list(self.entities), "expected_counts": list(self.expected_count),
                "expected_order": list(self.expected_order), "attributes": list(self.attributes),
                "form_a": self.form_a, "form_b": self.form_b, "seed": self.seed,
                "variant": self.variant, "template": self.template}

    def prompt_attrs(self, side: str) -> dict[str, Any]:
        """The ``attrs`` of one prompt of the pair (generic Prompts table)."""
        return {"law": self.law, "modifier": self.modifier, "dimension": self.dimension, "axis": self.axis,
                "side": side, "variant": self.variant, "template": self.template,
                "form": self.form_a if side == "A" else self.form_b, "seed": self.seed,
                "expected": self.expected()}


def _fill(text: str, names: dict[str, str], attrs: dict[str, str], axis: str) -> str:
    subs: dict[str, str] = {}
    for s, n in names.items():
        subs[s] = n
        subs["a" + s] = _article(n, n)
        subs["t" + s] = "the " + n
        c = attrs.get(s, "")
        subs["c" + s] = c
        subs["ac" + s] = _article(f"{c} {n}" if c else n, n)
    before, after = AXIS_WORDS.get(axis, ("", ""))
    subs["B"], subs["A"] = before, after
    return text.format(**subs)


def expectation(form: str, entities: Sequence[str]
                ) -> tuple[tuple[int, ...], tuple[str, ...], tuple[str, ...]]:
    """(expected counts, expected order, attributes) of the single model of ``form``.

    Raises FormError when the form has no single model or its order atoms do not give a linear
    order of the entities they position."""
    world = unique_model(parse(form))
    ents = list(entities)
    counts = tuple(int(world.get(Atom("has", (e,)), False)) for e in ents)
    true_before = [(a.args[0], a.args[1]) for a, v in world.items() if v and a.kind == "before"]
    positioned = [e for e in ents if any(e in ab for ab in true_before)]
    order = tuple(linear_order(true_before, positioned)) if positioned else ()
    attrs: list[str] = []
    for e, n in zip(ents, counts):
        if not n:  # an absent entity has no attribute to check
            attrs.append("")
            continue
        req = sorted(a.args[1] for a, v in world.items() if a.kind == "attr" and a.args[0] == e and v)
        bad = sorted(a.args[1] for a, v in world.items() if a.kind == "attr" and a.args[0] == e and not v)
        attrs.append(", ".join(req + [f"not {b}" for b in bad]))
    return counts, order, tuple(attrs)


def instantiate(t: Template, dimension: str, names: Sequence[str], attributes: Sequence[str] = (),
                pair_id: str = "", version: str = DEFAULT_VERSION) -> PairSpec:
    """A `PairSpec` from a template, its dimension, the entity names (slot order) and, for
    attribute templates, one attribute per slot."""
    slots = t.slots
    if len(names) != len(slots):
        raise WorkstationError(f"template {t.key} needs {len(slots)} entities, got {len(names)}")
    nm = dict(zip(slots, names))
    at = dict(zip(slots, attributes)) if attributes else {}
    axis = DIMENSION_AXIS[dimension]
    fa = to_text(substitute(t.form_a, nm, at))
    fb = to_text(substitute(t.form_b, nm, at))
    counts, order, attrs = expectation(fa, list(names))
    if not pair_id:
        parts = [f"{a}-{n}" if a else n for a, n in zip(attributes or [""] * len(names), names)]
        pair_id = ".".join([version, t.variant, t.law.lower(), t.modifier.lower(), dimension]
                           + [_slug(p) for p in parts])
    return PairSpec(
        pair_id=pair_id, variant=t.variant, law=t.law, modifier=t.modifier, dimension=dimension, axis=axis,
        template=t.key, text_a=_fill(t.text_a, nm, at, axis), text_b=_fill(t.text_b, nm, at, axis),
        form_a=fa, form_b=fb, entities=tuple(names), expected_count=counts, expected_order=order,
        attributes=attrs if any(attrs) else (), seed=pair_seed(pair_id),
    )


@dataclass(frozen=True)
class MetaLogicSuite:
    """A list of pairs with its provenance. ``content_hash`` versions the content: equal pairs →
    equal hash, whatever the suite's name or the order of its pairs."""

    name: str
    pairs: tuple[PairSpec, ...]
    params: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.pairs)

    @property
    def content_hash(self) -> str:
        recs = sorted(json.dumps(p.to_record(), sort_keys=True, ensure_ascii=False) for p in self.pairs)
        return hashlib.sha256("\n".join(recs).encode("utf-8")).hexdigest()[:16]

    def prompt_records(self) -> list[dict[str, Any]]:
        """Two records per pair, in the generic ``Prompts`` shape: prompt_id, text, suite, method,
        entities (tuple), attrs (dict), twin_id (the other prompt), group_id (the pair id)."""
        out = []
        for p in self.pairs:
            ia, ib = p.prompt_ids
            for side, pid, twin, text in (("A", ia, ib, p.text_a), ("B", ib, ia, p.text_b)):
                out.append({"prompt_id": pid, "text": text, "suite": self.name, "method": METHOD_NAME,
                            "entities": p.entities, "attrs": p.prompt_attrs(side), "twin_id": twin,
                            "group_id": p.pair_id})
        return out

    def prompt_columns(self) -> dict[str, np.ndarray]:
        """`prompt_records` as numpy object columns (ready for a ``Prompts`` table)."""
        recs = self.prompt_records()
        cols: dict[str, np.ndarray] = {}
        for k in ("prompt_id", "text", "suite", "method", "entities", "attrs", "twin_id", "group_id"):
            arr = np.empty(len(recs), dtype=object)
            arr[:] = [r[k] for r in recs]
            cols[k] = arr
        return cols

    def by_id(self) -> dict[str, PairSpec]:
        return {p.pair_id: p for p in self.pairs}


def _allocate(n: int, weights: Sequence[float]) -> list[int]:
    """Largest-remainder allocation of n items over cells with these weights (ties: first cell)."""
    w = np.asarray(weights, np.float64)
    quota = n * w / w.sum()
    base = np.floor(quota).astype(np.int64)
    rest = n - int(base.sum())
    order = np.argsort(-(quota - base), kind="stable")
    base[order[:rest]] += 1
    return [int(x) for x in base]


def _cell_rng(seed: int, key: str) -> np.random.Generator:
    h = hashlib.sha256(f"metalogic-suite|{int(seed)}|{key}".encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:8], "little"))


def build_suite(variant: str = "main", n_pairs: int | None = None, *, seed: int = 0,
                objects: str | Sequence[str] = "coco", version: str = DEFAULT_VERSION) -> MetaLogicSuite:
    """The built-in MetaLogic suite.

    ``variant`` "main" (5 laws × AND/OR × position-less / X / Y; 800 pairs by default) or
    "student" (5 laws × conjunctive / horizontal / vertical / attributes; 200 by default);
    ``objects`` "coco", "demo" or a list of names; ``seed`` picks the entities (same arguments →
    same suite). Every cell gets distinct entity tuples; a vocabulary too small for that is an
    error.
    """
    if variant not in DEFAULT_SIZES:
        raise WorkstationError(f"unknown MetaLogic variant {str(variant)[:40]!r} (expected main or student)")
    n = DEFAULT_SIZES[variant] if n_pairs is None else int(n_pairs)
    if n < 1:
        raise WorkstationError(f"a MetaLogic suite needs at least one pair, got n_pairs={n}")
    names = vocabulary(objects)
    if len(names) < 3:
        raise WorkstationError("a MetaLogic suite needs at least three object names")
    cells = categories(variant)
    weights = [2.0 if (variant == "main" and dim == MAIN_DIMENSIONS[0]) else 1.0 for _, _, dim, _ in cells]
    sizes = _allocate(n, weights)
    pairs: list[PairSpec] = []
    for (law, mod, dim, t), k in zip(cells, sizes):
        if k == 0:
            continue
        slots = len(t.slots)
        avail = 1
        for i in range(slots):
            avail *= len(names) - i
        if t.uses_attributes:
            for i in range(slots):
                avail *= len(ATTRIBUTES) - i
        if k > avail:
            raise WorkstationError(f"{len(names)} object names give only {avail} distinct {law} {mod} {dim} "
                                   f"pairs; {k} requested")
        rng = _cell_rng(seed, f"{t.key}|{dim}")
        seen: set[tuple[str, ...]] = set()
        while len(seen) < k:
            ents = tuple(names[i] for i in rng.choice(len(names), slots, replace=False))
            atts = tuple(ATTRIBUTES[i] for i in rng.choice(len(ATTRIBUTES), slots, replace=False)) \
                if t.uses_attributes else ()
            key = ents + atts
            if key in seen:
                continue
            seen.add(key)
            try:
                spec = instantiate(t, dim, ents, atts, version=version)
            except FormError as e:  # pragma: no cover - every template is tested
                raise WorkstationError(f"template {t.key}: {e}") from None
            pairs.append(spec)
    vocab_name = objects if isinstance(objects, str) else f"custom{len(names)}"
    name = f"{version}-{variant}-{vocab_name}-n{n}-seed{seed}"
    pairs = [dataclasses.replace(p, source=name) for p in pairs]
    return MetaLogicSuite(name=name, pairs=tuple(pairs),
                          params={"variant": variant, "n_pairs": n, "seed": seed, "objects": vocab_name,
                                  "version": version, "laws": list(LAWS)})
