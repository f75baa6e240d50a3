"""Propositional forms of MetaLogic prompts: a tiny expression tree over atoms.

Every MetaLogic prompt carries the proposition it states, so that the equivalence of a pair is
proved (by truth tables) rather than assumed, and so that what the image must contain is derived
from the logic rather than written by hand.

Atoms (text syntax in brackets; ``p``, ``q``, ``r`` are entity slots in templates and entity
names once a template is instantiated):

* presence ``[p]`` — entity p is in the image;
* order ``[p<q]`` — p comes before q on the prompt's axis (left of on the X axis, above on the Y
  axis; "q to the right of p" is the same atom);
* attribute ``[p:red]`` — p is in the image and has the attribute (``[p:@]`` in a template:
  the pair's own attribute for that slot).

Connectives: ``~`` (not), ``&`` (and), ``|`` (or), parentheses; ``&`` binds tighter than ``|``.

Background theory (`axioms`): an order atom implies both its entities are present and its
converse is false; an attribute atom implies its entity is present. Equivalence of the two
prompts of a pair is checked *without* the theory (a pure propositional identity); the theory is
used only to derive the single intended world of a pair (`unique_model`).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Union

import numpy as np

__all__ = ["Atom", "Not", "And", "Or", "Expr", "parse", "to_text", "atoms", "truth_table", "equivalent",
           "axioms", "models", "unique_model", "substitute", "FormError", "MAX_ATOMS", "MAX_DEPTH", "MAX_FORM_CHARS"]

#: truth tables are enumerated; more atoms than this is refused
MAX_ATOMS = 16
#: a form's text and its nesting (parentheses and negations) are capped, so that a form from a
#: file never exhausts the parser's stack (every reader of the tree recurses over it)
MAX_FORM_CHARS = 2000
MAX_DEPTH = 40


class FormError(ValueError):
    """A form that cannot be parsed or evaluated."""


@dataclass(frozen=True, order=True)
class Atom:
    """``kind`` is "has", "before" or "attr"; ``args`` (entity,), (first, second) or
    (entity, attribute)."""

    kind: str
    args: tuple[str, ...]

    def __post_init__(self) -> None:
        want = {"has": 1, "before": 2, "attr": 2}.get(self.kind)
        if want is None or len(self.args) != want:
            raise FormError(f"bad atom {self.kind}{self.args}")
        if self.kind == "before" and self.args[0] == self.args[1]:
            raise FormError(f"an entity cannot be before itself: {self.args[0]!r}")

    @property
    def entities(self) -> tuple[str, ...]:
        return self.args if self.kind == "before" else self.args[:1]


@dataclass(frozen=True)
class Not:
    x: "Expr"


@dataclass(frozen=True)
class And:
    xs: tuple["Expr", ...]


@dataclass(frozen=True)
class Or:
    xs: tuple["Expr", ...]


Expr = Union[Atom, Not, And, Or]


# ---- text ----------------------------------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:(\[[^\[\]]*\])|([~&|()]))")


def _q(text: str) -> str:
    """A form in a message: at most its first 60 characters."""
    return repr(text) if len(text) <= 60 else f"{text[:60]!r}… ({len(text):,} characters)"


def parse(text: str) -> Expr:
    """Parse the text syntax (see module docstring). Raises FormError with the position; a form
    longer than `MAX_FORM_CHARS` or nested deeper than `MAX_DEPTH` is a FormError too."""
    if not isinstance(text, str):
        raise FormError(f"a form must be text, got {type(text).__name__}")
    if len(text) > MAX_FORM_CHARS:
        raise FormError(f"a form of {len(text):,} characters is too long (at most {MAX_FORM_CHARS:,})")
    tokens: list[str] = []
    pos = 0
    s = text.strip()
    while pos < len(s):
        m = _TOKEN.match(s, pos)
        if m is None:
            raise FormError(f"unexpected {s[pos:pos + 12]!r} at character {pos + 1} of {_q(text)}")
        tokens.append(m.group(1) or m.group(2))
        pos = m.end()
        while pos < len(s) and s[pos].isspace():
            pos += 1
    if not tokens:
        raise FormError("empty form")
    i = 0

    def peek() -> str | None:
        return tokens[i] if i < len(tokens) else None

    def take() -> str:
        nonlocal i
        if i >= len(tokens):
            raise FormError(f"form ends too early: {_q(text)}")
        i += 1
        return tokens[i - 1]

    depth = 0

    def deeper() -> None:
        nonlocal depth
        depth += 1
        if depth > MAX_DEPTH:
            raise FormError(f"a form nested more than {MAX_DEPTH} levels deep (negations and parentheses)")

    def chain(op: str, part: Callable[[], Expr], join: Callable[[tuple[Expr, ...]], Expr]) -> Expr:
        """``part (op part)*``: one part alone, or several joined."""
        xs = [part()]
        while peek() == op:
            take()
            xs.append(part())
        return xs[0] if len(xs) == 1 else join(tuple(xs))

    def disj() -> Expr:
        return chain("|", conj, Or)

    def conj() -> Expr:
        return chain("&", unary, And)

    def unary() -> Expr:
        nonlocal depth
        tok = take()
        if tok == "~":
            deeper()
            x = unary()
            depth -= 1
            return Not(x)
        if tok == "(":
            deeper()
            e = disj()
            depth -= 1
            if take() != ")":
                raise FormError(f"missing ')' in {_q(text)}")
            return e
        if tok.startswith("["):
            return _atom(tok[1:-1], text)
        raise FormError(f"unexpected {tok[:20]!r} in {_q(text)}")

    e = disj()
    if i != len(tokens):
        raise FormError(f"unexpected {tokens[i][:20]!r} in {_q(text)}")
    return e


def _atom(body: str, text: str) -> Atom:
    b = " ".join(body.split()).lower()
    if not b:
        raise FormError(f"empty atom [] in {_q(text)}")
    if "<" in b:
        first, _, second = b.partition("<")
        first, second = first.strip(), second.strip()
        if not first or not second or "<" in second or ":" in b:
            raise FormError(f"bad order atom [{body[:40]}] in {_q(text)}")
        return Atom("before", (first, second))
    if ":" in b:
        ent, _, att = b.partition(":")
        ent, att = ent.strip(), att.strip()
        if not ent or not att:
            raise FormError(f"bad attribute atom [{body[:40]}] in {_q(text)}")
        return Atom("attr", (ent, att))
    return Atom("has", (b,))


def _atom_text(a: Atom) -> str:
    if a.kind == "has":
        return f"[{a.args[0]}]"
    if a.kind == "before":
        return f"[{a.args[0]}<{a.args[1]}]"
    return f"[{a.args[0]}:{a.args[1]}]"


def to_text(e: Expr) -> str:
    """The text syntax of ``e``; ``parse(to_text(e)) == e``."""

    def go(x: Expr, parent: int) -> str:  # parent precedence: 0 top, 1 or, 2 and, 3 not
        if isinstance(x, Atom):
            return _atom_text(x)
        if isinstance(x, Not):
            return "~" + go(x.x, 3)
        if isinstance(x, And):
            s = " & ".join(go(c, 2) for c in x.xs)
            return f"({s})" if parent >= 2 else s
        s = " | ".join(go(c, 1) for c in x.xs)
        return f"({s})" if parent >= 1 else s

    return go(e, 0)


# ---- evaluation ----------------------------------------------------------------------------------
def atoms(*exprs: Expr) -> list[Atom]:
    """The atoms of the expressions, in order of first appearance."""
    out: dict[Atom, None] = {}

    def go(x: Expr) -> None:
        if isinstance(x, Atom):
            out.setdefault(x, None)
        elif isinstance(x, Not):
            go(x.x)
        else:
            for c in x.xs:
                go(c)

    for e in exprs:
        go(e)
    return list(out)


def _assignments(n: int) -> np.ndarray:
    """(2**n, n) bool: every truth assignment of n atoms."""
    if n > MAX_ATOMS:
        raise FormError(f"a form with {n} atoms is too large to check (at most {MAX_ATOMS})")
    k = np.arange(2 ** n, dtype=np.int64)
    return ((k[:, None] >> np.arange(n, dtype=np.int64)[None, :]) & 1).astype(bool)


def truth_table(e: Expr, over: Sequence[Atom], table: np.ndarray | None = None) -> np.ndarray:
    """Value of ``e`` under every assignment of ``over`` (rows of `_assignments` order)."""
    index = {a: i for i, a in enumerate(over)}
    tab = _assignments(len(over)) if table is None else table

    def go(x: Expr) -> np.ndarray:
        if isinstance(x, Atom):
            if x not in index:
                raise FormError(f"atom {_atom_text(x)} is not among the atoms evaluated")
            return tab[:, index[x]]
        if isinstance(x, Not):
            return ~go(x.x)
        vals = [go(c) for c in x.xs]
        out = vals[0].copy()
        for v in vals[1:]:
            if isinstance(x, And):
                out &= v
            else:
                out |= v
        return out

    return go(e)


def equivalent(a: Expr, b: Expr) -> bool:
    """True when ``a`` and ``b`` agree under every truth assignment of their atoms."""
    over = atoms(a, b)
    tab = _assignments(len(over))
    return bool(np.array_equal(truth_table(a, over, tab), truth_table(b, over, tab)))


def _closure(base: Iterable[Atom]) -> list[Atom]:
    """``base`` plus the presence atoms its order / attribute atoms imply, and converse order atoms."""
    out: dict[Atom, None] = dict.fromkeys(base)
    for a in list(out):
        if a.kind == "before":
            out.setdefault(Atom("before", (a.args[1], a.args[0])), None)
        for ent in a.entities:
            out.setdefault(Atom("has", (ent,)), None)
    return list(out)


def axioms(over: Sequence[Atom]) -> Expr | None:
    """The background theory restricted to ``over``: order and attribute atoms imply presence;
    an order atom and its converse are not both true."""
    rules: list[Expr] = []
    present = set(over)
    for a in over:
        if a.kind in ("before", "attr"):
            for ent in a.entities:
                h = Atom("has", (ent,))
                if h in present:
                    rules.append(Or((Not(a), h)))
        if a.kind == "before":
            conv = Atom("before", (a.args[1], a.args[0]))
            if conv in present and a.args[0] < a.args[1]:
                rules.append(Not(And((a, conv))))
    if not rules:
        return None
    return rules[0] if len(rules) == 1 else And(tuple(rules))


def models(e: Expr, *, theory: bool = True) -> tuple[list[Atom], np.ndarray]:
    """(atoms, (k, n) bool array of the assignments that satisfy ``e`` [and the theory])."""
    over = _closure(atoms(e)) if theory else atoms(e)
    tab = _assignments(len(over))
    ok = truth_table(e, over, tab)
    ax = axioms(over) if theory else None
    if ax is not None:
        ok &= truth_table(ax, over, tab)
    return over, tab[ok]


def unique_model(e: Expr) -> dict[Atom, bool]:
    """The single world (under the background theory) in which ``e`` holds.

    Raises FormError when ``e`` has no model or more than one: a MetaLogic prompt must have one
    correct output, otherwise two faithful images may differ."""
    over, sat = models(e)
    if len(sat) != 1:
        raise FormError(f"{_q(to_text(e))} has {len(sat)} models under the background theory, not exactly one")
    return {a: bool(v) for a, v in zip(over, sat[0])}


def substitute(e: Expr, names: Mapping[str, str], attributes: Mapping[str, str] | None = None) -> Expr:
    """Replace entity slots by names (and ``@`` attributes by the slot's attribute)."""

    def sub(x: str) -> str:
        try:
            return names[x]
        except KeyError:
            raise FormError(f"no entity given for slot {x!r}") from None

    def go(x: Expr) -> Expr:
        if isinstance(x, Atom):
            if x.kind == "attr":
                att = x.args[1]
                if att == "@":
                    if attributes is None or x.args[0] not in attributes:
                        raise FormError(f"no attribute given for slot {x.args[0]!r}")
                    att = attributes[x.args[0]]
                return Atom("attr", (sub(x.args[0]), att))
            return Atom(x.kind, tuple(sub(a) for a in x.args))
        if isinstance(x, Not):
            return Not(go(x.x))
        return type(x)(tuple(go(c) for c in x.xs))

    return go(e)


def linear_order(true_before: Iterable[tuple[str, str]], entities: Sequence[str]) -> list[str]:
    """The unique left-to-right (top-to-bottom) order of ``entities`` that the true order atoms
    impose (transitively). Raises FormError when they contradict each other or leave two
    entities unordered."""
    ents = list(entities)
    after: dict[str, set[str]] = {x: set() for x in ents}
    for a, b in true_before:
        if a not in after or b not in after:
            raise FormError(f"order atom [{a}<{b}] names an entity that is not positioned")
        after[a].add(b)
    # transitive closure (tiny: at most a handful of entities)
    for k, i, j in itertools.product(ents, ents, ents):
        if k in after[i] and j in after[k]:
            after[i].add(j)
    if any(x in after[x] for x in ents):
        raise FormError("the order atoms form a cycle")
    order = sorted(ents, key=lambda x: -len(after[x]))
    for x, y in zip(order, order[1:]):
        if y not in after[x]:
            raise FormError(f"the order atoms leave {x!r} and {y!r} unordered")
    return order
