"""Florence-2 detection with the native transformers implementation (no remote code).

Two tasks: object detection ``<OD>`` (its own vocabulary, mapped to suite names through the COCO
synonyms) and phrase grounding ``<CAPTION_TO_PHRASE_GROUNDING>`` with the suite's object names as
the caption, used when queries are given. Florence-2 writes boxes as text — a phrase followed by
four ``<loc_N>`` tokens (N in 0…999 over the image's width / height) — and gives no confidence,
so a box's score here is the geometric mean of the probabilities of the tokens that produced it
(its phrase and its four locations) under greedy decoding.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from ..types import WorkstationError
from .base import Detection, make_detections
from .hf_common import HFDetector, unique_queries
from .vocab import COCO, normalize

TASKS = {"od": "<OD>", "grounding": "<CAPTION_TO_PHRASE_GROUNDING>"}
_LOC = re.compile(r"^<loc_(\d+)>$")


def parse_boxes(
    token_ids: list[int], logprobs: list[float], loc_bins: dict[int, int], stop_ids: set[int],
    skip_ids: set[int], decode: Any, width: float, height: float, bins: int = 1000,
) -> list[tuple[str, float, tuple[float, float, float, float]]]:
    """(phrase, score, box in pixels) for each "phrase <loc>×4" group of a generated sequence."""
    out = []
    phrase_ids: list[int] = []
    phrase_lp: list[float] = []
    locs: list[int] = []
    loc_lp: list[float] = []
    after_box = False
    for tid, lp in zip(token_ids, logprobs):
        if tid in stop_ids:
            break
        if tid in loc_bins:
            locs.append(loc_bins[tid])
            loc_lp.append(lp)
            if len(locs) == 4:
                x1, y1, x2, y2 = ((b + 0.5) * s / bins for b, s in zip(locs, (width, height, width, height)))
                lps = phrase_lp + loc_lp
                out.append((decode(phrase_ids).strip(), math.exp(sum(lps) / len(lps)), (x1, y1, x2, y2)))
                locs, loc_lp, after_box = [], [], True
            continue
        if tid in skip_ids:
            continue
        locs, loc_lp = [], []  # an unfinished box is dropped
        if after_box:
            phrase_ids, phrase_lp, after_box = [], [], False
        phrase_ids.append(tid)
        phrase_lp.append(lp)
    return out


def match_name(phrase: str, names: list[str]) -> str | None:
    """The query name a generated phrase stands for: exact, contained, or the same COCO class."""
    p = normalize(phrase)
    if not p:
        return None
    if p in names:
        return p
    for n in sorted(names, key=len, reverse=True):
        if re.search(rf"\b{re.escape(n)}\b", p):
            return n
    for n in names:
        if re.search(rf"\b{re.escape(p)}\b", n):
            return n
    c = COCO.canonical(p)
    if c is not None:
        for n in names:
            if COCO.canonical(n) == c:
                return n
    return None


class Florence2Detector(HFDetector):
    name = "florence2"
    model_types = ("florence2",)
    default_threshold = 0.0  # Florence-2 has no calibrated confidence; the checker's t_det applies

    def __init__(self, model: Any, *, task: str = "auto", max_new_tokens: int = 256, num_beams: int = 1,
                 **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        if task not in ("auto", *TASKS):
            raise WorkstationError(f"unknown Florence-2 task {task!r}; use auto, {', '.join(TASKS)}")
        self.task = task
        self.max_new_tokens = int(max_new_tokens)
        self.num_beams = int(num_beams)
        if "vision_config" not in self.config or self.config.get("auto_map"):
            raise WorkstationError(
                f"{self.location.path} is a Florence-2 checkpoint for remote code, which is never run; use one "
                f"converted to the native transformers format (config with vision_config / text_config)"
            )

    def _model_class(self) -> Any:
        from transformers import Florence2ForConditionalGeneration

        return Florence2ForConditionalGeneration

    def provenance(self) -> dict[str, Any]:
        d = super().provenance()
        d.update(task=self.task, max_new_tokens=self.max_new_tokens, num_beams=self.num_beams,
                 score="geometric mean of token probabilities")
        return d

    def load(self) -> None:
        if self._model is not None:
            return
        super().load()
        tok = self._processor.tokenizer
        vocab = tok.get_vocab()
        self._loc_bins = {i: int(m.group(1)) for t, i in vocab.items() if (m := _LOC.match(t))}
        self._stop_ids = {i for i in (tok.eos_token_id, tok.pad_token_id) if i is not None}
        self._skip_ids = {i for i in tok.all_special_ids if i not in self._loc_bins}

    def _detect(self, images: list[np.ndarray], queries: list[list[str]] | None) -> list[list[Detection]]:
        task = self.task if self.task != "auto" else ("od" if queries is None else "grounding")
        names = [unique_queries(None if queries is None else queries[i]) for i in range(len(images))]
        if task == "grounding":
            prompts = [TASKS["grounding"] + ". ".join(ns) for ns in names]
        else:
            prompts = [TASKS["od"]] * len(images)
        inputs = self.to_device(
            self._processor(images=self.to_pil(images), text=prompts, return_tensors="pt", padding=True)
        )

        def generate() -> Any:
            return self._model.generate(
                **inputs, max_new_tokens=self.max_new_tokens, num_beams=self.num_beams, do_sample=False,
                output_scores=True, return_dict_in_generate=True,
            )

        out = self.run(generate, len(images))
        scores = self._model.compute_transition_scores(
            out.sequences, out.scores, getattr(out, "beam_indices", None) if self.num_beams > 1 else None,
            normalize_logits=True,
        )
        seqs = out.sequences[:, -scores.shape[1] :].cpu().numpy()
        lps = scores.float().cpu().numpy()
        tok = self._processor.tokenizer
        results = []
        for i, im in enumerate(images):
            h, w = im.shape[:2]
            found = parse_boxes(seqs[i].tolist(), lps[i].tolist(), self._loc_bins, self._stop_ids, self._skip_ids,
                                lambda ids: tok.decode(ids, skip_special_tokens=True), w, h)
            labels, sc, bx = [], [], []
            for phrase, s, box in found:
                lab: str | None
                if queries is None:
                    lab = COCO.canonical(phrase) or normalize(phrase)
                else:
                    lab = match_name(phrase, names[i])
                if lab:
                    labels.append(lab)
                    sc.append(s)
                    bx.append(box)
            results.append(make_detections(labels, sc, np.asarray(bx).reshape(-1, 4), w, h, self.score_floor))
        return results
