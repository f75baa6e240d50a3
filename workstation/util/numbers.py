"""Numbers from the command line and from option files: whole numbers in a range, finite numbers.

`whole_number(value, name, lo, hi)` accepts a whole number (an int, or a float or text that is
one: ``"12"``, ``12.0``) within [lo, hi] and raises one `WorkstationError` line otherwise —
naming the option as the user wrote it, quoting only a short prefix of the value, and saying
why the bound is there when ``why`` is given. Booleans, NaN, infinities, ``1e400`` and text
such as ``abc`` are refused, never turned into a traceback later.
"""

from __future__ import annotations

import math
from typing import Any

from ..types import WorkstationError
from .textio import quote


def whole_number(value: Any, name: str, lo: int, hi: int, why: str = "") -> int:
    """`value` as an int within [lo, hi] (module doc)."""
    n: int | None = None
    if isinstance(value, bool):
        n = None
    elif isinstance(value, int):
        n = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        n = int(value)
    elif isinstance(value, str) and 0 < len(value.strip()) <= 40:
        try:
            n = int(value.strip())
        except ValueError:
            n = None
    reason = f" ({why})" if why else ""
    if n is None or not lo <= n <= hi:
        top = "2**63-1" if hi == 2**63 - 1 else f"{hi:,}"
        raise WorkstationError(f"{name} must be a whole number from {lo:,} to {top}{reason}, got {quote(value, 40)}")
    return n


def finite_number(value: Any, name: str, lo: float, hi: float) -> float:
    """`value` as a finite float within [lo, hi] (a number, or text that is one)."""
    x: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            x = float(value)
        except OverflowError:
            x = None
    elif isinstance(value, str) and 0 < len(value.strip()) <= 40:
        try:
            x = float(value.strip())
        except ValueError:
            x = None
    if x is None or not math.isfinite(x) or not lo <= x <= hi:
        raise WorkstationError(f"{name} must be a number from {lo:g} to {hi:g}, got {quote(value, 40)}")
    return x


__all__ = ["finite_number", "whole_number"]
