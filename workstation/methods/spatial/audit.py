"""Human audit: stratified sampling, label bookkeeping, confusion and agreement (METHODS.md §1).

Everything here is a pure function over numpy arrays; the store calls these (or does the same
in SQL) and the UI shows the answers.

Verdict codes are `types.PASS=0, FAIL=1, UNDECIDABLE=2`; a negative code (conventionally -1)
means "no label" wherever a human verdict array is accepted, and such entries are left out.
Every function accepts empty input and answers NaN (or zero counts) instead of failing.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ...dataset import Dataset
from ...evaluation.agreement import _event_order, latest_labels
from ...evaluation.audit_sets import allocate, confidence_bins, count_strata, stratified_indices  # noqa: F401 - part of this module's API
from ...util.grouping import factorize
from .data import spatial_columns
from .types import FAIL, PASS, RELATIONS, UNDECIDABLE, VERDICTS, REASONS
from ...types import WorkstationError

NO_LABEL = -1

STRATA_KEYS: tuple[str, ...] = ("run", "relation", "verdict", "reason")


class VerdictLike(Protocol):
    """What sampling needs from a verdict set (checker.VerdictArrays satisfies it)."""

    verdict: np.ndarray
    conf: np.ndarray


# ---------------------------------------------------------------------------------------------
# Stratified sampling
# ---------------------------------------------------------------------------------------------


def _codes(values: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Integer codes (sorted by value) and their display names."""
    return factorize(values)


def stratum_codes(
    ds: Dataset, v: VerdictLike | None, strata: Sequence[str] = ("run", "relation", "verdict")
) -> tuple[np.ndarray, list[tuple[str, ...]]]:
    """Stratum of every sample row: (code per row, name tuple per code).

    `strata` is any subset of ("run", "relation", "verdict", "reason"); the run stands for the
    method. Codes number the non-empty strata in sorted order of their names' codes.
    """
    n = ds.n
    unknown = [s for s in strata if s not in STRATA_KEYS]
    if unknown:
        raise WorkstationError(
            f"unknown audit stratum {', '.join(map(repr, unknown))} (choose from {', '.join(STRATA_KEYS)})"
        )
    if ("verdict" in strata or "reason" in strata) and v is None:
        raise WorkstationError("stratifying by checker verdict needs a verdict set; evaluate the checker first")
    cols: list[np.ndarray] = []
    names: list[list[str]] = []
    for s in strata:
        if s == "run":
            c, nm = _codes(ds.samples.run_id)
        elif s == "relation":
            c = np.asarray(spatial_columns(ds).relation, dtype=np.int64)
            nm = list(RELATIONS)
        elif s == "verdict":
            c = np.asarray(v.verdict, dtype=np.int64)  # type: ignore[union-attr]
            nm = list(VERDICTS)
        else:
            c = np.asarray(getattr(v, "reason"), dtype=np.int64)
            nm = [r or "decided" for r in REASONS]
        if len(c) != n:
            raise WorkstationError(f"verdict set has {len(c)} rows but the dataset has {n} samples")
        cols.append(c)
        names.append(nm)
    if not cols:
        return np.zeros(n, np.int64), [()]
    key = np.stack(cols, axis=1) if n else np.zeros((0, len(cols)), np.int64)
    uniq, inv = np.unique(key, axis=0, return_inverse=True)
    labels = [tuple(names[j][int(u[j])] for j in range(len(cols))) for u in uniq]
    return inv.astype(np.int64).reshape(-1), labels


def stratified_sample(
    ds: Dataset,
    v: VerdictLike | None,
    size: int,
    seed: int,
    strata: Sequence[str] = ("run", "relation", "verdict"),
    conf_bins: int = 5,
    exclude: np.ndarray | Sequence[int] | None = None,
) -> np.ndarray:
    """A seeded stratified sample of sample rows for a human audit (sorted row numbers).

    Strata are method (run) × relation × checker verdict by default (`strata` picks a subset,
    "reason" may be added). The sample size is split over the non-empty strata proportionally
    with at least one per stratum where `size` allows (`allocate`); inside a stratum it is split
    the same way over `conf_bins` equal-width confidence bins, so that every confidence range
    is seen; inside a bin the rows are drawn without replacement. `exclude` (rows or a boolean
    mask) removes samples already audited. Same inputs and seed → same rows; never duplicates.
    If `size` is at least the number of eligible samples, all of them are returned.
    """
    n = ds.n
    codes, _ = stratum_codes(ds, v, strata)
    if exclude is not None:
        ex = np.asarray(exclude)
        if ex.dtype == bool and len(ex) != n:
            raise WorkstationError(f"exclude mask has {len(ex)} entries but the dataset has {n} samples")
    return stratified_indices(codes, size, seed, conf=np.asarray(v.conf) if v is not None else None,
                              conf_bins=conf_bins, exclude=exclude)


def strata_table(
    ds: Dataset,
    v: VerdictLike | None,
    sample_rows: np.ndarray,
    strata: Sequence[str] = ("run", "relation", "verdict"),
) -> list[dict[str, Any]]:
    """Per stratum: its names, the population count and how many rows the sample holds."""
    codes, names = stratum_codes(ds, v, strata)
    return count_strata(codes, names, strata, sample_rows)


# ---------------------------------------------------------------------------------------------
# Labels: append-only events, latest per (sample, annotator)
# ---------------------------------------------------------------------------------------------


def labels_by_row(
    n_rows: int,
    sample_row: np.ndarray | Sequence[int],
    verdict: np.ndarray | Sequence[int],
    annotator: Sequence[Hashable] | np.ndarray | None = None,
    order: Sequence[Any] | np.ndarray | None = None,
    only_annotator: Hashable | None = None,
    policy: str = "latest",
) -> np.ndarray:
    """One human verdict per sample row (int8, NO_LABEL=-1 where none) from label events.

    First each (sample, annotator) keeps its latest event. When several annotators labelled a
    sample, `policy="latest"` keeps the most recent of their labels and `policy="majority"` the
    most frequent verdict (a tie gives UNDECIDABLE). `only_annotator` restricts to one person.
    """
    rows = np.asarray(sample_row, dtype=np.int64)
    verd = np.asarray(verdict, dtype=np.int64)
    if len(rows) != len(verd):
        raise WorkstationError("label events: sample and verdict columns differ in length")
    if len(rows) and (rows.min() < 0 or rows.max() >= n_rows):
        raise WorkstationError("label events refer to a sample row outside the dataset")
    ann = np.zeros(len(rows), np.int64) if annotator is None else np.asarray(annotator)
    if order is not None:
        order = np.asarray(order)
    keep = np.ones(len(rows), bool)
    if only_annotator is not None:
        keep = ann.astype(str) == str(only_annotator)
    idx_all = np.flatnonzero(keep)
    out = np.full(n_rows, NO_LABEL, np.int8)
    if len(idx_all) == 0:
        return out
    sub_order = None if order is None else order[idx_all]
    idx = idx_all[latest_labels(rows[idx_all], ann[idx_all], sub_order)]
    if policy == "latest":
        rank = np.empty(len(rows), np.int64)
        rank[_event_order(len(rows), order)] = np.arange(len(rows))
        idx = idx[np.argsort(rank[idx], kind="stable")]
        out[rows[idx]] = verd[idx]  # later assignments win
    elif policy == "majority":
        counts = np.zeros((n_rows, 3), np.int64)
        ok = (verd[idx] >= 0) & (verd[idx] <= 2)
        np.add.at(counts, (rows[idx][ok], verd[idx][ok]), 1)
        has = counts.sum(1) > 0
        top = counts.max(1)
        n_top = (counts == top[:, None]).sum(1)
        winner = np.argmax(counts, axis=1)
        res = np.where(n_top > 1, UNDECIDABLE, winner)
        out[has] = res[has]
    else:
        raise WorkstationError(f"unknown label policy {policy!r} (use 'latest' or 'majority')")
    return out


# ---------------------------------------------------------------------------------------------
# Confusion and agreement
# ---------------------------------------------------------------------------------------------


def confusion(checker_verdict: np.ndarray | Sequence[int], human_verdict: np.ndarray | Sequence[int]) -> np.ndarray:
    """3×3 counts, rows = checker verdict, columns = human verdict (PASS, FAIL, UNDECIDABLE).

    Pairs where either code is outside 0..2 (no label) are left out.
    """
    c = np.asarray(checker_verdict, dtype=np.int64)
    h = np.asarray(human_verdict, dtype=np.int64)
    if len(c) != len(h):
        raise WorkstationError(f"checker and human verdicts differ in length ({len(c)} vs {len(h)})")
    ok = (c >= 0) & (c <= 2) & (h >= 0) & (h <= 2)
    return np.bincount(c[ok] * 3 + h[ok], minlength=9).reshape(3, 3).astype(np.int64)


def decided_confusion(m3: np.ndarray) -> np.ndarray:
    """The 2×2 over samples decided by both (rows checker PASS/FAIL, columns human PASS/FAIL)."""
    return np.asarray(m3)[:2, :2].copy()


@dataclass(frozen=True)
class ConfusionSummary:
    """Checker vs human over audited samples, as SpatialBench-UC's audit_metrics reports it."""

    matrix: np.ndarray  # 3×3, rows checker, columns human
    total: int  # pairs with both verdicts
    undecidable_checker: int
    undecidable_human: int
    tp: int  # checker PASS, human PASS
    fp: int  # checker PASS, human FAIL
    fn: int  # checker FAIL, human PASS
    tn: int  # checker FAIL, human FAIL
    accuracy: float  # over the 2×2; NaN when it is empty
    precision: float
    recall: float
    f1: float

    @property
    def decided(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    def to_dict(self) -> dict[str, Any]:
        return {
            "matrix": self.matrix.tolist(), "total": self.total, "decided": self.decided,
            "undecidable_checker": self.undecidable_checker, "undecidable_human": self.undecidable_human,
            "tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn, "accuracy": self.accuracy,
            "precision": self.precision, "recall": self.recall, "f1": self.f1,
        }


def _ratio(a: float, b: float) -> float:
    return float(a) / float(b) if b else float("nan")


def confusion_summary(checker_verdict: np.ndarray | Sequence[int], human_verdict: np.ndarray | Sequence[int]) -> ConfusionSummary:
    """Confusion counts and PASS-as-positive accuracy / precision / recall / F1 (NaN when undefined)."""
    m = confusion(checker_verdict, human_verdict)
    tp, fp, fn, tn = int(m[PASS, PASS]), int(m[PASS, FAIL]), int(m[FAIL, PASS]), int(m[FAIL, FAIL])
    prec = _ratio(tp, tp + fp)
    rec = _ratio(tp, tp + fn)
    f1 = 2 * prec * rec / (prec + rec) if (prec + rec) > 0 else float("nan")
    return ConfusionSummary(
        matrix=m, total=int(m.sum()), undecidable_checker=int(m[UNDECIDABLE].sum()),
        undecidable_human=int(m[:, UNDECIDABLE].sum()), tp=tp, fp=fp, fn=fn, tn=tn,
        accuracy=_ratio(tp + tn, tp + fp + fn + tn), precision=prec, recall=rec, f1=f1,
    )


