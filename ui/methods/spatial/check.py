"""The checker's evaluation of a project opened in the background, on a thread of its own.

`ui.opening` reads the project (`ui.loading.load_project`) and, before the views take it, asks
them to start their work on it (`SpatialViews.before_adopt`): where the samples came without
verdicts, the checker evaluates them here (`loading.evaluate_active`) while the views fill in,
and the session takes the verdicts when they are ready (`SpatialSession.verdicts_ready`). The
window's `verdicts_checked` says when the check ended. No Qt module is imported off the GUI
thread.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QApplication, QMessageBox

if TYPE_CHECKING:
    from ui.main_window import MainWindow

log = logging.getLogger(__name__)


class BackgroundCheck(QObject):
    # a background check's (dataset, config, verdicts) or error, its dataset, folder, ok
    _checked = Signal(object, object, object, bool)

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.w = window
        self.check_worker: Any = None  # the thread of a background check, while it runs
        self._checked.connect(self._on_checked)

    def start(self, dataset: Any, cfg: Any, folder: Path) -> None:
        worker = threading.Thread(target=self._check_thread, args=(dataset, cfg, folder), name="project-check")
        self.check_worker = worker
        worker.start()

    def _check_thread(self, dataset: Any, cfg: Any, folder: Path) -> None:
        from . import loading  # no Qt module is imported off the GUI thread

        try:
            result: Any = loading.evaluate_active(dataset, cfg)
            ok = True
        except Exception as e:  # noqa: BLE001 - reported on the GUI thread
            result, ok = e, False
        try:
            self._checked.emit(result, dataset, folder, ok)
        except RuntimeError:  # the window is gone
            pass

    def _on_checked(self, result: Any, dataset: Any, folder: Path, ok: bool) -> None:
        from .loading import rebuilt

        self.check_worker = None
        w = self.w
        s = getattr(w, "spatial", None)
        if ok:
            if s is not None and s.verdicts_ready(*result) and not s.draft_restored:
                notes = rebuilt(dataset)
                w.statusBar().showMessage(f"opened {folder.name}: {dataset.n:,} samples{notes}",
                                          20000 if notes else 6000)
        elif s is not None and dataset is s.dataset:
            s.checking = False
            log.error("the checker failed on %s: %s", folder, result)
            w.statusBar().showMessage(f"the checker failed on {folder.name}: {result}")
            if QApplication.platformName() != "offscreen":
                QMessageBox.critical(w, "The checker failed", f"{folder.name}: {result}")
        w.verdicts_checked.emit()
