"""The seed's published figures, as reference tables beside measured ones.

Failure rates: seed §5.1 / Fig. 2 (overall, all domains). VQAScore and GPT-4o are only given as
"over 45 %" (``relation`` ">"). Margins: seed Table 1. SC / PA / Δ: seed Table 2 (scores
rescaled to [0, 1], on the 300 human-annotated triplets). ``scorer`` is the name the
workstation's scorers use for the metric ("" where the workstation has none).
"""

from __future__ import annotations

from typing import Any

#: (metric, scorer name, failure rate as a fraction, relation: "=" exact or ">" a lower bound)
PUBLISHED_FAILURE_RATES: tuple[tuple[str, str, float, str], ...] = (
    ("CLIPScore", "clipscore", 0.7162, "="),
    ("PickScore", "pickscore", 0.7020, "="),
    ("VQAScore", "vqa_yes", 0.45, ">"),
    ("GPT-4o", "", 0.45, ">"),
    ("GPT-5", "", 0.2407, "="),
    ("ProtoScore", "", 0.3160, "="),
)

_DOMS = ("animals", "demography", "objects")

#: Table 1: metric -> (correct-ranking margin, incorrect-ranking margin) per domain
PUBLISHED_MARGINS: dict[str, dict[str, tuple[float, float]]] = {
    m: dict(zip(_DOMS, zip(c, i))) for m, c, i in (
        ("CLIPScore", (0.187, 0.151, 0.196), (0.252, 0.127, 0.096)),
        ("PickScore", (0.211, 0.186, 0.181), (0.155, 0.217, 0.090)),
        ("VQAScore", (0.142, 0.069, 0.225), (0.152, 0.124, 0.018)),
        ("GPT-4o", (0.618, 0.515, 0.565), (0.417, 0.272, 0.167)),
        ("GPT-5", (0.667, 0.420, 0.653), (0.000, 0.048, 0.000)),
        ("ProtoScore", (0.361, 0.358, 0.346), (0.062, 0.057, 0.038)),
    )
}

#: Table 2: metric (or "Human") -> domain -> (SC, PA, Δ)
PUBLISHED_SC_PA: dict[str, dict[str, tuple[float, float, float]]] = {
    "CLIPScore": {"animals": (0.63, 0.74, -0.10), "demography": (0.56, 0.69, -0.13), "objects": (0.60, 0.51, 0.08)},
    "PickScore": {"animals": (0.55, 0.57, -0.02), "demography": (0.36, 0.24, 0.11), "objects": (0.35, 0.29, 0.07)},
    "VQAScore": {"animals": (0.87, 0.79, 0.08), "demography": (0.39, 0.50, -0.11), "objects": (0.93, 0.75, 0.19)},
    "GPT-4o": {"animals": (0.60, 0.60, 0.00), "demography": (0.53, 0.50, 0.03), "objects": (0.50, 0.22, 0.28)},
    "GPT-5": {"animals": (0.73, 0.26, 0.47), "demography": (0.56, 0.25, 0.31), "objects": (1.00, 0.33, 0.67)},
    "ProtoScore": {"animals": (0.83, 0.52, 0.32), "demography": (0.75, 0.57, 0.18), "objects": (0.89, 0.54, 0.35)},
    "Human": {"animals": (0.89, 0.24, 0.65), "demography": (0.50, 0.17, 0.33), "objects": (0.84, 0.40, 0.44)},
}

#: seed §5.2: pairwise quadratic weighted κ between the five annotators ranged over this interval
PUBLISHED_KAPPA_RANGE: tuple[float, float] = (0.60, 0.84)


def published_failure_table() -> list[dict[str, Any]]:
    """Rows: metric, scorer, failure_rate (fraction), relation ("=" or ">"), source."""
    return [{"metric": m, "scorer": s, "failure_rate": fr, "relation": rel, "source": "seed Fig. 2 / §5.1"}
            for m, s, fr, rel in PUBLISHED_FAILURE_RATES]


def published_margin_table() -> list[dict[str, Any]]:
    """Rows of Table 1: metric, domain, correct_margin, incorrect_margin."""
    return [{"metric": m, "domain": d, "correct_margin": c, "incorrect_margin": i}
            for m, per in PUBLISHED_MARGINS.items() for d, (c, i) in per.items()]


def published_sc_pa_table() -> list[dict[str, Any]]:
    """Rows of Table 2: metric, domain, sc, pa, delta."""
    return [{"metric": m, "domain": d, "sc": sc, "pa": pa, "delta": dl}
            for m, per in PUBLISHED_SC_PA.items() for d, (sc, pa, dl) in per.items()]
