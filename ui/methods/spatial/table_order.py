"""The sample table's filter and sort in numpy: which dataset rows match a `FilterSpec` and in
what order, the same as the table's SQL (`sample_table._FROM` + `FilterSpec.where` +
`SampleTableModel._order`) gives, without a query per slider move.

The parts of a filter that the checker cannot change (runs, relations, free text) are matched
once by SQL and kept as a mask; the verdict, reason, confidence, label and agreement conditions
and the sort are numpy comparisons and one stable argsort over the matching rows. Sorting by the
text columns (sample id, run, prompt) is left to SQL (`LiveColumns.sortable`).

SQL semantics copied here: DuckDB orders NaN above every number (so ``conf >= x`` holds for
NaN and ``conf <= x`` does not; NaN comes last ascending and first descending); ties in the
sort key keep ascending dataset row order (``ORDER BY key, v.row``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from workstation.methods.spatial.types import REASONS, RELATIONS, VERDICTS

# text of the Agreement column (sample_table._AGREE) in SQL's string order
AGREE_TEXT = ("", "agrees", "annotators differ", "differs")
_REL_RANK = np.argsort(np.argsort(np.array(RELATIONS, dtype=object).astype(str))).astype(np.int64)
SORTABLE = frozenset({-1, 3, 4, 5, 6, 7, 8, 9})


@dataclass
class LiveColumns:
    """The per-row arrays the live table holds (aligned with the dataset)."""

    relation: np.ndarray  # int codes (types.RELATIONS)
    seed: np.ndarray  # int64
    verdict: np.ndarray  # int8, -1 none
    reason: np.ndarray  # int8
    conf: np.ndarray  # float64
    human: np.ndarray  # int8, -1 none
    nv: np.ndarray  # int32: distinct verdicts among the annotators' latest labels

    def agreement(self, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Code of the Agreement text (index into AGREE_TEXT) of the rows."""
        nv, human, verdict = self.nv[rows], self.human[rows], self.verdict[rows]
        return np.where(nv > 1, 2, np.where(human < 0, 0, np.where(human == verdict, 1, 3))).astype(np.int8)


def _one_of(codes: np.ndarray, wanted: list[int], n_codes: int) -> np.ndarray:
    """codes ∈ wanted, for codes 0..n_codes-1 or -1 (none, never wanted): a table lookup (-1
    reads the table's extra last entry, False)."""
    table = np.zeros(n_codes + 1, bool)
    table[np.asarray(wanted, np.int64)] = True
    return table[codes]


def dynamic_mask(spec: Any, live: LiveColumns, base: np.ndarray | None) -> np.ndarray:
    """Rows passing the verdict / reason / confidence / label conditions of `spec` (and `base`,
    the mask of the other conditions, when given)."""
    n = len(live.verdict)
    m = np.ones(n, bool) if base is None else base.copy()
    if spec.verdicts:
        m &= _one_of(live.verdict, [VERDICTS.index(x) for x in spec.verdicts], len(VERDICTS))
    if spec.reasons:
        m &= _one_of(live.reason, [0 if r == "decided" else REASONS.index(r) for r in spec.reasons], len(REASONS))
    nan = None
    if spec.conf_min > 0.0 or spec.conf_max < 1.0:
        nan = np.isnan(live.conf)
    if spec.conf_min > 0.0:
        m &= (live.conf >= float(spec.conf_min)) | nan
    if spec.conf_max < 1.0:
        m &= (live.conf <= float(spec.conf_max)) & ~nan
    if spec.labelled == "labelled":
        m &= live.human >= 0
    elif spec.labelled == "unlabelled":
        m &= live.human < 0
    if spec.checker_vs_human:
        m &= (live.human >= 0) & (live.human != live.verdict)
    if spec.annotators_disagree:
        m &= live.nv > 1
    return m


class RowOrder:
    """Dataset rows in table order, sorted only as far as asked: a page near the top sorts the
    rows whose key is at most the page end's key (found by a partition); the whole order is
    sorted once something asks for all of it (or a page deep in it). Ties keep row order."""

    def __init__(self, idx: np.ndarray, key: np.ndarray | None) -> None:
        self._idx = idx  # ascending rows
        self._key = key  # their sort keys (None: already in order)
        self._full: np.ndarray | None = idx if key is None else None

    def __len__(self) -> int:
        return len(self._idx)

    def all(self) -> np.ndarray:
        if self._full is None:
            assert self._key is not None
            self._full = self._idx[np.argsort(self._key, kind="stable")]
        return self._full

    def page(self, offset: int, limit: int) -> np.ndarray:
        end = min(offset + limit, len(self._idx))
        if self._full is not None or end * 8 >= len(self._idx) or end <= 0:
            return self.all()[offset:end]
        key = self._key
        assert key is not None
        cut = np.partition(key, end - 1)[end - 1]  # the end-th smallest key
        if np.isnan(cut):  # NaN sorts last: the page reaches into them
            return self.all()[offset:end]
        cand = np.flatnonzero(key <= cut)  # every row that can be in the first `end`, in row order
        return self._idx[cand[np.argsort(key[cand], kind="stable")]][offset:end]


def ordered_rows(mask: np.ndarray, live: LiveColumns, sort_column: int, descending: bool) -> RowOrder:
    """The rows of `mask` in table order."""
    idx = np.flatnonzero(mask)
    if sort_column < 0 or len(idx) < 2:
        return RowOrder(idx, None)
    if sort_column == 7:
        key = live.conf[idx]
        if descending:
            key = -key
            key[np.isnan(key)] = -np.inf  # NaN first when descending (conf is within [0, 1])
        # ascending: numpy's stable sort puts NaN last, as DuckDB does
        return RowOrder(idx, key)
    if sort_column == 3:
        key = _REL_RANK[np.asarray(live.relation[idx], np.int64)]
    elif sort_column == 4:
        key = np.asarray(live.seed[idx], np.int64)
    elif sort_column == 5:
        key = live.verdict[idx].astype(np.int64)
    elif sort_column == 6:
        key = live.reason[idx].astype(np.int64)
    elif sort_column == 8:
        key = live.human[idx].astype(np.int64)
    elif sort_column == 9:
        key = live.agreement(idx).astype(np.int64)
    else:
        raise ValueError(f"column {sort_column} is sorted by SQL")
    if descending:
        key = -key
    return RowOrder(idx, key)


def row_tuples(rows: np.ndarray, ds: Any, text: Any, relation_names: Any, live: LiveColumns,
               labels: dict[int, str], notes: dict[int, str] | None = None) -> list[tuple[Any, ...]]:
    """The table's fetched-row tuples (sample_table._SELECT's columns) of `rows`: `text` and
    `relation_names` are the live table's Arrow columns."""
    import pyarrow as pa

    if len(rows) == 0:
        return []
    r = np.asarray(rows, np.int64)
    take = pa.array(r)
    s = ds.samples
    verdict = live.verdict[r].tolist()
    human = live.human[r].tolist()
    agree = [AGREE_TEXT[a] for a in live.agreement(r).tolist()]
    return list(zip(r.tolist(), s.sample_id[r].tolist(), s.run_id[r].tolist(), text.take(take).to_pylist(),
                    relation_names.take(take).to_pylist(), np.asarray(live.seed[r], np.int64).tolist(),
                    verdict, live.reason[r].tolist(), live.conf[r].tolist(),
                    [labels.get(x) for x in r.tolist()], human, agree, s.image_path[r].tolist(),
                    [(notes or {}).get(x) for x in r.tolist()]))
