"""The ProtoBias part of the built-in demo project, and the procedural renderer of demo rows.

`add_demo(project)`:

1. builds procedural triplets (`demo.build_demo_triplets`: flat shapes, the knob carried by an
   extra shape; I_corr correct in an unusual look, I_adv canonical with the knob violated) and
   adds them as ProtoBias prompts;
2. draws both images of each with `render_demo_row` — the same function the ``procedural``
   generator calls for ProtoBias rows, so a generate job over the demo suite gives the same
   pixels — into a run ``demo_protobias`` (samples with their truth);
3. scores every image against T with two built-in toy metrics of known bias
   (`demo.ToyProtoMetric`: each prefers the prototype on a set fraction ``p`` of texts — one
   mostly follows the text, p = 0.35, one mostly the prototype, p = 0.7, as CLIPScore does in the
   seed), stored in the scores table as ``toy_proto@p=0.35`` and ``toy_proto@p=0.7``;
4. adds 1-4 ratings by two *simulated* annotators (``simulated-1``, ``simulated-2``, source
   ``demo``) on 60 triplets spread over the domains (6 in the small demo), drawn from the truth with noise, so the human tables and κ
   have something to show; real annotators rate in the rating mode;
5. evaluates with the default config (a stored evaluation version).

A toy metric fails exactly on the triplets whose T it is biased on, so its measured failure rate
is Binomial(n, p) / n (tested).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ...dataset import Dataset, Detections, Samples
from ...types import WorkstationError
from .build import ROLES, Triplet
from .demo import DEMO_VERSION, ToyProtoMetric, build_demo_triplets, render_demo

DEMO_RUN_ID = "demo_protobias"
DEMO_P = 0.35
DEMO_PS: tuple[float, ...] = (DEMO_P, 0.7)
SIMULATED = ("simulated-1", "simulated-2")

ProgressFn = Callable[[int, int], Any]


def toy_scorer_id(p: float) -> str:
    return f"toy_proto@p={p:g}"


def triplet_of_row(row: dict[str, Any]) -> Triplet:
    """The demo triplet a ProtoBias prompt row was made from (its attrs hold every field)."""
    a = dict(row.get("attrs") or {})
    if "demo" not in a:
        raise WorkstationError(
            f"prompt {row.get('prompt_id')!r} is not a demo triplet: the procedural generator draws only the demo's "
            "flat-shape triplets (`suite --method protobias --set demo=true`); generate the others with a local model")
    role = str(a.get("role") or "")
    text = str(row.get("text") or "")
    demo = {k: a[k] for k in ("demo", "main_shape", "main_colour", "extra_shape", "extra_colour") if k in a}
    return Triplet(
        triplet_id=str(a.get("triplet_id") or row.get("group_id") or ""), domain=str(a.get("domain") or ""),
        knob=str(a.get("knob") or ""), text=str(a.get("eval_text") or ""),
        prompt_corr=text if role == "corr" else "", prompt_adv=text if role == "adv" else "",
        subcategory=str(a.get("subcategory") or ""), hypernym=str(a.get("hypernym") or ""),
        non_proto=str(a.get("subject") or "") if role == "corr" else "",
        proto=str(a.get("subject") or "") if role == "adv" else "", extra_element=str(a.get("extra_element") or ""),
        knob_value=str(a.get("knob_value_text") or ""), knob_value_adv=str(a.get("knob_value_adv") or ""),
        environment="plain canvas", attrs=demo)


def render_demo_row(row: dict[str, Any], seed: int, size: int = 512) -> tuple[np.ndarray, dict[str, Any]]:
    """(RGB uint8 image, truth) of one ProtoBias demo prompt row (see `triplet_of_row`)."""
    t = triplet_of_row(row)
    role = str((row.get("attrs") or {}).get("role") or "")
    if role not in ROLES:
        raise WorkstationError(f"prompt {row.get('prompt_id')!r} has no role corr / adv")
    img = render_demo(t, role, int(seed), int(size))
    truth = {"method": "protobias", "triplet_id": t.triplet_id, "role": role, "knob": t.knob,
             "knob_value_shown": t.knob_value if role == "corr" else t.knob_value_adv, "look":
             "unusual" if role == "corr" else "canonical", "demo": DEMO_VERSION}
    return img, truth


def simulated_ratings(n: int, seed: int = 0) -> np.ndarray:
    """Two simulated annotators' 1-4 ratings of n (I_corr, I_adv) pairs: (2, n, 2) int array
    [annotator, triplet, role]. I_corr shows T (mostly 4 or 3); I_adv violates the knob (mostly 2)."""
    rng = np.random.default_rng(np.random.SeedSequence([20260, seed]))
    corr_p = np.array([0.0, 0.04, 0.26, 0.70])  # P(rating = 1..4)
    adv_p = np.array([0.22, 0.58, 0.18, 0.02])
    out = np.zeros((2, n, 2), np.int64)
    base_c = rng.choice(4, size=n, p=corr_p) + 1  # a shared "true" impression, then each annotator's noise
    base_a = rng.choice(4, size=n, p=adv_p) + 1
    for k in range(2):
        for j, base in enumerate((base_c, base_a)):
            noise = rng.choice([-1, 0, 1], size=n, p=[0.15, 0.7, 0.15])
            out[k, :, j] = np.clip(base + noise, 1, 4)
    return out


def add_demo(project: Any, *, small: bool = False, progress: ProgressFn | None = None,
             ps: tuple[float, ...] = DEMO_PS,
             n_per_domain: int | None = None, size: int | None = None, run_id: str = DEMO_RUN_ID,
             n_rated: int | None = None) -> dict[str, Any]:
    from ...evaluation.run import evaluate_and_store
    from ...jobs.chunks import encode_png, write_bytes_atomic
    from ...jobs.spec import image_path_for, prompt_row, sample_id_for
    from .. import get_method
    from .data import triplet_prompts

    METHOD = get_method("protobias")  # the registered method object (its module imports this one)
    t0 = time.perf_counter()
    n = n_per_domain if n_per_domain is not None else (4 if small else 100)
    size = size or (128 if small else 256)
    triplets = build_demo_triplets(n, seed=0)
    prompts = triplet_prompts(triplets, suite=f"protobias-demo@{triplets.version}")
    total = len(prompts)
    if progress:
        progress(0, total)
    images: list[np.ndarray] = []
    truths: list[dict[str, Any]] = []
    paths: list[str] = []
    sids: list[str] = []
    written: list[Any] = []
    try:
        for i in range(total):
            row = prompt_row(prompts, i)
            img, truth = render_demo_row(row, 0, size)
            rel = image_path_for(run_id, row["prompt_id"], 0)
            write_bytes_atomic(project.folder / rel, encode_png(img))
            written.append(project.folder / rel)
            images.append(img)
            truths.append(truth)
            paths.append(rel)
            sids.append(sample_id_for(run_id, row["prompt_id"], 0))
            if progress and (i + 1) % 20 == 0:
                progress(i + 1, total)
        texts = [str(a["score_text"]) for a in prompts.attrs]
        toys = [ToyProtoMetric(p=p, seed=0) for p in ps]
        scores = [toy.score(images, texts) for toy in toys]
        samples = Samples.build(sids, run_id, prompts.prompt_id.tolist(), seed=0, width=float(size), height=float(size),
                                image_path=paths)
        with project.transaction():
            project.samples.add_run(run_id, method="demo_procedural", model={"generator": "procedural"},
                                    params={"width": size, "height": size, "triplets_per_domain": n},
                                    provenance={"demo": DEMO_VERSION, "triplets_hash": triplets.content_hash,
                                                "toy_metrics": [{"name": "toy_proto", "p": q, "seed": 0} for q in ps]}, source="demo")
            project.samples.add_dataset(Dataset(samples, Detections.empty(), prompts),
                                        truth=[json.dumps(t, separators=(",", ":")) for t in truths])
            for p, sc in zip(ps, scores):
                project.scores.add({"sample_id": sids, "scorer": [toy_scorer_id(p)] * total, "text": texts, "score": sc})
            k = len(triplets.triplets) if n_rated is None else min(n_rated, len(triplets.triplets))
            k = min(k, 6 if small else 60)
            if k:
                r = simulated_ratings(k)
                spread = np.round(np.linspace(0, len(triplets.triplets) - 1, k)).astype(np.int64)  # every domain
                rows: dict[str, list[Any]] = {"target_id": [], "annotator": [], "value": [], "rating": []}
                for a, who in enumerate(SIMULATED):
                    for i, t in enumerate(spread.tolist()):
                        for j in range(2):
                            rows["target_id"].append(sids[2 * t + j])
                            rows["annotator"].append(who)
                            rows["value"].append(str(int(r[a, i, j])))
                            rows["rating"].append(int(r[a, i, j]))
                project.labels.add_bulk("protobias.fidelity", "image", rows, source="demo")
            eid, results = evaluate_and_store(project, METHOD, note="demo: default audit")
    except BaseException:
        for f in written:
            f.unlink(missing_ok=True)
        raise
    if progress:
        progress(total, total)
    data = METHOD.load(project)
    lines = METHOD.summary_lines(data, results, eid, results.cfg)
    measured: dict[str, float] = {}
    for p, toy in zip(ps, toys):
        fail = results.failed[:, results.metrics.index(toy_scorer_id(p))]
        measured[toy_scorer_id(p)] = float(fail.mean()) if len(fail) else float("nan")
        lines.append(f"  {toy_scorer_id(p)} was set to prefer the prototype on {p:.0%} of texts; measured failure "
                     f"rate {fail.mean():.1%} ({int(fail.sum())}/{len(fail)})")
    return {"method": "protobias", "run_id": run_id, "triplets": len(triplets.triplets), "images": total,
            "lines": lines, "metrics": [toy_scorer_id(p) for p in ps], "eval_id": eid, "failure_rates": measured,
            "set_probabilities": {toy_scorer_id(p): p for p in ps},
            "timings": {"total_s": time.perf_counter() - t0}}
