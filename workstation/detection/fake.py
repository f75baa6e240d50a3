"""A detector without a model, for tests of the job layer: numpy only, deterministic.

For every query name it reports one box whose place and score are a function of the image's
pixels and the name, so the same image always gives the same detections.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from .base import DEFAULT_SCORE_FLOOR, Detection, check_images, make_detections
from .vocab import normalize


class FakeDetector:
    name = "fake"

    def __init__(self, *, threshold: float = 0.0, score_floor: float = DEFAULT_SCORE_FLOOR, batch_size: int = 16,
                 default_queries: tuple[str, ...] = ("object",), **_: Any) -> None:
        self.threshold = float(threshold)
        self.score_floor = float(score_floor)
        self.batch_size = int(batch_size)
        self.default_queries = default_queries
        self.calls = 0

    def provenance(self) -> dict[str, Any]:
        return {"detector": self.name, "backend": "fake", "threshold": self.threshold, "score_floor": self.score_floor}

    def detect_batch(self, images: list[np.ndarray], queries: list[list[str]] | None = None) -> list[list[Detection]]:
        check_images(images, queries)
        self.calls += 1
        out = []
        for i, im in enumerate(images):
            h, w = im.shape[:2]
            digest = hashlib.sha256(np.ascontiguousarray(im).tobytes()).digest()
            labels, scores, boxes = [], [], []
            for name in (self.default_queries if queries is None else queries[i]):
                rng = np.random.default_rng(int.from_bytes(hashlib.sha256(digest + normalize(name).encode()).digest()[:8], "little"))
                x1, y1 = rng.uniform(0, 0.6) * w, rng.uniform(0, 0.6) * h
                boxes.append((x1, y1, x1 + rng.uniform(0.1, 0.4) * w, y1 + rng.uniform(0.1, 0.4) * h))
                scores.append(float(rng.uniform(0.3, 0.99)))
                labels.append(normalize(name))
            out.append(make_detections(labels, scores, np.asarray(boxes).reshape(-1, 4), w, h, self.score_floor))
        return out
