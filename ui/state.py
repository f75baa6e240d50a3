"""The application's state: the open project and the annotator (an evented model, no views).

Views subscribe to the signals; the state never calls a widget. Each method's live state (its
data, live config, results and judging queue) is an object of its own
(`ui.session.MethodSession`; the spatial method's `ui.methods.spatial.session.SpatialSession`),
following `project_changed`: opening another project resets every one of them.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from workstation.store import Project

log = logging.getLogger(__name__)


class AppState(QObject):
    project_changed = Signal()  # a project was opened or closed (every method's live state follows)
    data_changed = Signal()  # the open project's data changed (a job added samples): every method's live state reads again
    annotator_changed = Signal()  # the annotator's name changed
    message = Signal(str)  # a line for the status bar
    about_to_close = Signal()  # the open project is about to close (views keep their place)

    def __init__(self) -> None:
        super().__init__()
        self.project: Project | None = None
        self.annotator: str = ""

    # ---- project ---------------------------------------------------------------------------
    def open_project(self, folder: str | Path, read_only: bool = False, snapshot: bool = False) -> None:
        """Open a project folder (raises what `Project.open` raises; the old one is closed first)."""
        self.close_project()
        project = Project.open_snapshot(folder) if snapshot else Project.open(folder, read_only=read_only)
        self.set_project(project)

    def set_project(self, project: Project, annotator: str | None = None) -> None:
        """Take an open project (``annotator``: its stored name when already read)."""
        self.close_project()
        self.project = project
        self.annotator = (project.get_setting("annotator", "") or "") if annotator is None else annotator
        self.project_changed.emit()

    def close_project(self) -> None:
        if self.project is not None:
            self.about_to_close.emit()
            self.project.close()
        self.project = None
        self.annotator = ""

    def reload(self) -> None:
        """The project's data changed on disk (a job's results were ingested): every method
        reads what it shows again."""
        if self.project is not None:
            self.data_changed.emit()

    # ---- annotator -------------------------------------------------------------------------
    def set_annotator(self, name: str) -> None:
        """The annotator's name (kept in the project for the next open)."""
        if self.project is None:
            return
        self.annotator = name.strip()
        if not self.project.read_only:
            try:
                self.project.set_setting("annotator", self.annotator)
            except Exception:  # noqa: BLE001 - the name holds until the window closes anyway
                log.exception("keeping the annotator's name")
        self.annotator_changed.emit()
