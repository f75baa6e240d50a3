"""The DyEval method's audit table (`workstation.evaluation.plan.AuditTable`): one row per image
of a test tree, the pre-mark as the automated outcome (the score of the tree's pre-mark scorer —
CLIPScore, or the built-in demo's object finder — at or above the threshold predicts PASS, one
below it is pre-marked FAIL; an image without a score has none), its confidence (how far the
score is from the threshold, as a percentile among the images), the prompt (or failure-location
step) the image belongs to as its cluster, and the latest human PASS / FAIL."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...evaluation.base import PlanOption
from ...evaluation.plan import AuditTable, margin_confidence
from ...types import WorkstationError
from .link import premark_scores
from .store import TreeStore
from .tree import FAIL, LABEL_SCHEME, PASS


def _human(project: Any, ids: np.ndarray) -> np.ndarray:
    pos = {x: i for i, x in enumerate(ids.tolist())}
    human = np.full(len(ids), -1, np.int8)
    for e in sorted(project.labels.latest(LABEL_SCHEME.task), key=lambda e: e.event_id):
        i = pos.get(e.target_id)
        if i is not None and e.value in (PASS, FAIL):
            human[i] = 1 if e.value == PASS else 0
    return human


def human_labels(project: Any, table: AuditTable) -> np.ndarray:
    """The latest human PASS / FAIL of the table's images (1, 0; -1 none)."""
    return _human(project, table.item_id)


def present_items(project: Any, table: AuditTable, *, without_run: str | None = None) -> np.ndarray:
    """Which of the table's images (samples) the project still holds; with ``without_run``, as if
    that run were removed too."""
    return np.asarray(project.samples.present(table.item_id.tolist(), without_run=without_run), bool)


def audit_table(project: Any, *, tree_id: str | None = None, threshold: float | None = None) -> AuditTable:
    store = TreeStore(project)
    tid = store.resolve(tree_id)
    tree = store.load(tid, persist=False)
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))
                                  or not np.isfinite(float(threshold))):
        raise WorkstationError(f"the CLIPScore threshold must be a finite number, got {repr(threshold)[:40]}")
    th = tree.config.premark_threshold if threshold is None else float(threshold)
    if th is None:
        raise WorkstationError(f"DyEval tree {tid!r} has no pre-mark threshold: set premark_threshold "
                               "in its config, or give a threshold")
    ids = np.array(sorted(tree.images), dtype=object)
    if len(ids) == 0:
        raise WorkstationError(f"DyEval tree {tid!r} has no images yet")
    scorer, scores = premark_scores(project, tree)
    name = scorer or str(tree.config.premark_scorer)
    s = np.array([scores.get(i, tree.images[i].clip_score if tree.images[i].clip_score is not None else np.nan)
                  for i in ids.tolist()], np.float64)
    ok = np.isfinite(s)
    outcome = np.where(~ok, -1, np.where(s >= th, 1, 0)).astype(np.int8)
    dist = np.where(ok, np.abs(s - th), np.nan)
    conf = margin_confidence(dist)
    human = _human(project, ids)
    cluster = np.array([tree.images[i].owner for i in ids.tolist()], dtype=object)
    return AuditTable("dyeval", LABEL_SCHEME.task, ids, cluster, outcome, conf, human, positive=PASS, negative=FAIL,
                      outcome_title=f"the pre-mark ({name})", item_title="image", cluster_title="prompt",
                      source={"tree_id": tid, "threshold": th, "scorer": name})


def plan_options(project: Any) -> list[PlanOption]:
    """A plan may pre-mark at a CLIPScore threshold of its own."""
    return [PlanOption("threshold", "CLIPScore threshold", default=25.0, minimum=0.0, maximum=100.0,
                       decimals=1)]
