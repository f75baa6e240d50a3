"""The main window: Browse, Review and Calibration tabs, menus, status bar.

It composes the views and wires their actions; each view owns its own file:
`sample_table.SampleBrowser` (Browse), `pair_viewer.PairViewer` + `labeling.LabelingPanel`
(Review), `ui/methods/spatial/calibration/panel.CalibrationPanel` (Calibration, created the first time its
tab is shown, so that plotting libraries do not slow the start).

Other panels join through `MainWindow.add_panel(name, widget, area)`:

    window.add_panel("Jobs", JobPanel(state), "bottom")   # a dock: "left" | "right" | "bottom" | "top"
    window.add_panel("Reports", ReportView(state), "tab")  # a tab beside Browse / Review

Docks are listed in View → Panels so they can be shown again after being closed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workstation.types import WorkstationError

from . import place, project_dialogs, theme
from .image_cache import ImageCache
from .methods.spatial.browse import SampleBrowser
from .methods.spatial.labeling import GotoDialog, LabelController, LabelingPanel
from .methods.spatial.pair_viewer import PairViewer, verdict_counts_text
from .shortcuts import ShortcutSheet, key_sequences, make_action
from .state import AppState

log = logging.getLogger(__name__)

DOCK_AREAS = {"left": Qt.LeftDockWidgetArea, "right": Qt.RightDockWidgetArea,
              "bottom": Qt.BottomDockWidgetArea, "top": Qt.TopDockWidgetArea}
PREFETCH_AHEAD = 4


class ReviewPage(QWidget):
    """Pair viewer above the labelling bar."""

    def __init__(self, state: AppState, viewer: PairViewer, panel: LabelingPanel,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(viewer, 1)
        lay.addWidget(panel)
        self.viewer = viewer
        self.panel = panel


class CalibrationPlaceholder(QWidget):
    """Shown in the Calibration tab until `ui/methods/spatial/calibration/panel.py` is there."""

    def __init__(self, reason: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lab = QLabel("Calibration panel\n\n" + reason)
        lab.setAlignment(Qt.AlignCenter)
        lab.setObjectName("dim")
        lay.addWidget(lab)


def _warm_method_imports() -> None:
    """Import the methods the window asks whether the project holds their data once it is
    adopted (a thread beside the project's load). Only modules without Qt: PySide creates its
    types and wrappers as a module first reaches them, and doing that off the GUI thread while
    the GUI thread is inside Qt (which reads them without Python's lock) crashed the window
    at start now and then (1 start in 20 in one loop). Views, the plot library and the worker
    library are imported on the GUI thread when they are first used."""
    from workstation.methods import METHODS, get_method

    for method in METHODS.names():
        try:
            get_method(method)
        except Exception:  # noqa: BLE001 - `_method_has_data` reports it when it asks
            log.debug("warming method %s failed", method, exc_info=True)


class MainWindow(QMainWindow):
    project_opened = Signal()
    load_finished = Signal(bool)  # a background open ended (True: the project is open)
    verdicts_checked = Signal()  # the background check of a project opened in the background ended
    # a background load's result or error, folder, read_only, ok, the window's closes at its start
    _loaded_in_background = Signal(object, object, bool, bool, int)
    # a background check's (dataset, config, verdicts) or error, its dataset, folder, ok
    _checked_in_background = Signal(object, object, object, bool)

    def __init__(self, state: AppState | None = None, ask_annotator: Callable[[], str | None] | None = None
                 ) -> None:
        super().__init__()
        self.state = state or AppState()
        self.setWindowTitle("T2I Audit Workstation")
        self.setObjectName("mainWindow")
        self.images = ImageCache()
        self.thumbs = ImageCache(max_side=300, max_bytes=64 * 1024 * 1024)
        self.docks: dict[str, QDockWidget] = {}
        self.panels: dict[str, QWidget] = {}
        self.method_views: dict[str, Any] = {}  # installed views of each method (ui.methods registry)
        self._ask_annotator_override = ask_annotator
        self._load_worker: Any = None  # the thread of a background open, while it runs
        self._closings = 0  # closes of this window: a load started before one is not adopted
        # queued: an early load that has already ended delivers from this thread, after the call
        self._loaded_in_background.connect(self._on_loaded_in_background, Qt.QueuedConnection)
        self._check_worker: Any = None  # the thread of a background check, while it runs
        self._checked_in_background.connect(self._on_checked_in_background)
        self.controller = LabelController(self.state, ask_annotator=self.ask_annotator)

        # pages
        self.tabs = QTabWidget(self)
        self.tabs.setObjectName("mainTabs")
        self.tabs.setDocumentMode(True)
        self.browser = SampleBrowser(self.state, self.thumbs, self)
        self.viewer = PairViewer(self.state, self.images, self.thumbs, self)
        self.labeling = LabelingPanel(self.state, self.controller, self)
        self.labeling.focus_target = self.viewer.left.view
        self.review = ReviewPage(self.state, self.viewer, self.labeling, self)
        self.tabs.addTab(self.browser, "Browse")
        self.tabs.addTab(self.review, "Review")
        self.calibration: QWidget | None = None
        self._calibration_tab = QWidget()
        self._calibration_tab.setLayout(QVBoxLayout())
        self._calibration_tab.layout().setContentsMargins(0, 0, 0, 0)
        self.tabs.addTab(self._calibration_tab, "Calibration")
        self.setCentralWidget(self.tabs)
        self.tabs.currentChanged.connect(self._tab_changed)

        self._build_actions()
        self._build_menus()
        self._build_status()

        self.browser.open_requested.connect(self.review_from_browse)
        s = self.state
        s.message.connect(self._show_message)
        s.project_changed.connect(self._on_project)
        s.verdicts_changed.connect(self._update_counts)  # labels and queue unchanged
        s.labels_changed.connect(self._update_status)
        s.queue_changed.connect(self._update_status)
        s.current_changed.connect(self._on_current)
        s.about_to_close.connect(lambda: place.save_place(self))  # per project: tab, sample, queue, layout
        self.project_opened.connect(lambda: place.restore_place(self))
        self.controller.state_changed.connect(self._update_status)
        self.controller.finished_queue.connect(self._queue_finished)
        self._tab_changed(self.tabs.currentIndex())
        self._restore_geometry()
        self._on_project()

    # ---- panels ---------------------------------------------------------------------------------
    def add_panel(self, name: str, widget: QWidget, area: str = "right") -> QWidget:
        """Host another engineer's widget: `area` "tab" adds a tab; "left" / "right" / "bottom" /
        "top" adds a dock (listed in View → Panels). Returns the tab page or the dock."""
        self.panels[name] = widget
        if area == "tab":
            self.tabs.addTab(widget, name)
            return widget
        if area not in DOCK_AREAS:
            raise ValueError(f"unknown panel area {area!r} (use 'tab', {', '.join(DOCK_AREAS)})")
        dock = QDockWidget(name, self)
        dock.setObjectName(f"dock_{name}")
        dock.setWidget(widget)
        self.addDockWidget(DOCK_AREAS[area], dock)
        self.docks[name] = dock
        self.panels_menu.addAction(dock.toggleViewAction())
        return dock

    def install_extra_panels(self) -> None:
        """Panels built beside the main window (each optional: a missing or broken one is
        logged and left out). The jobs panel docks at the bottom, hidden until Ctrl+J."""
        if "Jobs" in self.panels:
            return
        try:
            from .jobs_panel import install
        except ImportError as e:
            log.info("jobs panel not available: %s", e)
            return
        try:
            install(self, "bottom")
        except Exception:
            log.exception("the jobs panel failed to start")
            return
        dock = self.docks.get("Jobs")
        if dock is not None:
            dock.hide()
            toggle = dock.toggleViewAction()
            toggle.setShortcuts(key_sequences("jobs"))
            toggle.setText("Jobs panel")
            from .jobs_menu import install_jobs_menu

            install_jobs_menu(self)  # Jobs → New job…, Show jobs panel, Cancel / Resume, Remove run…
        kept = getattr(self, "kept_layout", None)  # the project's layout (ui/place.py), docks included
        if kept is not None:
            self.restoreState(kept)

    # ---- method views -----------------------------------------------------------------------------
    def install_method_views(self, name: str) -> Any:
        """Install a method's views (pages, menus) once; returns them."""
        from .methods import views_for

        views = self.method_views.get(name)
        if views is None:
            views = views_for(name)
            views.install(self)
            self.method_views[name] = views
            views.on_project(self)
        return views

    def open_method(self, name: str) -> None:
        views = self.install_method_views(name)
        self.show_tab(views.title)

    def _sync_method_views(self) -> None:
        """Install the views of every method with data in the open project; tell installed ones."""
        from .methods import view_names

        p = self.state.project
        present = p.prompt_methods() if p is not None else {}
        for name in view_names():
            if name in self.method_views:
                try:
                    self.method_views[name].on_project(self)
                except Exception:
                    log.exception("the %s views failed to follow the project", name)
            elif name in present or self._method_has_data(name):
                try:
                    self.install_method_views(name)
                except Exception:
                    log.exception("the %s views failed to start", name)

    def _method_has_data(self, name: str) -> bool:
        """Whether the open project holds data of a method beyond its prompts (a DyEval tree
        before its first images); asked only of methods with views and no prompts."""
        from workstation.methods import METHODS, get_method

        p = self.state.project
        if p is None or name not in METHODS:
            return False
        try:
            return bool(get_method(name).has_data(p))
        except Exception:
            log.exception("asking %s whether the project has its data", name)
            return False

    def _fill_methods_menu(self) -> None:
        from workstation.methods import METHODS

        from .methods import view_names

        self.methods_menu.clear()
        names = view_names()
        if not names:
            a = self.methods_menu.addAction("(no other methods installed)")
            a.setEnabled(False)
        for name in names:
            desc = METHODS.entry(name).description if name in METHODS else ""
            a = self.methods_menu.addAction(f"{name}: {desc}" if desc else name)
            a.triggered.connect(lambda _=False, n=name: self.open_method(n))

    def show_tab(self, name: str) -> None:
        for i in range(self.tabs.count()):
            if self.tabs.tabText(i) == name:
                self.tabs.setCurrentIndex(i)
                return

    def calibration_panel(self) -> QWidget:
        """The calibration panel (created on first use; a placeholder until it is available)."""
        if self.calibration is None:
            try:
                from .methods.spatial.calibration.panel import CalibrationPanel

                self.calibration = CalibrationPanel(self.state)
            except ImportError as e:
                log.info("calibration panel not available: %s", e)
                self.calibration = CalibrationPlaceholder(
                    "The calibration panel is not installed in this build.")
            except Exception as e:
                log.exception("calibration panel failed to start")
                self.calibration = CalibrationPlaceholder(f"The calibration panel failed to start:\n{e}")
            self.calibration.setObjectName("calibrationPanel")
            self._calibration_tab.layout().addWidget(self.calibration)
        return self.calibration

    def _tab_changed(self, i: int) -> None:
        w = self.tabs.widget(i)
        on_review = w is self.review
        for a in self.review_actions:
            a.setEnabled(on_review)
        for k in ("undo", "redo"):  # a method's tab binds Ctrl+Z to its own judgement bar
            if k in getattr(self, "actions_by_id", {}):
                self.actions_by_id[k].setEnabled(on_review)
        if w is self._calibration_tab:
            self.calibration_panel()
        if on_review:
            self.viewer.left.view.setFocus()

    # ---- actions and menus --------------------------------------------------------------------------
    def _build_actions(self) -> None:
        c = self.controller
        v = self.viewer
        a: dict[str, QAction] = {}
        a["label_pass"] = make_action(self, "label_pass", lambda: c.record("PASS"))
        a["label_fail"] = make_action(self, "label_fail", lambda: c.record("FAIL"))
        a["label_undecidable"] = make_action(self, "label_undecidable", lambda: c.record("UNDECIDABLE"))
        a["notes"] = make_action(self, "notes", self.labeling.focus_notes)
        a["next"] = make_action(self, "next", c.next)
        a["prev"] = make_action(self, "prev", c.prev)
        a["twin"] = make_action(self, "twin", self.swap_twin)
        for layer in ("others", "secondary", "perturbed", "geometry", "labels"):
            a["layer_" + layer] = make_action(self, "layer_" + layer, lambda _=False, n=layer: v.toggle_layer(n))
        a["thicker"] = make_action(self, "thicker", lambda: v.set_line_width(v.line_width + 1))
        a["thinner"] = make_action(self, "thinner", lambda: v.set_line_width(v.line_width - 1))
        a["fit"] = make_action(self, "fit", v.fit)
        a["zoom_in"] = make_action(self, "zoom_in", lambda: v.zoom(1.25))
        a["zoom_out"] = make_action(self, "zoom_out", lambda: v.zoom(0.8))
        self.review_actions = list(a.values())
        a["undo"] = make_action(self, "undo", c.undo)
        a["redo"] = make_action(self, "redo", c.redo)
        a["goto"] = make_action(self, "goto", self.goto_dialog)
        a["browse"] = make_action(self, "browse", lambda: self.tabs.setCurrentWidget(self.browser))
        a["review"] = make_action(self, "review", lambda: self.tabs.setCurrentWidget(self.review))
        a["calibration"] = make_action(self, "calibration",
                                       lambda: self.tabs.setCurrentWidget(self._calibration_tab))
        a["theme"] = make_action(self, "theme", self.toggle_theme)
        a["open"] = make_action(self, "open", self.open_dialog)
        a["new"] = make_action(self, "new", self.new_dialog)
        a["audit_new"] = make_action(self, "audit_new", self.new_audit_set)
        a["find"] = make_action(self, "find", self.focus_search)
        a["help"] = make_action(self, "help", self.show_shortcuts)
        a["quit"] = make_action(self, "quit", self.close)
        self.actions_by_id = a

    def _build_menus(self) -> None:
        a = self.actions_by_id
        mb = self.menuBar()
        f = mb.addMenu("&File")
        f.addAction(a["new"])
        f.addAction(a["open"])
        snap = QAction("Open read-only snapshot…", self)
        snap.triggered.connect(lambda: self.open_dialog(snapshot=True))
        f.addAction(snap)
        self.recent_menu = QMenu("Open &recent", self)
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        f.addMenu(self.recent_menu)
        close = QAction("Close project", self)
        close.triggered.connect(self.close_project)
        f.addAction(close)
        f.addSeparator()
        imp = QAction("Import labels…", self)
        imp.triggered.connect(self.import_labels)
        f.addAction(imp)
        exp = QAction("Export labels…", self)
        exp.triggered.connect(self.export_labels)
        f.addAction(exp)
        f.addSeparator()
        f.addAction(a["quit"])

        e = mb.addMenu("&Label")
        for k in ("label_pass", "label_fail", "label_undecidable", "notes", "undo", "redo"):
            e.addAction(a[k])
        e.addSeparator()
        for k in ("next", "prev", "twin", "goto"):
            e.addAction(a[k])

        vm = mb.addMenu("&View")
        for k in ("browse", "review", "calibration"):
            vm.addAction(a[k])
        vm.addSeparator()
        for k in ("layer_others", "layer_secondary", "layer_perturbed", "layer_geometry", "layer_labels",
                  "thicker", "thinner", "fit", "zoom_in", "zoom_out"):
            vm.addAction(a[k])
        vm.addSeparator()
        vm.addAction(a["theme"])
        self.panels_menu = vm.addMenu("Panels")

        self.methods_menu = mb.addMenu("&Methods")
        self.methods_menu.aboutToShow.connect(self._fill_methods_menu)

        au = mb.addMenu("&Audit")
        au.addAction(a["audit_new"])
        self.audit_menu = QMenu("Open audit set", self)
        self.audit_menu.aboutToShow.connect(self._fill_audit_sets)
        au.addMenu(self.audit_menu)
        sa = QAction("Self-agreement on re-checks", self)
        sa.triggered.connect(self.show_self_agreement)
        au.addAction(sa)
        ag = QAction("Agreement between annotators…", self)
        ag.triggered.connect(self.show_agreement)
        au.addAction(ag)
        dq = QAction("Adjudicate disagreements", self)
        dq.triggered.connect(self.queue_disagreements)
        au.addAction(dq)
        au.addSeparator()
        an = QAction("Annotator…", self)
        an.triggered.connect(self.change_annotator)
        au.addAction(an)

        h = mb.addMenu("&Help")
        h.addAction(a["help"])

    def _build_status(self) -> None:
        sb = self.statusBar()
        self.project_label = QLabel("no project")
        self.project_label.setObjectName("projectLabel")
        self.counts_label = QLabel("")
        self.counts_label.setObjectName("dim")
        self.annotator_label = QLabel("")
        self.progress_label = QLabel("")
        self.progress_label.setObjectName("progressLabel")
        sb.addPermanentWidget(self.counts_label)
        sb.addPermanentWidget(self.annotator_label)
        sb.addPermanentWidget(self.progress_label)
        sb.addPermanentWidget(self.project_label)

    # ---- project ----------------------------------------------------------------------------------
    def open_project(self, folder: str | Path, read_only: bool = False, snapshot: bool = False) -> bool:
        self.labeling.notes.clearFocus()
        old = self.state.project
        old_folder = old.folder if old is not None and not old.read_only else None
        ok = project_dialogs.open_project(self.state, folder, self, read_only=read_only, snapshot=snapshot)
        if ok and old_folder is not None and (self.state.project is None or
                                              Path(self.state.project.folder).resolve() != Path(old_folder).resolve()
                                              or self.state.project.read_only):
            project_dialogs.release(old_folder)
        if ok:
            self.project_opened.emit()
        return ok

    def open_project_in_background(self, folder: str | Path, read_only: bool = False, early: Any = None) -> None:
        """Open a project without blocking the window: the store reads the samples and the
        checker evaluates them on a worker thread; the views fill in when it is done
        (`load_finished(ok)`). Locks and errors end in the same messages as `open_project`.
        `early`: this folder's load, started before the window (`ui.loading.EarlyLoad`)."""
        folder = Path(folder)
        if early is not None and (self._load_worker is not None or early.folder != folder
                                  or early.read_only != read_only):
            early.discard()  # not this open's: its project is closed when it ends
            early = None
        if (self._load_worker is not None or not project_dialogs.is_project(folder)
                or project_dialogs.is_open_here(folder)):
            if early is not None:  # it holds the project: gone before the open here
                early.discard()
                early.thread.join()
            ok = self.open_project(folder, read_only=read_only) if self._load_worker is None else False
            self.load_finished.emit(ok)
            return
        self.statusBar().showMessage(f"Opening {folder.name}…")
        self.browser.count_label.setText(f"opening {folder.name}…")
        self.browser.hint.setText(f"Reading {folder.name}: its samples appear here once they are loaded.")
        self.project_label.setText(f"opening {folder.name}…")
        QApplication.setOverrideCursor(Qt.BusyCursor)
        # the samples first: the window shows them while the checker evaluates them. A plain
        # thread starts the load at once (a worker of the worker library would wait for its
        # first import, ≈0.2 s, on this thread)
        closings = self._closings
        if early is not None:
            self._load_worker = early.thread
            early.then(lambda result, ok: self._deliver_loaded(result, folder, read_only, ok, closings))
        else:
            worker = threading.Thread(target=self._load_in_thread, args=(folder, read_only, closings),
                                      name="project-load")
            self._load_worker = worker
            worker.start()
        threading.Thread(target=_warm_method_imports, name="warm-imports", daemon=True).start()

    def _load_in_thread(self, folder: Path, read_only: bool, closings: int) -> None:
        """The background load (a thread of its own): its result or error goes to the GUI
        thread through `_loaded_in_background`."""
        from .loading import load_project  # no Qt module is imported off the GUI thread

        try:
            result: Any = load_project(folder, read_only, False, False)
            ok = True
        except Exception as e:  # noqa: BLE001 - reported on the GUI thread (`_load_failed`)
            result, ok = e, False
        self._deliver_loaded(result, folder, read_only, ok, closings)

    def _deliver_loaded(self, result: Any, folder: Path, read_only: bool, ok: bool, closings: int) -> None:
        """A background load's result or error to the GUI thread (from any thread)."""
        try:
            self._loaded_in_background.emit(result, folder, read_only, ok, closings)
        except RuntimeError:  # the window is gone (its process is leaving)
            if ok:
                result.project.close()

    def _on_loaded_in_background(self, result: Any, folder: Path, read_only: bool, ok: bool, closings: int
                                 ) -> None:
        self._load_worker = None
        QApplication.restoreOverrideCursor()
        if closings != self._closings:  # the window was closed while the project loaded: not adopted
            self._show_project_label()
            if ok:
                result.project.close()
            return
        if ok:
            self._adopt_loaded(result, folder)
        else:
            self._load_failed(result, folder, read_only)

    def _adopt_loaded(self, loaded: Any, folder: Path) -> None:
        old = self.state.project
        if old is not None and not old.read_only:
            project_dialogs.release(old.folder)
        # the checker starts before the views take the samples, so that the two overlap; its
        # verdicts reach this (GUI) thread after the adoption below, whatever finishes first
        checking = loaded.verdicts is None and loaded.dataset.n > 0
        if checking:
            self._check_in_background(loaded.dataset, loaded.config, folder)
        self.state.adopt(loaded)
        project_dialogs.mark_open(folder, writable=not loaded.project.read_only)
        n = loaded.dataset.n
        if checking:
            self.statusBar().showMessage(f"opened {folder.name}: {n:,} samples — the checker is "
                                         "evaluating them…")
        else:
            self.statusBar().showMessage(f"opened {folder.name}: {n:,} samples", 6000)
        # the annotator's name is asked at the first label, so browsing never waits on a dialog
        self.project_opened.emit()
        self.load_finished.emit(True)

    def _check_in_background(self, dataset: Any, cfg: Any, folder: Path) -> None:
        """Evaluate the adopted project's verdicts on a thread of its own, started at once so
        that it runs while the views take the samples (a worker of the pool would start only
        once the event loop runs again, after the adoption); the views take the verdicts when
        they are ready (`verdicts_checked` is emitted then)."""
        worker = threading.Thread(target=self._check_in_thread, args=(dataset, cfg, folder),
                                  name="project-check")
        self._check_worker = worker
        worker.start()

    def _check_in_thread(self, dataset: Any, cfg: Any, folder: Path) -> None:
        """The background check (a thread of its own): its verdicts or error go to the GUI thread
        through `_checked_in_background`."""
        from .loading import evaluate_active  # no Qt module is imported off the GUI thread

        try:
            result: Any = evaluate_active(dataset, cfg)
            ok = True
        except Exception as e:  # noqa: BLE001 - reported on the GUI thread (`_on_checked_in_background`)
            result, ok = e, False
        try:
            self._checked_in_background.emit(result, dataset, folder, ok)
        except RuntimeError:  # the window is gone (its process is leaving)
            pass

    def _on_checked_in_background(self, result: Any, dataset: Any, folder: Path, ok: bool) -> None:
        self._check_worker = None
        if ok:
            if self.state.verdicts_ready(*result):
                if not self.state.draft_restored:  # else the status bar says the draft is back
                    self.statusBar().showMessage(f"opened {folder.name}: {dataset.n:,} samples", 6000)
        elif dataset is self.state.dataset:
            self.state.checking = False
            log.error("the checker failed on %s: %s", folder, result)
            self.statusBar().showMessage(f"the checker failed on {folder.name}: {result}")
            if QApplication.platformName() != "offscreen":
                QMessageBox.critical(self, "The checker failed", f"{folder.name}: {result}")
        self.verdicts_checked.emit()

    def _load_failed(self, error: BaseException, folder: Path, read_only: bool) -> None:
        from workstation.store import ProjectLocked, ProjectReadOnly

        self.browser._update_count()
        self._show_project_label()
        if isinstance(error, (ProjectLocked, ProjectReadOnly)):
            # the lock message and the snapshot, or the offer to open a read-only folder read-only
            ok = self.open_project(folder, read_only=read_only)
        else:
            QMessageBox.critical(self, "Cannot open the project", str(error))
            ok = False
        self.load_finished.emit(ok)

    def close_project(self) -> None:
        p = self.state.project
        if p is None:
            return
        self.labeling._save_notes_now()
        if not p.read_only:
            project_dialogs.release(p.folder)
        self.state.close_project()
        self.state.project_changed.emit()
        # the message of its opening ("opened X: N samples") must not outlive the project
        self.statusBar().showMessage(f"closed {Path(p.folder).name}", 6000)

    def ensure_annotator(self) -> None:
        """Ask the annotator's name once per project (stored in the project)."""
        st = self.state
        if st.project is None or st.project.read_only or st.annotator:
            return
        name = self.ask_annotator()
        if name:
            st.set_annotator(name)
            self._update_status()

    def ask_annotator(self) -> str | None:
        if self._ask_annotator_override is not None:
            return self._ask_annotator_override()
        name = self.state.project.folder.name if self.state.project is not None else ""
        return project_dialogs.ask_annotator(self, name, self.state.annotator)

    def change_annotator(self) -> None:
        if self.state.project is None or self.state.project.read_only:
            return
        name = project_dialogs.ask_annotator(self, self.state.project.folder.name, self.state.annotator)
        if name:
            self.labeling._save_notes_now()
            self.state.set_annotator(name)
            self.controller._reload_done()
            self.controller._on_current(self.state.current)
            self._update_status()

    def open_dialog(self, snapshot: bool = False) -> None:
        folder = project_dialogs.choose_folder(self, "Open project folder")
        if folder:
            self.open_project(folder, snapshot=snapshot)

    def new_dialog(self) -> None:
        folder = project_dialogs.choose_folder(self, "Folder for the new project")
        if folder and project_dialogs.create_project(self, folder):
            self.open_project(folder)

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        items = project_dialogs.recent_projects()
        if not items:
            a = self.recent_menu.addAction("(none)")
            a.setEnabled(False)
        for f in items:
            a = self.recent_menu.addAction(f)
            a.triggered.connect(lambda _=False, ff=f: self.open_project(ff))

    def _on_project(self) -> None:
        self._sync_method_views()
        self._show_project_label()
        self._update_status()

    def _show_project_label(self) -> None:
        """The window's title and the status bar's project label: the open project, or none."""
        p = self.state.project
        if p is None:
            self.setWindowTitle("T2I Audit Workstation")
            self.project_label.setText("no project — File → Open (Ctrl+O)")
        else:
            ro = "  [read-only snapshot]" if p.read_only else ""
            self.setWindowTitle(f"{p.folder.name}{ro} — T2I Audit Workstation")
            self.project_label.setText(f"{p.folder.name}{ro}")
            self.project_label.setToolTip(str(p.folder))

    def _show_message(self, text: str) -> None:
        self.statusBar().showMessage(text, 6000)

    def _update_counts(self, *_: Any) -> None:
        st = self.state
        self.counts_label.setText("" if st.blind else verdict_counts_text(st.verdicts))

    def _update_status(self, *_: Any) -> None:
        st = self.state
        self.counts_label.setText("" if st.blind else verdict_counts_text(st.verdicts))
        self.annotator_label.setText(f"annotator: {st.annotator}" if st.annotator else "annotator: —")
        done, total = self.controller.progress()
        what = "in the queue" if st.queue else "samples"
        self.progress_label.setText(f"labelled {done} / {total} {what}" if st.project is not None else "")

    # ---- review ----------------------------------------------------------------------------------
    def review_from_browse(self, row: int) -> None:
        """Make the filtered samples the queue, starting at `row`, and show the pair viewer."""
        rows = self.browser.model.all_rows()
        if self.state.blind and self.state.audit_set_id is not None:
            self.state.message.emit("left the blind audit queue; reopen it from Audit → Open audit set")
        self.controller.set_plain_queue(rows, start_row=row if row in rows else None)
        if row not in rows:
            self.state.set_current(row)
        self.tabs.setCurrentWidget(self.review)

    def _on_current(self, row: int) -> None:
        st = self.state
        if st.queue:
            ahead = st.queue[st.queue_pos + 1: st.queue_pos + 1 + PREFETCH_AHEAD]
        elif st.dataset is not None and row >= 0:
            ahead = list(range(row + 1, min(row + 1 + PREFETCH_AHEAD, st.dataset.n)))
        else:
            ahead = []
        self.viewer.prefetch_rows(ahead)
        self._update_status()

    def swap_twin(self) -> None:
        if self.viewer.right_row >= 0:
            self.labeling._save_notes_now()
            self.state.set_current(self.viewer.right_row)

    def goto_dialog(self) -> None:
        if self.state.dataset is None:
            return
        dlg = GotoDialog(self.state.dataset.samples.sample_id.tolist(), self)
        if dlg.exec() and dlg.value():
            if self.controller.goto_sample(dlg.value()):
                self.tabs.setCurrentWidget(self.review)

    def _queue_finished(self) -> None:
        done, total = self.controller.progress()
        msg = f"End of the queue: {done} of {total} labelled."
        if self.state.audit_set_id is not None:
            from .methods.spatial.audit_dialog import format_agreement, self_agreement_report

            msg += "  Self-agreement: " + format_agreement(self_agreement_report(self.state, self.state.audit_set_id))
        self.statusBar().showMessage(msg, 15000)

    # ---- audit --------------------------------------------------------------------------------------
    def new_audit_set(self) -> None:
        from .methods.spatial.audit_dialog import AuditSetDialog

        st = self.state
        if st.project is None or st.dataset is None or st.dataset.n == 0:
            QMessageBox.information(self, "New audit set", "Open a project with samples first.")
            return
        if st.project.read_only:
            QMessageBox.information(self, "New audit set", "This project is open read-only.")
            return
        dlg = AuditSetDialog(st, self)
        if dlg.exec() and dlg.audit_set_id is not None:
            self.start_audit_set(dlg.audit_set_id)

    def start_audit_set(self, audit_set_id: int) -> None:
        self.labeling._save_notes_now()
        n = self.controller.start_audit_set(audit_set_id)
        blind = " (blind)" if self.state.blind else ""
        self.state.message.emit(f"audit set #{audit_set_id}: {n} items{blind}")
        self.tabs.setCurrentWidget(self.review)

    def _fill_audit_sets(self) -> None:
        self.audit_menu.clear()
        sets = self.state.project.audit_sets() if self.state.project is not None else []
        if not sets:
            a = self.audit_menu.addAction("(none)")
            a.setEnabled(False)
        for s in sets:
            blind = ", blind" if s["blind"] else ""
            a = self.audit_menu.addAction(f"#{s['audit_set_id']} {s['name']} ({s['size']} items{blind})")
            a.triggered.connect(lambda _=False, aid=s["audit_set_id"]: self.start_audit_set(aid))

    def show_self_agreement(self) -> None:
        from .methods.spatial.audit_dialog import format_agreement, self_agreement_report

        r = self_agreement_report(self.state, self.state.audit_set_id)
        lines = [format_agreement(r)]
        for ann, x in r["by_annotator"].items():
            lines.append(f"  {ann}: {format_agreement(x)}")
        QMessageBox.information(self, "Self-agreement on re-checks", "\n".join(lines))

    def show_agreement(self) -> None:
        from .methods.spatial.annotators import AgreementDialog

        dlg = AgreementDialog(self.state, self)
        dlg.adjudicate.connect(self.adjudicate)
        dlg.exec()

    def queue_disagreements(self) -> None:
        from .methods.spatial.annotators import disagreement_rows

        rows = disagreement_rows(self.state)
        if not rows:
            self.state.message.emit("no disagreement between annotators")
            return
        self.adjudicate(rows)

    def adjudicate(self, rows: list[int]) -> None:
        self.labeling._save_notes_now()
        self.controller.set_plain_queue(list(rows))
        self.state.message.emit(f"{len(rows)} disagreement(s) to adjudicate")
        self.tabs.setCurrentWidget(self.review)

    def import_labels(self, path: str | None = None) -> None:
        from .methods.spatial.annotators import import_label_file

        if not path:
            path, _ = QFileDialog.getOpenFileName(self, "Import labels", "",
                                                  "Label files (*.json *.csv *.parquet)")
        if not path:
            return
        try:
            _n, msg = import_label_file(self.state, path)
        except (WorkstationError, ValueError) as e:
            QMessageBox.critical(self, "Cannot import labels", str(e))
            return
        self.controller._reload_done()
        self.controller._on_current(self.state.current)
        self.state.message.emit(msg)

    def export_labels(self, path: str | None = None) -> None:
        from .methods.spatial.annotators import export_label_file

        if not path:
            path, _ = QFileDialog.getSaveFileName(self, "Export labels", "labels.csv",
                                                  "CSV (*.csv);;SpatialBench-UC JSON (*.json);;Parquet (*.parquet)")
        if not path:
            return
        try:
            n = export_label_file(self.state, path)
        except (WorkstationError, ValueError) as e:
            QMessageBox.critical(self, "Cannot export labels", str(e))
            return
        self.state.message.emit(f"exported {n} label(s) to {path}")

    # ---- misc -----------------------------------------------------------------------------------------
    def focus_search(self) -> None:
        self.tabs.setCurrentWidget(self.browser)
        self.browser.filters.text.setFocus()
        self.browser.filters.text.selectAll()

    def show_shortcuts(self) -> None:
        self._sheet = ShortcutSheet(self)
        self._sheet.show()

    def toggle_theme(self) -> None:
        name = "light" if theme.current().name == "dark" else "dark"
        theme.apply_theme(QApplication.instance(), name)
        project_dialogs.settings().setValue("theme", name)

    def _restore_geometry(self) -> None:
        g = project_dialogs.settings().value("geometry")
        if isinstance(g, (QByteArray, bytes)) and g:
            self.restoreGeometry(g)
        else:
            self.resize(1500, 940)

    def closeEvent(self, e: QCloseEvent) -> None:
        self._closings += 1
        try:
            self.labeling._save_notes_now()
        except Exception:
            log.exception("saving notes on close")
        project_dialogs.settings().setValue("geometry", self.saveGeometry())
        p = self.state.project
        if p is not None:
            if not p.read_only:
                project_dialogs.release(p.folder)
            self.state.close_project()
            # the views drop what they hold of the project (table, pair index, plots): a closed
            # window that lives on (a test, a benchmark, a second window) keeps no dataset alive
            self.state.project_changed.emit()
        self.images.clear()
        self.thumbs.clear()
        self.images.wait(2000)
        self.thumbs.wait(2000)
        super().closeEvent(e)
        QTimer.singleShot(0, lambda: None)
