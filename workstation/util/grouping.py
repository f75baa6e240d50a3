"""Group codes: one small integer per distinct value (or tuple of values), vectorised."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

# Codes a loader already has (Arrow's dictionary encoding of a column it read), by the identity
# of the array they describe: factorize(sort=False) of that array returns them without hashing
# every value again. Entries go when their array does.
_known: dict[int, tuple[weakref.ref[np.ndarray], np.ndarray, list[str]]] = {}
# re-entrant: an array can die (and its entry's callback run) on the thread that holds the lock,
# when a collection runs inside `remember_codes`
_known_lock = threading.RLock()


def remember_codes(values: np.ndarray, codes: np.ndarray, names: list[str]) -> None:
    """Record ``factorize(values, sort=False)`` as (codes, names): codes in order of first
    appearance, exactly what factorize would compute. ``values`` must not be changed in place."""
    key = id(values)

    def gone(ref: Any, key: int = key) -> None:
        with _known_lock:
            hit = _known.get(key)
            if hit is not None and hit[0] is ref:  # not a newer array's entry under the same id
                del _known[key]

    # kept in 4 bytes while they fit (factorize hands out int64 copies): 4 MB less per
    # million samples for each remembered column
    codes = np.asarray(codes, np.int32 if len(names) < 2**31 else np.int64)
    codes.setflags(write=False)
    with _known_lock:
        _known[key] = (weakref.ref(values, gone), codes, list(names))


def _remembered(values: Any) -> tuple[np.ndarray, list[str]] | None:
    hit = _known.get(id(values)) if isinstance(values, np.ndarray) else None
    if hit is None:
        return None
    ref, codes, names = hit
    size = len(values)
    if ref() is not values or len(codes) != size:
        return None
    return codes, list(names)


def factorize(values: Sequence[Hashable] | np.ndarray, *, sort: bool = True) -> tuple[np.ndarray, list[str]]:
    """Codes 0..k-1 (int64) of the values as text and the k names: in sorted order of the names,
    or with ``sort=False`` in order of first appearance (hash encoding: fast on large columns)."""
    if len(values) == 0:
        return np.zeros(0, np.int64), []
    if not sort:
        known = _remembered(values)
        if known is not None:
            return known[0].astype(np.int64), known[1]
        try:
            import pyarrow as pa

            arr = values.tolist() if isinstance(values, np.ndarray) else list(values)
            enc = pa.array([str(x) for x in arr] if not all(isinstance(x, str) for x in arr[:64]) else arr,
                           type=pa.string()).dictionary_encode()
            return (enc.indices.to_numpy(zero_copy_only=False).astype(np.int64),
                    [str(x) for x in enc.dictionary.to_pylist()])
        except (ImportError, TypeError, ValueError):  # pragma: no cover - mixed types: the plain path
            table: dict[str, int] = {}
            codes = [table.setdefault(str(v), len(table)) for v in values]
            return np.array(codes, np.int64), list(table)
    uniq, inv = np.unique(np.asarray(values).astype(str), return_inverse=True)
    return inv.reshape(-1).astype(np.int64), [str(u) for u in uniq]


def group_codes(*cols: Sequence[Hashable] | np.ndarray) -> np.ndarray:
    """One integer per distinct tuple of the aligned columns (codes in sorted tuple order).

    Integer and boolean columns are used as they are; other columns are compared as text."""
    if not cols or len(cols[0]) == 0:
        return np.zeros(0, np.int64)
    parts = []
    for c in cols:
        arr = np.asarray(c)
        if len(arr) != len(cols[0]):
            raise ValueError("group_codes: the columns differ in length")
        if arr.dtype.kind in "iub":
            parts.append(arr.astype(np.int64))
        else:
            parts.append(factorize(arr)[0])
    if len(parts) == 1:
        _, inv = np.unique(parts[0], return_inverse=True)
        return inv.reshape(-1).astype(np.int64)
    key = np.stack(parts, axis=1)
    _, inv = np.unique(key, axis=0, return_inverse=True)
    return inv.reshape(-1).astype(np.int64)


def by_segment_then_score(segment: np.ndarray, score: np.ndarray) -> np.ndarray:
    """The stable order by segment ascending, then score descending (ties keep their input
    order): one argsort of a complex key (real = segment, imag = -score; numpy orders complex
    numbers lexicographically). Segments must be exact in float64 (below 2**53)."""
    key = np.empty(len(segment), np.complex128)
    key.real = segment
    key.imag = -np.asarray(score, np.float64)
    return np.argsort(key, kind="stable")
