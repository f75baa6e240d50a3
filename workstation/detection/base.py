"""The detector interface: a small ``Detection`` record and the ``Detector`` protocol.

Detectors work on batches of RGB uint8 images (H×W×3 numpy arrays) and return, per image, the
detections whose score is at least the detector's ``score_floor`` (a low floor such as 0.05, so
that the cache can serve any later threshold). ``threshold`` is the detector's own cut-off: the
checker's effective cut-off is ``max(t_det, threshold)``. Boxes are xyxy in pixels of the image
given, clipped to it. Labels are lower case; when ``queries`` are given (the suite's object
names for that image) a detection is reported under the query name it answers.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..types import WorkstationError
from ..util.images import rgb_array_problem

DEFAULT_SCORE_FLOOR = 0.05


@dataclass(frozen=True)
class Detection:
    """One detected object: label (lower case), score in [0, 1], box xyxy in pixels."""

    label: str
    score: float
    box: tuple[float, float, float, float]

    @property
    def x1(self) -> float:
        return self.box[0]

    @property
    def y1(self) -> float:
        return self.box[1]

    @property
    def x2(self) -> float:
        return self.box[2]

    @property
    def y2(self) -> float:
        return self.box[3]

    @property
    def area(self) -> float:
        return max(0.0, self.box[2] - self.box[0]) * max(0.0, self.box[3] - self.box[1])

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "score": self.score, "box_xyxy": list(self.box)}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> "Detection":
        x1, y1, x2, y2 = (float(v) for v in d["box_xyxy"])
        return Detection(str(d["label"]), float(d["score"]), (x1, y1, x2, y2))


@runtime_checkable
class Detector(Protocol):
    """What the job layer needs from a detector backend."""

    name: str  # registry name, e.g. "yolox_nano"
    threshold: float  # the detector's own cut-off (provenance; the checker applies it)
    score_floor: float  # detections below this are not returned
    batch_size: int  # preferred number of images per detect_batch call

    def detect_batch(
        self, images: list[np.ndarray], queries: list[list[str]] | None = None
    ) -> list[list[Detection]]:
        """Detections per image; ``queries[i]`` are the object names to look for in image i."""
        ...

    def provenance(self) -> dict[str, Any]:
        """Model id / folder / revision / fingerprint, thresholds, device: stored with the results."""
        ...


def check_images(images: Sequence[np.ndarray], queries: Sequence[Sequence[str]] | None) -> None:
    """Raise a clear error for anything but H×W×3 uint8 images, or queries of the wrong length."""
    for i, im in enumerate(images):
        problem = rgb_array_problem(im)
        if problem:
            raise WorkstationError(f"image {i} of the batch {problem}")
    if queries is not None and len(queries) != len(images):
        raise WorkstationError(f"{len(queries)} query lists given for {len(images)} images")


def clip_box(box: Sequence[float] | np.ndarray, width: float,
             height: float) -> tuple[float, float, float, float]:
    x1, y1, x2, y2 = (float(v) for v in box)
    x1, x2 = min(max(x1, 0.0), width), min(max(x2, 0.0), width)
    y1, y2 = min(max(y1, 0.0), height), min(max(y2, 0.0), height)
    return (min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2))


def make_detections(
    labels: Sequence[str], scores: Sequence[float] | np.ndarray, boxes: np.ndarray, width: float,
    height: float, score_floor: float,
) -> list[Detection]:
    """Detections sorted by descending score, clipped to the image, below-floor and empty boxes dropped."""
    out = []
    for lab, s, b in zip(labels, scores, np.asarray(boxes, dtype=np.float64).reshape(-1, 4)):
        s = float(s)
        if not math.isfinite(s) or s < score_floor:
            continue
        cb = clip_box(b, width, height)
        if cb[2] - cb[0] <= 0 or cb[3] - cb[1] <= 0:
            continue
        out.append(Detection(str(lab).lower(), min(s, 1.0), cb))
    out.sort(key=lambda d: -d.score)
    return out


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU matrix between xyxy boxes a (N×4) and b (M×4)."""
    a = np.asarray(a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
    ix1 = np.maximum(a[:, None, 0], b[None, :, 0])
    iy1 = np.maximum(a[:, None, 1], b[None, :, 1])
    ix2 = np.minimum(a[:, None, 2], b[None, :, 2])
    iy2 = np.minimum(a[:, None, 3], b[None, :, 3])
    inter = np.clip(ix2 - ix1, 0, None) * np.clip(iy2 - iy1, 0, None)
    area_a = (a[:, 2] - a[:, 0]).clip(0) * (a[:, 3] - a[:, 1]).clip(0)
    area_b = (b[:, 2] - b[:, 0]).clip(0) * (b[:, 3] - b[:, 1]).clip(0)
    union = area_a[:, None] + area_b[None, :] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def nms(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float, classes: np.ndarray | None = None) -> np.ndarray:
    """Greedy non-maximum suppression; class-aware when ``classes`` is given. Returns kept indices."""
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    if len(boxes) == 0:
        return np.zeros(0, dtype=np.int64)
    if classes is not None:
        # offset each class far apart so boxes of different classes never overlap
        span = float(boxes.max() - boxes.min()) + 1.0
        boxes = boxes + (np.asarray(classes, dtype=np.float64) * span)[:, None]
    order = np.argsort(-scores, kind="stable")
    keep: list[int] = []
    while len(order):
        i = int(order[0])
        keep.append(i)
        if len(order) == 1:
            break
        ious = box_iou(boxes[i : i + 1], boxes[order[1:]])[0]
        order = order[1:][ious <= iou_threshold]
    return np.asarray(keep, dtype=np.int64)


def iter_batches(n: int, batch_size: int) -> Iterator[slice]:
    """Slices of ``range(n)`` of at most ``batch_size`` items."""
    if batch_size < 1:
        raise WorkstationError(f"batch size must be at least 1, got {batch_size}")
    for start in range(0, n, batch_size):
        yield slice(start, min(n, start + batch_size))


def detect_iter(
    detector: Detector, images: Sequence[np.ndarray], queries: Sequence[list[str]] | None = None,
    batch_size: int | None = None,
) -> Iterator[tuple[slice, list[list[Detection]]]]:
    """Run ``detector`` over many images batch by batch; stop iterating to cancel between batches."""
    bs = batch_size or detector.batch_size
    for sl in iter_batches(len(images), bs):
        q = None if queries is None else list(queries[sl])
        yield sl, detector.detect_batch(list(images[sl]), q)


def detections_to_columns(per_image: Sequence[Sequence[Detection]]) -> dict[str, np.ndarray]:
    """Flatten per-image detections into numpy columns (image_index, label, score, x1, y1, x2, y2)."""
    idx, lab, sc, bx = [], [], [], []
    for i, dets in enumerate(per_image):
        for d in dets:
            idx.append(i)
            lab.append(d.label)
            sc.append(d.score)
            bx.append(d.box)
    b = np.asarray(bx, dtype=np.float64).reshape(-1, 4)
    return {
        "image_index": np.asarray(idx, dtype=np.int64),
        "label": np.asarray(lab, dtype=object),
        "score": np.asarray(sc, dtype=np.float64),
        "x1": b[:, 0], "y1": b[:, 1], "x2": b[:, 2], "y2": b[:, 3],
    }
