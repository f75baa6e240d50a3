"""Blind mode hides every trace of the checker's outcome in the pair viewer:
no "not found" note, no A/B roles or scores in the tags, no verdict colours, no reason or
confidence on the card; the same sample outside blind mode shows them all."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from .conftest import blind_queue

pytestmark = pytest.mark.gui


def _tags(view) -> list[str]:
    return [t.text for t in view.overlay.tags]


def test_blind_queue_hides_missing_note_roles_and_scores(qtbot, open_window, png_project: Path) -> None:
    w = open_window(png_project)
    st = w.spatial
    row = st.dataset.sample_index()["s_p0_seed0"]
    # t_det above the dog's 0.85: the checker reports the dog missing
    st.set_config(st.config.replace(t_det=0.88))
    assert st.verdicts.reason_text(row) == "missing: dog"
    w.method_views["spatial"].review_from_browse(w, row)
    view = w.viewer.left.view
    assert "not found: dog" in _tags(view)  # seen, unblinded
    assert "A: cat 0.90" in _tags(view)
    # the same sample in a blind queue
    blind_queue(st, [row])
    assert st.current == row
    tags = _tags(view)
    assert not any("not found" in t for t in tags), tags
    assert not any(t.startswith(("A:", "B:")) for t in tags), tags
    assert not any(re.search(r"\d\.\d\d", t) for t in tags), tags  # no scores
    assert tags == ["cat"]  # the prompt's object found by the detector, by name only
    kinds = view.overlay.visible_kinds()
    assert not ({"A", "B", "secondary_A", "secondary_B", "margin_band", "centre"} & kinds), kinds
    for items in view.overlay.items_by_kind.values():
        for it in items:
            assert not re.search(r"\d\.\d\d", it.toolTip()), it.toolTip()
    card = w.viewer.left.card
    assert card.chip.text() == "BLIND"
    assert "missing" not in card.reason.text() and "d =" not in card.reason.text()
    assert not card.bar.isVisible()
    assert w.counts_label.text() == ""
    # the twin side too
    assert not any("not found" in t for t in _tags(w.viewer.right.view))
    # leaving the blind queue brings the checker back
    st.controller.leave_audit()
    st.set_current(row)
    assert "not found: dog" in _tags(view)
