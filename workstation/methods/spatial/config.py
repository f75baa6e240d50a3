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
        known = {f.name for f in dataclasses.fields(CheckerConfig)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown checker parameter(s): {', '.join(sorted(unknown))}")
        d = dict(d)
        if "perturbations" in d:
            d["perturbations"] = tuple(
                p if isinstance(p, Perturbation) else Perturbation.from_name(str(p))
                for p in d["perturbations"]
            )
        if "extra" in d:
            d["extra"] = tuple(sorted((str(k), str(v)) for k, v in dict(d["extra"]).items()))
        cfg = CheckerConfig(**d)
        cfg.validate()
        return cfg

    def validate(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, float) and not math.isfinite(v):
                raise ValueError(f"checker parameter {f.name} must be finite, got {v}")
        for nm in ("t_det", "min_area_fraction", "max_overlap_iou", "consistency_threshold"):
            v = getattr(self, nm)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"checker parameter {nm} must be in [0, 1], got {v}")
        if self.margin < 0 or self.ambiguity_delta < 0 or self.geom_slope <= 0:
            raise ValueError("margin and ambiguity_delta must be >= 0 and geom_slope > 0")

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
        import yaml

        path = Path(path)
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(path, "checker config file not found") from None
        except yaml.YAMLError as e:
            line = getattr(getattr(e, "problem_mark", None), "line", None)
            raise InputError(path, f"not valid YAML: {e}", None if line is None else line + 1) from None
        if not isinstance(raw, dict):
            raise InputError(path, "expected a mapping at the top level")
        return CheckerConfig.from_sbuc_dict(raw, source=path)

    @staticmethod
    def from_sbuc_dict(raw: dict[str, Any], source: object = "<config>") -> "CheckerConfig":
        try:
            th = raw.get("thresholds", {}) or {}
            geo = raw.get("geometry", {}) or {}
            stab = raw.get("stability", {}) or {}
            conf = raw.get("confidence", {}) or {}
            w = conf.get("weights", {}) or {}
            det = raw.get("detector", {}) or {}
            prim = (det.get("primary") or {}).get("params", {}) or {}
            sec_block = det.get("secondary")
            sec = (sec_block or {}).get("params", {}) or {}
            perts = []
            for p in stab.get("perturbations", []) or []:
                kind = p["type"]
                value = p.get("factor", p.get("sigma", p.get("scale")))
                if kind not in PERTURBATION_KINDS or value is None:
                    raise ValueError(f"unknown perturbation {p!r}")
                perts.append(Perturbation(kind, float(value)))
            d = CheckerConfig()
            cfg = CheckerConfig(
                t_det=float(th.get("detection_score", d.t_det)),
                min_area_fraction=float(th.get("min_area_fraction", d.min_area_fraction)),
                ambiguity_delta=float(th.get("ambiguity_delta", d.ambiguity_delta)),
                max_overlap_iou=float(th.get("max_overlap_iou", d.max_overlap_iou)),
                margin=float(geo.get("margin", d.margin)),
                primary_threshold=float(prim.get("score_threshold", 0.0) or 0.0),
                secondary_threshold=float(sec.get("box_threshold", 0.0) or 0.0),
                use_secondary=sec_block is not None,
                stability_enabled=bool(stab.get("enabled", True)),
                perturbations=tuple(perts) if perts else DEFAULT_PERTURBATIONS,
                consistency_threshold=float(stab.get("consistency_threshold", d.consistency_threshold)),
                geom_slope=float(conf.get("geom_slope", d.geom_slope)),
                w_detection=float(w.get("detection", d.w_detection)),
                w_geometry=float(w.get("geometry", d.w_geometry)),
                w_stability=float(w.get("stability", d.w_stability)),
                w_agreement=float(w.get("agreement", d.w_agreement)),
                name=str(raw.get("name", "sbuc")),
            )
            cfg.validate()
            return cfg
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(source, f"invalid checker config: {e}") from None

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
    """Read a checker config: our own flat YAML/JSON, or a SpatialBench-UC nested one."""
    import yaml

    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "checker config file not found") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise InputError(path, f"not valid YAML: {getattr(e, 'problem', e)}",
                         None if mark is None else mark.line + 1) from None
    if not isinstance(raw, dict):
        raise InputError(path, "expected a mapping of checker parameters")
    if any(k in raw for k in ("thresholds", "geometry", "stability", "confidence")):
        return CheckerConfig.from_sbuc_dict(raw, source=path)
    try:
        return CheckerConfig.from_dict(raw)
    except (TypeError, ValueError) as e:
        raise InputError(path, str(e)) from None
