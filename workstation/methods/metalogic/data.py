"""`PairData`: what the MetaLogic comparison reads — image pairs and their detections, as numpy arrays.

One row per **image pair**: the two images (A and B) generated from the two prompts of one
MetaLogic pair with the same seed by the same run. A suite pair rendered with K seeds by R runs is
K·R image pairs; ``pair_id`` is the image pair's own key (an adapter composes it, e.g.
``f"{suite_pair_id}|{run}|{seed}"``), ``run`` and ``seed`` say where it came from.

Per image pair (P rows, E entity slots; E is the most entities any pair names):

=====================  ==============  ====================================================
field                  dtype, shape    meaning
=====================  ==============  ====================================================
``pair_id``            object (P,)     unique key of the image pair
``law``                int8 (P,)       index into `laws.LAWS`
``modifier``           int8 (P,)       index into `laws.MODIFIERS`
``dimension``          int8 (P,)       index into `laws.DIMENSIONS`
``axis``               int8 (P,)       0 none, 1 x, 2 y (from the dimension)
``run``                object (P,)     run / model name ("" if one run)
``seed``               int64 (P,)      the image seed both images share
``entity``             object (P, E)   lower-case entity names in slot order, "" unused
``expected_count``     int16 (P, E)    instances a faithful image shows (0 = negated), -1 unused
``expected_rank``      int8 (P, E)     place on the axis (0 first = left / top), -1 none
``width``, ``height``  float64 (P, 2)  image size of A (column 0) and B (column 1), pixels
=====================  ==============  ====================================================

Per detection (D rows; any order; only the original images' primary detections):

=====================  ==============  ====================================================
``det_image``          int64 (D,)      2 · pair row + side (side 0 = A, 1 = B)
``det_label``          object (D,)     label as the detector reported it (compared lower-case)
``det_score``          float64 (D,)    score
``det_x1`` … ``det_y2``  float64 (D,)  box xyxy in pixels of that image
=====================  ==============  ====================================================

Adapter from the project's generic tables (phase 2): for each pair of prompts linked by
``twin_id`` (side from ``attrs["side"]``), join their ``Samples`` on (run_id, seed): one image pair
per match; law / modifier / dimension / expected come from the A prompt's ``attrs``, the entities
from its ``entities``; ``Detections`` rows with ``source == 0`` and ``variant == 0`` map through
``sample_idx`` to ``det_image = 2 · pair row + side``. `PairData.from_lists` takes exactly these
columns as plain lists; `PairData.from_specs` builds one from `suite.PairSpec` records and
per-image detection lists (tests, the demo).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...types import WorkstationError
from .laws import (
    AXIS_CODE,
    DIMENSION_AXIS,
    DIMENSION_CODE,
    DIMENSIONS,
    LAW_CODE,
    LAWS,
    MODIFIER_CODE,
    MODIFIERS,
    canonical_dimension,
    canonical_law,
    canonical_modifier,
)

__all__ = ["PairData", "DetectionLike"]

#: (label, score, (x1, y1, x2, y2)) or any object with .label, .score, .box
DetectionLike = Any


def _obj(values: Sequence[Any]) -> np.ndarray:
    arr = np.empty(len(values), dtype=object)
    arr[:] = list(values)
    return arr


def _det_tuple(d: DetectionLike) -> tuple[str, float, tuple[float, float, float, float]]:
    if hasattr(d, "label") and hasattr(d, "score") and hasattr(d, "box"):
        b = d.box
        return str(d.label), float(d.score), (float(b[0]), float(b[1]), float(b[2]), float(b[3]))
    lab, sc, b = d
    return str(lab), float(sc), (float(b[0]), float(b[1]), float(b[2]), float(b[3]))


@dataclass
class PairData:
    """Image pairs and their detections (field table in the module docstring)."""

    pair_id: np.ndarray
    law: np.ndarray
    modifier: np.ndarray
    dimension: np.ndarray
    axis: np.ndarray
    run: np.ndarray
    seed: np.ndarray
    entity: np.ndarray
    expected_count: np.ndarray
    expected_rank: np.ndarray
    width: np.ndarray
    height: np.ndarray
    det_image: np.ndarray
    det_label: np.ndarray
    det_score: np.ndarray
    det_x1: np.ndarray
    det_y1: np.ndarray
    det_x2: np.ndarray
    det_y2: np.ndarray
    cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    # ---- sizes ---------------------------------------------------------------------------------
    @property
    def n_pairs(self) -> int:
        return len(self.pair_id)

    @property
    def n_slots(self) -> int:
        return int(self.entity.shape[1]) if self.entity.ndim == 2 else 0

    @property
    def n_detections(self) -> int:
        return len(self.det_image)

    def __len__(self) -> int:
        return self.n_pairs

    def n_entities(self) -> np.ndarray:
        """Number of entities of each pair (int64, P)."""
        return (self.expected_count >= 0).sum(axis=1).astype(np.int64)

    # ---- construction --------------------------------------------------------------------------
    @staticmethod
    def from_lists(*, pair_id: Sequence[str], law: Sequence[str], modifier: Sequence[str],
                   dimension: Sequence[str], entities: Sequence[Sequence[str]],
                   expected_count: Sequence[Sequence[int]] | None = None,
                   expected_order: Sequence[Sequence[str]] | None = None,
                   width: float | Sequence[float] | Sequence[Sequence[float]] = 512.0,
                   height: float | Sequence[float] | Sequence[Sequence[float]] = 512.0,
                   run: Sequence[str] | None = None, seed: Sequence[int] | None = None,
                   det_pair: Sequence[int] = (), det_side: Sequence[int] | Sequence[str] = (),
                   det_label: Sequence[str] = (), det_score: Sequence[float] = (),
                   det_box: Sequence[Sequence[float]] | np.ndarray = ()) -> "PairData":
        """Build from plain lists (names, not codes).

        Per pair: ``law`` / ``modifier`` / ``dimension`` names (aliases such as "De Morgan" or
        "X-axis" accepted), ``entities`` (names in slot order), ``expected_count`` (default 1
        each), ``expected_order`` (positioned entities first to last on the axis; default: for
        positional dimensions every entity with a non-zero count, in slot order), ``width`` /
        ``height`` (one number, one per pair, or an (A, B) pair per pair), ``run``, ``seed``.
        Per detection: ``det_pair`` (pair row), ``det_side`` (0/1 or "A"/"B"), ``det_label``,
        ``det_score``, ``det_box`` (xyxy pixels).
        """
        n = len(pair_id)
        columns = (("law", law), ("modifier", modifier), ("dimension", dimension), ("entities", entities))
        for nm, col in columns:
            if len(col) != n:
                raise WorkstationError(f"PairData: {nm} has {len(col)} rows, pair_id has {n}")
        ents = [[" ".join(str(e).split()).lower() for e in row] for row in entities]
        e_max = max((len(r) for r in ents), default=0)
        ent = np.full((n, e_max), "", dtype=object)
        cnt = np.full((n, e_max), -1, np.int16)
        rank = np.full((n, e_max), -1, np.int8)
        law_c = np.empty(n, np.int8)
        mod_c = np.empty(n, np.int8)
        dim_c = np.empty(n, np.int8)
        axis_c = np.empty(n, np.int8)
        for i in range(n):
            lw, md = canonical_law(law[i]), canonical_modifier(modifier[i])
            dm = canonical_dimension(dimension[i])
            if lw is None:
                raise WorkstationError(f"pair {pair_id[i]!r}: unknown law {law[i]!r} "
                                       f"(expected one of {', '.join(LAWS)})")
            if md is None:
                raise WorkstationError(f"pair {pair_id[i]!r}: unknown modifier {modifier[i]!r} (AND or OR)")
            if dm is None:
                raise WorkstationError(f"pair {pair_id[i]!r}: unknown dimension {dimension[i]!r} "
                                       f"(expected one of {', '.join(DIMENSIONS)})")
            law_c[i], mod_c[i], dim_c[i] = LAW_CODE[lw], MODIFIER_CODE[md], DIMENSION_CODE[dm]
            axis_c[i] = AXIS_CODE[DIMENSION_AXIS[dm]]
            row = ents[i]
            k = len(row)
            ent[i, :k] = row
            c = [1] * k if expected_count is None else [int(x) for x in expected_count[i]]
            if len(c) != k:
                raise WorkstationError(f"pair {pair_id[i]!r}: {len(c)} expected counts for {k} entities")
            cnt[i, :k] = c
            if axis_c[i]:
                order = ([e for e, x in zip(row, c) if x > 0] if expected_order is None
                         else [" ".join(str(e).split()).lower() for e in expected_order[i]])
                for r, e in enumerate(order):
                    if e not in row:
                        raise WorkstationError(
                            f"pair {pair_id[i]!r}: ordered entity {e!r} is not among its entities")
                    rank[i, row.index(e)] = r
        w = np.broadcast_to(np.asarray(width, np.float64).reshape(-1, 1) if np.ndim(width) == 1
                            else np.asarray(width, np.float64), (n, 2)).copy()
        h = np.broadcast_to(np.asarray(height, np.float64).reshape(-1, 1) if np.ndim(height) == 1
                            else np.asarray(height, np.float64), (n, 2)).copy()
        side_code = {0: 0, "A": 0, "a": 0, 1: 1, "B": 1, "b": 1}
        sides = np.array([side_code.get(s, -1) for s in det_side], np.int64)
        if (sides < 0).any():
            raise WorkstationError("PairData: det_side must be 0/1 or 'A'/'B'")
        box = np.asarray(det_box, np.float64).reshape(-1, 4) if len(det_box) else np.zeros((0, 4))
        d = len(det_pair)
        if not (len(sides) == len(det_label) == len(det_score) == len(box) == d):
            raise WorkstationError("PairData: the detection columns differ in length")
        data = PairData(
            pair_id=_obj([str(x) for x in pair_id]), law=law_c, modifier=mod_c, dimension=dim_c, axis=axis_c,
            run=_obj([str(x) for x in run] if run is not None else [""] * n),
            seed=np.asarray(seed if seed is not None else np.zeros(n), np.int64).reshape(n),
            entity=ent, expected_count=cnt, expected_rank=rank, width=w, height=h,
            det_image=2 * np.asarray(det_pair, np.int64).reshape(d) + sides,
            det_label=_obj([str(x) for x in det_label]),
            det_score=np.asarray(det_score, np.float64).reshape(d),
            det_x1=box[:, 0].copy(), det_y1=box[:, 1].copy(),
            det_x2=box[:, 2].copy(), det_y2=box[:, 3].copy(),
        )
        data.validate()
        return data

    @staticmethod
    def from_specs(specs: Sequence[Any], detections_a: Sequence[Sequence[DetectionLike]],
                   detections_b: Sequence[Sequence[DetectionLike]], *, width: float = 512.0,
                   height: float = 512.0, run: str | Sequence[str] = "",
                   pair_ids: Sequence[str] | None = None) -> "PairData":
        """From `suite.PairSpec` records (or mappings with the same keys) and, per pair, the
        detections of image A and of image B (``Detection`` objects or (label, score, box))."""
        if not (len(specs) == len(detections_a) == len(detections_b)):
            raise WorkstationError("PairData.from_specs: one detection list per pair and side")

        def get(s: Any, k: str) -> Any:
            return s[k] if isinstance(s, Mapping) else getattr(s, k)

        dp: list[int] = []
        ds: list[int] = []
        dl: list[str] = []
        dsc: list[float] = []
        db: list[tuple[float, float, float, float]] = []
        for i, (la, lb) in enumerate(zip(detections_a, detections_b)):
            for side, dets in ((0, la), (1, lb)):
                for det in dets:
                    lab, sc, b = _det_tuple(det)
                    dp.append(i)
                    ds.append(side)
                    dl.append(lab)
                    dsc.append(sc)
                    db.append(b)
        n = len(specs)
        return PairData.from_lists(
            pair_id=list(pair_ids) if pair_ids is not None else [str(get(s, "pair_id")) for s in specs],
            law=[get(s, "law") for s in specs], modifier=[get(s, "modifier") for s in specs],
            dimension=[get(s, "dimension") for s in specs],
            entities=[list(get(s, "entities")) for s in specs],
            expected_count=[list(get(s, "expected_count")) for s in specs],
            expected_order=[list(get(s, "expected_order")) for s in specs],
            width=width, height=height, run=[run] * n if isinstance(run, str) else list(run),
            seed=[int(get(s, "seed")) for s in specs],
            det_pair=dp, det_side=ds, det_label=dl, det_score=dsc, det_box=db if db else np.zeros((0, 4)),
        )

    # ---- checks ----------------------------------------------------------------------------------
    def validate(self) -> None:
        """Raise WorkstationError (one line) when the arrays are inconsistent or out of range."""
        n, d = self.n_pairs, self.n_detections
        if self.entity.ndim != 2 or self.entity.shape[0] != n:
            raise WorkstationError("PairData: entity must be a (pairs, slots) array")
        e = self.entity.shape[1]
        for nm in ("law", "modifier", "dimension", "axis", "run", "seed"):
            if len(getattr(self, nm)) != n:
                raise WorkstationError(f"PairData: {nm} has {len(getattr(self, nm))} rows, expected {n}")
        for nm in ("expected_count", "expected_rank"):
            if getattr(self, nm).shape != (n, e):
                raise WorkstationError(f"PairData: {nm} must have shape {(n, e)}")
        for nm in ("width", "height"):
            a = getattr(self, nm)
            if a.shape != (n, 2) or not (np.isfinite(a).all() and (a > 0).all()):
                raise WorkstationError(f"PairData: {nm} must be positive, finite, one per image ({n}, 2)")
        if n and (int(self.law.min()) < 0 or int(self.law.max()) >= len(LAWS)
                  or int(self.modifier.min()) < 0 or int(self.modifier.max()) >= len(MODIFIERS)
                  or int(self.dimension.min()) < 0 or int(self.dimension.max()) >= len(DIMENSIONS)
                  or int(self.axis.min()) < 0 or int(self.axis.max()) > 2):
            raise WorkstationError("PairData: law / modifier / dimension / axis code out of range")
        if len(set(self.pair_id.tolist())) != n:
            raise WorkstationError("PairData: pair ids must be unique")
        used = self.expected_count >= 0
        if (used[:, 1:] & ~used[:, :-1]).any():
            raise WorkstationError("PairData: entity slots must be filled from the first one")
        names = self.entity
        odd = (used & (names == "")).any(axis=1) | (~used & (names != "")).any(axis=1)
        if odd.any():
            i = int(np.argmax(odd))
            raise WorkstationError(
                f"pair {self.pair_id[i]!r}: an entity slot without a name (or a name without a count)")
        for a in range(e):
            for b in range(a + 1, e):
                same = used[:, a] & used[:, b] & (names[:, a] == names[:, b])
                if same.any():
                    i = int(np.argmax(same))
                    raise WorkstationError(f"pair {self.pair_id[i]!r}: entities must be distinct, "
                                           f"{names[i, a]!r} is named twice")
        rank = self.expected_rank
        if ((rank >= 0) & ((self.expected_count < 1) | (self.axis[:, None] == 0))).any():
            raise WorkstationError("PairData: only present entities of positional pairs can have a rank")
        k = (rank >= 0).sum(axis=1)
        srt = np.sort(np.where(rank >= 0, rank, 127), axis=1)
        if (np.where(np.arange(e)[None, :] < k[:, None], srt != np.arange(e)[None, :], False)).any():
            raise WorkstationError("PairData: the ranks of a pair must be 0, 1, ... without gaps")
        for nm in ("det_label", "det_score", "det_x1", "det_y1", "det_x2", "det_y2"):
            if len(getattr(self, nm)) != d:
                raise WorkstationError(f"PairData: {nm} has {len(getattr(self, nm))} rows, det_image has {d}")
        if d:
            if int(self.det_image.min()) < 0 or int(self.det_image.max()) >= 2 * n:
                raise WorkstationError("PairData: detections refer to images that are not in the data")
            vals = np.stack([self.det_score, self.det_x1, self.det_y1, self.det_x2, self.det_y2])
            if not np.isfinite(vals).all():
                raise WorkstationError("PairData: detection scores and boxes must be finite")
            if (self.det_x2 < self.det_x1).any() or (self.det_y2 < self.det_y1).any():
                raise WorkstationError("PairData: detection boxes must have x2 >= x1 and y2 >= y1")

    def fingerprint(self) -> tuple[Any, ...]:
        """Identity of the arrays (the comparison's cache key)."""
        return (self.n_pairs, self.n_detections) + tuple(id(getattr(self, f)) for f in (
            "entity", "expected_count", "expected_rank", "axis", "width", "height", "det_image",
            "det_label", "det_score", "det_x1", "det_y1", "det_x2", "det_y2"))
