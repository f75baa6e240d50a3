"""A judging queue finds a target's index the same way whether it scans the ids (the first few
lookups, as when a place is restored on a large project) or uses the id → index mapping."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from workstation.evaluation import judging
from workstation.evaluation.base import LabelScheme
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


# ---- annotators: their own history, place and re-checks ----------------------------------------

# a task whose targets are not samples: a project without samples takes its labels
PAIRS = LabelScheme(task="test.pair", target="pair", values=("ALIGNED", "MISALIGNED"), keys=("A", "M"))


def _project_queue(tmp_path, rechecks=()):
    from workstation.store import Project

    p = Project.create(tmp_path / "p")
    ctx = SimpleNamespace(project=p, annotator="a1")
    q = judging.JudgingQueue(PAIRS, ctx)
    ids = [f"s{i}" for i in range(8)]
    q.set_targets(ids)
    if rechecks:
        order = list(range(8))
        flags = [False] * 8
        for pos, k in sorted(rechecks):
            order.insert(pos, k)
            flags.insert(pos, True)
        q.set_queue(order, recheck=flags, audit=judging.AuditInfo(1, "set", True))
    return p, ctx, q


def _by(p, who):
    return [(e.target_id, e.value, e.source) for e in p.labels.events(task=PAIRS.task) if e.annotator == who]


def test_another_annotator_neither_undoes_nor_redoes_the_first_ones_labels(tmp_path):
    p, ctx, q = _project_queue(tmp_path)
    try:
        for _ in range(3):
            q.record("ALIGNED")
            q.go(q.pos + 1)
        a1 = _by(p, "a1")
        ctx.annotator = "a2"
        q.follow_annotator()
        assert not q.can_step(True) and q.step(True) is None and q.step(False) is None
        assert _by(p, "a2") == [] and _by(p, "a1") == a1
        q.record("MISALIGNED")
        assert q.step(True) is not None and q.step(False) is not None
        assert [v for _t, v, _s in _by(p, "a2")] == ["MISALIGNED", None, "MISALIGNED"]
        ctx.annotator = "a1"
        q.follow_annotator()
        ch = q.step(True)  # a1's own last label, back to nothing
        assert ch is not None and q.target_id(ch.index) == "s2"
        assert _by(p, "a1")[-1] == ("s2", None, "ui") and len(_by(p, "a2")) == 3
    finally:
        p.close()


def test_each_annotator_has_a_place_and_rechecks_of_their_own_labels(tmp_path):
    # s1 is re-checked at position 5 and s6 at position 9 (after every first pass)
    p, ctx, q = _project_queue(tmp_path, rechecks=[(5, 1), (9, 6)])
    try:
        assert [q.target_id(i) for i in q.queue.tolist()] == \
            ["s0", "s1", "s2", "s3", "s4", "s1", "s5", "s6", "s7", "s6"]
        for pos in range(4):  # a1 labels s0..s3
            q.go(pos)
            q.record("ALIGNED")
        q.go(4)
        ctx.annotator = "a2"
        assert q.follow_annotator() and q.pos == 0  # a2's own first unlabelled, not a1's place
        q.record("MISALIGNED")  # s0 only
        # a2 never labelled s1: its re-check (position 5) is passed over, and asked for it, shows s1's first pass
        assert q.step_pos(4, 1) == 6 and not q.recheck_due(5) and q.recheck_due(9) is False
        assert q.go(5) and q.pos == 1 and not q.is_recheck()
        assert q.next_unlabelled(8) == 1  # wraps round; the re-checks not due are not "unlabelled" items
        ctx.annotator = "a1"
        assert q.follow_annotator() and q.pos == 4
        assert q.recheck_due(5) and not q.recheck_due(9)  # a1 labelled s1, not s6
        assert q.step_pos(4, 1) == 5 and q.step_pos(8, 1) == -1 and q.step_pos(6, -1) == 5
        assert q.places()["a2"][0] == 1 and q.places()["a1"][0] == 4
    finally:
        p.close()
