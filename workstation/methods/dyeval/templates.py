"""The template language model: DyEval's writer that always works offline.

* **Prompts** are composed as scene graphs from the built-in vocabularies (`vocab.py`) by a
  *recipe* chosen from the topic's words (the node's topic first, then its ancestors', then its
  perspective): objects, abstract, explicit / spatial, interactions, implicit (social) relations,
  counting, static / dynamic attributes, style, culture, knowledge. The text is the rendered graph,
  so every template prompt's graph is known. Difficulty grows with depth and with the number of
  records seen (more attributes, a second relation, a context) — the paper asks its LLM to
  "increase the difficulty or lengths ... progressively".
* **Topics** come from sub-topic tables (`vocab.SUBTOPICS`: the nine initial topics and common
  themes) and vocabulary expansion (`vocab.EXPANSIONS`: finer details, combinations, relations with
  other objects); a word that recurs in failing prompts is proposed first ("Material objects
  involving kimono").
* **Scene graphs** of typed prompts come from the rule-based parser (`parse.py`).
* **Reflection** is a rule summary: figures, failure triggers, words over-represented in failures.

Everything is deterministic: the random choices use a generator seeded from (seed, topic, what the
node already has).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from .dedup import deduplicate, first_distinct
from .lm import Generated, ReflectionContext, TopicContext, WrittenPrompt
from .parse import parse_text
from .provenance import TEMPLATES, Provenance
from .scene_graph import Relation, SceneGraph, SceneObject
from .vocab import (
    ABSTRACT_FORMS,
    COLORS,
    CULTURE_ITEMS,
    DYNAMIC_BY_CATEGORY,
    EXPANSIONS,
    IMPLICIT_PAIRS,
    INTERACTIONS,
    KNOWLEDGE_ITEMS,
    MATERIALS,
    NOUNS_BY_CATEGORY,
    QUALITIES,
    SHAPES,
    SIZES,
    SPATIAL_RELATIONS,
    STYLES,
    SUBTOPICS,
    TEXTURES,
)

VOCAB_VERSION = "1"

_IRREGULAR = {"mouse": "mice", "sheep": "sheep", "fish": "fish", "child": "children", "person": "people",
              "man": "men", "woman": "women", "deer": "deer", "wolf": "wolves", "leaf": "leaves",
              "knife": "knives", "goose": "geese", "tooth": "teeth", "foot": "feet"}
_COUNTS = ("two", "three", "four", "five", "six")
_STOP = frozenset(["a", "an", "the", "of", "in", "on", "with", "and", "or", "to", "at", "by", "for", "from", "its", "his", "her", "their", "is", "are", "while", "as", "into", "next", "top", "front", "over", "under", "behind"])

_RECIPE_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("object", ("material object",)),
    ("abstract", ("abstract", "emotion", "idea", "concept", "philosoph", "memory", "feeling")),
    ("implicit", ("implicit", "social", "family", "role", "care", "teach", "relationship", "protect")),
    ("interaction", ("interaction", "action", "activity", "playing")),
    ("count", ("count", "number", "group", "quantit")),
    ("explicit", ("explicit", "spatial", "relation", "position", "orientation", "proximity", "arrangement",
                  "size", "scale", "distance")),
    ("dynamic", ("dynamic", "movement", "motion", "growth", "transform", "change", "weather")),
    ("static", ("static", "color", "colour", "shape", "texture", "material", "attribute", "pattern")),
    ("style", ("style", "paint", "drawing", "art", "digital", "movement")),
    ("culture", ("cultur", "tradition", "festival", "religio", "clothing", "custom", "practice")),
    ("knowledge", ("knowledge", "histor", "landmark", "scien", "ancient", "civili", "instrument", "event")),
)
_CATEGORY_WORDS: dict[str, str] = {
    "animal": "animals", "vehicle": "vehicles", "furniture": "furniture", "food": "food", "plant": "plants",
    "cloth": "clothing", "people": "people", "person": "people", "human": "people", "nature": "nature",
    "sea creature": "animals", "bird": "animals", "dog": "animals", "boat": "vehicles", "car": "vehicles",
    "aircraft": "vehicles", "bicycle": "vehicles", "material object": "objects",
}


def plural(noun: str) -> str:
    if noun in _IRREGULAR:
        return _IRREGULAR[noun]
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _singular(word: str) -> str:
    inv = {v: k for k, v in _IRREGULAR.items()}
    if word in inv:
        return inv[word]
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith("es") and word[:-2].endswith(("s", "x", "z", "ch", "sh")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _rng(*parts: object) -> np.random.Generator:
    h = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:8], "little"))


def _pick(rng: np.random.Generator, seq: Sequence[str], k: int = 1, exclude: Sequence[str] = ()) -> list[str]:
    pool = [s for s in seq if s not in exclude]
    k = min(k, len(pool))
    idx = rng.choice(len(pool), size=k, replace=False)
    return [pool[int(i)] for i in idx]


class _Builder:
    """Builds one graph: objects and relations with ids in order."""

    def __init__(self) -> None:
        self.objects: list[SceneObject] = []
        self.relations: list[Relation] = []
        self.context: list[str] = []

    def obj(self, name: str, attrs: Sequence[str] = (), article: str = "a") -> str:
        oid = f"o{len(self.objects) + 1}"
        self.objects.append(SceneObject(oid, name, tuple(dict.fromkeys(attrs)), article))
        return oid

    def rel(self, pred: str, s: str, o: str) -> None:
        self.relations.append(Relation(f"r{len(self.relations) + 1}", pred, s, o))

    def graph(self) -> SceneGraph:
        return SceneGraph(tuple(self.objects), tuple(self.relations), tuple(dict.fromkeys(self.context)))


_STATIC_FAMILIES = (COLORS, SHAPES, TEXTURES, MATERIALS, SIZES)
_CONCRETE = ("animals", "vehicles", "furniture", "food", "plants", "objects", "nature", "clothing")


class TemplateLM:
    """The deterministic writer (see the module docstring)."""

    name = "templates"

    def __init__(self, seed: int = 0) -> None:
        self.seed = int(seed)

    @property
    def provenance(self) -> Provenance:
        return Provenance(TEMPLATES, model=self.name, settings={"seed": self.seed, "vocabulary": VOCAB_VERSION})

    # --- topics -----------------------------------------------------------------------------------------

    def propose_topics(self, ctx: TopicContext, n: int) -> Generated[list[str]]:
        topic = ctx.topic.strip()
        key = topic.lower()
        cands: list[str] = []
        word = _failing_word(ctx)
        if word:
            cands.append(f"{topic} involving {word}")
        table = SUBTOPICS.get(key)
        if table is None:
            table = next((v for k, v in SUBTOPICS.items() if k in key), None)
        if table is not None:
            rng = _rng(self.seed, "topics", key, len(ctx.existing))
            order = rng.permutation(len(table))
            cands.extend(table[int(i)] for i in order)
        cands.extend(e.format(topic=topic) for e in EXPANSIONS)
        out = first_distinct((c[:1].upper() + c[1:] for c in cands), n, ctx.existing)
        return Generated(out, self.provenance)

    # --- prompts -----------------------------------------------------------------------------------------

    def write_prompts(self, ctx: TopicContext, n: int) -> Generated[list[WrittenPrompt]]:
        recipe_name = choose_recipe(ctx)
        recipe = _RECIPES[recipe_name]
        anchor, category = _anchor(ctx)
        level = min(3, max(0, ctx.depth - 1) + len(ctx.records) // 10)
        rng = _rng(self.seed, "prompts", ctx.topic, ctx.depth, len(ctx.existing), len(ctx.records))
        texts: list[str] = []
        graphs: list[SceneGraph] = []
        for attempt in range(max(20, 20 * n)):
            g = recipe(rng, level + (attempt // (4 * n)) % 2, anchor, category)
            texts.append(g.render())
            graphs.append(g)
        kept = deduplicate(texts, ctx.existing).kept[:n]
        prov = self.provenance
        value = [WrittenPrompt(texts[i], graphs[i], prov) for i in kept]
        notes = (f"recipe {recipe_name}", f"level {level}") + ((f"anchor {anchor}",) if anchor else ())
        return Generated(value, prov, notes)

    # --- scene graphs and reflection ------------------------------------------------------------------

    def parse_scene_graph(self, text: str) -> Generated[SceneGraph]:
        return Generated(parse_text(text), Provenance(TEMPLATES, model="rules", settings={"parser": VOCAB_VERSION}))

    def reflect(self, ctx: ReflectionContext) -> Generated[str]:
        return Generated(rule_reflection(ctx), self.provenance)


# --- recipe selection ------------------------------------------------------------------------------


def choose_recipe(ctx: TopicContext) -> str:
    """The recipe named by the nearest topic word (node topic, then ancestors, then perspective)."""
    for text in (ctx.topic, *reversed(ctx.path), ctx.perspective):
        low = text.lower()
        for name, words in _RECIPE_WORDS:
            if any(w in low for w in words):
                return name
    return "object"


def _anchor(ctx: TopicContext) -> tuple[str, str]:
    """A vocabulary noun named by the topic ("Dogs" → dog) and a category ("Animals")."""
    for text in (ctx.topic, *reversed(ctx.path)):
        words = re.findall(r"[a-z]+", text.lower())
        for w in words:
            s = _singular(w)
            for cat, nouns in NOUNS_BY_CATEGORY.items():
                if s in nouns and cat not in ("abstract", "body"):
                    return s, cat
        low = text.lower()
        for k, cat in _CATEGORY_WORDS.items():
            if k in low:
                return "", cat
    return "", ""


def _concrete(rng: np.random.Generator, anchor: str, category: str, k: int = 1,
              exclude: Sequence[str] = ()) -> list[str]:
    out: list[str] = []
    if anchor and anchor not in exclude:
        out.append(anchor)
    cats = [category] if category in NOUNS_BY_CATEGORY and category not in ("abstract", "body") else list(_CONCRETE)
    while len(out) < k:
        cat = cats[int(rng.integers(len(cats)))]
        w = _pick(rng, NOUNS_BY_CATEGORY[cat], 1, exclude=[*exclude, *out])
        if w:
            out.append(w[0])
    return out[:k]


#: English adjective order: opinion, size, shape, texture, colour, material
_RANK = {w: i for i, fam in enumerate((QUALITIES, SIZES, SHAPES, TEXTURES, COLORS, MATERIALS)) for w in fam}


def _ordered(attrs: Sequence[str]) -> list[str]:
    return sorted(dict.fromkeys(attrs), key=lambda a: _RANK.get(a, 0))


def _static_attrs(rng: np.random.Generator, k: int, families: Sequence[Sequence[str]] = _STATIC_FAMILIES) -> list[str]:
    fams = rng.permutation(len(families))[:k]
    return _ordered([_pick(rng, families[int(f)])[0] for f in fams])


def _r_object(rng: np.random.Generator, level: int, anchor: str, category: str) -> SceneGraph:
    b = _Builder()
    (noun,) = _concrete(rng, anchor, category)
    attrs = _static_attrs(rng, 1 + level // 2) + (_pick(rng, QUALITIES) if level >= 1 else [])
    a = b.obj(noun, _ordered(attrs))
    if level >= 2:
        (other,) = _concrete(rng, "", "", exclude=[noun])
        b.rel(_pick(rng, SPATIAL_RELATIONS[:9])[0], a, b.obj(other, _static_attrs(rng, 1)))
    return b.graph()


def _r_abstract(rng: np.random.Generator, level: int, anchor: str, category: str) -> SceneGraph:
    b = _Builder()
    (idea,) = _pick(rng, NOUNS_BY_CATEGORY["abstract"][:25])
    a = b.obj(idea, [], "")
    (noun,) = _concrete(rng, anchor, category)
    b.rel(_pick(rng, ABSTRACT_FORMS)[0], a, b.obj(noun, _static_attrs(rng, 1 + level // 2)))
    if level >= 2:
        b.context.append(_pick(rng, STYLES)[0])
    return b.graph()


def _r_explicit(rng: np.random.Generator, level: int, anchor: str, category: str) -> SceneGraph:
    b = _Builder()
    n1, n2 = _concrete(rng, anchor, category, 2)
    a = b.obj(n1, _static_attrs(rng, min(2, level)))
    c = b.obj(n2, _static_attrs(rng, 1 if level >= 1 else 0))
    b.relations.append(Relation("r1", _pick(rng, SPATIAL_RELATIONS[:12])[0], a, c))
    if level >= 2:
        (n3,) = _concrete(rng, "", "", exclude=[n1, n2])
        b.rel(_pick(rng, SPATIAL_RELATIONS[:9])[0], c, b.obj(n3, _static_attrs(rng, 1)))
    return b.graph()


def _r_interaction(rng: np.random.Generator, level: int, anchor: str, category: str) -> SceneGraph:
    b = _Builder()
    (person,) = _pick(rng, NOUNS_BY_CATEGORY["people"][:12])
    (thing,) = _concrete(rng, anchor, category or "animals")
    a = b.obj(person, _pick(rng, QUALITIES[:40]) if level >= 1 else [])
    b.rel(_pick(rng, INTERACTIONS)[0], a, b.obj(thing, _static_attrs(rng, 1 + level // 2, (SIZES, COLORS, TEXTURES))))
    if level >= 2:
        b.context.append(_pick(rng, ("in the park", "on a beach", "in a busy street", "at night", "in the snow"))[0])
    return b.graph()


def _r_implicit(rng: np.random.Generator, level: int, anchor: str, category: str) -> SceneGraph:
    b = _Builder()
    s, pred, o = IMPLICIT_PAIRS[int(rng.integers(len(IMPLICIT_PAIRS)))]
    a = b.obj(s, _pick(rng, QUALITIES[:40]) if level >= 1 else [])
    c = b.obj(o, [], "their" if level >= 1 else "a")
    b.rel(pred, a, c)
    if level >= 2:
        b.context.append(_pick(rng, ("at home", "in a hospital", "at a train station", "in a classroom"))[0])
    return b.graph()


def _r_count(rng: np.random.Generator, level: int, anchor: str, category: str) -> SceneGraph:
    b = _Builder()
    n1, n2 = _concrete(rng, anchor, category, 2)
    a = b.obj(plural(n1), [_COUNTS[min(level + int(rng.integers(2)), len(_COUNTS) - 1)], *_static_attrs(rng, 1)], "")
    if level >= 1:
        c = b.obj(plural(n2), [_pick(rng, _COUNTS)[0]], "")
        b.rel(_pick(rng, ("next to", "on", "under", "behind"))[0], a, c)
    return b.graph()


def _r_static(rng: np.random.Generator, level: int, anchor: str, category: str) -> SceneGraph:
    b = _Builder()
    (noun,) = _concrete(rng, anchor, category)
    a = b.obj(noun, _static_attrs(rng, 2 + level // 2))
    if level >= 1:
        (other,) = _concrete(rng, "", "", exclude=[noun])
        b.rel("with", a, b.obj(other, _static_attrs(rng, 1 + level // 2)))
    return b.graph()


def _r_dynamic(rng: np.random.Generator, level: int, anchor: str, category: str) -> SceneGraph:
    b = _Builder()
    cat = category if category in DYNAMIC_BY_CATEGORY else list(DYNAMIC_BY_CATEGORY)[int(rng.integers(len(DYNAMIC_BY_CATEGORY)))]
    (noun,) = _concrete(rng, anchor if category in DYNAMIC_BY_CATEGORY else "", cat)
    a = b.obj(noun, [*(_static_attrs(rng, 1, (SIZES, COLORS)) if level >= 1 else []), _pick(rng, DYNAMIC_BY_CATEGORY[cat])[0]])
    if level >= 1:
        (other,) = _concrete(rng, "", "", exclude=[noun])
        b.rel(_pick(rng, ("over", "through", "around", "past", "toward"))[0], a, b.obj(other, [], "a"))
    if level >= 2:
        b.context.append(_pick(rng, ("at sunset", "in the rain", "during a storm", "at night"))[0])
    return b.graph()


def _r_style(rng: np.random.Generator, level: int, anchor: str, category: str) -> SceneGraph:
    g = _r_object(rng, max(0, level - 1), anchor, category)
    return g.with_context(_pick(rng, STYLES)[0])


def _r_items(items: Sequence[tuple[str, str]]) -> Callable[[np.random.Generator, int, str, str], SceneGraph]:
    def recipe(rng: np.random.Generator, level: int, anchor: str, category: str) -> SceneGraph:
        b = _Builder()
        noun, ctx = items[int(rng.integers(len(items)))]
        a = b.obj(noun, _static_attrs(rng, 1 + level // 2, (SIZES, COLORS)))
        if level >= 1:
            (person,) = _pick(rng, NOUNS_BY_CATEGORY["people"][:12])
            p = b.obj(person, _pick(rng, QUALITIES[:40]) if level >= 2 else [])
            b.rel(_pick(rng, ("next to", "beside", "in front of"))[0], a, p)
        b.context.append(ctx)
        return b.graph()
    return recipe


_RECIPES: dict[str, Callable[[np.random.Generator, int, str, str], SceneGraph]] = {
    "object": _r_object, "abstract": _r_abstract, "explicit": _r_explicit, "interaction": _r_interaction,
    "implicit": _r_implicit, "count": _r_count, "static": _r_static, "dynamic": _r_dynamic, "style": _r_style,
    "culture": _r_items(CULTURE_ITEMS), "knowledge": _r_items(KNOWLEDGE_ITEMS),
}
RECIPES: tuple[str, ...] = tuple(_RECIPES)


# --- rule reflection ---------------------------------------------------------------------------------


def _content_words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z][a-z'\-]+", text.lower()) if w not in _STOP]


def _failing_word(ctx: TopicContext) -> str:
    """The content word most over-represented in failing records (at least two failing records)."""
    fail = Counter(w for r in ctx.records if r.score == 0 for w in set(_content_words(r.text)))
    ok = Counter(w for r in ctx.records if r.score == 1 for w in set(_content_words(r.text)))
    best = [(c - ok[w], w) for w, c in fail.items() if c >= 2 and c > ok[w]]
    return max(best)[1] if best else ""


def word_failure_table(records: Sequence[tuple[str, int | None]]) -> list[tuple[str, int, int]]:
    """(word, failing records, passing records) for words of failing records whose fail share
    exceeds the overall fail share, most failing first."""
    judged = [(t, s) for t, s in records if s is not None]
    if not judged:
        return []
    base = sum(1 for _, s in judged if s == 0) / len(judged)
    fail = Counter(w for t, s in judged if s == 0 for w in set(_content_words(t)))
    ok = Counter(w for t, s in judged if s == 1 for w in set(_content_words(t)))
    rows = [(w, c, ok[w]) for w, c in fail.items() if c / (c + ok[w]) > base]
    rows.sort(key=lambda r: (-r[1], r[2], r[0]))
    return rows


def rule_reflection(ctx: ReflectionContext) -> str:
    """A point list: figures, failure triggers, error-prone words, passing patterns."""
    points: list[str] = []
    judged = [r for r in ctx.records if r.score is not None]
    fails = [r for r in judged if r.score == 0]
    apr = f"{ctx.passes / ctx.tests:.2f}" if ctx.tests else "n/a"
    points.append(f"Topic '{ctx.topic}': {ctx.tests} text-image tests, {ctx.passes} passed (APR {apr}); "
                  f"{ctx.bugs} of {len(ctx.records)} test inputs are bugs (pass rate < {ctx.rho:g}).")
    seen: set[tuple[str, str]] = set()
    for t in ctx.triggers:
        if (t.kind, t.text) in seen:
            continue
        seen.add((t.kind, t.text))
        if t.kind == "attribute":
            points.append(f"Failure trigger (attribute): '{t.cell_text}' — with '{t.context_text}' the bare "
                          f"object passes, so the attribute fails the test: '{t.text}'.")
        elif not t.context_text:
            points.append(f"Failure trigger: '{t.cell_text}' fails on its own ({', '.join(t.elements)}).")
        else:
            points.append(f"Combination failure: '{t.cell_text}' fails together with '{t.context_text}' "
                          f"although the parts pass alone: '{t.text}'.")
    rows = word_failure_table([(r.text, r.score) for r in (*ctx.records, *ctx.steps)])
    if rows:
        words = ", ".join(f"{w} ({f} failing / {p} passing)" for w, f, p in rows[:6])
        points.append(f"Error-prone words: {words}.")
    if fails:
        points.append("Failing inputs: " + "; ".join(f"'{r.text}'" for r in fails[:5]) + ".")
    passing = [r for r in judged if r.score == 1]
    if passing:
        points.append("The model handles: " + "; ".join(f"'{r.text}'" for r in passing[:3]) + ".")
    if not fails and not ctx.triggers:
        points.append("No failures in this topic: finer or combined topics are the next step.")
    return "\n".join(f"{i}. {p}" for i, p in enumerate(points, 1))
