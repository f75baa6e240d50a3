"""`evaluate`: the stages in order, each recomputed only when a parameter it reads changes, and
an earlier live result reused where a config differs from it in the margin, the area filter
or the confidence parameters alone (stage 5).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace as dataclasses_replace
from typing import Any

import numpy as np

from ....dataset import Dataset
from ..config import CheckerConfig
from ..data import recorded_stability
from .area import _changed_by_area, area_stage
from .decision import _KEPT, _STEPPED, _decide_chunk, _redecide_chunk, _reweigh_chunk, _step_chunk
from .geometry import _spatial_columns
from .params import _OUT_TYPES, _Params, _perturbation_variants
from .passes import _patched, _two_passes
from .prepared import Prepared, prepare
from .selection import _select_chunk, _selection, _selection_inputs
from .stages import _AreaStage, _keys, _reach_key
from .verdicts import VerdictArrays


# the share of the samples up to which `_patched` runs the passes again at the samples an area
# filter change reaches (each of their inputs gathered), above which it is the whole passes
PATCH_MAX_FRACTION = 0.125


def _reweigh(prep: Prepared, area: _AreaStage, hit: VerdictArrays, cfg: CheckerConfig) -> VerdictArrays:
    """``hit`` under ``cfg``, which differs from hit.config in confidence parameters only."""
    p = _Params.of(cfg, prep, [], False, finite=prep.finite and area.finite)
    x_all = {"reason": hit.reason, "delta": hit.delta, "logcd": prep.geom["logcd"],
             "c_stability": hit.c_stability, "c_agreement": hit.c_agreement}
    x_sub = {k: (a[area.idx] if k != "logcd" else area.geom["logcd"]) for k, a in x_all.items()}
    o = _two_passes(prep.n, area.idx, _reweigh_chunk, p, x_all, x_sub, {"conf": np.float64, "c_geometry": np.float64})
    return dataclasses_replace(hit, conf=o["conf"], c_geometry=o["c_geometry"], config=cfg)


def _decision(ds: Dataset, prep: Prepared, area: _AreaStage, cfg: CheckerConfig,
              flags: tuple[Callable[[], Any], ...], base: VerdictArrays | None = None,
              stepped: bool = False, area_step: tuple[VerdictArrays, _AreaStage] | None = None) -> VerdictArrays:
    """A new result: the selection stage (cached by the cuts, the area filter and the variants
    it reads), then the decision pass; from ``base`` (a result whose samples reach the margin
    test as under cfg: `_reach_key`) only the samples that reach it are decided again, and with
    ``stepped`` (``base`` under cfg but its margin: `_Stages.find_margin_step`) only those whose
    outputs can differ between the two margins (`_step_chunk`). With ``area_step`` (a live result
    under cfg but its area filter, and that filter's area stage: `_Stages.find_area_step`) its
    selection and decision arrays are copied and only the samples whose inputs the two area
    stages give differently are selected and decided again (`_area_step`)."""
    s = ds.samples
    has_pert = np.asarray(s.has_perturbed, bool)
    has2 = np.asarray(s.has_secondary, bool)
    recorded = recorded_stability(ds)
    any_pert, any_rec = prep.stages.flag_summary(flags, has_pert, recorded)
    stab_on = cfg.stability_enabled and len(cfg.perturbations) > 0
    stab_dets = stab_on and any_pert
    use_rec = stab_on and any_rec
    p = _Params.of(cfg, prep, _perturbation_variants(ds, cfg, needed=stab_dets), stab_dets, use_rec,
                   prep.finite and area.finite)
    sel_key = (cfg.min_area_fraction, p.cut1, p.cut2, p.use2, p.pvars if stab_dets else ())
    sel = prep.stages.selection(sel_key, flags)
    fixed = {"rel": prep.rel, "s2": prep.s2, "s1": prep.score0[:2], "has_pert": has_pert, "recorded": recorded}
    if area_step is not None:
        v = _area_step(ds, prep, area, cfg, flags, p, (sel_key, sel), has2, fixed, area_step)
        if v is not None:
            return v
    if sel is None:
        sel = _selection(prep, area, p, has2)
        _keep_selection(prep, area, flags, sel_key, sel, fixed)
    x_all, x_sub = _decision_inputs(prep, area, sel, fixed)
    if base is None:
        o = _two_passes(prep.n, area.idx, _decide_chunk, p, x_all, x_sub, _OUT_TYPES)
    else:
        o = _from_base(prep, area, cfg, p, base, stepped, x_all, x_sub)
    return _verdicts(ds, o, sel, cfg)


def _pass_inputs(fixed: dict[str, np.ndarray], sel: dict[str, np.ndarray]) -> dict[str, Any]:
    """The decision pass's inputs but the geometry: the per-sample columns ``fixed`` and the
    selection stage's arrays (not its selected rows, nor its inputs gathered at a subset)."""
    return {**fixed, **{k: a for k, a in sel.items() if not k.startswith(("sel", "sub."))}}


def _keep_selection(prep: Prepared, area: _AreaStage, flags: tuple[Callable[[], Any], ...],
                    sel_key: tuple[Any, ...], sel: dict[str, np.ndarray], fixed: dict[str, np.ndarray]) -> None:
    """Cache the selection stage ``sel`` with the decision pass's inputs at the area stage's
    samples, gathered once per selection stage (``sub.<name>``; take: a fifth of the time
    a[..., idx] takes on the two-row score arrays)."""
    sel.update({f"sub.{k}": np.take(a, area.idx, axis=-1) for k, a in _pass_inputs(fixed, sel).items()})
    prep.stages.add_selection(sel_key, flags, sel)


def _decision_inputs(prep: Prepared, area: _AreaStage, sel: dict[str, np.ndarray],
                     fixed: dict[str, np.ndarray]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The decision pass's inputs over every sample, and at the area stage's samples."""
    x_all = {**_pass_inputs(fixed, sel), **prep.geom}
    x_sub = {**{k[4:]: a for k, a in sel.items() if k.startswith("sub.")}, **area.geom}
    return x_all, x_sub


def _verdicts(ds: Dataset, o: dict[str, np.ndarray], sel: dict[str, np.ndarray], cfg: CheckerConfig) -> VerdictArrays:
    _, label_a, label_b = _spatial_columns(ds)
    return VerdictArrays(**o, sel_a=sel["sel_a"], sel_b=sel["sel_b"], sel2_a=sel["sel2_a"], sel2_b=sel["sel2_b"],
                         label_a=label_a, label_b=label_b, config=cfg)


def _area_step(ds: Dataset, prep: Prepared, area: _AreaStage, cfg: CheckerConfig,
               flags: tuple[Callable[[], Any], ...], p: _Params,
               selection: tuple[tuple[Any, ...], dict[str, np.ndarray] | None], has2: np.ndarray,
               fixed: dict[str, np.ndarray], area_step: tuple[VerdictArrays, _AreaStage]) -> VerdictArrays | None:
    """The result under ``cfg`` from ``area_step`` (a live result under cfg but its area filter,
    and that filter's area stage): its selection (unless ``selection``'s, by its key, is cached)
    and decision arrays copied, and only the samples whose inputs the two area stages give
    differently (`_changed_by_area`) selected and decided again. None where its selection stage
    is gone, or where so many samples changed that gathering their inputs costs more than the
    passes over every sample."""
    sel_key, sel = selection
    base_v, base_area = area_step
    base_key = (base_v.config.min_area_fraction,) + sel_key[1:]
    base_sel = prep.stages.selection(base_key, flags) if sel is None else None
    if sel is None and base_sel is None:
        return None
    changed = _changed_by_area(base_area, area)
    if len(changed) > PATCH_MAX_FRACTION * prep.n:
        return None
    idx = area.idx
    if sel is None:
        assert base_sel is not None
        types = {k: a.dtype for k, a in base_sel.items() if not k.startswith("sub.")}
        sel = _patched(base_sel, changed, idx, _select_chunk, p, *_selection_inputs(prep, area, has2), types)
        _keep_selection(prep, area, flags, sel_key, sel, fixed)
    x_all, x_sub = _decision_inputs(prep, area, sel, fixed)
    o = _patched({k: getattr(base_v, k) for k in _OUT_TYPES}, changed, idx, _decide_chunk, p, x_all, x_sub,
                 _OUT_TYPES)
    return _verdicts(ds, o, sel, cfg)


def _from_base(prep: Prepared, area: _AreaStage, cfg: CheckerConfig, p: _Params, base: VerdictArrays,
               stepped: bool, x_all: dict[str, Any], x_sub: dict[str, Any]) -> dict[str, np.ndarray]:
    """The decision arrays from ``base``, whose samples reach the margin test as under ``cfg``:
    its `_KEPT` arrays are this result's, the reached samples are decided again (with
    ``stepped``, only those whose outputs the margins between can change: `_step_chunk`)."""
    idx = area.idx
    if stepped:
        lo, hi = sorted((float(cfg.margin), float(base.config.margin)))
        kernel, taken = _step_chunk, {f"base.{k}": getattr(base, k) for k in _STEPPED}
        x_all["step"] = x_sub["step"] = (lo, hi, (hi + p.gamma) * (1 + 1e-9))
    else:
        kernel, taken = _redecide_chunk, {"reason": base.reason}
    taken["delta"] = base.delta
    x_all.update(taken)
    x_sub.update({k: a[idx] for k, a in taken.items()})
    o = _two_passes(prep.n, idx, kernel, p, x_all, x_sub, {k: _OUT_TYPES[k] for k in _STEPPED})
    o.update({k: getattr(base, k) for k in _KEPT})
    return o


def evaluate(ds: Dataset, cfg: CheckerConfig) -> VerdictArrays:
    """Evaluate every sample of ``ds`` under ``cfg`` (METHODS.md §1), vectorised.

    Uses ``prepare(ds)`` (cached) and the stage caches described in the module docstring.
    Raises WorkstationError when stability must be computed from cached perturbed detections
    and a perturbation of ``cfg`` has none cached. The arrays returned are read-only (results
    under configs that differ only in weights or tau share them).
    """
    prep = prepare(ds)
    stages = prep.stages
    key, flags, conf_key = _keys(cfg, ds)
    reach_key = _reach_key(cfg)
    hit, same_conf = stages.find(key, flags, conf_key)
    if hit is not None and same_conf:
        v = dataclasses_replace(hit, config=cfg)
    else:
        # a live result under this config but its area filter, with that filter's stage (held
        # here: building this one's may drop it from the cache)
        area_step = stages.find_area_step(key, flags, conf_key) if hit is None else None
        area = area_stage(ds, prep, cfg.min_area_fraction)
        if hit is not None:
            v = _reweigh(prep, area, hit, cfg)
        else:
            step = stages.find_margin_step(key, flags, conf_key, cfg.margin)
            if step is not None:
                v = _decision(ds, prep, area, cfg, flags, step, stepped=True)
            elif area_step is not None:
                v = _decision(ds, prep, area, cfg, flags, area_step=area_step)
            else:
                v = _decision(ds, prep, area, cfg, flags, stages.find_reached(reach_key, flags))
    stages.add(key, flags, conf_key, reach_key, v)
    return v
