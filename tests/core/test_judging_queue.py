"""A judging queue finds a target's index the same way whether it scans the ids (the first few
lookups, as when a place is restored on a large project) or uses the id → index mapping."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from workstation.evaluation import judging
from workstation.methods.spatial.method import LABELS


def _queue(ids, index=None):
    q = judging.JudgingQueue(LABELS, SimpleNamespace(project=None, annotator="a"))
    q.set_targets(ids, index=index)
    return q


@pytest.mark.parametrize("dtype", [object, str])
def test_index_of_answers_alike_before_and_after_the_mapping_is_made(dtype):
    ids = np.array([f"s{i:05d}" for i in range(2000)], dtype=dtype)
    q = _queue(ids)
    asked = ["s01999", "nope", "s00000", "s00731", "s01000", "", "s00002", "s01999"]
    got = [q.index_of(t) for t in asked]
    assert got == [1999, -1, 0, 731, 1000, -1, 2, 1999]


def test_a_few_lookups_do_not_make_the_mapping_of_every_target():
    made: list[int] = []
    ids = np.array([f"s{i}" for i in range(500)], dtype=object)

    def index():
        made.append(1)
        return {t: i for i, t in enumerate(ids.tolist())}

    q = _queue(ids, index=index)
    assert [q.index_of(t) for t in ("s7", "s499", "x")] == [7, 499, -1]
    assert made == []  # a restored place or a followed link: a scan each
    assert [q.index_of(t) for t in ("s3", "s4", "s5", "s6")] == [3, 4, 5, 6]
    assert made == [1]  # many lookups: the mapping, made once
    q.set_targets(ids, index=index)  # new targets: scans again first
    assert q.index_of("s9") == 9 and made == [1]
