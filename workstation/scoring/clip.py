"""CLIPScore and PickScore-style preference scores from a local CLIP model (transformers ``CLIPModel``).

Both embed the image with ``get_image_features`` and the text with ``get_text_features`` (the
projected embeddings), L2-normalise them and take their cosine, in float64:

- ``clipscore``: CLIPScore(I, T) = 100 · max(cos(E_I, E_T), 0) — Hessel et al. (2021) with the
  weight 100 that torchmetrics uses (the paper's w = 2.5 rescales it); per pair, so a corpus
  score is the mean of these. Scale (0, 100).
- ``pickscore``: exp(logit_scale) · cos(E_I, E_T), the raw preference logit PickScore's reference
  code computes (no clamp, no softmax over candidates). Unbounded.

Text is tokenized by the model's tokenizer and truncated to the model's context
(``text_config.max_position_embeddings``, 77 for CLIP) keeping the start and end tokens:
<start> + the first 75 tokens + <end>, exactly as OpenAI's ``clip.tokenize(truncate=True)`` used
by the CLIPScore reference code and as PickScore's processor call do. (torchmetrics instead cuts
the token ids at 77, which drops the end-of-text token CLIP pools from; for texts within 77 tokens
the two agree.) A truncated text is not an error; its detail records the token count.
With ``fixed_batch`` texts are padded to the full context, as ``clip.tokenize`` does. Each distinct
text is embedded once per scorer (``text_cache`` texts are kept), so the images of one prompt
share its text pass.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from .base import Detail, pad_rows
from .hf import HFScorer


def _pooled(out: Any) -> Any:
    """transformers < 5 returns the projected features; ≥ 5 a model output whose pooler_output they are."""
    return out if hasattr(out, "ndim") else out.pooler_output


class ClipEmbedder(HFScorer):
    """Projected, normalised CLIP image and text embeddings and their cosine, per pair."""

    what = "CLIP model"
    model_types = ("clip",)
    architectures = ("CLIPModel",)

    def __init__(self, model: Any, *, prefix: str = "", text_cache: int = 4096, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.prefix = str(prefix)  # e.g. "A photo depicts " as in the CLIPScore reference code; "" by default
        self.text_cache_size = max(0, int(text_cache))
        self._text_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        text_config = self.config.get("text_config") or {}
        self.max_text_tokens = int(text_config.get("max_position_embeddings") or 77)

    def _model_class(self) -> Any:
        from transformers import CLIPModel

        return CLIPModel

    def tokenize(self, texts: list[str]) -> Any:
        return self._tokenizer(
            [self.prefix + t for t in texts], padding="max_length" if self.fixed_batch else True,
            truncation=True, max_length=self.max_text_tokens, return_tensors="pt",
        )

    def token_counts(self, texts: list[str]) -> list[int]:
        """Tokens per text with start / end tokens, before truncation."""
        ids = self._tokenizer([self.prefix + t for t in texts], add_special_tokens=True, verbose=False)["input_ids"]
        return [len(x) for x in ids]

    def image_embeddings(self, images: list[np.ndarray]) -> np.ndarray:
        """Unit-norm float64 image embeddings (n × projection_dim)."""
        self.load()
        n = len(images)
        pixels = self.pixel_values(images, pad_rows(n, self.batch_size, self.fixed_batch))
        with self.inference():
            fi = _pooled(self._model.get_image_features(pixel_values=pixels))
        img = fi[:n].double().cpu().numpy()
        return img / np.linalg.norm(img, axis=1, keepdims=True)  # type: ignore[no-any-return]

    def text_embeddings(self, texts: list[str]) -> np.ndarray:
        """Unit-norm float64 text embeddings (n × projection_dim). Each distinct text is embedded
        once and kept (up to ``text_cache`` texts): several images of one prompt cost one text pass.
        Under ``fixed_batch`` a text's embedding does not depend on the texts embedded with it."""
        self.load()
        have = self._text_cache
        new: dict[str, np.ndarray] = {}
        todo = [t for t in dict.fromkeys(texts) if t not in have]
        bs = self.batch_size
        for start in range(0, len(todo), bs):
            part = todo[start : start + bs]
            tok = self.tokenize([part[r] for r in pad_rows(len(part), bs, self.fixed_batch)])
            with self.inference():
                ft = _pooled(self._model.get_text_features(input_ids=tok["input_ids"].to(self.device),
                                                           attention_mask=tok["attention_mask"].to(self.device)))
            txt = ft[: len(part)].double().cpu().numpy()
            new.update(zip(part, txt / np.linalg.norm(txt, axis=1, keepdims=True)))
        out = np.stack([new[t] if t in new else have[t] for t in texts])
        for t in dict.fromkeys(texts):  # most recently used last
            if t in have:
                have.move_to_end(t)
        have.update(new)
        while len(have) > self.text_cache_size:
            have.popitem(last=False)
        return out

    def embed(self, images: list[np.ndarray], texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Unit-norm float64 image and text embeddings (n × projection_dim each) of the n pairs."""
        if not images:
            return np.zeros((0, 0)), np.zeros((0, 0))
        return self.image_embeddings(images), self.text_embeddings(texts)

    def cosine(self, images: list[np.ndarray], texts: list[str]) -> np.ndarray:
        """cos(E_I, E_T) per pair, float64."""
        img, txt = self.embed(images, texts)
        return np.einsum("ij,ij->i", img, txt) if len(img) else np.zeros(0)

    def _details(self, texts: list[str]) -> list[Detail]:
        """Per text: None, or how long it was when it had to be truncated."""
        out: list[Detail] = []
        for n_tok in self.token_counts(texts):
            out.append({"truncated": True, "tokens": n_tok, "max_tokens": self.max_text_tokens}
                       if n_tok > self.max_text_tokens else None)
        return out

    def unload(self) -> None:
        super().unload()
        self._text_cache.clear()

    def provenance(self) -> dict[str, Any]:
        d = super().provenance()
        d.update(prefix=self.prefix, max_text_tokens=self.max_text_tokens, truncation="start + first tokens + end")
        return d


class ClipScorer(ClipEmbedder):
    name = "clipscore"
    scale = (0.0, 100.0)
    metric = "CLIPScore = 100 * max(cos(E_I, E_T), 0) of projected CLIP embeddings (Hessel et al. 2021, torchmetrics)"

    def _score_batch(self, images: list[np.ndarray], texts: list[str],
                     entities: list[tuple[str, ...]] | None) -> tuple[np.ndarray, list[Detail]]:
        cos = self.cosine(images, texts)
        return 100.0 * np.maximum(cos, 0.0), self._details(texts)


class PickScorer(ClipEmbedder):
    what = "PickScore model"
    name = "pickscore"
    scale = None
    metric = "PickScore = exp(logit_scale) * cos(E_I, E_T) (raw preference logit, PickScore reference code)"

    def logit_scale(self) -> float:
        self.load()
        return float(self._model.logit_scale.detach().double().exp().cpu())

    def _score_batch(self, images: list[np.ndarray], texts: list[str],
                     entities: list[tuple[str, ...]] | None) -> tuple[np.ndarray, list[Detail]]:
        cos = self.cosine(images, texts)
        return self.logit_scale() * cos, self._details(texts)

    def provenance(self) -> dict[str, Any]:
        d = super().provenance()
        if self._model is not None:
            d["logit_scale_exp"] = self.logit_scale()
        return d
