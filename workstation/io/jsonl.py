"""Line-numbered JSONL reading with clear errors."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..types import InputError


#: the most bytes this program reads as one line of a JSONL file from outside (SpatialBench-UC's
#: manifest.jsonl, per_sample.jsonl and prompt files, our prompt files). The formats set no limit;
#: this is the program's, named in docs/security.md: a line is one sample's record (a few KB even
#: with every detection), read whole into memory and parsed before the next, so a line of
#: hundreds of MB is refused rather than read
MAX_LINE_BYTES = 16 * 1024 * 1024


def read_jsonl(path: str | Path, what: str = "file",
               max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line_number, object) for each non-blank line; errors name file and line
    (malformed JSON, a line that is not an object, bytes that are not UTF-8, a line over
    ``max_line_bytes``; JSON is read strictly: `util.jsonsafe.loads_strict`)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, f"{what} not found")
    with path.open("rb") as fh:
        lineno = 0
        while True:
            raw = fh.readline(max_line_bytes + 1)
            if not raw:
                break
            lineno += 1
            if len(raw) > max_line_bytes:
                raise InputError(path, f"line longer than {max_line_bytes:,} bytes, the most this program reads as "
                                       f"one line of a {what} (a limit of its own: docs/security.md)", lineno)
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as e:
                raise InputError(path, f"not UTF-8 text (byte 0x{raw[e.start]:02x} at column {e.start + 1})",
                                 lineno) from None
            obj = object_of_line(path, line, lineno)
            if obj is not None:
                yield lineno, obj


def object_of_line(path: object, line: str, lineno: int) -> dict[str, Any] | None:
    """The JSON object on one line of a JSONL file (None for a blank line); anything else is an
    InputError naming the file and line."""
    from ..util.jsonsafe import JSONInputError, loads_strict

    s = line.strip()
    if not s:
        return None
    try:
        obj = loads_strict(s)
    except JSONInputError as e:
        raise InputError(path, f"malformed JSON ({e.message})", lineno) from None
    if not isinstance(obj, dict):
        raise InputError(path, "expected a JSON object on each line", lineno)
    return obj


def require(obj: dict[str, Any], key: str, path: object, line: int, kind: type | tuple[type, ...] | None = None) -> Any:
    if key not in obj or obj[key] is None:
        raise InputError(path, f"missing field '{key}'", line)
    v = obj[key]
    if kind is not None and not isinstance(v, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise InputError(path, f"field '{key}' must be {names}, got {type(v).__name__}", line)
    return v


def require_id(obj: dict[str, Any], key: str, path: object, line: int) -> str:
    """A required id field (text, no control characters; see `util.ids`)."""
    from ..util.ids import check_id

    v = require(obj, key, path, line)
    try:
        return check_id(v, f"field '{key}'")
    except ValueError as e:
        raise InputError(path, str(e), line) from None


def number(v: Any, path: object, line: int, key: str, *, lo: float | None = None, hi: float | None = None,
           default: float | None = None) -> float:
    """A finite JSON number (never a boolean or text) within [lo, hi]; `default` for a missing one."""
    if v is None:
        if default is None:
            raise InputError(path, f"missing field '{key}'", line)
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputError(path, f"field '{key}' must be a number, got {v!r:.40}", line)
    try:
        x = float(v)
    except OverflowError:
        raise InputError(path, f"field '{key}' must be a finite number, got {v!r:.40}", line) from None
    if not math.isfinite(x):
        raise InputError(path, f"field '{key}' must be a finite number, got {v!r}", line)
    if (lo is not None and x < lo) or (hi is not None and x > hi):
        rng = f"[{lo:g}, {hi:g}]" if lo is not None and hi is not None else (f">= {lo:g}" if lo is not None else f"<= {hi:g}")
        raise InputError(path, f"field '{key}' must be {rng}, got {v!r}", line)
    return x


def check_box(box: Any, path: object, line: int, where: str, width: float, height: float) -> tuple[float, float, float, float]:
    """Validate an xyxy pixel box. Small overshoot of the image (detector padding) is allowed."""
    if not isinstance(box, (list, tuple)) or len(box) != 4:
        raise InputError(path, f"{where}: box must be a list of 4 numbers [x1, y1, x2, y2]", line)
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in box):
        raise InputError(path, f"{where}: box has a non-numeric coordinate: {box!r}", line)
    try:
        x1, y1, x2, y2 = (float(v) for v in box)
    except (TypeError, ValueError, OverflowError):
        raise InputError(path, f"{where}: box has a non-numeric coordinate: {box!r}", line) from None
    if not all(math.isfinite(v) for v in (x1, y1, x2, y2)):
        raise InputError(path, f"{where}: box has a NaN or infinite coordinate: {box!r}", line)
    if x2 < x1 or y2 < y1:
        raise InputError(path, f"{where}: inverted box (x2 < x1 or y2 < y1): {box!r}", line)
    tol_x = 0.02 * width + 1.0
    tol_y = 0.02 * height + 1.0
    if x1 < -tol_x or y1 < -tol_y or x2 > width + tol_x or y2 > height + tol_y:
        raise InputError(
            path, f"{where}: box {box!r} lies outside the {width:g}x{height:g} image (negative or too large coordinates)", line
        )
    return x1, y1, x2, y2


def check_score(v: Any, path: object, line: int, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputError(path, f"{where}: score must be a number, got {v!r}", line)
    try:
        s = float(v)
    except (TypeError, ValueError, OverflowError):
        raise InputError(path, f"{where}: score must be a number, got {v!r}", line) from None
    if not math.isfinite(s) or s < 0 or s > 1:
        raise InputError(path, f"{where}: score must be in [0, 1], got {v!r}", line)
    return s
