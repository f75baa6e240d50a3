"""Hidden staging folders: the files of an import written under a folder of their own, renamed
into place in one step.

`stage(parent, label, final_name)` makes ``<parent>/.t2i-staging-<label>-<random>/`` (exclusively,
with the marker file `MARKER` in it). The files are written there; `Staging.place` writes the
list of them into the marker and renames the folder to ``<parent>/<final_name>``; once the
caller has committed what names the files (a database transaction), `Staging.settle` removes the
marker. So a process killed at any point leaves either

* a hidden staging folder (killed while writing): nothing outside it was touched;
* the final folder with the marker in it (killed between the rename and the commit); or
* the final folder without a marker: done.

`clear_stale(parent, committed)` — called by whoever holds the folder exclusively (a project
opened for writing: DuckDB lets one process do so) — removes every staging folder that no live
`Staging` of this process owns, and for a final folder that still holds a marker asks
``committed(label)``: yes, the marker goes; no, the files the marker lists (and it) go, and the
folder when nothing else is left in it. Only what is recognisably this program's is removed:
folders named with `PREFIX` holding the marker, files a marker names; never a link, never a
folder of the user's.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from .jsonsafe import JSONInputError, dumps, loads_strict

PREFIX = ".t2i-staging-"
MARKER = ".t2i-staging"
MAX_MARKER_BYTES = 16 * 1024 * 1024
_LABEL = re.compile(r"[A-Za-z0-9._-]{1,128}", re.ASCII)

_live: set[str] = set()  # staging folders of this process still being written
_live_lock = threading.Lock()


def _write_marker(folder: Path, label: str, files: Sequence[str]) -> None:
    tmp = folder / (MARKER + ".new")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(dumps({"label": label, "files": list(files)}))
    os.replace(tmp, folder / MARKER)


def _read_marker(folder: Path) -> dict[str, object] | None:
    """The marker of ``folder`` (a regular file, not a link, strict JSON), None otherwise."""
    path = folder / MARKER
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_MARKER_BYTES:
            return None
        obj = loads_strict(path.read_bytes())
    except (OSError, JSONInputError):
        return None
    return obj if isinstance(obj, dict) and isinstance(obj.get("label"), str) else None


class Staging:
    """One staging folder (module doc)."""

    def __init__(self, parent: Path, label: str, final_name: str) -> None:
        if not _LABEL.fullmatch(label) or not _LABEL.fullmatch(final_name):
            raise ValueError(f"a staging label and folder name are plain names, got {label!r}, {final_name!r}")
        self.parent = Path(parent)
        self.label = label
        self.final = self.parent / final_name
        self.dir = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{label}-", dir=str(self.parent)))
        with _live_lock:
            _live.add(os.path.realpath(self.dir))
        try:
            _write_marker(self.dir, label, [])
        except BaseException:
            self.discard()
            raise
        self.placed = False

    def place(self, files: Sequence[str]) -> None:
        """Name ``files`` (names inside the folder) in the marker and rename the folder to its
        final name. A final folder that exists must be empty (it is replaced)."""
        _write_marker(self.dir, self.label, files)
        if os.path.isdir(self.final) and not os.path.islink(self.final):
            os.rmdir(self.final)  # an empty one; OSError when it holds anything
        os.rename(self.dir, self.final)
        self.placed = True

    def settle(self) -> None:
        """What names the files is committed: the marker goes."""
        try:
            os.unlink(self.final / MARKER)
        except FileNotFoundError:
            pass
        self._forget()

    def discard(self) -> None:
        """Undo: the staging folder, or what `place` put in the final folder, is removed."""
        from .paths import remove_tree_inside

        try:
            if self.placed:
                _remove_listed(self.final)
            else:
                remove_tree_inside(self.parent, self.dir)
        except OSError:
            pass
        finally:
            self._forget()

    def _forget(self) -> None:
        with _live_lock:
            _live.discard(os.path.realpath(self.dir))


def stage(parent: str | Path, label: str, final_name: str) -> Staging:
    """A new staging folder under ``parent`` (module doc)."""
    return Staging(Path(parent), label, final_name)


def _remove_listed(folder: Path) -> None:
    """The files a final folder's marker lists (plain names, regular files or links, never
    followed), the marker, and the folder when nothing else is left."""
    m = _read_marker(folder)
    files = m.get("files") if m is not None else None
    for name in files if isinstance(files, list) else []:
        if not isinstance(name, str) or not name or "/" in name or name in (".", "..") or "\0" in name:
            continue
        p = folder / name
        try:
            if not stat.S_ISDIR(os.lstat(p).st_mode):
                os.unlink(p)
        except OSError:
            pass
    for name in (MARKER, MARKER + ".new"):
        try:
            os.unlink(folder / name)
        except FileNotFoundError:
            pass
    try:
        os.rmdir(folder)
    except OSError:
        pass


def clear_stale(parent: str | Path, committed: Callable[[str], bool]) -> list[str]:
    """Remove what dead imports left under ``parent`` (module doc); returns the names of the
    entries it cleared. Call it only while holding ``parent`` exclusively."""
    from .paths import remove_tree_inside

    root = Path(parent)
    out: list[str] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return out
    for e in entries:
        try:
            if not e.is_dir(follow_symlinks=False):
                continue
            folder = Path(e.path)
            if e.name.startswith(PREFIX):
                with _live_lock:
                    live = os.path.realpath(folder) in _live
                # a folder of ours by its name; the marker (written first) says so too, unless the
                # process died between making the folder and writing it
                if not live and (_read_marker(folder) is not None or not any(os.scandir(folder))):
                    remove_tree_inside(root, folder)
                    out.append(e.name)
                continue
            m = _read_marker(folder)
            if m is None:
                continue
            if committed(str(m["label"])):
                os.unlink(folder / MARKER)
            else:
                _remove_listed(folder)
            out.append(e.name)
        except OSError:
            continue
    return out


__all__ = ["MARKER", "PREFIX", "Staging", "clear_stale", "stage"]
