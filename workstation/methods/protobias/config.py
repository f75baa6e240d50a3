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
                    raise ValueError(f"ProtoBias parameter {k} must be a list of names, got {v!r}")
                kw[k] = tuple(v)
        if "ranges" in d:
            r = d["ranges"]
            if not isinstance(r, Mapping):
                raise ValueError(f"ProtoBias parameter ranges must map a metric to [lo, hi], got {r!r}")
            out: dict[str, tuple[float, float]] = {}
            for name, v in r.items():
                if (not isinstance(v, (list, tuple)) or len(v) != 2
                        or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)):
                    raise ValueError(f"range of {name!r} must be [lo, hi], got {v!r}")
                out[str(name)] = (float(v[0]), float(v[1]))
            kw["ranges"] = out
        for k, conv in (("n_boot", int), ("boot_seed", int), ("level", float)):
            if k in d:
                v = d[k]
                if isinstance(v, bool) or not isinstance(v, (int, float)) or (conv is int and v != int(v)):
                    raise ValueError(f"ProtoBias parameter {k} must be a{'n integer' if conv is int else ' number'}, "
                                     f"got {v!r}")
                kw[k] = conv(v)
        if "name" in d:
            kw["name"] = str(d["name"])
        cfg = ProtoBiasConfig(**kw)
        cfg.validate()
        return cfg

    def validate(self) -> None:
        if not 0 <= self.n_boot <= 100_000:
            raise ValueError(f"ProtoBias parameter n_boot must be in 0..100000, got {self.n_boot}")
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


def load_config(path: str | Path) -> ProtoBiasConfig:
    """A config from a YAML or JSON file (a mapping of the fields above); errors name the file."""
    import yaml

    p = Path(path)
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(p, "ProtoBias config file not found") from None
    except UnicodeDecodeError:
        raise InputError(p, "not UTF-8 text") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise InputError(p, f"not valid YAML: {getattr(e, 'problem', e)}",
                         None if mark is None else mark.line + 1) from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise InputError(p, "expected a mapping of ProtoBias parameters")
    try:
        return ProtoBiasConfig.from_dict(raw)
    except (TypeError, ValueError) as e:
        raise InputError(p, str(e)) from None
