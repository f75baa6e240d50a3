"""The scalars one pass reads (`_Params`, from a CheckerConfig), the types of its outputs, and
the small array helpers the selection and decision kernels share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ....dataset import Dataset
from ....types import WorkstationError
from ..config import CheckerConfig
from .prepared import Prepared


def _variant_index(ds: Dataset) -> dict[str, int]:
    return {name: k for k, name in enumerate(ds.variant_names) if k >= 1}


def _perturbation_variants(ds: Dataset, cfg: CheckerConfig, needed: bool) -> list[int]:
    index = _variant_index(ds)
    out = []
    for p in cfg.perturbations:
        v = index.get(p.name)
        if v is None:
            if needed:
                raise WorkstationError(
                    f"the checker config uses perturbation {p.name!r} but no detections are cached for "
                    f"it (cached variants: {', '.join(ds.variant_names[1:]) or 'none'}); run detection "
                    f"on that perturbation or remove it from the config")
            v = -1
        out.append(v)
    return out


@dataclass(frozen=True)
class _Params:
    """The scalars one decision pass reads (derived from a CheckerConfig)."""

    cut1: float
    cut2: float
    maf: float
    amb: float
    max_iou: float
    margin: float
    ct: float
    neutral: float
    use2: bool
    stab_on: bool  # stability enabled with perturbations configured
    stab_dets: bool  # ... and computed from cached perturbed detections somewhere
    pvars: tuple[int, ...]
    use_rec: bool  # some sample uses a recorded stability
    finite: bool  # every geometry input is finite (see _masked)
    gamma: float
    wd: float
    wg: float
    ws: float
    wa: float

    @property
    def conf_bounded(self) -> bool:
        """With weights >= 0 every confidence is finite: a product of powers of (0, 1 + eps]."""
        return 0 <= min(self.wd, self.wg, self.ws, self.wa) and max(self.wd, self.wg, self.ws, self.wa) <= 1e6

    @staticmethod
    def of(cfg: CheckerConfig, prep: Prepared, pvars: list[int], stab_dets: bool, use_rec: bool = False,
           finite: bool = False) -> _Params:
        return _Params(
            cut1=max(cfg.t_det, cfg.primary_threshold), cut2=max(cfg.t_det, cfg.secondary_threshold),
            maf=cfg.min_area_fraction,
            amb=cfg.ambiguity_delta, max_iou=cfg.max_overlap_iou, margin=float(cfg.margin),
            ct=cfg.consistency_threshold, neutral=float(cfg.neutral_agreement), use2=cfg.use_secondary,
            stab_on=cfg.stability_enabled and len(cfg.perturbations) > 0, stab_dets=stab_dets,
            pvars=tuple(pvars), use_rec=use_rec, finite=finite, gamma=cfg.geom_slope, wd=cfg.w_detection, wg=cfg.w_geometry,
            ws=cfg.w_stability, wa=cfg.w_agreement)


_OUT_TYPES = {"verdict": np.int8, "reason": np.int8, "reason_detail": np.int8, "conf": np.float64,
              "c_detection": np.float64, "c_geometry": np.float64, "c_stability": np.float64,
              "c_agreement": np.float64, "delta": np.float64, "iou_ab": np.float64}
_SEL_TYPES = {"pa": np.bool_, "pb": np.bool_, "ok2": np.bool_, "iou_term": np.float64, "nobody": np.bool_,
              "sel_a": np.int64, "sel_b": np.int64, "sel2_a": np.int64, "sel2_b": np.int64}


def _b8(mask: np.ndarray) -> np.ndarray:
    """A bool array as int8 0/1 without copying."""
    return mask.view(np.int8)


def _masked(p: _Params, values: np.ndarray, mask: np.ndarray, out: np.ndarray, bounded: bool = True) -> None:
    """out = values where mask else 0.0. For finite values >= 0 (every input finite, and for
    conf weights >= 0) this is values * mask, bit for bit, and cheaper than np.where."""
    if p.finite and bounded:
        np.multiply(values, mask, out=out)
    else:
        out[...] = np.where(mask, values, 0.0)


def _rows_or_none(rows: np.ndarray, mask: np.ndarray, out: np.ndarray) -> None:
    """out = rows where mask else -1 (rows is -1 where a segment is empty)."""
    np.multiply(rows + 1, mask, out=out)
    out -= 1
