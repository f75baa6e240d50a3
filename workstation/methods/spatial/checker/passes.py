"""Running a pass's kernel over every sample: in chunks from the prepared inputs then over the
area stage's samples from their own (`_two_passes`), or again at a few samples over an earlier
result's arrays (`_patched`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .parallel import _run_chunks, _run_tasks
from .params import _Params


def _two_passes(n: int, idx: np.ndarray, kernel: Callable[..., None], p: _Params, x_all: dict[str, Any],
                x_sub: dict[str, Any], types: dict[str, Any]) -> dict[str, np.ndarray]:
    """``kernel`` over every sample from the prepared inputs, then over the area stage's samples
    ``idx`` from their own inputs (scattered over the first pass's values). Read-only results."""
    out = {k: np.empty(n, t) for k, t in types.items()}
    _run_chunks(n, lambda lo, hi: kernel(p, x_all, out, slice(lo, hi)))
    if len(idx):
        _run_into(out, idx, kernel, p, x_sub, types)
    return _read_only(out)


def _run_into(out: dict[str, np.ndarray], rows: np.ndarray, kernel: Callable[..., None], p: _Params,
              x: dict[str, Any], types: dict[str, Any]) -> None:
    """``kernel`` over the ``len(rows)`` samples of the inputs ``x``, its values put into ``out`` at ``rows``."""
    sub = {k: np.empty(len(rows), t) for k, t in types.items()}
    _run_chunks(len(rows), lambda lo, hi: kernel(p, x, sub, slice(lo, hi)))
    for k in types:
        out[k][rows] = sub[k]


def _read_only(out: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    for arr in out.values():
        arr.flags.writeable = False
    return out


def _patched(base: dict[str, np.ndarray], at: np.ndarray, idx: np.ndarray, kernel: Callable[..., None],
             p: _Params, x_all: dict[str, Any], x_sub: dict[str, Any], types: dict[str, Any]) -> dict[str, np.ndarray]:
    """`_two_passes`' arrays where they differ from ``base`` only at the samples ``at`` (sorted):
    ``base``'s arrays copied and ``kernel`` run again over those samples alone, from the prepared
    inputs or, for those among the area stage's samples ``idx``, from its own (each input
    gathered at them). Read-only results."""
    out: dict[str, np.ndarray] = {}

    def copy(k: int) -> None:
        name = list(types)[k]
        out[name] = np.array(base[name], dtype=types[name], copy=True)

    _run_tasks(len(types), copy)
    pos = np.minimum(np.searchsorted(idx, at), max(len(idx) - 1, 0))
    in_sub = (idx[pos] == at) if len(idx) else np.zeros(len(at), bool)
    for rows, x, where in ((at[~in_sub], x_all, at[~in_sub]), (at[in_sub], x_sub, pos[in_sub])):
        if not len(rows):
            continue
        xs = {k: (np.take(a, where, axis=-1) if isinstance(a, np.ndarray) else a) for k, a in x.items()}
        _run_into(out, rows, kernel, p, xs, types)
    return _read_only(out)
