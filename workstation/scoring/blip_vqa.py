"""Visual question answering with a local BLIP VQA model (transformers ``BlipForQuestionAnswering``).

The model is run part by part, as its own ``generate`` does: the vision tower embeds the image;
the text encoder reads the question ([CLS] … [SEP], truncated to ``max_question_tokens``) while
cross-attending to the image; the answer decoder starts from the decoder start token ([DEC]) and
cross-attends to the encoded question. Questions are never padded (they are batched by token
length), so a question gets the answer ``BlipForQuestionAnswering.generate`` gives it alone,
whatever else is in the batch; answers are greedy, at most ``max_answer_tokens`` tokens.

``vqa_yes`` — P("yes") to the question "Does this image show {T}?" (T without its trailing
punctuation). With ``mode="vocab"`` (the default) it is the softmax over the full vocabulary of
the decoder's logits at the first answer position, taken at the "yes" token: the probability
that the answer starts with "yes", as VQAScore defines it. With ``mode="yes_no"`` it is that
probability renormalised against "no": exp(z_yes) / (exp(z_yes) + exp(z_no)). Scale (0, 1).
Both "yes" and "no" must be single tokens of the model's tokenizer (they are for BERT vocabularies).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..types import WorkstationError
from .base import Detail, pad_rows
from .hf import HFScorer

DEFAULT_YES_TEMPLATE = "Does this image show {}?"
YES_MODES = ("vocab", "yes_no")


def strip_prompt(text: str) -> str:
    """The text as it goes into a question: outer whitespace and trailing punctuation removed."""
    return text.strip().rstrip(" .!?;:,").strip()


class BlipVqa(HFScorer):
    """Loading and the forward passes shared by the VQA scorers."""

    what = "BLIP VQA model"
    model_types = ("blip",)
    architectures = ("BlipForQuestionAnswering",)

    def __init__(self, model: Any, *, max_question_tokens: int = 128, max_answer_tokens: int = 8,
                 question_rows: int = 8, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        text_config = self.config.get("text_config") or {}
        limit = int(text_config.get("max_position_embeddings") or 512)
        if max_question_tokens < 4:
            raise WorkstationError(f"max_question_tokens must be at least 4, got {max_question_tokens}")
        self.max_question_tokens = min(int(max_question_tokens), limit)
        self.max_answer_tokens = int(max_answer_tokens)
        self.question_rows = max(1, int(question_rows))
        self.yes_id = self.no_id = -1

    def _model_class(self) -> Any:
        from transformers import BlipForQuestionAnswering

        return BlipForQuestionAnswering

    def _single_token(self, word: str) -> int:
        ids = self._tokenizer(word, add_special_tokens=False)["input_ids"]
        if len(ids) != 1 or ids[0] == self._tokenizer.unk_token_id:
            raise WorkstationError(
                f"the tokenizer in {self.processor_location.path} does not have {word!r} as one token "
                f"(got {ids}); P(yes) needs 'yes' and 'no' in its vocabulary"
            )
        return int(ids[0])

    def _after_load(self) -> None:
        self.yes_id = self._single_token("yes")
        self.no_id = self._single_token("no")
        tc = self._model.config.text_config
        self.bos_id = int(self._model.decoder_start_token_id)
        self.sep_id = int(tc.sep_token_id)
        self.pad_id = int(tc.pad_token_id)

    # ------------------------------------------------------------------ forward passes

    def image_embeds(self, images: list[np.ndarray]) -> Any:
        """Vision-tower hidden states of the images (a padded batch of ``batch_size`` rows)."""
        self.load()
        rows = pad_rows(len(images), self.batch_size, self.fixed_batch)
        with self.inference():
            return self._model.vision_model(pixel_values=self.pixel_values(images, rows)).last_hidden_state

    def question_ids(self, questions: list[str]) -> list[list[int]]:
        """Token ids per question ([CLS] … [SEP]), truncated to ``max_question_tokens``."""
        return [list(x) for x in self._tokenizer(questions, truncation=True, max_length=self.max_question_tokens,
                                                 verbose=False)["input_ids"]]

    def ask(self, image_states: Any, image_of: list[int], questions: list[str],
            generate: bool) -> tuple[np.ndarray, list[str]]:
        """Question i about image ``image_of[i]`` (a row of ``image_states``): the first answer token's
        logits (float64, questions × vocabulary) and, with ``generate``, the greedy answer texts.

        Questions never carry padding: they run in groups of one token length, ``question_rows`` rows
        a pass (padded with copies under ``fixed_batch``), so no attention mask is needed anywhere.
        (transformers 5.x BLIP text models drop the cross-attention mask, so a padded question would
        attend to its padding; grouping by length keeps answers equal to the unpadded question's.)"""
        torch = self._torch
        ids = self.question_ids(questions)
        logits: list[Any] = [None] * len(questions)
        answers = [""] * len(questions)
        by_length: dict[int, list[int]] = {}
        for i, x in enumerate(ids):
            by_length.setdefault(len(x), []).append(i)
        size = self.question_rows
        for length in sorted(by_length):
            members = by_length[length]
            for start in range(0, len(members), size):
                part = members[start : start + size]
                rows = [part[r] for r in pad_rows(len(part), size, self.fixed_batch)]
                input_ids = torch.as_tensor([ids[r] for r in rows], dtype=torch.long, device=self.device)
                index = torch.as_tensor([image_of[r] for r in rows], dtype=torch.long, device=image_states.device)
                img = image_states.index_select(0, index)
                img_mask = torch.ones(img.shape[:-1], dtype=torch.long, device=img.device)
                start_ids = torch.full((len(rows), 1), self.bos_id, dtype=torch.long, device=self.device)
                with self.inference():
                    states = self._model.text_encoder(input_ids=input_ids, encoder_hidden_states=img,
                                                      encoder_attention_mask=img_mask).last_hidden_state
                    if generate:
                        out = self._model.text_decoder.generate(
                            input_ids=start_ids, encoder_hidden_states=states, eos_token_id=self.sep_id,
                            pad_token_id=self.pad_id, max_new_tokens=self.max_answer_tokens, do_sample=False,
                            num_beams=1, output_logits=True, return_dict_in_generate=True,
                        )
                        first = out.logits[0]
                        texts = self._tokenizer.batch_decode(out.sequences[:, 1:], skip_special_tokens=True)
                        for k, i in enumerate(part):
                            answers[i] = texts[k].strip().lower()
                    else:
                        first = self._model.text_decoder(input_ids=start_ids, encoder_hidden_states=states).logits[:, 0]
                first64 = first.double().cpu().numpy()
                for k, i in enumerate(part):
                    logits[i] = first64[k]
        vocab = int(self._model.config.text_config.vocab_size)
        return (np.stack(logits) if logits else np.zeros((0, vocab))), answers

    def question_truncated(self, questions: list[str]) -> list[bool]:
        ids = self._tokenizer(questions, add_special_tokens=True, verbose=False)["input_ids"]
        return [len(x) > self.max_question_tokens for x in ids]

    def provenance(self) -> dict[str, Any]:
        d = super().provenance()
        d.update(max_question_tokens=self.max_question_tokens, max_answer_tokens=self.max_answer_tokens,
                 question_rows=self.question_rows, decoding="greedy")
        return d


def softmax_rows(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)  # type: ignore[no-any-return]


class VqaYesScorer(BlipVqa):
    """P("yes") to "Does this image show {T}?"; see the module docstring for ``mode``."""

    name = "vqa_yes"
    scale = (0.0, 1.0)

    def __init__(self, model: Any, *, template: str = DEFAULT_YES_TEMPLATE, mode: str = "vocab",
                 **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        if "{}" not in template:
            raise WorkstationError(f"the question template must contain '{{}}' for the text, got {template!r}")
        if mode not in YES_MODES:
            raise WorkstationError(f"unknown mode {mode!r}; use one of {', '.join(YES_MODES)}")
        self.template = template
        self.mode = mode
        self.metric = (
            "P(yes) = softmax over the vocabulary of the first answer token's logits, at 'yes'" if mode == "vocab"
            else "P(yes | yes or no) = exp(z_yes) / (exp(z_yes) + exp(z_no)) at the first answer token"
        )

    def question(self, text: str) -> str:
        return self.template.format(strip_prompt(text))

    def _score_batch(self, images: list[np.ndarray], texts: list[str],
                     entities: list[tuple[str, ...]] | None) -> tuple[np.ndarray, list[Detail]]:
        n = len(images)
        questions = [self.question(t) for t in texts]
        logits, _ = self.ask(self.image_embeds(images), list(range(n)), questions, generate=False)
        p = softmax_rows(logits)
        p_yes, p_no = p[:, self.yes_id], p[:, self.no_id]
        if self.mode == "vocab":
            score = p_yes
        else:
            score = 1.0 / (1.0 + np.exp(logits[:, self.no_id] - logits[:, self.yes_id]))
        trunc = self.question_truncated(questions)
        details: list[Detail] = [
            {"question": q, "p_yes": float(y), "p_no": float(o), **({"truncated": True} if t else {})}
            for q, y, o, t in zip(questions, p_yes, p_no, trunc)
        ]
        return score, details

    def provenance(self) -> dict[str, Any]:
        d = super().provenance()
        d.update(template=self.template, mode=self.mode, yes_token_id=self.yes_id, no_token_id=self.no_id)
        return d
