"""References that do not keep what they point at alive."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any


def weak(x: Any) -> Callable[[], Any]:
    """A weak reference to x (a strong one for the odd object that takes none)."""
    try:
        return weakref.ref(x)
    except TypeError:
        return lambda: x
