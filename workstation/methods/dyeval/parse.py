"""A rule-based parser from a typed prompt to a `SceneGraph` (offline stand-in for the paper's LLM).

It reads noun phrases (article, modifiers, head noun) joined by prepositions, verbs and "and",
over the built-in lexicon (`vocab.py`) plus a few heuristics for unknown words. It is meant to be
right on the short descriptive prompts DyEval writes and *good enough* elsewhere: the auditor sees
the graph and corrects it (`SceneGraph.with_object`, `renamed`, `with_relation`, ...).

Rules
-----
* Noun phrase: optional article ("a", "the", "its", ...), modifiers, then the head: the last
  noun-like word before a preposition, a verb, a conjunction that starts a new phrase, punctuation
  or the end. Modifiers (adjectives, numbers, nouns used as modifiers: "silk") become attributes,
  in order; "and" between modifiers is skipped ("sleek and elegant greyhound").
* After a noun phrase, a preposition or a relating verb ("chasing", "holding") followed by a noun
  phrase is a relation from the most recent object ("kimono with embroidery in hues": with(kimono,
  embroidery), in(embroidery, hues)) — unless that phrase's head is a place or time noun ("park",
  "night", "sky"), which makes the whole phrase a context ("in the park").
* "X with A and B": B gets the same "with" relation from X (the paper's Greyhound example);
  otherwise "and" starts a new, unrelated object.
* A verb with no object after it ("a dog sleeping") is an attribute of the previous object.
* Auxiliaries ("are playing") are skipped.
* Unknown words: "-ly" adverbs attach to the following verb as relation attributes, "-ing"
  and "-ed" words before a noun are attributes, other unknown words are nouns (heads or modifiers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .scene_graph import Relation, SceneGraph, SceneObject
from .vocab import (
    ADJECTIVES,
    ARTICLES,
    CONJUNCTIONS,
    DYNAMIC,
    NOUNS,
    PREPOSITIONS,
    QUANTIFIERS,
    SCENE_NOUNS,
    VERBS,
)

_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*|[,.;:!?]")
_PREPS_BY_LEN = sorted((tuple(p.split()) for p in PREPOSITIONS), key=len, reverse=True)
_DYNAMIC = frozenset(DYNAMIC)
_ADJ_SUFFIXES = ("ous", "ful", "ive", "ical", "less", "able", "ible", "ish", "ant", "ent", "ese")

ART, NUM, ADJ, NOUN, PREP, VERB, CONJ, ADV, PUNCT, AUX = (
    "ART", "NUM", "ADJ", "NOUN", "PREP", "VERB", "CONJ", "ADV", "PUNCT", "AUX")
_AUX = frozenset({"is", "are", "was", "were", "be", "being", "been", "has", "have", "had", "there"})


@dataclass
class _Tok:
    text: str  # as typed (multi-word prepositions joined by spaces)
    low: str
    tag: str


def _tag_word(low: str) -> str:
    if low in _AUX:
        return AUX
    if low in ARTICLES:
        return ART
    if low in QUANTIFIERS or low.isdigit() or re.fullmatch(r"\d+(s|th|st|nd|rd)?", low):
        return NUM
    if low in CONJUNCTIONS:
        return CONJ
    if low in NOUNS or low in SCENE_NOUNS:
        return NOUN
    if low in ADJECTIVES or low in _DYNAMIC:
        return ADJ
    if low in VERBS:
        return VERB
    if low.endswith("ly") and len(low) > 4:
        return ADV
    if low.endswith(("ing", "ed")) and len(low) > 4:
        return ADJ  # participle; re-tagged as a verb when it relates two phrases
    if low.endswith(_ADJ_SUFFIXES) and len(low) > 5:
        return ADJ
    return NOUN


def tokenize(text: str) -> list[_Tok]:
    """Words and punctuation, multi-word prepositions joined, each with its word class."""
    raw = _TOKEN.findall(text.replace("’", "'"))
    out: list[_Tok] = []
    i = 0
    while i < len(raw):
        low = raw[i].lower()
        matched = False
        for p in _PREPS_BY_LEN:
            n = len(p)
            if tuple(w.lower() for w in raw[i:i + n]) == p:
                out.append(_Tok(" ".join(raw[i:i + n]), " ".join(p), PREP))
                i += n
                matched = True
                break
        if matched:
            continue
        if low in {",", ".", ";", ":", "!", "?"}:
            out.append(_Tok(low, low, PUNCT))
        else:
            out.append(_Tok(raw[i], low, _tag_word(low)))
        i += 1
    return out


@dataclass
class _NP:
    article: str
    modifiers: list[str]
    head: str
    text: str


class _Parser:
    def __init__(self, toks: list[_Tok]) -> None:
        self.t = toks
        self.i = 0
        self.objects: list[SceneObject] = []
        self.relations: list[Relation] = []
        self.context: list[str] = []

    def peek(self, k: int = 0) -> _Tok | None:
        j = self.i + k
        return self.t[j] if j < len(self.t) else None

    def starts_np(self, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok is not None and tok.tag in (ART, NUM, ADJ, NOUN)

    def noun_phrase(self) -> _NP | None:
        start = self.i
        article = ""
        tok = self.peek()
        if tok is not None and tok.tag == ART:
            article = "a" if tok.low in ("a", "an") else tok.low
            self.i += 1
        words: list[_Tok] = []
        while True:
            tok = self.peek()
            if tok is None:
                break
            if tok.tag in (NUM, ADJ, NOUN):
                if words and words[-1].tag == NOUN and tok.tag != NOUN:
                    break  # after the head only a compound noun continues ("dog wagging" ends at dog)
                words.append(tok)
                self.i += 1
                continue
            if tok.tag == CONJ and tok.low == "and" and words and words[-1].tag in (ADJ, NUM):
                nxt = self.peek(1)
                if nxt is not None and nxt.tag in (ADJ, NUM):
                    self.i += 1  # "sleek and elegant greyhound"
                    continue
            if tok.tag == PUNCT and tok.low == "," and words and words[-1].tag == ADJ:
                nxt = self.peek(1)
                if nxt is not None and nxt.tag == ADJ:
                    self.i += 1  # "a big, red ball"
                    continue
            break
        if not words:
            self.i = start
            return None
        # the head is the last noun-like word; a trailing adjective ("the rich") is its own head
        head_i = len(words) - 1
        for j in range(len(words) - 1, -1, -1):
            if words[j].tag == NOUN:
                head_i = j
                break
        # words after the head (rare: "a dog happy") are attributes too
        mods = [w.text for j, w in enumerate(words) if j != head_i]
        head = words[head_i].text
        text = " ".join(t.text for t in self.t[start:self.i])
        return _NP(article, mods, head, text)

    def add_object(self, np: _NP) -> str:
        oid = f"o{len(self.objects) + 1}"
        attrs: list[str] = []
        for m in np.modifiers:
            low = m.lower() if not _is_proper(m) else m
            if low not in attrs:
                attrs.append(low)
        name = np.head if _is_proper(np.head) else np.head.lower()
        self.objects.append(SceneObject(oid, name, tuple(attrs), np.article))
        return oid

    def add_relation(self, pred: str, subj: str, obj: str, attrs: list[str]) -> None:
        if subj == obj:
            return
        rid = f"r{len(self.relations) + 1}"
        self.relations.append(Relation(rid, pred, subj, obj, tuple(dict.fromkeys(attrs))))

    def attach_attribute(self, oid: str, attr: str) -> None:
        for j, o in enumerate(self.objects):
            if o.id == oid and attr not in o.attributes:
                self.objects[j] = SceneObject(o.id, o.name, o.attributes + (attr,), o.article)

    def is_verb(self, tok: _Tok, last: str | None) -> bool:
        """A relating verb here: a known verb, or an -ing word after an object that is followed
        by a noun phrase or a preposition ("a dog wagging its tail", "a bird flying over a lake")."""
        if tok.tag == VERB:
            return True
        if tok.tag != ADJ or last is None or not tok.low.endswith("ing"):
            return False
        nxt = self.peek(1)
        return nxt is None or nxt.tag in (PREP, PUNCT, CONJ, AUX) or self.starts_np(1)

    def run(self) -> None:
        last: str | None = None  # most recent object
        last_with: tuple[str, str] | None = None  # (subject, predicate) of the latest "with"
        pending_adv: list[str] = []
        while self.i < len(self.t):
            tok = self.t[self.i]
            if tok.tag == PUNCT:
                self.i += 1
                if tok.low != ",":
                    last_with = None
                continue
            if tok.tag == AUX:
                self.i += 1  # "are playing": the verb carries the meaning
                continue
            if tok.tag == ADV:
                pending_adv.append(tok.low)
                self.i += 1
                continue
            if tok.tag == PREP or self.is_verb(tok, last):
                verb = tok.tag != PREP
                pred = tok.low
                prep = tok.low if not verb else ""
                self.i += 1
                nxt = self.peek()
                if verb and nxt is not None and nxt.tag == PREP:  # "cuddling up to", "flying over"
                    prep = nxt.low
                    pred += " " + nxt.low
                    self.i += 1
                np = self.noun_phrase()
                if np is None:
                    if verb and last is not None:  # "a dog sleeping": the verb describes the object
                        self.attach_attribute(last, tok.low)
                    continue
                if prep and np.head.lower() in SCENE_NOUNS or last is None:
                    # a place or time ("in the park"), or a sentence opening with one
                    if verb and last is not None:
                        self.attach_attribute(last, tok.low)
                    phrase = f"{prep or pred} {np.text}"
                    self.context.append(phrase if _has_proper(np.text) else phrase.lower())
                    continue
                oid = self.add_object(np)
                self.add_relation(pred, last, oid, pending_adv)
                pending_adv = []
                last_with = (last, pred) if pred == "with" else None
                last = oid
                continue
            if tok.tag == CONJ:
                self.i += 1
                if tok.low == "and" and last_with is not None and self.starts_np():
                    np = self.noun_phrase()
                    if np is not None:
                        oid = self.add_object(np)
                        self.add_relation(last_with[1], last_with[0], oid, [])
                        last = oid
                    continue
                last_with = None
                continue
            np = self.noun_phrase()
            if np is None:
                self.i += 1  # a word we cannot use (e.g. a stray article)
                continue
            last = self.add_object(np)
            last_with = None


def _is_proper(word: str) -> bool:
    return word[:1].isupper() and word.lower() not in NOUNS and word.lower() not in ADJECTIVES


def _has_proper(text: str) -> bool:
    return any(_is_proper(w) for w in text.split()[1:])


def _with_attr(o: SceneObject, attr: str) -> SceneObject:
    if attr in o.attributes:
        return o
    return SceneObject(o.id, o.name, o.attributes + (attr,), o.article)


def parse_text(text: str) -> SceneGraph:
    """The scene graph of ``text`` by the rules above (never raises on odd input: at worst an empty
    or partial graph, which the auditor completes)."""
    toks = tokenize(text)
    # the sentence-initial capital is not a proper noun when the word is in the lexicon
    if toks and toks[0].tag != PUNCT and (toks[0].tag != NOUN or toks[0].low in NOUNS):
        toks[0].text = toks[0].text.lower()
    p = _Parser(toks)
    p.run()
    return SceneGraph(tuple(p.objects), tuple(p.relations), tuple(dict.fromkeys(p.context)))
