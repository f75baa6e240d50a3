"""The ProtoBias tables of an audit (what the report and the metric page show).

`audit_tables(data, results)` gives, as lists of rows:

* ``summary`` — triplet instances, incomplete ones, runs, rated images, annotators, disputed
  images, and the lines saying which labels the human tables (``labels``) and the agreement
  table (``agreement_labels``) use;
* ``metrics`` — each metric under audit: scorer id (name + weights hash), model folder, how many
  triplet images it scored against T, and how its scores are rescaled to [0, 1];
* ``failure_by_domain`` / ``failure_by_knob`` — per metric × domain (× knob): n, failures, ties,
  failure rate, SC, PA, Δ, correct- and incorrect-ranking margins, each with its bootstrap
  interval (`metrics.metric_table`);
* ``sc_pa`` — the seed's Table 2: SC / PA / Δ per domain for every metric and the humans, on
  the triplets whose two images were rated (`metrics.sc_pa_table`);
* ``human`` — the humans' SC / PA / Δ and preference counts per domain over every rated triplet;
* ``human_agreement`` — how often each metric prefers the image the humans prefer;
* ``annotator_kappa`` — quadratic weighted κ (and unweighted κ) per pair of annotators, over the
  selection's annotators, audit sets and re-checks (its consensus rule does not apply);
* ``published_failure`` / ``published_margins`` / ``published_sc_pa`` — the seed's figures.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .data import ProtoBiasData, SelectedRatings, selected_ratings, selection_for
from .metrics import (
    annotator_kappa_table,
    human_agreement_table,
    human_scores,
    human_table,
    metric_table,
    sc_pa_table,
)
from .published import published_failure_table, published_margin_table, published_sc_pa_table
from .results import ProtoBiasResults

RESCALING_RULE = (
    "Scores are rescaled to [0, 1] per metric before SC, PA, Δ and margins are averaged: a metric with a known "
    "range is mapped linearly from it (VQA-style P(yes) and the toy metric from [0, 1], 1-4 judges and humans by "
    "(r − 1) / 3, or a range given in the config); any other metric (CLIPScore, PickScore) min-max over all its "
    "finite scores in the data set (both images, all domains). Failures compare the raw scores: "
    "M(T, I_adv) ≥ M(T, I_corr) is a failure, ties included. Intervals (95 %): failure rates and agreement "
    "with humans, Wilson over the triplets of each row; SC, PA, Δ and margins, the seeded percentile bootstrap over "
    "those triplets; a row over fewer than 10 triplets says so.")

TABLE_TITLES: dict[str, str] = {
    "summary": "What was audited",
    "metrics": "Metrics under audit",
    "failure_by_domain": "Failure rate and margins per metric × domain",
    "failure_by_knob": "Failure rate and margins per metric × domain × knob",
    "sc_pa": "SC / PA / Δ on the human-rated triplets, metrics beside humans (seed Table 2)",
    "human": "Human ratings per domain (every rated triplet)",
    "human_agreement": "Each metric's agreement with the human preference",
    "annotator_kappa": "Agreement between annotators (quadratic weighted κ on the 1-4 scale)",
    "published_failure": "Published failure rates (seed Fig. 2)",
    "published_margins": "Published ranking margins (seed Table 1)",
    "published_sc_pa": "Published SC / PA / Δ (seed Table 2)",
}


def audit_tables(data: ProtoBiasData, results: ProtoBiasResults, labels: SelectedRatings | None = None
                 ) -> dict[str, list[dict[str, Any]]]:
    """Every table (module doc); the human ones over the ratings of ``labels`` (`selected_ratings`;
    the data's own selection, `selection_for`, when None)."""
    cfg = results.cfg
    scores = results.scores(data)
    if labels is None:
        labels = selected_ratings(data, selection_for(data, cfg))
    ratings = labels.ratings
    boot: dict[str, Any] = {"n_boot": int(cfg.n_boot), "level": float(cfg.level), "seed": int(cfg.boot_seed)}
    hs = human_scores(ratings)
    rated_images = int((hs.n_corr > 0).sum() + (hs.n_adv > 0).sum())
    summary = [{
        "triplets": len(data), "incomplete_triplets": int(data.n_incomplete),
        "runs": len(set(data.run_id.tolist())), "metrics": len(results.metrics),
        "rated_images": rated_images, "annotators": len(labels.resolved.annotators),
        "disputed_images": labels.resolved.n_disputed, "labels": labels.line(),
        "agreement_labels": labels.agreement_line(), "config_hash": cfg.content_hash(),
    }]
    info = {m.metric_id: m for m in data.metric_info}
    metric_rows = []
    for j, m in enumerate(results.metrics):
        mi = info.get(m)
        metric_rows.append({
            "metric": m, "name": mi.name if mi else m.partition("@")[0], "weights": mi.weights if mi else "",
            "model": mi.model if mi else "", "triplets_scored": int(results.valid[:, j].sum()),
            "scale": results.scales[m].describe()})
    by_knob = [r for r in metric_table(scores, by_knob=True, scales=results.scales, **boot) if r["knob"] != "all"]
    return {
        "summary": summary,
        "metrics": metric_rows,
        "failure_by_domain": metric_table(scores, scales=results.scales, **boot),
        "failure_by_knob": by_knob,
        "sc_pa": sc_pa_table(scores, ratings, scales=results.scales, **boot),
        "human": human_table(ratings, data.item_id, data.domain, **boot),
        "human_agreement": human_agreement_table(scores, ratings, **boot),
        "annotator_kappa": annotator_kappa_table(labels.by_annotator, n_boot=boot["n_boot"]),
        "published_failure": published_failure_table(),
        "published_margins": published_margin_table(),
        "published_sc_pa": published_sc_pa_table(),
    }


def published_rate(metric_id: str) -> tuple[float, str] | None:
    """The seed's published overall failure rate of a workstation scorer (by its name), if any."""
    from .published import PUBLISHED_FAILURE_RATES

    name = metric_id.partition("@")[0]
    for _title, scorer, rate, rel in PUBLISHED_FAILURE_RATES:
        if scorer and scorer == name:
            return rate, rel
    return None
