"""The label log as a file: every method's human judgements in one layout, CSV or JSONL.

One row per label: ``task`` (``spatial.verdict``, ``metalogic.pair``, ``protobias.fidelity``,
``dyeval.image``), ``target_kind``, ``target_id``, ``annotator``, ``value`` (the judgement:
PASS / FAIL / UNDECIDABLE, ALIGNED / MISALIGNED / UNDECIDABLE, a 1–4 rating, ...), ``rating``,
``notes``, ``created_at`` (UTC, ISO 8601 with a Z), ``source`` (ui, recheck, import:…) and
``audit_set_id``; the full event log adds ``event_id`` first and keeps the events that undo a
label (no value). CSV text cells are escaped against spreadsheet formulas (`util.csvsafe`);
JSONL writes one object per line, UTF-8. The file is written whole or not at all
(`util.output`).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Sequence
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


__all__ = ["COLUMNS", "SUFFIXES", "write_label_log"]
