"""Prompt de-duplication by word 3-gram Jaccard overlap ≥ 0.5 (our stated n and threshold)."""

from __future__ import annotations

import pytest

from workstation.methods.dyeval import deduplicate, ngrams, overlap


def test_ngrams_and_overlap_by_hand() -> None:
    assert ngrams("A red cat.") == frozenset({("a", "red", "cat")})
    assert ngrams("Hi cat") == frozenset({("hi", "cat")})  # shorter than n: one gram
    assert ngrams("") == frozenset()
    a = "A dog lying next to its owner on the couch."
    b = "A cat lying next to its owner on the couch."
    # 10 words → 8 grams each; the two grams with "dog"/"cat" differ: 6 shared, union 10 → 0.6
    assert len(ngrams(a)) == len(ngrams(b)) == 8
    assert overlap(a, b) == pytest.approx(0.6)
    # "A red cat on a mat." (4 grams) vs "A red cat on a mat in the garden." (7 grams): 4 / 7
    assert overlap("A red cat on a mat.", "A red cat on a mat in the garden.") == pytest.approx(4 / 7)
    assert overlap("A red cat.", "A blue dog.") == 0.0
    assert overlap("A child hugging a dog.", "a CHILD hugging a dog") == 1.0  # case and punctuation


def test_deduplicate_keeps_the_first_of_near_duplicates_and_checks_existing_prompts() -> None:
    cands = [
        "A child hugging a dog tightly with a big smile on their face.",
        "A dog sitting patiently next to its owner as they read a book.",
        "A child hugging a dog tightly with a big smile on her face.",  # 9 shared / 13 → 0.69: dropped
        "A dog lying next to its owner on the couch.",
        "A cat lying next to its owner on the couch.",  # 0.6 → dropped
        "A dog barking loudly to protect its owner.",
    ]
    res = deduplicate(cands, existing=["A dog barking loudly to protect its owner from a threat."])
    assert res.kept == (0, 1, 3)
    assert res.dropped == ((2, cands[0]), (4, cands[3]), (5, "A dog barking loudly to protect its owner from a threat."))
    # a stricter threshold keeps the 0.6 pair
    assert deduplicate(cands[3:5], threshold=0.7).kept == (0, 1)
    # unigrams: 9 shared words of 11 → 0.82
    assert overlap(cands[3], cands[4], n=1) == pytest.approx(9 / 11)
    assert deduplicate(cands[3:5], n=1, threshold=0.7).kept == (0,)
    assert overlap(cands[0], cands[2]) == pytest.approx(9 / 13)
