"""The window under file-system faults: the disk fills up while labelling; a project on a
read-only medium. No uncaught exception, one clear message, every acknowledged label kept."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from tests.fs_faults import fill, tiny_disk, writable_then_read_only
from workstation.store import Project

from .conftest import build_png_project, on_next_modal
from workstation.methods.spatial.store import SpatialStore

pytestmark = pytest.mark.gui


def _review(qtbot, w) -> None:
    table = w.browser.table
    table.setFocus()
    table.setCurrentIndex(w.browser.model.index(0, 0))
    qtbot.keyClick(table, Qt.Key_Return)
    assert w.tabs.currentWidget() is w.review


def _key(qtbot, w, key) -> None:
    qtbot.keyClick(QApplication.focusWidget() or w, key)


def _labels(folder: Path) -> dict[str, str | None]:
    with Project.open(folder, read_only=True) as p:
        return {r.sample_id: r.verdict for r in SpatialStore(p).latest_labels("alice")}


def test_a_label_key_on_a_full_disk_says_so_and_keeps_every_acknowledged_label(
        qtbot, open_window, tmp_path: Path, sbuc_images_template: Path) -> None:
    with tiny_disk(tmp_path / "disk", "24m") as disk:
        folder = disk / "project"
        shutil.copytree(sbuc_images_template, folder)
        w = open_window(folder)
        _review(qtbot, w)
        st = w.spatial
        acked: list[str] = []
        w.spatial.controller.committed.connect(lambda n, sid: acked.append(sid))
        keys = {Qt.Key_P: "PASS", Qt.Key_F: "FAIL", Qt.Key_U: "UNDECIDABLE"}
        pressed: dict[str, str] = {}
        for key in (Qt.Key_P, Qt.Key_F, Qt.Key_P):
            pressed[str(st.dataset.samples.sample_id[st.current])] = keys[key]
            _key(qtbot, w, key)
        assert len(acked) == 3
        filler = fill(disk)
        # DuckDB appends to its log: a few labels may still fit in its last page; the next one fails
        for k in range(400):
            here = st.current
            sid = str(st.dataset.samples.sample_id[here])
            n = len(acked)
            key = (Qt.Key_P, Qt.Key_F, Qt.Key_U)[k % 3]
            _key(qtbot, w, key)  # no exception may escape (pytest-qt fails the test if one does)
            if len(acked) == n:
                break
            pressed[sid] = keys[key]
        else:
            pytest.fail("400 labels were written to a full disk")
        assert st.current == here, "the item stays, so the key can be pressed again"
        assert "disk full — the label was not saved" in w.statusBar().currentMessage()
        assert "disk full" in w.spatial.controller.last_error
        assert w.labeling.yours.text().startswith("NOT SAVED — disk full")
        assert st.human[here] == -1
        filler.unlink()  # space again: the same key now saves
        _key(qtbot, w, key)
        assert len(acked) == n + 1 and acked[-1] == sid
        pressed[sid] = keys[key]
        st.close_project()
        labels = _labels(folder)
        assert set(acked) == set(pressed)
        assert {s: labels[s] for s in acked} == pressed, "every acknowledged label is in the project"
        w.close()


def test_label_errors_never_escape_the_key_handler(qtbot, open_window, png_project: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Any machine without root (no tmpfs): the store raising DuckDB's disk-full error."""
    w = open_window(png_project)
    _review(qtbot, w)
    st = w.spatial
    _key(qtbot, w, Qt.Key_P)
    saved = str(st.dataset.samples.sample_id[st.queue[0]])

    def full(*a, **k):
        raise RuntimeError('TransactionContext Error: Failed to commit: Could not write file '
                           '"project.duckdb.wal": No space left on device')

    monkeypatch.setattr(st.project.labels, "add", full)
    here = st.current
    _key(qtbot, w, Qt.Key_F)
    assert st.current == here and "disk full" in w.statusBar().currentMessage()
    assert not w.spatial.controller.undo(), "undo of the saved label is refused while nothing can be written"
    assert w.spatial.controller.undo_stack, "and stays possible later"
    monkeypatch.undo()
    st.close_project()
    assert _labels(png_project) == {saved: "PASS"}


def test_a_project_in_a_read_only_folder_is_offered_read_only(qtbot, open_window, tmp_path: Path) -> None:
    with writable_then_read_only(tmp_path / "ro") as make_read_only:
        folder = build_png_project(tmp_path / "ro" / "project")
        make_read_only()
        w = open_window()
        seen = on_next_modal(qtbot, lambda box: qtbot.mouseClick(box.findChild(object, "openReadOnly"),
                                                                  Qt.LeftButton))
        assert w.open_project(folder)
        assert seen and seen[0].objectName() == "readOnlyFolderMessage"
        assert w.spatial.project is not None and w.spatial.project.read_only
        assert w.spatial.dataset.n == 6
        assert not w.labeling.buttons["PASS"].isEnabled()
        w.spatial.close_project()
        w.close()


def test_a_read_only_folder_can_be_declined(qtbot, open_window, tmp_path: Path) -> None:
    with writable_then_read_only(tmp_path / "ro") as make_read_only:
        folder = build_png_project(tmp_path / "ro" / "project")
        make_read_only()
        w = open_window()
        on_next_modal(qtbot, lambda box: box.reject())
        assert not w.open_project(folder)
        assert w.spatial.project is None
        w.close()
