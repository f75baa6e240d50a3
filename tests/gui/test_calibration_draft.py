"""Unapplied calibration changes survive quitting: closing the window keeps
them as a draft in the project; the next open restores them as the live (still unapplied)
config and says so; applied or reset changes leave no draft."""

from __future__ import annotations

from pathlib import Path

import pytest

from ui.methods.spatial.session import DRAFT_KEY

pytestmark = pytest.mark.gui


def test_unapplied_changes_come_back_after_quitting(qtbot, open_window, png_project: Path) -> None:
    w = open_window(png_project)
    stored = w.spatial.config
    w.spatial.set_config(stored.replace(margin=0.23, t_det=0.4))
    panel = w.method_views["spatial"].calibration_panel(w)
    assert "Quitting keeps them as a draft" in panel.params_box.version_label.text()
    w.close()  # quit without applying
    w2 = open_window(png_project)
    st = w2.spatial
    assert st.config.margin == pytest.approx(0.23) and st.config.t_det == pytest.approx(0.4)
    assert st.draft_restored and st.has_unapplied_config()
    assert "restored the unapplied calibration changes" in w2.statusBar().currentMessage()
    panel2 = w2.method_views["spatial"].calibration_panel(w2)
    assert "Not applied" in panel2.params_box.version_label.text()
    assert "kept from the last session" in panel2.params_box.version_label.text()
    # the verdicts shown are those of the draft
    from workstation.methods.spatial.checker import evaluate

    assert (st.verdicts.verdict == evaluate(st.dataset, st.config).verdict).all()
    # applying it leaves no draft: the next open shows the applied version as is
    cid = st.apply_config("from the draft")
    w2.close()
    w3 = open_window(png_project)
    assert w3.spatial.config_id == cid and not w3.spatial.draft_restored
    assert not w3.spatial.has_unapplied_config()
    assert (w3.spatial.project.get_setting(DRAFT_KEY, "") or "") == ""


def test_the_draft_comes_back_after_a_background_open_once_the_checker_is_done(
        qtbot, open_window, png_project: Path) -> None:
    w = open_window(png_project)
    stored = w.spatial.config
    w.spatial.set_config(stored.replace(margin=0.21))
    w.close()
    w2 = open_window()
    with qtbot.waitSignal(w2.load_finished, timeout=30000):
        w2.open_project_in_background(png_project)
    assert w2.spatial.checking and w2.spatial.config == stored  # the draft waits for the verdicts
    with qtbot.waitSignal(w2.verdicts_checked, timeout=30000):
        pass
    st = w2.spatial
    assert st.draft_restored and st.config.margin == pytest.approx(0.21)
    from workstation.methods.spatial.checker import evaluate

    assert (st.verdicts.verdict == evaluate(st.dataset, st.config).verdict).all()
    assert st.baseline is not None and st.baseline.config == stored
    assert st.has_unapplied_config()
    assert "restored the unapplied calibration changes" in w2.statusBar().currentMessage()


def test_beside_a_live_config_the_applied_verdicts_keep_only_their_summary_columns(
        qtbot, open_window, sbuc_project: Path) -> None:
    """While the live config differs from the applied one, the applied verdicts are kept as the
    three columns the Calibration tab's applied figures read (the whole set is freed), with the
    same values; the figures do not change; back at the applied config the whole set returns."""
    import gc
    import weakref

    import numpy as np

    from ui.methods.spatial.session import AppliedVerdicts
    from workstation.methods.spatial.checker import evaluate

    w = open_window(sbuc_project)
    st = w.spatial
    panel = w.method_views["spatial"].calibration_panel(w)
    w.show_tab("Calibration")
    qtbot.wait(50)
    applied_cfg = st.config
    assert st.baseline is st.verdicts
    whole = weakref.ref(st.baseline)
    columns = {k: getattr(st.baseline, k).copy() for k in ("verdict", "reason", "conf")}
    figures = panel._active_summary().values
    st.set_config(applied_cfg.replace(margin=applied_cfg.margin + 0.05))
    qtbot.wait(50)
    gc.collect()
    assert isinstance(st.baseline, AppliedVerdicts) and st.baseline.config == applied_cfg
    assert whole() is None  # the applied config's whole set is gone
    assert not hasattr(st.baseline, "c_detection") and len(st.baseline) == st.dataset.n
    for k, col in columns.items():
        assert np.array_equal(getattr(st.baseline, k), col, equal_nan=True), k
    assert panel._active_summary().values == figures
    assert (st.verdicts.verdict != columns["verdict"]).any()  # the live set is another one
    st.set_config(applied_cfg)  # back: the whole applied set again, shared with the live one
    assert st.baseline is st.verdicts and not isinstance(st.baseline, AppliedVerdicts)
    assert np.array_equal(st.baseline.conf, evaluate(st.dataset, applied_cfg).conf, equal_nan=True)
