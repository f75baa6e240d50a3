"""The sample table's lazy order: any page equals the same slice of the full stable sort
(ties by row, NaN last), whether the page is found by a partition or by sorting everything."""

from __future__ import annotations

import numpy as np
import pytest

from workstation.methods.spatial.browse import RowOrder


@pytest.mark.parametrize("seed", range(6))
def test_every_page_is_the_slice_of_the_full_order(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 3000))
    idx = np.sort(rng.choice(10 * n, n, replace=False))
    kind = seed % 3
    if kind == 0:  # many ties (an integer column)
        key = rng.integers(0, 4, n).astype(np.int64)
    elif kind == 1:  # confidences with zeros repeated and NaN
        key = np.where(rng.random(n) < 0.3, 0.0, rng.random(n))
        key[rng.random(n) < 0.1] = np.nan
    else:
        key = -rng.random(n)
    want = idx[np.argsort(key, kind="stable")]
    for offset, limit in [(0, 1), (0, 10), (3, 7), (0, n // 9), (n // 20, 5), (n - 5, 10), (0, n + 5)]:
        got = RowOrder(idx, key.copy()).page(offset, limit)
        assert got.tolist() == want[offset:offset + limit].tolist(), (offset, limit)
    o = RowOrder(idx, key.copy())
    assert len(o) == n and o.all().tolist() == want.tolist()
    assert RowOrder(idx, None).page(2, 3).tolist() == idx[2:5].tolist()
