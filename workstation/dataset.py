"""Columnar, in-memory view of a project's samples and cached detections.

This is the contract between the store (which loads / saves it), the importers (which
build it), the checker (which evaluates it, vectorised) and the calibration engine.
All arrays of one table have the same length. Labels are lower-cased object names.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from .types import ORIGINAL_NAME


def _take(obj: Any, idx: np.ndarray) -> Any:
    return type(obj)(**{f.name: getattr(obj, f.name)[idx] for f in fields(obj)})


def _concat(parts: list[Any]) -> Any:
    cls = type(parts[0])
    return cls(**{f.name: np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(cls)})


@dataclass
class Samples:
    sample_id: np.ndarray  # object (str), unique
    run_id: np.ndarray  # object (str)
    prompt_id: np.ndarray  # object (str)
    seed: np.ndarray  # int64
    relation: np.ndarray  # int8, types.RELATION_CODE
    label_a: np.ndarray  # object (str), lower-case
    label_b: np.ndarray  # object (str), lower-case
    width: np.ndarray  # float64, pixels
    height: np.ndarray  # float64, pixels
    image_path: np.ndarray  # object (str), relative to the project folder ("" if none)
    recorded_stability: np.ndarray  # float64, NaN unless an imported run recorded it
    has_secondary: np.ndarray  # bool: the secondary detector ran on this image
    has_perturbed: np.ndarray  # bool: perturbed-variant detections are cached

    def __len__(self) -> int:
        return len(self.sample_id)

    def take(self, idx: np.ndarray) -> "Samples":
        return _take(self, idx)

    @staticmethod
    def empty() -> "Samples":
        o = np.array([], dtype=object)
        f = np.array([], dtype=np.float64)
        b = np.array([], dtype=bool)
        return Samples(o, o, o, np.array([], np.int64), np.array([], np.int8), o, o, f, f, o, f, b, b)


@dataclass
class Detections:
    sample_idx: np.ndarray  # int64, row in Samples
    source: np.ndarray  # int8, types.PRIMARY / SECONDARY
    variant: np.ndarray  # int16, 0 original, k = Dataset.variant_names[k]
    label: np.ndarray  # object (str), lower-case
    score: np.ndarray  # float64
    x1: np.ndarray  # float64, pixels
    y1: np.ndarray
    x2: np.ndarray
    y2: np.ndarray

    def __len__(self) -> int:
        return len(self.sample_idx)

    def take(self, idx: np.ndarray) -> "Detections":
        return _take(self, idx)

    @staticmethod
    def empty() -> "Detections":
        f = np.array([], dtype=np.float64)
        return Detections(np.array([], np.int64), np.array([], np.int8), np.array([], np.int16),
                          np.array([], dtype=object), f, f, f, f, f)


@dataclass
class Prompts:
    prompt_id: np.ndarray  # object (str), unique
    text: np.ndarray  # object (str)
    relation: np.ndarray  # int8
    label_a: np.ndarray  # object (str)
    label_b: np.ndarray  # object (str)
    counterfactual_id: np.ndarray  # object (str), "" if none
    pair_id: np.ndarray  # object (str), "" if none
    suite: np.ndarray  # object (str)

    def __len__(self) -> int:
        return len(self.prompt_id)

    def take(self, idx: np.ndarray) -> "Prompts":
        return _take(self, idx)

    @staticmethod
    def empty() -> "Prompts":
        o = np.array([], dtype=object)
        return Prompts(o, o, np.array([], np.int8), o, o, o, o, o)


@dataclass
class Dataset:
    samples: Samples
    detections: Detections
    prompts: Prompts
    variant_names: tuple[str, ...] = (ORIGINAL_NAME,)
    # free-form cache for parameter-independent precomputation (checker.prepare)
    cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def n(self) -> int:
        return len(self.samples)

    def sample_index(self) -> dict[str, int]:
        idx = self.cache.get("sample_index")
        if idx is None:
            idx = {s: i for i, s in enumerate(self.samples.sample_id.tolist())}
            self.cache["sample_index"] = idx
        return idx

    def subset(self, sample_rows: np.ndarray) -> "Dataset":
        """Dataset restricted to the given sample rows (detections re-indexed)."""
        sample_rows = np.asarray(sample_rows, dtype=np.int64)
        remap = np.full(self.n, -1, dtype=np.int64)
        remap[sample_rows] = np.arange(len(sample_rows))
        keep = remap[self.detections.sample_idx] >= 0
        dets = self.detections.take(np.nonzero(keep)[0])
        dets.sample_idx = remap[dets.sample_idx]
        return Dataset(self.samples.take(sample_rows), dets, self.prompts, self.variant_names)

    @staticmethod
    def concat(parts: list["Dataset"]) -> "Dataset":
        """Concatenate datasets (same variant names); prompts are de-duplicated by id."""
        if not parts:
            return Dataset(Samples.empty(), Detections.empty(), Prompts.empty())
        names = parts[0].variant_names
        for p in parts[1:]:
            if p.variant_names != names:
                raise ValueError("datasets with different perturbation variants cannot be merged")
        offs = np.cumsum([0] + [p.n for p in parts[:-1]])
        dets = []
        for off, p in zip(offs, parts):
            d = p.detections.take(np.arange(len(p.detections)))
            d.sample_idx = d.sample_idx + off
            dets.append(d)
        prompts = _concat([p.prompts for p in parts])
        _, first = np.unique(prompts.prompt_id.astype(str), return_index=True)
        return Dataset(_concat([p.samples for p in parts]), _concat(dets),
                       prompts.take(np.sort(first)), names)
