"""The steps of reading the detections table into `Detections` columns (`SamplesRepo`'s scan).

Detections are mapped to sample rows without a Python object per detection: DuckDB hashes each
detection's sample id (two independent 64-bit hashes); the first finds the row by a binary
search among the loaded samples' hashes, the second confirms it (`SampleRowMap`). The mapping is
used only when the first hash is unique over every sample of the project, so a detection maps to
a loaded sample exactly when its id is that sample's id (up to a collision of both hashes at
once); otherwise DuckDB joins on the ids themselves. The batches' columns are gathered in
`ScanColumns` (in place, in a pending cache entry's files where it can), and `assemble` puts
them in the samples' order: a plain scan keeps the stored order, which each sample's detections
keep (the checker's tie-break depends on it), so a stable sort by row, skipped when already
sorted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dataset import CodedLabels, Detections, SampleRuns
from ..types import ORIGINAL_NAME


def codes(col: Any, table: dict[str, int]) -> np.ndarray:
    """Codes into `table` of a string column, or of an ENUM's (Arrow dictionary) whose values
    `table` already holds in order: its indices as they are."""
    import pyarrow as pa
    import pyarrow.compute as pc

    enc = col if pa.types.is_dictionary(col.type) else pc.dictionary_encode(col)
    local = [table.setdefault(str(x), len(table)) for x in enc.dictionary.to_pylist()]
    if not local:
        return np.zeros(0, np.int32)
    idx = enc.indices.to_numpy(zero_copy_only=False)
    return idx if local == list(range(len(local))) else np.asarray(local, np.int32)[idx]


def add_to_fingerprint(fingerprint: list[int], batch: Any) -> None:
    """The batch's rows' `fp` (their `ROW_HASH`) added to `fingerprint` (rows, exclusive or, sum),
    as SQL's count, bit_xor and sum would give it."""
    fp = np.asarray(batch.column("fp").to_numpy(zero_copy_only=False), np.uint64)
    fingerprint[0] += len(fp)
    fingerprint[1] ^= int(np.bitwise_xor.reduce(fp)) if len(fp) else 0
    fingerprint[2] += (int((fp & np.uint64(0xFFFFFFFF)).sum(dtype=np.uint64))
                       + (int((fp >> np.uint64(32)).sum(dtype=np.uint64)) << 32))


class SampleRowMap:
    """The loaded sample row of each detection, from its sample id's two hashes: `hashed` is
    (sorted first hashes, their rows, first hash by row, second hash by row)."""

    def __init__(self, hashed: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> None:
        self.h_sorted, self.row_sorted, self.h1_by_row, self.h2_by_row = hashed

    def lookup(self, h: np.ndarray) -> np.ndarray:
        """The loaded row whose first hash is h (-1 for none): a binary search."""
        h_sorted = self.h_sorted
        pos = np.minimum(np.searchsorted(h_sorted, h), len(h_sorted) - 1)
        return np.where(h_sorted[pos] == h, self.row_sorted[pos], -1)

    def rows_of(self, hr: np.ndarray) -> np.ndarray:
        """Rows of the runs' first hashes. Detections are usually stored in their samples'
        order: each run is first guessed to be the next sample after the one before it
        (confirmed by its hash, unique over the samples), picking up the sequence again where
        it breaks; what remains is looked up."""
        h1_by_row = self.h1_by_row
        out = np.full(len(hr), -1, np.int64)
        at = 0
        for _ in range(8):
            first = int(self.lookup(hr[at:at + 1])[0])
            if first < 0:
                break
            guess = first + np.arange(len(hr) - at)
            ok = guess < len(h1_by_row)
            ok[ok] = h1_by_row[guess[ok]] == hr[at:][ok]
            out[at:][ok] = guess[ok]
            bad = np.flatnonzero(~ok)
            if not len(bad):
                return out
            at += int(bad[0])
        rest = np.flatnonzero(out < 0)
        out[rest] = self.lookup(hr[rest])
        return out

    def rows(self, batch: Any) -> np.ndarray:
        """The batch's detections' sample rows (-1: a sample that is not loaded)."""
        h1 = np.asarray(batch.column("h1").to_numpy(zero_copy_only=False), np.uint64)
        row = np.full(len(h1), -1, np.int64)
        if len(self.h_sorted) and len(h1):
            # the detections of one sample are usually adjacent: look up each run once
            start = np.flatnonzero(np.r_[True, h1[1:] != h1[:-1]])
            runs = np.diff(np.r_[start, len(h1)])
            row = np.repeat(self.rows_of(h1[start]), runs)
            h2 = np.asarray(batch.column("h2").to_numpy(zero_copy_only=False), np.uint64)
            found = row >= 0
            row[found & (self.h2_by_row[np.maximum(row, 0)] != h2)] = -1
        return row


class ScanColumns:
    """The columns of one scan's batches: with `in_place`, filled into arrays of the table's row
    count (mapped from `pending`'s files where it can, see `detection_cache.PendingEntry`), any
    rows past that count appended after them; else appended batch by batch.

    Codes come in 1 / 2 bytes while their dictionaries (`dicts`) are that small (a column turns
    int32 once its dictionary outgrows it); scores and boxes in 4 bytes while every value read is
    a float32 (as the detectors give them), a column with one value that is not turns float64.
    The dictionaries and the code widths hold over every pass (`start`) of the scan."""

    def __init__(self, dtypes: dict[str, Any], floats: tuple[str, ...], pending: Any, in_place: bool) -> None:
        self.dtypes, self.floats, self.pending, self.in_place = dtypes, floats, pending, in_place
        self.dicts: dict[str, dict[str, int]] = {"variant": {}, "label": {}}
        self.code_dtype: dict[str, np.dtype[Any]] = {"variant": np.dtype(np.int8), "label": np.dtype(np.int16)}
        self.filled, self.total = 0, -1
        self.parts: dict[str, list[np.ndarray]] = {}
        self.full: dict[str, np.ndarray] = {}

    def start(self, total: int) -> None:
        """A new pass over the table, filling `total` rows in place when `in_place` (-1: every
        batch appended)."""
        self.filled, self.total = 0, total
        self.parts = {k: [] for k in self.dtypes}
        if self.in_place:
            self.full = {k: self.alloc(k, total, dt) for k, dt in self.dtypes.items()}

    def alloc(self, k: str, n: int, dtype: Any) -> np.ndarray:
        """Column k's array of n values: mapped from the pending entry's file when it can be."""
        mapped = self.pending.array(k, dtype, n) if self.pending is not None and k != "row" else None
        return mapped.view(np.ndarray) if mapped is not None else np.empty(n, dtype)

    def fits(self, n: int) -> bool:
        """Whether n more rows are filled in place."""
        return self.in_place and self.filled + n <= self.total

    def put(self, k: str, values: np.ndarray) -> None:
        if self.fits(len(values)):
            self.full[k][self.filled:self.filled + len(values)] = values
        else:
            self.parts[k].append(values)

    def widen(self, k: str, dtype: Any) -> None:
        """Column k in place from here on in a wider dtype (its filled part copied)."""
        wide = self.alloc(k, len(self.full[k]), dtype)
        wide[:self.filled] = self.full[k][:self.filled]
        self.full[k] = wide

    def put_code(self, k: str, values: np.ndarray) -> None:
        """A batch of codes into dicts[k]; the column turns int32 once its dictionary outgrows
        its dtype."""
        if len(self.dicts[k]) - 1 > np.iinfo(self.code_dtype[k]).max:
            self.code_dtype[k] = np.dtype(np.int32)
        if self.fits(len(values)) and self.full[k].dtype != self.code_dtype[k]:
            self.widen(k, self.code_dtype[k])
        self.put(k, values.astype(self.code_dtype[k], copy=False))

    def put_float(self, k: str, values: np.ndarray) -> None:
        """A batch of a float column: FLOAT as read, or DOUBLE kept as float32 when that is exact."""
        if values.dtype == np.float32:
            self.put(k, values)
            return
        into = self.full[k] if self.fits(len(values)) else None
        if into is None or into.dtype == np.float32:
            narrow = values.astype(np.float32)
            if np.array_equal(narrow, values, equal_nan=True):
                self.put(k, narrow)
                return
            if into is not None:  # this column is float64 from here on (filled part exact)
                self.widen(k, np.float64)
        self.put(k, values)

    def add(self, batch: Any, row: np.ndarray) -> None:
        """One batch, its detections' sample rows `row` (or their join keys) given."""
        if not self.fits(len(row)):
            self.total = -1  # more rows than counted: this batch and the rest are appended in order
        self.put("row", row)
        self.put_code("variant", codes(batch.column("variant"), self.dicts["variant"]))
        self.put_code("label", codes(batch.column("label"), self.dicts["label"]))
        self.put("source", batch.column("source").to_numpy(zero_copy_only=False).astype(np.int8))
        for k in self.floats:  # a null reads NaN
            self.put_float(k, batch.column(k).to_numpy(zero_copy_only=False))
        if self.fits(len(row)):
            self.filled += len(row)

    def finish(self) -> None:
        """What was scanned, in order: the filled part, then any rest."""
        if self.in_place:
            for k in self.dtypes:
                self.parts[k].insert(0, self.full[k][:self.filled])
            self.full = {}

    def joined(self, k: str) -> np.ndarray:
        """Column k whole (its parts are let go)."""
        v = [x for x in self.parts.pop(k) if len(x)] or [np.zeros(0, self.dtypes[k])]
        return v[0] if len(v) == 1 else np.concatenate(v)


def sorted_rows(columns: ScanColumns, n_rid: int, n_samples: int) -> tuple[np.ndarray, Any]:
    """The detections' sample rows in order, and the order that takes every column there: the
    detections of samples that are not loaded left out, a stable sort by row when not already
    sorted (`n_rid`: the join's keys are row × n_rid + the detection's row id)."""
    key = columns.joined("row")
    keep: Any = slice(None)
    if len(key) and key.min() < 0:
        keep = np.flatnonzero(key >= 0)  # detections of samples that are not loaded
        key = key[keep]
    order: Any = keep
    if len(key) > 1 and not bool((key[1:] >= key[:-1]).all()):
        local = np.argsort(key, kind="stable")
        order = local if isinstance(keep, slice) else keep[local]
        key = key[local]
        del local
    rows = key // n_rid if n_rid > 1 else key
    del key
    if n_samples < 2**31 - 1:  # a sample row in 4 bytes
        rows = rows.astype(np.int32, copy=False)
    return rows, order


def taken(columns: ScanColumns, k: str, order: Any) -> np.ndarray:
    a = columns.joined(k)
    return a if isinstance(order, slice) else a[order]


def variant_codes(columns: ScanColumns, order: Any, recorded: set[str]) -> tuple[np.ndarray, list[str]]:
    """The variant column as codes into the variant names (the original first, then the others
    scanned or recorded, sorted), and those names."""
    var_dict = list(columns.dicts["variant"])
    names = [ORIGINAL_NAME] + sorted((set(var_dict) | recorded) - {ORIGINAL_NAME})
    vdt = np.int8 if len(names) <= 127 else np.int16
    vidx = np.array([names.index(v) for v in var_dict] or [0], dtype=vdt)
    var_code = taken(columns, "variant", order)
    if not np.array_equal(vidx, np.arange(len(vidx))):  # scanned in another order than named
        var_code = vidx[var_code]
    return var_code.astype(vdt, copy=False), names  # the names' own width, whatever the scan's


def coded_labels(columns: ScanColumns, order: Any) -> CodedLabels:
    """Labels as codes into the distinct lower-case labels (2 bytes per detection up to 32,767
    labels; the column of strings is built only if something reads it whole)."""
    lower = [x.lower() for x in columns.dicts["label"]] or [""]
    uniq = list(dict.fromkeys(lower))
    pos = {x: i for i, x in enumerate(uniq)}
    remap = np.array([pos[x] for x in lower], np.int32)
    lab_code = taken(columns, "label", order)
    if not np.array_equal(remap, np.arange(len(remap))):  # distinct only up to case
        lab_code = remap.astype(lab_code.dtype)[lab_code]  # fewer codes: the dtype holds them
    return CodedLabels(lab_code, np.array(uniq, dtype=object))


def sample_index(rows: np.ndarray, n_samples: int) -> Any:
    """The detections' sample column: the rows are sorted by sample, so each sample's first row
    stands for it, found by a binary search per sample (needles of the rows' own dtype: the
    column is not cast; counting the rows instead cast 13M of them to 8 bytes, ≈0.5 s with the
    fresh memory). The rows themselves when the last is past the samples."""
    if len(rows) and int(rows[-1]) >= n_samples:
        return rows
    needles = np.arange(n_samples + 1, dtype=rows.dtype)
    offsets = np.searchsorted(rows, needles).astype(np.int64, copy=False)
    del needles
    return SampleRuns(offsets, rows.dtype)


def assemble(columns: ScanColumns, recorded: set[str], n_rid: int, n_samples: int) -> tuple[Detections, list[str]]:
    """The scanned columns as `Detections` in the samples' order, and the variant names
    (`recorded`: the project's image variants)."""
    rows, order = sorted_rows(columns, n_rid, n_samples)
    label = coded_labels(columns, order)
    var_code, names = variant_codes(columns, order, recorded)
    dets = Detections(
        sample_idx=sample_index(rows, n_samples), source=taken(columns, "source", order),
        variant=var_code, label=label,  # type: ignore[arg-type]
        score=taken(columns, "score", order), x1=taken(columns, "x1", order),
        y1=taken(columns, "y1", order), x2=taken(columns, "x2", order), y2=taken(columns, "y2", order),
    )
    return dets, names
