"""No label key acts where no item is shown: MetaLogic's Audit set page with no set open, a
sample whose image is not found on spatial's Review (only an explicit U records), an image pair
with an image missing (only U), a DyEval test image or a ProtoBias image to rate that is missing
(nothing: their schemes have no "can't tell"). The bar says what is missing and what may still be
recorded; the key says it again in the status bar."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from ui import menus
from workstation.methods import get_method
from workstation.store import Project

pytestmark = pytest.mark.gui


def _key(qtbot: Any, w: Any, key: Any, modifier: Any = Qt.KeyboardModifier.NoModifier) -> None:
    target = QApplication.focusWidget()
    qtbot.keyClick(target if target is not None and target.isVisible() else w, key, modifier)


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for name in ("metalogic", "dyeval", "protobias"):
        folder = tmp_path_factory.mktemp(f"unshown_{name}") / "p"
        with Project.create(folder) as p:
            get_method(name).build_demo(p, small=True, workers=0)
        out[name] = folder
    return out


def _window(open_window: Any, qtbot: Any, demos: dict[str, Path], name: str, tmp_path: Path) -> tuple[Any, Any, Any]:
    dst = tmp_path / name
    shutil.copytree(demos[name], dst)
    w = open_window(dst, annotator="alice")
    qtbot.waitUntil(lambda: name in w.method_views, timeout=20000)
    w.state.set_annotator("alice")
    views = w.method_views[name]
    views.show_judging(w)
    QApplication.processEvents()
    return w, views, views.controller(w)


def _events(w: Any, task: str) -> list[tuple[str, str | None]]:
    return [(e.target_id, e.value) for e in w.state.project.labels.events(task=task)]


def _sample_image(w: Any, sample_id: str) -> Path:
    row = w.state.project.con.execute("SELECT image_path FROM samples WHERE sample_id = ?", [sample_id]).fetchone()
    return Path(w.state.project.folder) / str(row[0])


# ---- MetaLogic ------------------------------------------------------------------------------------

def test_metalogic_audit_page_with_no_set_open_records_nothing(qtbot: Any, open_window: Any,
                                                               demos: dict[str, Path], tmp_path: Path) -> None:
    w, views, c = _window(open_window, qtbot, demos, "metalogic", tmp_path)
    assert c.audit is None and c.current_index >= 0  # the Pairs page's queue has a current pair
    w.metalogic_tabs.setCurrentWidget(w.metalogic_audit)
    QApplication.processEvents()
    page = w.metalogic_audit
    assert "No audit set is open" in page.header.text() and page.view.widget.header.text() == "no pair selected"
    _key(qtbot, w, Qt.Key.Key_A)
    _key(qtbot, w, Qt.Key.Key_U)
    assert _events(w, c.scheme.task) == [], "a key recorded a label for a pair the page does not show"
    assert w.statusBar().currentMessage() == "no audit set is open here: nothing can be recorded — nothing was recorded"
    bar = page.bar
    assert bar.unshown_note.isVisible()
    assert bar.unshown_note.text() == "no audit set is open here: nothing can be recorded"
    assert not any(b.isEnabled() for b in bar.buttons.values())
    # nor a note, a step or an undo on a queue the page does not show
    assert not bar.notes.isEnabled() and not bar.position.isVisible() and not bar.next_unlabelled_button.isVisible()
    pos = c.pos
    _key(qtbot, w, Qt.Key.Key_Right)
    assert c.pos == pos
    # the Label menu's entries act as the keys of the page shown
    menus.fill_label_menu(w)
    (aligned,) = [a for a in w.label_menu.actions() if a.text().startswith("Aligned")]
    aligned.trigger()
    assert _events(w, c.scheme.task) == []
    # on the Pairs page, which shows the pair, the same key records it
    w.metalogic_tabs.setCurrentWidget(w.metalogic_page)
    QApplication.processEvents()
    assert not w.metalogic_page.bar.unshown_note.isVisible()
    target = c.current
    _key(qtbot, w, Qt.Key.Key_A)
    assert _events(w, c.scheme.task) == [(target, "ALIGNED")]
    # back on the Audit set page: Ctrl+Z there takes nothing back
    w.metalogic_tabs.setCurrentWidget(w.metalogic_audit)
    QApplication.processEvents()
    _key(qtbot, w, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert _events(w, c.scheme.task) == [(target, "ALIGNED")]


def test_metalogic_pair_with_an_image_not_found_records_only_u(qtbot: Any, open_window: Any,
                                                               demos: dict[str, Path], tmp_path: Path) -> None:
    w, views, c = _window(open_window, qtbot, demos, "metalogic", tmp_path)
    page = w.metalogic_page
    data = page.session.data
    pos = 2
    i = int(c.queue_indices[pos])
    (Path(page.session.project.folder) / str(data.image_a[i])).unlink()
    c.go(pos)
    QApplication.processEvents()
    bar = page.bar
    assert "image not found" in page.pair.pane_a.error and not page.pair.pane_b.error
    target = c.current
    _key(qtbot, w, Qt.Key.Key_A)
    _key(qtbot, w, Qt.Key.Key_M)
    assert _events(w, c.scheme.task) == [] and c.current == target
    assert "no image A: only U can be recorded" in w.statusBar().currentMessage()
    assert bar.unshown_note.isVisible() and bar.unshown_note.text() == "no image A: only U can be recorded"
    assert not bar.buttons["ALIGNED"].isEnabled() and bar.buttons["UNDECIDABLE"].isEnabled()
    _key(qtbot, w, Qt.Key.Key_U)
    assert _events(w, c.scheme.task) == [(target, "UNDECIDABLE")]


# ---- spatial --------------------------------------------------------------------------------------

def _review(w: Any, sample_id: str) -> None:
    s = w.spatial
    row = s.dataset.sample_index()[sample_id]
    w.method_views["spatial"].review_from_browse(w, row)
    QApplication.processEvents()
    assert s.current == row


@pytest.mark.parametrize("sample_id, why", [("s_p1_seed2", "image not found"), ("s_p1_seed1", "cannot read image")])
def test_spatial_image_not_found_records_only_an_explicit_u(qtbot: Any, open_window: Any, png_project: Path,
                                                            sample_id: str, why: str) -> None:
    w = open_window(png_project, annotator="alice")
    w.state.set_annotator("alice")
    bar = w.labeling
    bar.auto.setChecked(False)
    # a sample whose image shows: P records
    _review(w, "s_p0_seed0")
    assert w.viewer.left.view.image_ok and bar.buttons["PASS"].isEnabled()
    _key(qtbot, w, Qt.Key.Key_P)
    assert _events(w, "spatial.verdict") == [("s_p0_seed0", "PASS")]
    # the one whose image is missing (or unreadable): the canvas and the bar say what is missing
    _review(w, sample_id)
    assert why in w.viewer.left.view.message and not w.viewer.left.view.image_ok
    _key(qtbot, w, Qt.Key.Key_P)
    assert _events(w, "spatial.verdict") == [("s_p0_seed0", "PASS")], "P recorded a sample without its image"
    assert w.statusBar().currentMessage() == "no image: only U can be recorded — nothing was recorded"
    _key(qtbot, w, Qt.Key.Key_F)
    assert _events(w, "spatial.verdict") == [("s_p0_seed0", "PASS")]
    assert bar.unshown_note.isVisible() and bar.unshown_note.text() == "no image: only U can be recorded"
    assert not bar.buttons["PASS"].isEnabled() and not bar.buttons["FAIL"].isEnabled()
    assert bar.buttons["UNDECIDABLE"].isEnabled()
    _key(qtbot, w, Qt.Key.Key_U)  # the auditor's explicit UNDECIDABLE
    assert _events(w, "spatial.verdict") == [("s_p0_seed0", "PASS"), (sample_id, "UNDECIDABLE")]
    assert bar.yours.text() == "your label: UNDECIDABLE"
    # back to a sample with its image: P and F act again
    _review(w, "s_p0_seed1")
    assert not bar.unshown_note.isVisible() and bar.buttons["FAIL"].isEnabled()
    _key(qtbot, w, Qt.Key.Key_F)
    assert _events(w, "spatial.verdict")[-1] == ("s_p0_seed1", "FAIL")


# ---- DyEval and ProtoBias: nothing to record without the image ------------------------------------

def test_dyeval_test_image_not_found_records_nothing(qtbot: Any, open_window: Any, demos: dict[str, Path],
                                                     tmp_path: Path) -> None:
    w, views, c = _window(open_window, qtbot, demos, "dyeval", tmp_path)
    tree = w.dyeval_page.session.tree
    pos = 1
    iid = c.core.target_id(int(c.queue_indices[pos]))
    (Path(w.state.project.folder) / tree.images[iid].path).unlink()
    c.go(pos)
    QApplication.processEvents()
    bar = views.bar(w)
    before = _events(w, c.scheme.task)
    _key(qtbot, w, Qt.Key.Key_P)
    _key(qtbot, w, Qt.Key.Key_F)
    assert _events(w, c.scheme.task) == before and c.current == iid
    assert bar.unshown_note.isVisible() and bar.unshown_note.text() == "no image: nothing can be recorded"


def test_protobias_image_to_rate_not_found_records_nothing(qtbot: Any, open_window: Any, demos: dict[str, Path],
                                                           tmp_path: Path) -> None:
    w, views, c = _window(open_window, qtbot, demos, "protobias", tmp_path)
    pos = c.pos + 2  # the next triplet's first image (not shown yet)
    sid = c.core.target_id(int(c.queue_indices[pos]))
    _sample_image(w, sid).unlink()
    c.go(pos)
    QApplication.processEvents()
    bar = views.bar(w)
    before = _events(w, c.scheme.task)  # the demo's own ratings
    _key(qtbot, w, Qt.Key.Key_3)
    assert _events(w, c.scheme.task) == before and c.current == sid
    side = w.protobias_page.rating.current_side()
    assert bar.unshown_note.text() == f"no image {side}: nothing can be recorded"
