"""The human judgement of ProtoBias and the blind order its two images are shown in.

Annotators rate each image of a triplet 1-4 for semantic fidelity only (seed §4, Table 6's
guide). When a triplet's two images are shown side by side, which one is on the left is a
seeded coin flip per triplet — a pure function of (triplet id, seed), so the order is the same
every time the item is shown and does not depend on which other items are in the queue.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

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


# ---- neutral ids: labels written during a blind set name no image role -------------------------

def neutral_id(item_id: str, role: str, seed: int = 0) -> str:
    """The id a blind export gives an image of a triplet: the triplet and the side it is shown
    on (``<item id>#A`` / ``#B``, the seeded blind order), never its role (corr / adv)."""
    left, _right = blind_sides(item_id, seed)
    return f"{item_id}#{'A' if role == left else 'B'}"


def neutral_ids(item_ids: Sequence[str] | np.ndarray, sample_corr: Sequence[str] | np.ndarray,
                sample_adv: Sequence[str] | np.ndarray, seed: int = 0) -> dict[str, str]:
    """Sample id (whose prompt names its role, ``…:corr`` / ``…:adv``) → its neutral id."""
    out: dict[str, str] = {}
    for item, corr, adv in zip(item_ids, sample_corr, sample_adv):
        out[str(corr)] = neutral_id(str(item), "corr", seed)
        out[str(adv)] = neutral_id(str(item), "adv", seed)
    return out


MAX_UNBLIND_BYTES = 64 * 1024 * 1024


def read_neutral_labels(path: str | Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """A label file written during a blind ProtoBias set (CSV with a ``target_id`` column), read
    strictly: its header and its rows, each with the line it starts on."""
    import csv
    import io

    from ...types import InputError
    from ...util.csvsafe import numbered_rows
    from ...util.textio import read_text, regular_file

    p = Path(path)
    regular_file(p, "label file")
    text = read_text(p, MAX_UNBLIND_BYTES, "label file")
    rows = list(numbered_rows(csv.reader(io.StringIO(text, newline=""), strict=True), p))
    if not rows:
        raise InputError(p, "empty file: a label file starts with its header (task, target_kind, target_id, ...)", 1)
    (_, header), body = rows[0], rows[1:]
    if "target_id" not in header:
        raise InputError(p, "no target_id column in the header", 1)
    return header, body


def unblind_rows(path: str | Path, neutral: dict[str, str]) -> tuple[list[str], list[list[str]]]:
    """The rows of a blind export with each neutral target id (``<item id>#A`` / ``#B``) mapped
    back to its sample id (``neutral``: neutral id → sample id, from the project); a row whose
    target is no neutral id of the project is an `InputError` naming its line."""
    from ...types import InputError
    from ...util.textio import quote

    header, body = read_neutral_labels(path)
    col = header.index("target_id")
    out: list[list[str]] = []
    for line, row in body:
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise InputError(Path(path), f"{len(row)} cells where the header has {len(header)}", line)
        tid = row[col]
        if tid not in neutral:
            raise InputError(Path(path), f"target {quote(tid)} is not a neutral image id of this project's "
                                         "triplets (<item id>#A or #B)", line)
        out.append(row[:col] + [neutral[tid]] + row[col + 1:])
    return header, out
