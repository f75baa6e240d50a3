"""The human judgement of ProtoBias and the blind order its two images are shown in.

Annotators rate each image of a triplet 1-4 for semantic fidelity only (seed §4, Table 6's
guide). When a triplet's two images are shown side by side, which one is on the left is a
seeded coin flip per triplet — a pure function of (triplet id, seed), so the order is the same
every time the item is shown and does not depend on which other items are in the queue.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from ...evaluation.base import LabelScheme

FIDELITY_SCHEME = LabelScheme(
    task="protobias.fidelity",
    target="image",
    values=("1", "2", "3", "4"),
    keys=("1", "2", "3", "4"),
    titles=("1 – poor match: main element wrong or several critical mismatches",
            "2 – one major mistake: main element right, an extra element or attribute wrong",
            "3 – mostly correct: one detail ambiguous",
            "4 – perfect match: every element and attribute right"),
    ordinal=True,
    title="Semantic fidelity (1-4)",
)


def _flip(item_id: str, seed: int) -> bool:
    h = hashlib.sha256(f"protobias-blind|{int(seed)}|{item_id}".encode()).digest()
    return bool(h[0] & 1)


def blind_left_is_corr(item_ids: Sequence[str] | np.ndarray, seed: int = 0) -> np.ndarray:
    """bool per item: True when I_corr is shown on the left (seeded, per item, about half)."""
    return np.array([_flip(str(t), seed) for t in item_ids], dtype=bool)


def blind_sides(item_id: str, seed: int = 0) -> tuple[str, str]:
    """(role shown left, role shown right) for one triplet: ("corr", "adv") or ("adv", "corr")."""
    return ("corr", "adv") if _flip(str(item_id), seed) else ("adv", "corr")
