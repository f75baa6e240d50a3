"""The spatial method's audit table (`workstation.evaluation.plan.AuditTable`): one row per
sample, the checker's verdict (PASS positive, FAIL negative, UNDECIDABLE abstains) and confidence
under the active checker config, the sample's prompt as its cluster, and the latest human P/F/U
label (any annotator's most recent, as everywhere in the workstation)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...evaluation.plan import AuditTable
from ...types import WorkstationError
from .store import TASK, SpatialStore, load_dataset
from .types import FAIL, PASS, UNDECIDABLE, VERDICT_CODE


def human_labels(project: Any, table: AuditTable) -> np.ndarray:
    """The latest human P/F/U of the table's samples (1, 0, 2; -1 none)."""
    return _human(project, table.item_id)


def _human(project: Any, ids: np.ndarray) -> np.ndarray:
    pos = {s: i for i, s in enumerate(ids.tolist())}
    out = np.full(len(ids), -1, np.int8)
    code = {PASS: 1, FAIL: 0, UNDECIDABLE: 2}
    for e in sorted(project.labels.latest(TASK), key=lambda e: e.event_id):
        i = pos.get(e.target_id)
        if i is not None and e.value in VERDICT_CODE:
            out[i] = code[VERDICT_CODE[e.value]]
    return out


def present_items(project: Any, table: AuditTable, *, without_run: str | None = None) -> np.ndarray:
    """Which of the table's images (samples) the project still holds; with ``without_run``, as if
    that run were removed too."""
    return np.asarray(project.samples.present(table.item_id.tolist(), without_run=without_run), bool)


def audit_table(project: Any, *, config_id: int | None = None) -> AuditTable:
    """The table under checker config ``config_id`` (the active one by default): its stored
    verdict set when it has one for every sample, else the checker evaluated now."""
    store = SpatialStore(project)
    if config_id is None:
        cid = project.evaluations.active_id("spatial")
    else:
        cid = int(config_id)
    rows = project.con.execute(
        "SELECT s.sample_id, s.prompt_id FROM samples s JOIN prompts p USING (prompt_id) WHERE p.method = 'spatial' "
        "ORDER BY s.ord").fetchall()
    if not rows:
        raise WorkstationError("this project has no spatial samples to audit")
    ids = np.array([r[0] for r in rows], dtype=object)
    prompts = np.array([r[1] for r in rows], dtype=object)
    verdict: np.ndarray | None = None
    conf: np.ndarray | None = None
    cfg_hash = ""
    if cid is not None and project.component_version("spatial") >= 1:
        cols = store.load_verdict_table(cid)
        if len(cols["sample_id"]) == len(ids) and (cols["sample_id"] == ids).all():
            verdict, conf = cols["verdict"].astype(np.int64), np.asarray(cols["conf"], np.float64)
        cfg_hash = store.get_config(cid).content_hash()
    if verdict is None or conf is None:
        from .checker import evaluate
        from .config import CheckerConfig

        cfg = store.get_config(cid) if cid is not None else CheckerConfig()
        ds = load_dataset(project)
        v = evaluate(ds, cfg)
        ids = np.asarray(ds.samples.sample_id, dtype=object)
        prompts = np.asarray(ds.samples.prompt_id, dtype=object)
        verdict, conf = np.asarray(v.verdict, np.int64), np.asarray(v.conf, np.float64)
        cfg_hash = cfg.content_hash()
    outcome = np.where(verdict == PASS, 1, np.where(verdict == FAIL, 0, -1)).astype(np.int8)
    return AuditTable("spatial", TASK, ids, prompts, outcome, conf, _human(project, ids),
                      positive="PASS", negative="FAIL", outcome_title="the checker", item_title="image",
                      cluster_title="prompt", source={"config_id": cid, "config_hash": cfg_hash})


def plan_basis(project: Any) -> str:
    """What a new plan is made on: the stored verdicts of the active checker version, which the
    Calibration tab's unapplied live parameters are not."""
    cid = project.evaluations.active_id("spatial")
    if cid is None:
        return "Uses the checker's default config (none is stored yet)."
    return (f"Uses the stored verdicts of the active checker version v{cid} — not Calibration's "
            "unapplied live parameters: Apply them first to plan on them.")


def made_on(table: AuditTable) -> str:
    """The checker version whose verdicts a plan's table holds."""
    cid = table.source.get("config_id")
    return f"on the verdicts of checker version v{cid}" if cid is not None else ""
