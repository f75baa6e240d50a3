"""MetaLogic: robustness of text-to-image models to logically equivalent prompts (METHODS.md §2).

Pairs of prompts that say the same thing in different logical forms (Commutative, Associative,
Distributive, DeMorgan, Complement) are rendered with the same seed; the two images must show the
same entities, counts and order. The method's pure core:

=====================  ==============================================================================
module                 what
=====================  ==============================================================================
``forms``              propositional forms: expression tree, parser, truth tables, the single model
``laws``               the laws, modifiers, dimensions and the prompt templates (main + student)
``suite``              `build_suite` -> `MetaLogicSuite` of `PairSpec` (seeded, content-hashed)
``io``                 custom pair files: `load_pairs` (JSONL / CSV), `write_pairs`
``config``             `MetaLogicConfig` (the live thresholds)
``data``               `PairData`: image pairs and their detections as numpy arrays
``compare``            `evaluate` (vectorised) / `evaluate_reference` (per pair) -> `PairResults`
``metrics``            misalignment rates with Wilson intervals, heatmap, published figures, student scores
``demo``               procedural image pairs with injected errors per law
=====================  ==============================================================================

Names below are imported on first use (the package itself imports nothing heavy).
"""

from __future__ import annotations

import importlib
from typing import Any

NAME = "metalogic"
TITLE = "MetaLogic (logically equivalent prompts)"

_EXPORTS: dict[str, str] = {
    # suites
    "LAWS": "laws", "MODIFIERS": "laws", "DIMENSIONS": "laws", "Template": "laws",
    "MAIN_TEMPLATES": "laws", "STUDENT_TEMPLATES": "laws",
    "PairSpec": "suite", "MetaLogicSuite": "suite", "build_suite": "suite", "vocabulary": "suite",
    "pair_seed": "suite", "load_pairs": "io", "write_pairs": "io",
    "parse_form": "forms:parse", "form_text": "forms:to_text", "equivalent": "forms", "unique_model": "forms",
    # comparison
    "MetaLogicConfig": "config", "PairData": "data", "PairResults": "results", "VERDICTS": "results",
    "KINDS": "results", "REASONS": "results", "LABEL_SCHEME": "results",
    "prepare": "compare", "evaluate": "compare", "evaluate_reference": "reference",
    # metrics
    "PUBLISHED": "metrics", "rate_rows": "metrics", "misalignment_tables": "metrics", "heatmap": "metrics",
    "pair_scores": "metrics", "score_tables": "metrics",
    # demo
    "DEFAULT_ERROR_RATES": "demo", "render_pair": "demo", "render_and_detect": "demo",
}

__all__ = ["NAME", "TITLE", "default_config", "config_from_dict", "label_schemes", *_EXPORTS]


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    mod, _, attr = target.partition(":")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), attr or name)
    globals()[name] = value
    return value


def default_config() -> Any:
    """The default `MetaLogicConfig`."""
    from .config import MetaLogicConfig

    return MetaLogicConfig()


def config_from_dict(d: Any) -> Any:
    """A validated `MetaLogicConfig` from a mapping (ValueError on unknown or bad values)."""
    from .config import MetaLogicConfig

    return MetaLogicConfig.from_dict(d)


def label_schemes() -> tuple[Any, ...]:
    """The method's human label schemes (one: ``metalogic.pair``)."""
    from .results import LABEL_SCHEME

    return (LABEL_SCHEME,)
