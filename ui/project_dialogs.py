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
from dataclasses import dataclass
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
        return QSettings(path, QSettings.Format.IniFormat)
    return QSettings("t2i-audit", "workstation")


def recent_projects() -> list[str]:
    v: Any = settings().value("recent_projects", [])
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


@dataclass(frozen=True)
class ReadOnlyOffer:
    """A way to open a project read-only that a warning offers when it cannot be opened for
    writing: the warning's texts (`text` names the project as {name}), its open button, whether
    that button is the default, how the project is then opened and what the status bar says."""

    name: str
    title: str
    text: str
    informative: str
    button: tuple[str, str]  # the open button's text and object name
    default_open: bool
    open_as: dict[str, bool]
    opened: str


SNAPSHOT = ReadOnlyOffer(
    "lockedMessage", "Project in use", "<b>{name}</b> is open in another window or process.",
    "Only one window can change a project at a time. You can open a read-only snapshot of it as last "
    "saved: you can browse and look at pairs, but not label.",
    ("Open read-only snapshot", "openSnapshot"), default_open=False, open_as={"snapshot": True},
    opened="opened a read-only snapshot of {name}")
READ_ONLY_FOLDER = ReadOnlyOffer(
    "readOnlyFolderMessage", "Read-only folder", "<b>{name}</b> is in a folder that cannot be written.",
    "You can open it read-only: browse, look at pairs and write reports elsewhere, but not label. To "
    "label, copy the project to a folder you can write.",
    ("Open read-only", "openReadOnly"), default_open=True, open_as={"read_only": True},
    opened="opened {name} read-only (its folder cannot be written)")


def ask_open_read_only(parent: QWidget | None, folder: str | Path, reason: str, offer: ReadOnlyOffer) -> bool:
    """A warning that says `reason` and offers `offer` beside Cancel: True when the user takes it."""
    box = QMessageBox(parent)
    box.setObjectName(offer.name)
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle(offer.title)
    box.setText(offer.text.format(name=Path(folder).name))
    box.setInformativeText(f"{reason}\n\n{offer.informative}")
    ro = box.addButton(offer.button[0], QMessageBox.ButtonRole.AcceptRole)
    ro.setObjectName(offer.button[1])
    cancel = box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(ro if offer.default_open else cancel)
    box.exec()
    return box.clickedButton() is ro


def _open_read_only(state: AppState, parent: QWidget | None, folder: Path, reason: str, offer: ReadOnlyOffer,
                    ask: bool = True) -> bool:
    """Open `folder` as `offer` says, once the user takes it (when `ask`); False if it was not
    opened (message shown)."""
    if ask and not ask_open_read_only(parent, folder, reason, offer):
        return False
    try:
        state.open_project(folder, **offer.open_as)
    except ProjectError as e:
        QMessageBox.critical(parent, "Cannot open the project", str(e))
        return False
    state.message.emit(offer.opened.format(name=folder.name))
    return True


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
        if not _open_read_only(state, parent, folder, str(e), SNAPSHOT, ask=not read_only):
            return False
    except ProjectReadOnly as e:
        if not _open_read_only(state, parent, folder, str(e), READ_ONLY_FOLDER):
            return False
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


#: how the window says an existing file is kept: only a path chosen in a save dialog (which asks
#: before it replaces a file) replaces one (`workstation.util.outpaths`)
SAVE_DIALOG_HINT = "it is replaced only when chosen in the save dialog, which asks first"


def output_projects(project: Any) -> list[Path]:
    """The project folder an export from the window must keep out of (`util.outpaths`)."""
    project = getattr(getattr(project, "state", None), "project", project)
    return [Path(project.folder)] if project is not None else []


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
