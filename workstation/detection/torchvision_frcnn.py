"""torchvision Faster R-CNN (COCO, 91 category ids) — only when torchvision is installed.

The weights come from a local state-dict file (.safetensors, or .pth read with
``torch.load(weights_only=True)``); the architecture is built by name without downloading.
torchvision applies its own score cut-off at ``box_score_thresh``, set here to the score floor.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from .. import env
from ..types import WorkstationError
from .base import DEFAULT_SCORE_FLOOR, Detection, check_images, make_detections
from .vocab import COCO_SYNONYMS, TORCHVISION_COCO_CATEGORIES, LabelVocabulary


class FasterRCNNDetector:
    name = "faster_rcnn"

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        arch: str = "fasterrcnn_resnet50_fpn_v2",
        threshold: float = 0.5,
        score_floor: float = DEFAULT_SCORE_FLOOR,
        device: str = "auto",
        batch_size: int = 4,
        name: str | None = None,
    ) -> None:
        path = Path(model).expanduser()
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in (".safetensors", ".pth", ".pt"))
            if not files:
                raise WorkstationError(f"no .safetensors / .pth weights file in {path}")
            path = files[0]
        if not path.is_file():
            raise WorkstationError(f"Faster R-CNN weights file not found: {path}")
        if path.suffix == ".safetensors":
            env.check_safetensors(path)
        self.path = path
        self.arch = arch
        self.threshold = float(threshold)
        self.score_floor = float(score_floor)
        self.device_request = device
        self.batch_size = int(batch_size)
        if name:
            self.name = name
        self.vocabulary = LabelVocabulary(TORCHVISION_COCO_CATEGORIES, COCO_SYNONYMS)
        self._net: Any = None
        self.device: str | None = None
        self._sha256: str | None = None

    def load(self) -> None:
        if self._net is not None:
            return
        import torch
        import torchvision

        builder = getattr(torchvision.models.detection, self.arch, None)
        if builder is None:
            raise WorkstationError(f"torchvision has no detection model {self.arch!r}")
        net = builder(weights=None, weights_backbone=None, num_classes=len(TORCHVISION_COCO_CATEGORIES),
                      box_score_thresh=self.score_floor)
        try:
            if self.path.suffix == ".safetensors":
                from safetensors.torch import load_file

                state = load_file(str(self.path))
            else:
                state = torch.load(str(self.path), map_location="cpu", weights_only=True)
            net.load_state_dict(state)
        except Exception as e:
            raise WorkstationError(f"cannot load Faster R-CNN weights from {self.path}: {type(e).__name__}: {e}") from e
        self.device = env.pick_device(self.device_request)
        self._net = net.eval().to(self.device)
        self._torch = torch

    def provenance(self) -> dict[str, Any]:
        if self._sha256 is None:
            h = hashlib.sha256()
            with self.path.open("rb") as f:
                for chunk in iter(lambda: f.read(1 << 22), b""):
                    h.update(chunk)
            self._sha256 = h.hexdigest()
        return {"detector": self.name, "backend": "torchvision", "arch": self.arch, "model_file": str(self.path),
                "sha256": self._sha256, "threshold": self.threshold, "score_floor": self.score_floor,
                "device": self.device, "packages": env.package_versions(("torch", "torchvision"))}

    def detect_batch(self, images: list[np.ndarray], queries: list[list[str]] | None = None) -> list[list[Detection]]:
        check_images(images, queries)
        if not images:
            return []
        self.load()
        torch = self._torch
        tensors = [torch.from_numpy(np.ascontiguousarray(im)).permute(2, 0, 1).float().div(255).to(self.device)
                   for im in images]
        with torch.inference_mode():
            outputs = self._net(tensors)
        results = []
        for i, (im, o) in enumerate(zip(images, outputs)):
            h, w = im.shape[:2]
            qmap = self.vocabulary.query_map(None if queries is None else queries[i])
            labels, sc, bx = [], [], []
            for lab_id, s, b in zip(o["labels"].cpu().numpy(), o["scores"].cpu().numpy(), o["boxes"].cpu().numpy()):
                name = self.vocabulary.classes[int(lab_id)] if int(lab_id) < len(self.vocabulary.classes) else "n/a"
                for lab in qmap.get(name, []):
                    labels.append(lab)
                    sc.append(float(s))
                    bx.append(b)
            results.append(make_detections(labels, sc, np.asarray(bx).reshape(-1, 4), w, h, self.score_floor))
        return results
