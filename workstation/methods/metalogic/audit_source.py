"""The MetaLogic method's audit table (`workstation.evaluation.plan.AuditTable`): one row per
image pair, the comparison's outcome under the active evaluation (MISALIGNED positive — the
published quantity is a misalignment rate —, ALIGNED negative, UNDECIDABLE abstains) and its
confidence, the suite pair (the two prompts) as the cluster its seeds share, and the latest human
judgement of the pair."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...evaluation.plan import AuditTable
from ...types import WorkstationError
from .results import LABEL_SCHEME, VERDICTS
from .store import load_outcomes

_CODE = {"MISALIGNED": 1, "ALIGNED": 0, "UNDECIDABLE": 2}


def _human(project: Any, ids: np.ndarray) -> np.ndarray:
    pos = {s: i for i, s in enumerate(ids.tolist())}
    human = np.full(len(ids), -1, np.int8)
    for e in sorted(project.labels.latest(LABEL_SCHEME.task), key=lambda e: e.event_id):
        i = pos.get(e.target_id)
        if i is not None and e.value in VERDICTS:
            human[i] = _CODE[e.value]
    return human


def human_labels(project: Any, table: AuditTable) -> np.ndarray:
    """The latest human judgement of the table's image pairs (1 MISALIGNED, 0 ALIGNED, 2; -1 none)."""
    return _human(project, table.item_id)


def present_items(project: Any, table: AuditTable, *, without_run: str | None = None) -> np.ndarray:
    """Which of the table's image pairs the project still holds: the plan's evaluation still has
    the pair's outcome (a removed run takes its outcomes with it) and both images are samples of
    the project; with ``without_run``, as if that run were removed too."""
    eid = table.source.get("eval_id")
    if isinstance(eid, bool) or not isinstance(eid, int):
        return np.zeros(len(table), bool)
    cols = load_outcomes(project, eid)
    ids = np.asarray(cols.get("image_pair", []), dtype=object)
    if len(ids) == 0:
        return np.zeros(len(table), bool)
    run = np.asarray(cols["run_id"], dtype=object)
    a, b = np.asarray(cols["sample_a"], dtype=object), np.asarray(cols["sample_b"], dtype=object)
    keep = np.ones(len(ids), bool) if without_run is None else run != without_run
    held = project.samples.present([str(x) for x in np.concatenate([a, b]).tolist()], without_run=without_run)
    keep &= held[:len(a)] & held[len(a):]
    alive = set(ids[keep].tolist())
    return np.array([i in alive for i in table.item_id.tolist()], bool)


def audit_table(project: Any, *, eval_id: int | None = None) -> AuditTable:
    eid = project.evaluations.active_id("metalogic") if eval_id is None else int(eval_id)
    if eid is None:
        raise WorkstationError("MetaLogic has no evaluation in this project yet: run `evaluate --method metalogic`")
    cols = load_outcomes(project, eid)
    ids = np.asarray(cols["image_pair"], dtype=object)
    if len(ids) == 0:
        raise WorkstationError(f"MetaLogic evaluation v{eid} has no stored outcomes: evaluate it first")
    verdict = np.asarray(cols["verdict"], dtype=object)
    outcome = np.array([1 if v == "MISALIGNED" else 0 if v == "ALIGNED" else -1 for v in verdict.tolist()], np.int8)
    human = _human(project, ids)
    return AuditTable("metalogic", LABEL_SCHEME.task, ids, np.asarray(cols["pair_id"], dtype=object), outcome,
                      np.asarray(cols["conf"], np.float64), human, positive="MISALIGNED", negative="ALIGNED",
                      outcome_title="the comparison", item_title="image pair", cluster_title="prompt pair",
                      source={"eval_id": eid},
                      titles={"rate": "true misalignment rate",
                              "precision": "the comparison's MISALIGNED precision",
                              "agreement": "the comparison's agreement with humans"})
