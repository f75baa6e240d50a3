"""Opening a project without blocking the window (the window's `open_project_in_background`).

The store reads the samples on a thread of its own (or takes the load `main.py gui --project`
started before Qt was imported, `ui.loading.EarlyLoad`); the window adopts them when they are
read, and the views' own work on what was read (``before_adopt``: spatial's checker evaluates
the samples on another thread) starts before they fill in. While the load runs, the status bar
says what it is reading and how far it is (`OpeningIndicator`), with a button that cancels it:
the window then stays as it was. Locks and errors end in the same messages as the window's
`open_project`. No Qt module is imported off the GUI thread (PySide makes a binding's types as a
module first reaches them, while Qt reads them on the GUI thread without Python's lock): the
methods' loads are imported before the load's thread starts (`ui.loading.method_loads`).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import (QApplication, QHBoxLayout, QMessageBox, QProgressBar, QPushButton, QSizePolicy,
                               QWidget)

from . import project_dialogs

if TYPE_CHECKING:
    from .main_window import MainWindow

log = logging.getLogger(__name__)


def _warm_method_imports() -> None:
    """Import the methods the window asks whether the project holds their data once it is
    adopted (a thread beside the project's load). Only modules without Qt."""
    from .loading import import_duckdb

    import_duckdb()  # not beside the project's load: see `import_duckdb`
    from workstation.methods import METHODS, get_method

    for method in METHODS.names():
        try:
            get_method(method)
        except Exception:  # noqa: BLE001 - asked again (and reported) when the window needs it
            log.debug("warming method %s failed", method, exc_info=True)


class OpeningIndicator(QWidget):
    """The status bar's part while a project opens: how far its load is, and a button that
    cancels it. Hidden while no project is opening."""

    #: how often the load's progress is read (ms)
    POLL_MS = 200

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("openingIndicator")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.bar = QProgressBar()
        self.bar.setFixedWidth(100)
        self.bar.setMaximumHeight(14)
        self.bar.setTextVisible(False)
        self.cancel_button = QPushButton("Cancel opening")
        self.cancel_button.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)
        self.cancel_button.setToolTip("Stop reading this project; the window stays as it was")
        lay.addWidget(self.bar)
        lay.addWidget(self.cancel_button)
        # as wide as the bar and the button: the message beside it keeps the rest (a narrow window)
        self.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.hide()

    def show_progress(self, pct: int) -> None:
        if pct < 0:
            self.bar.setRange(0, 0)  # busy, with no share known
        else:
            self.bar.setRange(0, 100)
            self.bar.setValue(pct)
        self.show()


class BackgroundOpen(QObject):
    # a background load's result or error, folder, read_only, ok, the window's closes at its start
    _loaded = Signal(object, object, bool, bool, int)

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.w = window
        self.load_worker: Any = None  # the thread of a background open, while it runs
        self.progress: Any = None  # the open's `OpenProgress`, while it runs
        self._opening = ""  # the folder's name, while it opens
        self.indicator = OpeningIndicator()
        self.indicator.cancel_button.clicked.connect(self.cancel)
        self._poll = QTimer(self)
        self._poll.setInterval(OpeningIndicator.POLL_MS)
        self._poll.timeout.connect(self._show_progress)
        # queued: an early load that has already ended delivers from this thread, after the call
        self._loaded.connect(self._on_loaded, Qt.ConnectionType.QueuedConnection)

    def start(self, folder: str | Path, read_only: bool = False, early: Any = None) -> None:
        w = self.w
        folder = Path(folder)
        if early is not None and (self.load_worker is not None or early.folder != folder
                                  or early.read_only != read_only):
            early.discard()  # not this open's: its project is closed when it ends
            early = None
        if self.load_worker is not None:  # one open at a time: this one is not started (nor kept early)
            w.statusBar().showMessage(f"still opening {self._opening} — cancel it (the button on the right) "
                                      f"to open {folder.name}", 8000)
            w.load_finished.emit(False)
            return
        if not project_dialogs.is_project(folder) or project_dialogs.is_open_here(folder):
            if early is not None:  # it holds the project: gone before the open here
                early.discard()
                early.thread.join()
            w.load_finished.emit(w.open_project(folder, read_only=read_only))
            return
        from .loading import OpenProgress, method_loads

        w.statusBar().showMessage(f"Opening {folder.name}…")
        w.project_label.setText(f"opening {folder.name}…")
        w.start_page.show_opening(folder.name)
        QApplication.setOverrideCursor(Qt.CursorShape.BusyCursor)
        closings = w.closings
        self._opening = folder.name
        if early is not None:
            self.progress = early.progress
            self.load_worker = early.thread
            early.then(lambda result, ok: self._deliver(result, folder, read_only, ok, closings))
        else:
            self.progress = OpenProgress()
            loads = method_loads()  # the methods' modules imported here, on the GUI thread
            worker = threading.Thread(target=self._load, args=(folder, read_only, closings, self.progress, loads),
                                      name="project-load")
            self.load_worker = worker
            worker.start()
        self.indicator.cancel_button.setEnabled(True)
        self._poll.start()
        threading.Thread(target=_warm_method_imports, name="warm-imports", daemon=True).start()

    def cancel(self) -> None:
        """Stop the open under way (if any): the window stays as it was."""
        if self.progress is None or self.progress.cancelled:
            return
        self.progress.cancel()
        self.indicator.cancel_button.setEnabled(False)
        self._show_progress()

    def _show_progress(self) -> None:
        progress = self.progress
        if progress is None:
            return
        text, pct = progress.describe()
        self.w.statusBar().showMessage(f"Opening {self._opening}: {text}")
        self.w.start_page.show_opening(self._opening, text, progress.note())
        self.indicator.show_progress(pct)

    def _stop_progress(self) -> None:
        self._poll.stop()
        self.indicator.hide()
        self.progress = None

    def _load(self, folder: Path, read_only: bool, closings: int, progress: Any, loads: Any = None) -> None:
        from .loading import load_project  # no Qt module is imported off the GUI thread

        try:
            result: Any = load_project(folder, read_only, False, False, progress, loads=loads)
            ok = True
        except Exception as e:  # noqa: BLE001 - reported on the GUI thread (`_failed`)
            result, ok = e, False
        self._deliver(result, folder, read_only, ok, closings)

    def _deliver(self, result: Any, folder: Path, read_only: bool, ok: bool, closings: int) -> None:
        try:
            self._loaded.emit(result, folder, read_only, ok, closings)
        except RuntimeError:  # the window is gone (its process is leaving)
            if ok:
                result.project.close()

    def _on_loaded(self, result: Any, folder: Path, read_only: bool, ok: bool, closings: int) -> None:
        # a cancelled load raised `OpeningCancelled`, or ended before it saw the cancel
        cancelled = self.progress is not None and self.progress.cancelled
        self.load_worker = None
        self._stop_progress()
        QApplication.restoreOverrideCursor()
        w = self.w
        if closings != w.closings:  # the window was closed while the project loaded: not adopted
            w.show_project_label()
            if ok:
                result.project.close()
            return
        if cancelled:
            if ok:
                result.project.close()
            w.show_project_label()
            w.start_page.refresh()
            w.statusBar().showMessage(f"opening {folder.name} cancelled", 6000)
            w.load_finished.emit(False)
            return
        if ok:
            self._adopt(result, folder)
        else:
            self._failed(result, folder, read_only)

    def _adopt(self, loaded: Any, folder: Path) -> None:
        from .methods import load_of

        w = self.w
        old = w.state.project
        if old is not None and not old.read_only:
            project_dialogs.release(old.folder)
        # the views' work on what was read (spatial: the checker) starts before they take it, so
        # that the two overlap
        for views in list(w.method_views.values()):
            before = getattr(views, "before_adopt", None)
            if before is not None:
                before(w, loaded, folder)
        w.adopt_loaded(loaded)
        project_dialogs.mark_open(folder, writable=not loaded.project.read_only)
        project_dialogs.add_recent(folder)
        texts = [load_of(name).opened_text(part) for name, part in loaded.parts.items()]
        busy = any(b for _, b in texts)
        w.statusBar().showMessage(f"opened {folder.name}" + "".join(f": {t}" for t, _ in texts[:1])
                                  + "".join(f"; {t}" for t, _ in texts[1:]), 0 if busy else 6000)
        w.project_opened.emit()
        w.load_finished.emit(True)

    def _failed(self, error: BaseException, folder: Path, read_only: bool) -> None:
        from workstation.store import ProjectLocked, ProjectReadOnly

        w = self.w
        w.show_project_label()
        w.start_page.refresh()
        if isinstance(error, (ProjectLocked, ProjectReadOnly)):
            ok = w.open_project(folder, read_only=read_only)
        else:
            QMessageBox.critical(w, "Cannot open the project", str(error))
            ok = False
        w.load_finished.emit(ok)

