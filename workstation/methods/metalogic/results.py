"""The MetaLogic comparison's result type and codes (shared by `compare` and `reference`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ...evaluation.base import LabelScheme
from .config import MetaLogicConfig
from .laws import DIMENSIONS, LAWS, MODIFIERS

__all__ = ["VERDICTS", "KINDS", "REASONS", "SIDES", "ALIGNED", "MISALIGNED", "UNDECIDABLE", "OMISSION",
           "DUPLICATION", "POSITIONAL", "NEAR_THRESHOLD", "AMBIGUOUS", "NEAR_BOUNDARY", "PairResults",
           "Selection", "LABEL_SCHEME"]

VERDICTS: tuple[str, ...] = ("ALIGNED", "MISALIGNED", "UNDECIDABLE")
ALIGNED, MISALIGNED, UNDECIDABLE = 0, 1, 2
KINDS: tuple[str, ...] = ("", "omission", "duplication", "positional")
OMISSION, DUPLICATION, POSITIONAL = 1, 2, 3
REASONS: tuple[str, ...] = ("", "near_threshold", "ambiguous", "near_boundary")
NEAR_THRESHOLD, AMBIGUOUS, NEAR_BOUNDARY = 1, 2, 3
SIDES: tuple[str, ...] = ("A", "B")

#: a human's judgement of one image pair: the same scene (A), not the same scene (M), can't tell (U)
LABEL_SCHEME = LabelScheme(
    task="metalogic.pair", target="pair", values=VERDICTS, keys=("A", "M", "U"),
    titles=("Aligned", "Misaligned", "Undecidable"), ordinal=False, title="MetaLogic pair", abstain="UNDECIDABLE",
)


def suite_pairs(ids: np.ndarray) -> np.ndarray:
    """The suite pair of each image pair id ``"<pair>|<run>|<seed>"`` (an id without two "|" is
    its own pair)."""
    out = np.empty(len(ids), dtype=object)
    for i, x in enumerate(np.asarray(ids, dtype=object).tolist()):
        t = str(x)
        parts = t.rsplit("|", 2)
        out[i] = parts[0] if len(parts) == 3 else t
    return out


class Selection:
    """The selected box of every (side, slot, pair): detection rows (-1 none) and axis coordinates
    (NaN without a box or an axis), arrays of shape (2, E, P). Built on first use when made from
    a function (a slider move need not pay for arrays nobody reads)."""

    def __init__(self, make: Callable[[], tuple[np.ndarray, np.ndarray]] | None = None,
                 rows: np.ndarray | None = None, coords: np.ndarray | None = None) -> None:
        self._make = make
        self._rows = rows
        self._coords = coords

    def _build(self) -> tuple[np.ndarray, np.ndarray]:
        if self._rows is None or self._coords is None:
            if self._make is None:
                raise ValueError("empty selection")
            self._rows, self._coords = self._make()
            self._make = None
        return self._rows, self._coords

    @property
    def rows(self) -> np.ndarray:
        return self._build()[0]

    @property
    def coords(self) -> np.ndarray:
        return self._build()[1]


@dataclass
class PairResults:
    """Comparison output, one entry per image pair (row i = ``data`` pair i).

    ``verdict`` int8 (ALIGNED / MISALIGNED / UNDECIDABLE), ``kind`` int8 (KINDS code, 0 unless
    MISALIGNED), ``reason`` int8 (REASONS code, 0 unless UNDECIDABLE), ``slot`` / ``slot2`` int8:
    the entity slot(s) the outcome names (-1 none; slot2 only for positional), ``side`` int8 (0 A,
    1 B, -1), ``conf`` float64, ``ok_a`` / ``ok_b`` bool. Per (side, slot, pair), arrays of shape
    (2, E, P): ``count`` (point count at the threshold), ``count_lo`` / ``count_hi`` (the widened
    interval), ``sel_row`` (row in the detection arrays of the selected box, -1), ``coord``
    (its centroid on the pair's axis as a fraction of the image side; NaN without a box or axis)
    — these two from ``selection``, built on first use. Counts are small integers (int8 unless
    a segment holds more than 120 candidates).
    """

    item_kind: ClassVar[str] = "pair"
    verdict_names: ClassVar[tuple[str, ...]] = VERDICTS

    ids: np.ndarray
    verdict: np.ndarray
    conf: np.ndarray
    kind: np.ndarray
    reason: np.ndarray
    slot: np.ndarray
    slot2: np.ndarray
    side: np.ndarray
    ok_a: np.ndarray
    ok_b: np.ndarray
    count: np.ndarray
    count_lo: np.ndarray
    count_hi: np.ndarray
    selection: Selection
    entity: np.ndarray
    law: np.ndarray
    modifier: np.ndarray
    dimension: np.ndarray
    run: np.ndarray
    config: MetaLogicConfig = field(default_factory=MetaLogicConfig)
    #: the paper's decision of every pair (ALIGNED / MISALIGNED, no abstention; `compare.paper_outcomes`),
    #: when computed
    paper_verdict: np.ndarray | None = None

    @property
    def unit(self) -> np.ndarray:
        """The suite pair of every image pair (the unit its intervals resample): the id without its
        ``|<run>|<seed>``."""
        return suite_pairs(self.ids)

    @property
    def sel_row(self) -> np.ndarray:
        """(2, E, P) int64: row in the detection arrays of each selected box, -1 none."""
        return self.selection.rows

    @property
    def coord(self) -> np.ndarray:
        """(2, E, P) float64: centroid of each selected box on the pair's axis (fraction of the side)."""
        return self.selection.coords

    def __len__(self) -> int:
        return len(self.verdict)

    def counts(self) -> tuple[int, int, int]:
        """(ALIGNED, MISALIGNED, UNDECIDABLE) counts."""
        c = np.bincount(self.verdict.astype(np.int64), minlength=3)
        return int(c[0]), int(c[1]), int(c[2])

    def _name(self, i: int, slot: int) -> str:
        return str(self.entity[i, slot]) if slot >= 0 else ""

    def detail_text(self, i: int) -> str:
        """One line for a human, e.g. ``omission: dog missing in B``,
        ``positional: cat / dog in a different order (B differs from the prompt)``,
        ``near_threshold: count of cat uncertain``."""
        v, s, s2 = int(self.verdict[i]), int(self.slot[i]), int(self.slot2[i])
        name, side = self._name(i, s), int(self.side[i])
        if v == ALIGNED:
            return ""
        if v == MISALIGNED:
            k = int(self.kind[i])
            where = SIDES[side] if side >= 0 else "?"
            if k == OMISSION:
                has = int(self.count[side, s, i]) > 0 if side >= 0 else False
                return f"omission: {name} only in {where}" if has else f"omission: {name} missing in {where}"
            if k == DUPLICATION:
                return (f"duplication: {name} × {int(self.count[0, s, i])} in A, "
                        f"× {int(self.count[1, s, i])} in B ({where} differs)")
            return (f"positional: {name} / {self._name(i, s2)} in a different order "
                    f"({where} differs from the prompt)")
        r = int(self.reason[i])
        if r == NEAR_BOUNDARY:
            return f"near_boundary: {name} / {self._name(i, s2)} too close on the axis"
        if r == AMBIGUOUS:
            return f"ambiguous: {name}" + (f" / {self._name(i, s2)}" if s2 >= 0 else "")
        return f"near_threshold: count of {name} uncertain"

    def columns(self) -> dict[str, np.ndarray]:
        """Every per-pair column (names, not codes), arrays of equal length."""
        n = len(self)
        rows = np.arange(n)
        e = self.entity.shape[1]

        def names(slot: np.ndarray) -> np.ndarray:
            out = np.full(n, "", dtype=object)
            ok = slot >= 0
            if e:
                out[ok] = self.entity[rows[ok], slot[ok].astype(np.int64)]
            return out

        side = np.array(["", "A", "B"], dtype=object)[self.side.astype(np.int64) + 1]
        return {
            "pair_id": self.ids,
            "verdict": np.array(VERDICTS, dtype=object)[self.verdict.astype(np.int64)],
            "kind": np.array(KINDS, dtype=object)[self.kind.astype(np.int64)],
            "reason": np.array(REASONS, dtype=object)[self.reason.astype(np.int64)],
            "entity": names(self.slot), "entity2": names(self.slot2), "side": side,
            "conf": self.conf, "ok_a": self.ok_a, "ok_b": self.ok_b,
            "law": np.array(LAWS, dtype=object)[self.law.astype(np.int64)],
            "modifier": np.array(MODIFIERS, dtype=object)[self.modifier.astype(np.int64)],
            "dimension": np.array(DIMENSIONS, dtype=object)[self.dimension.astype(np.int64)],
            "run": self.run,
        }

