"""Codes and errors shared by the whole core: detection sources, image variants, and the
errors a user can cause (`WorkstationError`, `InputError` naming file and line).

Each method keeps its own codes (verdicts, reasons, relations) in its package.
"""

from __future__ import annotations

from typing import Final

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
