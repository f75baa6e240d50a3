"""Opening a project without blocking the window (the window's `open_project_in_background`).

The store reads the samples on a thread of its own (or takes the load `main.py gui --project`
started before Qt was imported, `ui.loading.EarlyLoad`); the window adopts them when they are
read, and the checker evaluates them on another thread while the views fill in; its verdicts
reach the spatial session when ready. Locks and errors end in the same messages as the window's
`open_project`. No Qt module is imported off the GUI thread (PySide makes a binding's types as a
module first reaches them, while Qt reads them on the GUI thread without Python's lock).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QApplication, QMessageBox

from . import project_dialogs

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


class BackgroundOpen(QObject):
    # a background load's result or error, folder, read_only, ok, the window's closes at its start
    _loaded = Signal(object, object, bool, bool, int)
    # a background check's (dataset, config, verdicts) or error, its dataset, folder, ok
    _checked = Signal(object, object, object, bool)

    def __init__(self, window: Any) -> None:
        super().__init__(window)
        self.w = window
        self.load_worker: Any = None  # the thread of a background open, while it runs
        self.check_worker: Any = None  # the thread of a background check, while it runs
        # queued: an early load that has already ended delivers from this thread, after the call
        self._loaded.connect(self._on_loaded, Qt.QueuedConnection)
        self._checked.connect(self._on_checked)

    def start(self, folder: str | Path, read_only: bool = False, early: Any = None) -> None:
        w = self.w
        folder = Path(folder)
        if early is not None and (self.load_worker is not None or early.folder != folder
                                  or early.read_only != read_only):
            early.discard()  # not this open's: its project is closed when it ends
            early = None
        if (self.load_worker is not None or not project_dialogs.is_project(folder)
                or project_dialogs.is_open_here(folder)):
            if early is not None:  # it holds the project: gone before the open here
                early.discard()
                early.thread.join()
            ok = w.open_project(folder, read_only=read_only) if self.load_worker is None else False
            w.load_finished.emit(ok)
            return
        w.statusBar().showMessage(f"Opening {folder.name}…")
        w.project_label.setText(f"opening {folder.name}…")
        w.start_page.show_opening(folder.name)
        QApplication.setOverrideCursor(Qt.BusyCursor)
        closings = w.closings
        if early is not None:
            self.load_worker = early.thread
            early.then(lambda result, ok: self._deliver(result, folder, read_only, ok, closings))
        else:
            worker = threading.Thread(target=self._load, args=(folder, read_only, closings), name="project-load")
            self.load_worker = worker
            worker.start()
        threading.Thread(target=_warm_method_imports, name="warm-imports", daemon=True).start()

    def _load(self, folder: Path, read_only: bool, closings: int) -> None:
        from .loading import load_project  # no Qt module is imported off the GUI thread

        try:
            result: Any = load_project(folder, read_only, False, False)
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
        self.load_worker = None
        QApplication.restoreOverrideCursor()
        w = self.w
        if closings != w.closings:  # the window was closed while the project loaded: not adopted
            w.show_project_label()
            if ok:
                result.project.close()
            return
        if ok:
            self._adopt(result, folder)
        else:
            self._failed(result, folder, read_only)

    def _adopt(self, loaded: Any, folder: Path) -> None:
        w = self.w
        old = w.state.project
        if old is not None and not old.read_only:
            project_dialogs.release(old.folder)
        # the checker starts before the views take the samples, so that the two overlap
        checking = loaded.verdicts is None and loaded.dataset.n > 0
        if checking:
            self._check(loaded.dataset, loaded.config, folder)
        w.adopt_loaded(loaded)
        project_dialogs.mark_open(folder, writable=not loaded.project.read_only)
        project_dialogs.add_recent(folder)
        n = loaded.dataset.n
        w.statusBar().showMessage(f"opened {folder.name}: {n:,} samples"
                                  + (" — the checker is evaluating them…" if checking else ""),
                                  0 if checking else 6000)
        w.project_opened.emit()
        w.load_finished.emit(True)

    def _check(self, dataset: Any, cfg: Any, folder: Path) -> None:
        worker = threading.Thread(target=self._check_thread, args=(dataset, cfg, folder), name="project-check")
        self.check_worker = worker
        worker.start()

    def _check_thread(self, dataset: Any, cfg: Any, folder: Path) -> None:
        from .loading import evaluate_active  # no Qt module is imported off the GUI thread

        try:
            result: Any = evaluate_active(dataset, cfg)
            ok = True
        except Exception as e:  # noqa: BLE001 - reported on the GUI thread
            result, ok = e, False
        try:
            self._checked.emit(result, dataset, folder, ok)
        except RuntimeError:  # the window is gone
            pass

    def _on_checked(self, result: Any, dataset: Any, folder: Path, ok: bool) -> None:
        self.check_worker = None
        w = self.w
        s = getattr(w, "spatial", None)
        if ok:
            if s is not None and s.verdicts_ready(*result) and not s.draft_restored:
                w.statusBar().showMessage(f"opened {folder.name}: {dataset.n:,} samples", 6000)
        elif s is not None and dataset is s.dataset:
            s.checking = False
            log.error("the checker failed on %s: %s", folder, result)
            w.statusBar().showMessage(f"the checker failed on {folder.name}: {result}")
            if QApplication.platformName() != "offscreen":
                QMessageBox.critical(w, "The checker failed", f"{folder.name}: {result}")
        w.verdicts_checked.emit()

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
