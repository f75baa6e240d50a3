"""The main window: the shell that hosts every method's views, the menus and the status bar.

It knows no method by name: the views of the `ui.methods` registry add their pages as tabs
(`add_panel(name, widget, "tab")`), and the window shows only the tabs whose method has data in
the open project (a Start page when none has). The Label menu, the status bar's progress and
Audit → New audit set… act on the method of the tab shown, through its views (its judging
controller, its audit population). Other panels join the same way:

    window.add_panel("Jobs", JobPanel(state), "bottom")   # a dock: "left" | "right" | "bottom" | "top"
    window.add_panel("Reports", ReportView(state), "tab")  # a tab

Docks are listed in View → Panels so they can be shown again after being closed. Opening a
project in the background is `ui.opening`; the menus are `ui.menus`; the status bar is
`ui.status_bar`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QByteArray, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent
from PySide6.QtWidgets import QApplication, QDockWidget, QMainWindow, QScrollArea, QTabWidget, QWidget

from . import blind_routes, menus, place, project_dialogs, shortcuts, status_bar, theme
from .image_cache import ImageCache
from .opening import BackgroundOpen
from .start_page import StartPage
from .state import AppState
from .window_parts import WindowParts

if TYPE_CHECKING:
    from .method_views import MethodViews

log = logging.getLogger(__name__)

DOCK_AREAS = {"left": Qt.DockWidgetArea.LeftDockWidgetArea, "right": Qt.DockWidgetArea.RightDockWidgetArea,
              "bottom": Qt.DockWidgetArea.BottomDockWidgetArea, "top": Qt.DockWidgetArea.TopDockWidgetArea}


class MainWindow(QMainWindow, WindowParts):
    project_opened = Signal()
    load_finished = Signal(bool)  # a background open ended (True: the project is open)
    verdicts_checked = Signal()  # the background check of a project opened in the background ended

    def __init__(self, state: AppState | None = None, ask_annotator: Callable[[], str | None] | None = None
                 ) -> None:
        super().__init__()
        self.state = state or AppState()
        self.setWindowTitle(status_bar.TITLE)
        self.setObjectName("mainWindow")
        self.images = ImageCache()
        self.thumbs = ImageCache(max_side=300, max_bytes=64 * 1024 * 1024)
        self.docks: dict[str, QDockWidget] = {}
        self.panels: dict[str, QWidget] = {}
        # installed views of each method (ui.methods registry)
        self.method_views: dict[str, MethodViews[Any]] = {}
        self._opened: set[str] = set()  # methods opened from the Methods menu (shown without data)
        self._ask_annotator_override = ask_annotator
        self.closings = 0  # closes of this window: a load started before one is not adopted
        self.opener = BackgroundOpen(self)
        self.tabs = QTabWidget(self)
        self.tabs.setObjectName("mainTabs")
        self.tabs.setDocumentMode(True)
        self.start_page = StartPage(self)
        self.start_page.open_requested.connect(lambda f: self.open_project_in_background(f))
        self.tabs.addTab(self.start_page, "Start")
        # the tabs scroll rather than force the window past a small screen (1024 × 700)
        self.central = QScrollArea(self)
        self.central.setObjectName("centralScroll")
        self.central.setWidgetResizable(True)
        self.central.setFrameShape(QScrollArea.Shape.NoFrame)
        self.central.setWidget(self.tabs)
        self.setCentralWidget(self.central)
        self.actions_by_id: dict[str, QAction] = {}
        self.tab_actions: dict[tuple[str, int], QAction] = {}  # (method, page) -> its tab key
        menus.build_menus(self)
        self._build_status()
        self._install_eager_views()
        self.tabs.currentChanged.connect(self._tab_changed)
        s = self.state
        s.message.connect(lambda text: self.statusBar().showMessage(text, 6000))
        s.project_changed.connect(self._on_project)
        s.annotator_changed.connect(self._update_status)
        s.about_to_close.connect(self._leave_all)  # notes typed and not saved yet
        s.about_to_close.connect(lambda: place.save_place(self))  # per project: tab, queues, layout
        self.project_opened.connect(lambda: place.restore_place(self))
        self._restore_geometry()
        self._on_project()

    # ---- panels and method views ------------------------------------------------------------------
    def add_panel(self, name: str, widget: QWidget, area: str = "right") -> QWidget:
        """Host a widget: `area` "tab" adds a tab; "left" / "right" / "bottom" / "top" adds a dock
        (listed in View → Panels). Returns the tab page or the dock."""
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
        """The jobs panel, docked at the bottom and hidden until Ctrl+J (a broken one is logged)."""
        if "Jobs" in self.panels:
            return
        try:
            from .jobs_menu import install_jobs_menu
            from .jobs_panel import install

            install(self, "bottom")
        except Exception:
            log.exception("the jobs panel failed to start")
            return
        dock = self.docks["Jobs"]
        dock.hide()
        toggle = dock.toggleViewAction()
        toggle.setShortcuts(shortcuts.key_sequences("jobs"))
        toggle.setText("Jobs panel")
        shortcuts.register_action(toggle, shortcuts.BY_ID["jobs"].help, "Navigate")
        install_jobs_menu(self)  # Jobs → New job…, Show jobs panel, Cancel / Resume, Remove run…
        kept = getattr(self, "kept_layout", None)  # the project's layout (ui/place.py), docks included
        if kept is not None:
            self.restoreState(kept)

    def install_method_views(self, name: str) -> MethodViews[Any]:
        """Install a method's views (pages, menus) once; returns them."""
        from .methods import views_for

        views = self.method_views.get(name)
        if views is None:
            views = views_for(name)
            views.install(self)
            self.method_views[name] = views
            shortcuts.bind_tabs(self, views)
            c = views.controller(self)
            if c is not None:
                c.changed.connect(self._update_status)
                c.policy_changed.connect(self._sync_tabs)
                blind_routes.tracker(c)  # pauses of its blind audits: what they showed, when they end
            views.on_project(self)
        return views

    def _install_eager_views(self) -> None:
        """Views that are built with the window (``eager``: the spatial Browse / Review tabs, which
        a project opened in the background fills while it loads)."""
        from .methods import view_names, views_for

        for name in view_names():
            try:
                if getattr(views_for(name), "eager", False):
                    self.install_method_views(name)
            except Exception:
                log.exception("the %s views failed to start", name)

    def open_method(self, name: str) -> None:
        """Show a method's tabs (Methods menu), even before the project holds its data."""
        views = self.install_method_views(name)
        self._opened.add(name)
        self._sync_tabs()
        pages = views.pages(self)
        if pages:
            self.show_page(pages[0])

    def _sync_method_views(self) -> None:
        """Install the views of every method with data in the open project; tell installed ones."""
        from workstation.methods import METHODS

        from .methods import view_names

        p = self.state.project
        present = p.samples.prompt_methods() if p is not None else {}
        for name in view_names():
            if name in self.method_views:
                try:
                    self.method_views[name].on_project(self)
                except Exception:
                    log.exception("the %s views failed to follow the project", name)
            elif p is not None and name in METHODS and (name in present or self._has_data(name)):
                try:
                    self.install_method_views(name)
                except Exception:
                    log.exception("the %s views failed to start", name)

    def _has_data(self, name: str) -> bool:
        from workstation.methods import get_method

        try:
            return bool(get_method(name).has_data(self.state.project))
        except Exception:
            log.exception("asking %s whether the project has its data", name)
            return False

    def current_views(self) -> MethodViews[Any] | None:
        """The views of the method whose tab is shown (None: the Start page or another panel)."""
        page = self.tabs.currentWidget()
        for views in self.method_views.values():
            if any(p is page for p in views.pages(self)):
                return views
        return None

    def _sync_tabs(self, *_: Any) -> None:
        """Show the tabs of the methods whose data the project holds (or opened from the Methods
        menu), the Start page when there are none; disable what the policy closes."""
        shown_any = False
        for name, views in self.method_views.items():
            try:
                show = self.state.project is not None and (name in self._opened or views.has_data(self))
            except Exception:
                log.exception("asking the %s views whether they have data", name)
                show = False
            for page in views.pages(self):
                i = self.tabs.indexOf(page)
                self.tabs.setTabVisible(i, show)
                ok = getattr(views, "allowed", lambda _w, _p: True)(self, page)
                self.tabs.setTabEnabled(i, ok)
                self.tabs.setTabToolTip(i, "" if ok else "not during a blind audit: it shows what the audit hides")
            shown_any = shown_any or show
        self.tabs.setTabVisible(self.tabs.indexOf(self.start_page), not shown_any)
        shortcuts.sync_tabs(self)
        cur = self.tabs.currentIndex()
        if cur < 0 or not self.tabs.isTabVisible(cur) or not self.tabs.isTabEnabled(cur):
            first = next((i for i in range(self.tabs.count()) if self.tabs.isTabVisible(i)
                          and self.tabs.isTabEnabled(i)), 0)
            self.tabs.setCurrentIndex(first)
        self.start_page.refresh()

    def show_tab(self, name: str) -> None:
        for i in range(self.tabs.count()):
            if self.tabs.tabText(i) == name:
                self.show_page(self.tabs.widget(i))  # type: ignore[arg-type]  # i < count()
                return

    def show_page(self, page: QWidget) -> bool:
        """Show a tab page if the project shows it and the policy allows it (else say why)."""
        i = self.tabs.indexOf(page)
        if i < 0 or not self.tabs.isTabVisible(i):
            self.statusBar().showMessage("this project has no data for that page", 6000)
            return False
        if not self.tabs.isTabEnabled(i):
            self.statusBar().showMessage(f"{self.tabs.tabText(i)}: {self.tabs.tabToolTip(i)}", 6000)
            return False
        self.tabs.setCurrentIndex(i)
        return True

    def _tab_changed(self, _i: int) -> None:
        page = self.tabs.currentWidget()
        for views in self.method_views.values():  # each views' actions follow whether its tab is shown
            hook = getattr(views, "tab_shown", None)
            if hook is not None:
                hook(self, page)
        shown = self.current_views()
        target = shown.focus_target(self) if shown is not None else None
        fw = QApplication.focusWidget()
        if target is not None and target.isVisible() and (fw is None or not target.isAncestorOf(fw)):
            target.setFocus()
        self._update_status()

    def _build_status(self) -> None:
        status_bar.build(self)

    def _update_status(self, *_: Any) -> None:
        status_bar.update(self)

    # ---- project --------------------------------------------------------------------------------------
    def open_project(self, folder: str | Path, read_only: bool = False, snapshot: bool = False) -> bool:
        old = self.state.project
        old_folder = old.folder if old is not None and not old.read_only else None
        ok = project_dialogs.open_project(self.state, folder, self, read_only=read_only, snapshot=snapshot)
        new = self.state.project
        if ok and old_folder is not None and (new is None or new.read_only
                                              or Path(new.folder).resolve() != Path(old_folder).resolve()):
            project_dialogs.release(old_folder)
        if ok:
            self.project_opened.emit()
        return ok

    def open_project_in_background(self, folder: str | Path, read_only: bool = False, early: Any = None) -> None:
        """Open a project without blocking the window (`ui.opening`); `load_finished(ok)` ends it."""
        self.opener.start(folder, read_only=read_only, early=early)

    def adopt_loaded(self, loaded: Any) -> None:
        """Take a project read off the GUI thread (`ui.loading.load_project`): the views that
        read it ahead (``expect``) take what was read instead of reading it again."""
        for views in self.method_views.values():
            expect = getattr(views, "expect", None)
            if expect is not None:
                expect(self, loaded)
        self.state.set_project(loaded.project, annotator=loaded.annotator)

    def close_project(self) -> None:
        p = self.state.project
        if p is None:
            return
        folder = p.folder
        if not p.read_only:
            project_dialogs.release(folder)
        self.state.close_project()
        self.state.project_changed.emit()
        self.statusBar().showMessage(f"closed {Path(folder).name}", 6000)

    def ask_annotator(self) -> str | None:
        if self._ask_annotator_override is not None:
            return self._ask_annotator_override()
        name = self.state.project.folder.name if self.state.project is not None else ""
        return project_dialogs.ask_annotator(self, name, self.state.annotator)

    def open_dialog(self, snapshot: bool = False) -> None:
        folder = project_dialogs.choose_folder(self, "Open project folder")
        if not folder:
            return
        if snapshot:
            self.open_project(folder, snapshot=True)
        else:
            self.open_project_in_background(folder)

    def new_dialog(self) -> None:
        folder = project_dialogs.choose_folder(self, "Folder for the new project")
        if folder and project_dialogs.create_project(self, folder):
            self.open_project(folder)

    def _on_project(self) -> None:
        if self.state.project is None:
            self._opened.clear()
        self._sync_method_views()
        self._sync_tabs()
        self.show_project_label()
        self._update_status()

    def show_project_label(self) -> None:
        """The window's title and the status bar's project label: the open project, or none."""
        status_bar.show_project(self)

    # ---- misc -----------------------------------------------------------------------------------------
    def show_shortcuts(self) -> None:
        self._sheet = shortcuts.ShortcutSheet(self)
        self._sheet.show()

    def toggle_theme(self) -> None:
        name = "light" if theme.current().name == "dark" else "dark"
        # the app is a QApplication
        theme.apply_theme(QApplication.instance(), name)  # type: ignore[arg-type]
        project_dialogs.settings().setValue("theme", name)

    def _restore_geometry(self) -> None:
        g = project_dialogs.settings().value("geometry")
        if isinstance(g, (QByteArray, bytes)) and g:
            self.restoreGeometry(g)
        else:
            self.resize(1500, 940)

    def _leave_all(self) -> None:
        """Every judging page saves the notes typed and not saved yet."""
        for views in self.method_views.values():
            c = views.controller(self)
            if c is not None:
                try:
                    c._leave()
                except Exception:
                    log.exception("saving notes")

    def closeEvent(self, e: QCloseEvent) -> None:  # noqa: N802
        self.closings += 1
        self.opener.cancel()  # a project still being read is not wanted any more
        self._leave_all()
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
