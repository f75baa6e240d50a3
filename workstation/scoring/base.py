"""The scorer interface: one score per (image, text) pair, batching, out-of-memory halving, hashes.

A scorer takes RGB uint8 images (H×W×3 numpy arrays) and as many texts, and returns one float64
score per pair. ``scale`` is the score's natural range ((0, 100) for CLIPScore, (0, 1) for
probabilities and fractions, ``None`` when unbounded). A score of NaN means "not scorable" (a
faithfulness scorer that could derive no question from the text); callers show it as missing.

Batching (``BatchedScorer``): ``score`` splits its input into forward passes of at most
``batch_size`` pairs. With ``fixed_batch`` (the default) every forward pass runs at exactly
``batch_size`` rows — a short batch is padded with copies of its last pair whose outputs are
dropped — and texts are padded to a fixed token length, so a pair's score is bit for bit the same
whatever else was in its batch and however a caller grouped the pairs. Across different
``batch_size`` values scores agree to float rounding (about 1e-7 relative on the CPU; matrix
kernels differ by shape). When the accelerator runs out of memory the batch size is halved and
the batch retried (down to one pair); the smaller size is kept, logged, and added to ``notes``.

Nothing here imports torch at module level.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .. import env
from ..generation.base import OutOfMemory, is_torch_oom
from ..types import WorkstationError
from ..util.images import rgb_array_problem

log = logging.getLogger(__name__)

Scale = tuple[float, float] | None
Detail = dict[str, Any] | None  # JSON-serialisable per-pair detail (questions and answers, ...)


class ScoringOutOfMemory(OutOfMemory):
    """The accelerator ran out of memory scoring a batch; ``batch_size`` is the size that failed."""

    def __init__(self, batch_size: int, detail: str = "") -> None:  # its own message, not OutOfMemory's
        self.batch_size = batch_size
        self.detail = detail
        WorkstationError.__init__(
            self,
            f"out of GPU memory scoring a batch of {batch_size}"
            + (f" ({detail.splitlines()[0][:200]})" if detail else "")
            + "; use a smaller batch size or --dtype fp16",
        )


@dataclass(frozen=True)
class Scores:
    """What ``score_detailed`` returns: float64 scores and one detail (or None) per pair."""

    values: np.ndarray
    details: list[Detail] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.values)


@runtime_checkable
class Scorer(Protocol):
    """What the job layer needs from a scoring backend."""

    name: str  # registry name, e.g. "clipscore"
    scale: Scale  # natural range of the score, None if unbounded
    batch_size: int  # pairs per forward pass (halved on out-of-memory)

    def score(self, images: list[np.ndarray], texts: list[str]) -> np.ndarray:
        """One float64 score per (images[i], texts[i]) pair."""
        ...

    def provenance(self) -> dict[str, Any]:
        """Model folder, weights hash, library versions, device / dtype: stored with the scores."""
        ...


@runtime_checkable
class DetailedScorer(Scorer, Protocol):
    """A scorer that also explains its scores (e.g. the questions asked and the answers given)."""

    def score_detailed(self, images: list[np.ndarray], texts: list[str],
                       entities: Sequence[Sequence[str]] | None = None) -> Scores:
        ...


# ---------------------------------------------------------------------------------------------
# input checks, devices, memory


def check_inputs(images: Sequence[np.ndarray], texts: Sequence[str],
                 entities: Sequence[Sequence[str]] | None = None) -> None:
    """Clear errors for anything but H×W×3 uint8 images with one text each."""
    if len(images) != len(texts):
        raise WorkstationError(f"{len(images)} images but {len(texts)} texts; give one text per image")
    if entities is not None and len(entities) != len(texts):
        raise WorkstationError(f"{len(entities)} entity lists given for {len(texts)} texts")
    for i, im in enumerate(images):
        problem = rgb_array_problem(im)
        if problem:
            raise WorkstationError(f"image {i} {problem}")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise WorkstationError(f"text {i} must be a string, got {type(t).__name__}")


def pick_device(device: str = "auto") -> str:
    """'auto' → 'cuda' when torch sees a GPU, else 'cpu'; an explicit device is checked as given."""
    if device.lower() == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return env.pick_device(device)


def is_oom(e: BaseException) -> bool:
    """An out-of-memory error of torch (CUDA / MPS) or one of the backends' own."""
    return isinstance(e, OutOfMemory) or is_torch_oom(e)


def free_accelerator_memory() -> None:
    import gc
    import sys

    gc.collect()
    torch = sys.modules.get("torch")  # only when torch is already in use
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def pad_rows(n: int, size: int, fixed: bool) -> list[int]:
    """Row indices of a forward pass over ``n`` items: 0…n-1, then copies of n-1 up to ``size``."""
    rows = list(range(n))
    if fixed and 0 < n < size:
        rows += [n - 1] * (size - n)
    return rows


# ---------------------------------------------------------------------------------------------
# weights hash


_HASH_LOCK = threading.Lock()
_HASH_CACHE: dict[tuple[str, tuple[tuple[str, int, int, int], ...]], str] = {}


def weight_files(folder: Path) -> list[Path]:
    """The weights a scorer loads: the folder's .safetensors files (sorted)."""
    return sorted(p for p in folder.rglob("*.safetensors") if p.is_file())


def _hash_files(root: Path, files: list[Path]) -> str:
    h = hashlib.sha256()
    for p in files:
        h.update(f"{p.relative_to(root).as_posix()}\n".encode())
        with p.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 22), b""):
                h.update(chunk)
    return h.hexdigest()


def weights_sha256(folder: str | Path) -> str:
    """sha256 over every loaded weights file's relative name and bytes (name, newline, bytes, per
    file in sorted order), cached per folder and per (name, size, mtime, inode) of its files, so a
    changed or replaced file is hashed again and an unchanged multi-GB model only once per process."""
    root = Path(folder).resolve()
    files = weight_files(root)
    state = []
    for p in files:
        st = p.stat()
        state.append((p.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns, st.st_ino))
    key = (str(root), tuple(state))
    with _HASH_LOCK:
        hit = _HASH_CACHE.get(key)
    if hit is not None:
        return hit
    digest = _hash_files(root, files)
    with _HASH_LOCK:
        _HASH_CACHE[key] = digest
    return digest


def file_sha256(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


# ---------------------------------------------------------------------------------------------
# the batching base class


class BatchedScorer:
    """Splits pairs into forward passes of ``batch_size``, halving it on out-of-memory errors.

    Subclasses implement ``_score_batch(images, texts, entities)`` for at most ``batch_size``
    pairs and return (float64 scores, details). ``notes`` collects what a job should tell the user.
    """

    name = "scorer"
    scale: Scale = None

    def __init__(self, *, batch_size: int = 16, fixed_batch: bool = True) -> None:
        if int(batch_size) < 1:
            raise WorkstationError(f"batch size must be at least 1, got {batch_size}")
        self.batch_size = int(batch_size)
        self.fixed_batch = bool(fixed_batch)
        self.notes: list[str] = []

    def score(self, images: list[np.ndarray], texts: list[str]) -> np.ndarray:
        return self.score_detailed(images, texts).values

    def score_detailed(self, images: list[np.ndarray], texts: list[str],
                       entities: Sequence[Sequence[str]] | None = None) -> Scores:
        check_inputs(images, texts, entities)
        values: list[np.ndarray] = []
        details: list[Detail] = []
        i = 0
        while i < len(images):
            j = min(len(images), i + self.batch_size)
            ents = None if entities is None else [tuple(e) for e in entities[i:j]]
            try:
                v, d = self._score_batch(list(images[i:j]), list(texts[i:j]), ents)
            except Exception as e:  # only out-of-memory errors are handled here
                if not is_oom(e):
                    raise
                free_accelerator_memory()
                if self.batch_size == 1:
                    raise ScoringOutOfMemory(1, f"{self.name}, even one pair at a time: {e}") from None
                old, self.batch_size = self.batch_size, max(1, self.batch_size // 2)
                note = f"out of GPU memory at batch size {old} scoring with {self.name}; going on with {self.batch_size}"
                log.warning(note)
                self.notes.append(note)
                continue
            v = np.asarray(v, dtype=np.float64).reshape(-1)
            if len(v) != j - i or len(d) != j - i:
                raise RuntimeError(f"{type(self).__name__} returned {len(v)} scores for {j - i} pairs")
            values.append(v)
            details.extend(d)
            i = j
        return Scores(np.concatenate(values) if values else np.zeros(0, np.float64), details)

    def _score_batch(self, images: list[np.ndarray], texts: list[str],
                     entities: list[tuple[str, ...]] | None) -> tuple[np.ndarray, list[Detail]]:
        raise NotImplementedError

    def provenance(self) -> dict[str, Any]:
        return {"scorer": self.name, "scale": None if self.scale is None else list(self.scale),
                "batch_size": self.batch_size, "fixed_batch": self.fixed_batch}
