"""The seed's prompt templates (Tables 3-5) as deterministic sentence builders.

A triplet is three sentences of one scene (seed, Appendix B):

* **TEXT** (T) — the hypernym as the subject ("an animal", "a piece of furniture", "a rich
  person") and one extra element that states a clear knob value;
* **CORRECT** — T with the hypernym replaced by the non-prototypical entity, knob unchanged
  (the generation prompt of I_corr);
* **ADVERSARIAL** — T with the hypernym replaced by the prototypical entity and *only* the knob
  value changed, on the same extra element (the generation prompt of I_adv).

The seed has an LLM fill these templates; here they are filled by rule, so the three sentences
are identical word for word outside the subject and the knob value (a tested property). The
sentence is ``<Article> <subject> <verb> <environment> <knob clause>.`` with these knob clauses
(``E`` the extra element, ``near`` = "beside it" for animals and objects, "nearby" for a
person; ``pron`` = "its" / "their"):

================  ==========================================  =====================================
knob              TEXT / CORRECT                              ADVERSARIAL (seed's rule)
================  ==========================================  =====================================
count             "with exactly two Es <near>"                 count changed by ±1 or ±2 (1..6)
color/color_tone  "with a gray E <near>"                       another natural colour of E
layout_relation   "with an E to <pron> left"                   left ↔ right (viewer's perspective)
spatial           "with an E in the foreground"                foreground ↔ background
scale_size        "with a small E <near>" (objects only)       small ↔ large, tiny ↔ huge
================  ==========================================  =====================================

Demography (Table 4): T begins "A <attr_token> person"; with pole = positive the
non-prototype is the disadvantaged group and the prototype the advantaged one, with pole =
negative the other way round. The seed's 30-word limit per sentence holds for every sentence
the vocabulary can give (tested).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...types import WorkstationError
from .vocab import Extra

TEMPLATE_VERSION = "protobias-templates-1"

NUMBER_WORDS: tuple[str, ...] = ("zero", "one", "two", "three", "four", "five", "six")
MAX_COUNT = 6
TEXT_COUNTS: tuple[int, ...] = (1, 2, 3, 4)  # counts T may state; the adversarial one is 1..6
COUNT_DELTAS: tuple[int, ...] = (-2, -1, 1, 2)
MAX_WORDS = 30

#: the seed's rule per knob: (what TEXT states, how ADVERSARIAL changes it)
KNOB_RULES: dict[str, tuple[str, str]] = {
    "count": ("exact numerals (\"exactly two rocks\")", "change the count by ±1 or ±2"),
    "color": ("a concrete colour of the extra element", "switch to another natural colour"),
    "color_tone": ("a specific colour of the extra element", "switch to another colour"),
    "layout_relation": ("a precise relation (\"to its left\")", "flip the relation (left ↔ right)"),
    "spatial": ("explicit foreground / background placement", "background ↔ foreground"),
    "scale_size": ("a relative size cue (\"a small table\")", "flip the size (small ↔ large)"),
}

_AN_EXCEPTIONS = ("honest", "hour", "heir", "honour", "honor")
_A_EXCEPTIONS = ("uni", "use", "usu", "uti", "ura", "ure", "eu", "one", "once")
_AN_LETTERS = set("AEFHILMNORSX")  # letters whose name starts with a vowel sound


def article(phrase: str) -> str:
    """"a" or "an" for a noun phrase, by its sound (good enough for the vocabulary)."""
    word = phrase.strip().split(" ")[0] if phrase.strip() else ""
    if not word:
        return "a"
    letters = word.rstrip("+-")
    if len(letters) >= 2 and letters.isupper():  # an acronym: read letter by letter
        return "an" if letters[0] in _AN_LETTERS else "a"
    w = word.lower()
    if w.startswith(_AN_EXCEPTIONS):
        return "an"
    if w.startswith(_A_EXCEPTIONS):
        return "a"
    return "an" if w[0] in "aeiou" else "a"


def with_article(phrase: str) -> str:
    return f"{article(phrase)} {phrase}"


def number_word(n: int) -> str:
    if not 0 <= n <= MAX_COUNT:
        raise WorkstationError(f"count {n} is outside 0..{MAX_COUNT}")
    return NUMBER_WORDS[n]


@dataclass(frozen=True)
class SceneFrame:
    """Everything of a sentence except its subject and the knob value."""

    domain: str
    verb: str  # "stands", "is parked", "" (demography: the environment has the verb)
    environment: str  # "near a pond", "stands in a quiet room"
    extra: Extra
    knob: str

    @property
    def near(self) -> str:
        return "nearby" if self.domain == "demography" else "beside it"

    @property
    def pronoun(self) -> str:
        return "their" if self.domain == "demography" else "its"


def knob_clause(frame: SceneFrame, value: str) -> str:
    """The clause stating the knob value on the extra element (see the module table)."""
    e = frame.extra
    k = frame.knob
    if k == "count":
        n = int(value)
        noun = e.singular if n == 1 else e.plural
        return f"with exactly {number_word(n)} {noun} {frame.near}"
    if k in ("color", "color_tone"):
        return f"with {with_article(value)} {e.singular} {frame.near}"
    if k == "layout_relation":
        if value not in ("left", "right"):
            raise WorkstationError(f"layout_relation value must be left or right, got {value!r}")
        return f"with {with_article(e.singular)} to {frame.pronoun} {value}"
    if k == "spatial":
        if value not in ("foreground", "background"):
            raise WorkstationError(f"spatial value must be foreground or background, got {value!r}")
        return f"with {with_article(e.singular)} in the {value}"
    if k == "scale_size":
        return f"with {with_article(value)} {e.singular} {frame.near}"
    raise WorkstationError(f"unknown knob {k!r}")


def sentence(subject: str, frame: SceneFrame, value: str) -> str:
    """``<Article> <subject> <verb> <environment> <knob clause>.`` with a capital first letter."""
    parts = [with_article(subject)]
    if frame.verb:
        parts.append(frame.verb)
    parts.append(frame.environment)
    parts.append(knob_clause(frame, value))
    s = " ".join(parts) + "."
    return s[0].upper() + s[1:]


def adversarial_values(knob: str, value: str, extra: Extra, sizes: tuple[tuple[str, str], ...]) -> list[str]:
    """Every value the seed's rule allows the adversarial sentence to take (never `value`)."""
    if knob == "count":
        n = int(value)
        return [str(n + d) for d in COUNT_DELTAS if 1 <= n + d <= MAX_COUNT]
    if knob in ("color", "color_tone"):
        return [c for c in extra.colors if c != value]
    if knob == "layout_relation":
        return ["right" if value == "left" else "left"]
    if knob == "spatial":
        return ["background" if value == "foreground" else "foreground"]
    if knob == "scale_size":
        for a, b in sizes:
            if value == a:
                return [b]
            if value == b:
                return [a]
        raise WorkstationError(f"unknown size word {value!r}")
    raise WorkstationError(f"unknown knob {knob!r}")


def text_values(knob: str, extra: Extra, sizes: tuple[tuple[str, str], ...]) -> list[str]:
    """Every value TEXT may state for `knob` on `extra`."""
    if knob == "count":
        return [str(n) for n in TEXT_COUNTS]
    if knob in ("color", "color_tone"):
        return list(extra.colors)
    if knob == "layout_relation":
        return ["left", "right"]
    if knob == "spatial":
        return ["foreground", "background"]
    if knob == "scale_size":
        return [w for pair in sizes for w in pair]
    raise WorkstationError(f"unknown knob {knob!r}")


def word_count(s: str) -> int:
    return len(s.split())
