"""Identifiers read from outside (sample, prompt, run ids, annotator names).

An id is text (a whole number is accepted and written as text), not empty, at most `MAX_ID_LEN`
characters, without control characters (NUL, newline, tab, …): ids end up in file names,
CSV cells, log lines and SQL parameters, where such characters break or hide things.
"""

from __future__ import annotations

import re
from typing import Any

MAX_ID_LEN = 512
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")


def check_id(value: Any, what: str = "id") -> str:
    """`value` as an id; ValueError with a one-line reason otherwise."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        kind = {list: "a list", dict: "an object", float: "a decimal number", bool: "a boolean"}.get(
            type(value), type(value).__name__)
        raise ValueError(f"{what} must be text, got {kind}")
    s = str(value).strip()
    if not s:
        raise ValueError(f"{what} is empty")
    if len(s) > MAX_ID_LEN:
        raise ValueError(f"{what} is {len(s)} characters long; the limit is {MAX_ID_LEN}")
    m = _CONTROL.search(s)
    if m:
        raise ValueError(f"{what} {s[:60]!r} holds a control character (U+{ord(m.group()):04X})")
    return s


__all__ = ["MAX_ID_LEN", "check_id"]
