"""Grounding DINO open-set detection (transformers), queried with the suite's object names.

The caption is the names joined as "cat. teddy bear." (lower case, each ended by a full stop).
For each predicted box, the score of a name is the highest token probability over that name's
tokens; the box is reported under the best-scoring name. Long name lists are split into several
captions that fit the model's text length, and the results merged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Detection, make_detections, nms
from .hf_common import HFDetector, unique_queries


def build_caption(names: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """'cat. teddy bear.' and each name's character span within it."""
    parts, spans, pos = [], [], 0
    for n in names:
        spans.append((pos, pos + len(n)))
        parts.append(n + ".")
        pos += len(n) + 2  # name + "." + " "
    return " ".join(parts), spans


class GroundingDinoDetector(HFDetector):
    name = "grounding_dino"
    model_types = ("grounding-dino", "mm-grounding-dino")
    default_threshold = 0.35  # box threshold of the reference set-up (text threshold 0.25)

    def __init__(self, model: Any, *, nms_iou: float | None = None, max_detections: int = 100,
                 max_names_per_caption: int = 40, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.nms_iou = nms_iou
        self.max_detections = int(max_detections)
        self.max_names_per_caption = int(max_names_per_caption)

    def _model_class(self) -> Any:
        import transformers

        if self.config.get("model_type") == "mm-grounding-dino":
            return transformers.MMGroundingDinoForObjectDetection
        return transformers.GroundingDinoForObjectDetection

    def provenance(self) -> dict[str, Any]:
        d = super().provenance()
        d.update(nms_iou=self.nms_iou, caption="names joined as 'a. b.'")
        return d

    def _chunks(self, names: list[str]) -> list[list[str]]:
        """Split names so each caption stays within the model's text length."""
        tok = self._processor.tokenizer
        limit = int(self.config.get("max_text_len", 256)) - 2
        chunks: list[list[str]] = []
        cur: list[str] = []
        for n in names:
            trial = cur + [n]
            n_tok = len(tok(build_caption(trial)[0], add_special_tokens=False)["input_ids"])
            if cur and (n_tok > limit or len(trial) > self.max_names_per_caption):
                chunks.append(cur)
                cur = [n]
            else:
                cur = trial
        if cur:
            chunks.append(cur)
        return chunks

    def _detect(self, images: list[np.ndarray], queries: list[list[str]] | None) -> list[list[Detection]]:
        names = [unique_queries(None if queries is None else queries[i]) for i in range(len(images))]
        chunks = [self._chunks(ns) for ns in names]
        found: list[list[tuple[str, float, np.ndarray]]] = [[] for _ in images]
        for k in range(max((len(c) for c in chunks), default=0)):
            idx = [i for i, c in enumerate(chunks) if len(c) > k]
            self._run_chunk([images[i] for i in idx], [chunks[i][k] for i in idx], [found[i] for i in idx])
        results: list[list[Detection]] = []
        for i, im in enumerate(images):
            h, w = im.shape[:2]
            if not found[i]:
                results.append([])
                continue
            labels = [f[0] for f in found[i]]
            scores = np.asarray([f[1] for f in found[i]])
            boxes = np.stack([f[2] for f in found[i]])
            if self.nms_iou is not None:
                cls = np.unique(labels, return_inverse=True)[1]
                keep = nms(boxes, scores, self.nms_iou, classes=cls)
                labels, scores, boxes = [labels[j] for j in keep], scores[keep], boxes[keep]
            order = np.argsort(-scores, kind="stable")[: self.max_detections]
            results.append(make_detections([labels[j] for j in order], scores[order], boxes[order], w, h,
                                           self.score_floor))
        return results

    def _run_chunk(self, images: list[np.ndarray], names: list[list[str]],
                   sinks: list[list[tuple[str, float, np.ndarray]]]) -> None:
        torch = self._torch
        captions, spans = zip(*(build_caption(ns) for ns in names))
        inputs = self._processor(images=self.to_pil(images), text=list(captions), return_tensors="pt", padding=True)
        offsets = self._processor.tokenizer(list(captions), return_offsets_mapping=True, padding=True)["offset_mapping"]
        inputs = self.to_device(inputs)
        outputs = self.run(lambda: self._model(**inputs), len(images))
        probs = torch.sigmoid(outputs.logits.float()).cpu().numpy()  # B × queries × text positions
        boxes = outputs.pred_boxes.float().cpu().numpy()  # B × queries × (cx, cy, w, h), normalised
        n_text = probs.shape[2]
        for b, im in enumerate(images):
            h, w = im.shape[:2]
            per_name = []
            for s0, s1 in spans[b]:
                toks = [t for t, (a, e) in enumerate(offsets[b]) if e > a and a >= s0 and e <= s1 and t < n_text]
                per_name.append(probs[b][:, toks].max(axis=1) if toks else np.zeros(probs.shape[1]))
            score_mat = np.stack(per_name, axis=1)  # queries × names
            best = score_mat.argmax(axis=1)
            score = score_mat[np.arange(len(best)), best]
            cx, cy, bw, bh = (boxes[b, :, k] for k in range(4))
            xyxy = np.stack(((cx - bw / 2) * w, (cy - bh / 2) * h, (cx + bw / 2) * w, (cy + bh / 2) * h), axis=1)
            for q in np.nonzero(score >= self.score_floor)[0]:
                sinks[b].append((names[b][best[q]], float(score[q]), xyxy[q]))
