"""One conversion of Python / numpy values to strict JSON.

NaN and ±Infinity become ``null`` (strict JSON has no such numbers, and readers such as
browsers and DuckDB reject them); numpy scalars and arrays become numbers and lists; paths,
datetimes, sets and dataclasses become strings, ISO timestamps, lists and objects. Anything
else is written as its ``str``.
"""

from __future__ import annotations

import dataclasses
import json
import math
from datetime import date, datetime
from pathlib import PurePath
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
