"""A generator without models, for tests of the job layer and for demos: numpy only.

Each image is a deterministic function of (prompt, seed, size): a smooth colour field with the
prompt's objects drawn as two rectangles placed by the grounding (or by the relation named in the
prompt), so re-making a sample gives the same pixels and detectors have something to find.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from .base import GenerationParams, GenerationRequest, Grounding, ProgressFn, layout_boxes


class FakeGenerator:
    """Deterministic images from prompts and seeds; no torch, no weights."""

    name = "fake"

    def __init__(self, **_: Any) -> None:
        self.calls = 0  # batches run (tests look at it)

    def provenance(self) -> dict[str, Any]:
        return {"generator": self.name, "model_id": "fake", "weights_fingerprint": "none"}

    @staticmethod
    def _boxes(prompt: str, grounding: Grounding | None) -> list[tuple[float, float, float, float]]:
        if grounding is not None:
            return list(grounding.boxes)
        text = prompt.lower()
        for phrase, rel in (("left of", "left_of"), ("right of", "right_of"), ("above", "above"), ("below", "below")):
            if phrase in text:
                return layout_boxes(rel)
        return layout_boxes("left_of")

    def image(self, prompt: str, seed: int, params: GenerationParams, grounding: Grounding | None = None) -> np.ndarray:
        digest = hashlib.sha256(f"{prompt}\x00{seed}".encode()).digest()
        rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
        h, w = params.height, params.width
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        base = rng.uniform(60, 200, size=3)
        grad = rng.uniform(-40, 40, size=(2, 3))
        img = base + (xx[..., None] / w) * grad[0] + (yy[..., None] / h) * grad[1]
        for box in self._boxes(prompt, grounding):
            x1, y1, x2, y2 = int(box[0] * w), int(box[1] * h), int(box[2] * w), int(box[3] * h)
            img[y1:y2, x1:x2] = rng.uniform(0, 255, size=3)
        return np.clip(img, 0, 255).astype(np.uint8)

    def generate(self, request: GenerationRequest, params: GenerationParams,
                 progress: ProgressFn | None = None) -> list[np.ndarray]:
        self.calls += 1
        g = request.groundings
        out = []
        for i, (p, s) in enumerate(zip(request.prompts, request.seeds)):
            out.append(self.image(p, int(s), params, None if g is None else g[i]))
        if progress is not None:
            for step in range(params.steps):
                progress(step + 1, params.steps)
        return out
