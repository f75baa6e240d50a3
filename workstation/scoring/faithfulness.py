"""VQA faithfulness (TIFA-lite): the fraction of prompt-derived questions a BLIP VQA model answers
as expected.

Per image, ``questions.parse_prompt`` derives templated questions from its prompt (presence,
count, colour, relation; see that module); the BLIP VQA model answers each one by greedy decoding
(at most ``max_answer_tokens`` tokens); ``questions.is_correct`` checks the answer. The score is
correct / asked, in [0, 1]; NaN when no question could be derived (nothing determinate to ask).
Each pair's detail lists every question with its expected and given answer (and, for yes/no
questions, P("yes") at the first answer token), plus the entities skipped and why, for the UI.

Batching: the images of a batch are embedded once; their questions then run through the text
encoder and decoder grouped by token length, ``question_rows`` rows a pass (see ``BlipVqa.ask``),
so an answer does not depend on the other questions of the batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .base import Detail
from .blip_vqa import BlipVqa, softmax_rows
from .questions import PRESENCE, RELATION, Question, Scene, is_correct, parse_prompt, questions_for_scene


class VqaFaithfulnessScorer(BlipVqa):
    name = "vqa_faithfulness"
    scale = (0.0, 1.0)
    metric = "fraction of prompt-derived questions (presence, count, colour, relation) answered as expected by BLIP VQA"

    @staticmethod
    def scene(text: str, entities: Sequence[str] | None = None) -> Scene:
        return parse_prompt(text, entities or None)

    def _score_batch(self, images: list[np.ndarray], texts: list[str],
                     entities: list[tuple[str, ...]] | None) -> tuple[np.ndarray, list[Detail]]:
        scenes = [self.scene(t, None if entities is None else entities[i]) for i, t in enumerate(texts)]
        per_image = [questions_for_scene(s) for s in scenes]
        flat: list[tuple[int, Question]] = [(i, q) for i, qs in enumerate(per_image) for q in qs]
        answers: list[str] = []
        p_yes: list[float] = []
        if flat:
            logits, answers = self.ask(self.image_embeds(images), [i for i, _ in flat], [q.text for _, q in flat],
                                       generate=True)
            p_yes = softmax_rows(logits)[:, self.yes_id].tolist()
        scores = np.full(len(images), math.nan)
        details: list[Detail] = []
        k = 0
        for i, (scene, qs) in enumerate(zip(scenes, per_image)):
            rows_out = []
            for q in qs:
                ans, py = answers[k], p_yes[k]
                k += 1
                row: dict[str, Any] = {**q.to_dict(), "answer": ans, "correct": is_correct(q, ans)}
                if q.kind in (PRESENCE, RELATION):
                    row["p_yes"] = py
                rows_out.append(row)
            n_correct = sum(bool(r["correct"]) for r in rows_out)
            if rows_out:
                scores[i] = n_correct / len(rows_out)
            details.append({"questions": rows_out, "n_questions": len(rows_out), "n_correct": n_correct,
                            "skipped": list(scene.skipped)})
        return scores, details

    def provenance(self) -> dict[str, Any]:
        d = super().provenance()
        d.update(questions="workstation.scoring.questions templates")
        return d
