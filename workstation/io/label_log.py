"""The label log as a file: every method's human judgements in one layout, CSV or JSONL.

One row per label: ``task`` (``spatial.verdict``, ``metalogic.pair``, ``protobias.fidelity``,
``dyeval.image``), ``target_kind``, ``target_id``, ``annotator``, ``value`` (the judgement:
PASS / FAIL / UNDECIDABLE, ALIGNED / MISALIGNED / UNDECIDABLE, a 1–4 rating, ...), ``rating``,
``notes``, ``created_at`` (UTC, ISO 8601 with a Z), ``source`` (ui, recheck, import:…) and
``audit_set_id``; the full event log adds ``event_id`` first and keeps the events that undo a
label (no value). CSV text cells are escaped against spreadsheet formulas (`util.csvsafe`);
JSONL writes one object per line, UTF-8. The file is written whole or not at all
(`util.output`).

`read_label_log` reads such a file back (`labels import`) for every method's tasks: it is read
whole and checked first — a task no registered method has, a value its scheme does not hold, a
target of another kind, a bad rating or time is one `InputError` naming the file and line — and
gives the labels per task; ``event_id``, ``source`` and ``audit_set_id`` are not taken (imported
labels are the import's, outside any audit set), nor are events without a value.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..types import InputError
from ..util.csvsafe import escape_row

COLUMNS: tuple[str, ...] = ("task", "target_kind", "target_id", "annotator", "value", "rating", "notes", "created_at",
                            "source", "audit_set_id")
SUFFIXES: tuple[str, ...] = (".csv", ".jsonl")


def format_timestamp(t: datetime | None) -> str:
    """Naive-UTC datetime → '2026-01-14T15:39:09.080Z' (microseconds kept when present)."""
    if t is None:
        return ""
    if t.tzinfo is not None:
        t = t.astimezone(timezone.utc).replace(tzinfo=None)
    spec = "milliseconds" if t.microsecond % 1000 == 0 else "microseconds"
    return t.isoformat(timespec=spec) + "Z"


def _record(e: Any, with_id: bool) -> dict[str, Any]:
    rec: dict[str, Any] = {"event_id": int(e.event_id)} if with_id else {}
    rec.update({"task": e.task, "target_kind": e.target_kind, "target_id": e.target_id, "annotator": e.annotator,
                "value": e.value, "rating": None if e.rating is None else int(e.rating), "notes": e.notes,
                "created_at": format_timestamp(e.created_at), "source": e.source,
                "audit_set_id": None if e.audit_set_id is None else int(e.audit_set_id)})
    return rec


def write_label_log(path: str | Path, events: Sequence[Any], *, event_log: bool = False, overwrite: bool = False,
                    projects: Iterable[str | Path | None] = ()) -> int:
    """Write label events (objects with the `store.labels.LabelEvent` fields) to ``path`` (.csv
    or .jsonl); ``event_log`` adds the event ids; an existing file is replaced only with
    ``overwrite`` (`util.output`). Returns the number of rows written."""
    from ..util.output import output_file

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise InputError(path, f"the label log is written as .csv or .jsonl, not {suffix or 'a file without a suffix'}")
    cols = (("event_id",) if event_log else ()) + COLUMNS
    records = [_record(e, event_log) for e in events]
    with output_file(path, "label file", overwrite=overwrite, projects=projects) as tmp:
        if suffix == ".csv":
            with tmp.open("w", encoding="utf-8", newline="") as fh:
                w = csv.writer(fh)
                w.writerow(cols)
                for r in records:
                    w.writerow(escape_row(["" if r[c] is None else r[c] for c in cols]))
        else:
            with tmp.open("w", encoding="utf-8", newline="\n") as fh:
                for r in records:
                    fh.write(json.dumps({c: r[c] for c in cols}, ensure_ascii=False) + "\n")
    return len(records)


MAX_BYTES = 256 * 1024 * 1024
MAX_NOTES = 10_000
REQUIRED = ("task", "target_id", "value")


def is_label_log(path: str | Path) -> bool:
    """Whether a label file is in the label log's layout: a .jsonl file, or a CSV whose header
    names ``task`` and ``target_id`` (only the first line is read)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return True
    if suffix != ".csv":
        return False
    try:
        with open(path, "rb") as fh:
            first = fh.readline(64 * 1024)
    except OSError:
        return False
    head = [c.strip().strip('"').lstrip("\ufeff") for c in first.decode("utf-8", "replace").strip().split(",")]
    return "task" in head and "target_id" in head


def _timestamp(v: Any) -> datetime | None:
    if v is None or (isinstance(v, str) and not v.strip()):
        return None
    if not isinstance(v, str):
        raise ValueError(f"created_at must be ISO-8601 text, got {repr(v)[:40]}")
    s = v.strip()
    try:
        t = datetime.fromisoformat(s[:-1] + "+00:00" if s.endswith(("Z", "z")) else s)
    except ValueError:
        raise ValueError(f"created_at {s[:40]!r} is not an ISO-8601 date and time") from None
    return t.astimezone(timezone.utc).replace(tzinfo=None) if t.tzinfo is not None else t


def _row(rec: Mapping[str, Any], schemes: Mapping[str, Any], annotator: str) -> tuple[str, dict[str, Any]] | None:
    """One record as (task, label); None for an event without a value (an undo); ValueError says
    what is wrong."""
    from ..util.ids import check_id

    def text(name: str) -> str:
        v = rec.get(name)
        if v is None:
            return ""
        if not isinstance(v, str):
            raise ValueError(f"{name} must be text, got {repr(v)[:40]}")
        return v.strip()

    task = text("task")
    if task not in schemes:
        raise ValueError(f"unknown label task {task[:60]!r} (tasks: {', '.join(schemes)})")
    scheme = schemes[task]
    kind = text("target_kind")
    if kind and kind != scheme.target:
        raise ValueError(f"the targets of {task} are {scheme.target}s, not {kind[:40]!r}")
    value = rec.get("value")
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"value must be text, got {repr(value)[:40]}")
    from ..types import WorkstationError

    try:
        value = scheme.validate(value)
    except WorkstationError as e:
        raise ValueError(str(e)) from None
    rating = rec.get("rating")
    if isinstance(rating, str):
        rating = rating.strip() or None
    if rating is not None:
        try:
            if isinstance(rating, bool):
                raise ValueError
            f = float(rating)
            if not (math.isfinite(f) and f == int(f)):
                raise ValueError
        except ValueError:
            raise ValueError(f"rating must be a whole number, got {repr(rec.get('rating'))[:40]}") from None
        rating = int(f)
    notes = text("notes") or None
    if notes is not None and len(notes) > MAX_NOTES:
        raise ValueError(f"notes of {len(notes):,} characters (at most {MAX_NOTES:,})")
    return task, {"target_id": check_id(text("target_id"), "target_id"),
                  "annotator": check_id(text("annotator") or annotator, "annotator"),
                  "value": value, "rating": rating, "notes": notes,
                  "created_at": _timestamp(rec.get("created_at")) or datetime.now(timezone.utc).replace(tzinfo=None)}


def _records(path: Path, text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    from ..util.csvsafe import numbered_rows, unescape_cell

    if path.suffix.lower() == ".jsonl":
        from .jsonl import object_of_line

        for i, line in enumerate(text.splitlines(), start=1):
            rec = object_of_line(path, line, i)
            if rec is not None:
                yield i, rec
        return
    reader = csv.reader(text.splitlines(keepends=True), strict=True)
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        return
    except csv.Error as e:
        raise InputError(path, f"malformed CSV header ({e})", 1) from None
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(path, f"the header lacks the column(s) {', '.join(missing)} of the label log", 1)
    for start, row in numbered_rows(reader, path, "malformed CSV row ({e})"):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise InputError(path, f"malformed CSV row: {len(row)} fields, the header has {len(header)}", start)
        yield start, {h: unescape_cell(c) for h, c in zip(header, row)}


def read_label_log(path: str | Path, schemes: Mapping[str, Any], annotator: str | None = None
                   ) -> dict[str, dict[str, list[Any]]]:
    """The labels of a label log file per task (columns target_id, annotator, value, rating,
    notes, created_at, for `LabelsRepo.add_bulk`, and the line of each), each row checked against ``schemes`` (task →
    `LabelScheme`); rows that name no annotator are ``annotator``'s (default: "imported")."""
    from ..util.textio import read_text

    path = Path(path)
    text = read_text(path, MAX_BYTES, what="label file")  # a bad byte names its line
    who = (annotator or "").strip() or "imported"
    out: dict[str, dict[str, list[Any]]] = {}
    n = 0
    for line, rec in _records(path, text):
        n += 1
        try:
            got = _row(rec, schemes, who)
        except ValueError as e:
            raise InputError(path, str(e), line) from None
        if got is None:
            continue
        task, row = got
        row["line"] = line  # where the label is in the file (for the project's own checks)
        cols = out.setdefault(task, {k: [] for k in row})
        for k, v in row.items():
            cols[k].append(v)
    if not n:
        raise InputError(path, "the label file holds no labels")
    return out


__all__ = ["COLUMNS", "SUFFIXES", "is_label_log", "read_label_log", "write_label_log"]
