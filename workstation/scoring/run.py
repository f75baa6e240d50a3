"""The pure batch runner: score many (image, text) items batch by batch, for a job to write a
chunk per batch and resume by skipping the keys it already has.

``iter_score_batches`` yields one ``ScoredBatch`` per batch of ``batch_size`` items (images are
loaded through the caller's ``load_image`` just before their batch, so memory holds one batch);
``score_items`` drives it, hands each batch to ``on_batch`` and returns every score. Neither
touches files or a database. Cancel between batches with ``should_stop`` (or by closing the
iterator); resume by passing the finished keys as ``skip_keys``.

Determinism: scores do not depend on how items are grouped into runner batches. The scorer runs
every forward pass at its own fixed ``batch_size`` with fixed-length text padding (see
``workstation.scoring.base``), so a resumed or re-grouped run gives bit-identical scores for the
same scorer batch size, and scores equal to float rounding otherwise (e.g. after an
out-of-memory halving, which the batch's ``notes`` report).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..types import WorkstationError
from ..util import dumps
from .base import Detail, Scorer, check_inputs

LoadImage = Callable[[Any], np.ndarray]
IMAGE_ERRORS = ("raise", "record")


@dataclass(frozen=True)
class ScoreItem:
    """One pair to score. ``key`` is unique in a run (e.g. a sample id); ``image`` is whatever
    ``load_image`` takes (a path, a row); ``entities`` are optional lower-case entity names
    (the faithfulness scorer asks about those; others ignore them)."""

    key: str
    image: Any
    text: str
    entities: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScoredBatch:
    """The scores of one batch, in item order."""

    index: int  # 0, 1, … in this run
    keys: list[str]
    scores: np.ndarray  # float64; NaN = not scorable (or an image that could not be loaded)
    details: list[Detail]
    batch_size: int  # the scorer's forward batch size after this batch (smaller after an OOM halving)
    notes: list[str]  # what happened in this batch that the user should hear of
    seconds: float

    def __len__(self) -> int:
        return len(self.keys)

    def columns(self) -> dict[str, np.ndarray]:
        """Numpy columns for a result chunk: key (str), score (float64), detail (JSON text or None)."""
        return {
            "key": np.asarray(self.keys, dtype=object),
            "score": np.asarray(self.scores, dtype=np.float64),
            "detail": np.asarray([None if d is None else dumps(d) for d in self.details], dtype=object),
        }


@dataclass
class ScoreRun:
    """Everything ``score_items`` scored in this call (skipped keys are not in it)."""

    keys: list[str] = field(default_factory=list)
    scores: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    details: list[Detail] = field(default_factory=list)
    n_items: int = 0  # items given
    n_skipped: int = 0  # of them, already done (skip_keys)
    n_batches: int = 0
    stopped: bool = False  # should_stop ended the run early
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def by_key(self) -> dict[str, float]:
        return dict(zip(self.keys, self.scores.tolist()))


def _check_items(items: Sequence[ScoreItem]) -> None:
    seen: set[str] = set()
    for i, it in enumerate(items):
        if not isinstance(it, ScoreItem):
            raise WorkstationError(f"item {i} is a {type(it).__name__}, not a ScoreItem")
        if it.key in seen:
            raise WorkstationError(f"item key {it.key!r} occurs more than once; keys must be unique")
        seen.add(it.key)


def iter_score_batches(
    scorer: Scorer,
    items: Sequence[ScoreItem],
    batch_size: int | None = None,
    *,
    load_image: LoadImage,
    skip_keys: Collection[str] = (),
    should_stop: Callable[[], bool] | None = None,
    image_errors: str = "raise",
) -> Iterator[ScoredBatch]:
    """Score ``items`` not in ``skip_keys``, ``batch_size`` (default: the scorer's) at a time.

    ``image_errors="record"`` gives an item whose image cannot be loaded a NaN score and the error
    in its detail instead of stopping the run."""
    bs = int(batch_size or scorer.batch_size)
    if bs < 1:
        raise WorkstationError(f"batch size must be at least 1, got {batch_size}")
    if image_errors not in IMAGE_ERRORS:
        raise WorkstationError(f"image_errors must be one of {', '.join(IMAGE_ERRORS)}, got {image_errors!r}")
    _check_items(items)
    skip = set(skip_keys)
    todo = [it for it in items if it.key not in skip]
    with_entities = any(it.entities for it in todo)
    detailed = getattr(scorer, "score_detailed", None)
    for index, start in enumerate(range(0, len(todo), bs)):
        if should_stop is not None and should_stop():
            return
        t0 = time.perf_counter()
        batch = todo[start : start + bs]
        notes_before = len(getattr(scorer, "notes", ()))
        images: list[np.ndarray] = []
        ok: list[int] = []
        errors: dict[int, str] = {}
        for k, it in enumerate(batch):
            try:
                im = load_image(it.image)
                check_inputs([im], [it.text])
                images.append(im)
                ok.append(k)
            except Exception as e:  # reported per item, or re-raised naming the item
                if image_errors == "raise":
                    raise WorkstationError(f"cannot load the image of item {it.key!r}: {e}") from e
                errors[k] = f"{type(e).__name__}: {e}"
        texts = [batch[k].text for k in ok]
        if detailed is not None:
            ents = [batch[k].entities for k in ok] if with_entities else None
            res = detailed(images, texts, ents) if ents is not None else detailed(images, texts)
            values, det = np.asarray(res.values, dtype=np.float64), list(res.details)
        else:
            values = np.asarray(scorer.score(images, texts), dtype=np.float64)
            det = [None] * len(ok)
        if len(values) != len(ok):
            raise WorkstationError(f"scorer {scorer.name!r} returned {len(values)} scores for {len(ok)} pairs")
        scores = np.full(len(batch), np.nan)
        details: list[Detail] = [None] * len(batch)
        scores[ok] = values
        for k, d in zip(ok, det):
            details[k] = d
        for k, msg in errors.items():
            details[k] = {"error": msg}
        notes = list(getattr(scorer, "notes", ())[notes_before:])
        if errors:
            notes.append(f"{len(errors)} image(s) could not be loaded; their scores are missing")
        yield ScoredBatch(index, [it.key for it in batch], scores, details, int(scorer.batch_size), notes,
                          time.perf_counter() - t0)


def score_items(
    scorer: Scorer,
    items: Sequence[ScoreItem],
    batch_size: int | None = None,
    *,
    load_image: LoadImage,
    on_batch: Callable[[ScoredBatch], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    skip_keys: Collection[str] = (),
    image_errors: str = "raise",
) -> ScoreRun:
    """Score every item not in ``skip_keys``; ``on_batch`` sees each batch as soon as it is done
    (write its chunk there); ``should_stop`` is asked before each batch. Returns all scores."""
    t0 = time.perf_counter()
    skip = set(skip_keys)
    run = ScoreRun(n_items=len(items), n_skipped=sum(1 for it in items if it.key in skip))

    def stop() -> bool:
        if should_stop is not None and should_stop():
            run.stopped = True
        return run.stopped

    parts: list[np.ndarray] = []
    for batch in iter_score_batches(scorer, items, batch_size, load_image=load_image, skip_keys=skip,
                                    should_stop=stop, image_errors=image_errors):
        if on_batch is not None:
            on_batch(batch)
        run.keys.extend(batch.keys)
        parts.append(batch.scores)
        run.details.extend(batch.details)
        run.notes.extend(batch.notes)
        run.n_batches += 1
    run.scores = np.concatenate(parts) if parts else np.zeros(0, np.float64)
    run.seconds = time.perf_counter() - t0
    return run
