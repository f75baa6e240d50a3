"""Audit sets: a seeded stratified sample becomes a blind queue, with consistency re-checks and
self-agreement."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication, QCheckBox, QDoubleSpinBox, QPushButton, QSpinBox

from workstation.evaluation.audit_sets import draw_audit_set as core_draw
from workstation.evaluation.audit_sets import recheck_plan
from workstation.evaluation.audit_sets import self_agreement_report as core_self_agreement
from workstation.methods.spatial.audit import stratum_codes

from .conftest import on_next_modal

pytestmark = pytest.mark.gui


def draw_audit_set(w, **kw):
    """An audit set of the window's spatial samples, drawn as Audit → New audit set… draws it."""
    views = w.method_views["spatial"]
    return core_draw(w.spatial.project, w.spatial.controller.scheme, views.audit_population(w), **kw)


def self_agreement_report(st, audit_set_id):
    return core_self_agreement(st.project, st.controller.scheme, audit_set_id)


def _blind(st) -> bool:
    return not st.queue_visibility().outcome


def _key(qtbot, w, key, modifier=Qt.NoModifier) -> None:
    if not w.isActiveWindow():  # after a dialog closed (offscreen does not give the focus back)
        w.activateWindow()
        qtbot.waitUntil(lambda: w.isActiveWindow(), timeout=2000)
    target = QApplication.focusWidget()
    qtbot.keyClick(target if target is not None and target.isVisible() else w, key, modifier)


def _type_into(qtbot, box, value: str) -> None:
    box.setFocus()
    box.selectAll()
    qtbot.keyClicks(box, value)


def _create_with_dialog(qtbot, w, size: int, seed: int, recheck: str = "0.10", blind: bool = True) -> list:
    def fill(dlg) -> None:
        _type_into(qtbot, dlg.findChild(QSpinBox, "auditSize").lineEdit(), str(size))
        _type_into(qtbot, dlg.findChild(QSpinBox, "auditSeed").lineEdit(), str(seed))
        _type_into(qtbot, dlg.findChild(QDoubleSpinBox, "auditRecheck").lineEdit(), recheck)
        cb = dlg.findChild(QCheckBox, "auditBlind")
        if cb.isChecked() != blind:
            qtbot.mouseClick(cb, Qt.LeftButton, pos=QPoint(6, cb.height() // 2))
        qtbot.mouseClick(dlg.findChild(QPushButton, "auditCreate"), Qt.LeftButton)

    return on_next_modal(qtbot, fill)


def test_new_audit_set_becomes_a_blind_queue(qtbot, open_window, sbuc_images_project: Path) -> None:
    w = open_window(sbuc_images_project)
    seen = _create_with_dialog(qtbot, w, 40, 3)
    _key(qtbot, w, Qt.Key_A, Qt.ControlModifier | Qt.ShiftModifier)
    assert seen, "Ctrl+Shift+A opened no dialog"
    st = w.spatial
    sets = st.project.audit.sets()
    assert len(sets) == 1 and sets[0]["blind"] and sets[0]["size"] == 44  # 40 + 4 re-checks
    assert sets[0]["params"]["seed"] == 3 and sets[0]["params"]["strata"] == ["run", "relation", "verdict"]
    assert len(st.queue) == 44 and _blind(st) and st.audit_set_id == sets[0]["audit_set_id"]
    assert w.tabs.currentWidget() is w.review
    # blind: no checker verdict, confidence or colours anywhere
    for side in (w.viewer.left, w.viewer.right):
        assert side.card.chip.text() in ("BLIND", "—")
        assert not side.card.bar.isVisible()
    assert w.labeling.blind_banner.isVisible()
    assert all(w.browser.table.isColumnHidden(c) for c in (5, 6, 7, 9))
    # nor the labels and notes of other annotators (or one's own earlier ones) in Browse
    assert w.browser.table.isColumnHidden(8) and w.browser.table.isColumnHidden(10)
    m = w.browser.model
    assert {m.data(m.index(i, c)) for i in range(5) for c in (8, 10)} == {"·"}
    assert w.counts_label.text() == ""
    assert all(it == -1 for it in (w.browser.model.data(w.browser.model.index(i, 0), Qt.UserRole + 2)
                                   for i in range(5)))
    assert w.labeling.bar.text() == "0 / 44 labelled"
    # the margin band (the checker's UNDECIDABLE zone) is hidden too, until asked for
    assert "margin_band" not in w.viewer.left.view.overlay.visible_kinds()
    # and so are the checker's A / B selections: the prompt's objects are drawn alike
    assert not ({"A", "B", "secondary_A", "secondary_B"} & w.viewer.left.view.overlay.visible_kinds())
    # every stratum (run × relation × verdict) with samples is represented
    codes, names = stratum_codes(st.dataset, st.verdicts, ("run", "relation", "verdict"))
    assert set(codes[np.array(st.queue)].tolist()) == set(codes.tolist())
    # leaving the audit queue brings the checker back
    from ui import menus

    menus.leave_audit(w)
    assert not _blind(st)
    assert w.viewer.left.card.chip.text() in ("PASS", "FAIL", "UNDECIDABLE")
    assert "margin_band" in w.viewer.left.view.overlay.visible_kinds() or st.verdicts.sel_b[st.current] < 0


def test_audit_set_without_blind_shows_the_checker(qtbot, open_window, sbuc_images_project: Path) -> None:
    w = open_window(sbuc_images_project)
    seen = _create_with_dialog(qtbot, w, 10, 1, recheck="0", blind=False)
    _key(qtbot, w, Qt.Key_A, Qt.ControlModifier | Qt.ShiftModifier)
    assert seen
    assert not _blind(w.spatial) and len(w.spatial.queue) == 10
    assert w.viewer.left.card.chip.text() in ("PASS", "FAIL", "UNDECIDABLE")
    assert not w.labeling.blind_banner.isVisible()


def test_rechecks_are_blind_even_in_an_open_audit_set(qtbot, open_window, sbuc_images_project: Path) -> None:
    w = open_window(sbuc_images_project)
    seen = _create_with_dialog(qtbot, w, 12, 2, recheck="0.50", blind=False)
    _key(qtbot, w, Qt.Key_A, Qt.ControlModifier | Qt.ShiftModifier)
    assert seen and not _blind(w.spatial) and len(w.spatial.queue) == 18
    kinds = []
    for _ in range(18):
        rc = w.spatial.controller.is_recheck()
        kinds.append(rc)
        chip = w.viewer.left.card.chip.text()
        assert (chip == "BLIND") == rc, (chip, rc)
        assert w.labeling.blind_banner.isVisible() == rc
        _key(qtbot, w, Qt.Key_P)  # labelled: its re-check comes back later (an item not labelled has none)
    assert sum(kinds) == 6


def test_same_seed_same_sample(qtbot, open_window, sbuc_images_project: Path) -> None:
    w = open_window(sbuc_images_project)
    a = draw_audit_set(w, name="a", size=30, seed=11, recheck_fraction=0.0)
    b = draw_audit_set(w, name="b", size=30, seed=11, recheck_fraction=0.0)
    c = draw_audit_set(w, name="c", size=30, seed=12, recheck_fraction=0.0)
    items = {k: w.spatial.project.audit.items(k) for k in (a, b, c)}
    assert items[a] == items[b]
    assert items[a] != items[c]
    assert len({s for s, _ in items[a]}) == 30  # no duplicates


def test_rechecks_come_back_later_blind_and_give_self_agreement(qtbot, open_window, sbuc_images_project: Path) -> None:
    w = open_window(sbuc_images_project)
    seen = _create_with_dialog(qtbot, w, 20, 5, recheck="0.20")
    _key(qtbot, w, Qt.Key_A, Qt.ControlModifier | Qt.ShiftModifier)
    assert seen
    st = w.spatial
    items = st.project.audit.items(st.audit_set_id)
    assert len(items) == 24
    first_pos = {}
    for pos, (sid, rc) in enumerate(items):
        if rc:
            assert sid in first_pos and first_pos[sid] < pos  # after the original
        else:
            first_pos[sid] = pos
    # label everything with keys: PASS the first time, and for two of the four re-checks FAIL
    rechecks_seen = 0
    for pos in range(24):
        assert st.queue_pos == pos
        if w.spatial.controller.is_recheck():
            assert "re-check" in w.labeling.position.text()
            assert w.viewer.left.card.chip.text() == "BLIND"
            rechecks_seen += 1
            _key(qtbot, w, Qt.Key_F if rechecks_seen <= 2 else Qt.Key_P)
        else:
            _key(qtbot, w, Qt.Key_P)
    assert rechecks_seen == 4
    assert w.labeling.bar.text() == "24 / 24 labelled"
    rep = self_agreement_report(st, st.audit_set_id)
    assert rep.n_pairs == 4 and rep.percent == pytest.approx(0.5)
    assert rep.by_annotator["alice"].n_pairs == 4
    assert rep.small and rep.kappa_lo <= rep.kappa <= rep.kappa_hi  # four re-checks: few, and said
    # the end of the queue reports it
    assert "Self-agreement: 4 re-checks: 50% the same" in w.statusBar().currentMessage()
    assert "(fewer than 10 re-checks)" in w.statusBar().currentMessage()


def test_recheck_plan_places_each_after_its_original() -> None:
    for n in (1, 5, 40, 200):
        for frac in (0.05, 0.1, 0.5):
            plan = recheck_plan(n, frac, seed=3)
            assert len(plan) == int(round(frac * n))
            # rebuild the queue as the store does
            items = [(i, False) for i in range(n)]
            for final, orig in sorted((f, o) for o, f in plan):
                items.insert(min(final, len(items)), (orig, True))
            pos_first = {i: p for p, (i, rc) in enumerate(items) if not rc}
            for p, (i, rc) in enumerate(items):
                if rc:
                    assert p > pos_first[i]


def test_recheck_shows_nothing_of_the_first_answer_and_is_stored_as_a_recheck(
        qtbot, open_window, sbuc_images_project: Path) -> None:
    from workstation.methods.spatial.commands.audit import recheck_pairs
    from workstation.evaluation.agreement import self_agreement
    from workstation.methods.spatial.store import SpatialStore

    w = open_window(sbuc_images_project)
    seen = _create_with_dialog(qtbot, w, 8, 4, recheck="0.25")
    _key(qtbot, w, Qt.Key_A, Qt.ControlModifier | Qt.ShiftModifier)
    assert seen
    st = w.spatial
    assert len(st.queue) == 10
    store = SpatialStore(st.project)
    checked = 0
    for pos in range(10):
        assert st.queue_pos == pos
        sid = str(st.dataset.samples.sample_id[st.current])
        if not w.spatial.controller.is_recheck():
            w.labeling.notes.setText("first look: A is hidden")
            _key(qtbot, w, Qt.Key_F)
            continue
        checked += 1
        # the auditor answered FAIL with a note before: the re-check shows none of it
        assert w.labeling.yours.text() == "your label: —"
        assert w.labeling.notes.text() == ""
        for side in (w.viewer.left, w.viewer.right):
            assert "FAIL" not in side.card.human.text()
        _key(qtbot, w, Qt.Key_P)
        ev = store.label_events(sid)[-1]
        assert (ev.verdict, ev.source, ev.audit_set_id) == ("PASS", "recheck", st.audit_set_id)
        # the first-pass answer is still FAIL: the re-check is a second answer, not an edit
        first = [e for e in store.label_events(sid) if e.source != "recheck"]
        assert first[-1].verdict == "FAIL"
    assert checked == 2
    rep = self_agreement_report(st, st.audit_set_id)
    assert rep.n_pairs == 2 and rep.percent == 0.0
    # `audit-metrics` counts the same two re-checks (and not edits of a first answer)
    sa = self_agreement(*recheck_pairs(store.label_events()))
    assert sa.n_pairs == 2 and sa.percent == 0.0
    # undoing the last re-check brings back an empty re-check, not the first answer
    _key(qtbot, w, Qt.Key_Z, Qt.ControlModifier)
    assert w.spatial.controller.is_recheck()
    assert w.labeling.yours.text() == "your label: —"
    assert self_agreement_report(st, st.audit_set_id).n_pairs == 1


def test_preview_follows_the_recheck_fraction_at_once(qtbot, open_window, sbuc_images_project: Path) -> None:
    from ui.widgets.audit_dialog import AuditSetDialog

    w = open_window(sbuc_images_project)
    st = w.spatial
    for row in range(790):  # labelled already: "leave out labelled samples" leaves 10
        st.human[row] = 0
    dlg = AuditSetDialog(st.project, st.controller.scheme, w.method_views["spatial"].audit_population(w), parent=w)
    qtbot.addWidget(dlg)
    dlg.show()
    _type_into(qtbot, dlg.size.lineEdit(), "40")
    assert "; 4 re-checks" in dlg.preview.text()
    _type_into(qtbot, dlg.recheck.lineEdit(), "0.50")  # only the fraction changes
    assert "40 of 800 samples" in dlg.preview.text() and "; 20 re-checks" in dlg.preview.text()
    # leaving out labelled samples changes what can be drawn, and the preview says so
    qtbot.mouseClick(dlg.exclude, Qt.LeftButton, pos=QPoint(6, dlg.exclude.height() // 2))
    assert dlg.exclude.isChecked()
    assert dlg.preview.text().startswith("10 of 800 samples") and "; 5 re-checks" in dlg.preview.text()


def test_self_agreement_says_its_interval_and_when_few_re_checks_stand_behind_it():
    from workstation.evaluation.audit_sets import SelfAgreement

    assert SelfAgreement(4, 0.75, 0.5, -0.2, 1.0, True).text() == \
        "4 re-checks: 75% the same, κ = 0.50 [-0.20, 1.00] (fewer than 10 re-checks)"
    assert SelfAgreement(40, 0.9, 0.8, 0.6, 0.95, False).text() == "40 re-checks: 90% the same, κ = 0.80 [0.60, 0.95]"
    nan = float("nan")
    assert SelfAgreement(2, 1.0, nan, nan, nan, True).text() == \
        "2 re-checks: 100% the same, κ = undefined (fewer than 10 re-checks)"
    assert SelfAgreement(0, nan, nan).text() == "no re-checked item has both labels yet"
