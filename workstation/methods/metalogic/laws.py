"""The MetaLogic laws and the prompt templates that apply them.

Two template sets:

* ``main`` — the published design (METHODS.md §2): five laws (Commutative, Associative,
  Distributive, DeMorgan, Complement = double negation) × modifiers AND / OR × position-less /
  X-axis / Y-axis. The X and Y templates are the same text with the axis words swapped
  ("to the left of" / "to the right of" ↔ "above" / "below").
* ``student`` — the Stable Diffusion project's 20 categories: the five laws × the semantic
  dimensions conjunctive (presence), horizontal, vertical and attributes (colour binding).

Rules chosen where the papers are silent (each is checked by the tests for every template):

* **One correct output.** Every template's form has exactly one model under the background
  theory of `forms` (order and attribute atoms imply presence; an order and its converse
  exclude each other), so two faithful images of a pair contain the same entities, counts and
  order. A bare disjunction ("a cat or a dog") has three models; the OR templates therefore
  carry an embedded conjunctive clause that closes the alternatives — "… but with no dog"
  (∧ ¬Q) — which is the seed's "embedded conjunctive clause" workaround. The modifier names the
  connective the law rewrites: the AND templates rewrite conjunctions, the OR templates
  disjunctions (pinned as above); the DeMorgan AND template rewrites ¬(P ∧ Q), the OR one ¬(P ∨ Q).
* **Distributive AND** is ∧ over ∧ (P ∧ (Q ∧ R) ≡ (P ∧ Q) ∧ (P ∧ R)): the B prompt names P
  twice, which tempts a generator into drawing it twice (the paper's duplication error);
  **Distributive OR** is the seed's example, ∧ over ∨ ("a cat with either a dog or an apple").
* **Complement** is double negation (¬¬P ≡ P), never P vs ¬P (not an equivalence).
* **Counts.** Templates use singular articles, so a present entity is expected exactly once and
  a negated one zero times; an entity named twice by the same proposition (Distributive AND's
  B prompt) is still one entity.
* **Student variant modifier**: OR where either form contains a disjunction, else AND.
  Its "commutative" positional templates swap the converse relation ("a cat left of a dog" ↔
  "a dog right of a cat"), as the student project does: both are the same order atom.

Text placeholders: for slot x in p, q, r — ``{x}`` name ("cat"), ``{ax}`` with its article
("a cat"), ``{tx}`` ("the cat"), ``{cx}`` its attribute ("red"), ``{acx}`` ("a red cat");
``{B}`` / ``{A}`` the axis words before / after ("to the left of" / "to the right of", "above" /
"below").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from .forms import Expr, atoms, parse

# ---- codes (int8 in arrays) ---------------------------------------------------------------------
LAWS: Final[tuple[str, ...]] = ("Commutative", "Associative", "Distributive", "DeMorgan", "Complement")
MODIFIERS: Final[tuple[str, ...]] = ("AND", "OR")
#: main: none / x / y; student: conjunctive / horizontal / vertical / attributes
DIMENSIONS: Final[tuple[str, ...]] = ("none", "x", "y", "conjunctive", "horizontal", "vertical", "attributes")
DIMENSION_TITLES: Final[dict[str, str]] = {
    "none": "position-less", "x": "X-axis", "y": "Y-axis", "conjunctive": "conjunctive",
    "horizontal": "horizontal", "vertical": "vertical", "attributes": "attributes",
}
AXES: Final[tuple[str, ...]] = ("", "x", "y")
VARIANTS: Final[tuple[str, ...]] = ("main", "student")
MAIN_DIMENSIONS: Final[tuple[str, ...]] = ("none", "x", "y")
STUDENT_DIMENSIONS: Final[tuple[str, ...]] = ("conjunctive", "horizontal", "vertical", "attributes")

LAW_CODE: Final[dict[str, int]] = {x: i for i, x in enumerate(LAWS)}
MODIFIER_CODE: Final[dict[str, int]] = {x: i for i, x in enumerate(MODIFIERS)}
DIMENSION_CODE: Final[dict[str, int]] = {x: i for i, x in enumerate(DIMENSIONS)}
AXIS_CODE: Final[dict[str, int]] = {x: i for i, x in enumerate(AXES)}

#: the axis a dimension positions its entities on ("" = none)
DIMENSION_AXIS: Final[dict[str, str]] = {
    "none": "", "x": "x", "y": "y", "conjunctive": "", "horizontal": "x", "vertical": "y", "attributes": "",
}
AXIS_WORDS: Final[dict[str, tuple[str, str]]] = {
    "x": ("to the left of", "to the right of"),
    "y": ("above", "below"),
}
#: attributes of the student variant's attribute dimension
ATTRIBUTES: Final[tuple[str, ...]] = ("red", "blue", "green", "yellow", "purple", "orange", "white", "black")

# accepted spellings in custom files -> canonical name
_LAW_ALIASES = {
    "commutative": "Commutative", "commutativity": "Commutative",
    "associative": "Associative", "associativity": "Associative",
    "distributive": "Distributive", "distributivity": "Distributive",
    "demorgan": "DeMorgan", "de morgan": "DeMorgan", "de-morgan": "DeMorgan", "de_morgan": "DeMorgan",
    "complement": "Complement", "double negation": "Complement", "negation": "Complement",
}
_DIMENSION_ALIASES = {
    "none": "none", "": "none", "position-less": "none", "positionless": "none", "presence": "none",
    "x": "x", "x-axis": "x", "x_axis": "x", "y": "y", "y-axis": "y", "y_axis": "y",
    "conjunctive": "conjunctive", "horizontal": "horizontal", "vertical": "vertical",
    "attributes": "attributes", "attribute": "attributes",
}


def canonical_law(name: str) -> str | None:
    """'demorgan', 'De Morgan', 'DeMorgan' -> 'DeMorgan'; None if unknown."""
    return _LAW_ALIASES.get(" ".join(str(name).split()).lower())


def canonical_dimension(name: str) -> str | None:
    return _DIMENSION_ALIASES.get(" ".join(str(name).split()).lower())


def canonical_modifier(name: str) -> str | None:
    m = str(name).strip().upper()
    return m if m in MODIFIER_CODE else None


@dataclass(frozen=True)
class Template:
    """One (law, modifier, dimension) prompt pair template over entity slots p, q, r."""

    key: str
    variant: str
    law: str
    modifier: str
    dimensions: tuple[str, ...]  # positional templates serve both axes
    text_a: str
    text_b: str
    form_a_text: str
    form_b_text: str

    @property
    def form_a(self) -> Expr:
        return parse(self.form_a_text)

    @property
    def form_b(self) -> Expr:
        return parse(self.form_b_text)

    @property
    def slots(self) -> tuple[str, ...]:
        """Entity slots used, in the order p, q, r."""
        used = {e for a in atoms(self.form_a, self.form_b) for e in a.entities}
        return tuple(s for s in ("p", "q", "r") if s in used)

    @property
    def uses_attributes(self) -> bool:
        return ":@]" in self.form_a_text + self.form_b_text


def _t(variant: str, law: str, modifier: str, dims: tuple[str, ...], a: tuple[str, str],
       b: tuple[str, str]) -> Template:
    tag = "pos" if dims[0] in ("x", "horizontal") else dims[0]
    key = f"{variant}.{law.lower()}.{modifier.lower()}.{tag}"
    return Template(key, variant, law, modifier, dims, a[0], b[0], a[1], b[1])


_NONE = ("none",)
_XY = ("x", "y")
# (text, form) for prompt A and prompt B ---------------------------------------------------------
MAIN_TEMPLATES: Final[tuple[Template, ...]] = (
    # ---- position-less -------------------------------------------------------------------------
    _t("main", "Commutative", "AND", _NONE,
       ("A photo of {ap} and {aq}.", "[p] & [q]"),
       ("A photo of {aq} and {ap}.", "[q] & [p]")),
    _t("main", "Commutative", "OR", _NONE,
       ("A photo of {ap} or {aq}, but with no {q}.", "([p] | [q]) & ~[q]"),
       ("A photo of {aq} or {ap}, but with no {q}.", "([q] | [p]) & ~[q]")),
    _t("main", "Associative", "AND", _NONE,
       ("A photo of {ap} and {aq}, together with {ar}.", "([p] & [q]) & [r]"),
       ("A photo of {ap}, together with {aq} and {ar}.", "[p] & ([q] & [r])")),
    _t("main", "Associative", "OR", _NONE,
       ("A photo of either {ap} or {aq}, or else {ar}; there is no {p} and no {r}.",
        "(([p] | [q]) | [r]) & ~[p] & ~[r]"),
       ("A photo of {ap}, or else either {aq} or {ar}; there is no {p} and no {r}.",
        "([p] | ([q] | [r])) & ~[p] & ~[r]")),
    _t("main", "Distributive", "AND", _NONE,
       ("A photo of {ap} with both {aq} and {ar}.", "[p] & ([q] & [r])"),
       ("A photo of {ap} with {aq}, and {ap} with {ar}.", "([p] & [q]) & ([p] & [r])")),
    _t("main", "Distributive", "OR", _NONE,
       ("A photo of {ap} with either {aq} or {ar}, but with no {r}.", "[p] & ([q] | [r]) & ~[r]"),
       ("A photo of either {ap} with {aq}, or {ap} with {ar}, but with no {r}.",
        "(([p] & [q]) | ([p] & [r])) & ~[r]")),
    _t("main", "DeMorgan", "AND", _NONE,
       ("A photo of {ap}, where it is not the case that there are both {ap} and {aq}.",
        "[p] & ~([p] & [q])"),
       ("A photo of {ap}, where either there is no {p} or there is no {q}.", "[p] & (~[p] | ~[q])")),
    _t("main", "DeMorgan", "OR", _NONE,
       ("A photo of {ap}, where it is not the case that there is {aq} or {ar}.", "[p] & ~([q] | [r])"),
       ("A photo of {ap} with no {q} and no {r}.", "[p] & ~[q] & ~[r]")),
    _t("main", "Complement", "AND", _NONE,
       ("A photo that is not without {ap} and not without {aq}.", "~~[p] & ~~[q]"),
       ("A photo of {ap} and {aq}.", "[p] & [q]")),
    _t("main", "Complement", "OR", _NONE,
       ("A photo that is not without {ap} or not without {aq}, but with no {q}.", "(~~[p] | ~~[q]) & ~[q]"),
       ("A photo of {ap} or {aq}, but with no {q}.", "([p] | [q]) & ~[q]")),
    # ---- positional (X and Y axis) ---------------------------------------------------------------
    _t("main", "Commutative", "AND", _XY,
       ("A photo of {ap} {B} {aq}, and {tq} {B} {ar}.", "[p<q] & [q<r]"),
       ("A photo of {aq} {B} {ar}, and {ap} {B} {tq}.", "[q<r] & [p<q]")),
    _t("main", "Commutative", "OR", _XY,
       ("A photo of {ap} {B} {aq} or {B} {ar}, but with no {r}.", "([p<q] | [p<r]) & ~[r]"),
       ("A photo of {ap} {B} {ar} or {B} {aq}, but with no {r}.", "([p<r] | [p<q]) & ~[r]")),
    _t("main", "Associative", "AND", _XY,
       ("A photo where {ap} is {B} {aq} and {tq} is {B} {ar}, and also {tp} is {B} {tr}.",
        "([p<q] & [q<r]) & [p<r]"),
       ("A photo where {ap} is {B} {aq}, and also {tq} is {B} {ar} and {tp} is {B} {tr}.",
        "[p<q] & ([q<r] & [p<r])")),
    _t("main", "Associative", "OR", _XY,
       ("A photo where either {ap} is {B} {aq} or {ar} is {B} {tq}, or else {tp} is {B} {tr}; "
        "there is no {r}.", "(([p<q] | [r<q]) | [p<r]) & ~[r]"),
       ("A photo where {ap} is {B} {aq}, or else either {ar} is {B} {tq} or {tp} is {B} {tr}; "
        "there is no {r}.", "([p<q] | ([r<q] | [p<r])) & ~[r]")),
    _t("main", "Distributive", "AND", _XY,
       ("A photo of {ap} {B} {aq}, with {ar} {A} both of them.", "[p<q] & ([q<r] & [p<r])"),
       ("A photo of {ap} {B} {aq} with {ar} {A} {tq}, and {ap} {B} {aq} with {ar} {A} {tp}.",
        "([p<q] & [q<r]) & ([p<q] & [p<r])")),
    _t("main", "Distributive", "OR", _XY,
       ("A photo of {ap} with either {aq} or {ar} {B} it, but with no {r}.", "[p] & ([q<p] | [r<p]) & ~[r]"),
       ("A photo of either {ap} with {aq} {B} it, or {ap} with {ar} {B} it, but with no {r}.",
        "(([p] & [q<p]) | ([p] & [r<p])) & ~[r]")),
    _t("main", "DeMorgan", "AND", _XY,
       ("A photo of {ap} {B} {aq}, where it is not the case that both {tp} is {B} {tq} and there is {ar}.",
        "[p<q] & ~([p<q] & [r])"),
       ("A photo of {ap} {B} {aq}, where either {tp} is not {B} {tq} or there is no {r}.",
        "[p<q] & (~[p<q] | ~[r])")),
    _t("main", "DeMorgan", "OR", _XY,
       ("A photo of {ap} {B} {aq}, where it is not the case that there is {ar} or that {tq} is {B} {tp}.",
        "[p<q] & ~([r] | [q<p])"),
       ("A photo of {ap} {B} {aq}, with no {r} and with {tq} not {B} {tp}.", "[p<q] & ~[r] & ~[q<p]")),
    _t("main", "Complement", "AND", _XY,
       ("A photo where it is not true that {ap} is not {B} {aq}, and not true that {tq} is not {B} {ar}.",
        "~~[p<q] & ~~[q<r]"),
       ("A photo of {ap} {B} {aq}, and {tq} {B} {ar}.", "[p<q] & [q<r]")),
    _t("main", "Complement", "OR", _XY,
       ("A photo where it is not true that {ap} is not {B} {aq}, or not true that {tp} is not {B} {ar}; "
        "there is no {r}.", "(~~[p<q] | ~~[p<r]) & ~[r]"),
       ("A photo of {ap} {B} {aq} or {B} {ar}, but with no {r}.", "([p<q] | [p<r]) & ~[r]")),
)

_TABLE = " on a wooden table"
_CONJ = ("conjunctive",)
_HV = ("horizontal", "vertical")
_ATTR = ("attributes",)
STUDENT_TEMPLATES: Final[tuple[Template, ...]] = (
    # ---- conjunctive (presence) ---------------------------------------------------------------------
    _t("student", "Commutative", "AND", _CONJ,
       ("{ap} and {aq}" + _TABLE, "[p] & [q]"), ("{aq} and {ap}" + _TABLE, "[q] & [p]")),
    _t("student", "Associative", "AND", _CONJ,
       ("{ap} and {aq}, together with {ar}," + _TABLE, "([p] & [q]) & [r]"),
       ("{ap}, together with {aq} and {ar}," + _TABLE, "[p] & ([q] & [r])")),
    _t("student", "Distributive", "OR", _CONJ,
       ("a scene with {ap} and either {aq} or {ar}, but no {r}", "[p] & ([q] | [r]) & ~[r]"),
       ("a scene with either {ap} and {aq} or {ap} and {ar}, but no {r}",
        "(([p] & [q]) | ([p] & [r])) & ~[r]")),
    _t("student", "Complement", "AND", _CONJ,
       ("a scene in which it is not true that there is no {p}, with {aq}", "~~[p] & [q]"),
       ("a scene with {ap} and {aq}", "[p] & [q]")),
    _t("student", "DeMorgan", "AND", _CONJ,
       ("a scene with {ap} where it is not the case that both {ap} and {aq} are present",
        "[p] & ~([p] & [q])"),
       ("a scene with {ap} and either no {p} or no {q} present", "[p] & (~[p] | ~[q])")),
    # ---- horizontal / vertical ----------------------------------------------------------------------
    _t("student", "Commutative", "AND", _HV,
       ("{ap} {B} {aq}" + _TABLE, "[p<q]"), ("{aq} {A} {ap}" + _TABLE, "[p<q]")),
    _t("student", "Associative", "AND", _HV,
       ("{ap} {B} {aq} and {tq} {B} {ar}, with {tp} {B} {tr}," + _TABLE, "([p<q] & [q<r]) & [p<r]"),
       ("{ap} {B} {aq}, with {tq} {B} {ar} and {tp} {B} {tr}," + _TABLE, "[p<q] & ([q<r] & [p<r])")),
    _t("student", "Distributive", "OR", _HV,
       ("{ap} with either {aq} or {ar} {B} it" + _TABLE + ", but no {r}", "[p] & ([q<p] | [r<p]) & ~[r]"),
       ("either {ap} with {aq} {B} it or {ap} with {ar} {B} it" + _TABLE + ", but no {r}",
        "(([p] & [q<p]) | ([p] & [r<p])) & ~[r]")),
    _t("student", "Complement", "AND", _HV,
       ("{ap} and {aq}, where it is not true that {tp} is not {B} {tq}," + _TABLE, "~~[p<q]"),
       ("{ap} {B} {aq}" + _TABLE, "[p<q]")),
    _t("student", "DeMorgan", "AND", _HV,
       ("{ap} {B} {aq}, where it is not the case that both {tp} is {B} {tq} and there is {ar},"
        + _TABLE, "[p<q] & ~([p<q] & [r])"),
       ("{ap} {B} {aq}, where either {tp} is not {B} {tq} or there is no {r}," + _TABLE,
        "[p<q] & (~[p<q] | ~[r])")),
    # ---- attributes ----------------------------------------------------------------------------------
    _t("student", "Commutative", "AND", _ATTR,
       ("{acp} and {acq}" + _TABLE, "[p:@] & [q:@]"), ("{acq} and {acp}" + _TABLE, "[q:@] & [p:@]")),
    _t("student", "Associative", "AND", _ATTR,
       ("{acp} and {acq}, together with {acr}," + _TABLE, "([p:@] & [q:@]) & [r:@]"),
       ("{acp}, together with {acq} and {acr}," + _TABLE, "[p:@] & ([q:@] & [r:@])")),
    _t("student", "Distributive", "OR", _ATTR,
       ("a scene with {acp} and either {acq} or {acr}, but no {r}", "[p:@] & ([q:@] | [r:@]) & ~[r]"),
       ("a scene with either {acp} and {acq} or {acp} and {acr}, but no {r}",
        "(([p:@] & [q:@]) | ([p:@] & [r:@])) & ~[r]")),
    _t("student", "Complement", "AND", _ATTR,
       ("a scene in which it is not true that there is no {cp} {p}, with {acq}", "~~[p:@] & [q:@]"),
       ("a scene with {acp} and {acq}", "[p:@] & [q:@]")),
    _t("student", "DeMorgan", "AND", _ATTR,
       ("a scene with {acp} and {aq}, where it is not the case that both the {p} is {cp} and the {q} is {cq}",
        "[p:@] & [q] & ~([p:@] & [q:@])"),
       ("a scene with {acp} and {aq}, where either the {p} is not {cp} or the {q} is not {cq}",
        "[p:@] & [q] & (~[p:@] | ~[q:@])")),
)

TEMPLATES: Final[tuple[Template, ...]] = MAIN_TEMPLATES + STUDENT_TEMPLATES


def templates(variant: str) -> tuple[Template, ...]:
    if variant == "main":
        return MAIN_TEMPLATES
    if variant == "student":
        return STUDENT_TEMPLATES
    raise ValueError(f"unknown MetaLogic variant {str(variant)[:40]!r} (expected one of {', '.join(VARIANTS)})")


def categories(variant: str) -> list[tuple[str, str, str, Template]]:
    """Every (law, modifier, dimension, template) cell of a variant, in a fixed order."""
    dims = MAIN_DIMENSIONS if variant == "main" else STUDENT_DIMENSIONS
    out = []
    for law in LAWS:
        for dim in dims:
            for t in templates(variant):
                if t.law == law and dim in t.dimensions:
                    out.append((law, t.modifier, dim, t))
    return out
