"""Twin and seed lookups over a spatial dataset (no Qt): the sample beside a sample under review
and its K seeds, vectorised and built once per dataset."""

from __future__ import annotations

from typing import Any

import numpy as np

from workstation.util.grouping import factorize


def _twin_rows(prompts: Any) -> np.ndarray:
    """Row of each prompt's twin among ``prompts`` (int32; -1 where it has none or the twin is
    not loaded), by an Arrow hash lookup of the twin ids (a repeated id gives its first row)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not len(prompts):
        return np.zeros(0, np.int32)
    try:  # the loader's columns hold str (and "" for no twin): converted in Arrow, no list
        ids = pa.array(np.asarray(prompts.prompt_id, dtype=object), pa.string())
        twins = pa.array(np.asarray(prompts.twin_id, dtype=object), pa.string())
        twins = pc.if_else(pc.equal(twins, ""), pa.scalar(None, pa.string()), twins)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # other values: as their text
        ids = pa.array([str(x) for x in prompts.prompt_id.tolist()], pa.string())
        twins = pa.array([str(x) if x else None for x in prompts.twin_id.tolist()], pa.string())
    found = pc.fill_null(pc.index_in(twins, value_set=ids), -1)
    return np.asarray(found.to_numpy(zero_copy_only=False), np.int32)


class PairIndex:
    """Twin and seed lookups over a dataset (vectorised; built once per dataset and cached)."""

    def __init__(self, ds: Any) -> None:
        s = ds.samples
        self._s = s
        self._prompts = ds.prompts
        # groups keyed by (run code, prompt row): hash-encoded run codes (no sort of 1M
        # strings) and the dataset's cached prompt rows; no Python object per prompt
        run_c, _run_u = factorize(s.run_id, sort=False)
        self.prompt_row = ds.prompt_rows()  # int64, -1 where the prompt is not loaded
        code = self.prompt_row.copy()
        missing = np.flatnonzero(code < 0)  # samples of prompts not loaded: grouped by their ids
        n_missing = 0
        if len(missing):
            miss_c, miss_names = factorize(s.prompt_id[missing], sort=False)
            code[missing] = len(ds.prompts) + miss_c
            n_missing = len(miss_names)
        self.n_prompts = max(len(ds.prompts) + n_missing, 1)  # every code (twins' rows too) below it
        key = run_c.reshape(-1).astype(np.int64) * self.n_prompts + code
        small = len(key) == 0 or int(key.max()) < 2**31
        self.key = key.astype(np.int32) if small else key  # 4 bytes a sample while it fits
        order = np.lexsort((np.asarray(s.seed, np.int64), self.key))
        self.order = order.astype(np.int32) if len(order) < 2**31 else order  # rows: 4 bytes each
        self.sorted_key = self.key[self.order]
        self.twin_row = _twin_rows(ds.prompts)

    @staticmethod
    def of(ds: Any) -> "PairIndex":
        idx = ds.cache.get("ui_pair_index")
        if idx is None:
            idx = PairIndex(ds)
            ds.cache["ui_pair_index"] = idx
        return idx

    def _rows(self, key: int) -> np.ndarray:
        # the needle in the keys' own type: a Python int makes numpy cast the whole sorted
        # column to int64 first (a 1M-row copy, ≈0.3-1 ms, for each of the pair's lookups)
        k = self.sorted_key.dtype.type(key) if key <= np.iinfo(self.sorted_key.dtype).max else key
        lo = int(np.searchsorted(self.sorted_key, k, "left"))
        hi = int(np.searchsorted(self.sorted_key, k, "right"))
        return self.order[lo:hi]

    def twin(self, row: int) -> int:
        """Row of the counterfactual twin (same run, same seed), or -1."""
        s = self._s
        p = int(self.prompt_row[row])
        t = int(self.twin_row[p]) if p >= 0 else -1
        if t < 0:
            return -1
        run_part = int(self.key[row]) // self.n_prompts
        seed = int(s.seed[row])
        for r in self._rows(run_part * self.n_prompts + t).tolist():
            if int(s.seed[r]) == seed:
                return r
        return -1

    def seed_rows(self, row: int) -> list[int]:
        """The samples of the same run and prompt (its K seeds), by seed."""
        return self._rows(int(self.key[row])).tolist() or [row]

    def prompt_text(self, row: int) -> str:
        p = int(self.prompt_row[row])
        return str(self._prompts.text[p]) if p >= 0 else str(self._s.prompt_id[row])
