"""Relative paths from outside (manifests, shard projects, job chunks): checked before any disk access.

* `check_relative(rel)`: a relative POSIX-style path without ``..``, without a drive or a
  leading slash, without control characters — text checks only, nothing is touched.
* `source_file(root, rel)`: the file ``root/rel`` to copy *from*. A symbolic link is followed
  only when it stays inside ``root``; the result must be a regular file (not a folder, a device,
  a FIFO). A link that leaves the folder — ``images/x.png -> /etc/shadow`` — is refused.
* `target_file(root, rel)`: the file ``root/rel`` to copy *to*: no component below ``root``
  may be a link, so nothing is ever written outside ``root``.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from pathlib import Path, PurePosixPath

from .textio import quote

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_PATH_LEN = 1024


class UnsafePath(ValueError):
    """A path that would leave its folder or is not a plain file."""


def check_relative(rel: str, what: str = "path") -> PurePosixPath:
    """`rel` as a relative path that stays inside its folder (text checks only)."""
    if not isinstance(rel, str) or not rel:
        raise UnsafePath(f"{what} must be a non-empty relative path")
    if len(rel) > MAX_PATH_LEN:
        raise UnsafePath(f"{what} is {len(rel)} characters long; the limit is {MAX_PATH_LEN}")
    if _CONTROL.search(rel):
        raise UnsafePath(f"{what} {quote(rel)} holds a control character")
    norm = rel.replace("\\", "/")
    p = PurePosixPath(norm)
    if p.is_absolute() or re.match(r"^[A-Za-z]:", norm):  # "/x", "//server/x", "C:x", "C:/x"
        raise UnsafePath(f"{what} {quote(rel)} is absolute and escapes its folder")
    if ".." in p.parts:
        raise UnsafePath(f"{what} {quote(rel)} escapes its folder ('..')")
    if not p.parts:  # "", ".", "./"
        raise UnsafePath(f"{what} {quote(rel)} names no file")
    return p


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def source_file(root: str | Path, rel: str, what: str = "image") -> Path:
    """The real path of the regular file ``root/rel`` (links allowed only inside ``root``)."""
    p = check_relative(rel, f"{what} path")
    root_real = Path(os.path.realpath(root))
    cand = Path(root) / Path(*p.parts)
    parent_real = Path(os.path.realpath(cand.parent))
    if not _inside(parent_real, root_real):
        raise UnsafePath(f"{what} {quote(rel)} lies behind a link to {parent_real}, outside {root}; "
                         "only files inside the folder are copied")
    try:
        os.lstat(cand)  # the entry itself, a link or not
    except FileNotFoundError:
        raise FileNotFoundError(str(cand)) from None
    real = Path(os.path.realpath(cand))
    if not _inside(real, root_real):  # the folder above is inside: the file itself is a link out
        raise UnsafePath(f"{what} {quote(rel)} is a link to {real}, outside {root}; only files inside the folder are copied")
    try:
        st = os.stat(real)
    except FileNotFoundError:
        raise UnsafePath(f"{what} {quote(rel)} is a link to nothing ({real})") from None
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePath(f"{what} {quote(rel)} is not a regular file")
    return real


def target_file(root: str | Path, rel: str, what: str = "image") -> Path:
    """``root/rel`` for writing: no component below ``root`` may be a symbolic link."""
    p = check_relative(rel, f"{what} path")
    cur = Path(root)
    for part in p.parts:
        cur = cur / part
        if os.path.islink(cur):
            raise UnsafePath(f"{what} path {quote(rel)}: {cur} is a symbolic link; nothing is written through links")
    return cur


def remove_made(made: list[Path]) -> None:
    """Take back files and folders made in the order listed: the last first, a folder only when
    empty, never following a link; what cannot be removed stays (the caller reports its error)."""
    for p in reversed(made):
        try:
            if p.is_dir() and not p.is_symlink():
                p.rmdir()
            else:
                p.unlink(missing_ok=True)
        except OSError:
            pass


def remove_tree_inside(root: str | Path, target: str | Path) -> bool:
    """Delete the folder (or file) ``target`` and what it holds, only if it lies inside ``root``.

    ``target``'s parent must resolve to ``root`` or a folder inside it, and ``target`` must not be
    ``root`` itself; a ``target`` that is a symbolic link is removed as a link, never followed,
    and no link below it is followed either. Returns whether something was removed;
    `UnsafePath` when ``target`` is not inside ``root``."""
    import shutil

    root_real = Path(os.path.realpath(root))
    t = Path(target)
    if t.name in ("", ".", ".."):
        raise UnsafePath(f"{t} names no folder to remove")
    parent_real = Path(os.path.realpath(t.parent))
    if not _inside(parent_real, root_real):
        raise UnsafePath(f"{t} is not inside {root}; nothing outside it is removed")
    real = parent_real / t.name
    try:
        st = os.lstat(real)
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(real)  # removes the links it holds, never what they point to
    else:
        os.unlink(real)
    return True


__all__ = ["UnsafePath", "check_relative", "remove_tree_inside", "source_file", "target_file"]


APP_DIR_NAME = "t2i-workstation"


def user_data_dir() -> Path:
    """The per-user data folder of the workstation (XDG on Linux, the platform's own elsewhere)."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / APP_DIR_NAME


def user_cache_dir() -> Path:
    """The per-user cache folder of the workstation (XDG on Linux, the platform's own elsewhere)."""
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / APP_DIR_NAME / "cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / APP_DIR_NAME
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / APP_DIR_NAME

