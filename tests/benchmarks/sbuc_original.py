"""The original SpatialBench-UC checker and calibration, driven on a project Dataset: the
baselines of the benchmarks (not a test, not part of the project).

The original code lives unchanged in ``../shared/anchors/spatialbench_uc`` (its ``harness.py``
replays recorded detections; read ``../shared/anchors/README.md``). This module feeds it the
SAME detections the project's checker reads:

- ``evaluate_sample`` gets each sample's primary / secondary detections (original image) through
  the harness's ``Replay`` detectors, with the detectors' own thresholds
  (``CheckerConfig.primary_threshold`` / ``secondary_threshold``).
- Stability: where the dataset has no perturbed detections (the published run), the harness's
  recorded stability stands in for ``test_stability`` (as the project's checker does). Where it
  has them (the synthetic benchmark data), the original ``test_stability`` runs for real — loaded
  a second time from the same file, because the harness replaces it — with ``apply_perturbation``
  returning an image whose recorded detections are those of that perturbed variant.
- The 36-combination calibration (``audit/analyze.py: grid_search_calibration``) gets Replay
  detectors from ``get_detector`` and images from ``Image.open`` (both patched for the call).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
ANCHORS = ROOT.parent / "shared" / "anchors" / "spatialbench_uc"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from workstation.methods.spatial.config import CheckerConfig
from workstation.perturb import Perturbation
from workstation.dataset import Dataset
from workstation.methods.spatial.data import recorded_stability, spatial_columns
from workstation.types import PRIMARY, SECONDARY
from workstation.methods.spatial.types import RELATIONS, VERDICTS

_H: Any = None
_REAL_TEST_STABILITY: Any = None


def harness() -> Any:
    """The anchors' harness module (imports the original code); SystemExit when absent."""
    global _H, _REAL_TEST_STABILITY
    if _H is not None:
        return _H
    if not (ANCHORS / "harness.py").is_file():
        raise SystemExit(f"the original SpatialBench-UC code is not at {ANCHORS} (needs ../shared)")
    sys.path.insert(0, str(ANCHORS))
    import harness as H  # type: ignore[import-not-found]

    # the harness replaced evaluate.test_stability by the recorded stability: load the same file
    # once more under another name to keep its real test_stability (and its helpers)
    spec = importlib.util.spec_from_file_location("sbuc_evaluate_second_copy", H.SRC / "evaluate.py")
    assert spec is not None and spec.loader is not None
    copy = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = copy  # its dataclasses look their module up there
    spec.loader.exec_module(copy)
    copy.apply_perturbation = lambda image, p: image.variant(p)  # replay recorded variants
    _REAL_TEST_STABILITY = copy.test_stability
    _H = H
    return H


def _image_class() -> Any:
    H = harness()

    class VariantImage(H.RecImage):  # type: ignore[misc, name-defined]
        """A RecImage that also carries the recorded detections of its perturbed variants."""

        __slots__ = ("variants",)

        def variant(self, perturb: dict[str, Any]) -> Any:
            value = perturb.get("factor", perturb.get("sigma", perturb.get("scale")))
            dets = self.variants.get(Perturbation(perturb["type"], float(value)).name, [])
            return H.RecImage(self.size, {"primary": dets, "secondary": None}, self.stab)

    return VariantImage


def sbuc_config(cfg: CheckerConfig) -> dict[str, Any]:
    """The original's checker config dict for ``cfg`` (Replay detectors with cfg's thresholds)."""
    d = cfg.to_sbuc_dict()
    d["detector"] = {"primary": {"type": "replay_primary", "params": {"score_threshold": cfg.primary_threshold}}}
    if cfg.use_secondary:
        d["detector"]["secondary"] = {"type": "replay_secondary",
                                      "params": {"box_threshold": cfg.secondary_threshold}}
    return d


def inputs(ds: Dataset, rows: np.ndarray) -> list[tuple[dict[str, Any], Any]]:
    """[(sample dict, image)] for the original's evaluate_sample, samples ``rows`` of ``ds``."""
    H = harness()
    VariantImage = _image_class()
    s, d = ds.samples, ds.detections
    want = np.zeros(ds.n, bool)
    want[rows] = True
    keep = np.flatnonzero(want[d.sample_idx])
    per: dict[tuple[int, int, int], list[Any]] = {}
    for si, src, var, lab, sc, x1, y1, x2, y2 in zip(
            d.sample_idx[keep].tolist(), d.source[keep].tolist(), d.variant[keep].tolist(),
            d.label[keep].tolist(), d.score[keep].tolist(), d.x1[keep].tolist(), d.y1[keep].tolist(),
            d.x2[keep].tolist(), d.y2[keep].tolist()):
        per.setdefault((si, src, var), []).append(
            H.Detection(box_xyxy=(x1, y1, x2, y2), score=sc, label=str(lab)))
    out = []
    sc = spatial_columns(ds)
    recorded = recorded_stability(ds)
    for i in np.asarray(rows).tolist():
        w, h = float(s.width[i]), float(s.height[i])
        size = (int(w), int(h)) if w.is_integer() and h.is_integer() else (w, h)
        rec = float(recorded[i])
        img = VariantImage(size, {"primary": per.get((i, PRIMARY, 0), []),
                                  "secondary": per.get((i, SECONDARY, 0)) if bool(s.has_secondary[i]) else None},
                           rec if math.isfinite(rec) else 1.0)
        img.variants = {name: per.get((i, PRIMARY, k), []) for k, name in enumerate(ds.variant_names) if k}
        sample = {"sample_id": str(s.sample_id[i]), "prompt_id": str(s.prompt_id[i]),
                  "relation": RELATIONS[int(sc.relation[i])], "object_a": str(sc.label_a[i]),
                  "object_b": str(sc.label_b[i])}
        out.append((sample, img))
    return out


@contextlib.contextmanager
def stability_from(ds: Dataset) -> Any:
    """Within the block, the original's test_stability: its real code on replayed variants when
    the dataset has perturbed detections, else the harness's recorded stability."""
    H = harness()
    has = np.asarray(ds.samples.has_perturbed, bool)
    if has.any() and not has.all():
        raise ValueError("mixed datasets (some samples with perturbed detections, some without)")
    saved = H.E.test_stability
    if has.all():
        H.E.test_stability = _REAL_TEST_STABILITY
    try:
        yield
    finally:
        H.E.test_stability = saved


def evaluate_original(ds: Dataset, items: list[tuple[dict[str, Any], Any]], cfg: CheckerConfig) -> list[Any]:
    """The original's evaluate_sample over ``items`` (from ``inputs``): its EvaluationResults."""
    H = harness()
    config = sbuc_config(cfg)
    prim = H.Replay("primary", cfg.primary_threshold)
    sec = H.Replay("secondary", cfg.secondary_threshold) if cfg.use_secondary else None
    with stability_from(ds):
        return [H.E.evaluate_sample(sample, img, prim, sec, config) for sample, img in items]


def agreement(results: list[Any], v: Any, rows: np.ndarray) -> tuple[int, float]:
    """(samples whose verdict or reason category differs, max |conf difference|) between the
    original's results and the project's VerdictArrays ``v`` at ``rows``."""
    from workstation.methods.spatial.types import REASONS

    bad = 0
    err = 0.0
    for r, i in zip(results, np.asarray(rows).tolist()):
        reason = (r.verdict_reason or "").split(":")[0].split(" (")[0].strip()
        if r.verdict_raw != VERDICTS[int(v.verdict[i])] or reason != REASONS[int(v.reason[i])]:
            bad += 1
        err = max(err, abs(float(r.conf) - float(v.conf[i])))
    return bad, err


class _FakePath:
    """What the patched resolve_media_path returns: a path that exists, naming its sample."""

    def __init__(self, sample_id: str) -> None:
        self.sample_id = sample_id

    def exists(self) -> bool:
        return True


def grid_search_items(items: list[tuple[dict[str, Any], Any]], labels: dict[str, str],
                      config: dict[str, Any]) -> dict[str, Any]:
    """The original's 36-combination grid search (margin × detection_score × tau) over
    ``items`` ([(sample dict, image)]) with ``labels`` (sample id -> PASS / FAIL /
    UNDECIDABLE) and the original's checker ``config``. Returns its best_parameters."""
    H = harness()
    import PIL.Image

    images = {smp["sample_id"]: img for smp, img in items}
    metadata = {smp["sample_id"]: {**smp, "image_path": smp["sample_id"]} for smp, _ in items}
    label_rows = {sid: {"human_verdict": verdict, "notes": "", "timestamp": ""} for sid, verdict in labels.items()}
    original_results = {sid: dict(m) for sid, m in metadata.items()}

    def get_detector(dcfg: dict[str, Any]) -> Any:
        params = dcfg.get("params") or {}
        if dcfg.get("type") in ("replay_secondary", "grounding_dino"):
            return H.Replay("secondary", float(params.get("box_threshold", 0.0) or 0.0))
        return H.Replay("primary", float(params.get("score_threshold", 0.0) or 0.0))

    saved = (H.A.get_detector, H.A.resolve_media_path, PIL.Image.open)
    H.A.get_detector = get_detector
    H.A.resolve_media_path = lambda _dir, media: _FakePath(str(media))
    PIL.Image.open = lambda p, *a, **k: images[p.sample_id]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            res = H.A.grid_search_calibration(metadata, label_rows, original_results, [ROOT], ROOT, config)
    finally:
        H.A.get_detector, H.A.resolve_media_path, PIL.Image.open = saved
    return dict(res["best_parameters"])


def calibrate_original(ds: Dataset, rows: np.ndarray, human: np.ndarray, cfg: CheckerConfig,
                       items: list[tuple[dict[str, Any], Any]] | None = None) -> dict[str, Any]:
    """``grid_search_items`` over the labelled samples ``rows`` of ``ds`` (``human[rows]``:
    verdict codes), stability as ``stability_from`` gives it."""
    items = items if items is not None else inputs(ds, rows)
    labels = {smp["sample_id"]: VERDICTS[int(human[i])] for (smp, _), i in zip(items, np.asarray(rows).tolist())}
    with stability_from(ds):
        return grid_search_items(items, labels, sbuc_config(cfg))


def same_best(ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    return (ours["margin"] == theirs["margin"] and ours["t_det"] == theirs["detection_score"]
            and ours["tau"] == theirs["confidence_threshold"])
