"""MetaLogic's human figures in the window take the task's label selection: the line above
them says which labels, its Labels… button chooses them (kept with the project), a second
annotator's judgements show as disputed under "majority", and the report's human and agreement
tables equal the window's for the same selection."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.gui.test_metalogic_views import TASK, demo_project, demo_template, open_page  # noqa: F401
from workstation.evaluation.selection import LabelSelection, load_selection

from tests.gui.conftest import choose_rule

pytestmark = pytest.mark.gui


def _two_annotators(page: Any) -> list[str]:
    """a1 judges ten pairs, a2 later judges the first four the other way."""
    p = page.session.project
    ids = [str(x) for x in page.session.data.pair_id][:10]
    for k, t in enumerate(ids):
        p.labels.add(TASK, "pair", t, "a1", "MISALIGNED" if k % 3 == 0 else "ALIGNED")
    for k, t in enumerate(ids[:4]):
        p.labels.add(TASK, "pair", t, "a2", "ALIGNED" if k % 3 == 0 else "MISALIGNED")
    page.refresh_human()
    return ids


def _choose(qtbot: Any, page: Any, rule: str) -> None:
    choose_rule(page, page.labels_line, rule)


def test_the_line_chooses_the_labels_of_the_human_figures(qtbot: Any, open_window: Any, demo_project: Path,
                                                           tmp_path: Path) -> None:
    w, page = open_page(open_window, demo_project)
    w.resize(1500, 950)
    assert page.labels_line.isVisible()
    assert page.labels_line.line().startswith("labels: every audit set and free labelling, every annotator, "
                                              "latest label wins — 0 items")
    _two_annotators(page)
    latest = page.human_stats()
    assert latest["judged"] == 10 and latest["disputed"] == 0
    assert latest["misaligned"] == 4 - 2 + 2  # a2's later judgements of pairs 0-3 win: 0 A, 1 M, 2 M, 3 A
    _choose(qtbot, page, "annotator:a1")
    a1 = page.human_stats()
    assert (a1["misaligned"], a1["aligned"]) == (4, 6)  # a1's own: pairs 0, 3, 6, 9 misaligned
    assert page.labels_line.line().startswith("labels: every audit set and free labelling, a1 only")
    _choose(qtbot, page, "majority")
    maj = page.human_stats()
    assert (maj["judged"], maj["disputed"]) == (6, 4)
    assert "4</b> disputed (counted in no rate)" in page.agreement.text()
    assert page.labels_line.line().startswith("labels: every audit set and free labelling, every annotator, "
                                              "majority (ties disputed) — 6 items, 4 disputed")
    assert load_selection(page.session.project, TASK).rule == "majority"  # kept with the project
    assert page.grab().save(str(tmp_path / "metalogic_labels_line.png"))


def test_the_reports_human_figures_equal_the_windows_for_the_same_selection(qtbot: Any, open_window: Any,
                                                                              demo_project: Path,
                                                                              tmp_path: Path) -> None:
    from workstation.methods.metalogic.report import report_section

    w, page = open_page(open_window, demo_project)
    _two_annotators(page)
    page.set_label_selection(LabelSelection(rule="majority"))
    if page.session.dirty:
        page.session.apply("as shown")
    shown_h, shown_a = page.human_stats(), page.agreement_stats()
    sec = report_section(page.session.project, tmp_path / "report")
    h = sec.tables["human"][0]
    for k in ("judged", "aligned", "misaligned", "undecidable", "disputed", "misaligned_rate", "misaligned_rate_lo",
              "misaligned_rate_hi"):
        assert (isinstance(h[k], float) and math.isnan(h[k]) and math.isnan(shown_h[k])) or h[k] == shown_h[k], k
    written = np.array([[r[f"human_{v}"] for v in ("ALIGNED", "MISALIGNED", "UNDECIDABLE")]
                        for r in sec.tables["agreement"]])
    assert np.array_equal(written, shown_a["confusion"]) and written.sum() == 6
    labels = sec.meta["provenance"]["labels"]
    assert labels["line"] == page.labels_line.line().split("  ·  ")[0]
    assert (labels["items"], labels["disputed"], labels["selection"]["rule"]) == (6, 4, "majority")
    assert f"κ {shown_a['kappa']:.3f} [" in sec.html  # the report's agreement line
