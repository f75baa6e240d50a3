"""Custom MetaLogic pair files: JSONL and CSV in, JSONL out.

One pair per JSONL line (an object) or CSV row. Fields:

==================  ========  =========================================================================
field               required  meaning
==================  ========  =========================================================================
``pair_id``         yes       unique id (no control characters, at most 200 characters)
``law``             yes       Commutative, Associative, Distributive, DeMorgan (De Morgan) or Complement
``modifier``        yes       AND or OR
``dimension``       yes       none (position-less), x (X-axis), y (Y-axis), conjunctive, horizontal,
                              vertical or attributes
``prompt_a``        yes       text of prompt A
``prompt_b``        yes       text of prompt B
``entities``        yes       entity names (JSON list; CSV: separated by ``;``)
``expected_counts``           one count per entity (default: from ``form_a`` when given, else 1 each)
``expected_order``            positioned entities first to last on the axis (default: from ``form_a``,
                              else every entity with a non-zero count, in the listed order)
``attributes``                one attribute per entity ("" for none)
``form_a``/``form_b``         propositional forms (`forms` syntax) — both or neither; they must be
                              equivalent and ``form_a`` must have one model; its entities must be listed
``seed``                      image seed (default: derived from the pair id)
==================  ========  =========================================================================

Every problem raises `InputError` naming the file and line; nothing is returned from a file with a
bad line. Limits: 64 MiB per file, 20,000 characters per line, 200,000 pairs, 8 entities per pair,
4,000 characters per prompt.
"""

from __future__ import annotations

import csv
import io as _io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...types import InputError
from ...util.output import write_output_text
from ...util.csvsafe import numbered_rows
from ...util.jsonsafe import JSONInputError, loads_strict
from ...util.textio import quote
from .forms import FormError, atoms, equivalent, linear_order, parse, to_text
from .laws import DIMENSION_AXIS, canonical_dimension, canonical_law, canonical_modifier
from .suite import MetaLogicSuite, PairSpec, expectation, pair_seed

__all__ = ["load_pairs", "write_pairs", "MAX_FILE_BYTES", "MAX_LINE_CHARS", "MAX_PAIRS", "MAX_ENTITIES",
           "MAX_TEXT_CHARS", "MAX_ID_CHARS"]

MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_LINE_CHARS = 20_000
MAX_PAIRS = 200_000
MAX_ENTITIES = 8
MAX_TEXT_CHARS = 4_000
MAX_ID_CHARS = 200
REQUIRED = ("pair_id", "law", "modifier", "dimension", "prompt_a", "prompt_b", "entities")
OPTIONAL = ("expected_counts", "expected_order", "attributes", "form_a", "form_b", "seed", "variant",
            "template")
_LIST_FIELDS = ("entities", "expected_counts", "expected_order", "attributes")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of a UTF-8 file, enforcing the size limits; a BOM is ignored."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise InputError(path, "pair file not found") from None
    if size > MAX_FILE_BYTES:
        raise InputError(path, f"file is {size / 2 ** 20:.1f} MiB; at most {MAX_FILE_BYTES // 2 ** 20} MiB")
    raw = path.read_bytes()
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    for no, chunk in enumerate(raw.split(b"\n"), start=1):
        try:
            text = chunk.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(path, f"not UTF-8 text (byte {e.start + 1} of the line)", no) from None
        if text.endswith("\r"):
            text = text[:-1]
        if len(text) > MAX_LINE_CHARS:
            raise InputError(path, f"line is {len(text):,} characters long; at most {MAX_LINE_CHARS:,}", no)
        yield no, text


def _clean_id(path: Path, no: int, value: Any) -> str:
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise InputError(path, f"pair_id must be text, got {type(value).__name__}", no)
    s = str(value).strip()
    if not s:
        raise InputError(path, "empty pair_id", no)
    if any(ord(c) < 32 or ord(c) == 127 for c in s):
        raise InputError(path, "pair_id contains a control character (NUL, newline, tab, ...)", no)
    if len(s) > MAX_ID_CHARS:
        raise InputError(path, f"pair_id is {len(s)} characters long; at most {MAX_ID_CHARS}", no)
    return s


def _text(path: Path, no: int, rec: dict[str, Any], key: str) -> str:
    v = rec.get(key)
    if not isinstance(v, str):
        raise InputError(path, f"{key} must be text, got {type(v).__name__}", no)
    v = v.strip()
    if not v:
        raise InputError(path, f"empty {key}", no)
    if "\x00" in v:
        raise InputError(path, f"{key} contains a NUL character", no)
    if len(v) > MAX_TEXT_CHARS:
        raise InputError(path, f"{key} is {len(v):,} characters long; at most {MAX_TEXT_CHARS:,}", no)
    return v


def _name(path: Path, no: int, what: str, v: Any) -> str:
    if not isinstance(v, str):
        raise InputError(path, f"{what} must be a list of names, got {quote(v, 40)}", no)
    s = " ".join(v.split()).lower()
    if not s:
        raise InputError(path, f"empty name in {what}", no)
    if any(c in s for c in "[]<>:~&|()@\x00") or any(ord(c) < 32 for c in s):
        raise InputError(path, f"name {quote(v, 40)} in {what} contains a bracket, an operator or a control "
                               "character", no)
    return s


def _pair(path: Path, no: int, rec: dict[str, Any], source: str) -> PairSpec:
    missing = [k for k in REQUIRED if k not in rec or rec[k] in (None, "", [])]
    if missing:
        raise InputError(path, f"missing field(s) {', '.join(missing)} (required: {', '.join(REQUIRED)})", no)
    unknown = sorted(set(rec) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise InputError(path, f"unknown field(s) {', '.join(unknown)}", no)
    pid = _clean_id(path, no, rec["pair_id"])
    law = canonical_law(str(rec["law"])) if isinstance(rec["law"], str) else None
    if law is None:
        raise InputError(path, f"unknown law {quote(rec['law'], 40)} (Commutative, Associative, Distributive, "
                               "DeMorgan, Complement)", no)
    mod = canonical_modifier(str(rec["modifier"])) if isinstance(rec["modifier"], str) else None
    if mod is None:
        raise InputError(path, f"unknown modifier {quote(rec['modifier'], 40)} (AND or OR)", no)
    dim = canonical_dimension(str(rec["dimension"])) if isinstance(rec["dimension"], str) else None
    if dim is None:
        raise InputError(path, f"unknown dimension {quote(rec['dimension'], 40)} (none, x, y, conjunctive, "
                               "horizontal, vertical, attributes)", no)
    axis = DIMENSION_AXIS[dim]
    text_a, text_b = _text(path, no, rec, "prompt_a"), _text(path, no, rec, "prompt_b")
    ents_raw = rec["entities"]
    if not isinstance(ents_raw, list):
        raise InputError(path, "entities must be a list of names", no)
    ents = [_name(path, no, "entities", x) for x in ents_raw]
    if len(ents) > MAX_ENTITIES:
        raise InputError(path, f"{len(ents)} entities; at most {MAX_ENTITIES}", no)
    if len(set(ents)) != len(ents):
        raise InputError(path, "entities must be distinct", no)

    fa_t, fb_t = rec.get("form_a"), rec.get("form_b")
    form_counts: tuple[int, ...] | None = None
    form_order: tuple[str, ...] = ()
    form_attrs: tuple[str, ...] = ()
    if fa_t not in (None, "") or fb_t not in (None, ""):
        if not isinstance(fa_t, str) or not isinstance(fb_t, str) or not fa_t.strip() or not fb_t.strip():
            raise InputError(path, "give both form_a and form_b, or neither", no)
        try:
            fa, fb = parse(fa_t), parse(fb_t)
        except FormError as e:
            raise InputError(path, f"bad form: {e}", no) from None
        named = {x for a in atoms(fa, fb) for x in a.entities}
        extra = sorted(named - set(ents))
        if extra:
            raise InputError(path, f"the forms name {quote(extra[0], 40)}, which is not in entities", no)
        try:
            if not equivalent(fa, fb):
                raise InputError(path, "form_a and form_b are not logically equivalent", no)
            form_counts, form_order, form_attrs = expectation(to_text(fa), ents)
        except FormError as e:
            raise InputError(path, f"form_a: {e}", no) from None
        fa_t, fb_t = to_text(fa), to_text(fb)
    else:
        fa_t = fb_t = ""

    counts_raw = rec.get("expected_counts")
    if counts_raw in (None, "", []):
        counts = form_counts if form_counts is not None else tuple(1 for _ in ents)
    else:
        if not isinstance(counts_raw, list) or len(counts_raw) != len(ents):
            raise InputError(path, f"expected_counts must list one count per entity ({len(ents)})", no)
        try:
            if any(isinstance(c, (bool, float)) or not isinstance(c, (int, str)) for c in counts_raw):
                raise ValueError
            counts = tuple(int(c) for c in counts_raw)
        except (TypeError, ValueError, OverflowError):
            raise InputError(path, f"expected_counts must be whole numbers, got {quote(counts_raw)}", no) from None
        if any(c < 0 or c > 100 or str(c) != str(r).strip() for c, r in zip(counts, counts_raw)):
            raise InputError(path, f"expected_counts must be whole numbers from 0 to 100, got "
                                   f"{quote(counts_raw)}", no)
        if form_counts is not None and counts != form_counts:
            raise InputError(path, f"expected_counts {list(counts)} disagree with form_a, which implies "
                                   f"{list(form_counts)}", no)

    order_raw = rec.get("expected_order")
    if order_raw in (None, "", []):
        order = form_order if fa_t else (tuple(e for e, c in zip(ents, counts) if c > 0) if axis else ())
    else:
        if not isinstance(order_raw, list):
            raise InputError(path, "expected_order must be a list of entity names", no)
        order = tuple(_name(path, no, "expected_order", x) for x in order_raw)
        bad = [x for x in order if x not in ents]
        if bad:
            raise InputError(path, f"expected_order names {quote(bad[0], 40)}, which is not in entities", no)
        if len(set(order)) != len(order):
            raise InputError(path, "expected_order names an entity twice", no)
        if fa_t and order != form_order:
            raise InputError(path, f"expected_order {list(order)} disagrees with form_a "
                                   f"({list(form_order)})", no)
    if order and not axis:
        raise InputError(path, f"expected_order given for a position-less dimension {dim!r}", no)
    if any(counts[ents.index(x)] < 1 for x in order):
        raise InputError(path, "expected_order names an entity whose expected count is 0", no)
    if order:
        try:
            linear_order([(a, b) for a, b in zip(order, order[1:])], order)
        except FormError as e:  # pragma: no cover - a listed order is always linear
            raise InputError(path, str(e), no) from None

    att_raw = rec.get("attributes")
    if att_raw in (None, "", []):
        attrs = form_attrs if any(form_attrs) else ()
    else:
        if (not isinstance(att_raw, list) or len(att_raw) != len(ents)
                or not all(isinstance(a, str) for a in att_raw)):
            raise InputError(path, f"attributes must list one text per entity ({len(ents)})", no)
        attrs = tuple(" ".join(a.split()).lower() for a in att_raw)

    seed_raw = rec.get("seed")
    if seed_raw in (None, ""):
        seed = pair_seed(pid)
    else:
        try:
            if isinstance(seed_raw, (bool, float)) or not isinstance(seed_raw, (int, str)):
                raise ValueError
            seed = int(str(seed_raw).strip())
        except ValueError:
            raise InputError(path, f"seed must be a whole number, got {quote(seed_raw, 40)}", no) from None
        if not 0 <= seed < 2 ** 63:
            raise InputError(path, f"seed must be from 0 to 2**63 - 1, got {quote(seed_raw, 40)}", no)
    return PairSpec(pair_id=pid, variant=str(rec.get("variant") or "custom"), law=law, modifier=mod,
                    dimension=dim, axis=axis, template=str(rec.get("template") or ""), text_a=text_a,
                    text_b=text_b, form_a=fa_t, form_b=fb_t, entities=tuple(ents),
                    expected_count=tuple(counts), expected_order=tuple(order), attributes=tuple(attrs),
                    seed=seed, source=source)


def _jsonl_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for no, text in _lines(path):
        if not text.strip():
            continue
        try:
            rec = loads_strict(text)
        except JSONInputError as e:
            raise InputError(path, f"not valid JSON ({e.message})", no) from None
        if not isinstance(rec, dict):
            raise InputError(path, f"expected a JSON object, got {type(rec).__name__}", no)
        yield no, rec


def _csv_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of a CSV pair file, parsed strictly: an unterminated quote, a character after a
    closing quote or a field over the size limit is an error naming the line the row starts on
    (a lenient reader would swallow the next rows into one field)."""
    numbered = list(_lines(path))
    body = "\n".join(t for _, t in numbered)
    reader = csv.reader(_io.StringIO(body, newline=""), strict=True)
    header: list[str] | None = None
    for start, row in numbered_rows(reader, path):
        if header is None:
            header = [h.strip().lower() for h in row]
            missing = [c for c in REQUIRED if c not in header]
            if missing:
                raise InputError(path, f"missing column(s) {', '.join(missing)} in the header "
                                       f"(required: {', '.join(REQUIRED)})", start)
            unknown = [h for h in header if h not in REQUIRED and h not in OPTIONAL]
            if unknown:
                raise InputError(path, f"unknown column(s) {quote(', '.join(unknown))}", start)
            if len(set(header)) != len(header):
                raise InputError(path, "a column is named twice in the header", start)
            continue
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise InputError(path, f"expected {len(header)} fields, got {len(row)}", start)
        rec: dict[str, Any] = {}
        for h, v in zip(header, row):
            v = v.strip()
            if h in _LIST_FIELDS:
                rec[h] = [x.strip() for x in v.split(";")] if v else []
            else:
                rec[h] = v
        yield start, rec
    if header is None:
        raise InputError(path, "pair file is empty")


def load_pairs(path: str | Path, name: str | None = None) -> MetaLogicSuite:
    """Read a custom pair file (``.jsonl`` / ``.ndjson`` or ``.csv``) into a `MetaLogicSuite`
    named ``name`` (default: the file name without extension)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "pair file not found")
    ext = path.suffix.lower()
    if ext in (".jsonl", ".ndjson"):
        records = _jsonl_records(path)
    elif ext == ".csv":
        records = _csv_records(path)
    else:
        raise InputError(path, f"unsupported pair file type {path.suffix!r}: expected .jsonl or .csv")
    suite_name = name or path.stem
    pairs: list[PairSpec] = []
    seen: dict[str, int] = {}
    for no, rec in records:
        spec = _pair(path, no, rec, suite_name)
        if spec.pair_id in seen:
            raise InputError(path, f"duplicate pair_id {quote(spec.pair_id, 40)} (first on line "
                                   f"{seen[spec.pair_id]})", no)
        seen[spec.pair_id] = no
        pairs.append(spec)
        if len(pairs) > MAX_PAIRS:
            raise InputError(path, f"more than {MAX_PAIRS:,} pairs", no)
    if not pairs:
        raise InputError(path, "pair file has no pairs")
    return MetaLogicSuite(name=suite_name, pairs=tuple(pairs), params={"source": str(path)})


def write_pairs(suite: MetaLogicSuite, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write a suite as a JSONL pair file that `load_pairs` reads back to the same content
    (an output the user named, `util.output`: complete or absent; an existing file is replaced
    only with ``overwrite``)."""
    path = Path(path)
    text = "".join(json.dumps(p.to_record(), ensure_ascii=False) + "\n" for p in suite.pairs)
    write_output_text(path, text, "pair file", overwrite=overwrite)
    return path
