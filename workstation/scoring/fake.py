"""A scorer without a model, for tests of the job layer: numpy only, deterministic.

A pair's score is a function of the text and the image's pixel statistics (per-channel mean and
standard deviation), so the same pair always gets the same score in any batch. ``oom_above``
makes a batch of more pairs fail as if the accelerator ran out of memory, to exercise halving.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from .base import BatchedScorer, Detail, Scale, ScoringOutOfMemory


class FakeScorer(BatchedScorer):
    name = "fake"

    def __init__(self, *, batch_size: int = 16, scale: Scale = (0.0, 100.0), oom_above: int | None = None,
                 **_: Any) -> None:
        super().__init__(batch_size=batch_size, fixed_batch=False)
        self.scale = scale
        self.oom_above = oom_above
        self.calls = 0  # forward passes run (tests look at it)

    def provenance(self) -> dict[str, Any]:
        d = super().provenance()
        d.update(backend="fake", model_path=None, weights_sha256="none")
        return d

    @staticmethod
    def unit(image: np.ndarray, text: str) -> float:
        """A number in [0, 1) from the text and the image's per-channel mean and standard deviation."""
        px = image.reshape(-1, 3).astype(np.float64)
        stats = np.concatenate([px.mean(axis=0), px.std(axis=0)]).round(6)
        digest = hashlib.sha256(text.encode("utf-8") + b"\x00" + stats.tobytes()).digest()
        return int.from_bytes(digest[:8], "little") / 2.0**64

    def _score_batch(self, images: list[np.ndarray], texts: list[str],
                     entities: list[tuple[str, ...]] | None) -> tuple[np.ndarray, list[Detail]]:
        if self.oom_above is not None and len(images) > self.oom_above:
            raise ScoringOutOfMemory(len(images), "fake scorer: simulated")
        self.calls += 1
        lo, hi = self.scale if self.scale is not None else (-10.0, 10.0)
        u = np.array([self.unit(im, t) for im, t in zip(images, texts)], dtype=np.float64)
        return lo + (hi - lo) * u, [None] * len(images)
