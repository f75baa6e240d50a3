"""Per-triplet results of a ProtoBias audit: for each triplet instance and each metric, the raw
scores, whether the metric failed (M(T, I_adv) ≥ M(T, I_corr); ties fail), the rescaled scores
and the margin; and the project table they are stored in (``protobias_results``).

`evaluate(data, cfg)` is pure and vectorised (numpy over triplets × metrics). The rescaling of
each metric to [0, 1] is the one `metrics` states (a known range — `metrics.DEFAULT_SCALES` or
the config's ``ranges`` — else min-max over all the metric's finite scores in the data set).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...types import WorkstationError
from .config import ProtoBiasConfig
from .data import ProtoBiasData
from .metrics import Scale, TripletScores, failures, rescale, scale_for

#: the method's own tables, one list of statements per schema version
MIGRATIONS: list[list[Any]] = [[
    """CREATE TABLE IF NOT EXISTS protobias_results (
        eval_id INTEGER NOT NULL, item_id VARCHAR NOT NULL, triplet_id VARCHAR, run_id VARCHAR, seed BIGINT,
        domain VARCHAR, knob VARCHAR, metric VARCHAR NOT NULL, score_corr DOUBLE, score_adv DOUBLE,
        sc DOUBLE, pa DOUBLE, failed BOOLEAN, tie BOOLEAN, scale VARCHAR)""",
    """CREATE INDEX IF NOT EXISTS protobias_results_eval ON protobias_results(eval_id, metric)""",
]]

RESULT_COLUMNS = ("item_id", "triplet_id", "run_id", "seed", "domain", "knob", "metric", "score_corr", "score_adv",
                  "sc", "pa", "failed", "tie", "scale")


def scales_for(metrics: tuple[str, ...], ranges: Mapping[str, tuple[float, float]] | None = None
               ) -> dict[str, Scale]:
    """The rescaling of each metric (by scorer id): the config's range for the id or for its
    name (before "@"), else the known range of the name, else min-max."""
    out: dict[str, Scale] = {}
    for m in metrics:
        name = m.partition("@")[0]
        r = None if ranges is None else (ranges.get(m) or ranges.get(name))
        out[m] = Scale("range", float(r[0]), float(r[1])) if r is not None else scale_for(name)
    return out


@dataclass
class ProtoBiasResults:
    """One audit: per triplet instance (rows) and metric (columns)."""

    ids: np.ndarray  # object str: item ids
    metrics: tuple[str, ...]
    score_corr: np.ndarray  # float64 (n, m), raw
    score_adv: np.ndarray
    valid: np.ndarray  # bool (n, m): both scores finite
    failed: np.ndarray  # bool (n, m): valid and M(adv) >= M(corr)
    tie: np.ndarray  # bool (n, m)
    sc: np.ndarray  # float64 (n, m): rescaled M(corr), NaN where not valid
    pa: np.ndarray  # rescaled M(adv)
    scales: dict[str, Scale]
    cfg: ProtoBiasConfig
    item_kind: str = "triplet"
    verdict: np.ndarray | None = None
    conf: np.ndarray | None = None
    verdict_names: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def margin(self) -> np.ndarray:
        """Rescaled M(corr) − M(adv) (NaN where not valid): > 0 ranks correctly, ≤ 0 fails."""
        return self.sc - self.pa

    def index(self, metric: str) -> int:
        try:
            return self.metrics.index(metric)
        except ValueError:
            raise WorkstationError(f"metric {metric!r} is not in this audit "
                                   f"({', '.join(self.metrics) or 'no metrics'})") from None

    def columns(self) -> dict[str, np.ndarray]:
        """One row per triplet instance: its id, then per metric the raw scores, failed, margin."""
        out: dict[str, np.ndarray] = {"item_id": self.ids}
        for j, m in enumerate(self.metrics):
            out[f"{m}:score_corr"] = self.score_corr[:, j]
            out[f"{m}:score_adv"] = self.score_adv[:, j]
            out[f"{m}:failed"] = np.where(self.valid[:, j], self.failed[:, j].astype(np.float64), np.nan)
            out[f"{m}:margin"] = self.margin[:, j]
        return out

    def long_columns(self, data: ProtoBiasData) -> dict[str, np.ndarray]:
        """One row per (triplet instance, metric): what ``protobias_results`` stores."""
        n, m = len(self.ids), len(self.metrics)
        rep = lambda a: np.repeat(np.asarray(a), m)
        return {
            "item_id": rep(self.ids).astype(object), "triplet_id": rep(data.triplet_id).astype(object),
            "run_id": rep(data.run_id).astype(object), "seed": rep(data.seed).astype(np.int64),
            "domain": rep(data.domain).astype(object), "knob": rep(data.knob).astype(object),
            "metric": np.tile(np.array(self.metrics, dtype=object), n),
            "score_corr": self.score_corr.reshape(-1), "score_adv": self.score_adv.reshape(-1),
            "sc": self.sc.reshape(-1), "pa": self.pa.reshape(-1), "failed": self.failed.reshape(-1),
            "tie": self.tie.reshape(-1),
            "scale": np.tile(np.array([self.scales[x].describe() for x in self.metrics], dtype=object), n),
        }

    def scores(self, data: ProtoBiasData) -> TripletScores:
        """The audited metrics' raw scores (the statistics' input)."""
        return TripletScores(data.item_id, data.domain, data.knob, self.metrics, self.score_corr, self.score_adv)


def evaluate(data: ProtoBiasData, cfg: ProtoBiasConfig) -> ProtoBiasResults:
    """Failures, ties, rescaled scores and margins of every audited metric on every triplet."""
    have = data.scores.metrics
    if cfg.metrics:
        missing = [m for m in cfg.metrics if m not in have]
        if missing:
            raise WorkstationError(f"metric(s) {', '.join(missing)} have no scores of triplet images in the project "
                                   f"(scored: {', '.join(have) or 'none'})")
        cols = [have.index(m) for m in cfg.metrics]
        metrics = tuple(cfg.metrics)
    else:
        cols, metrics = list(range(len(have))), tuple(have)
    raw_c = data.scores.score_corr[:, cols] if cols else np.zeros((len(data), 0))
    raw_a = data.scores.score_adv[:, cols] if cols else np.zeros((len(data), 0))
    scales = scales_for(metrics, cfg.ranges)
    fail, valid = failures(raw_c, raw_a)
    sc = np.full(raw_c.shape, np.nan)
    pa = np.full(raw_c.shape, np.nan)
    for j, m in enumerate(metrics):
        c, a = rescale(raw_c[:, j], raw_a[:, j], scales[m], m)
        sc[:, j] = np.where(valid[:, j], c, np.nan)
        pa[:, j] = np.where(valid[:, j], a, np.nan)
    return ProtoBiasResults(ids=data.item_id, metrics=metrics, score_corr=raw_c, score_adv=raw_a, valid=valid,
                            failed=fail, tie=valid & (raw_a == raw_c), sc=sc, pa=pa, scales=scales, cfg=cfg)


def save_results(project: Any, eval_id: int, data: ProtoBiasData, results: ProtoBiasResults) -> None:
    """Replace version ``eval_id``'s rows of ``protobias_results`` (in the caller's transaction)."""
    project.ensure_schema("protobias", MIGRATIONS)
    with project.transaction():
        project.con.execute("DELETE FROM protobias_results WHERE eval_id = ?", [int(eval_id)])
        cols = results.long_columns(data)
        n = len(cols["item_id"])
        if n:
            project.insert_columns("protobias_results", {"eval_id": np.full(n, int(eval_id), np.int64), **cols})


def stored_results(project: Any, eval_id: int) -> dict[str, np.ndarray]:
    """The stored rows of a version (columns of ``protobias_results``)."""
    project.ensure_schema("protobias", MIGRATIONS)
    t = project.con.execute(f"SELECT {', '.join(RESULT_COLUMNS)} FROM protobias_results WHERE eval_id = ? "
                            "ORDER BY item_id, metric", [int(eval_id)]).to_arrow_table()
    return {k: t.column(k).to_numpy(zero_copy_only=False) for k in t.column_names}
