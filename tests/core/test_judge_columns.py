"""Browse's judge columns (`workstation.methods.spatial.judges.judge_columns`) are the judges'
outputs over the loaded samples, in the dataset's row order; the twin lookup behind the twin
consistency finds each sample's twin of the same run and seed (the first where several share
them, none where the twin prompt has no image of that seed); a judge that judged nothing has no
column; and the filter "judges disagree" keeps the samples both judges decided differently."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from workstation.evaluation.judges import JudgeRun
from workstation.methods import get_method
from workstation.methods.spatial.browse import LIVE_JUDGE, FilterSpec, LiveColumns, dynamic_mask
from workstation.methods.spatial.judges import (
    _twin_rows_dict,
    judge_columns,
    outcome_codes,
    spatial_judges,
    twin_rows,
)
from workstation.methods.spatial.types import VERDICTS
from workstation.store import Project


def boxes_in_one_pass(ds, threshold: float):
    """The reference: GenEval's most confident boxes in one pass over every detection's label as
    text (what `most_confident_boxes` computed before it read the detections a chunk at a time)."""
    from workstation.methods.spatial.data import spatial_columns
    from workstation.types import PRIMARY

    sc = spatial_columns(ds)
    d = ds.detections
    out_a = np.full(ds.n, -1, np.int64)
    out_b = np.full(ds.n, -1, np.int64)
    score = np.asarray(d.score, np.float64)
    rows = np.flatnonzero((np.asarray(d.source) == PRIMARY) & (np.asarray(d.variant) == 0) & (score > threshold))
    sidx = np.asarray(d.sample_idx, np.int64)[rows]
    lab = np.asarray(d.labels_at(rows), dtype=object)
    for want, out in ((sc.label_a, out_a), (sc.label_b, out_b)):
        hit = lab == np.asarray(want, dtype=object)[sidx]
        r, s = rows[hit], sidx[hit]
        if not len(r):
            continue
        order = np.lexsort((r, -score[r], s))
        s_sorted = s[order]
        first = np.flatnonzero(np.r_[True, s_sorted[1:] != s_sorted[:-1]])
        out[s_sorted[first]] = r[order][first]
    return out_a, out_b


def test_the_columns_are_the_judges_outputs_in_row_order(tmp_path: Path) -> None:
    with Project.create(tmp_path / "p") as p:
        get_method("spatial").build_demo(p, small=True, workers=0)
        ds = p.samples.load_dataset(method="spatial")
        order = np.random.default_rng(3).permutation(ds.n)
        shuffled = ds.subset(order)  # another row order: the columns follow the dataset's rows
        cols = judge_columns(p, shuffled)
        assert cols is not None
        run = JudgeRun(p, spatial_judges(p))
        at = {str(s): i for i, s in enumerate(run.targets.ids.tolist())}
        k = np.array([at[str(s)] for s in shuffled.samples.sample_id.tolist()])
        assert [c.name for c in cols] == [j.name for j in spatial_judges(p).judges]
        for c in cols:
            o = run.output(c.name)
            want = np.array([VERDICTS.index(v) if v is not None else -1 for v in o.outcome[k].tolist()])
            assert np.array_equal(c.code, want), c.name
            assert np.allclose(c.score, o.score[k].astype(np.float32), equal_nan=True), c.name
        assert judge_columns(p, shuffled, stop=lambda: True) is None


def test_the_twin_lookup_matches_the_plain_one_with_duplicates_and_missing_twins(tmp_path: Path) -> None:
    with Project.create(tmp_path / "p") as p:
        get_method("spatial").build_demo(p, small=True, workers=0)
        ds = p.samples.load_dataset(method="spatial")
    # drop some samples (their twins lose their partner) and repeat others (the same run, prompt, seed)
    keep = np.r_[np.arange(0, ds.n, 3), np.arange(1, ds.n, 3)[:10], [5, 5, 7]]
    sub = ds.subset(np.asarray(keep, np.int64))
    got, plain = twin_rows(sub), _twin_rows_dict(sub)
    assert np.array_equal(got, plain)
    assert (got == -1).any() and (got >= 0).any()
    s = sub.samples
    for r in np.flatnonzero(got >= 0).tolist():
        t = int(got[r])
        assert (s.run_id[t], int(s.seed[t])) == (s.run_id[r], int(s.seed[r]))


def test_a_judge_that_judged_nothing_has_no_column(tmp_path: Path) -> None:
    with Project.create(tmp_path / "p") as p:
        get_method("spatial").build_demo(p, small=True, workers=0)
        ds = p.samples.load_dataset(method="spatial")
        bare = ds.subset(np.arange(ds.n))
        bare.detections = bare.detections.take(np.zeros(0, np.int64))  # the detector has not run
        names = [c.name for c in judge_columns(p, bare) or []]
        assert "spatial.geneval" not in names and "spatial.twin" not in names
        assert any(n.startswith("spatial.checker:") for n in names)  # the stored verdicts still judge


def test_the_filter_keeps_what_two_judges_decide_differently() -> None:
    n = 8
    live = LiveColumns(relation=np.zeros(n, np.int64), seed=np.zeros(n, np.int64),
                       verdict=np.array([0, 1, 2, 0, 1, -1, 0, 1], np.int8), reason=np.zeros(n, np.int8),
                       conf=np.zeros(n), human=np.full(n, -1, np.int8), nv=np.zeros(n, np.int32))

    class Col:
        name, short = "spatial.geneval", "GenEval"
        code = outcome_codes(np.array(["FAIL", "FAIL", "PASS", "PASS", None, "PASS", "UNDECIDABLE", "PASS"],
                                      dtype=object))

    live.judges = (Col,)
    m = dynamic_mask(FilterSpec(judges_disagree=[LIVE_JUDGE, "spatial.geneval"]), live, None)
    assert m.tolist() == [True, False, False, False, False, False, False, True]
    # an unknown judge (not computed yet, or not in the project) keeps nothing
    assert not dynamic_mask(FilterSpec(judges_disagree=[LIVE_JUDGE, "spatial.nothing"]), live, None).any()
    # a blind audit's filter drops the condition
    assert FilterSpec(judges_disagree=[LIVE_JUDGE, "spatial.geneval"]).allowed(outcome=False).judges_disagree == []


def test_the_boxes_found_a_chunk_at_a_time_are_those_of_one_pass(tmp_path: Path, monkeypatch) -> None:
    """GenEval's most confident boxes, read a chunk of detection rows at a time (a sample's rows
    split across chunks, equal scores, labels given coded or as text), are those one pass finds."""
    from workstation.methods.spatial import judges as J

    with Project.create(tmp_path / "p") as p:
        get_method("spatial").build_demo(p, small=True, workers=0)
        ds = p.samples.load_dataset(method="spatial")
    d = ds.detections
    d.score[::7] = d.score[0]  # ties inside samples: the earlier row wins
    for chunk in (5, 37, 1 << 21):
        monkeypatch.setattr(J, "BOX_CHUNK", chunk)
        ds.cache.clear()
        got = J._most_confident_boxes(ds, 0.3)
        want = boxes_in_one_pass(ds, 0.3)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), chunk
        assert (got[0] >= 0).any() and (got[0] < 0).any()
