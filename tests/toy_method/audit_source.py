"""The Lamp method's audit table for audit plans (`workstation.evaluation.plan.AuditTable`): one
row per lamp prompt's image, the automated LIT (positive) / DARK (negative) with its confidence
under the default threshold, the prompt as its cluster, and the latest human LIT / DARK. The
method object names this module as its ``audit_source``: nothing outside ``tests/`` does."""

from __future__ import annotations

from typing import Any

import numpy as np

from workstation.evaluation.plan import AuditTable
from workstation.types import WorkstationError

from .core import LABEL_SCHEME, NAME


def human_labels(project: Any, table: AuditTable) -> np.ndarray:
    """The latest human label of the table's samples: 1 LIT, 0 DARK, -1 none."""
    pos = {s: i for i, s in enumerate(table.item_id.tolist())}
    out = np.full(len(table), -1, np.int8)
    for e in sorted(project.labels.latest(LABEL_SCHEME.task), key=lambda e: e.event_id):
        i = pos.get(e.target_id)
        if i is not None and e.value in ("LIT", "DARK"):
            out[i] = 1 if e.value == "LIT" else 0
    return out


def present_items(project: Any, table: AuditTable, *, without_run: str | None = None) -> np.ndarray:
    return np.asarray(project.samples.present(table.item_id.tolist(), without_run=without_run), bool)


def audit_table(project: Any, *, threshold: float | None = None) -> AuditTable:
    from workstation.methods import get_method

    method = get_method(NAME)
    cfg = method.default_config() if threshold is None else method.config_from_dict({"threshold": threshold})
    data = method.load(project)
    if not len(data):
        raise WorkstationError("this project has no lamp prompts to audit")
    r = method.evaluate(data, cfg)
    table = AuditTable(NAME, LABEL_SCHEME.task, data.ids, data.ids, np.where(r.verdict == 0, 1, 0),
                       r.conf, np.full(len(data), -1, np.int8), positive="LIT", negative="DARK",
                       outcome_title="the threshold", item_title="lamp", cluster_title="prompt",
                       source={"threshold": cfg.threshold})
    table.human = human_labels(project, table)
    return table
