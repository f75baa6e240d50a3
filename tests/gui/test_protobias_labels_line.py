"""ProtoBias's human tables in the window take the task's label selection: the line above them
says which ratings (the mean per image by default), its Labels… button chooses them (kept with
the project), a second annotator's ratings move the mean but not one annotator's table, the
agreement between annotators says its own labels, and the report's human tables equal the
window's for the same selection."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from tests.gui.test_protobias_views import TASK, demo_project, hand_project, open_page  # noqa: F401
from workstation.evaluation.selection import LabelSelection, load_selection

from tests.gui.conftest import choose_rule

pytestmark = pytest.mark.gui


def _choose(qtbot: Any, m: Any, rule: str) -> None:
    choose_rule(m, m.labels_line, rule)
    qtbot.waitUntil(lambda: m.ready, timeout=20000)


def _human_all(m: Any) -> dict[str, Any]:
    return next(r for r in m.tables["human"] if r["domain"] == "all")


def test_the_line_chooses_the_ratings_of_the_human_tables(qtbot: Any, open_window: Any, hand_project: Path) -> None:
    w, pb = open_page(open_window, hand_project, "metrics")
    m = pb.metrics
    qtbot.waitUntil(lambda: m.ready, timeout=20000)
    assert m.labels_line.line() == ("labels: every audit set and free labelling, every annotator, first passes, "
                                    "mean rating — 6 items  ·  free labelling: no random draw, no sampling guarantee")
    pa_mean = _human_all(m)["pa"]
    p = w.spatial.project
    p.labels.add(TASK, "image", "s1a", "carol", "4")  # carol's later rating of one prototype
    m.mark_stale()
    qtbot.waitUntil(lambda: m.ready, timeout=20000)
    assert _human_all(m)["pa"] > pa_mean  # the mean moves
    _choose(qtbot, m, "annotator:alice")
    alice = _human_all(m)["pa"]
    assert alice == pytest.approx((1 + 2 + 1) / 9)  # alice's own prototypes' ratings 2, 3, 2
    assert m.labels_line.line().startswith("labels: every audit set and free labelling, alice only, first passes")
    assert load_selection(p, TASK).rule == "annotator:alice"  # kept with the project
    # the agreement between annotators keeps every annotator: the rule is a consensus
    assert "labels: every audit set and free labelling, every annotator, first passes — 5 items" in m.kappa.text()
    assert "alice × bob" in m.kappa.text() and "alice × carol" in m.kappa.text()
    p.labels.add(TASK, "image", "s2a", "carol", "1")
    m.mark_stale()
    qtbot.waitUntil(lambda: m.ready, timeout=20000)
    assert _human_all(m)["pa"] == pytest.approx(alice)  # carol's ratings do not move alice's table


def test_the_reports_human_tables_equal_the_windows_for_the_same_selection(qtbot: Any, open_window: Any,
                                                                           hand_project: Path,
                                                                           tmp_path: Path) -> None:
    from workstation.methods.protobias.report import report_section

    w, pb = open_page(open_window, hand_project, "metrics")
    m = pb.metrics
    qtbot.waitUntil(lambda: m.ready, timeout=20000)
    m.set_label_selection(LabelSelection(annotators=("alice", "bob"), rule="latest", rechecks=False))
    qtbot.waitUntil(lambda: m.ready, timeout=20000)
    sec = report_section(w.spatial.project, tmp_path / "report")

    def same(a: Any, b: Any) -> bool:
        return (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)) or a == b

    for name in ("sc_pa", "human_agreement", "annotator_kappa"):  # sc_pa holds the human rows
        shown, written = m.tables[name], sec.tables[name]
        assert len(shown) == len(written), name
        for r1, r2 in zip(shown, written):
            assert all(same(r1[k], r2[k]) for k in r1), (name, r1, r2)
    assert sec.tables["summary"][0]["labels"] == m.labels_line.line().split("  ·  ")[0]
    labels = sec.meta["provenance"]["labels"]
    assert labels["selection"]["rule"] == "latest" and labels["annotators"] == ["alice", "bob"]
    human = next(r for r in m.tables["sc_pa"] if r["metric"] == "human" and r["domain"] == "all")
    assert human["n"] == 3 and human["pa"] == pytest.approx((1 + 2 + 1) / 9)  # the latest of s1a, s2a, s3a
    assert labels["line"] == sec.tables["summary"][0]["labels"]


def test_screenshot_of_the_human_tables_with_the_line(qtbot: Any, open_window: Any, demo_project: Path,
                                                      tmp_path: Path) -> None:
    w, pb = open_page(open_window, demo_project, "metrics")
    w.resize(1400, 900)
    m = pb.metrics
    qtbot.waitUntil(lambda: m.ready, timeout=30000)
    assert m.labels_line.isVisible() and m.labels_line.line().startswith("labels: ")
    assert pb.grab().save(str(tmp_path / "protobias_labels_line.png"))
