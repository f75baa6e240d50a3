"""The ProtoBias method's judges (`workstation.evaluation.judges`) of its triplet instances: each
metric that scored them (``protobias.metric:<metric>``) prefers the correct image I_corr when it
scores it above the prototype I_adv and the prototype otherwise (a tie counts as preferring I_adv,
as the paper counts a failure); its score is the margin corr − adv. The humans prefer the image
with the higher mean rating (the kept label selection of each image's ratings), neither on equal
means ("tie": the humans' abstention). A triplet a metric did not score is not judged by it."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...evaluation.judges import Judge, MethodJudges, Targets
from .labels import FIDELITY_SCHEME

TASK = FIDELITY_SCHEME.task
VALUES = ("I_corr", "I_adv", "tie")


def _data(project: Any, t: Targets) -> Any:
    data = t.cache.get("data")
    if data is None:
        from .data import load_project_data

        data = t.cache["data"] = load_project_data(project)
    return data


def _targets(project: Any) -> Targets:
    from .data import load_project_data

    data = load_project_data(project)
    return Targets(np.asarray(data.item_id, dtype=object), np.asarray(data.triplet_id, dtype=object), {"data": data})


def _rating(v: Any) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return float("nan")
    return x if np.isfinite(x) else float("nan")


def _human(project: Any, t: Targets) -> np.ndarray:
    from ...evaluation.selection import resolve_project

    data = _data(project, t)
    got = resolve_project(project, TASK).as_dict()
    corr = np.array([_rating(got.get(str(s))) for s in data.sample_corr.tolist()])
    adv = np.array([_rating(got.get(str(s))) for s in data.sample_adv.tolist()])
    out = np.empty(len(t), dtype=object)
    rated = np.isfinite(corr) & np.isfinite(adv)
    out[:] = None
    out[rated & (corr > adv)] = "I_corr"
    out[rated & (corr < adv)] = "I_adv"
    out[rated & (corr == adv)] = "tie"
    return out


def _metric(name: str) -> Any:
    def compute(project: Any, t: Targets) -> tuple[np.ndarray, np.ndarray]:
        corr, adv = _data(project, t).scores.column(name)
        ok = np.isfinite(corr) & np.isfinite(adv)
        out = np.empty(len(t), dtype=object)
        out[:] = None
        out[ok & (corr > adv)] = "I_corr"
        out[ok & ~(corr > adv)] = "I_adv"
        return out, np.where(ok, corr - adv, np.nan)
    return compute


def protobias_judges(project: Any) -> MethodJudges:
    from .data import load_project_data

    metrics = list(load_project_data(project).scores.metrics)
    judges = tuple(Judge(f"protobias.metric:{m}", f"the metric {m}", m, TASK, ("I_corr", "I_adv"), _metric(m),
                         score="its score of I_corr minus that of I_adv") for m in metrics)
    return MethodJudges("protobias", TASK, VALUES, judges, _targets, _human, abstain="tie", item="triplet",
                        cluster="triplet", human_title="the humans' preference (mean ratings, kept label selection)")
