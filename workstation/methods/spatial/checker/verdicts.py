"""The checker's result: `VerdictArrays` (a verdict, reason and confidence per sample) and the
protocols of what reports and the store read from it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Protocol

import numpy as np

from ..config import CheckerConfig
from ..types import AMBIGUOUS, DECIDED, FAIL, HIGH_OVERLAP, MISSING, NEAR_BOUNDARY, PASS, REASONS, UNDECIDABLE, UNSTABLE


class VerdictColumns(Protocol):
    """The per-sample columns metrics read from a verdict set aligned with ``ds.samples``:
    ``VerdictArrays`` and ``io.export.StoredVerdicts`` both have them."""

    verdict: np.ndarray
    reason: np.ndarray
    conf: np.ndarray


class StorableVerdicts(VerdictColumns, Protocol):
    """What ``Project.save_verdicts`` stores from a verdict set (``VerdictArrays`` or
    ``io.export.StoredVerdicts``)."""

    c_detection: np.ndarray
    c_geometry: np.ndarray
    c_stability: np.ndarray
    c_agreement: np.ndarray
    delta: np.ndarray
    iou_ab: np.ndarray

    def reason_text(self, i: int) -> str: ...

    def reason_texts(self) -> np.ndarray: ...


@dataclass
class VerdictArrays:
    """Checker output for N samples, aligned with ``ds.samples`` (row i = sample i).

    ``verdict``: int8 (types.PASS / FAIL / UNDECIDABLE); ``reason``: int8 (types.REASONS code,
    0 for PASS/FAIL); ``reason_detail``: int8, for missing a bit mask (1 = A, 2 = B missing),
    for ambiguous 1 = A, 2 = B. ``conf`` and ``c_detection``, ``c_geometry``, ``c_stability``,
    ``c_agreement``: float64 (all 0 for missing / ambiguous / high_overlap). ``delta`` and
    ``iou_ab``: float64 of the selected primary boxes, NaN where not computed (missing,
    ambiguous). ``sel_a`` / ``sel_b``: row in ``ds.detections`` (int32; int64 from 2**30
    detections on) of the selected primary box on the original image (-1 if none; a found box is
    kept even when the other object is missing). ``sel2_a`` / ``sel2_b``: the secondary
    detector's selections (-1 if none or the secondary detector is not used). ``label_a`` / ``label_b`` (object names) and ``config``
    serve ``reason_text``.
    """

    verdict: np.ndarray
    reason: np.ndarray
    reason_detail: np.ndarray
    conf: np.ndarray
    c_detection: np.ndarray
    c_geometry: np.ndarray
    c_stability: np.ndarray
    c_agreement: np.ndarray
    delta: np.ndarray
    iou_ab: np.ndarray
    sel_a: np.ndarray
    sel_b: np.ndarray
    sel2_a: np.ndarray
    sel2_b: np.ndarray
    label_a: np.ndarray
    label_b: np.ndarray
    config: CheckerConfig

    def __len__(self) -> int:
        return len(self.verdict)

    def take(self, idx: np.ndarray) -> "VerdictArrays":
        """The rows ``idx`` (indices or a boolean mask); ``config`` is shared."""
        kw: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            kw[f.name] = v if f.name == "config" else v[idx]
        return VerdictArrays(**kw)

    def reason_text(self, i: int) -> str:
        """SpatialBench-UC's ``verdict_reason`` for sample i ("" for PASS / FAIL), e.g.
        ``missing: potted plant, bear``, ``ambiguous: multiple banana``,
        ``high_overlap: IoU=0.96 > 0.5``, ``near_boundary (|delta|=0.049 <= margin=0.1)``,
        ``unstable: stability=0.42 < 0.5``."""
        r = int(self.reason[i])
        cfg = self.config
        if r == DECIDED:
            return ""
        if r == MISSING:
            det = int(self.reason_detail[i])
            names = [str(self.label_a[i])] if det & 1 else []
            if det & 2:
                names.append(str(self.label_b[i]))
            return f"missing: {', '.join(names)}"
        if r == AMBIGUOUS:
            name = self.label_a[i] if int(self.reason_detail[i]) == 1 else self.label_b[i]
            return f"ambiguous: multiple {name}"
        if r == HIGH_OVERLAP:
            return f"high_overlap: IoU={float(self.iou_ab[i]):.2f} > {cfg.max_overlap_iou}"
        if r == NEAR_BOUNDARY:
            return f"near_boundary (|delta|={abs(float(self.delta[i])):.3f} <= margin={cfg.margin})"
        if r == UNSTABLE:
            return f"unstable: stability={float(self.c_stability[i]):.2f} < {cfg.consistency_threshold}"
        return REASONS[r]

    def reason_texts(self) -> np.ndarray:
        """``reason_text`` of every sample as an object array, written reason by reason (the
        same texts: a million samples' in a fraction of the per-sample calls' time)."""
        out = np.full(len(self), "", dtype=object)
        reason = np.asarray(self.reason)
        cfg = self.config
        for r in np.unique(reason[reason != DECIDED]).tolist():
            at = np.flatnonzero(reason == r)
            if r == MISSING:
                det = np.asarray(self.reason_detail)[at]
                la, lb = np.asarray(self.label_a)[at].tolist(), np.asarray(self.label_b)[at].tolist()
                texts = [f"missing: {', '.join(([str(a)] if d & 1 else []) + ([str(b)] if d & 2 else []))}"
                         for d, a, b in zip(det.tolist(), la, lb)]
            elif r == AMBIGUOUS:
                det = np.asarray(self.reason_detail)[at]
                la, lb = np.asarray(self.label_a)[at].tolist(), np.asarray(self.label_b)[at].tolist()
                texts = [f"ambiguous: multiple {a if d == 1 else b}" for d, a, b in zip(det.tolist(), la, lb)]
            elif r == HIGH_OVERLAP:
                bound = cfg.max_overlap_iou
                texts = [f"high_overlap: IoU={x:.2f} > {bound}" for x in np.asarray(self.iou_ab, np.float64)[at].tolist()]
            elif r == NEAR_BOUNDARY:
                m = cfg.margin
                texts = [f"near_boundary (|delta|={abs(x):.3f} <= margin={m})"
                         for x in np.asarray(self.delta, np.float64)[at].tolist()]
            elif r == UNSTABLE:
                ct = cfg.consistency_threshold
                texts = [f"unstable: stability={x:.2f} < {ct}"
                         for x in np.asarray(self.c_stability, np.float64)[at].tolist()]
            else:
                texts = [REASONS[r]] * len(at)
            out[at] = np.array(texts, dtype=object) if texts else out[at]
        return out

    def counts(self) -> tuple[int, int, int]:
        """(PASS, FAIL, UNDECIDABLE) counts."""
        c = np.bincount(self.verdict.astype(np.int64), minlength=3)
        return int(c[PASS]), int(c[FAIL]), int(c[UNDECIDABLE])
