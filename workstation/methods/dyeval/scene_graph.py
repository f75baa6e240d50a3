"""Scene graphs of test prompts: objects with attributes, relations between objects, context.

DyEval (seed 002, §4.2.2 and App. B.1) turns a failing prompt into a scene graph, splits it in
halves, renders each sub-graph back to text and tests it. Its graph has five kinds of node:
objects, object attributes, relations, relation attributes and context phrases. Here a graph is
an immutable value; every node is one **element** with a stable key:

==========================  ============================================================
``o:<object id>``           an object ("kimono")
``a:<object id>:<attr>``    an attribute of that object ("luxurious")
``r:<relation id>``         a relation between two objects ("with")
``ra:<relation id>:<attr>`` an attribute of that relation ("tightly")
``c:<phrase>``              a context phrase ("in the park")
==========================  ============================================================

Sub-graphs are sets of keys of one root graph (`SceneGraph.restrict`), so halves keep their
identity and merging two halves is the union of their keys: "first put all the nodes on one graph,
then ... unify duplicate object and relationship nodes" (App. B.1) is exactly a set union here.
Restriction keeps the graph's integrity ("the association relations, attributes, and their
corresponding objects" must be maintained): an attribute brings its object, a relation attribute
its relation, and a relation is drawn only when both of its objects are present.

`split_graph` is Algorithm 1's F_split; see its docstring for how elements are counted and halved.
`render_text` is F_test's graph-to-text step, done by rules so that step texts are deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any

from ...types import WorkstationError

_ID = re.compile(r"^[A-Za-z0-9_\-]+$")

OBJECT, ATTRIBUTE, RELATION, RELATION_ATTRIBUTE, CONTEXT = "o", "a", "r", "ra", "c"

#: split levels, in the order Algorithm 1 reaches them
LEVEL_RELATIONS = "relations"
LEVEL_OBJECTS = "objects"
LEVEL_ATTRIBUTES = "attributes"
LEVEL_DROP_ATTRIBUTE = "drop_attribute"


@dataclass(frozen=True)
class SceneObject:
    """An object node with its attributes (in prompt order) and its article.

    ``article`` is how the object was introduced: "a" (rendered "a"/"an"), "the", a possessive
    ("its"), or "" for plurals, mass nouns and names ("vibrant hues", "embroidery").
    """

    id: str
    name: str
    attributes: tuple[str, ...] = ()
    article: str = "a"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "attributes": list(self.attributes), "article": self.article}


@dataclass(frozen=True)
class Relation:
    """A directed relation ``subject predicate object`` ("kimono with embroidery")."""

    id: str
    predicate: str
    subject: str
    object: str
    attributes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "predicate": self.predicate, "subject": self.subject, "object": self.object,
                "attributes": list(self.attributes)}


def _clean(s: object) -> str:
    return " ".join(str(s).split())


def _as_list(x: object) -> list[Any]:
    return x if isinstance(x, list) else []


def _word(x: object) -> str:
    """A name from loose JSON: strings and numbers only ("" for null, lists, objects)."""
    if isinstance(x, bool) or not isinstance(x, (str, int, float)):
        return ""
    return _clean(x)


@dataclass(frozen=True)
class SceneGraph:
    """Objects, relations and context phrases; validated on construction."""

    objects: tuple[SceneObject, ...] = ()
    relations: tuple[Relation, ...] = ()
    context: tuple[str, ...] = ()
    _order: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        self._validate()
        object.__setattr__(self, "_order", {k: i for i, k in enumerate(self._element_list())})

    # --- validation and serialisation ------------------------------------------------------------

    def _validate(self) -> None:
        ids: set[str] = set()
        for o in self.objects:
            if not _ID.match(o.id) or o.id in ids:
                raise WorkstationError(f"scene graph: object id {o.id!r} is empty, malformed or repeated")
            if not o.name.strip():
                raise WorkstationError(f"scene graph: object {o.id!r} has no name")
            if len(set(o.attributes)) != len(o.attributes) or any(not a.strip() for a in o.attributes):
                raise WorkstationError(f"scene graph: object {o.name!r} has an empty or repeated attribute")
            ids.add(o.id)
        rids: set[str] = set()
        for r in self.relations:
            if not _ID.match(r.id) or r.id in rids or r.id in ids:
                raise WorkstationError(f"scene graph: relation id {r.id!r} is empty, malformed or repeated")
            if r.subject not in ids or r.object not in ids:
                raise WorkstationError(f"scene graph: relation {r.predicate!r} names an unknown object")
            if r.subject == r.object:
                raise WorkstationError(f"scene graph: relation {r.predicate!r} relates an object to itself")
            if not r.predicate.strip():
                raise WorkstationError(f"scene graph: relation {r.id!r} has no predicate")
            if len(set(r.attributes)) != len(r.attributes):
                raise WorkstationError(f"scene graph: relation {r.predicate!r} has a repeated attribute")
            rids.add(r.id)
        if len(set(self.context)) != len(self.context) or any(not c.strip() for c in self.context):
            raise WorkstationError("scene graph: empty or repeated context phrase")

    def to_dict(self) -> dict[str, Any]:
        return {"objects": [o.to_dict() for o in self.objects],
                "relations": [r.to_dict() for r in self.relations],
                "context": list(self.context)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SceneGraph:
        """The graph `to_dict` wrote; a WorkstationError names what is wrong."""
        try:
            objs = tuple(SceneObject(str(o["id"]), _clean(o["name"]), tuple(_clean(a) for a in o.get("attributes", ())),
                                     str(o.get("article", "a"))) for o in d.get("objects", ()))
            rels = tuple(Relation(str(r["id"]), _clean(r["predicate"]), str(r["subject"]), str(r["object"]),
                                  tuple(_clean(a) for a in r.get("attributes", ()))) for r in d.get("relations", ()))
            ctx = tuple(_clean(c) for c in d.get("context", ()))
        except (KeyError, TypeError, AttributeError) as e:
            raise WorkstationError(f"scene graph: malformed ({e.__class__.__name__}: {e})") from None
        return cls(objs, rels, ctx)

    def to_paper_dict(self) -> dict[str, Any]:
        """The paper's JSON layout (App. F): context list, entities by name, relations list; each
        entity also carries its ``article`` (our addition, optional on reading)."""
        names = {o.id: o.name for o in self.objects}
        return {
            "context": list(self.context),
            "entities": {o.name: {"attributes": list(o.attributes), "article": o.article} for o in self.objects},
            "relations": [{r.predicate: {"entities": [names[r.subject], names[r.object]],
                                         "attributes": list(r.attributes)}} for r in self.relations],
        }

    @classmethod
    def from_paper_dict(cls, d: Mapping[str, Any]) -> SceneGraph:
        """Read the paper's layout (entities keyed by name; relations a dict or a list of dicts).

        Multi-entity relations ("merging together": past, present, future) become a chain of
        binary relations. Unknown entity names in relations are added as objects. Without an
        ``article`` an entity gets "" when it is counted ("two") or plural-looking ("hues"), else "a".
        """
        if not isinstance(d, Mapping) or not isinstance(d.get("entities", {}), Mapping):
            raise WorkstationError("scene graph: expected an object with 'entities'")
        objs: list[SceneObject] = []
        by_name: dict[str, str] = {}

        def obj(name: str, attrs: Iterable[Any] = (), article: Any = None) -> str:
            key = _word(name).lower()
            if key in by_name:
                return by_name[key]
            oid = f"o{len(objs) + 1}"
            clean: list[str] = []
            for a in attrs:
                a2 = _word(a)
                if a2 and a2 not in clean:
                    clean.append(a2)
            if isinstance(article, str):
                art = _clean(article).lower()
            else:
                counted = bool(clean) and clean[0].lower() in _NUMBER_WORDS
                plural = key.endswith("s") and not key.endswith(("ss", "us", "is"))
                art = "" if counted or plural else "a"
            objs.append(SceneObject(oid, _word(name), tuple(clean), art))
            by_name[key] = oid
            return oid

        for name, spec in d.get("entities", {}).items():
            if not _word(name):
                continue
            attrs = spec.get("attributes", []) if isinstance(spec, Mapping) else []
            art = spec.get("article") if isinstance(spec, Mapping) else None
            obj(str(name), _as_list(attrs), art)
        raw = d.get("relations", [])
        items: list[tuple[str, Any]] = []
        if isinstance(raw, Mapping):
            items = list(raw.items())
        elif isinstance(raw, list):
            for entry in raw:
                if isinstance(entry, Mapping):
                    items.extend(entry.items())
        rels: list[Relation] = []
        for pred, spec in items:
            if not isinstance(spec, Mapping) or not _word(pred):
                continue
            ents = [_word(e) for e in _as_list(spec.get("entities")) if _word(e)]
            rattrs = tuple(dict.fromkeys(_word(a) for a in _as_list(spec.get("attributes")) if _word(a)))
            ids = [obj(e) for e in ents]
            for s, o in pairwise(ids):
                if s != o:
                    rels.append(Relation(f"r{len(rels) + 1}", _word(pred), s, o, rattrs))
        ctx = tuple(dict.fromkeys(_word(c) for c in _as_list(d.get("context")) if _word(c)))
        return cls(tuple(objs), tuple(rels), ctx)

    # --- elements -----------------------------------------------------------------------------------

    def _element_list(self) -> list[str]:
        out: list[str] = []
        for o in self.objects:
            out.append(f"o:{o.id}")
            out.extend(f"a:{o.id}:{a}" for a in o.attributes)
        for r in self.relations:
            out.append(f"r:{r.id}")
            out.extend(f"ra:{r.id}:{a}" for a in r.attributes)
        out.extend(f"c:{c}" for c in self.context)
        return out

    def elements(self) -> tuple[str, ...]:
        """Every element key, in canonical order (objects with their attributes, relations, context)."""
        return tuple(self._order)

    @property
    def size(self) -> int:
        """|c| of Algorithm 1: the number of elements (nodes of the scene graph)."""
        return len(self._order)

    def sort_keys(self, keys: Iterable[str]) -> tuple[str, ...]:
        """``keys`` in this graph's canonical order (unknown keys raise)."""
        ks = set(keys)
        unknown = ks - self._order.keys()
        if unknown:
            raise WorkstationError(f"scene graph: unknown element {min(unknown)!r}")
        return tuple(sorted(ks, key=self._order.__getitem__))

    def object(self, oid: str) -> SceneObject:
        for o in self.objects:
            if o.id == oid:
                return o
        raise WorkstationError(f"scene graph: no object {oid!r}")

    def closure(self, keys: Iterable[str]) -> frozenset[str]:
        """``keys`` with what they depend on: an attribute's object, a relation attribute's relation."""
        ks = set(self.sort_keys(keys))
        for k in list(ks):
            kind, _, rest = k.partition(":")
            if kind == ATTRIBUTE:
                ks.add("o:" + rest.partition(":")[0])
            elif kind == RELATION_ATTRIBUTE:
                ks.add("r:" + rest.partition(":")[0])
        return frozenset(ks)

    def restrict(self, keys: Iterable[str]) -> SceneGraph:
        """The sub-graph made of ``keys`` (closed under `closure`); ids and names are kept. A relation
        is drawn only when both of its objects are present (a cut relation waits in the keys of a
        context until the other half joins it)."""
        ks = self.closure(keys)
        objs = tuple(replace(o, attributes=tuple(a for a in o.attributes if f"a:{o.id}:{a}" in ks))
                     for o in self.objects if f"o:{o.id}" in ks)
        present = {o.id for o in objs}
        rels = tuple(replace(r, attributes=tuple(a for a in r.attributes if f"ra:{r.id}:{a}" in ks))
                     for r in self.relations
                     if f"r:{r.id}" in ks and r.subject in present and r.object in present)
        return SceneGraph(objs, rels, tuple(c for c in self.context if f"c:{c}" in ks))

    def describe(self, key: str) -> str:
        """A short human description of one element ("object kimono", "attribute silk of kimono")."""
        kind, _, rest = key.partition(":")
        names = {o.id: o.name for o in self.objects}
        if kind == OBJECT:
            return f"object {names[rest]}"
        if kind == ATTRIBUTE:
            oid, _, a = rest.partition(":")
            return f"attribute {a} of {names[oid]}"
        if kind in (RELATION, RELATION_ATTRIBUTE):
            rid, _, a = rest.partition(":")
            r = next(x for x in self.relations if x.id == rid)
            rel = f"{names[r.subject]} {r.predicate} {names[r.object]}"
            return f"relation {rel}" if kind == RELATION else f"attribute {a} of relation {rel}"
        return f"context {rest}"

    # --- editing (the auditor corrects the parser) ---------------------------------------------------

    def _next_id(self, prefix: str) -> str:
        used = {o.id for o in self.objects} | {r.id for r in self.relations}
        i = 1
        while f"{prefix}{i}" in used:
            i += 1
        return f"{prefix}{i}"

    def with_object(self, name: str, attributes: Iterable[str] = (), article: str = "a") -> tuple[SceneGraph, str]:
        oid = self._next_id("o")
        o = SceneObject(oid, _clean(name), tuple(_clean(a) for a in attributes), article)
        return replace(self, objects=self.objects + (o,)), oid

    def without_object(self, oid: str) -> SceneGraph:
        self.object(oid)
        return SceneGraph(tuple(o for o in self.objects if o.id != oid),
                          tuple(r for r in self.relations if oid not in (r.subject, r.object)), self.context)

    def renamed(self, oid: str, name: str, article: str | None = None) -> SceneGraph:
        self.object(oid)
        return replace(self, objects=tuple(
            replace(o, name=_clean(name), article=o.article if article is None else article) if o.id == oid else o
            for o in self.objects))

    def with_attribute(self, oid: str, attribute: str) -> SceneGraph:
        self.object(oid)
        return replace(self, objects=tuple(replace(o, attributes=o.attributes + (_clean(attribute),))
                                           if o.id == oid else o for o in self.objects))

    def without_attribute(self, oid: str, attribute: str) -> SceneGraph:
        if attribute not in self.object(oid).attributes:
            raise WorkstationError(f"scene graph: {attribute!r} is not an attribute of {oid!r}")
        return replace(self, objects=tuple(replace(o, attributes=tuple(a for a in o.attributes if a != attribute))
                                           if o.id == oid else o for o in self.objects))

    def with_relation(self, predicate: str, subject: str, obj: str,
                      attributes: Iterable[str] = ()) -> tuple[SceneGraph, str]:
        rid = self._next_id("r")
        r = Relation(rid, _clean(predicate), subject, obj, tuple(_clean(a) for a in attributes))
        return replace(self, relations=self.relations + (r,)), rid

    def without_relation(self, rid: str) -> SceneGraph:
        if rid not in {r.id for r in self.relations}:
            raise WorkstationError(f"scene graph: no relation {rid!r}")
        return replace(self, relations=tuple(r for r in self.relations if r.id != rid))

    def with_context(self, phrase: str) -> SceneGraph:
        return replace(self, context=self.context + (_clean(phrase),))

    def without_context(self, phrase: str) -> SceneGraph:
        if phrase not in self.context:
            raise WorkstationError(f"scene graph: no context {phrase!r}")
        return replace(self, context=tuple(c for c in self.context if c != phrase))

    def render(self) -> str:
        return render_text(self)


_NUMBER_WORDS = frozenset({"two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "several",
                           "many", "few", "some", "multiple", "numerous", "countless", "both", "dozen"})
_AN_EXCEPTIONS = ("uni", "use", "one", "once", "euro", "ewe")


def _a_or_an(word: str) -> str:
    w = word.lower()
    if w.startswith(("hour", "honest", "honou", "heir")):
        return "an"
    if w[:1] in "aeiou" and not w.startswith(_AN_EXCEPTIONS):
        return "an"
    return "a"


def noun_phrase(o: SceneObject) -> str:
    """"a luxurious silk kimono", "elegant floral embroidery", "its owner"."""
    words = [*o.attributes, o.name]
    head = " ".join(words)
    if o.article == "a":
        return f"{_a_or_an(words[0])} {head}"
    return f"{o.article} {head}" if o.article else head


def render_text(g: SceneGraph) -> str:
    """The graph as one sentence (F_test's graph-to-text step, by rules).

    Objects are introduced in graph order; each relation is attached after its subject
    ("A luxurious silk kimono with elegant floral embroidery in vibrant hues."); consecutive
    relations with the same subject and predicate share it ("with a slender body and long legs");
    unrelated groups are joined by "and"; context phrases come last; a graph of context only is
    "A scene <context>.".
    """
    if g.size == 0:
        return ""
    objs = {o.id: o for o in g.objects}
    done_obj: set[str] = set()
    done_rel: set[str] = set()
    clauses: list[str] = []
    for start in g.objects:
        if start.id in done_obj:
            continue
        words = [noun_phrase(start)]
        done_obj.add(start.id)
        in_clause = [start.id]
        progress = True
        while progress:
            progress = False
            for i, r in enumerate(g.relations):
                if r.id in done_rel or r.subject not in in_clause or r.object in done_obj:
                    continue
                targets = [r]
                for r2 in g.relations[i + 1:]:
                    if (r2.id not in done_rel and r2.subject == r.subject and r2.predicate == r.predicate
                            and r2.attributes == r.attributes and r2.object not in done_obj
                            and r2.object not in {t.object for t in targets}):
                        targets.append(r2)
                pred = " ".join([*r.attributes, r.predicate])
                words.append(pred + " " + " and ".join(noun_phrase(objs[t.object]) for t in targets))
                for t in targets:
                    done_rel.add(t.id)
                    done_obj.add(t.object)
                    in_clause.append(t.object)
                progress = True
                break
        clauses.append(" ".join(words))
    # relations whose both ends were introduced elsewhere (cycles, reversed order)
    for r in g.relations:
        if r.id not in done_rel:
            pred = " ".join([*r.attributes, r.predicate])
            clauses.append(f"the {objs[r.subject].name} {pred} the {objs[r.object].name}")
    text = " and ".join(clauses) if clauses else "a scene"
    if g.context:
        text += " " + " ".join(g.context)
    return text[:1].upper() + text[1:] + "."


# --- split and merge ------------------------------------------------------------------------------


@dataclass(frozen=True)
class GraphSplit:
    """F_split's result: two halves (element keys), what neither half holds, and the rule used.

    ``second`` is empty for `LEVEL_DROP_ATTRIBUTE` (one object with one attribute: the only
    drawable half is the bare object; the attribute cannot be drawn alone). ``bridge`` holds the
    relation (with its attributes) cut by an object split; ``dropped`` the attribute left out by
    `LEVEL_DROP_ATTRIBUTE`. Always: first ∪ second ∪ bridge ∪ dropped = the whole graph, and each
    half is strictly smaller than the graph.
    """

    level: str
    first: frozenset[str]
    second: frozenset[str]
    bridge: frozenset[str] = frozenset()
    dropped: frozenset[str] = frozenset()


def _half(n: int) -> int:
    """Size of the first half of n units: ⌈n/2⌉ (the first half takes the odd one)."""
    return (n + 1) // 2


def split_graph(g: SceneGraph) -> GraphSplit | None:
    """Algorithm 1's F_split, following App. B.1; None for a graph of one element (atomic).

    "The segmentation strategy initially targets relation nodes; if a single relation exists or no
    relation exists, the focus shifts to the split of object and attribute nodes until atomic-level
    granularity is achieved (only one node)." Units are halved in graph order, the first half
    taking ⌈n/2⌉ of n units:

    1. **relations** (≥ 2 relations): units are the relations, then the objects in no relation,
       then the context phrases. A relation unit brings its two objects with all their attributes
       (an object shared by relations of both halves is in both: "unify duplicate nodes" on merge).
    2. **objects** (≤ 1 relation, ≥ 2 objects + context phrases): units are the objects (each with
       all its attributes), then the context phrases. The relation goes with a half that holds
       both its objects; otherwise it is the ``bridge`` — kept aside so that merging the halves
       gives the graph back (Fig. 11): "A tiny black crescent moon within a big white cloud." →
       "A tiny black crescent moon." / "A big white cloud." with bridge "within".
    3. **attributes** (one object with ≥ 2 attributes): both halves keep the object and take half
       of its attributes: "A big white cloud." → "A big cloud." / "A white cloud.".
    4. **drop_attribute** (one object with one attribute): "split ... to 'A cloud' by deleting
       attributes" (§5.4): the only half is the bare object.
    """
    n = g.size
    if n == 0:
        raise WorkstationError("scene graph: nothing to split (empty graph)")
    if n == 1:
        return None
    allk = set(g.elements())

    def obj_keys(oid: str) -> set[str]:
        o = g.object(oid)
        return {f"o:{oid}", *(f"a:{oid}:{a}" for a in o.attributes)}

    def rel_keys(rid: str) -> set[str]:
        r = next(x for x in g.relations if x.id == rid)
        return {f"r:{rid}", *(f"ra:{rid}:{a}" for a in r.attributes)} | obj_keys(r.subject) | obj_keys(r.object)

    if len(g.relations) >= 2:
        related = {x for r in g.relations for x in (r.subject, r.object)}
        units = ([rel_keys(r.id) for r in g.relations]
                 + [obj_keys(o.id) for o in g.objects if o.id not in related]
                 + [{f"c:{c}"} for c in g.context])
        k = _half(len(units))
        first = frozenset().union(*units[:k])
        second = frozenset().union(*units[k:])
        return GraphSplit(LEVEL_RELATIONS, first, second)
    if len(g.objects) + len(g.context) >= 2:
        units = [obj_keys(o.id) for o in g.objects] + [{f"c:{c}"} for c in g.context]
        k = _half(len(units))
        first_s = set().union(*units[:k])
        second_s = set().union(*units[k:])
        bridge: set[str] = set()
        for r in g.relations:
            rk = {f"r:{r.id}", *(f"ra:{r.id}:{a}" for a in r.attributes)}
            ends = {f"o:{r.subject}", f"o:{r.object}"}
            if ends <= first_s:
                first_s |= rk
            elif ends <= second_s:
                second_s |= rk
            else:
                bridge |= rk
        return GraphSplit(LEVEL_OBJECTS, frozenset(first_s), frozenset(second_s), frozenset(bridge))
    # one object (a relation needs two), no context
    o = g.objects[0]
    attrs = [f"a:{o.id}:{a}" for a in o.attributes]
    if len(attrs) >= 2:
        k = _half(len(attrs))
        return GraphSplit(LEVEL_ATTRIBUTES, frozenset({f"o:{o.id}", *attrs[:k]}),
                          frozenset({f"o:{o.id}", *attrs[k:]}))
    assert len(attrs) == 1 and allk == {f"o:{o.id}", attrs[0]}
    return GraphSplit(LEVEL_DROP_ATTRIBUTE, frozenset({f"o:{o.id}"}), frozenset(), dropped=frozenset(attrs))


def merge_keys(root: SceneGraph, *parts: Iterable[str]) -> SceneGraph:
    """The union of sub-graphs of ``root`` (duplicate objects and relations are one element)."""
    keys: set[str] = set()
    for p in parts:
        keys.update(p)
    return root.restrict(keys)


def merge_graphs(a: SceneGraph, b: SceneGraph) -> SceneGraph:
    """Merge two graphs that were not cut from one root: objects with the same name (case-
    insensitive) are unified, their attributes and relations united; ``b``'s objects and relations
    are renumbered after ``a``'s."""
    objs = list(a.objects)
    by_name = {o.name.lower(): i for i, o in enumerate(objs)}
    idmap: dict[str, str] = {}
    for o in b.objects:
        i = by_name.get(o.name.lower())
        if i is None:
            nid = f"o{len(objs) + 1}"
            while any(x.id == nid for x in objs):
                nid += "b"
            objs.append(replace(o, id=nid))
            by_name[o.name.lower()] = len(objs) - 1
            idmap[o.id] = nid
        else:
            cur = objs[i]
            objs[i] = replace(cur, attributes=cur.attributes + tuple(x for x in o.attributes if x not in cur.attributes))
            idmap[o.id] = cur.id
    rels = list(a.relations)
    seen = {(r.subject, r.predicate, r.object) for r in rels}
    for r in b.relations:
        s, t = idmap[r.subject], idmap[r.object]
        if (s, r.predicate, t) in seen:
            continue
        nid = f"r{len(rels) + 1}"
        while any(x.id == nid for x in rels) or any(x.id == nid for x in objs):
            nid += "b"
        rels.append(Relation(nid, r.predicate, s, t, r.attributes))
        seen.add((s, r.predicate, t))
    ctx = tuple(dict.fromkeys(a.context + b.context))
    return SceneGraph(tuple(objs), tuple(rels), ctx)
