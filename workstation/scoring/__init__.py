"""Image–text scorers behind one interface, registered by name, imported lazily.

Importing this package loads neither torch nor transformers; ``create_scorer(name, ...)`` imports
a backend's module when a job asks for it.

Registered names: clipscore, pickscore (transformers CLIPModel), vqa_yes, vqa_faithfulness
(transformers BlipForQuestionAnswering), fake (tests of the job layer).
"""

from .base import BatchedScorer, DetailedScorer, Scorer, Scores, ScoringOutOfMemory, weights_sha256
from .questions import Question, Scene, derive_questions, is_correct, parse_prompt
from .registry import SCORERS, available_scorers, create_scorer
from .run import ScoredBatch, ScoreItem, ScoreRun, iter_score_batches, score_items

__all__ = [
    "SCORERS", "BatchedScorer", "DetailedScorer", "Question", "Scene", "ScoreItem", "ScoreRun", "ScoredBatch",
    "Scorer", "Scores", "ScoringOutOfMemory", "available_scorers", "create_scorer", "derive_questions",
    "is_correct", "iter_score_batches", "parse_prompt", "score_items", "weights_sha256",
]
