"""The MetaLogic method's part of a project: its result sets and its human pair judgements.

Configs are the project's evaluation versions of method ``metalogic``; the result set of a
version is its rows of ``metalogic_outcomes``, one per image pair, keyed by (eval_id, pair_id,
run_id, seed) — ``pair_id`` is the suite pair, (run, seed) the images. Human judgements are label
events of task ``metalogic.pair`` on targets ``"<pair>|<run>|<seed>"``; which of them count, and
how several annotators' judgements of one pair become one, is the task's label selection
(`workstation.evaluation.selection`, `human_selected`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...types import WorkstationError
from .adapter import MetaLogicData, image_pair_ids
from .results import LABEL_SCHEME, VERDICTS, PairResults

__all__ = ["MIGRATIONS", "TABLE", "save_outcomes", "load_outcomes", "human_labels", "human_selected", "SelectedPairs",
           "has_outcomes"]

METHOD = "metalogic"
TABLE = "metalogic_outcomes"

#: the method's own tables, one list of statements per version
MIGRATIONS: list[list[Any]] = [[
    f"""CREATE TABLE {TABLE} (
        eval_id INTEGER NOT NULL, pair_id VARCHAR NOT NULL, run_id VARCHAR NOT NULL, seed BIGINT NOT NULL,
        sample_a VARCHAR, sample_b VARCHAR, law VARCHAR, modifier VARCHAR, dimension VARCHAR,
        verdict VARCHAR, kind VARCHAR, reason VARCHAR, entity VARCHAR, entity2 VARCHAR, side VARCHAR,
        conf DOUBLE, ok_a BOOLEAN, ok_b BOOLEAN, detail VARCHAR)""",
    f"CREATE INDEX metalogic_outcomes_key ON {TABLE}(eval_id, pair_id, run_id, seed)",
]]


def _ensure(project: Any) -> None:
    project.ensure_schema(METHOD, MIGRATIONS)


def has_outcomes(project: Any) -> bool:
    return int(project.component_version(METHOD)) >= 1


def save_outcomes(project: Any, eval_id: int, data: MetaLogicData, results: PairResults) -> None:
    """Replace the result set of ``eval_id`` for the image pairs of ``data`` (one transaction)."""
    _ensure(project)
    n = len(data)
    if len(results) != n:
        raise WorkstationError(f"{len(results)} MetaLogic results for {n} image pairs")
    cols = results.columns()
    detail = np.array([results.detail_text(i) for i in range(n)], dtype=object)
    with project.transaction():
        project.con.execute(f"DELETE FROM {TABLE} WHERE eval_id = ?", [int(eval_id)])
        project.insert_columns(TABLE, {
            "eval_id": np.full(n, int(eval_id), np.int32), "pair_id": data.group.astype(object),
            "run_id": data.pairs.run.astype(object), "seed": data.pairs.seed.astype(np.int64),
            "sample_a": data.sample_a, "sample_b": data.sample_b, "law": cols["law"], "modifier": cols["modifier"],
            "dimension": cols["dimension"], "verdict": cols["verdict"], "kind": cols["kind"],
            "reason": cols["reason"], "entity": cols["entity"], "entity2": cols["entity2"], "side": cols["side"],
            "conf": np.asarray(cols["conf"], np.float64), "ok_a": np.asarray(cols["ok_a"], bool),
            "ok_b": np.asarray(cols["ok_b"], bool), "detail": detail,
        })


def load_outcomes(project: Any, eval_id: int) -> dict[str, np.ndarray]:
    """The stored result set of ``eval_id`` as columns, with ``image_pair`` ("<pair>|<run>|<seed>")."""
    if not has_outcomes(project):
        return {"image_pair": np.zeros(0, dtype=object)}
    t = project.con.execute(
        f"SELECT pair_id, run_id, seed, sample_a, sample_b, law, modifier, dimension, verdict, kind, reason, entity, "
        f"entity2, side, conf, ok_a, ok_b, detail FROM {TABLE} WHERE eval_id = ?", [int(eval_id)]).to_arrow_table()
    cols = {k: t.column(k).to_numpy(zero_copy_only=False) for k in t.column_names}
    cols["image_pair"] = image_pair_ids(cols["pair_id"], cols["run_id"], cols["seed"])
    return cols


def aligned_outcomes(project: Any, eval_id: int, data: MetaLogicData) -> dict[str, np.ndarray]:
    """The stored result set of ``eval_id`` in the row order of ``data``; WorkstationError naming
    how many image pairs have no stored result (the data changed since: evaluate again)."""
    cols = load_outcomes(project, eval_id)
    ids = cols["image_pair"].astype(str)
    want = data.pair_id.astype(str)
    order = np.argsort(ids, kind="stable")
    srt = ids[order]
    if len(srt):
        pos = np.clip(np.searchsorted(srt, want), 0, len(srt) - 1)
        idx = np.where(srt[pos] == want, order[pos], -1)
    else:
        idx = np.full(len(want), -1, np.int64)
    lacking = int((idx < 0).sum())
    if lacking:
        raise WorkstationError(f"{lacking} of {len(want)} MetaLogic image pair(s) have no result under version "
                               f"v{eval_id} (e.g. {want[int(np.flatnonzero(idx < 0)[0])]!r}); run "
                               "`evaluate --method metalogic` first")
    return {k: v[idx] for k, v in cols.items()}


@dataclass
class SelectedPairs:
    """The human pair judgements of a label selection, per image pair (`human_selected`)."""

    codes: np.ndarray  # int8: 0 ALIGNED, 1 MISALIGNED, 2 UNDECIDABLE, -1 none or disputed
    disputed: np.ndarray  # bool: the selection's annotators disagree (counted in no rate)
    resolved: Any  # workstation.evaluation.selection.Resolved

    def line(self, project: Any) -> str:
        """The selection's line, with the project's audit set names."""
        from ...evaluation.selection import set_names

        return str(self.resolved.describe(set_names(project, LABEL_SCHEME.task)))

    def provenance(self, project: Any) -> dict[str, Any]:
        """What the report records: the selection, its line, items, disputed, the draw's design."""
        return {**self.resolved.provenance(), "line": self.line(project), "pairs": int((self.codes >= 0).sum())}


def human_selected(project: Any, data: MetaLogicData, selection: Any = None,
                   annotator: str | None = None) -> SelectedPairs:
    """Per image pair, the human judgement the label selection gives (the project's kept
    selection of ``metalogic.pair`` when none is given; ``annotator``: the rule
    ``annotator:NAME`` instead of the selection's own)."""
    from ...evaluation.selection import load_selection, resolve_project, with_annotator

    sel = selection
    if annotator:
        sel = with_annotator(sel if sel is not None else load_selection(project, LABEL_SCHEME.task), annotator)
    res = resolve_project(project, LABEL_SCHEME.task, sel)
    codes, _incl, disputed = res.per_row(data.row_of() if len(res) else {}, len(data),
                                         {v: i for i, v in enumerate(VERDICTS)})
    return SelectedPairs(codes, disputed, res)


def human_labels(project: Any, data: MetaLogicData, annotator: str | None = None, selection: Any = None
                 ) -> np.ndarray:
    """Per image pair, the human judgement code (0 ALIGNED, 1 MISALIGNED, 2 UNDECIDABLE) the label
    selection gives, -1 where it gives none or its annotators dispute it (`human_selected`)."""
    return human_selected(project, data, selection, annotator).codes
