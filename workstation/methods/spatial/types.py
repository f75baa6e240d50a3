"""Codes of the spatial method: relations, verdicts, abstention reasons (METHODS.md §1).

Verdicts and reasons are stored as small integers in the vectorised arrays and as their
names in the database and in exported files.
"""

from __future__ import annotations

from typing import Final

RELATIONS: Final[tuple[str, ...]] = ("left_of", "right_of", "above", "below")
RELATION_CODE: Final[dict[str, int]] = {r: i for i, r in enumerate(RELATIONS)}
INVERSE_RELATION: Final[dict[str, str]] = {
    "left_of": "right_of",
    "right_of": "left_of",
    "above": "below",
    "below": "above",
}
HORIZONTAL: Final[frozenset[str]] = frozenset({"left_of", "right_of"})

# Verdict codes (int8 in arrays)
PASS: Final = 0
FAIL: Final = 1
UNDECIDABLE: Final = 2
VERDICTS: Final[tuple[str, ...]] = ("PASS", "FAIL", "UNDECIDABLE")
VERDICT_CODE: Final[dict[str, int]] = {v: i for i, v in enumerate(VERDICTS)}

# Reason codes (int8 in arrays); DECIDED for PASS/FAIL
DECIDED: Final = 0
MISSING: Final = 1
AMBIGUOUS: Final = 2
HIGH_OVERLAP: Final = 3
NEAR_BOUNDARY: Final = 4
UNSTABLE: Final = 5
REASONS: Final[tuple[str, ...]] = (
    "",
    "missing",
    "ambiguous",
    "high_overlap",
    "near_boundary",
    "unstable",
)
REASON_CODE: Final[dict[str, int]] = {r: i for i, r in enumerate(REASONS)}
