"""The report bundle: one folder with a section per method and an index that links them.

    OUT/index.html            every section's summary, provenance, links
    OUT/report_meta.json      the sections' tables, config hashes and provenance (strict JSON)
    OUT/<method>/...          the method's own files (tables, data, plots, its index.html)

The bundle is written into a temporary folder beside OUT and renamed into place, so a reader
sees the old bundle or the new one; a failed or cancelled report leaves nothing behind.

Every bundle holds a marker file, `REPORT_MARKER`. With ``overwrite`` an existing OUT is replaced
only when it is a report this program wrote (it holds the marker) — never an unrelated folder,
never a symbolic link, never a folder in ``protect`` (the project) or one that holds it, and
never a folder inside a project but in its exports/ or reports/ (`util.outpaths`).

A report killed while it writes (``kill -9``) leaves its temporary folder beside OUT; it holds
`PARTIAL_MARKER` (which process writes it), and the next report of the same OUT removes it once
that process is gone (`clear_leftovers`).
"""

from __future__ import annotations

import datetime as _dt
import html
import math
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..types import WorkstationError
from ..util.jsonsafe import dumps
from ..util.atomic import new_folder_mode
from ..util.outpaths import FOLDER, check_output
from ..util.output import replace_folder
from .base import ReportSection

#: the style of every page of a report (the index and each method's own page): one column of
#: readable width; a table wider than the page scrolls inside it instead of widening the page
REPORT_CSS = (
    "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#1d2330;"
    "line-height:1.4}h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #d8dce5;padding-bottom:.2em}"
    "h3{margin-top:1.4em}table{border-collapse:collapse;margin:.6em 0 1em;display:block;max-width:100%;"
    "overflow-x:auto}td,th{border:1px solid #d8dce5;padding:.25em .6em;text-align:right;vertical-align:top;"
    "font-variant-numeric:tabular-nums}th{background:#f2f4f8}"
    "td:first-child,th:first-child{text-align:left}"
    "td.word{text-align:left}td.text{text-align:left;min-width:16em;overflow-wrap:anywhere}img{max-width:100%;height:auto;margin:.5em 0}"
    ".src{color:#5b6475;font-size:.9em}code{background:#f2f4f8;padding:0 .25em}pre{overflow-x:auto}")


def page_start(title: str, extra_css: str = "") -> str:
    """The head of a report page and the opening of its body, in the report's style."""
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{html.escape(title)}</title><style>{REPORT_CSS}{extra_css}</style></head><body>")


REPORT_MARKER = ".t2i-workstation-report"
_MARKER_TEXT = ("This folder is a report bundle written by the t2i audit workstation. `report --overwrite` "
                "replaces only folders that hold this file.\n")
#: the marker of a bundle still being written (its temporary folder beside OUT): which process
#: writes it, so that a later report clears the folder only when that process is gone
PARTIAL_MARKER = ".t2i-workstation-report-partial"


def _cell(v: Any) -> str:
    """A value for people: a float with 4 decimals (the exact value in the hover title)."""
    if hasattr(v, "item") and callable(v.item) and not isinstance(v, (list, dict, str)):
        try:
            v = v.item()
        except (TypeError, ValueError):
            pass
    if isinstance(v, float) and math.isfinite(v):
        return f'<span title="{html.escape(repr(v))}">{v:.4f}</span>'
    return html.escape(str(v))


def _kv(d: Mapping[str, Any]) -> str:
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th>{text_cell(_cell(v), v)}</tr>" for k, v in d.items())
    return f"<table>{rows}</table>"


#: a text cell longer than this is laid out as running text, with room to be read (a long id in
#: it may break anywhere; a table too wide for the page scrolls)
LONG_TEXT = 40


_NUMBER = re.compile(r"^\s*(?:[-+−]?\d|[-+−]?\.\d|–\s*$|$)")


def text_cell(inner_html: str, value: Any) -> str:
    """A table cell of `inner_html` (already escaped): a number (or a number's text) right-aligned,
    a word left-aligned, a long text as running text."""
    if not isinstance(value, str) or _NUMBER.match(value):
        return f"<td>{inner_html}</td>"
    return f"<td class='{'text' if len(value) > LONG_TEXT else 'word'}'>{inner_html}</td>"


def check_report_target(out: Path, overwrite: bool, protect: Sequence[str | Path] = ()) -> Path:
    """Refuse an ``out`` that the report may not write (module doc; the policy every output
    follows, `util.outpaths.check_output`), before anything is written; the real folder to write."""
    return check_output(out, what="report folder", kind=FOLDER, overwrite=overwrite, projects=protect,
                        marker=REPORT_MARKER)


def write_bundle(out_dir: str | Path, build: Callable[[Path], list[ReportSection]], *,
                 provenance: Mapping[str, Any], overwrite: bool = False,
                 title: str = "Evaluation report", protect: Sequence[str | Path] = ()) -> list[ReportSection]:
    """Write the bundle: ``build(folder)`` writes each method's files under ``folder/<method>/`` and
    returns its sections; then the index and the meta file are written and the folder renamed to
    ``out_dir``. An existing non-empty ``out_dir`` is replaced only with ``overwrite`` and only
    when it is a bundle written before (`check_report_target`); ``protect``: the project folder."""
    given = Path(out_dir)
    out = check_report_target(given, overwrite, protect)  # the real folder (links above it resolved)
    made = [q for q in reversed(out.parents) if not q.exists()]  # folders made here, removed on failure

    def unmake() -> None:
        for q in reversed(made):
            try:
                q.rmdir()
            except OSError:
                pass

    made_tmp: Path | None = None
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        clear_leftovers(out)
        tmp = made_tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=str(out.parent)))
        _mark_partial(tmp, out)
    except OSError as e:
        from ..util.output import OutputError, describe_os_error

        if made_tmp is not None:
            shutil.rmtree(made_tmp, ignore_errors=True)
        unmake()
        raise OutputError(f"cannot write the report {given}: {describe_os_error(e)}; nothing was written") from None
    try:
        sections = build(tmp)
        if not sections:
            raise WorkstationError("nothing to report: the project has no samples of any method")
        created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        parts = [page_start(title),
                 f"<h1>{html.escape(title)}</h1>",
                 f"<p class='src'>Generated {html.escape(created)} (UTC).</p>",
                 "<h2>Provenance</h2>", _kv(provenance),
                 "<h2>Sections</h2><ul>"]
        parts += [f"<li><a href='#{html.escape(s.method)}'>{html.escape(s.title)}</a></li>" for s in sections]
        parts.append("</ul>")
        for s in sections:
            parts.append(f"<h2 id='{html.escape(s.method)}'>{html.escape(s.title)}</h2>")
            parts.append(s.html)
            if (tmp / s.method / "index.html").is_file():
                parts.append(f"<p><a href='{html.escape(s.method)}/index.html'>The full {html.escape(s.title)} "
                             "section (every table, plot and its provenance)</a></p>")
        parts.append("</body></html>")
        (tmp / "index.html").write_text("\n".join(parts), encoding="utf-8")
        meta = {"created_utc": created, "provenance": dict(provenance),
                "sections": [{"method": s.method, "title": s.title, "meta": s.meta, "tables": s.tables,
                              "figures": {k: str(Path(v).relative_to(tmp)) if Path(v).is_relative_to(tmp) else str(v)
                                          for k, v in s.figures.items()}} for s in sections]}
        (tmp / "report_meta.json").write_text(dumps(meta, indent=2), encoding="utf-8")
        (tmp / REPORT_MARKER).write_text(_MARKER_TEXT, encoding="utf-8")
        if check_report_target(given, overwrite, protect) != out:  # the same folder as at the start
            raise WorkstationError(f"report folder {given} changed while the report was written (a link was "
                                   "swapped in above it); nothing was written")
        (tmp / PARTIAL_MARKER).unlink()
        os.chmod(tmp, new_folder_mode())  # readable as a folder made by mkdir, not mkdtemp's 0700
        replace_folder(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        unmake()
        raise
    clear_leftovers(out, old=True)
    return sections


def _mark_partial(tmp: Path, out: Path) -> None:
    import os
    import socket

    (tmp / PARTIAL_MARKER).write_text(dumps({"pid": os.getpid(), "host": socket.gethostname(), "out": out.name}),
                                      encoding="utf-8")


def _owner_gone(marker: Path, out: Path) -> bool:
    """Whether the process that wrote a partial bundle's marker is gone (on this machine)."""
    import os
    import socket

    from ..util.jsonsafe import JSONInputError, loads_strict

    try:
        info = loads_strict(marker.read_bytes()[:4096])
    except (OSError, JSONInputError):
        return False
    if not isinstance(info, dict) or info.get("out") != out.name or info.get("host") != socket.gethostname():
        return False
    pid = info.get("pid")
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError, OSError):
        return False
    return False


def clear_leftovers(out: Path, *, old: bool = False) -> list[Path]:
    """Remove what a killed report of ``out`` left beside it: its temporary folders
    ``.<OUT>.<token>.partial`` that hold `PARTIAL_MARKER` written by a process that is gone (on
    this machine); with ``old``, also ``.<OUT>.<token>.old`` folders that hold `REPORT_MARKER` —
    an earlier bundle set aside while the new one was moved into place, once the new one is there.
    Only folders recognisably this program's temporaries of that same output are removed: named
    so, real folders (never a link), holding the marker as a regular file; never a folder of the
    user's, never another output's. Returns what was removed."""
    import os
    import re
    import stat

    pattern = re.compile(re.escape(f".{out.name}.") + r"[A-Za-z0-9_-]{1,64}" + (r"\.(partial|old)" if old
                                                                              else r"\.(partial)"))
    removed: list[Path] = []
    try:
        entries = list(os.scandir(out.parent))
    except OSError:
        return removed
    for e in entries:
        m = pattern.fullmatch(e.name)
        if m is None:
            continue
        folder = Path(e.path)
        try:
            if not e.is_dir(follow_symlinks=False):
                continue
            kind = m.group(1)
            marker = folder / (PARTIAL_MARKER if kind == "partial" else REPORT_MARKER)
            if not stat.S_ISREG(os.lstat(marker).st_mode):
                continue
            if kind == "partial" and not _owner_gone(marker, out):
                continue
            if kind == "old" and not out.is_dir():
                continue
            shutil.rmtree(folder)
            removed.append(folder)
        except OSError:
            continue
    return removed
