"""De-duplication of a node's prompts by word n-gram overlap.

The paper: "we verify the generated test inputs with the LLM and eliminate duplicates using an
n-gram matching algorithm" (§4.2.1), without its n or threshold. Ours, stated here and in
`DyEvalConfig`: texts are lower-cased and cut into words (letters, digits, apostrophes); a text's
grams are its word **3-grams** (a text shorter than n words is one gram, its whole word tuple);
two texts are duplicates when the **Jaccard overlap** of their gram sets, |A ∩ B| / |A ∪ B|, is at
least **0.5**. Candidates are taken in order; one is dropped when it duplicates a text already
kept (or one of ``existing``, e.g. the node's or the tree's earlier prompts).

For "A dog lying next to its owner on the couch." and "A cat lying next to its owner on the
couch." (10 words, 8 grams each, 6 shared) the overlap is 6 / 10 = 0.6: a duplicate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_WORD = re.compile(r"[a-z0-9']+")

DEFAULT_N = 3
DEFAULT_THRESHOLD = 0.5


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("’", "'"))


def ngrams(text: str, n: int = DEFAULT_N) -> frozenset[tuple[str, ...]]:
    """The word n-grams of ``text`` (a text of fewer than n words is one gram)."""
    if n < 1:
        raise ValueError("n-gram size must be at least 1")
    w = words(text)
    if not w:
        return frozenset()
    if len(w) < n:
        return frozenset({tuple(w)})
    return frozenset(tuple(w[i:i + n]) for i in range(len(w) - n + 1))


def overlap(a: str, b: str, n: int = DEFAULT_N) -> float:
    """Jaccard overlap of the two texts' n-gram sets (1.0 for two texts without words)."""
    ga, gb = ngrams(a, n), ngrams(b, n)
    if not ga and not gb:
        return 1.0
    return len(ga & gb) / len(ga | gb)


@dataclass(frozen=True)
class DedupResult:
    kept: tuple[int, ...]  # indices into the candidates, in order
    dropped: tuple[tuple[int, str], ...]  # (index, the text it duplicates)


def deduplicate(candidates: Sequence[str], existing: Iterable[str] = (), *, n: int = DEFAULT_N,
                threshold: float = DEFAULT_THRESHOLD) -> DedupResult:
    """Keep candidates in order, dropping each one whose overlap with a kept text or an existing
    text is ≥ ``threshold``."""
    pool: list[tuple[str, frozenset[tuple[str, ...]]]] = [(t, ngrams(t, n)) for t in existing]
    kept: list[int] = []
    dropped: list[tuple[int, str]] = []
    for i, text in enumerate(candidates):
        g = ngrams(text, n)
        dup = None
        for other, og in pool:
            union = g | og
            score = 1.0 if not union else len(g & og) / len(union)
            if score >= threshold:
                dup = other
                break
        if dup is None:
            kept.append(i)
            pool.append((text, g))
        else:
            dropped.append((i, dup))
    return DedupResult(tuple(kept), tuple(dropped))


def first_distinct(texts: Iterable[str], n: int, existing: Iterable[str] = ()) -> list[str]:
    """The first ``n`` of ``texts`` (all of them where there are fewer) that differ from each other
    and from ``existing`` in more than case and spacing."""
    seen = {" ".join(x.lower().split()) for x in existing}
    out: list[str] = []
    for text in texts:
        key = " ".join(text.lower().split())
        if key in seen:
            continue
        seen.add(key)
        out.append(text)
        if len(out) == n:
            break
    return out
