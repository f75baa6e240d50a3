"""Faithfulness questions derived from prompts by template: the questions a reader would write by
hand for each prompt, negation and disjunction handled conservatively, answers checked as a person
would check them. No model needed."""

from __future__ import annotations

import pytest

from workstation.scoring.questions import (
    ABSENT,
    PRESENT,
    UNCERTAIN,
    Question,
    article,
    derive_questions,
    is_correct,
    parse_prompt,
    plural,
    singular,
)


def asked(text: str, entities: tuple[str, ...] | None = None) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(q.kind, q.text, q.expected) for q in derive_questions(text, entities)]


def test_metalogic_horizontal_pair() -> None:
    assert asked("a red cube to the left of a blue sphere on a wooden table") == [
        ("presence", "Is there a cube?", ("yes",)),
        ("color", "What color is the cube?", ("red",)),
        ("presence", "Is there a sphere?", ("yes",)),
        ("color", "What color is the sphere?", ("blue",)),
        ("presence", "Is there a table?", ("yes",)),
        ("relation", "Is the cube to the left of the sphere?", ("yes",)),
    ]
    # its logically equivalent twin asks the mirrored relation
    assert asked("a blue sphere to the right of a red cube on a wooden table")[-1] == (
        "relation", "Is the sphere to the right of the cube?", ("yes",))


def test_counts_and_plurals() -> None:
    assert asked("two dogs and a cat") == [
        ("presence", "Is there a dog?", ("yes",)),
        ("count", "How many dogs are there?", ("2",)),
        ("presence", "Is there a cat?", ("yes",)),
    ]
    assert asked("three red apples above a green bowl") == [
        ("presence", "Is there an apple?", ("yes",)),
        ("count", "How many apples are there?", ("3",)),
        ("color", "What color are the apples?", ("red",)),
        ("presence", "Is there a bowl?", ("yes",)),
        ("color", "What color is the bowl?", ("green",)),
        ("relation", "Are the apples above the bowl?", ("yes",)),
    ]
    assert asked("a red and white bus next to 2 people") == [
        ("presence", "Is there a bus?", ("yes",)),
        ("color", "What color is the bus?", ("red", "white")),
        ("presence", "Is there a person?", ("yes",)),
        ("count", "How many people are there?", ("2",)),
        ("relation", "Is the bus next to the people?", ("yes",)),
    ]


def test_dyeval_worked_examples() -> None:
    assert asked("A tiny black crescent moon within a big white cloud.") == [
        ("presence", "Is there a moon?", ("yes",)),
        ("color", "What color is the moon?", ("black",)),
        ("presence", "Is there a cloud?", ("yes",)),
        ("color", "What color is the cloud?", ("white",)),
    ]
    # "hues" names a colour, not an object; the adjectives are not entities
    assert asked("A luxurious silk kimono with elegant floral embroidery in vibrant hues.") == [
        ("presence", "Is there a kimono?", ("yes",)),
        ("presence", "Is there an embroidery?", ("yes",)),
    ]


def test_picture_words_verbs_and_compound_names_are_handled() -> None:
    assert asked("A photo of a teddy bear to the left of a fire hydrant.") == [
        ("presence", "Is there a teddy bear?", ("yes",)),
        ("presence", "Is there a fire hydrant?", ("yes",)),
        ("relation", "Is the teddy bear to the left of the fire hydrant?", ("yes",)),
    ]
    assert asked("a man riding a horse") == [("presence", "Is there a man?", ("yes",)),
                                             ("presence", "Is there a horse?", ("yes",))]
    assert asked("The cat is fluffy.") == [("presence", "Is there a cat?", ("yes",))]


def test_negated_entities_are_expected_absent() -> None:
    assert asked("a kitchen without a cat") == [("presence", "Is there a kitchen?", ("yes",)),
                                                ("presence", "Is there a cat?", ("no",))]
    assert asked("an image that does not contain a cat") == [("presence", "Is there a cat?", ("no",))]
    assert asked("neither a cat nor a dog") == [("presence", "Is there a cat?", ("no",)),
                                                ("presence", "Is there a dog?", ("no",))]
    # "without (a dog or a bird)": both absent; the cat is there
    assert asked("a cat without a dog or a bird") == [
        ("presence", "Is there a cat?", ("yes",)), ("presence", "Is there a dog?", ("no",)),
        ("presence", "Is there a bird?", ("no",)),
    ]
    assert asked("a cat that is not to the left of a dog")[-1] == (
        "relation", "Is the cat to the left of the dog?", ("no",))


def test_indeterminate_content_is_skipped_not_guessed() -> None:
    # DeMorgan pair of the MetaLogic seed: nothing is determinately present or absent
    for text in ("a scene where it is not the case that both a red cube and a blue sphere are present",
                 "a scene with either no red cube or no blue sphere present"):
        scene = parse_prompt(text)
        assert [e.name for e in scene.entities] == ["cube", "sphere"]
        assert all(e.status == UNCERTAIN for e in scene.entities)
        assert derive_questions(text) == []
        assert len(scene.skipped) == 2
    assert parse_prompt("a cat or a dog").skipped == ["cat: disjunction", "dog: disjunction"]
    # a relation with an uncertain end is not asked either
    assert asked("a bird above either a cat or a dog") == [("presence", "Is there a bird?", ("yes",))]


def test_statuses() -> None:
    s = parse_prompt("a cat and no dog, and either a bird or a fish")
    assert [(e.name, e.status) for e in s.entities] == [
        ("cat", PRESENT), ("dog", ABSENT), ("bird", UNCERTAIN), ("fish", UNCERTAIN)]


def test_given_entities_restrict_and_name_the_questions() -> None:
    assert derive_questions("a cat above a table", ()) == derive_questions("a cat above a table")
    assert asked("A photo of a cat above a wooden table", ("cat",)) == [("presence", "Is there a cat?", ("yes",))]
    # a given name not found in the text is asked about as given; order follows the given names
    assert asked("a cat above a dog", ("dog", "cat", "bird")) == [
        ("presence", "Is there a dog?", ("yes",)), ("presence", "Is there a cat?", ("yes",)),
        ("presence", "Is there a bird?", ("yes",)), ("relation", "Is the cat above the dog?", ("yes",)),
    ]
    # plural mention, singular name
    assert asked("two dogs below a cat", ("dog", "cat"))[:2] == [
        ("presence", "Is there a dog?", ("yes",)), ("count", "How many dogs are there?", ("2",))]


def test_the_same_noun_twice_is_one_entity() -> None:
    s = parse_prompt("a cat to the left of a dog and a dog above a cat")
    assert [e.name for e in s.entities] == ["cat", "dog"]
    assert [(r.a, r.relation, r.b) for r in s.relations] == [("cat", "left_of", "dog"), ("dog", "above", "cat")]


@pytest.mark.parametrize("word,sing", [
    ("dogs", "dog"), ("boxes", "box"), ("benches", "bench"), ("puppies", "puppy"), ("cookies", "cookie"),
    ("people", "person"), ("knives", "knife"), ("glasses", "glasses"), ("bus", "bus"), ("buses", "bus"),
    ("horses", "horse"), ("cactus", "cactus"), ("sheep", "sheep"), ("tomatoes", "tomato"), ("glass", "glass"),
])
def test_singular(word: str, sing: str) -> None:
    assert singular(word) == sing


def test_plural_and_article() -> None:
    assert [plural(w) for w in ("dog", "box", "puppy", "toy", "person", "teddy bear", "sheep", "bus")] == [
        "dogs", "boxes", "puppies", "toys", "people", "teddy bears", "sheep", "buses"]
    assert [article(w) for w in ("apple", "cat", "umbrella", "unicorn", "hour", "egg")] == [
        "an", "a", "an", "a", "an", "an"]


def test_answers_are_checked_like_a_person_would() -> None:
    yes = Question("presence", "Is there a cat?", ("yes",), "cat")
    no = Question("presence", "Is there a cat?", ("no",), "cat")
    count = Question("count", "How many dogs are there?", ("2",), "dog")
    color = Question("color", "What color is the bus?", ("red", "white"), "bus")
    assert is_correct(yes, "Yes") and is_correct(yes, "yes, there is") and not is_correct(yes, "no")
    assert is_correct(no, "no") and not is_correct(no, "yes") and not is_correct(no, "")
    assert is_correct(count, "2") and is_correct(count, "two") and not is_correct(count, "3")
    assert not is_correct(count, "many")
    assert is_correct(Question("count", "How many cats are there?", ("0",), "cat"), "none")
    assert is_correct(color, "white") and is_correct(color, "red and blue") and not is_correct(color, "blue")
    assert is_correct(Question("color", "What color is the cat?", ("gray",), "cat"), "grey")
