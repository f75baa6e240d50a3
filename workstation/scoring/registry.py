"""The scorer registry: image–text scoring backends by name, imported only when used."""

from __future__ import annotations

from typing import Any

from ..registry import Entry, Registry
from .base import Scorer

__all__ = ["SCORERS", "Entry", "Registry", "available_scorers", "create_scorer"]

SCORERS: Registry[Scorer] = Registry("scorer")

_HF = ("torch", "transformers")
SCORERS.register(
    "clipscore", "workstation.scoring.clip:ClipScorer", requires=_HF, aliases=("clip_score", "clip"),
    description="CLIPScore = 100·max(cos(E_I, E_T), 0) with a local CLIP model (0–100)",
)
SCORERS.register(
    "pickscore", "workstation.scoring.clip:PickScorer", requires=_HF, aliases=("pick_score",),
    description="PickScore-style preference logit exp(logit_scale)·cos with a local CLIP-architecture model",
)
SCORERS.register(
    "vqa_yes", "workstation.scoring.blip_vqa:VqaYesScorer", requires=_HF, aliases=("vqascore", "vqa"),
    description="P('yes') to 'Does this image show {T}?' from a local BLIP VQA model (0–1)",
)
SCORERS.register(
    "vqa_faithfulness", "workstation.scoring.faithfulness:VqaFaithfulnessScorer", requires=_HF,
    aliases=("faithfulness", "tifa"),
    description="fraction of prompt-derived questions a local BLIP VQA model answers as expected (0–1)",
)
SCORERS.register(
    "fake", "workstation.scoring.fake:FakeScorer",
    description="deterministic scores from pixel statistics and the text, no model (tests of the job layer)",
)


# create_scorer: build the scorer registered as a name (e.g. ``create_scorer("clipscore", model=folder)``);
# available_scorers: the registered scorers whose optional packages are installed
create_scorer = SCORERS.create
available_scorers = SCORERS.available
