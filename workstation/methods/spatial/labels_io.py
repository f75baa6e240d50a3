"""Human label files: read (validated, line-numbered) and write.

Formats, chosen by the file's extension and, for CSV, by its header:

- SpatialBench-UC `labels_filled.json`: a JSON list of
  `{"sample_id", "human_verdict", "notes", "timestamp"}` objects.
- SpatialBench-UC `labels_filled.csv`: the same four columns, quoted.
- Our own CSV / Parquet: `sample_id, annotator, verdict, rating, notes, created_at`
  (rating 1–4 or empty). Our JSON export is the SpatialBench-UC list with `annotator` and
  `rating` added; both key styles are accepted on import.

A row whose verdict is empty (an unfilled audit template row) is skipped and counted.
Every problem raises `InputError` naming the file and the line (CSV, JSON) or row (Parquet).

CSV cells are written with `util.csvsafe`'s rule (a text cell starting with =, +, -, @, tab or
CR gets a leading apostrophe, so a spreadsheet shows it as text) and read back with it undone.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ...types import InputError
from ...io.label_log import format_timestamp
from ...util.csvsafe import escape_row, numbered_rows, unescape_cell
from ...util.ids import check_id
from .types import VERDICT_CODE, VERDICTS

DEFAULT_ANNOTATOR = "imported"
NATIVE_COLUMNS: tuple[str, ...] = ("sample_id", "annotator", "verdict", "rating", "notes", "created_at")
SBUC_COLUMNS: tuple[str, ...] = ("sample_id", "human_verdict", "notes", "timestamp")
FORMATS: tuple[str, ...] = ("auto", "native", "sbuc")
SUFFIXES: tuple[str, ...] = (".csv", ".json", ".parquet")

# accepted spellings of each field, first wins
_ALIASES: dict[str, tuple[str, ...]] = {
    "sample_id": ("sample_id",),
    "verdict": ("verdict", "human_verdict"),
    "annotator": ("annotator",),
    "rating": ("rating",),
    "notes": ("notes",),
    "created_at": ("created_at", "timestamp"),
}


@dataclass
class LabelTable:
    """Labels read from one file, in file order; `where[i]` locates row i for messages."""

    path: Path
    format: str  # "sbuc-json", "sbuc-csv", "native-csv", "native-parquet", "native-json"
    sample_id: list[str] = field(default_factory=list)
    annotator: list[str] = field(default_factory=list)
    verdict: list[str] = field(default_factory=list)
    rating: list[int | None] = field(default_factory=list)
    notes: list[str | None] = field(default_factory=list)
    created_at: list[datetime | None] = field(default_factory=list)
    line: list[int] = field(default_factory=list)  # line (CSV/JSON) or 1-based row (Parquet)
    skipped: int = 0  # rows without a verdict

    def __len__(self) -> int:
        return len(self.sample_id)

    def error(self, i: int, message: str) -> InputError:
        """An InputError for row i of this table."""
        if self.format.endswith("parquet"):
            return InputError(self.path, f"row {self.line[i]}: {message}")
        return InputError(self.path, message, self.line[i])

    def check_samples(self, known: set[str] | Any) -> None:
        """Raise for the first label whose sample is not in `known` (a set of sample ids)."""
        for i, sid in enumerate(self.sample_id):
            if sid not in known:
                raise self.error(i, f"label for unknown sample {sid!r} (not in the project)")

    def rows(self) -> dict[str, list[Any]]:
        """Columns for `Project.add_labels_bulk` (missing timestamps become 'now')."""
        now = datetime.now(timezone.utc).replace(tzinfo=None)
        return {
            "sample_id": list(self.sample_id), "annotator": list(self.annotator),
            "verdict": list(self.verdict), "rating": list(self.rating), "notes": list(self.notes),
            "created_at": [t if t is not None else now for t in self.created_at],
        }


# ---------------------------------------------------------------------------------------------
# values
# ---------------------------------------------------------------------------------------------


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip())


def parse_verdict(v: Any) -> str | None:
    """'PASS' / 'FAIL' / 'UNDECIDABLE' (any case), None for empty; ValueError otherwise."""
    if _blank(v):
        return None
    if not isinstance(v, str):
        raise ValueError(f"verdict must be PASS, FAIL or UNDECIDABLE, got {v!r}")
    s = v.strip().upper()
    if s not in VERDICT_CODE:
        raise ValueError(f"unknown verdict {v!r} (expected PASS, FAIL or UNDECIDABLE)")
    return s


def parse_rating(v: Any) -> int | None:
    if _blank(v):
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ValueError(f"rating must be a whole number from 1 to 4, got {v!r}")
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"rating must be a whole number from 1 to 4, got {v!r}") from None
    if not (math.isfinite(f) and f == int(f) and 1 <= f <= 4):
        raise ValueError(f"rating must be a whole number from 1 to 4, got {v!r}")
    return int(f)


def parse_timestamp(v: Any) -> datetime | None:
    """ISO-8601 text (a trailing Z allowed) or a datetime → naive UTC; None for empty."""
    if _blank(v):
        return None
    if isinstance(v, datetime):
        t = v
    elif not isinstance(v, str):
        raise ValueError(f"timestamp must be ISO-8601 text, got {v!r}")
    else:
        s = v.strip()
        try:
            t = datetime.fromisoformat(s[:-1] + "+00:00" if s.endswith(("Z", "z")) else s)
        except ValueError:
            raise ValueError(f"timestamp {v!r} is not an ISO-8601 date and time") from None
    if t.tzinfo is not None:
        t = t.astimezone(timezone.utc).replace(tzinfo=None)
    return t


# ---------------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------------


def _resolve_columns(present: Sequence[str], path: Path, line: int | None, where: str = "column") -> dict[str, str]:
    """Map our field names to the file's names; raise for a missing required one."""
    names = {c.strip(): c for c in present if isinstance(c, str)}
    out: dict[str, str] = {}
    for f, aliases in _ALIASES.items():
        for a in aliases:
            if a in names:
                out[f] = names[a]
                break
    missing = [f for f in ("sample_id", "verdict") if f not in out]
    if missing:
        want = "/".join(_ALIASES[missing[0]])
        raise InputError(
            path,
            f"missing {where} '{want}' (expected {', '.join(NATIVE_COLUMNS)}; or SpatialBench-UC's "
            f"{', '.join(SBUC_COLUMNS)})",
            line,
        )
    return out


def _add(t: LabelTable, rec: dict[str, Any], cols: dict[str, str], line: int, default_annotator: str) -> None:
    def get(f: str) -> Any:
        return rec.get(cols[f]) if f in cols else None

    try:
        sid_raw = get("sample_id")
        if _blank(sid_raw):
            raise ValueError("empty sample_id")
        sid = check_id(sid_raw, "sample_id")
        verdict = parse_verdict(get("verdict"))
        rating = parse_rating(get("rating"))
        created = parse_timestamp(get("created_at"))
        ann = get("annotator")
        ann = default_annotator if _blank(ann) else check_id(ann, "annotator")
        notes = get("notes")
        if notes is not None and not (isinstance(notes, float) and math.isnan(notes)) and not isinstance(notes, str):
            raise ValueError(f"notes must be text, got {type(notes).__name__}")
        if isinstance(notes, str) and "\x00" in notes:
            raise ValueError("notes hold a NUL character")
    except ValueError as e:
        if t.format.endswith("parquet"):
            raise InputError(t.path, f"row {line}: {e}") from None
        raise InputError(t.path, str(e), line) from None
    if verdict is None:
        t.skipped += 1
        return
    t.sample_id.append(sid)
    t.annotator.append(ann)
    t.verdict.append(verdict)
    t.rating.append(rating)
    t.notes.append(notes if isinstance(notes, str) else None)
    t.created_at.append(created)
    t.line.append(line)


def _read_text(path: Path) -> str:
    from ...util.textio import read_text

    return read_text(path, what="label file")  # a bad byte names its line


def _read_json(path: Path, annotator: str) -> LabelTable:
    from ...util.jsonsafe import json_problem

    text = _read_text(path)
    # the strict reader's limits first (`util.jsonsafe`): nesting deeper than its limit, NaN /
    # Infinity, numbers out of range; each label is then decoded on its own for its line number
    found = json_problem(text)
    if found is not None:
        raise InputError(path, f"malformed JSON ({found[0]})", found[1])

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not a finite number (strict JSON has no {name})")

    dec = json.JSONDecoder(parse_constant=refuse)

    def line_of(pos: int) -> int:
        return text.count("\n", 0, pos) + 1

    def fail(pos: int, msg: str) -> InputError:
        return InputError(path, msg, line_of(pos))

    def ws(pos: int) -> int:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        return pos

    pos = ws(0)
    if pos >= len(text):
        raise InputError(path, "empty file (expected a JSON list of labels)")
    if text[pos] != "[":
        raise fail(pos, "expected a JSON list of labels, e.g. [{\"sample_id\": ..., \"human_verdict\": \"PASS\"}]")
    t = LabelTable(path, "sbuc-json")
    pos = ws(pos + 1)
    first = True
    while True:
        if pos >= len(text):
            raise fail(pos, "malformed JSON (the list is not closed with ])")
        if text[pos] == "]":
            pos += 1
            break
        if not first:
            if text[pos] != ",":
                raise fail(pos, "malformed JSON (expected ',' or ']' between labels)")
            pos = ws(pos + 1)
        first = False
        start = pos
        try:
            obj, pos = dec.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise InputError(path, f"malformed JSON ({e.msg} at column {e.colno})", e.lineno) from None
        except (ValueError, RecursionError) as e:  # a second guard behind the scan above
            raise InputError(path, f"malformed JSON ({' '.join(str(e).split())[:120]})", line_of(start)) from None
        if not isinstance(obj, dict):
            raise fail(start, "each label must be a JSON object")
        cols = _resolve_columns(list(obj), path, line_of(start), where="field")
        if "human_verdict" not in obj:
            t.format = "native-json"
        _add(t, obj, cols, line_of(start), annotator)
        pos = ws(pos)
    if ws(pos) < len(text):
        raise fail(ws(pos), "malformed JSON (extra data after the list)")
    return t


def _read_csv(path: Path, annotator: str) -> LabelTable:
    text = _read_text(path)
    if not text.strip():
        raise InputError(path, "empty file (expected a header line with sample_id and verdict columns)")
    lines = text.splitlines(keepends=True)
    reader = csv.reader(lines, strict=True)
    try:
        header = next(reader)
    except csv.Error as e:
        raise InputError(path, f"malformed CSV header ({e})", 1) from None
    cols = _resolve_columns(header, path, 1)
    t = LabelTable(path, "sbuc-csv" if cols["verdict"].strip() == "human_verdict" else "native-csv")
    width = len(header)
    for start, row in numbered_rows(reader, path, "malformed CSV row ({e})"):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != width:
            raise InputError(path, f"malformed CSV row: {len(row)} fields, the header has {width}", start)
        _add(t, dict(zip(header, [unescape_cell(c) for c in row])), cols, start, annotator)
    return t


def _read_parquet(path: Path, annotator: str) -> LabelTable:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise InputError(path, f"not a readable Parquet file ({e})") from None
    cols = _resolve_columns(table.column_names, path, None)
    t = LabelTable(path, "native-parquet")
    data = {c: table.column(c).to_pylist() for c in cols.values()}
    for i in range(table.num_rows):
        _add(t, {c: data[c][i] for c in data}, cols, i + 1, annotator)
    return t


def read_labels(path: str | Path, annotator: str | None = None) -> LabelTable:
    """Read a label file (format by extension; see the module doc). `annotator` names the
    annotator of rows that carry none."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "label file not found")
    ann = (annotator or "").strip() or DEFAULT_ANNOTATOR
    suffix = path.suffix.lower()
    if suffix == ".json":
        return _read_json(path, ann)
    if suffix in (".csv", ".tsv", ".txt"):
        return _read_csv(path, ann)
    if suffix == ".parquet":
        return _read_parquet(path, ann)
    raise InputError(path, f"unknown label file type {suffix!r} (use .json, .csv or .parquet)")


# ---------------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------------


@dataclass
class LabelRecord:
    """One label to write (a `store.LabelRow` has these attributes too)."""

    sample_id: str
    annotator: str
    verdict: str | None
    rating: int | None = None
    notes: str | None = None
    created_at: datetime | None = None


def write_labels(path: str | Path, labels: Sequence[Any], fmt: str = "auto", *, overwrite: bool = False,
                 projects: Iterable[str | Path | None] = (), overwrite_hint: str | None = None) -> int:
    """Write labels (objects with sample_id, annotator, verdict, rating, notes, created_at).

    `.json` → the SpatialBench-UC list (plus annotator and rating); `.csv` → our columns, or
    SpatialBench-UC's four quoted columns with `fmt="sbuc"`; `.parquet` → our columns. An
    output the user named (`util.output`): an existing file is replaced only with ``overwrite``.
    Returns the number of labels written.
    """
    path = Path(path)
    if fmt not in FORMATS:
        raise InputError(path, f"unknown label format {fmt!r} (choose from {', '.join(FORMATS)})")
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise InputError(path, f"unknown label file type {suffix!r} (use .json, .csv or .parquet)")
    if suffix == ".parquet" and fmt == "sbuc":
        raise InputError(path, "SpatialBench-UC label files are .json or .csv, not Parquet")
    for r in labels:
        if r.verdict is not None and r.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {r.verdict!r}")
    from ...util.outpaths import OVERWRITE_HINT
    from ...util.output import output_file

    with output_file(path, "label file", overwrite=overwrite, projects=projects,
                     overwrite_hint=overwrite_hint or OVERWRITE_HINT) as tmp:
        _write_labels_to(tmp, suffix, labels, fmt)
    return len(labels)


def _write_labels_to(tmp: Path, suffix: str, labels: Sequence[Any], fmt: str) -> None:
    if suffix == ".json":
        out = []
        for r in labels:
            rec: dict[str, Any] = {"sample_id": r.sample_id, "human_verdict": r.verdict or "",
                                   "notes": r.notes or "", "timestamp": format_timestamp(r.created_at)}
            if fmt != "sbuc":
                rec["annotator"] = r.annotator
                rec["rating"] = r.rating
            out.append(rec)
        tmp.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    elif suffix == ".csv":
        with tmp.open("w", encoding="utf-8", newline="") as fh:
            if fmt == "sbuc":
                w = csv.writer(fh, quoting=csv.QUOTE_ALL)
                w.writerow(SBUC_COLUMNS)
                for r in labels:
                    w.writerow(escape_row([r.sample_id, r.verdict or "", r.notes or "",
                                           format_timestamp(r.created_at)]))
            else:
                w = csv.writer(fh, quoting=csv.QUOTE_MINIMAL)
                w.writerow(NATIVE_COLUMNS)
                for r in labels:
                    w.writerow(escape_row([r.sample_id, r.annotator, r.verdict or "",
                                           "" if r.rating is None else r.rating, r.notes or "",
                                           format_timestamp(r.created_at)]))
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table({
            "sample_id": pa.array([r.sample_id for r in labels], pa.string()),
            "annotator": pa.array([r.annotator for r in labels], pa.string()),
            "verdict": pa.array([r.verdict for r in labels], pa.string()),
            "rating": pa.array([r.rating for r in labels], pa.int8()),
            "notes": pa.array([r.notes for r in labels], pa.string()),
            "created_at": pa.array([r.created_at for r in labels], pa.timestamp("us")),
        })
        pq.write_table(table, tmp)


def label_import(path: str | Path, annotator: str | None = None) -> Any:
    """`labels import` of a file in one of this module's layouts (the spatial method's
    ``read_label_file`` hook): the file is read and checked whole now; the function returned
    appends its labels to a project in one transaction, after checking that every sample is the
    project's, and says what it did."""
    from collections import Counter

    from .store import SpatialStore

    table = read_labels(path, annotator)  # validates format, verdicts, ratings, timestamps

    def add(project: Any) -> str:
        known = {r[0] for r in project.con.execute("SELECT sample_id FROM samples").fetchall()}
        table.check_samples(known)
        with project.transaction():
            n = SpatialStore(project).add_labels_bulk(table.rows(), source=f"import:{Path(path).name}")
        by = Counter(table.annotator)
        who = ", ".join(f"{a} {c}" for a, c in sorted(by.items())) or "none"
        skipped = f"; skipped {table.skipped} row(s) without a verdict" if table.skipped else ""
        return f"imported {n} label(s) from {path} ({table.format}; annotators: {who}){skipped}"

    return add
