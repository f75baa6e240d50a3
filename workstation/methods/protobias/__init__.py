"""ProtoBias: do image-text metrics prefer the prototypical image over the correct one?

Seed ``003_…`` (METHODS.md §3). A triplet (T, I_corr, I_adv) pits a semantically correct but
non-prototypical image against a prototypical one that violates one knob of T; a metric M fails
on T when M(T, I_adv) ≥ M(T, I_corr). This package is the method's pure core:

* `templates`, `vocab`, `build` — the seed's prompt templates over a built-in vocabulary:
  `build_triplets`, `TripletSet.to_prompt_columns` (generic ``Prompts`` columns);
* `io` — a hostile image folder with a JSONL / CSV index → validated triplets
  (`read_triplet_index`);
* `metrics` — failure rates, SC / PA, ranking margins with bootstrap intervals, human ratings,
  annotator κ, agreement with humans (`TripletScores`, `Ratings`, `metric_table`, ...);
* `published` — the seed's published figures as reference tables;
* `labels` — the 1-4 fidelity label scheme and the blind left/right order;
* `demo` — procedural triplets, their images and a toy metric of known bias.

Wired into the workstation (`method.METHOD`, registered as ``protobias``):

* `data` — how triplets live in a project (prompts ``<tid>:corr`` / ``<tid>:adv`` with
  ``score_text`` = T, images as samples of a generation or import run, metric scores from the
  ``scores`` table, ratings as ``protobias.fidelity`` label events) and `load_project_data`;
* `config` — `ProtoBiasConfig` (metrics, annotators, score ranges, bootstrap), content-hashed;
* `results` — `evaluate` (per triplet and metric: failure, tie, rescaled scores, margin) and the
  ``protobias_results`` table;
* `tables` / `report` — the audit's tables and the report section (CSV, charts, HTML);
* `importer` — an image folder into a project (``main.py protobias import``);
* `project_demo` — the demo's part and the procedural renderer of demo prompt rows.

Names are imported lazily (``from workstation.methods.protobias import metric_table`` loads only
what it needs).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    # vocabulary and templates
    "DOMAINS": "vocab", "DOMAIN_KNOBS": "vocab", "DOMAIN_TITLES": "vocab", "KNOBS": "vocab",
    "vocabulary_hash": "vocab", "TEMPLATE_VERSION": "templates", "KNOB_RULES": "templates",
    # building
    "ROLES": "build", "Triplet": "build", "TripletSet": "build", "build_triplets": "build",
    "triplet_prompt_columns": "build", "image_target_id": "build", "split_image_target_id": "build",
    # import
    "ImportedTriplets": "io", "read_triplet_index": "io", "find_index": "io",
    # statistics
    "TripletScores": "metrics", "Ratings": "metrics", "Scale": "metrics", "DEFAULT_SCALES": "metrics",
    "HumanScores": "metrics", "failures": "metrics", "rescale": "metrics", "scale_for": "metrics",
    "metric_table": "metrics", "human_scores": "metrics", "human_table": "metrics", "sc_pa_table": "metrics",
    "human_agreement_table": "metrics", "annotator_kappa_table": "metrics",
    # published figures
    "PUBLISHED_FAILURE_RATES": "published", "PUBLISHED_MARGINS": "published", "PUBLISHED_SC_PA": "published",
    "PUBLISHED_KAPPA_RANGE": "published", "published_failure_table": "published",
    "published_margin_table": "published", "published_sc_pa_table": "published",
    # labels
    "FIDELITY_SCHEME": "labels", "blind_left_is_corr": "labels", "blind_sides": "labels",
    # demo
    "build_demo_triplets": "demo", "render_demo": "demo", "ToyProtoMetric": "demo", "demo_scores": "demo",
    "parse_demo_text": "demo",
}

__all__ = [
    "DEFAULT_SCALES", "DOMAINS", "DOMAIN_KNOBS", "DOMAIN_TITLES", "FIDELITY_SCHEME", "HumanScores",
    "ImportedTriplets", "KNOBS", "KNOB_RULES", "PUBLISHED_FAILURE_RATES", "PUBLISHED_KAPPA_RANGE",
    "PUBLISHED_MARGINS", "PUBLISHED_SC_PA", "ROLES", "Ratings", "Scale", "TEMPLATE_VERSION",
    "ToyProtoMetric", "Triplet", "TripletScores", "TripletSet", "annotator_kappa_table",
    "blind_left_is_corr", "blind_sides", "build_demo_triplets", "build_triplets", "demo_scores",
    "failures", "find_index", "human_agreement_table", "human_scores", "human_table", "image_target_id",
    "metric_table", "parse_demo_text", "published_failure_table", "published_margin_table",
    "published_sc_pa_table", "read_triplet_index", "render_demo", "rescale", "sc_pa_table", "scale_for",
    "split_image_target_id", "triplet_prompt_columns", "vocabulary_hash",
]


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
