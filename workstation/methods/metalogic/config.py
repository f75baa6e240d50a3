"""MetaLogic comparison parameters, content-hashed (the sliders of the MetaLogic views).

Defaults follow the spatial checker where the two share an idea (METHODS.md §1: the
min-area fraction 0.005, the ambiguity Δ 0.1, the confidence slope γ 0.15); the rest are this
method's own (see `compare` for how each is used).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...util.textio import quote

__all__ = ["MetaLogicConfig"]


@dataclass(frozen=True)
class MetaLogicConfig:
    """Every parameter of the MetaLogic comparison.

    * ``score_threshold`` — a detection counts when its score is at least this.
    * ``min_area_fraction`` — and its box covers at least this fraction of the image.
    * ``near_band`` — a count is *uncertain* when a candidate's score lies within this band
      around the threshold (``[t − band, t + band)``): the count could move either way.
    * ``ambiguity_delta`` — two readings closer than this in score are ambiguous: the same box
      with two labels (label ambiguity), or, in positional pairs, the two best instances of one
      entity (which one is "the" entity is unclear).
    * ``axis_margin`` — centroid differences on the axis (fraction of the image side) at most this
      are too close to call an order.
    * ``dedup_iou`` — a detection overlapping a higher-ranked detection of any label by more than
      this IoU is the same object seen twice and is not counted (structural: changing it re-runs
      the comparison's preparation).
    * ``score_slope`` / ``geom_slope`` — how fast confidence grows with the score distance from
      the threshold and with the centroid distance beyond the margin.
    """

    score_threshold: float = 0.3
    min_area_fraction: float = 0.005
    near_band: float = 0.05
    ambiguity_delta: float = 0.1
    axis_margin: float = 0.05
    dedup_iou: float = 0.7
    score_slope: float = 0.2
    geom_slope: float = 0.15
    name: str = "default"

    def replace(self, **changes: Any) -> "MetaLogicConfig":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "MetaLogicConfig":
        known = {f.name for f in dataclasses.fields(MetaLogicConfig)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown MetaLogic parameter(s): {', '.join(sorted(unknown))}")
        kw: dict[str, Any] = {}
        for k, v in d.items():
            if k == "name":
                kw[k] = str(v)
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ValueError(f"MetaLogic parameter {k} must be a number, got {quote(v, 40)}")
            try:
                kw[k] = float(v)
            except OverflowError:
                raise ValueError(f"MetaLogic parameter {k} must be a finite number, got {quote(v, 40)}") from None
        cfg = MetaLogicConfig(**kw)
        cfg.validate()
        return cfg

    def validate(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name != "name" and (not isinstance(v, (int, float)) or not math.isfinite(v)):
                raise ValueError(f"MetaLogic parameter {f.name} must be a finite number, got {quote(v, 40)}")
        for nm in ("score_threshold", "min_area_fraction", "dedup_iou"):
            v = getattr(self, nm)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"MetaLogic parameter {nm} must be in [0, 1], got {v}")
        for nm in ("near_band", "ambiguity_delta", "axis_margin"):
            v = getattr(self, nm)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"MetaLogic parameter {nm} must be in [0, 1], got {v}")
        if self.score_slope <= 0 or self.geom_slope <= 0:
            raise ValueError("MetaLogic parameters score_slope and geom_slope must be > 0")

    def content_hash(self) -> str:
        """sha256 (16 hex digits) of the parameters that change results (``name`` excluded)."""
        d = {k: float(v) for k, v in self.to_dict().items() if k != "name"}
        blob = json.dumps(d, sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(blob).hexdigest()[:16]
