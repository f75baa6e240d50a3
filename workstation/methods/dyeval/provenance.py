"""Who wrote a text (a prompt, a topic, a scene graph, a reflection) and with which settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

TEMPLATES = "templates"  # the built-in template / rule writer
LM = "lm"  # a local language model
HUMAN = "human"  # typed or corrected by the auditor
SOURCES = (TEMPLATES, LM, HUMAN)


@dataclass(frozen=True)
class Provenance:
    """``source`` is one of SOURCES. For an LM: ``model`` (its name), ``model_hash`` (fingerprint
    of its folder) and ``settings`` (sampling settings, seed). ``fallback_reason`` is set when the
    LM's output did not parse and the templates wrote the text instead (source "templates", the
    LM's name and settings kept); ``raw`` keeps the LM's unparsed output (truncated)."""

    source: str
    model: str = ""
    model_hash: str = ""
    settings: Mapping[str, Any] = field(default_factory=dict)
    fallback_reason: str = ""
    raw: str = ""

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"provenance: unknown source {self.source!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "model": self.model, "model_hash": self.model_hash,
                "settings": dict(self.settings), "fallback_reason": self.fallback_reason, "raw": self.raw}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> Provenance:
        if not d:
            return cls(HUMAN)
        return cls(str(d.get("source", HUMAN)), str(d.get("model", "")), str(d.get("model_hash", "")),
                   dict(d.get("settings", {}) or {}), str(d.get("fallback_reason", "")), str(d.get("raw", "")))


HUMAN_PROVENANCE = Provenance(HUMAN)
