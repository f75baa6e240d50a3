"""Propositional forms and the MetaLogic templates: every template pair is proved equivalent."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from workstation.methods.metalogic.forms import (
    And,
    Atom,
    FormError,
    Not,
    Or,
    atoms,
    equivalent,
    linear_order,
    models,
    parse,
    substitute,
    to_text,
    truth_table,
    unique_model,
)
from workstation.methods.metalogic.laws import (
    LAWS,
    MAIN_TEMPLATES,
    STUDENT_TEMPLATES,
    TEMPLATES,
    categories,
    canonical_dimension,
    canonical_law,
)
from workstation.methods.metalogic.suite import expectation, instantiate

P, Q, R = Atom("has", ("p",)), Atom("has", ("q",)), Atom("has", ("r",))


def _holds(e, world: dict) -> bool:
    """Independent recursive evaluation (not the vectorised truth table)."""
    if isinstance(e, Atom):
        return world[e]
    if isinstance(e, Not):
        return not _holds(e.x, world)
    if isinstance(e, And):
        return all(_holds(c, world) for c in e.xs)
    return any(_holds(c, world) for c in e.xs)


# ---- the expression tree ---------------------------------------------------------------------------
def test_parse_precedence_and_atoms() -> None:
    e = parse("[p] | [q] & ~[r]")
    assert e == Or((P, And((Q, Not(R)))))  # & binds tighter than |
    assert parse("~~[cat]") == Not(Not(Atom("has", ("cat",))))
    assert parse("[potted  Plant < dog]") == Atom("before", ("potted plant", "dog"))
    assert parse("[cat:red]") == Atom("attr", ("cat", "red"))
    assert atoms(parse("([p] | [q]) & ~[p]")) == [P, Q]


@pytest.mark.parametrize("bad", ["", "[p] &", "([p]", "[p] [q]", "[]", "[p<]", "[p<p]", "[p:]", "p & q", "[p]) "])
def test_parse_rejects_bad_forms(bad: str) -> None:
    with pytest.raises(FormError):
        parse(bad)


def test_to_text_round_trips() -> None:
    for t in TEMPLATES:
        for e in (t.form_a, t.form_b):
            assert parse(to_text(e)) == e
    assert to_text(parse("~([p] & [q]) | [r]")) == "~([p] & [q]) | [r]"
    assert to_text(parse("[p] & ([q] | [r])")) == "[p] & ([q] | [r])"


def test_truth_table_matches_direct_evaluation() -> None:
    e = parse("~([p] & [q]) | ([r] & ~[p])")
    over = atoms(e)
    table = truth_table(e, over)
    for k, values in enumerate(itertools.product([False, True], repeat=3)):
        world = dict(zip(over, [bool((k >> i) & 1) for i in range(3)]))
        assert table[k] == _holds(e, world), values
    assert len(table) == 8


def test_equivalence_of_textbook_laws_and_a_non_law() -> None:
    assert equivalent(parse("~([p] & [q])"), parse("~[p] | ~[q]"))  # De Morgan
    assert equivalent(parse("[p] & ([q] | [r])"), parse("([p] & [q]) | ([p] & [r])"))
    assert equivalent(parse("~~[p]"), parse("[p]"))
    assert not equivalent(parse("[p]"), parse("~[p]"))  # "A vs not A" is no equivalence
    assert not equivalent(parse("~([p] & [q])"), parse("~[p] & ~[q]"))
    assert not equivalent(parse("[p<q]"), parse("[q<p]"))


def test_unique_model_uses_the_background_theory() -> None:
    # a bare disjunction has three worlds; pinned by "no q" it has one
    over, sat = models(parse("[p] | [q]"))
    assert len(sat) == 3
    assert unique_model(parse("([p] | [q]) & ~[q]")) == {P: True, Q: False}
    # an order atom implies presence, and excludes its converse
    w = unique_model(parse("[p<q]"))
    assert w[Atom("has", ("p",))] and w[Atom("has", ("q",))] and not w[Atom("before", ("q", "p"))]
    with pytest.raises(FormError, match="3 models"):
        unique_model(parse("[p] | [q]"))
    with pytest.raises(FormError, match="0 models"):
        unique_model(parse("[p<q] & [q<p]"))
    with pytest.raises(FormError, match="0 models"):
        unique_model(parse("[p<q] & ~[q]"))


def test_linear_order() -> None:
    assert linear_order([("a", "b"), ("b", "c")], ["c", "a", "b"]) == ["a", "b", "c"]
    with pytest.raises(FormError, match="unordered"):
        linear_order([("a", "b"), ("a", "c")], ["a", "b", "c"])
    with pytest.raises(FormError, match="cycle"):
        linear_order([("a", "b"), ("b", "a")], ["a", "b"])


# ---- every template ----------------------------------------------------------------------------------
@pytest.mark.parametrize("t", TEMPLATES, ids=[t.key for t in TEMPLATES])
def test_every_template_pair_is_logically_equivalent(t) -> None:
    a, b = t.form_a, t.form_b
    over = atoms(a, b)
    # brute force over every truth assignment, with the independent evaluator
    for values in itertools.product([False, True], repeat=len(over)):
        world = dict(zip(over, values))
        assert _holds(a, world) == _holds(b, world), (t.key, world)
    assert equivalent(a, b)


@pytest.mark.parametrize("t", TEMPLATES, ids=[t.key for t in TEMPLATES])
def test_every_template_has_one_correct_output(t) -> None:
    wa, wb = unique_model(t.form_a), unique_model(t.form_b)
    shared = set(wa) & set(wb)
    assert all(wa[x] == wb[x] for x in shared)
    ents = list(t.slots)
    counts, order, _ = expectation(to_text(t.form_a), ents)
    assert (counts, order) == expectation(to_text(t.form_b), ents)[:2]
    assert any(c > 0 for c in counts)  # an image with something in it
    if t.dimensions[0] in ("x", "horizontal"):
        assert len(order) >= 2  # positional templates position at least two entities
    else:
        assert order == ()


def test_hand_derived_expectations() -> None:
    by_key = {t.key: t for t in TEMPLATES}
    cases = {
        "main.commutative.or.none": ((1, 0), ()),  # p or q, but no q
        "main.associative.or.none": ((0, 1, 0), ()),  # no p, no r: q
        "main.distributive.and.none": ((1, 1, 1), ()),
        "main.demorgan.and.none": ((1, 0), ()),  # p and not both p and q: no q
        "main.demorgan.or.none": ((1, 0, 0), ()),
        "main.complement.and.none": ((1, 1), ()),
        "main.commutative.and.pos": ((1, 1, 1), ("p", "q", "r")),
        "main.distributive.or.pos": ((1, 1, 0), ("q", "p")),  # q before p, no r
        "main.demorgan.or.pos": ((1, 1, 0), ("p", "q")),
        "student.commutative.and.pos": ((1, 1), ("p", "q")),
    }
    for key, (counts, order) in cases.items():
        t = by_key[key]
        assert expectation(t.form_a_text, list(t.slots))[:2] == (counts, order), key


def test_template_grid_is_complete() -> None:
    main = {(t.law, t.modifier, d) for t in MAIN_TEMPLATES for d in t.dimensions}
    assert main == {(law, mod, d) for law in LAWS for mod in ("AND", "OR") for d in ("none", "x", "y")}
    student = {(t.law, d) for t in STUDENT_TEMPLATES for d in t.dimensions}
    assert student == {(law, d) for law in LAWS for d in ("conjunctive", "horizontal", "vertical", "attributes")}
    assert len(categories("main")) == 30 and len(categories("student")) == 20
    # the modifier is the connective the law rewrites: for De Morgan the one under the negation,
    # for the others OR templates have a disjunction (closed by a clause) and AND templates none
    for t in MAIN_TEMPLATES:
        if t.law == "DeMorgan":
            negated = [x.x for x in _nodes(t.form_a) if isinstance(x, Not) and isinstance(x.x, (And, Or))]
            assert [type(x).__name__.upper() for x in negated] == [t.modifier], t.key
        else:
            assert ("|" in t.form_a_text + t.form_b_text) == (t.modifier == "OR"), t.key


def _nodes(e):
    yield e
    if isinstance(e, Not):
        yield from _nodes(e.x)
    elif isinstance(e, (And, Or)):
        for c in e.xs:
            yield from _nodes(c)


@pytest.mark.parametrize("t", TEMPLATES, ids=[t.key for t in TEMPLATES])
def test_instantiated_texts_name_every_entity(t) -> None:
    names = ["cat", "umbrella", "potted plant"][: len(t.slots)]
    attrs = ["red", "blue", "green"][: len(t.slots)] if t.uses_attributes else []
    for dim in t.dimensions:
        spec = instantiate(t, dim, names, attrs)
        for text in (spec.text_a, spec.text_b):
            assert "{" not in text and "}" not in text
            for n in names:
                assert n in text, (t.key, text)
        assert equivalent(parse(spec.form_a), parse(spec.form_b))
        if dim in ("y", "vertical"):
            assert "above" in spec.text_a + spec.text_b and "left" not in spec.text_a + spec.text_b
        if dim in ("x", "horizontal"):
            assert "left" in spec.text_a + spec.text_b


def test_texts_read_as_english() -> None:
    t = next(t for t in MAIN_TEMPLATES if t.key == "main.commutative.and.none")
    spec = instantiate(t, "none", ["umbrella", "scissors"])
    assert (spec.text_a, spec.text_b) == ("A photo of an umbrella and a pair of scissors.",
                                          "A photo of a pair of scissors and an umbrella.")
    t = next(t for t in MAIN_TEMPLATES if t.key == "main.demorgan.or.pos")
    spec = instantiate(t, "y", ["cat", "dog", "apple"])
    assert spec.text_b == "A photo of a cat above a dog, with no apple and with the dog not above the cat."
    assert spec.form_b == "[cat<dog] & ~[apple] & ~[dog<cat]"
    t = next(t for t in STUDENT_TEMPLATES if t.key == "student.commutative.and.attributes")
    spec = instantiate(t, "attributes", ["apple", "cat"], ["orange", "red"])
    assert spec.text_a == "an orange apple and a red cat on a wooden table"
    assert spec.attributes == ("orange", "red")


def test_substitute_and_aliases() -> None:
    e = substitute(parse("[p<q] & [r:@]"), {"p": "cat", "q": "dog", "r": "apple"}, {"r": "red"})
    assert to_text(e) == "[cat<dog] & [apple:red]"
    with pytest.raises(FormError):
        substitute(parse("[p]"), {})
    assert canonical_law("De Morgan") == "DeMorgan" and canonical_law("double negation") == "Complement"
    assert canonical_dimension("X-axis") == "x" and canonical_dimension("position-less") == "none"
    assert canonical_law("modus ponens") is None
    assert np.all([t.law in LAWS for t in TEMPLATES])
