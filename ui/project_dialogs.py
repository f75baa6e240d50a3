"""Opening, creating and remembering projects; the lock message; the annotator's name.

Settings (recent projects, theme, window geometry) live in QSettings. `WORKSTATION_SETTINGS`
names an INI file to use instead of the user's settings (tests give each test its own).

A project is held for writing by one process (DuckDB allows one writer). A second process
gets `ProjectLocked` from the store; this module turns that into a message that offers a
read-only snapshot (`AppState.open_project(folder, snapshot=True)`). A second window of the
same process is told the same: folders open for writing in this process are remembered here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMessageBox, QWidget

from workstation.store import DB_NAME, Project, ProjectError, ProjectLocked, ProjectReadOnly

from .state import AppState

MAX_RECENT = 10
_OPEN_HERE: set[str] = set()  # folders this process holds for writing


def settings() -> QSettings:
    path = os.environ.get("WORKSTATION_SETTINGS")
    if path:
        return QSettings(path, QSettings.IniFormat)
    return QSettings("t2i-audit", "workstation")


def recent_projects() -> list[str]:
    v = settings().value("recent_projects", [])
    if isinstance(v, str):
        v = [v] if v else []
    return [str(x) for x in (v or []) if x]


def add_recent(folder: str | Path) -> None:
    f = str(Path(folder).resolve())
    items = [x for x in recent_projects() if x != f]
    items.insert(0, f)
    s = settings()
    s.setValue("recent_projects", items[:MAX_RECENT])
    s.sync()


def remove_recent(folder: str | Path) -> None:
    f = str(Path(folder).resolve())
    s = settings()
    s.setValue("recent_projects", [x for x in recent_projects() if x != f])
    s.sync()


def is_project(folder: str | Path) -> bool:
    return (Path(folder) / DB_NAME).is_file()


def _key(folder: str | Path) -> str:
    return str(Path(folder).resolve())


def is_open_here(folder: str | Path) -> bool:
    """Whether this process holds `folder` for writing."""
    return _key(folder) in _OPEN_HERE


def mark_open(folder: str | Path, writable: bool) -> None:
    """Remember a project just opened (recent list; the in-process lock when writable)."""
    if writable:
        _OPEN_HERE.add(_key(folder))
    add_recent(folder)


def release(folder: str | Path | None) -> None:
    if folder is not None:
        _OPEN_HERE.discard(_key(folder))


def _ask_open_read_only(parent: QWidget | None, name: str, title: str, text: str,
                        informative: str, button: tuple[str, str], default_open: bool) -> bool:
    """A warning that offers one way to open the project read-only beside Cancel: True when the
    user takes it. `button` is the open button's text and object name."""
    box = QMessageBox(parent)
    box.setObjectName(name)
    box.setIcon(QMessageBox.Warning)
    box.setWindowTitle(title)
    box.setText(text)
    box.setInformativeText(informative)
    ro = box.addButton(button[0], QMessageBox.AcceptRole)
    ro.setObjectName(button[1])
    cancel = box.addButton(QMessageBox.Cancel)
    box.setDefaultButton(ro if default_open else cancel)
    box.exec()
    return box.clickedButton() is ro


def ask_open_snapshot(parent: QWidget | None, folder: str | Path, reason: str) -> bool:
    """The lock message: True when the user chooses the read-only snapshot."""
    return _ask_open_read_only(
        parent, "lockedMessage", "Project in use",
        f"<b>{Path(folder).name}</b> is open in another window or process.",
        f"{reason}\n\nOnly one window can change a project at a time. You can open a read-only "
        "snapshot of it as last saved: you can browse and look at pairs, but not label.",
        ("Open read-only snapshot", "openSnapshot"), default_open=False)


def ask_open_read_only(parent: QWidget | None, folder: str | Path, reason: str) -> bool:
    """A project in a folder that cannot be written: True when the user opens it read-only."""
    return _ask_open_read_only(
        parent, "readOnlyFolderMessage", "Read-only folder",
        f"<b>{Path(folder).name}</b> is in a folder that cannot be written.",
        f"{reason}\n\nYou can open it read-only: browse, look at pairs and write reports elsewhere, "
        "but not label. To label, copy the project to a folder you can write.",
        ("Open read-only", "openReadOnly"), default_open=True)


def open_project(state: AppState, folder: str | Path, parent: QWidget | None = None,
                 read_only: bool = False, snapshot: bool = False) -> bool:
    """Open `folder` into `state`, handling the lock; False if it was not opened (message shown)."""
    folder = Path(folder)
    if not is_project(folder):
        QMessageBox.warning(parent, "Not a project", f"There is no project in {folder}\n(no {DB_NAME} there).")
        return False
    writable = not (read_only or snapshot)
    try:
        if _key(folder) in _OPEN_HERE:
            if writable:
                raise ProjectLocked(f"the project {folder} is already open for writing in this workstation")
            snapshot = True  # this process holds it for writing: read a snapshot
        old = state.project.folder if state.project is not None and not state.project.read_only else None
        if old is not None and _key(old) == _key(folder) and writable:
            return True  # already open here, in this window
        state.open_project(folder, read_only=read_only, snapshot=snapshot)
    except ProjectLocked as e:
        if not read_only and not ask_open_snapshot(parent, folder, str(e)):
            return False
        try:
            state.open_project(folder, snapshot=True)
        except ProjectError as e2:
            QMessageBox.critical(parent, "Cannot open the project", str(e2))
            return False
        state.message.emit(f"opened a read-only snapshot of {folder.name}")
    except ProjectReadOnly as e:
        if not ask_open_read_only(parent, folder, str(e)):
            return False
        try:
            state.open_project(folder, read_only=True)
        except ProjectError as e2:
            QMessageBox.critical(parent, "Cannot open the project", str(e2))
            return False
        state.message.emit(f"opened {folder.name} read-only (its folder cannot be written)")
    except ProjectError as e:
        QMessageBox.critical(parent, "Cannot open the project", str(e))
        return False
    if state.project is not None and not state.project.read_only:
        _OPEN_HERE.add(_key(folder))
    add_recent(folder)
    return True


def exports_folder(project: Any) -> Path:
    """Where export dialogs start: the project's ``exports`` folder (made when needed), never
    the process's working directory. Takes a project or a window with a state."""
    project = getattr(getattr(project, "state", None), "project", project)
    if project is None:
        return Path.home()
    folder = Path(project.folder) / "exports"
    try:
        folder.mkdir(exist_ok=True)
    except OSError:
        return Path(project.folder)
    return folder


def choose_folder(parent: QWidget | None, title: str) -> str:
    start = recent_projects()[0] if recent_projects() else str(Path.home())
    return QFileDialog.getExistingDirectory(parent, title, str(Path(start).parent))


def create_project(parent: QWidget | None, folder: str | Path) -> bool:
    """Create an empty project in `folder` (message on failure)."""
    try:
        Project.create(folder).close()
    except ProjectError as e:
        QMessageBox.critical(parent, "Cannot create the project", str(e))
        return False
    return True


def ask_annotator(parent: QWidget | None, project_name: str, current: str = "") -> str | None:
    """Asked once per project: the name stored with every label."""
    default = current or os.environ.get("USER", "") or os.environ.get("USERNAME", "")
    name, ok = QInputDialog.getText(
        parent, "Annotator",
        f"Your name for the labels in {project_name}\n(asked once for this project; "
        "change it later under Audit → Annotator):", text=default)
    if not ok or not name.strip():
        return None
    return name.strip()
