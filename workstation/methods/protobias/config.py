"""ProtoBias audit parameters, content-hashed (one stored evaluation version per distinct content).

* ``metrics`` — the scorer ids to audit (``clipscore@3f2a…``, ``toy_proto@p=0.35``); empty =
  every scorer that scored the project's triplet images against their text T.
* ``annotators`` — whose 1-4 ratings count; empty = everyone's.
* ``ranges`` — a metric's known score range ``[lo, hi]`` for the rescaling to [0, 1], by scorer
  id or by scorer name (the part before ``@``); it overrides `metrics.DEFAULT_SCALES`. A metric
  with no known range is rescaled min-max over the data set (see `metrics`).
* ``n_boot`` / ``level`` / ``boot_seed`` — the percentile bootstrap of every interval
  (``n_boot = 0``: no intervals).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...types import InputError
from ...util.textio import quote

__all__ = ["ProtoBiasConfig", "load_config"]


@dataclass(frozen=True)
class ProtoBiasConfig:
    metrics: tuple[str, ...] = ()
    annotators: tuple[str, ...] = ()
    ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    n_boot: int = 1000
    level: float = 0.95
    boot_seed: int = 0
    name: str = "default"

    def replace(self, **changes: Any) -> ProtoBiasConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {"metrics": list(self.metrics), "annotators": list(self.annotators),
                "ranges": {k: [float(v[0]), float(v[1])] for k, v in sorted(self.ranges.items())},
                "n_boot": int(self.n_boot), "level": float(self.level), "boot_seed": int(self.boot_seed),
                "name": self.name}

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> ProtoBiasConfig:
        known = {f.name for f in dataclasses.fields(ProtoBiasConfig)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown ProtoBias parameter(s): {', '.join(unknown)}")
        kw: dict[str, Any] = {}
        for k in ("metrics", "annotators"):
            if k in d:
                v = d[k]
                if isinstance(v, str) or not isinstance(v, (list, tuple)) or not all(isinstance(x, str) for x in v):
                    raise ValueError(f"ProtoBias parameter {k} must be a list of names, got {quote(v)}")
                kw[k] = tuple(v)
        if "ranges" in d:
            r = d["ranges"]
            if not isinstance(r, Mapping):
                raise ValueError(f"ProtoBias parameter ranges must map a metric to [lo, hi], got {quote(r)}")
            out: dict[str, tuple[float, float]] = {}
            for name, v in r.items():
                if (not isinstance(v, (list, tuple)) or len(v) != 2
                        or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)
                        or not all(_finite(x) for x in v)):
                    raise ValueError(f"range of {quote(name, 40)} must be [lo, hi] of finite numbers, got {quote(v)}")
                out[str(name)] = (float(v[0]), float(v[1]))
            kw["ranges"] = out
        for k, conv in (("n_boot", int), ("boot_seed", int), ("level", float)):
            if k in d:
                v = d[k]
                if (isinstance(v, bool) or not isinstance(v, (int, float)) or not _finite(v)
                        or (conv is int and v != int(v))):
                    raise ValueError(f"ProtoBias parameter {k} must be a{' whole' if conv is int else ''} finite "
                                     f"number, got {quote(v, 40)}")
                kw[k] = conv(v)
        if "name" in d:
            if not isinstance(d["name"], (str, int, float)) or isinstance(d["name"], bool) or len(str(d["name"])) > 200:
                raise ValueError(f"ProtoBias parameter name must be a short text, got {quote(d['name'], 40)}")
            kw["name"] = str(d["name"])
        cfg = ProtoBiasConfig(**kw)
        cfg.validate()
        return cfg

    def validate(self) -> None:
        if not 0 <= self.n_boot <= 100_000:
            raise ValueError(f"ProtoBias parameter n_boot must be in 0..100000 (the bootstrap's resamples of "
                             f"every interval), got {quote(self.n_boot, 40)}")
        if not 0 <= self.boot_seed < 2**63:
            raise ValueError(f"ProtoBias parameter boot_seed must be from 0 to 2**63-1, got {quote(self.boot_seed, 40)}")
        if not (math.isfinite(self.level) and 0.5 <= self.level < 1.0):
            raise ValueError(f"ProtoBias parameter level must be in [0.5, 1), got {self.level}")
        for name, (lo, hi) in self.ranges.items():
            if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
                raise ValueError(f"range of {name!r} must be finite with hi > lo, got [{lo}, {hi}]")
        if len(set(self.metrics)) != len(self.metrics):
            raise ValueError("ProtoBias parameter metrics names a metric twice")

    def content_hash(self) -> str:
        """sha256 (16 hex digits) of everything but ``name``."""
        d = self.to_dict()
        d.pop("name")
        blob = json.dumps(d, sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def _finite(x: Any) -> bool:
    try:
        return math.isfinite(x)
    except OverflowError:  # a whole number too large for a float
        return False


def load_config(path: str | Path) -> ProtoBiasConfig:
    """A config from a YAML or JSON file (a mapping of the fields above), read with the project's
    one YAML loader (`util.safeyaml`); errors name the file and the line of the bad parameter."""
    from ...util.safeyaml import line_of, load_yaml_mapping

    p = Path(path)
    raw = load_yaml_mapping(p, "ProtoBias config", "expected a mapping of ProtoBias parameters")
    for k, v in raw.items():  # one parameter at a time, so that the error names its line
        try:
            ProtoBiasConfig.from_dict({k: v})
        except (TypeError, ValueError) as e:
            raise InputError(p, " ".join(str(e).split())[:200], line_of(raw, k)) from None
    try:
        return ProtoBiasConfig.from_dict(raw)
    except (TypeError, ValueError) as e:
        raise InputError(p, " ".join(str(e).split())[:200]) from None
