"""YOLOX (COCO, 80 classes) from an ONNX file, run with OpenCV's DNN module on the CPU.

Pre- and post-processing follow the model's published recipe: BGR 0–255 without
normalisation; resize by r = min(S/h, S/w) and paste at the top-left of an S×S canvas filled
with 114; decode the anchor-free head per stride 8/16/32 over its grid in row-major order
(cx, cy = (out + grid)·stride, w, h = exp(out)·stride, divided by r); score = objectness × class
probability; class-aware NMS at IoU 0.45.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from ..types import WorkstationError
from .base import DEFAULT_SCORE_FLOOR, Detection, check_images, make_detections, nms
from .vocab import COCO, COCO_CLASSES, LabelVocabulary

STRIDES = (8, 16, 32)


def letterbox(image_rgb: np.ndarray, size: int) -> tuple[np.ndarray, float]:
    """RGB uint8 image → (3×S×S float32 BGR 0–255 blob, scale r), top-left padded with 114."""
    h, w = image_rgb.shape[:2]
    r = min(size / h, size / w)
    nh, nw = int(h * r), int(w * r)
    resized = cv2.resize(image_rgb[:, :, ::-1], (nw, nh), interpolation=cv2.INTER_LINEAR)
    canvas = np.full((size, size, 3), 114, dtype=np.uint8)
    canvas[:nh, :nw] = resized
    return np.ascontiguousarray(canvas.transpose(2, 0, 1), dtype=np.float32), r


def _grids(size: int) -> tuple[np.ndarray, np.ndarray]:
    grids, strides = [], []
    for s in STRIDES:
        n = size // s
        yv, xv = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        grids.append(np.stack((xv, yv), axis=-1).reshape(-1, 2))
        strides.append(np.full((n * n, 1), s))
    return np.concatenate(grids).astype(np.float32), np.concatenate(strides).astype(np.float32)


def decode(output: np.ndarray, size: int) -> np.ndarray:
    """Raw head output (A×85) → boxes cx,cy,w,h in input pixels + objectness + class probs."""
    grid, stride = _grids(size)
    if output.shape[0] != grid.shape[0]:
        raise WorkstationError(
            f"YOLOX output has {output.shape[0]} anchor points; a {size}×{size} input needs {grid.shape[0]}"
        )
    out = output.astype(np.float32).copy()
    out[:, :2] = (out[:, :2] + grid) * stride
    out[:, 2:4] = np.exp(out[:, 2:4]) * stride
    return out


class YoloxDetector:
    """COCO detector from a YOLOX ONNX export (``yolox_nano.onnx`` and relatives)."""

    def __init__(
        self,
        model: str | Path,
        *,
        name: str = "yolox",
        input_size: int = 416,
        threshold: float = 0.3,
        score_floor: float = DEFAULT_SCORE_FLOOR,
        nms_iou: float = 0.45,
        batch_size: int = 8,
        classes: tuple[str, ...] = COCO_CLASSES,
        vocabulary: LabelVocabulary = COCO,
        max_detections: int = 300,
    ) -> None:
        path = Path(model).expanduser()
        if path.is_dir():
            onnx = sorted(path.glob("*.onnx"))
            if not onnx:
                raise WorkstationError(f"no .onnx file in the YOLOX model folder {path}")
            path = onnx[0]
        if not path.is_file():
            raise WorkstationError(f"YOLOX model file not found: {path}")
        try:
            self._net = cv2.dnn.readNetFromONNX(str(path))
        except cv2.error as e:
            raise WorkstationError(f"cannot read the ONNX model {path}: {e}".strip()) from e
        self.path = path
        self.name = name
        self.input_size = int(input_size)
        self.threshold = float(threshold)
        self.score_floor = float(score_floor)
        self.nms_iou = float(nms_iou)
        self.batch_size = int(batch_size)
        self.classes = tuple(classes)
        self.vocabulary = vocabulary
        self.max_detections = int(max_detections)
        self._lock = threading.Lock()  # an OpenCV net is not safe to run from two threads at once
        self._sha256: str | None = None

    def provenance(self) -> dict[str, Any]:
        if self._sha256 is None:
            self._sha256 = hashlib.sha256(self.path.read_bytes()).hexdigest()
        return {
            "detector": self.name, "backend": "opencv-dnn", "model_file": str(self.path),
            "sha256": self._sha256, "input_size": self.input_size, "threshold": self.threshold,
            "score_floor": self.score_floor, "nms_iou": self.nms_iou, "device": "cpu",
        }

    def forward(self, images: list[np.ndarray]) -> tuple[np.ndarray, list[float]]:
        """Raw outputs (N×A×(5+C)) and scales for a batch of RGB images."""
        blobs, ratios = zip(*(letterbox(im, self.input_size) for im in images))
        batch = np.stack(blobs)
        with self._lock:
            self._net.setInput(batch)
            out = self._net.forward()
        return np.asarray(out), list(ratios)

    def postprocess(self, raw: np.ndarray, r: float, width: int, height: int,
                    queries: list[str] | None) -> list[Detection]:
        out = decode(raw, self.input_size)
        scores = out[:, 4:5] * out[:, 5:]  # objectness × class probability
        ai, ci = np.nonzero(scores >= self.score_floor)
        if len(ai) == 0:
            return []
        s = scores[ai, ci]
        cx, cy, w, h = (out[ai, k] / r for k in range(4))
        boxes = np.stack((cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2), axis=1)
        keep = nms(boxes, s, self.nms_iou, classes=ci)[: self.max_detections]
        qmap = self.vocabulary.query_map(queries)
        labels, sc, bx = [], [], []
        for k in keep:
            for lab in qmap.get(self.classes[ci[k]], []):
                labels.append(lab)
                sc.append(float(s[k]))
                bx.append(boxes[k])
        return make_detections(labels, sc, np.asarray(bx).reshape(-1, 4), width, height, self.score_floor)

    def detect_batch(
        self, images: list[np.ndarray], queries: list[list[str]] | None = None
    ) -> list[list[Detection]]:
        check_images(images, queries)
        if not images:
            return []
        raw, ratios = self.forward(images)
        return [
            self.postprocess(raw[i], ratios[i], im.shape[1], im.shape[0], None if queries is None else queries[i])
            for i, im in enumerate(images)
        ]
