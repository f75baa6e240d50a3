"""The generator interface: parameters, grounding layouts, the ``Generator`` protocol.

A generator turns prompts and seeds into RGB uint8 images (H×W×3 numpy arrays). Sample i is
seeded by its own ``torch.Generator(cpu).manual_seed(seeds[i])``, so it can be re-made alone,
bit for bit, whatever else was in its batch (see ``GenerationParams.fixed_batch``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..types import WorkstationError

Box = tuple[float, float, float, float]  # xyxy, normalised to [0, 1]
ProgressFn = Callable[[int, int], None]  # (denoising step done, steps in all) for the current batch

ATTENTION_MODES = ("sdpa", "slicing", "xformers")


def is_torch_oom(e: BaseException) -> bool:
    """An out-of-memory error of torch (CUDA / MPS): `OutOfMemoryError`, or a RuntimeError that says so."""
    return type(e).__name__ == "OutOfMemoryError" or (isinstance(e, RuntimeError) and "out of memory" in str(e).lower())


class OutOfMemory(WorkstationError):
    """The accelerator ran out of memory for this batch; retry with a smaller ``batch_size``."""

    def __init__(self, batch_size: int, detail: str = "") -> None:
        self.batch_size = batch_size
        self.detail = detail
        super().__init__(
            f"out of GPU memory generating a batch of {batch_size}"
            + (f" ({detail.splitlines()[0][:200]})" if detail else "")
            + "; use a smaller batch size or lower resolution"
        )


@dataclass(frozen=True)
class GenerationParams:
    """Everything that changes the pixels of a generated image, plus how batches are run."""

    width: int = 512
    height: int = 512
    steps: int = 30
    guidance: float = 7.5
    negative_prompt: str | None = None
    scheduler: str | None = None  # None: DPM-Solver++ 2M, or the pipeline's own for flow-matching models
    dtype: str = "auto"  # auto (fp16 on CUDA, fp32 on CPU) | fp32 | fp16 | bf16
    batch_size: int = 4
    attention: str = "sdpa"  # sdpa | slicing | xformers
    device: str = "auto"
    # Run every batch at exactly batch_size (padding a short batch with copies whose outputs are
    # dropped) so each sample sees the same tensor shapes however the batch was composed: then a
    # sample regenerated alone equals the one made in a batch, bit for bit, on any backend.
    fixed_batch: bool = True
    gligen_beta: float = 0.3  # GLIGEN scheduled-sampling beta (fraction of steps with grounding)

    def __post_init__(self) -> None:
        if self.width < 8 or self.height < 8 or self.width % 8 or self.height % 8:
            raise WorkstationError(f"width and height must be multiples of 8 (at least 8), got {self.width}×{self.height}")
        if self.steps < 1:
            raise WorkstationError(f"steps must be at least 1, got {self.steps}")
        if self.batch_size < 1:
            raise WorkstationError(f"batch size must be at least 1, got {self.batch_size}")
        if self.attention not in ATTENTION_MODES:
            raise WorkstationError(f"unknown attention mode {self.attention!r}; use one of {', '.join(ATTENTION_MODES)}")
        if not 0.0 <= self.gligen_beta <= 1.0:
            raise WorkstationError(f"gligen_beta must be within [0, 1], got {self.gligen_beta}")

    def replace(self, **changes: Any) -> "GenerationParams":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> "GenerationParams":
        names = {f.name for f in dataclasses.fields(GenerationParams)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise WorkstationError(
                f"unknown generation parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(names))}"
            )
        return GenerationParams(**d)

    def pixel_key(self) -> str:
        """Hash of the fields that change pixels (not device / attention mode)."""
        d = self.to_dict()
        for k in ("device", "attention"):
            d.pop(k)
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


# Relation words a grounded (layout) generator can place two objects by.
RELATIONS: tuple[str, ...] = ("left_of", "right_of", "above", "below")


@dataclass(frozen=True)
class Grounding:
    """Phrases and their boxes (normalised xyxy) for grounded generation of one prompt."""

    phrases: tuple[str, ...]
    boxes: tuple[Box, ...]

    def __post_init__(self) -> None:
        if len(self.phrases) != len(self.boxes):
            raise WorkstationError(f"{len(self.phrases)} phrases but {len(self.boxes)} boxes in a grounding")
        for b in self.boxes:
            if len(b) != 4 or not (0 <= b[0] < b[2] <= 1 and 0 <= b[1] < b[3] <= 1):
                raise WorkstationError(f"grounding box {b} is not a normalised xyxy box inside [0, 1]")

    @staticmethod
    def for_relation(object_a: str, object_b: str, relation: str, **layout: Any) -> "Grounding":
        a, b = layout_boxes(relation, **layout)
        return Grounding((object_a, object_b), (a, b))

    @staticmethod
    def for_prompt_row(row: dict[str, Any]) -> "Grounding":
        """The grounding of a prompt row (``entities``, ``attrs``): explicit ``attrs["layout"]``
        boxes (one normalised xyxy box per entity), else two entities placed by ``attrs["relation"]``."""
        ents = tuple(row.get("entities") or ())
        attrs = row.get("attrs") or {}
        boxes = attrs.get("layout")
        if boxes:
            boxes_t = tuple((float(b[0]), float(b[1]), float(b[2]), float(b[3])) for b in boxes)
            return Grounding(ents[: len(boxes)], boxes_t)
        rel = attrs.get("relation")
        if rel in RELATIONS and len(ents) >= 2:
            return Grounding.for_relation(ents[0], ents[1], rel)
        raise WorkstationError(f"prompt {row.get('prompt_id')!r} has no layout to ground (no boxes and no "
                               "relation between two objects)")


def layout_boxes(
    relation: str,
    *,
    near: tuple[float, float] = (0.05, 0.35),
    far: tuple[float, float] = (0.65, 0.95),
    across: tuple[float, float] = (0.25, 0.75),
) -> list[Box]:
    """Boxes [box_a, box_b] (normalised xyxy) that put object A ``relation`` object B.

    Defaults follow SpatialBench-UC's placement: for left_of, A spans x 0.05–0.35 and B x 0.65–0.95,
    both y 0.25–0.75; right_of swaps them; above / below do the same along y.
    """
    if relation not in RELATIONS:
        raise WorkstationError(f"unknown relation {relation!r}; known: {', '.join(RELATIONS)}")
    for name, (lo, hi) in (("near", near), ("far", far), ("across", across)):
        if not 0 <= lo < hi <= 1:
            raise WorkstationError(f"layout range {name}={lo, hi} must satisfy 0 ≤ low < high ≤ 1")
    if relation in ("left_of", "right_of"):
        first: Box = (near[0], across[0], near[1], across[1])
        second: Box = (far[0], across[0], far[1], across[1])
    else:
        first = (across[0], near[0], across[1], near[1])
        second = (across[0], far[0], across[1], far[1])
    return [first, second] if relation in ("left_of", "above") else [second, first]


@runtime_checkable
class Generator(Protocol):
    """What the job layer needs from a generator backend."""

    name: str  # registry name, e.g. "diffusers", "gligen"

    def generate(self, request: GenerationRequest, params: GenerationParams,
                 progress: ProgressFn | None = None) -> list[np.ndarray]:
        """One RGB uint8 image per (prompt, seed) of the request. Raises OutOfMemory when a batch
        does not fit."""
        ...

    def provenance(self) -> dict[str, Any]:
        """Model id / folder / revision / weights fingerprint, pipeline class, versions."""
        ...


@dataclass(frozen=True)
class GenerationRequest:
    """What to generate: one image per (prompt, seed), seed i for prompt i, with its box layout
    where ``groundings`` are given (one per prompt; a generator that takes none refuses them).
    Made only when the lengths agree and every seed is within 0 … 2^63-1."""

    prompts: list[str]
    seeds: list[int]
    groundings: list[Grounding] | None = None

    def __post_init__(self) -> None:
        if len(self.prompts) != len(self.seeds):
            raise WorkstationError(f"{len(self.prompts)} prompts but {len(self.seeds)} seeds")
        if self.groundings is not None and len(self.groundings) != len(self.prompts):
            raise WorkstationError(f"{len(self.groundings)} groundings for {len(self.prompts)} prompts")
        for s in self.seeds:
            if not 0 <= int(s) < 2**63:
                raise WorkstationError(f"seed {s} is outside 0 … 2^63-1")

    def __len__(self) -> int:
        return len(self.prompts)

    def part(self, rows: slice) -> "GenerationRequest":
        g = self.groundings
        return GenerationRequest(list(self.prompts[rows]), [int(s) for s in self.seeds[rows]],
                                 None if g is None else list(g[rows]))


def generate_iter(generator: Generator, request: GenerationRequest, params: GenerationParams,
                  progress: ProgressFn | None = None) -> Iterator[tuple[slice, list[np.ndarray]]]:
    """Generate batch by batch (``params.batch_size``); stop iterating to cancel between batches."""
    bs = params.batch_size
    for start in range(0, len(request), bs):
        sl = slice(start, min(len(request), start + bs))
        yield sl, generator.generate(request.part(sl), params, progress)


def to_uint8(images: np.ndarray) -> list[np.ndarray]:
    """Float images in [0, 1] (N×H×W×3) → list of uint8 arrays, rounded as diffusers does for PIL."""
    arr = (np.clip(np.asarray(images, dtype=np.float32), 0.0, 1.0) * 255).round().astype(np.uint8)
    return [np.ascontiguousarray(a) for a in arr]
