"""Backends registered by name with an import string, resolved only when used.

A registry maps a name such as ``"owlv2"`` to ``"workstation.detection.owl:OwlDetector"``;
nothing is imported until ``get`` / ``create`` is called, so listing the available backends
never loads torch or transformers. Looking up an unknown name raises a
:class:`~workstation.types.WorkstationError` that lists the names that do exist.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .types import WorkstationError

T = TypeVar("T")


@dataclass(frozen=True)
class Entry:
    """One registered backend."""

    name: str
    target: str | Callable[..., Any]  # "package.module:attribute" or the factory itself
    description: str = ""
    requires: tuple[str, ...] = ()  # import names of optional packages it needs
    defaults: dict[str, Any] = field(default_factory=dict)  # keyword arguments given to the factory


class Registry(Generic[T]):
    """Name → lazily imported factory. ``kind`` names what is registered ("detector")."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry] = {}
        self._aliases: dict[str, str] = {}

    def register(
        self,
        name: str,
        target: str | Callable[..., T],
        *,
        description: str = "",
        requires: tuple[str, ...] = (),
        aliases: tuple[str, ...] = (),
        defaults: dict[str, Any] | None = None,
        replace: bool = False,
    ) -> None:
        """Add a backend. ``target`` is ``"module:attr"`` (imported on first use) or a callable."""
        key = name.lower()
        if not replace and (key in self._entries or key in self._aliases):
            raise ValueError(f"{self.kind} {name!r} is already registered")
        if isinstance(target, str) and ":" not in target:
            raise ValueError(f"import string {target!r} must look like 'package.module:attribute'")
        self._entries[key] = Entry(key, target, description, tuple(requires), dict(defaults or {}))
        for a in aliases:
            self._aliases[a.lower()] = key

    def names(self) -> list[str]:
        return sorted(self._entries)

    def entries(self) -> list[Entry]:
        return [self._entries[n] for n in self.names()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._canonical(name) is not None

    def _canonical(self, name: str) -> str | None:
        key = name.lower()
        if key in self._entries:
            return key
        return self._aliases.get(key)

    def entry(self, name: str) -> Entry:
        key = self._canonical(name)
        if key is None:
            close = difflib.get_close_matches(name.lower()[:80], list(self._entries) + list(self._aliases), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            shown = repr(name) if len(name) <= 40 else f"{name[:40]!r}…"
            raise WorkstationError(
                f"unknown {self.kind} {shown}{hint}; available: {', '.join(self.names()) or '(none)'}"
            )
        return self._entries[key]

    def missing_requirements(self, name: str) -> list[str]:
        """Optional packages the backend needs that are not installed (cheap: no import)."""
        import importlib.util

        return [r for r in self.entry(name).requires if importlib.util.find_spec(r) is None]

    def available(self) -> list[str]:
        """Names whose optional packages are installed."""
        return [n for n in self.names() if not self.missing_requirements(n)]

    def get(self, name: str) -> Callable[..., T]:
        """The factory for ``name``, importing its module now."""
        e = self.entry(name)
        missing = self.missing_requirements(name)
        if missing:
            raise WorkstationError(
                f"{self.kind} {e.name!r} needs the package(s) {', '.join(missing)}, which are not installed"
            )
        if not isinstance(e.target, str):
            return e.target
        module_name, _, attr = e.target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            raise WorkstationError(
                f"{self.kind} {e.name!r} could not be loaded: package {exc.name!r} is not installed"
            ) from exc
        try:
            factory = getattr(module, attr)
        except AttributeError as exc:
            raise WorkstationError(f"{self.kind} {e.name!r}: {e.target!r} does not exist") from exc
        return factory  # type: ignore[no-any-return]

    def create(self, name: str, **kwargs: Any) -> T:
        """Build the backend: ``factory(**defaults, **kwargs)``."""
        e = self.entry(name)
        factory = self.get(name)
        return factory(**{**e.defaults, **kwargs})
