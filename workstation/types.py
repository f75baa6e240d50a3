"""Codes shared by the core: relations, verdicts, abstention reasons.

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

# Detection sources (int8 in arrays)
PRIMARY: Final = 0
SECONDARY: Final = 1
SOURCES: Final[tuple[str, ...]] = ("primary", "secondary")

# Image variants: 0 is the original image; k >= 1 is the k-th perturbation of the
# checker config (CheckerConfig.perturbations[k-1]); variant names are stored in the DB.
ORIGINAL: Final = 0
ORIGINAL_NAME: Final = "original"


class WorkstationError(Exception):
    """An error the user caused and can fix; its message is shown as is."""


class InputError(WorkstationError):
    """Bad input file. The message names the file and, where there is one, the line."""

    def __init__(self, path: object, message: str, line: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.detail = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")
