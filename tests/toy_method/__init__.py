"""A fifth method defined only in the tests (core: `core.py`, views: `views.py`), registered at
test time: `registered()` adds it to the methods' registry (and its views to the views' registry
when Qt is there) for as long as the block runs, then takes it out again, so that the rest of the
suite sees the four methods of the application."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .core import NAME

__all__ = ["NAME", "registered"]


def _add(registry: Any, target: Any) -> bool:
    if NAME in registry:
        return False
    # a target that is not a "module:attr" text is given back as it is: the object itself
    registry.register(NAME, target, description="Lamp: a method of the tests")
    return True


def _remove(registry: Any) -> None:
    registry._entries.pop(NAME, None)  # the registry keeps no way out: a test's own clean-up


@contextmanager
def registered(views: bool = True) -> Iterator[None]:
    from workstation.methods import METHODS

    from .core import METHOD

    added = [(METHODS, _add(METHODS, METHOD))]
    if views:
        from ui.methods import VIEWS

        from .views import VIEWS as LAMP_VIEWS

        added.append((VIEWS, _add(VIEWS, LAMP_VIEWS)))
    try:
        yield
    finally:
        for registry, was_added in added:
            if was_added:
                _remove(registry)
