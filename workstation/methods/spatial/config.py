"""Checker configuration: every parameter of METHODS.md §1, content-hashed.

A CheckerConfig is immutable; `replace()` gives a new one (sliders, grid search).
`from_sbuc_yaml` reads a SpatialBench-UC `checker_config.yaml`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...perturb import DEFAULT_PERTURBATIONS, PERTURBATION_KINDS, Perturbation
from ...types import InputError


@dataclass(frozen=True)
class CheckerConfig:
    """All checker parameters. Defaults are the bold values of METHODS.md §1."""

    t_det: float = 0.2
    min_area_fraction: float = 0.005
    ambiguity_delta: float = 0.1
    max_overlap_iou: float = 0.5
    margin: float = 0.1
    # detectors' own thresholds: effective cut-off is max(t_det, detector threshold)
    primary_threshold: float = 0.0
    secondary_threshold: float = 0.0
    use_secondary: bool = True
    stability_enabled: bool = True
    perturbations: tuple[Perturbation, ...] = DEFAULT_PERTURBATIONS
    consistency_threshold: float = 0.5
    neutral_agreement: float = 0.5
    geom_slope: float = 0.15  # gamma
    w_detection: float = 0.4
    w_geometry: float = 0.3
    w_stability: float = 0.2
    w_agreement: float = 0.1
    # calibrated confidence threshold tau (used by audit / risk-coverage, not by verdicts)
    tau: float = 0.0
    name: str = "default"
    extra: tuple[tuple[str, str], ...] = field(default=())  # provenance, free-form

    def replace(self, **changes: Any) -> "CheckerConfig":
        return dataclasses.replace(self, **changes)

    def effective_cutoff(self, source: int) -> float:
        own = self.primary_threshold if source == 0 else self.secondary_threshold
        return max(self.t_det, own)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["perturbations"] = [p.name for p in self.perturbations]
        d["extra"] = dict(self.extra)
        return d

    @staticmethod
    def from_dict(d: dict[str, Any]) -> "CheckerConfig":
        """From a mapping of parameters (our flat YAML / JSON, or a stored version).

        Numbers must be numbers (not booleans, not text), switches must be true / false; a
        bad value raises `ConfigValueError` naming the parameter (`key`)."""
        known = {f.name: f for f in dataclasses.fields(CheckerConfig)}
        unknown = [k for k in d if k not in known]
        if unknown:
            raise ConfigValueError(f"unknown checker parameter(s): {', '.join(sorted(map(str, unknown)))}",
                                   unknown[0])
        kw: dict[str, Any] = {}
        for k, v in d.items():
            if k == "perturbations":
                if not isinstance(v, (list, tuple)):
                    raise ConfigValueError("perturbations must be a list of names such as brightness_1.1", k)
                try:
                    kw[k] = tuple(p if isinstance(p, Perturbation) else Perturbation.from_name(p) for p in v)
                except ValueError as e:
                    raise ConfigValueError(f"perturbations: {e}", k) from None
            elif k == "extra":
                if not isinstance(v, dict):
                    raise ConfigValueError("extra must be a mapping", k)
                kw[k] = tuple(sorted((str(a), str(b)) for a, b in v.items()))
            elif k == "name":
                if not isinstance(v, (str, int, float)) or isinstance(v, bool):
                    raise ConfigValueError(f"name must be text, got {_shown(v)}", k)
                kw[k] = str(v)
            elif known[k].type in ("bool", bool):
                kw[k] = strict_bool(v, k)
            else:
                kw[k] = strict_number(v, k)
        cfg = CheckerConfig(**kw)
        cfg.validate()
        return cfg

    def validate(self) -> None:
        """Types and ranges of every parameter; `ConfigValueError` (a ValueError) names the first bad one."""
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.type in ("bool", bool):
                strict_bool(v, f.name)
            elif f.type in ("float", float):
                strict_number(v, f.name)
        for nm, (lo, hi) in PARAMETER_RANGES.items():
            v = getattr(self, nm)
            if not lo <= v <= hi:
                raise ConfigValueError(f"checker parameter {nm} must be in [{lo:g}, {hi:g}], got {v!r}", nm)
        if self.geom_slope <= 0:
            raise ConfigValueError(f"checker parameter geom_slope must be > 0, got {self.geom_slope!r}", "geom_slope")
        for p in self.perturbations:
            if not isinstance(p, Perturbation):
                raise ConfigValueError(f"perturbations must be Perturbation values, got {p!r}", "perturbations")
            try:
                p.validate()
            except ValueError as e:
                raise ConfigValueError(str(e), "perturbations") from None

    def content_hash(self) -> str:
        """sha256 of the parameters that change verdicts (name and extra excluded)."""
        d = self.to_dict()
        d.pop("name")
        d.pop("extra")
        blob = json.dumps(d, sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    # ---- SpatialBench-UC checker_config.yaml -------------------------------------------
    @staticmethod
    def from_sbuc_yaml(path: str | Path) -> "CheckerConfig":
        from ...util.safeyaml import load_yaml

        path = Path(path)
        raw = load_yaml(path, what="checker config")
        if not isinstance(raw, dict):
            raise InputError(path, "expected a mapping at the top level", 1)
        return CheckerConfig.from_sbuc_dict(raw, source=path)

    @staticmethod
    def from_sbuc_dict(raw: dict[str, Any], source: object = "<config>") -> "CheckerConfig":
        """A SpatialBench-UC nested checker config; errors name the source and (for mappings read
        by `util.safeyaml`) the line of the bad value."""
        from ...util.safeyaml import line_of

        def block(parent: Any, key: str, where: str) -> Any:
            v = parent.get(key) if isinstance(parent, dict) else None
            if v is None:
                return {}
            if not isinstance(v, dict):
                raise InputError(source, f"'{where}' must be a mapping, got {_shown(v)}", line_of(parent, key))
            return v

        def num(parent: Any, key: str, where: str, default: float) -> float:
            if key not in parent or parent[key] is None:
                return default
            try:
                return strict_number(parent[key], where)
            except ConfigValueError as e:
                raise InputError(source, f"invalid checker config: {e}", line_of(parent, key)) from None

        th = block(raw, "thresholds", "thresholds")
        geo = block(raw, "geometry", "geometry")
        stab = block(raw, "stability", "stability")
        conf = block(raw, "confidence", "confidence")
        w = block(conf, "weights", "confidence.weights")
        det = block(raw, "detector", "detector")
        prim = block(block(det, "primary", "detector.primary"), "params", "detector.primary.params")
        sec_block = det.get("secondary") if isinstance(det, dict) else None
        sec = block(block(det, "secondary", "detector.secondary"), "params", "detector.secondary.params")
        perts = []
        plist = stab.get("perturbations")
        if plist is not None and not isinstance(plist, list):
            raise InputError(source, "'stability.perturbations' must be a list", line_of(stab, "perturbations"))
        for k, p in enumerate(plist or []):
            where = f"stability.perturbations[{k}]"
            if not isinstance(p, dict):
                raise InputError(source, f"{where} must be a mapping with 'type'", line_of(stab, "perturbations"))
            kind = p.get("type")
            vkey = {"brightness": "factor", "gaussian_blur": "sigma", "resize": "scale"}.get(str(kind))
            if kind not in PERTURBATION_KINDS or vkey is None or vkey not in p:
                raise InputError(source, f"{where}: unknown perturbation {dict(p)!r} (types: brightness with factor, "
                                 "gaussian_blur with sigma, resize with scale)", line_of(p, "type"))
            pert = Perturbation(str(kind), num(p, vkey, f"{where}.{vkey}", 0.0))
            try:
                pert.validate()
            except ValueError as e:
                raise InputError(source, f"invalid checker config: {where}: {e}", line_of(p, vkey)) from None
            perts.append(pert)
        enabled = stab.get("enabled", True)
        try:
            enabled = strict_bool(enabled, "stability.enabled")
        except ConfigValueError as e:
            raise InputError(source, f"invalid checker config: {e}", line_of(stab, "enabled")) from None
        name = raw.get("name", "sbuc")
        d = CheckerConfig()
        cfg = CheckerConfig(
            t_det=num(th, "detection_score", "thresholds.detection_score", d.t_det),
            min_area_fraction=num(th, "min_area_fraction", "thresholds.min_area_fraction", d.min_area_fraction),
            ambiguity_delta=num(th, "ambiguity_delta", "thresholds.ambiguity_delta", d.ambiguity_delta),
            max_overlap_iou=num(th, "max_overlap_iou", "thresholds.max_overlap_iou", d.max_overlap_iou),
            margin=num(geo, "margin", "geometry.margin", d.margin),
            primary_threshold=num(prim, "score_threshold", "detector.primary.params.score_threshold", 0.0),
            secondary_threshold=num(sec, "box_threshold", "detector.secondary.params.box_threshold", 0.0),
            use_secondary=sec_block is not None,
            stability_enabled=enabled,
            perturbations=tuple(perts) if perts else DEFAULT_PERTURBATIONS,
            consistency_threshold=num(stab, "consistency_threshold", "stability.consistency_threshold",
                                      d.consistency_threshold),
            geom_slope=num(conf, "geom_slope", "confidence.geom_slope", d.geom_slope),
            w_detection=num(w, "detection", "confidence.weights.detection", d.w_detection),
            w_geometry=num(w, "geometry", "confidence.weights.geometry", d.w_geometry),
            w_stability=num(w, "stability", "confidence.weights.stability", d.w_stability),
            w_agreement=num(w, "agreement", "confidence.weights.agreement", d.w_agreement),
            name=str(name) if isinstance(name, (str, int, float)) and not isinstance(name, bool) else "sbuc",
        )
        try:
            cfg.validate()
        except ConfigValueError as e:
            lines = {"t_det": (th, "detection_score"), "min_area_fraction": (th, "min_area_fraction"),
                     "ambiguity_delta": (th, "ambiguity_delta"), "max_overlap_iou": (th, "max_overlap_iou"),
                     "margin": (geo, "margin"), "primary_threshold": (prim, "score_threshold"),
                     "secondary_threshold": (sec, "box_threshold"),
                     "consistency_threshold": (stab, "consistency_threshold"), "geom_slope": (conf, "geom_slope"),
                     "w_detection": (w, "detection"), "w_geometry": (w, "geometry"),
                     "w_stability": (w, "stability"), "w_agreement": (w, "agreement")}
            at = lines.get(e.key or "")
            raise InputError(source, f"invalid checker config: {e}",
                             line_of(*at) if at else None) from None
        return cfg

    def to_sbuc_dict(self) -> dict[str, Any]:
        perts = []
        for p in self.perturbations:
            key = {"brightness": "factor", "gaussian_blur": "sigma", "resize": "scale"}[p.kind]
            perts.append({"type": p.kind, key: p.value})
        return {
            "thresholds": {
                "detection_score": self.t_det,
                "min_area_fraction": self.min_area_fraction,
                "ambiguity_delta": self.ambiguity_delta,
                "max_overlap_iou": self.max_overlap_iou,
            },
            "geometry": {"margin": self.margin},
            "stability": {
                "enabled": self.stability_enabled,
                "consistency_threshold": self.consistency_threshold,
                "perturbations": perts,
            },
            "confidence": {
                "geom_slope": self.geom_slope,
                "weights": {
                    "detection": self.w_detection,
                    "geometry": self.w_geometry,
                    "stability": self.w_stability,
                    "agreement": self.w_agreement,
                },
            },
        }


def load_config(path: str | Path) -> CheckerConfig:
    """Read a checker config: our own flat YAML/JSON, or a SpatialBench-UC nested one.

    Read with `util.safeyaml` (no aliases, size-capped); a bad value names the file and its line."""
    from ...util.safeyaml import line_of, load_yaml

    path = Path(path)
    raw = load_yaml(path, what="checker config")
    if not isinstance(raw, dict):
        raise InputError(path, "expected a mapping of checker parameters", 1 if raw is not None else None)
    if any(k in raw for k in ("thresholds", "geometry", "stability", "confidence")):
        return CheckerConfig.from_sbuc_dict(raw, source=path)
    try:
        return CheckerConfig.from_dict(raw)
    except ConfigValueError as e:
        raise InputError(path, str(e), line_of(raw, e.key)) from None


# ---- strict values -----------------------------------------------------------------------------
# [low, high] of each bounded float parameter (geom_slope: > 0; the rest are free)
PARAMETER_RANGES: dict[str, tuple[float, float]] = {
    "t_det": (0.0, 1.0), "min_area_fraction": (0.0, 1.0), "max_overlap_iou": (0.0, 1.0),
    "consistency_threshold": (0.0, 1.0), "neutral_agreement": (0.0, 1.0), "tau": (0.0, 1.0),
    "primary_threshold": (0.0, 1.0), "secondary_threshold": (0.0, 1.0),
    "margin": (0.0, 1.0), "ambiguity_delta": (0.0, 1.0), "geom_slope": (0.0, 100.0),
    "w_detection": (0.0, 10.0), "w_geometry": (0.0, 10.0), "w_stability": (0.0, 10.0), "w_agreement": (0.0, 10.0),
}


class ConfigValueError(ValueError):
    """A bad checker parameter; `key` names it (for the line of the file it came from)."""

    def __init__(self, message: str, key: Any = None) -> None:
        super().__init__(message)
        self.key = key


def _shown(v: Any) -> str:
    if isinstance(v, bool):
        return f"the boolean {str(v).lower()}"
    if isinstance(v, str):
        return f"the text {v[:40]!r}"
    if isinstance(v, (list, tuple)):
        return "a list"
    if isinstance(v, dict):
        return "a mapping"
    return repr(v)[:40]


def strict_number(v: Any, name: str) -> float:
    """A finite int / float (never a boolean, never text) as float; ConfigValueError otherwise."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        hint = ""
        if isinstance(v, str):
            try:
                float(v)
                hint = " (YAML reads a number such as 1e-3 without a '.' as text: write 1.0e-3)"
            except ValueError:
                pass
        raise ConfigValueError(f"{name} must be a number, got {_shown(v)}{hint}", name)
    try:
        f = float(v)
    except OverflowError:
        raise ConfigValueError(f"{name} must be a finite number, got {v!r}", name) from None
    if not math.isfinite(f):
        raise ConfigValueError(f"{name} must be a finite number, got {v!r}", name)
    return f


def strict_bool(v: Any, name: str) -> bool:
    """true / false only (the text 'no' is not false: it is refused)."""
    if not isinstance(v, bool):
        raise ConfigValueError(f"{name} must be true or false, got {_shown(v)}", name)
    return v
