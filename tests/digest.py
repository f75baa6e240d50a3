"""Digests that say whether a refused command changed anything: a project's database contents and
file tree, and any folder's tree (a sentinel folder beside the project).

* `dump_tables(folder)`: every row of every table of the project, sorted (NaN as "NaN").
* `tree_digest(folder)`: every entry below `folder`, never following a link: a file by its size,
  mode and sha256, a folder as a folder, a link by its target.
* `project_digest(folder)`: both, the database file itself left out of the tree (DuckDB may
  rewrite its bytes on any open without changing a row): equal digests = the same project.
* `make_sentinel(folder)`: a folder of files (a thesis, a nested folder, a link) that no command
  may touch; compare `tree_digest` of it before and after.
"""

from __future__ import annotations

import hashlib
import math
import os
import stat
from pathlib import Path
from typing import Any

DB_FILES = ("project.duckdb", "project.duckdb.wal")


def dump_tables(folder: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of a project, sorted: equal dumps = identical projects."""
    from workstation.store import Project

    with Project.open(folder, read_only=True) as p:
        names = [r[0] for r in p.con.execute(
            "SELECT table_name FROM duckdb_tables() ORDER BY table_name").fetchall()]
        return {n: [tuple("NaN" if isinstance(x, float) and math.isnan(x) else x for x in row)
                    for row in p.con.execute(f'SELECT * FROM "{n}" ORDER BY ALL').fetchall()]
                for n in names}


def tree_digest(folder: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Every entry below ``folder`` (relative POSIX path → what it is), links never followed;
    top-level names in ``skip`` are left out. A missing folder is ``{}``."""
    out: dict[str, str] = {}
    root = Path(folder)
    if not os.path.lexists(root):
        return out
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in sorted(dirnames + filenames):
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if rel in skip:
                continue
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = f"link -> {os.readlink(p)}"
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = f"folder {stat.S_IMODE(st.st_mode):o}"
            elif stat.S_ISREG(st.st_mode):
                out[rel] = (f"file {st.st_size} {stat.S_IMODE(st.st_mode):o} "
                            f"{hashlib.sha256(p.read_bytes()).hexdigest()}")
            else:
                out[rel] = f"special {st.st_mode:o}"
    return out


def project_digest(folder: Path) -> dict[str, Any]:
    """The project's tables and its file tree (module doc); a folder without a project is its
    tree alone."""
    has_db = (Path(folder) / DB_FILES[0]).is_file()
    return {"tables": dump_tables(folder) if has_db else None, "files": tree_digest(folder, skip=DB_FILES)}


def make_sentinel(folder: Path) -> Path:
    """A folder no command may change (module doc)."""
    (folder / "chapter").mkdir(parents=True)
    (folder / "thesis.tex").write_text("\\section{Results}\nEvery number here took a year.\n", encoding="utf-8")
    (folder / "chapter" / "data.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (folder / "chapter" / "figure.png").write_bytes(bytes(range(256)) * 16)
    os.symlink("thesis.tex", folder / "latest.tex")
    return folder


__all__ = ["dump_tables", "make_sentinel", "project_digest", "tree_digest"]
