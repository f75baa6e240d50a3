"""Questions derived from a prompt by template, and how their answers are checked (TIFA-lite).

``derive_questions(text, entities=None)`` parses the prompt with deterministic rules (no model,
no randomness) into entities — each with an optional count, colours and a status — and spatial
relations, then asks, per entity in order of first mention:

==========  ===================================================  =========================
kind        question                                             expected answer
==========  ===================================================  =========================
presence    "Is there a {noun}?"                                 "yes" ("no" if negated)
count       "How many {nouns} are there?"                        the number ("2")
color       "What color is the {noun}?" / "are the {nouns}?"     one of the colours named
==========  ===================================================  =========================

and then, per relation, "Is the {a} to the left of the {b}?" (also "to the right of", "above",
"below", "in front of", "behind", "next to"; "Are the {as} …" for a plural subject), expecting
"yes" ("no" when the relation is negated).

The rules, in order (``parse_prompt``):

1. Lower-case words; a relation phrase ("to the left of", "on top of", "under", "beside", …)
   is one token. Conjunctions ("and", "or", "nor", commas), prepositions, verbs and the copula
   end a noun phrase; a determiner or number ("a", "the", "two", "3") starts a new one.
2. A noun phrase's head is its last word that is not a determiner, number, colour, listed
   adjective, predicate ("present", "visible") or -ing verb; a known two-word name ending in
   the head (COCO names such as "teddy bear", "fire hydrant") is kept whole. Heads that name the
   picture rather than its content ("photo", "scene", "image", "painting", "side", …) are not
   entities. Colours before the head are its colours; a number is its count ("a"/"an" is not a
   count). A colour-only phrase before "and" ("a red and white bus") lends its colours to the next.
3. Negation: "no", "not", "without", "never", "lacking", "neither … nor" negate the next phrase
   (the entity is expected absent: only "Is there a …?" is asked, expecting "no").
   A phrase negated twice, a disjunction ("a cat or a dog", "either … or"), and everything after a
   clause-level negation ("it is not the case that …", "not true that …") have no determinate
   answer: those entities are *skipped* (listed in ``Scene.skipped`` with the reason), not asked.
   "without a cat or a dog" / "no cats or dogs" negate both.
4. A relation links the nearest entity phrase before it and the first one after it, in the same
   clause; it is asked only when both entities are expected present.

``entities`` (names, e.g. a project's ``Prompts.entities``; None or empty: none given) restricts
the questions to those names: each is matched to its phrase in the text (same singular head; the name's other
words in the phrase) for count, colours, negation and relations; a name not found in the text is
asked about as present. The same noun mentioned twice is one entity (colours merged; a count or
status that disagrees is dropped / makes it skipped).

Answers are checked by ``is_correct``: yes/no by the answer's first word; counts by the first
number in it (digits or number words, "none" = 0); colours when a colour word of the answer is one
of the expected ones (grey = gray, golden = gold).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

PRESENCE, COUNT, COLOR, RELATION = "presence", "count", "color", "relation"
PRESENT, ABSENT, UNCERTAIN = "present", "absent", "uncertain"

COLORS: dict[str, str] = {c: c for c in (
    "red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white", "gray", "silver",
    "gold", "beige", "violet", "cyan", "magenta", "turquoise", "navy", "teal", "maroon", "indigo", "lavender",
)}
COLORS.update({"grey": "gray", "golden": "gold"})

NUMBERS: dict[str, int] = {w: i for i, w in enumerate(
    ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"))}
NUMBER_WORDS = {v: k for k, v in NUMBERS.items()}

RELATION_PHRASES: dict[str, tuple[str, ...]] = {
    "left_of": ("to the left of", "on the left of", "to the left side of", "on the left side of", "left of"),
    "right_of": ("to the right of", "on the right of", "to the right side of", "on the right side of", "right of"),
    "above": ("on top of", "above", "over", "atop"),
    "below": ("underneath", "beneath", "below", "under"),
    "in_front_of": ("in front of",),
    "behind": ("behind",),
    "next_to": ("next to", "beside"),
}
RELATION_TEXT: dict[str, str] = {
    "left_of": "to the left of", "right_of": "to the right of", "above": "above", "below": "below",
    "in_front_of": "in front of", "behind": "behind", "next_to": "next to",
}
CLAUSE_NEGATIONS: tuple[tuple[str, ...], ...] = (
    ("not", "the", "case"), ("not", "true", "that"), ("false", "that"), ("untrue", "that"),
)
NEGATIONS = frozenset({"no", "not", "without", "never", "lacking", "lacks", "lack", "isn't", "aren't",
                       "doesn't", "don't", "hasn't", "haven't", "none"})
DETERMINERS = frozenset({"a", "an", "the", "some", "several", "many", "few", "each", "every", "another", "any",
                         "his", "her", "my", "our", "your", "its", "their"})
COORDINATORS = frozenset({"and", "or", "nor", ",", ";", "&"})
SEPARATORS = frozenset({
    "with", "within", "in", "on", "at", "of", "near", "by", "inside", "into", "onto", "from", "for", "while",
    "where", "which", "who", "whose", "that", "is", "are", "was", "were", "be", "being", "been", "am", "there",
    "it", "they", "them", "this", "these", "those", "both", "but", "as", "very", "also", "just", "only", "to",
    "has", "have", "having", "does", "do", "did", "can", "will", "next", "around", "across", "along", "against",
    "between", "among", "through", "toward", "towards", "up", "down", "out", "off", "about", "like", "than",
    "so", "too", "then", "here", "all", "either", "neither", "case", "true", ".", "!", "?", ":",
})
VERBS = frozenset({
    "contain", "contains", "containing", "show", "shows", "showing", "shown", "depict", "depicts", "depicting",
    "include", "includes", "including", "feature", "features", "featuring", "hold", "holds", "holding",
    "wear", "wears", "wearing", "ride", "rides", "riding", "sit", "sits", "sitting", "stand", "stands",
    "standing", "lie", "lies", "lying", "eat", "eats", "eating", "look", "looks", "looking", "play", "plays",
    "playing", "appear", "appears", "appearing", "placed", "located", "positioned", "made", "filled",
    "covered", "seen", "see", "sees", "rest", "rests", "resting", "hang", "hangs", "hanging", "fly", "flies",
    "flying", "float", "floats", "floating", "chase", "chases", "chasing", "present", "visible",
})
ADJECTIVES = frozenset({
    "big", "small", "large", "tiny", "huge", "little", "tall", "short", "long", "old", "young", "new", "happy",
    "sad", "cute", "beautiful", "pretty", "ugly", "fluffy", "shiny", "bright", "dark", "light", "wooden",
    "metal", "metallic", "plastic", "glass", "round", "square", "empty", "full", "wet", "dry", "hot", "cold",
    "wild", "single", "giant", "miniature", "fat", "thin", "smiling", "elegant", "vibrant", "luxurious",
    "realistic", "detailed", "modern", "ancient", "vintage", "colorful", "colourful", "striped", "spotted",
    "furry", "soft", "hard", "heavy", "fresh", "ripe", "rotten", "broken", "open", "closed", "other", "same",
    "only", "whole", "entire", "high", "low", "left", "right", "front", "back", "middle", "center", "top",
    "bottom", "floral", "famous", "lonely", "sleepy", "angry", "busy", "quiet", "sunny", "rainy", "snowy",
})
ING_NOUNS = frozenset({"building", "painting", "ceiling", "ring", "king", "wing", "string", "swing", "clothing",
                       "earring", "pudding", "icing", "bedding", "sibling", "duckling", "seedling", "thing",
                       "spring", "sling", "ping", "dumpling", "stuffing", "wedding", "awning", "railing"})
META_NOUNS = frozenset({
    "photo", "photograph", "picture", "image", "scene", "illustration", "painting", "drawing", "sketch", "view",
    "rendering", "render", "shot", "closeup", "close-up", "portrait", "background", "foreground", "side",
    "left", "right", "top", "bottom", "middle", "center", "centre", "front", "back", "case", "way", "kind",
    "type", "sort", "lot", "lots", "group", "pair", "bunch", "couple", "set", "pile", "stack", "number",
    "herd", "flock", "style", "art", "artwork", "hue", "hues", "color", "colour", "colors", "colours", "shade",
    "thing", "things", "something", "anything", "nothing", "someone", "one", "ones", "other", "others", "version",
})
COMPOUNDS = frozenset({
    "traffic light", "fire hydrant", "stop sign", "parking meter", "sports ball", "baseball bat", "baseball glove",
    "tennis racket", "wine glass", "hot dog", "potted plant", "dining table", "cell phone", "teddy bear",
    "hair drier", "hair dryer", "ice cream", "polar bear", "christmas tree", "coffee cup", "soccer ball",
    "tennis ball", "traffic cone", "street lamp", "fire truck", "police car",
})
IRREGULAR_PLURALS: dict[str, str] = {
    "person": "people", "man": "men", "woman": "women", "child": "children", "mouse": "mice", "goose": "geese",
    "tooth": "teeth", "foot": "feet", "ox": "oxen", "knife": "knives", "leaf": "leaves", "wolf": "wolves",
    "shelf": "shelves", "loaf": "loaves", "half": "halves", "calf": "calves", "life": "lives", "wife": "wives",
    "thief": "thieves", "scarf": "scarves", "elf": "elves", "potato": "potatoes", "tomato": "tomatoes",
    "hero": "heroes", "mango": "mangoes", "bus": "buses", "cactus": "cacti", "die": "dice", "puppy": "puppies",
}
IRREGULAR_SINGULARS = {v: k for k, v in IRREGULAR_PLURALS.items()}
SAME_PLURAL = frozenset({"sheep", "fish", "deer", "moose", "bison", "salmon", "trout", "aircraft", "species",
                         "series", "scissors", "pants", "jeans", "shorts", "glasses", "people", "police"})
IE_NOUNS = frozenset({"cookie", "movie", "brownie", "zombie", "hippie", "pixie", "rookie", "selfie", "smoothie",
                      "beanie", "goalie", "genie", "birdie", "hoodie", "veggie", "collie", "calorie", "pie", "tie"})
YES_WORDS = frozenset({"yes", "yeah", "yep", "true", "correct"})
NO_WORDS = frozenset({"no", "nope", "false", "not"})
ADJECTIVE_SUFFIXES = ("ful", "ous", "ive", "able", "ible", "less", "ish")

_TOKEN = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*|[,;&.!?:]")


# ------------------------------------------------------------------------------------- word forms


def singular(word: str) -> str:
    """'dogs' → 'dog', 'boxes' → 'box', 'puppies' → 'puppy', 'people' → 'person'; a singular stays."""
    w = word.lower()
    if w in SAME_PLURAL or w in IRREGULAR_PLURALS:
        return IRREGULAR_SINGULARS.get(w, w)
    if w in IRREGULAR_SINGULARS:
        return IRREGULAR_SINGULARS[w]
    if len(w) <= 3 or w.endswith(("ss", "us", "is", "ous")) or not w.endswith("s"):
        return w
    if w.endswith("ies") and len(w) > 4:
        return w[:-1] if w[:-1] in IE_NOUNS else w[:-3] + "y"
    if w.endswith(("sses", "xes", "zzes", "ches", "shes")):
        return w[:-2]
    return w[:-1]


def plural(name: str) -> str:
    """Plural of a (possibly multi-word) name: its last word pluralised."""
    head, _, last = name.rpartition(" ")
    w = last.lower()
    if w in SAME_PLURAL:
        p = w
    elif w in IRREGULAR_PLURALS:
        p = IRREGULAR_PLURALS[w]
    elif w.endswith(("s", "x", "z", "ch", "sh")):
        p = w + "es"
    elif w.endswith("y") and len(w) > 1 and w[-2] not in "aeiou":
        p = w[:-1] + "ies"
    else:
        p = w + "s"
    return f"{head} {p}" if head else p


def article(name: str) -> str:
    """'a' or 'an' before ``name`` (by its sound, with the usual exceptions)."""
    w = name.lower()
    if w.startswith(("uni", "use", "usu", "uti", "eu", "one", "ewe", "ufo")):
        return "a"
    if w.startswith(("hour", "honest", "honor", "honour", "heir")):
        return "an"
    return "an" if w[:1] in "aeiou" else "a"


def _number(word: str) -> int | None:
    if word.isdigit():
        return int(word)
    return NUMBERS.get(word)


# ------------------------------------------------------------------------------------- parsed scene


@dataclass
class Entity:
    """An object named in the prompt (``name`` singular, lower case) and what the prompt says of it."""

    name: str
    count: int | None = None
    colors: tuple[str, ...] = ()
    status: str = PRESENT  # present | absent | uncertain
    reason: str = ""  # why it is absent / uncertain
    plural: bool = False  # named in the plural ("dogs") or with a count ≥ 2

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "count": self.count, "colors": list(self.colors), "status": self.status,
                "reason": self.reason}


@dataclass(frozen=True)
class Relation:
    a: str
    relation: str  # a key of RELATION_TEXT
    b: str
    negated: bool = False


@dataclass
class Scene:
    """What ``parse_prompt`` found: entities in order of first mention, relations, skipped notes."""

    text: str
    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "cat: disjunction" …

    def entity(self, name: str) -> Entity | None:
        return next((e for e in self.entities if e.name == name), None)


@dataclass(frozen=True)
class Question:
    """One question: its kind, text, the accepted answers, and the entities it is about."""

    kind: str  # presence | count | color | relation
    text: str
    expected: tuple[str, ...]
    entity: str
    other: str = ""  # the second entity of a relation

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "question": self.text, "expected": list(self.expected), "entity": self.entity,
                **({"other": self.other} if self.other else {})}


# ------------------------------------------------------------------------------------- parsing


@dataclass
class _Phrase:
    words: list[str]
    neg: int = 0
    after_clause_neg: bool = False
    name: str = ""  # entity name ("" if none)
    head_plural: bool = False
    count: int | None = None
    colors: list[str] = field(default_factory=list)


@dataclass
class _Event:
    kind: str  # phrase | rel | coord | sep | neg | marker | clause_neg
    value: str = ""
    phrase: _Phrase | None = None
    neg: int = 0


def _tokens(text: str) -> list[str]:
    t = text.lower().replace("\u2019", "'")
    out = []
    for w in _TOKEN.findall(t):
        if w.endswith("'s") and w not in NEGATIONS:  # possessive: "cat's" → "cat"
            w = w[:-2]
        out.append(w)
    return out


_REL_SEQS = sorted(((tuple(p.split()), rel) for rel, ps in RELATION_PHRASES.items() for p in ps),
                   key=lambda x: -len(x[0]))


def _match(tokens: list[str], i: int, seq: tuple[str, ...]) -> bool:
    return tuple(tokens[i : i + len(seq)]) == seq


def _events(tokens: list[str]) -> list[_Event]:
    events: list[_Event] = []
    cur: list[str] = []
    pending = 0
    clause_neg = False

    def flush() -> None:
        nonlocal cur, pending
        if cur:
            events.append(_Event("phrase", phrase=_Phrase(cur, pending, clause_neg)))
            cur, pending = [], 0

    i = 0
    while i < len(tokens):
        cn = next((s for s in CLAUSE_NEGATIONS if _match(tokens, i, s)), None)
        if cn is not None:
            flush()
            events.append(_Event("clause_neg"))
            clause_neg, pending = True, 0
            i += len(cn)
            continue
        rel = next(((s, r) for s, r in _REL_SEQS if _match(tokens, i, s)), None)
        if rel is not None:
            flush()
            events.append(_Event("rel", rel[1], neg=pending))
            pending = 0
            i += len(rel[0])
            continue
        w = tokens[i]
        i += 1
        if w in NEGATIONS:
            flush()
            events.append(_Event("neg", w))  # ends a coordination: "a cat without a dog or a bird"
            pending += 1
        elif w in COORDINATORS:
            flush()
            events.append(_Event("coord", w))
            if w == "nor":
                pending += 1
        elif w in ("either", "neither"):
            flush()
            events.append(_Event("marker", w))
            if w == "neither":
                pending += 1
        elif w in SEPARATORS or w in VERBS:
            flush()
            events.append(_Event("sep", w))
        elif w in DETERMINERS or _number(w) is not None:
            if cur and not all(x in DETERMINERS or _number(x) is not None for x in cur):
                flush()
            cur.append(w)
        else:
            cur.append(w)
    flush()
    return events


def _is_adjective(w: str, alone: bool) -> bool:
    return w in ADJECTIVES or w in COLORS or (alone and w.endswith(ADJECTIVE_SUFFIXES))


def _analyse(p: _Phrase) -> None:
    """Fill count, colours, head name of a phrase."""
    rest: list[str] = []
    has_det = False
    for w in p.words:
        n = _number(w)
        if w in DETERMINERS:
            has_det = True
        elif n is not None:
            p.count, has_det = n, True
        elif w in COLORS:
            p.colors.append(COLORS[w])
        else:
            rest.append(w)
    while rest and (rest[-1] in VERBS or (rest[-1].endswith("ing") and len(rest[-1]) > 4
                                          and rest[-1] not in ING_NOUNS) or rest[-1].endswith("ly")):
        rest.pop()
    alone = not has_det and len(rest) == 1
    if not rest or _is_adjective(rest[-1], alone):
        return
    head = singular(rest[-1])
    p.head_plural = head != rest[-1] or rest[-1] in SAME_PLURAL - {"sheep", "fish", "deer"}
    if head in META_NOUNS or rest[-1] in META_NOUNS:
        return
    name = head
    if len(rest) >= 2 and f"{rest[-2]} {head}" in COMPOUNDS:
        name = f"{rest[-2]} {head}"
    p.name = name


def _carry_colours(events: list[_Event]) -> list[_Event]:
    """'a red and white bus': a colour-only phrase before 'and' lends its colours (and count, negation)
    to the next phrase, and the two become one."""
    out: list[_Event] = []
    k = 0
    while k < len(events):
        e = events[k]
        p = e.phrase
        if (p is not None and not p.name and p.colors and k + 2 < len(events) and events[k + 1].kind == "coord"
                and events[k + 1].value in ("and", ",") and events[k + 2].phrase is not None):
            nxt = events[k + 2].phrase
            assert nxt is not None
            nxt.colors[:0] = p.colors
            nxt.count = p.count if nxt.count is None else nxt.count
            nxt.neg = max(nxt.neg, p.neg)
            k += 2  # drop the colour-only phrase and its 'and'
            continue
        out.append(e)
        k += 1
    return out


def _statuses(events: list[_Event]) -> dict[int, tuple[str, str]]:
    """Status and reason per phrase (by id) from negations, disjunctions and clause negations."""
    out: dict[int, tuple[str, str]] = {}
    k = 0
    while k < len(events):
        if events[k].kind not in ("phrase", "marker"):
            k += 1
            continue
        markers: set[str] = set()
        while k < len(events) and events[k].kind == "marker":
            markers.add(events[k].value)
            k += 1
        group: list[_Phrase] = []
        coords: set[str] = set()
        while k < len(events):
            e = events[k]
            # a negation after 'and' / 'or' / 'either' belongs to the coordination ("either no A or no B");
            # after a phrase it starts a new one ("a cat without a dog")
            inner_neg = e.kind == "neg" and k > 0 and events[k - 1].kind in ("coord", "marker", "neg")
            if e.kind not in ("phrase", "coord", "marker") and not inner_neg:
                break
            if e.kind == "marker" and group:  # "a cat and either a dog or a bird": 'either' opens its own
                break
            if e.kind == "phrase" and e.phrase is not None:
                group.append(e.phrase)
            elif e.kind == "coord":
                coords.add(e.value)
            elif e.kind == "marker":
                markers.add(e.value)
            k += 1
        named = [p for p in group if p.name]
        for p in named:
            if p.after_clause_neg:
                out[id(p)] = (UNCERTAIN, "under a clause negation")
            elif p.neg >= 2:
                out[id(p)] = (UNCERTAIN, "double negation")
            elif "neither" in markers or "nor" in coords:
                out[id(p)] = (ABSENT, "neither/nor") if p.neg == 1 else (UNCERTAIN, "neither/nor")
            elif "or" in coords or "either" in markers:
                first_neg = bool(group) and group[0].neg == 1 and all(q.neg == 0 for q in group[1:])
                if first_neg and "either" not in markers:
                    out[id(p)] = (ABSENT, "negated disjunction")
                else:
                    out[id(p)] = (UNCERTAIN, "disjunction")
            elif p.neg == 1:
                out[id(p)] = (ABSENT, "negated")
            else:
                out[id(p)] = (PRESENT, "")
    return out


def _match_given(p: _Phrase, given: str) -> bool:
    words = given.split()
    if not p.name or singular(words[-1]) != p.name.split()[-1]:
        return False
    return all(w in p.words for w in words[:-1])


def parse_prompt(text: str, entities: Sequence[str] | None = None) -> Scene:
    """Entities, relations and skipped notes of ``text`` (see the module docstring for the rules)."""
    events = _events(_tokens(text))
    for e in events:
        if e.phrase is not None:
            _analyse(e.phrase)
    events = _carry_colours(events)
    status = _statuses(events)
    given = list(dict.fromkeys(" ".join(g.lower().split()) for g in entities or () if g and g.strip()))
    # the entity name each phrase stands for (no names given, or an empty list: the phrases' own)
    if given:
        for e in events:
            if e.phrase is not None and e.phrase.name:
                e.phrase.name = next((g for g in given if _match_given(e.phrase, g)), "")
    scene = Scene(text)
    by_name: dict[str, Entity] = {}
    for e in events:
        p = e.phrase
        if p is None or not p.name:
            continue
        st, reason = status.get(id(p), (PRESENT, ""))
        plural_form = p.head_plural or (p.count is not None and p.count >= 2)
        old = by_name.get(p.name)
        if old is None:
            ent = Entity(p.name, p.count, tuple(dict.fromkeys(p.colors)), st, reason, plural_form)
            by_name[p.name] = ent
            scene.entities.append(ent)
            continue
        old.colors = tuple(dict.fromkeys(old.colors + tuple(p.colors)))
        if old.count != p.count:
            old.count = old.count if p.count is None else (p.count if old.count is None else None)
        if old.status != st:
            if UNCERTAIN not in (old.status, st):
                old.status, old.reason = UNCERTAIN, "named both present and absent"
            elif old.status != UNCERTAIN:
                old.status, old.reason = st, reason
    for g in given:  # names the text does not mention (in a recognisable phrase) are asked as given
        if g not in by_name:
            ent = Entity(g, reason="not found in the text; asked as given")
            by_name[g] = ent
            scene.entities.append(ent)
    if given:
        order = {g: i for i, g in enumerate(given)}
        scene.entities.sort(key=lambda x: order.get(x.name, len(order)))
    scene.relations = _relations(events, status)
    for ent in scene.entities:
        if ent.status == UNCERTAIN:
            scene.skipped.append(f"{ent.name}: {ent.reason}")
    return scene


def _relations(events: list[_Event], status: dict[int, tuple[str, str]]) -> list[Relation]:
    out: list[Relation] = []
    for k, e in enumerate(events):
        if e.kind != "rel":
            continue
        a = b = None
        for j in range(k - 1, -1, -1):  # nearest entity phrase before, in the same clause
            ej = events[j]
            if ej.kind in ("rel", "clause_neg") or (ej.kind == "coord" and ej.value in (";",)):
                break
            if ej.phrase is not None and ej.phrase.name:
                a = ej.phrase
                break
        for j in range(k + 1, len(events)):
            ej = events[j]
            if ej.kind in ("rel", "clause_neg", "coord"):
                break
            if ej.phrase is not None and ej.phrase.name:
                b = ej.phrase
                break
        if a is None or b is None or a.name == b.name:
            continue
        if e.neg >= 2 or status.get(id(a), (PRESENT,))[0] != PRESENT or status.get(id(b), (PRESENT,))[0] != PRESENT:
            continue
        out.append(Relation(a.name, e.value, b.name, negated=e.neg == 1))
    return list(dict.fromkeys(out))


# ------------------------------------------------------------------------------------- questions


def questions_for_scene(scene: Scene) -> list[Question]:
    """The templated questions of a parsed scene: per entity presence, count, colour; then relations."""
    qs: list[Question] = []
    ents = {e.name: e for e in scene.entities}
    for e in scene.entities:
        if e.status == UNCERTAIN:
            continue
        qs.append(Question(PRESENCE, f"Is there {article(e.name)} {e.name}?",
                           ("yes",) if e.status == PRESENT else ("no",), e.name))
        if e.status != PRESENT:
            continue
        many = e.plural or (e.count is not None and e.count >= 2)
        if e.count is not None:
            qs.append(Question(COUNT, f"How many {plural(e.name)} are there?", (str(e.count),), e.name))
        if e.colors:
            text = f"What color are the {plural(e.name)}?" if many else f"What color is the {e.name}?"
            qs.append(Question(COLOR, text, e.colors, e.name))
    for r in scene.relations:
        a, b = ents.get(r.a), ents.get(r.b)
        if a is None or b is None or a.status != PRESENT or b.status != PRESENT:
            continue
        a_many = a.plural or (a.count is not None and a.count >= 2)
        b_many = b.plural or (b.count is not None and b.count >= 2)
        subject = f"Are the {plural(a.name)}" if a_many else f"Is the {a.name}"
        obj = plural(b.name) if b_many else b.name
        qs.append(Question(RELATION, f"{subject} {RELATION_TEXT[r.relation]} the {obj}?",
                           ("no",) if r.negated else ("yes",), a.name, b.name))
    return qs


def derive_questions(text: str, entities: Sequence[str] | None = None) -> list[Question]:
    """``questions_for_scene(parse_prompt(text, entities))``."""
    return questions_for_scene(parse_prompt(text, entities))


# ------------------------------------------------------------------------------------- answers


def normalize_answer(answer: str) -> list[str]:
    """Lower-case words of an answer, punctuation dropped, colour synonyms unified."""
    return [COLORS.get(w, w) for w in re.findall(r"[a-z0-9]+", answer.lower())]


def answer_number(words: Sequence[str]) -> int | None:
    for w in words:
        if w in ("none", "no"):
            return 0
        n = _number(w)
        if n is not None:
            return n
    return None


def is_correct(question: Question, answer: str) -> bool:
    """Whether ``answer`` (free text from the VQA model) gives the expected answer."""
    words = normalize_answer(answer)
    if not words:
        return False
    if question.kind in (PRESENCE, RELATION):
        said = "yes" if words[0] in YES_WORDS else "no" if words[0] in NO_WORDS else ""
        return said == question.expected[0]
    if question.kind == COUNT:
        n = answer_number(words)
        return n is not None and str(n) in question.expected
    if question.kind == COLOR:
        return any(w in question.expected for w in words)
    raise ValueError(f"unknown question kind {question.kind!r}")
