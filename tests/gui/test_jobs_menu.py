"""The Jobs menu (New job…, Show jobs panel, Cancel / Resume, Remove run…) and removing a run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QDialogButtonBox, QInputDialog, QMessageBox

from .conftest import on_next_modal

pytestmark = pytest.mark.gui


def _menu_titles(w: Any) -> list[str]:
    return [a.text().replace("&", "") for a in w.menuBar().actions()]


def test_jobs_menu_offers_new_job_the_panel_and_cancel_resume(qtbot: Any, open_window: Any,
                                                               sbuc_project: Path) -> None:
    w = open_window(sbuc_project)
    w.install_extra_panels()
    titles = _menu_titles(w)
    assert "Jobs" in titles and titles.index("Jobs") == titles.index("Help") - 1
    texts = [a.text() for a in w.jobs_menu.actions() if not a.isSeparator()]
    assert texts == ["New job…", "Show jobs panel", "Cancel selected job", "Resume selected job", "Remove run…"]
    toggle = w.jobs_actions["panel"]
    assert toggle.shortcut().toString() == "Ctrl+J"
    w.jobs_menu.aboutToShow.emit()
    assert not w.jobs_actions["cancel"].isEnabled()  # no job selected
    dock = w.docks["Jobs"]
    assert not dock.isVisible()
    seen: list[Any] = []

    def cancel(dlg: Any) -> None:
        seen.append(dlg.windowTitle())
        dlg.buttons.button(QDialogButtonBox.Cancel).click()

    on_next_modal(qtbot, cancel)
    w.jobs_actions["new"].trigger()
    qtbot.waitUntil(lambda: bool(seen), timeout=5000)
    assert seen == ["New job"] and dock.isVisible()


def test_remove_run_from_the_jobs_menu_after_a_confirmation(qtbot: Any, open_window: Any,
                                                            sbuc_project: Path) -> None:
    w = open_window(sbuc_project)
    w.install_extra_panels()
    st = w.spatial
    (rid,) = st.project.samples.run_ids()
    assert st.dataset.n == 800
    confirm_text: list[str] = []

    def pick(dlg: Any, answer: Any) -> None:
        assert isinstance(dlg, QInputDialog)
        assert dlg.comboBoxItems() == [f"{rid}  (800 samples)"]

        def confirm(box: Any) -> None:
            confirm_text.append(box.text())
            box.button(answer).click()

        on_next_modal(qtbot, confirm)
        dlg.accept()

    # Cancel at the confirmation: nothing happens
    on_next_modal(qtbot, lambda d: pick(d, QMessageBox.Cancel))
    w.jobs_actions["remove_run"].trigger()
    assert confirm_text and confirm_text[0].startswith(f"Remove run '{rid}': 800 sample(s)")
    assert st.project.samples.run_ids() == [rid] and st.dataset.n == 800
    # Yes: the run and its samples are gone, the views follow
    on_next_modal(qtbot, lambda d: pick(d, QMessageBox.Yes))
    w.jobs_actions["remove_run"].trigger()
    assert st.project.samples.run_ids() == [] and st.project.samples.count() == 0
    assert st.dataset.n == 0 and w.browser.model.rowCount() == 0
    assert w.statusBar().currentMessage().startswith(f"removed run '{rid}': 800 sample(s)")
