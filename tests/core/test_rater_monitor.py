"""The rater monitor (`workstation.evaluation.rater_monitor`) on hand-made label logs: every
figure of a rater's row is checked against what a reader works out from the log."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import krippendorff
import numpy as np
import pytest

from workstation.evaluation import rater_agreement as raters
from workstation.evaluation.agreement import cohen_kappa, quadratic_weighted_kappa
from workstation.evaluation.intervals import wilson_interval
from workstation.evaluation.rater_monitor import SESSION_GAP_S, rater_monitor, session_gaps, standing_labels
from workstation.evaluation.selection import LabelSelection
from workstation.types import WorkstationError

T0 = datetime(2026, 3, 2, 9, 0, 0)
PF = ("PASS", "FAIL", "UNDECIDABLE")


class Log:
    """A label log built event by event (the columns of `LabelsRepo.table`)."""

    def __init__(self) -> None:
        self.rows: list[dict[str, object]] = []

    def add(self, annotator: str, target: str, value: str | None, at: float, *, audit_set_id: int | None = None,
            source: str = "ui") -> Log:
        self.rows.append({"event_id": len(self.rows) + 1, "target_id": target, "annotator": annotator, "value": value,
                          "created_at": T0 + timedelta(seconds=at), "audit_set_id": audit_set_id, "source": source})
        return self

    def labels(self, annotator: str, values: list[str], *, start: float = 0.0, every: float = 30.0,
               prefix: str = "t") -> Log:
        for i, v in enumerate(values):
            self.add(annotator, f"{prefix}{i + 1}", v, start + i * every)
        return self

    def table(self) -> dict[str, np.ndarray]:
        cols = ("event_id", "target_id", "annotator", "value", "created_at", "audit_set_id", "source")
        return {c: np.array([r[c] for r in self.rows], dtype=object) for c in cols}


def test_items_sessions_and_median_seconds_per_item() -> None:
    log = Log()
    for i, at in enumerate([0, 20, 40, 60, 760, 790]):  # a pause of 700 s after the fourth label
        log.add("ann", f"t{i + 1}", "PASS", at)
    log.add("ann", "t2", "FAIL", 800)  # a change of mind: one more event, no more items
    row = rater_monitor(log.table(), PF, n_boot=0).row("ann")
    assert (row.items, row.events, row.sessions) == (6, 7, 2)
    assert row.timed == 5  # 20, 20, 20 | 30, 10: the 700 s gap is a pause between two sessions
    assert row.median_seconds == 20.0
    gaps, sessions = session_gaps(np.array([T0, T0 + timedelta(seconds=SESSION_GAP_S + 1)], "datetime64[us]"))
    assert len(gaps) == 0 and sessions == 2
    assert rater_monitor(log.table(), PF, session_gap=1000, n_boot=0).row("ann").timed == 6


def test_a_speeder_is_flagged_against_the_median_of_the_other_raters() -> None:
    log = Log()
    ten = ["PASS"] * 10
    log.labels("a", ten, every=30).labels("b", ten, every=36).labels("fast", ten, every=8)
    log.labels("brisk", ten, every=12).labels("new", ten[:4], every=2)
    mon = rater_monitor(log.table(), PF, n_boot=0)
    # peers of "fast": a 30, b 36, brisk 12 (new has fewer than 5 timed gaps) → median 30; 8 < 30 / 3
    assert mon.row("fast").speeder and mon.row("fast").median_seconds == 8.0
    assert not mon.row("brisk").speeder  # 12 ≥ 30 / 3
    assert not mon.row("a").speeder and not mon.row("b").speeder
    assert not mon.row("new").speeder  # 2 s, but only 3 timed gaps: too few to judge
    assert mon.group_median_seconds == 12.0  # the raters' medians 30, 36, 8, 12, 2
    only = rater_monitor(Log().labels("solo", ten, every=1).table(), PF, n_boot=0)
    assert not only.row("solo").speeder  # no peers to be fast against


def test_agreement_with_peers_counts_every_pair_and_alpha_without_the_rater() -> None:
    log = Log()
    log.labels("a", ["PASS", "PASS", "FAIL", "PASS"]).labels("b", ["PASS", "PASS", "FAIL", "FAIL"])
    log.labels("c", ["PASS", "FAIL", "FAIL", "PASS"])
    mon = rater_monitor(log.table(), PF, n_boot=200)
    a = mon.row("a")
    assert a.peer_pairs == 8 and a.peer_percent.value == pytest.approx(6 / 8)  # 3/4 with b, 3/4 with c
    x = np.array([0, 0, 1, 0] * 2)
    y = np.array([0, 0, 1, 1, 0, 1, 1, 0])
    assert a.peer_kappa.value == pytest.approx(cohen_kappa(x, y))
    b_c = np.array([[0, 0, 1, 1], [0, 1, 1, 0]], float)
    assert a.alpha_without == pytest.approx(krippendorff.alpha(reliability_data=b_c, level_of_measurement="nominal"))
    everyone = np.array([[0, 0, 1, 0], [0, 0, 1, 1], [0, 1, 1, 0]], float)
    assert mon.alpha_all == pytest.approx(krippendorff.alpha(reliability_data=everyone, level_of_measurement="nominal"))
    assert mon.items == 4 and mon.rated_twice == 4
    # the task's agreement among all raters is the many-rater module's over the same matrix
    assert mon.agreement["fleiss_kappa"].value == pytest.approx(raters.fleiss_kappa(everyone.T, [0, 1, 2]))
    assert mon.agreement["ac1"].value == pytest.approx(raters.gwet_ac1(everyone.T, [0, 1, 2]))
    assert set(mon.agreement) == set(raters.statistics_for(False))


def test_ordinal_scales_use_the_weighted_kappa_and_ordinal_alpha() -> None:
    log = Log()
    log.labels("a", ["1", "2", "3", "4", "4"]).labels("b", ["1", "3", "3", "4", "2"])
    mon = rater_monitor(log.table(), ("1", "2", "3", "4"), ordinal=True, n_boot=0)
    a = mon.row("a")
    assert a.peer_kappa.value == pytest.approx(quadratic_weighted_kappa([1, 2, 3, 4, 4], [1, 3, 3, 4, 2], 4))
    assert mon.alpha_all == pytest.approx(krippendorff.alpha(
        reliability_data=[[1, 2, 3, 4, 4], [1, 3, 3, 4, 2]], level_of_measurement="ordinal", value_domain=[1, 2, 3, 4]))
    assert "ac2_quadratic" in mon.agreement and "alpha_interval" in mon.agreement


def test_an_undone_label_and_a_value_outside_the_task_do_not_stand() -> None:
    log = Log().labels("a", ["PASS", "FAIL", "PASS"])
    log.add("a", "t2", None, 200)  # undo
    log.add("a", "t9", "MAYBE", 210)
    st = standing_labels(log.table(), PF)
    assert sorted(st.target.tolist()) == ["t1", "t3"]
    assert rater_monitor(log.table(), PF, n_boot=0).row("a").items == 2


def test_agreement_with_the_judge_and_gold_accuracy_with_its_wilson_interval() -> None:
    log = Log().labels("a", ["PASS", "PASS", "FAIL", "PASS", "FAIL"])
    judge = {"t1": "PASS", "t2": "FAIL", "t3": "FAIL", "t4": None}  # no outcome for t4 and t5
    gold = {"t1": "PASS", "t3": "PASS", "t5": "FAIL", "t4": None}
    row = rater_monitor(log.table(), PF, judge=judge, gold=gold, n_boot=200).row("a")
    assert row.judge_percent.value == pytest.approx(2 / 3) and row.judge_percent.n == 3
    assert row.gold.value == pytest.approx(2 / 3) and row.gold.n == 3
    assert (row.gold.lo, row.gold.hi) == pytest.approx(wilson_interval(2, 3))
    without = rater_monitor(log.table(), PF, n_boot=0).row("a")
    assert math.isnan(without.gold.value) and math.isnan(without.judge_percent.value)  # no gold given: no figure


def test_drift_compares_the_first_third_of_a_raters_labels_with_the_last() -> None:
    truth = ["PASS", "FAIL", "PASS", "FAIL", "PASS", "FAIL", "PASS", "FAIL", "PASS"]
    flip = {"PASS": "FAIL", "FAIL": "PASS"}
    tired = truth[:6] + [flip[v] for v in truth[6:]]  # right at first, wrong in the last third
    log = Log().labels("peer", truth, every=40).labels("tired", tired, every=30)
    gold = {f"t{i + 1}": v for i, v in enumerate(truth)}
    mon = rater_monitor(log.table(), PF, gold=gold, n_boot=0)
    row = mon.row("tired")
    assert (row.drift_peer_first.value, row.drift_peer_last.value) == (1.0, 0.0)
    assert (row.drift_peer_first.n, row.drift_peer_last.n) == (3, 3)
    assert row.drift_peer == -1.0
    assert (row.drift_gold_first.value, row.drift_gold_last.value, row.drift_gold) == (1.0, 0.0, -1.0)
    # the order is the time of the labels, not the targets' names
    log2 = Log()
    for i, v in enumerate(truth):
        log2.add("peer", f"t{i + 1}", v, i)
    for i, v in enumerate(tired):
        log2.add("tired", f"t{i + 1}", v, 1000 - 30 * i)  # labelled from the last target backwards
    back = rater_monitor(log2.table(), PF, gold=gold, n_boot=0).row("tired")
    assert (back.drift_gold_first.value, back.drift_gold_last.value) == (0.0, 1.0)
    assert math.isnan(rater_monitor(Log().labels("x", ["PASS"] * 2).table(), PF, n_boot=0).row("x").drift_peer)


def test_the_label_selection_decides_which_events_count() -> None:
    log = Log().labels("a", ["PASS", "FAIL", "PASS"]).labels("b", ["PASS", "FAIL", "FAIL"])
    log.add("b", "t3", "PASS", 500, source="recheck")
    log.add("c", "t1", "FAIL", 600, audit_set_id=7)
    everything = rater_monitor(log.table(), PF, n_boot=0)
    # with b: t1, t2 and t3 (b's re-check, PASS, stands) agree; with c: t1 does not
    assert everything.row("a").peer_percent.value == pytest.approx(3 / 4)
    assert everything.row("b").events == 4
    first = rater_monitor(log.table(), PF, selection=LabelSelection(rechecks=False), n_boot=0)
    assert first.row("b").events == 3 and first.row("a").peer_percent.value == pytest.approx(2 / 4)
    in_set = rater_monitor(log.table(), PF, selection=LabelSelection(sets=(7,), free=False), n_boot=0)
    assert [r.annotator for r in in_set.rows] == ["c"]
    # a consensus rule plays no part in the monitor ("annotator:a" decides a target's label, not whose are shown)
    named = rater_monitor(log.table(), PF, selection=LabelSelection(rule="annotator:a"), n_boot=0)
    assert [r.annotator for r in named.rows] == ["a", "b", "c"]
    only = rater_monitor(log.table(), PF, selection=LabelSelection(annotators=("a", "c")), n_boot=0)
    assert [r.annotator for r in only.rows] == ["a", "c"]


def test_intervals_are_clustered_by_the_prompt_of_a_target() -> None:
    log = Log()
    vals = ["PASS", "FAIL"] * 10
    log.labels("a", vals).labels("b", vals[:10] + ["PASS"] * 10)
    prompt = {f"t{i + 1}": f"p{i // 4}" for i in range(20)}
    row = rater_monitor(log.table(), PF, unit_of=prompt, n_boot=300).row("a")
    assert row.peer_percent.units == 5 and row.peer_percent.n == 20
    assert row.peer_kappa.units == 5
    assert rater_monitor(log.table(), PF, unit_of=lambda t: prompt[t], n_boot=300).row("a").peer_percent == \
        row.peer_percent


def test_times_given_as_text_and_missing_times() -> None:
    log = Log().labels("a", ["PASS"] * 6, every=10)
    t = log.table()
    t["created_at"] = np.array([str(x) for x in t["created_at"]][:5] + [None], dtype=object)
    row = rater_monitor(t, PF, n_boot=0).row("a")
    assert row.median_seconds == 10.0 and row.timed == 4 and row.items == 6
    t["created_at"][0] = "not a time"
    with pytest.raises(WorkstationError, match="event 1: created_at"):
        rater_monitor(t, PF, n_boot=0)


def test_an_empty_log_gives_an_empty_monitor() -> None:
    mon = rater_monitor(Log().table(), PF, n_boot=0)
    assert mon.rows == () and mon.items == 0 and math.isnan(mon.alpha_all)
    assert all(math.isnan(e.value) for e in mon.agreement.values())
    assert mon.to_dict()["raters"] == []
