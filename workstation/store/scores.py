"""Scores of images against texts by automatic metrics (CLIPScore, PickScore, VQA, ...).

One row per (sample, scorer, text): the score, the scorer's provenance id (its name and the
content hash of its weights, so two CLIP folders never mix) and an optional JSON detail (e.g.
the questions a faithfulness scorer asked and their answers). A scoring job writes them; the
methods read them (MetaLogic's CLIPScore per image, ProtoBias's metrics under audit, DyEval's
pre-marks). The text a sample is scored against is its prompt's ``attrs["score_text"]`` when
the method set one (ProtoBias scores both images against T), else the prompt's text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .base import Repo, ProjectError, _arrow, _now

SCORE_COLUMNS = ("sample_id", "scorer", "text", "score", "detail")


class ScoresRepo(Repo):
    """Metric scores per (sample, scorer, text)."""

    def add(self, cols: Mapping[str, Sequence[Any]], *, replace: bool = True) -> int:
        """Insert score rows (columns sample_id, scorer, text, score, optional detail) in one
        transaction; a row for a (sample, scorer, text) already stored replaces it."""
        self._check_writable()
        n = len(cols["sample_id"])
        if n == 0:
            return 0
        data = {
            "sample_id": np.asarray(cols["sample_id"], dtype=object),
            "scorer": np.asarray(cols["scorer"], dtype=object),
            "text": np.asarray(cols["text"], dtype=object),
            "score": np.asarray(cols["score"], dtype=np.float64),
            "detail": np.asarray(cols.get("detail", [None] * n), dtype=object),
            "created_at": np.array([_now()] * n, dtype=object),
        }
        with self.transaction():
            self.con.register("_new_scores", _arrow({k: data[k] for k in ("sample_id", "scorer", "text")}))
            try:
                bad = self.con.execute(
                    "SELECT n.sample_id FROM _new_scores n LEFT JOIN samples s USING (sample_id) "
                    "WHERE s.sample_id IS NULL LIMIT 1").fetchone()
                if bad:
                    raise ProjectError(f"score for unknown sample {bad[0]!r}")
                if replace:
                    self.con.execute("DELETE FROM scores AS s USING _new_scores AS n WHERE s.sample_id = n.sample_id "
                                     "AND s.scorer = n.scorer AND s.text = n.text")
            finally:
                self.con.unregister("_new_scores")
            self._insert("scores", data)
        return n

    def scorers(self) -> list[dict[str, Any]]:
        """Every scorer with scores in the project: id, number of scores."""
        return [{"scorer": s, "scores": int(n)} for s, n in self.con.execute(
            "SELECT scorer, count(*) FROM scores GROUP BY scorer ORDER BY scorer").fetchall()]

    def table(self, scorer: str | None = None, sample_ids: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """Score rows (sample_id, scorer, text, score, detail) as numpy columns."""
        conds: list[str] = []
        params: list[Any] = []
        if scorer:
            conds.append("scorer = ?")
            params.append(scorer)
        if sample_ids is not None:
            conds.append("sample_id IN (SELECT unnest(?))")
            params.append(list(sample_ids))
        t = self.con.execute("SELECT sample_id, scorer, text, score, detail FROM scores "
                             + ("WHERE " + " AND ".join(conds) + " " if conds else "")
                             + "ORDER BY sample_id, scorer", params).to_arrow_table()
        return {k: t.column(k).to_numpy(zero_copy_only=False) for k in t.column_names}
