"""Stored verdict sets as arrays, and the SpatialBench-UC per-sample export.

`StoredVerdicts` is a verdict set read back from the project (or recorded by an imported run),
aligned with a `Dataset`; it offers what `checker.VerdictArrays` offers to the store, the
metrics and the audit (`verdict`, `reason`, `conf`, the four components, `delta`, `iou_ab`,
`reason_text(i)`).

`sbuc_records` / `export_sbuc` write one record per sample in the format of SpatialBench-UC's
`eval/per_sample.jsonl`: the verdict, reason and confidence come from the stored verdict set;
the selected boxes are the checker's selection under that set's config (the selection rule
does not depend on anything else); detections are the cached original-image detections of
each detector, in their cached order. Importing the export again (with the run's manifest)
reproduces the same verdicts and detections.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .config import CheckerConfig
from ...dataset import Dataset
from .data import spatial_columns
from .types import MISSING, RELATIONS, VERDICTS
from ...types import ORIGINAL, PRIMARY, SECONDARY, SOURCES, WorkstationError
from .store import SpatialStore

if TYPE_CHECKING:  # pragma: no cover
    from ...store import Project
    from .sbuc import RecordedVerdicts


@dataclass
class StoredVerdicts:
    """A verdict set aligned with `Dataset.samples` (row i = sample i)."""

    verdict: np.ndarray  # int8
    reason: np.ndarray  # int8
    conf: np.ndarray  # float64
    c_detection: np.ndarray
    c_geometry: np.ndarray
    c_stability: np.ndarray
    c_agreement: np.ndarray
    delta: np.ndarray  # NaN where not computed
    iou_ab: np.ndarray  # NaN where not computed
    texts: np.ndarray  # object: SpatialBench-UC verdict_reason text ("" for PASS/FAIL)
    config_id: int | None = None

    def __len__(self) -> int:
        return len(self.verdict)

    def reason_text(self, i: int) -> str:
        return str(self.texts[i] or "")

    def reason_texts(self) -> np.ndarray:
        return self.texts

    def counts(self) -> tuple[int, int, int]:
        c = np.bincount(self.verdict.astype(np.int64), minlength=3)
        return int(c[0]), int(c[1]), int(c[2])

    @staticmethod
    def from_recorded(rec: "RecordedVerdicts", config_id: int | None = None) -> "StoredVerdicts":
        n = len(rec.verdict)
        iou = rec.iou_ab if getattr(rec, "iou_ab", None) is not None else np.full(n, np.nan)
        return StoredVerdicts(
            verdict=np.asarray(rec.verdict, np.int8), reason=np.asarray(rec.reason, np.int8),
            conf=np.asarray(rec.conf, np.float64), c_detection=np.asarray(rec.c_detection, np.float64),
            c_geometry=np.asarray(rec.c_geometry, np.float64), c_stability=np.asarray(rec.c_stability, np.float64),
            c_agreement=np.asarray(rec.c_agreement, np.float64), delta=np.asarray(rec.delta, np.float64),
            iou_ab=np.asarray(iou, np.float64),
            texts=np.array([t or "" for t in rec.reason_text.tolist()], dtype=object), config_id=config_id,
        )

    @staticmethod
    def from_arrays(v: Any, config_id: int | None = None) -> "StoredVerdicts":
        """From a `checker.VerdictArrays` (or anything with the same fields)."""
        texts = v.reason_texts() if hasattr(v, "reason_texts") else \
            np.array([v.reason_text(i) for i in range(len(v.verdict))], dtype=object)
        return StoredVerdicts(
            verdict=np.asarray(v.verdict, np.int8), reason=np.asarray(v.reason, np.int8),
            conf=np.asarray(v.conf, np.float64), c_detection=np.asarray(v.c_detection, np.float64),
            c_geometry=np.asarray(v.c_geometry, np.float64), c_stability=np.asarray(v.c_stability, np.float64),
            c_agreement=np.asarray(v.c_agreement, np.float64), delta=np.asarray(v.delta, np.float64),
            iou_ab=np.asarray(v.iou_ab, np.float64), texts=np.asarray(texts, dtype=object), config_id=config_id,
        )


def stored_verdicts(project: "Project", ds: Dataset, config_id: int) -> StoredVerdicts:
    """The verdict set of `config_id` for every sample of `ds` (in `ds` order).

    Raises WorkstationError naming how many samples have no verdict under that version.
    """
    cols = SpatialStore(project).load_verdict_table(config_id)
    pos = {s: i for i, s in enumerate(cols["sample_id"].tolist())}
    idx = np.array([pos.get(s, -1) for s in ds.samples.sample_id.tolist()], np.int64)
    lacking = int((idx < 0).sum())
    if lacking:
        first = ds.samples.sample_id[int(np.flatnonzero(idx < 0)[0])]
        raise WorkstationError(
            f"{lacking} sample(s) have no verdict under checker config version {config_id} "
            f"(e.g. {first!r}); run `evaluate` first")

    def col(k: str, dtype: Any) -> np.ndarray:
        return np.asarray(cols[k], dtype=dtype)[idx] if ds.n else np.zeros(0, dtype)

    def fcol(k: str) -> np.ndarray:
        a = cols[k]
        return np.array([np.nan if x is None else x for x in a], np.float64)[idx] if ds.n else np.zeros(0)

    texts = np.array([t or "" for t in np.asarray(cols["reason_text"], dtype=object)[idx].tolist()], dtype=object) \
        if ds.n else np.zeros(0, dtype=object)
    return StoredVerdicts(
        verdict=col("verdict", np.int8), reason=col("reason", np.int8), conf=fcol("conf"),
        c_detection=fcol("c_detection"), c_geometry=fcol("c_geometry"), c_stability=fcol("c_stability"),
        c_agreement=fcol("c_agreement"), delta=fcol("delta"), iou_ab=fcol("iou_ab"), texts=texts,
        config_id=config_id,
    )


# ---------------------------------------------------------------------------------------------
# SpatialBench-UC per_sample.jsonl
# ---------------------------------------------------------------------------------------------


def _f(x: Any) -> float | None:
    """A JSON number, or null for NaN / None."""
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def detector_names(project: "Project", run_id: str | None = None) -> dict[int, str]:
    """The detector name of each source (e.g. {0: 'fasterrcnn', 1: 'grounding_dino'})."""
    q = "SELECT d.source, min(d.detector) FROM detections d"
    params: list[Any] = []
    if run_id is not None:
        q += " JOIN samples s USING (sample_id) WHERE s.run_id = ?"
        params = [run_id]
    q += " GROUP BY d.source"
    names = {int(s): str(n) for s, n in project.con.execute(q, params).fetchall() if n}
    return {src: names.get(src, SOURCES[src]) for src in (PRIMARY, SECONDARY)}


def sbuc_records(ds: Dataset, v: StoredVerdicts, cfg: CheckerConfig,
                 detectors: Mapping[int, str] | None = None,
                 selection: tuple[np.ndarray, np.ndarray] | None = None) -> Iterator[dict[str, Any]]:
    """One SpatialBench-UC per-sample record per sample of `ds`.

    `selection` = (sel_a, sel_b) rows in `ds.detections` (-1 for none); computed with the
    checker under `cfg` when not given.
    """
    if len(v) != ds.n:
        raise WorkstationError(f"verdict set has {len(v)} rows but the dataset has {ds.n} samples")
    names = dict(detectors or {PRIMARY: SOURCES[PRIMARY], SECONDARY: SOURCES[SECONDARY]})
    if selection is None:
        from . import checker

        va = checker.evaluate(ds, cfg)
        selection = (np.asarray(va.sel_a, np.int64), np.asarray(va.sel_b, np.int64))
    sel_a, sel_b = selection
    s = ds.samples
    d = ds.detections
    # original-image detections grouped by sample, in cached order
    orig = np.flatnonzero(d.variant == ORIGINAL)
    order = orig[np.argsort(d.sample_idx[orig], kind="stable")]
    bounds = np.searchsorted(d.sample_idx[order], np.arange(ds.n + 1))
    labels = d.label.tolist()
    score = d.score.tolist()
    x1, y1, x2, y2 = d.x1.tolist(), d.y1.tolist(), d.x2.tolist(), d.y2.tolist()
    src = d.source.tolist()

    def box(r: int) -> list[float]:
        return [x1[r], y1[r], x2[r], y2[r]]

    for i in range(ds.n):
        rows = order[bounds[i]:bounds[i + 1]].tolist()
        blocks: dict[str, Any] = {}
        for source in (PRIMARY, SECONDARY):
            if source == SECONDARY and not bool(s.has_secondary[i]):
                continue
            blocks[SOURCES[source]] = {
                "type": names.get(source, SOURCES[source]),
                "detections": [{"label": labels[r], "score": score[r], "box_xyxy": box(r)}
                               for r in rows if src[r] == source],
            }
        verdict = VERDICTS[int(v.verdict[i])]
        reason = int(v.reason[i])
        a, b = int(sel_a[i]), int(sel_b[i])
        if reason == MISSING:  # SpatialBench-UC records no selection when an object is missing
            a = b = -1
        yield {
            "sample_id": str(s.sample_id[i]),
            "prompt_id": str(s.prompt_id[i]),
            "relation": RELATIONS[int(spatial_columns(ds).relation[i])],
            "object_a": str(spatial_columns(ds).label_a[i]),
            "object_b": str(spatial_columns(ds).label_b[i]),
            "verdict_raw": verdict,
            "verdict_reason": v.reason_text(i) or None,
            "conf": float(v.conf[i]),
            "conf_components": {
                "detection": float(v.c_detection[i]), "geometry": float(v.c_geometry[i]),
                "stability": float(v.c_stability[i]), "agreement": float(v.c_agreement[i]),
            },
            "detectors": blocks,
            "selected": {
                "box_a_xyxy": box(a) if a >= 0 else None, "box_b_xyxy": box(b) if b >= 0 else None,
                "score_a": score[a] if a >= 0 else None, "score_b": score[b] if b >= 0 else None,
            },
            "geometry": {"delta": _f(v.delta[i]), "margin": float(cfg.margin), "iou_ab": _f(v.iou_ab[i])},
            "image_path": str(s.image_path[i] or ""),
        }


def write_jsonl(path: str | Path, records: Iterator[dict[str, Any]], *, overwrite: bool = False,
                projects: Iterable[str | Path | None] = ()) -> int:
    """Write records as JSON lines through a temporary file (the target appears whole, or not at
    all: a failed write leaves nothing behind and says why in one line)."""
    from ...util.output import output_file

    n = 0
    with output_file(path, "export", overwrite=overwrite, projects=projects) as tmp:
        with tmp.open("w", encoding="utf-8") as fh:
            for rec in records:
                fh.write(json.dumps(rec, ensure_ascii=False, allow_nan=False))
                fh.write("\n")
                n += 1
    return n


def export_sbuc(project: "Project", run_id: str, out: str | Path, config_id: int | None = None, *,
                overwrite: bool = False) -> int:
    """Write the per-sample records of `run_id` under a verdict set (the active one by default);
    an existing ``out`` is replaced only with ``overwrite`` (`util.output`)."""
    runs = project.samples.run_ids()
    if run_id not in runs:
        raise WorkstationError(f"no run {run_id!r} in the project (runs: {', '.join(runs) or 'none'})")
    cid = config_id if config_id is not None else SpatialStore(project).active_config_id()
    if cid is None:
        raise WorkstationError("the project has no verdict set yet; run `evaluate` first")
    cfg = SpatialStore(project).get_config(cid)
    ds = project.samples.load_dataset(runs=[run_id])
    v = stored_verdicts(project, ds, cid)
    return write_jsonl(out, sbuc_records(ds, v, cfg, detector_names(project, run_id)), overwrite=overwrite,
                       projects=[project.folder])
