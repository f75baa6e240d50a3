"""OWL-ViT and OWLv2 open-vocabulary detection with text queries (transformers).

Each suite object name becomes a query "a photo of a {name}"; each predicted box (one per image
patch) gets the query with the highest score, then class-aware NMS. OWLv2 pads images to a
square at the bottom / right, so its normalised boxes scale by max(H, W); OWL-ViT resizes to a
square, so they scale by (W, H).
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from .base import Detection, make_detections, nms
from .hf_common import HFDetector, unique_queries
from .vocab import DEFAULT_QUERY_TEMPLATE, query_text


class OwlDetector(HFDetector):
    name = "owlv2"
    model_types = ("owlv2", "owlvit")
    default_threshold = 0.1

    def __init__(self, model: Any, *, query_template: str = DEFAULT_QUERY_TEMPLATE, nms_iou: float | None = 0.5,
                 max_detections: int = 100, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.query_template = query_template
        self.nms_iou = nms_iou
        self.max_detections = int(max_detections)
        self.is_v2 = self.config.get("model_type") == "owlv2"

    def _model_class(self) -> Any:
        import transformers

        return transformers.Owlv2ForObjectDetection if self.is_v2 else transformers.OwlViTForObjectDetection

    def provenance(self) -> dict[str, Any]:
        d = super().provenance()
        d.update(query_template=self.query_template, nms_iou=self.nms_iou)
        return d

    def _owlv2_pixels(self, image: np.ndarray) -> np.ndarray:
        """OWLv2 preprocessing with OpenCV (no scipy / torchvision needed), as transformers does it:
        scale to [0, 1], pad bottom / right to a square with 0, Gaussian anti-aliasing with
        sigma = (factor - 1) / 2, bilinear resize, CLIP normalisation. Returns 3×S×S float32."""
        ip = self._processor.image_processor
        size = ip.size
        out_h, out_w = (size["height"], size["width"]) if "height" in size else (size["shortest_edge"],) * 2
        img = image.astype(np.float32) / 255.0
        h, w = img.shape[:2]
        side = max(h, w)
        sq = np.zeros((side, side, 3), np.float32)
        sq[:h, :w] = img
        sig_y, sig_x = max((side / out_h - 1) / 2, 0.0), max((side / out_w - 1) / 2, 0.0)
        if sig_y > 0 and sig_x > 0:
            ky, kx = 2 * int(np.ceil(3 * sig_y)) + 1, 2 * int(np.ceil(3 * sig_x)) + 1
            sq = cv2.GaussianBlur(sq, (kx, ky), sigmaX=sig_x, sigmaY=sig_y, borderType=cv2.BORDER_REFLECT_101)
        sq = cv2.resize(sq, (out_w, out_h), interpolation=cv2.INTER_LINEAR)
        mean = np.asarray(ip.image_mean, np.float32)
        std = np.asarray(ip.image_std, np.float32)
        return np.ascontiguousarray(((sq - mean) / std).transpose(2, 0, 1))

    def _detect(self, images: list[np.ndarray], queries: list[list[str]] | None) -> list[list[Detection]]:
        torch = self._torch
        names = [unique_queries(None if queries is None else queries[i]) for i in range(len(images))]
        # an image with nothing to look for still needs one query for the batch; its column is ignored
        texts = [[query_text(n, self.query_template) for n in ns] or [" "] for ns in names]
        if self.is_v2:
            inputs = self._processor(text=texts, return_tensors="pt", truncation=True)
            inputs["pixel_values"] = torch.from_numpy(np.stack([self._owlv2_pixels(im) for im in images]))
        else:
            inputs = self._processor(text=texts, images=self.to_pil(images), return_tensors="pt", truncation=True)
        inputs = self.to_device(inputs)
        outputs = self.run(lambda: self._model(**inputs), len(images))
        probs = torch.sigmoid(outputs.logits.float()).cpu().numpy()  # B × patches × max queries
        boxes = outputs.pred_boxes.float().cpu().numpy()  # B × patches × (cx, cy, w, h), normalised
        results: list[list[Detection]] = []
        for i, im in enumerate(images):
            h, w = im.shape[:2]
            nq = len(names[i])
            if nq == 0:
                results.append([])
                continue
            p = probs[i, :, :nq]
            label_idx = p.argmax(axis=1)
            score = p[np.arange(len(p)), label_idx]
            keep = score >= self.score_floor
            cx, cy, bw, bh = (boxes[i, keep, k] for k in range(4))
            sx, sy = (max(h, w), max(h, w)) if self.is_v2 else (w, h)
            xyxy = np.stack(((cx - bw / 2) * sx, (cy - bh / 2) * sy, (cx + bw / 2) * sx, (cy + bh / 2) * sy), axis=1)
            s, li = score[keep], label_idx[keep]
            if self.nms_iou is not None and len(s):
                k2 = nms(xyxy, s, self.nms_iou, classes=li)
                xyxy, s, li = xyxy[k2], s[k2], li[k2]
            order = np.argsort(-s, kind="stable")[: self.max_detections]
            results.append(make_detections([names[i][j] for j in li[order]], s[order], xyxy[order], w, h,
                                           self.score_floor))
        return results
