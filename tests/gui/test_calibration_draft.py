"""Unapplied calibration changes survive quitting (issue 11, item 9): closing the window keeps
them as a draft in the project; the next open restores them as the live (still unapplied)
config and says so; applied or reset changes leave no draft."""

from __future__ import annotations

from pathlib import Path

import pytest

from ui.state import DRAFT_KEY

pytestmark = pytest.mark.gui


def test_unapplied_changes_come_back_after_quitting(qtbot, open_window, png_project: Path) -> None:
    w = open_window(png_project)
    stored = w.state.config
    w.state.set_config(stored.replace(margin=0.23, t_det=0.4))
    panel = w.calibration_panel()
    assert "Quitting keeps them as a draft" in panel.version_label.text()
    w.close()  # quit without applying
    w2 = open_window(png_project)
    st = w2.state
    assert st.config.margin == pytest.approx(0.23) and st.config.t_det == pytest.approx(0.4)
    assert st.draft_restored and st.has_unapplied_config()
    assert "restored the unapplied calibration changes" in w2.statusBar().currentMessage()
    panel2 = w2.calibration_panel()
    assert "Not applied" in panel2.version_label.text()
    assert "kept from the last session" in panel2.version_label.text()
    # the verdicts shown are those of the draft
    from workstation.methods.spatial.checker import evaluate

    assert (st.verdicts.verdict == evaluate(st.dataset, st.config).verdict).all()
    # applying it leaves no draft: the next open shows the applied version as is
    cid = st.apply_config("from the draft")
    w2.close()
    w3 = open_window(png_project)
    assert w3.state.config_id == cid and not w3.state.draft_restored
    assert not w3.state.has_unapplied_config()
    assert (w3.state.project.get_setting(DRAFT_KEY, "") or "") == ""


def test_the_draft_comes_back_after_a_background_open_once_the_checker_is_done(
        qtbot, open_window, png_project: Path) -> None:
    w = open_window(png_project)
    stored = w.state.config
    w.state.set_config(stored.replace(margin=0.21))
    w.close()
    w2 = open_window()
    with qtbot.waitSignal(w2.load_finished, timeout=30000):
        w2.open_project_in_background(png_project)
    assert w2.state.checking and w2.state.config == stored  # the draft waits for the verdicts
    with qtbot.waitSignal(w2.verdicts_checked, timeout=30000):
        pass
    st = w2.state
    assert st.draft_restored and st.config.margin == pytest.approx(0.21)
    from workstation.methods.spatial.checker import evaluate

    assert (st.verdicts.verdict == evaluate(st.dataset, st.config).verdict).all()
    assert st.baseline is not None and st.baseline.config == stored
    assert st.has_unapplied_config()
    assert "restored the unapplied calibration changes" in w2.statusBar().currentMessage()
