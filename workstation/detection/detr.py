"""DETR (closed vocabulary, COCO labels) from transformers.

Each of the model's object queries gets its most probable class (softmax over classes, the
"no object" class excluded); boxes are normalised to the image, so they scale by (W, H).
Class names come from the model's ``id2label`` and are matched to suite names through the COCO
synonyms ("tv" ↔ "television", "couch" ↔ "sofa").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Detection, make_detections, nms
from .hf_common import HFDetector
from .vocab import COCO_SYNONYMS, LabelVocabulary


class DetrDetector(HFDetector):
    name = "detr"
    model_types = ("detr", "conditional_detr", "deformable_detr", "rt_detr", "rt_detr_v2", "dab-detr", "yolos")
    default_threshold = 0.5

    def __init__(self, model: Any, *, nms_iou: float | None = None, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.nms_iou = nms_iou
        id2label = {int(k): v for k, v in (self.config.get("id2label") or {}).items()}
        n = max(id2label, default=-1) + 1
        self.class_names = [id2label.get(i, "n/a") for i in range(n)]
        self.vocabulary = LabelVocabulary(self.class_names, COCO_SYNONYMS)
        # sigmoid-scored variants (deformable / conditional / RT-DETR) have no "no object" class
        self.sigmoid = self.config.get("model_type") not in ("detr", "yolos")

    def _model_class(self) -> Any:
        from transformers import AutoModelForObjectDetection

        return AutoModelForObjectDetection

    def _detect(self, images: list[np.ndarray], queries: list[list[str]] | None) -> list[list[Detection]]:
        torch = self._torch
        inputs = self.to_device(self._processor(images=self.to_pil(images), return_tensors="pt"))
        outputs = self.run(lambda: self._model(**inputs), len(images))
        logits = outputs.logits.float()
        if self.sigmoid:
            probs = torch.sigmoid(logits).cpu().numpy()
        else:
            probs = torch.softmax(logits, dim=-1)[..., :-1].cpu().numpy()
        boxes = outputs.pred_boxes.float().cpu().numpy()
        results = []
        for i, im in enumerate(images):
            h, w = im.shape[:2]
            cls = probs[i].argmax(axis=1)
            score = probs[i][np.arange(len(cls)), cls]
            cx, cy, bw, bh = (boxes[i, :, k] for k in range(4))
            xyxy = np.stack(((cx - bw / 2) * w, (cy - bh / 2) * h, (cx + bw / 2) * w, (cy + bh / 2) * h), axis=1)
            keep = score >= self.score_floor
            cls, score, xyxy = cls[keep], score[keep], xyxy[keep]
            if self.nms_iou is not None and len(score):
                k2 = nms(xyxy, score, self.nms_iou, classes=cls)
                cls, score, xyxy = cls[k2], score[k2], xyxy[k2]
            qmap = self.vocabulary.query_map(None if queries is None else queries[i])
            labels, sc, bx = [], [], []
            for c, s, b in zip(cls, score, xyxy):
                name = self.vocabulary.classes[c] if c < len(self.vocabulary.classes) else "n/a"
                for lab in qmap.get(name, []):
                    labels.append(lab)
                    sc.append(s)
                    bx.append(b)
            results.append(make_detections(labels, sc, np.asarray(bx).reshape(-1, 4), w, h, self.score_floor))
        return results
