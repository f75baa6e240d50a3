"""Strict JSON both ways: what the project writes, and how it reads JSON from outside.

Writing (`jsonable`, `dumps`): NaN and ±Infinity become ``null`` (strict JSON has no such
numbers, and readers such as browsers and DuckDB reject them); numpy scalars and arrays become
numbers and lists; paths, datetimes, sets and dataclasses become strings, ISO timestamps, lists
and objects. Anything else is written as its ``str``.

Reading (`loads_strict`): every JSON text from outside (a line of a JSONL file, a job spec, a
model's config.json) is parsed with limits, so that no input ends in anything but a result or
one `JSONInputError`: ``NaN`` / ``Infinity`` are refused, and so are numbers that only fit as
infinity (``1e400``), integers of more than `MAX_INT_DIGITS` digits (Python refuses to convert
a few thousand digits, and no field needs them) and nesting deeper than `MAX_DEPTH` (checked
before parsing: deep nesting exhausts the parser's stack and every recursive reader after it).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
from datetime import date, datetime
from pathlib import Path, PurePath
from typing import Any

import numpy as np


def jsonable(o: Any) -> Any:
    """``o`` with every value converted to what strict JSON can hold."""
    if o is None or isinstance(o, (bool, str)):
        return o
    if isinstance(o, (int, np.integer)) and not isinstance(o, np.bool_):
        return int(o)
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, (float, np.floating)):
        f = float(o)
        return f if math.isfinite(f) else None
    if isinstance(o, dict):
        return {str(k): jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple, set, frozenset)):
        items = sorted(o, key=str) if isinstance(o, (set, frozenset)) else o
        return [jsonable(v) for v in items]
    if isinstance(o, np.ndarray):
        return [jsonable(v) for v in o.tolist()]
    if isinstance(o, (datetime, date)):
        return o.isoformat()
    if isinstance(o, PurePath):
        return o.as_posix()
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return jsonable(dataclasses.asdict(o))
    if hasattr(o, "to_dict") and callable(o.to_dict):
        return jsonable(o.to_dict())
    return str(o)


def dumps(o: Any, *, indent: int | None = None, sort_keys: bool = False) -> str:
    """Strict JSON text of ``o`` (see `jsonable`); never writes NaN or Infinity."""
    return json.dumps(jsonable(o), indent=indent, sort_keys=sort_keys, ensure_ascii=False, allow_nan=False)


def capped(o: Any, limit: int) -> Any:
    """`jsonable(o)`, or — when its JSON is over `limit` bytes — with its largest top-level parts
    (or the whole) replaced by ``{"omitted": "<size> …", "sha256": …}``. Stored provenance is
    capped this way, so a huge or hostile input cannot make every later read of it slow."""
    import hashlib

    def size(v: Any) -> int:
        return len(dumps(v, sort_keys=True).encode("utf-8"))

    def note(v: Any) -> dict[str, Any]:
        text = dumps(v, sort_keys=True)
        return {"omitted": f"{len(text.encode('utf-8')):,} bytes of JSON, over the {limit:,}-byte limit "
                           "of stored provenance",
                "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}

    out = jsonable(o)
    if size(out) <= limit:
        return out
    if isinstance(out, dict):
        for _, k in sorted(((size(v), k) for k, v in out.items()), reverse=True):
            out[k] = note(out[k])
            if size(out) <= limit:
                return out
    return note(o)


MAX_DEPTH = 64  # nesting of arrays and objects in JSON read from outside
MAX_INT_DIGITS = 40  # digits of an integer in JSON read from outside (2**127 has 39)


class JSONInputError(ValueError):
    """JSON from outside that is malformed or over a limit; ``line`` / ``column`` (1-based) where
    the parser knows them (the line within the text given)."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_TOKENS = re.compile(r"[\[\]{}]|-?Infinity|NaN|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_ZEROS = str.maketrans("123456789", "000000000")
_LONG = "0" * (MAX_INT_DIGITS + 1)
_EXPONENTS = ("e000", "e+000", "e-000", "E000", "E+000", "E-000")


def _suspect(text: str, max_depth: int) -> bool:
    """A quick look (C-speed string operations) for anything `json_problem` must look at closely;
    text inside strings may make it look, never the other way round."""
    if "NaN" in text or "Infinity" in text:
        return True
    zeros = text.translate(_ZEROS)
    if _LONG in zeros or any(e in zeros for e in _EXPONENTS):
        return True
    brackets = _NOT_BRACKET.sub("", text)
    return len(brackets) > max_depth and max(itertools.accumulate(map(_STEP.__getitem__, brackets))) > max_depth


def json_problem(text: str, max_depth: int = MAX_DEPTH) -> tuple[str, int] | None:
    """The first thing in ``text`` that `loads_strict` refuses, with its 1-based line: nesting over
    ``max_depth``, ``NaN`` / ``Infinity``, a whole number of more than `MAX_INT_DIGITS` digits or
    a number that only fits as infinity; None when there is none. (Strings are skipped; a text
    that is not JSON gives an answer that does not matter.) Quick for ordinary JSON: the exact
    scan runs only when a quick look finds something to look at."""
    if not _suspect(text, max_depth):
        return None
    bare = _STRING.sub('""', text)  # a JSON string holds no raw newline: the lines stay where they are
    depth = 0
    for m in _TOKENS.finditer(bare):
        c = m.group()
        problem = None
        if c in "[{":
            depth += 1
            if depth > max_depth:
                problem = f"nested more than {max_depth} levels deep"
        elif c in "]}":
            depth -= 1
        elif c.lstrip("-") in ("NaN", "Infinity"):
            problem = f"{c} is not a finite number (strict JSON has no {c.lstrip('-')})"
        elif c.lstrip("-").isdigit():
            if len(c.lstrip("-")) > MAX_INT_DIGITS:
                problem = f"a whole number with {len(c.lstrip('-')):,} digits (at most {MAX_INT_DIGITS})"
        elif not math.isfinite(float(c)):
            problem = f"the number {c[:24]}{'…' if len(c) > 24 else ''} is not a finite number (out of range)"
        if problem is not None:
            return problem, bare.count("\n", 0, m.start()) + 1
    return None


def _refuse_constant(name: str) -> Any:
    raise JSONInputError(f"{name} is not a finite number (strict JSON has no {name})")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def loads_strict(text: str | bytes, *, max_depth: int = MAX_DEPTH, **kw: Any) -> Any:
    """Parse JSON from outside (module doc); `JSONInputError` for anything but a plain value.
    ``kw`` goes to `json.loads` (e.g. ``object_pairs_hook``)."""
    if isinstance(text, (bytes, bytearray)):
        data = bytes(text)
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise JSONInputError(f"not UTF-8 text (byte 0x{data[e.start]:02x})", data.count(b"\n", 0, e.start) + 1) from None
    found = json_problem(text, max_depth)
    if found is not None:
        raise JSONInputError(*found)
    try:  # what the scan let through parses as plain JSON; the hooks are a second guard
        if not kw:  # one decoder for every call: a decoder made per call leaves a few objects alive
            return _DECODER.decode(text)
        return json.loads(text, parse_constant=_refuse_constant, **kw)
    except JSONInputError:
        raise
    except json.JSONDecodeError as e:
        raise JSONInputError(f"{e.msg} at column {e.colno}", e.lineno, e.colno) from None
    except RecursionError:
        raise JSONInputError(f"nested more than {max_depth} levels deep") from None
    except ValueError as e:
        raise JSONInputError(" ".join(str(e).split())[:120]) from None


def read_json_object(path: Path, what: str, max_bytes: int = 4 * 1024 * 1024) -> dict[str, Any]:
    """A small JSON file from outside that holds an object (a model's config, a pipeline's
    index), read strictly (`loads_strict`, at most `max_bytes`); anything else is one
    `WorkstationError` naming the file."""
    from ..types import WorkstationError
    from .textio import read_bytes_capped

    try:
        obj = loads_strict(read_bytes_capped(path, max_bytes, what))
    except JSONInputError as e:
        raise WorkstationError(f"cannot read {path}: {e.message}") from None
    if not isinstance(obj, dict):
        raise WorkstationError(f"{path} does not hold a JSON object")
    return obj
