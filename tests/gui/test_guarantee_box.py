"""The calibration panel's guaranteed choice beside J's (`ui/methods/spatial/calibration/guarantee_box.py`):
the box runs Learn then Test over the same grid and audited samples, shows both choices as the
core computes them, says when none qualifies, and loads a choice into the sliders."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt

from workstation.methods.spatial.guarantee import compare

pytestmark = pytest.mark.gui


@pytest.fixture
def panel(qtbot: Any, labelled_state: Any) -> Any:
    from ui.methods.spatial.calibration.panel import CalibrationPanel

    w = CalibrationPanel(labelled_state)
    qtbot.addWidget(w)
    w.resize(1400, 1000)
    w.show()
    qtbot.waitExposed(w)
    yield w
    box = w.guarantee_box
    if box.worker is not None:
        box.cancel()
        qtbot.waitUntil(lambda: box.worker is None, timeout=20000)


def _cell(box: Any, label: str, col: int) -> str:
    t = box.table
    r = [t.verticalHeaderItem(i).text() for i in range(t.rowCount())].index(label)
    return t.item(r, col).text()


def _run(qtbot: Any, box: Any) -> Any:
    with qtbot.waitSignal(box.finished, timeout=60000):
        qtbot.mouseClick(box.run_button, Qt.MouseButton.LeftButton)
    return box.result


def test_the_box_shows_js_choice_and_the_guaranteed_one_as_the_core_does(qtbot: Any, panel: Any,
                                                                          labelled_state: Any) -> None:
    box = panel.guarantee_box
    assert box.isVisible() and not box.load_g.isEnabled()
    box.alpha_spin.setValue(0.2)
    box.delta_spin.setValue(0.1)
    shown = _run(qtbot, box)
    st = labelled_state
    core = compare(st.dataset, st.config, st.human, alpha=0.2, delta=0.1)
    assert shown.j_index == core.j_index and shown.ltt.chosen == core.ltt.chosen
    j = core.j_choice
    assert _cell(box, "margin", 0) == f"{j['margin']:g}" and _cell(box, "τ", 0) == f"{j['tau']:g}"
    assert _cell(box, "J", 0) == f"{j['j']:.4f}"
    assert box.table.horizontalHeaderItem(1).text() == "guaranteed\nrisk ≤ 0.2 at 90 %"
    g = core.guaranteed
    assert g is not None  # 200 labels, 15 % of them changed at random: a risk of 0.2 is certifiable
    assert _cell(box, "n covered, decided", 1) == f"{g['n']}, {g['k']} wrong"
    assert "risk ≤ 0.2 with probability ≥ 0.9" in box.message.text()
    with qtbot.waitSignal(box.chosen, timeout=2000) as sig:
        qtbot.mouseClick(box.load_g, Qt.MouseButton.LeftButton)
    assert sig.args[0] == {p: float(g[p]) for p in core.params}
    qtbot.waitUntil(lambda: abs(panel.params_box.sliders["tau"].value() - g["tau"]) < 1e-6, timeout=5000)
    assert abs(st.config.margin - g["margin"]) < 1e-9
    # the fixture's labels were imported, not drawn: the box says the guarantee does not hold for them
    assert "the guarantee does not hold for these labels: they were given in free labelling" in box.message.text()


def test_a_risk_level_too_strict_for_these_labels_says_none_qualifies(qtbot: Any, panel: Any) -> None:
    box = panel.guarantee_box
    box.alpha_spin.setValue(0.001)
    box.delta_spin.setValue(0.05)
    res = _run(qtbot, box)
    assert res.guaranteed is None
    assert "none qualifies with these labels" in box.message.text()
    assert _cell(box, "margin", 1) == "—" and not box.load_g.isEnabled() and box.load_j.isEnabled()


def test_the_box_calls_p_a_p_value_and_explains_j(qtbot: Any, panel: Any) -> None:
    """The guaranteed choice's "p (risk > α)" is a p-value and says so; J, the objective whose lowest
    value is J's choice, is explained where it is shown."""
    box = panel.guarantee_box
    rows = {box.table.verticalHeaderItem(r).text(): box.table.verticalHeaderItem(r)
            for r in range(box.table.rowCount())}
    assert "p-value" in rows and not any(t.startswith("p (") for t in rows)
    assert "null hypothesis" in rows["p-value"].toolTip() and "α" in rows["p-value"].toolTip()
    formula = "J = w_fpr·FPR_PASS + w_risk·risk + w_cov·(1 − coverage)"
    assert formula in rows["J"].toolTip()
    assert box.j_note.isVisible() and formula in box.j_note.text() and "lower is better" in box.j_note.text()
