"""The ProtoBias method's audit table (`workstation.evaluation.plan.AuditTable`): one row per
triplet instance, the audited metric's preference (positive: it scores the correct image I_corr
above the prototype I_adv; a tie counts as preferring I_adv, as the paper counts a failure),
its confidence (how large the score margin is, as a percentile among the triplets), the triplet
as the cluster its seeds share, and the humans' preference (the mean 1–4 rating of each image
over annotators: I_corr higher is positive, lower negative, equal undecidable). Its label
targets are the two images."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...evaluation.base import PlanOption
from ...evaluation.plan import AuditTable, margin_confidence
from ...types import WorkstationError
from .data import load_project_data
from .labels import FIDELITY_SCHEME
from .metrics import human_scores


def _preference(mean_corr: np.ndarray, mean_adv: np.ndarray) -> np.ndarray:
    rated = np.isfinite(mean_corr) & np.isfinite(mean_adv)
    return np.where(~rated, -1, np.where(mean_corr > mean_adv, 1,
                                         np.where(mean_corr < mean_adv, 0, 2))).astype(np.int8)


def human_labels(project: Any, table: AuditTable) -> np.ndarray:
    """The humans' preference for the table's triplets from the rating events of their two
    images (targets: I_corr, I_adv): the latest rating per (image, annotator), averaged."""
    events = project.labels.latest(FIDELITY_SCHEME.task)
    by_image: dict[str, list[float]] = {}
    for e in events:
        if e.value is None or str(e.value).strip() == "":
            continue
        try:
            by_image.setdefault(e.target_id, []).append(float(e.value))
        except ValueError:
            continue
    assert table.targets is not None
    mc = np.array([np.mean(by_image[t[0]]) if t and t[0] in by_image else np.nan for t in table.targets.tolist()])
    ma = np.array([np.mean(by_image[t[1]]) if len(t) > 1 and t[1] in by_image else np.nan
                   for t in table.targets.tolist()])
    return _preference(mc, ma)


def present_items(project: Any, table: AuditTable, *, without_run: str | None = None) -> np.ndarray:
    """Which of the table's triplets the project still holds: both of its images (its label
    targets, I_corr and I_adv) are samples of the project; with ``without_run``, as if that run
    were removed too."""
    assert table.targets is not None
    targets = table.targets.tolist()
    flat = [t for ts in targets for t in ts]
    have = dict(zip(flat, project.samples.present(flat, without_run=without_run).tolist()))
    return np.array([bool(ts) and all(have[t] for t in ts) for ts in targets], bool)


def audit_table(project: Any, *, metric: str | None = None) -> AuditTable:
    data = load_project_data(project)
    if len(data) == 0:
        raise WorkstationError("this project has no complete ProtoBias triplet to audit")
    metrics = list(data.scores.metrics)
    if not metrics:
        raise WorkstationError("no metric has scored these triplets yet: run a score job first")
    if metric is not None and not isinstance(metric, str):
        raise WorkstationError(f"a metric is named by text, got {repr(metric)[:40]}")
    name = metric or metrics[0]
    if name not in metrics:
        raise WorkstationError(f"no metric {name!r} scored these triplets (have: {', '.join(metrics)})")
    corr, adv = data.scores.column(name)
    ok = np.isfinite(corr) & np.isfinite(adv)
    outcome = np.where(~ok, -1, np.where(corr > adv, 1, 0)).astype(np.int8)
    conf = margin_confidence(np.where(ok, np.abs(corr - adv), np.nan))
    hs = human_scores(data.ratings) if len(data.ratings.triplet_id) else None
    human = np.full(len(data), -1, np.int8)
    if hs is not None:
        mc, ma = hs.lookup(data.item_id)
        human = _preference(mc, ma)
    targets = [(str(a), str(b)) for a, b in zip(data.sample_corr.tolist(), data.sample_adv.tolist())]
    return AuditTable("protobias", FIDELITY_SCHEME.task, data.item_id, data.triplet_id, outcome, conf, human,
                      targets=targets, positive="correct image preferred",
                      negative="prototype preferred", outcome_title=f"metric {name}", item_title="triplet",
                      cluster_title="triplet", source={"metric": name},
                      titles={"rate": "share of triplets humans rate the correct image higher",
                              "precision": f"{name}'s precision when it prefers the correct image",
                              "agreement": f"{name}'s agreement with the humans' preference"})


def plan_options(project: Any) -> list[PlanOption]:
    """A plan audits one metric of those that scored the project's triplets."""
    return [PlanOption("metric", "metric", choices=tuple(load_project_data(project).scores.metrics))]
