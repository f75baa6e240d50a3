"""The spatial method's judges (`workstation.evaluation.judges`): every automatic source of a
PASS / FAIL (/ UNDECIDABLE) for a spatial sample, listed without computing anything.

* ``spatial.checker:<config hash>`` — the checker's stored verdicts under each stored config
  (its confidence as the score); a sample without a stored verdict under that config is not
  judged.
* ``spatial.geneval`` — GenEval's position rule (`relative_position` and the position part of
  `evaluate` in ``evaluation/evaluate_images.py`` of djghosh13/geneval) on the same detections:
  the most confident primary box of each object on the original image scoring above the
  detection threshold 0.3; the offset of A's centre from B's, each component shrunk towards 0 by
  ``position_threshold`` 0.1 × the two boxes' summed width (height), divided by the offset's
  length; A is left of B when the x component is below −0.5, right of it above 0.5, above B when
  the y component is below −0.5 (image rows grow downwards), below it above 0.5; when both shrunk
  components are under 10⁻³ no relation holds. No box of A or of B → FAIL. Binary: it never
  abstains. Its score is the shrunk, normalised component in the asked direction (NaN where a box
  is missing). Equal scores pick the earlier detection row. A project whose detector has not run
  (no primary detection at all) is not judged by it, nor by the twin consistency.
* ``spatial.twin`` — MetaLogic's consistency across a spatial prompt and its counterfactual twin
  (``A left_of B`` / ``B right_of A`` say the same thing): the sample and its twin's sample of the
  same run and seed are both read by MetaLogic's positional order (the centres of the same most
  confident boxes on the relation's axis; a missing box shows no order). Both images show their
  relation → PASS, neither → FAIL, the two disagree → UNDECIDABLE (the equivalent pair is not
  consistent, so it vouches for neither). A sample whose twin has no image of the same run and
  seed is not judged. The score is the share of the two images that show it (0, 0.5, 1).
* ``spatial.score:<scorer id>`` — each scorer with scores for the spatial samples (a `score` job):
  a VQA yes-probability scorer (``vqa_yes``…) PASSes at P(yes) ≥ 0.5; any other (CLIPScore,
  PickScore) PASSes where the image scores higher against its own prompt than against its twin's
  prompt, which only a score of the twin's text allows (otherwise the score alone, no outcome).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...evaluation.judges import Judge, MethodJudges, Targets
from ...types import PRIMARY, WorkstationError
from .types import RELATIONS, VERDICTS

TASK = "spatial.verdict"
VALUES = ("PASS", "FAIL", "UNDECIDABLE")
#: GenEval's defaults (``--options threshold=0.3 position_threshold=0.1``)
GENEVAL_THRESHOLD = 0.3
POSITION_THRESHOLD = 0.1
#: GenEval's relation names of ours
GENEVAL_RELATION = {"left_of": "left of", "right_of": "right of", "above": "above", "below": "below"}


# ---- GenEval's rule ------------------------------------------------------------------------------

def relative_position(box_a: Any, box_b: Any, position_threshold: float = POSITION_THRESHOLD) -> set[str]:
    """GenEval's ``relative_position(obj_a, obj_b)``: the relations of box A to box B (x1, y1,
    x2, y2 in pixels) — "left of", "right of", "above", "below" — as GenEval computes them."""
    boxes = np.array([np.asarray(box_a, np.float64)[:4], np.asarray(box_b, np.float64)[:4]]).reshape(2, 2, 2)
    center_a, center_b = boxes.mean(axis=-2)
    dim_a, dim_b = np.abs(np.diff(boxes, axis=-2))[..., 0, :]
    offset = center_a - center_b
    revised_offset = np.maximum(np.abs(offset) - position_threshold * (dim_a + dim_b), 0) * np.sign(offset)
    if np.all(np.abs(revised_offset) < 1e-3):
        return set()
    dx, dy = revised_offset / np.linalg.norm(offset)
    relations = set()
    if dx < -0.5:
        relations.add("left of")
    if dx > 0.5:
        relations.add("right of")
    if dy < -0.5:
        relations.add("above")
    if dy > 0.5:
        relations.add("below")
    return relations


def geneval_components(a: np.ndarray, b: np.ndarray, position_threshold: float = POSITION_THRESHOLD
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`relative_position` over arrays of boxes (n, 4): (dx, dy, some relation may hold)."""
    a = np.asarray(a, np.float64).reshape(-1, 4)
    b = np.asarray(b, np.float64).reshape(-1, 4)
    ca = (a[:, :2] + a[:, 2:]) / 2.0
    cb = (b[:, :2] + b[:, 2:]) / 2.0
    dim = np.abs(a[:, 2:] - a[:, :2]) + np.abs(b[:, 2:] - b[:, :2])
    off = ca - cb
    rev = np.maximum(np.abs(off) - position_threshold * dim, 0.0) * np.sign(off)
    some = ~np.all(np.abs(rev) < 1e-3, axis=1)
    norm = np.linalg.norm(off, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.where(some[:, None], rev / np.where(norm > 0, norm, 1.0)[:, None], 0.0)
    return d[:, 0], d[:, 1], some


def _toward(rel: np.ndarray, dx: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """The component in the asked direction: −dx for left_of, dx right_of, −dy above, dy below."""
    r = np.asarray(rel, np.int64)
    return np.select([r == 0, r == 1, r == 2, r == 3], [-dx, dx, -dy, dy], np.nan)


def most_confident_boxes(ds: Any, threshold: float = GENEVAL_THRESHOLD) -> tuple[np.ndarray, np.ndarray]:
    """Per sample, the detection row of the most confident primary box of A and of B on the
    original image scoring above ``threshold`` (-1: none); equal scores: the earlier row. Kept in
    ``ds.cache`` for the detections it was found on (GenEval's rule and the twin consistency read
    the same boxes)."""
    key = ("judges.boxes", float(threshold))
    hit = ds.cache.get(key)
    if hit is not None and hit[0] is ds.detections and len(hit[1]) == ds.n:
        return hit[1], hit[2]
    out_a, out_b = _most_confident_boxes(ds, threshold)
    ds.cache[key] = (ds.detections, out_a, out_b)
    return out_a, out_b


#: detection rows read at a time by `most_confident_boxes` (bounds its temporaries)
BOX_CHUNK = 1 << 21


def _label_codes_in(ds: Any, names: list[str], rows: np.ndarray) -> np.ndarray:
    """The index in ``names`` (the spatial columns' object names) of the label of each detection
    row in ``rows`` (-1: none of them), exact string matches, through the detections' codes where
    the loader kept them (no string per detection)."""
    d = ds.detections
    pos = {str(x): i for i, x in enumerate(names)}
    coded = d.label_codes()
    if coded is not None:
        codes, det_names = coded
        lut = ds.cache.get("judges.label_lut")
        if lut is None or lut[0] is not det_names:
            lut = (det_names, np.array([pos.get(str(x), -1) for x in det_names] + [-1], np.int64))
            ds.cache["judges.label_lut"] = lut
        return lut[1][np.asarray(codes[rows], np.int64)]
    lab = np.asarray(d.labels_at(rows), dtype=object)
    uniq, inv = np.unique(lab.astype(str), return_inverse=True)
    return np.array([pos.get(str(x), -1) for x in uniq.tolist()], np.int64)[inv.reshape(-1)]


def _most_confident_boxes(ds: Any, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """`most_confident_boxes` computed a chunk of `BOX_CHUNK` detection rows at a time: each
    chunk's best box of A and of B per sample, kept where it scores strictly higher than the best
    of the chunks before (equal scores: the earlier row, which an earlier chunk holds)."""
    from .data import spatial_columns

    sc = spatial_columns(ds)
    d = ds.detections
    n = ds.n
    out_a = np.full(n, -1, np.int64)
    out_b = np.full(n, -1, np.int64)
    if not len(d) or not n:
        return out_a, out_b
    best_a = np.full(n, -np.inf)
    best_b = np.full(n, -np.inf)
    want_a = np.asarray(sc.code_a, np.int64)
    want_b = np.asarray(sc.code_b, np.int64)
    source, variant, score, sample_idx = d.source, d.variant, d.score, d.sample_idx
    between = ds.cache.get("judges.between")  # `judge_columns`'s pause between two steps
    for lo in range(0, len(d), BOX_CHUNK):
        if between is not None and lo:
            between()
        sl = slice(lo, lo + BOX_CHUNK)
        sco = np.asarray(score[sl])
        keep = np.flatnonzero((np.asarray(source[sl]) == PRIMARY) & (np.asarray(variant[sl]) == 0) & (sco > threshold))
        if not len(keep):
            continue
        rows = keep + lo
        sidx = np.asarray(np.asarray(sample_idx[sl])[keep], np.int64)
        lab = _label_codes_in(ds, sc.names, rows)
        val = np.asarray(sco[keep], np.float64)
        for want, out, best in ((want_a, out_a, best_a), (want_b, out_b, best_b)):
            hit = np.flatnonzero(lab == want[sidx])
            if not len(hit):
                continue
            r, s_, v = rows[hit], sidx[hit], val[hit]
            order = np.lexsort((r, -v, s_))
            s_sorted = s_[order]
            first = order[np.flatnonzero(np.r_[True, s_sorted[1:] != s_sorted[:-1]])]
            cand_s, cand_r, cand_v = s_[first], r[first], v[first]
            better = cand_v > best[cand_s]
            out[cand_s[better]] = cand_r[better]
            best[cand_s[better]] = cand_v[better]
    return out_a, out_b


def _boxes(ds: Any, rows: np.ndarray) -> np.ndarray:
    d = ds.detections
    ok = rows >= 0
    out = np.full((len(rows), 4), np.nan)
    r = rows[ok]
    out[ok] = np.stack([np.asarray(c)[r].astype(np.float64) for c in (d.x1, d.y1, d.x2, d.y2)], axis=1)
    return out


def geneval_outcomes(ds: Any, threshold: float = GENEVAL_THRESHOLD,
                     position_threshold: float = POSITION_THRESHOLD) -> tuple[np.ndarray, np.ndarray]:
    """GenEval's position rule on every sample of ``ds``: (PASS 1 / FAIL 0 per sample, score)."""
    from .data import spatial_columns

    rel = spatial_columns(ds).relation
    ra, rb = most_confident_boxes(ds, threshold)
    found = (ra >= 0) & (rb >= 0)
    dx, dy, some = geneval_components(_boxes(ds, ra), _boxes(ds, rb), position_threshold)
    toward = _toward(rel, dx, dy)
    passed = found & some & (toward > 0.5)
    score = np.where(found, np.where(some, toward, 0.0), np.nan)
    return passed.astype(np.int8), score


def order_shown(ds: Any, threshold: float = GENEVAL_THRESHOLD) -> np.ndarray:
    """MetaLogic's positional order per image: whether the centres of A's and B's most confident
    boxes are in the asked order on the relation's axis (False where a box is missing)."""
    from .data import spatial_columns

    rel = spatial_columns(ds).relation
    ra, rb = most_confident_boxes(ds, threshold)
    a, b = _boxes(ds, ra), _boxes(ds, rb)
    cx = (a[:, 0] + a[:, 2]) / 2 - (b[:, 0] + b[:, 2]) / 2
    cy = (a[:, 1] + a[:, 3]) / 2 - (b[:, 1] + b[:, 3]) / 2
    with np.errstate(invalid="ignore"):
        shown = _toward(rel, cx, cy) > 0
    return shown & (ra >= 0) & (rb >= 0)


def twin_rows(ds: Any) -> np.ndarray:
    """Per sample, the row of its twin prompt's sample of the same run and seed (-1: none; where
    several samples share a run, prompt and seed, the first). Vectorised: one sort of the
    samples' (run, prompt, seed) keys and a search of their twins' keys."""
    from ...util.grouping import factorize

    s = ds.samples
    n = ds.n
    out = np.full(n, -1, np.int64)
    if n == 0 or not len(ds.prompts):
        return out
    prow = np.asarray(ds.prompt_rows(), np.int64)  # the prompt row of each sample (-1: not loaded)
    twin_of = _twin_prompt_rows(ds)
    run, _ = factorize(s.run_id, sort=False)
    seed = np.unique(np.asarray(s.seed, np.int64), return_inverse=True)[1].reshape(-1)
    n_p, n_s = len(ds.prompts) + 1, int(seed.max()) + 1

    def key(prompt: np.ndarray) -> np.ndarray:
        return (np.asarray(run, np.int64) * n_p + (prompt + 1)) * n_s + np.asarray(seed, np.int64)

    if (int(run.max()) + 1) * n_p * n_s >= 2 ** 62:  # keys past int64: the plain lookup
        return _twin_rows_dict(ds)
    own = key(prow)
    order = np.argsort(own, kind="stable")  # equal keys keep row order: the first row is found
    sorted_keys = own[order]
    want_p = np.where(prow >= 0, twin_of[np.maximum(prow, 0)], -1)
    has = want_p >= 0
    want = key(want_p)
    at = np.searchsorted(sorted_keys, want, "left")
    at_c = np.minimum(at, n - 1)
    found = has & (at < n) & (sorted_keys[at_c] == want)
    out[found] = order[at_c[found]]
    return out


def _twin_prompt_rows(ds: Any) -> np.ndarray:
    """Per prompt row, the row of its twin prompt (-1: none), by an Arrow hash lookup."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = pa.array([str(p) for p in ds.prompts.prompt_id.tolist()], pa.string())
    twins = pa.array([str(t) if t else None for t in ds.prompts.twin_id.tolist()], pa.string())
    return np.asarray(pc.index_in(twins, value_set=ids).fill_null(-1).to_numpy(zero_copy_only=False), np.int64)


def _twin_rows_dict(ds: Any) -> np.ndarray:
    s = ds.samples
    twin = {str(p): str(t) for p, t in zip(ds.prompts.prompt_id.tolist(), ds.prompts.twin_id.tolist()) if t}
    key: dict[tuple[Any, Any, int], int] = {}
    for i, (r, p, sd) in enumerate(zip(s.run_id.tolist(), s.prompt_id.tolist(), s.seed.tolist())):
        key.setdefault((r, p, int(sd)), i)
    return np.array([key.get((r, twin.get(str(p), ""), int(sd)), -1)
                     for r, p, sd in zip(s.run_id.tolist(), s.prompt_id.tolist(), s.seed.tolist())], np.int64)


def twin_outcomes(ds: Any, threshold: float = GENEVAL_THRESHOLD) -> tuple[np.ndarray, np.ndarray]:
    """The twin consistency of every sample: (outcome object array, score) as the module says."""
    shown = order_shown(ds, threshold)
    tw = twin_rows(ds)
    has = tw >= 0
    other = np.where(has, shown[np.maximum(tw, 0)], False)
    outcome = np.empty(ds.n, dtype=object)
    outcome[:] = None
    outcome[has & shown & other] = "PASS"
    outcome[has & ~shown & ~other] = "FAIL"
    outcome[has & (shown != other)] = "UNDECIDABLE"
    score = np.where(has, (shown.astype(np.float64) + other) / 2.0, np.nan)
    return outcome, score


# ---- the judges ----------------------------------------------------------------------------------

def _dataset(project: Any, t: Targets) -> Any:
    ds = t.cache.get("dataset")
    if ds is None:
        ds = t.cache["dataset"] = project.samples.load_dataset(method="spatial")
    return ds


def _targets(project: Any) -> Targets:
    ds = project.samples.load_dataset(method="spatial")
    return Targets(np.asarray(ds.samples.sample_id, dtype=object), np.asarray(ds.samples.prompt_id, dtype=object),
                   {"dataset": ds})


def _human(project: Any, t: Targets) -> np.ndarray:
    from ...evaluation.selection import DISPUTED, resolve_project

    got = resolve_project(project, TASK).as_dict()
    out = np.empty(len(t), dtype=object)
    out[:] = [v if v in VALUES and v != DISPUTED else None for v in (got.get(str(i)) for i in t.ids.tolist())]
    return out


def _ids_arrow(t: Targets) -> Any:
    """The targets' sample ids as an Arrow string array (the loader's own where it kept one)."""
    import pyarrow as pa

    ds = t.cache.get("dataset")
    kept = ds.kept_arrow("sample_id") if ds is not None else None
    if kept is not None and len(kept) == len(t):
        return kept
    return pa.array([str(i) for i in t.ids.tolist()], pa.string())


def _checker(eval_id: int) -> Any:
    def compute(project: Any, t: Targets) -> tuple[np.ndarray, np.ndarray]:
        """The stored verdicts of the config, matched to the targets by an Arrow hash lookup (a
        verdict that is not one of VERDICTS is not a judgement)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        tab = project.con.execute("SELECT sample_id, verdict, conf FROM spatial_verdicts WHERE eval_id = ?",
                                  [int(eval_id)]).to_arrow_table()
        n = len(t)
        if tab.num_rows == 0:
            return np.full(n, None, dtype=object), np.full(n, np.nan)
        sid = pc.cast(tab.column("sample_id"), pa.string())
        at = pc.index_in(_ids_arrow(t), value_set=sid)
        verdict = pc.take(pc.cast(tab.column("verdict"), pa.string()), at)
        verdict = pc.if_else(pc.is_in(verdict, value_set=pa.array(list(VERDICTS), pa.string())), verdict, None)
        conf = pc.take(pc.cast(tab.column("conf"), pa.float64()), at)
        outcome = np.asarray(verdict.to_numpy(zero_copy_only=False), dtype=object)
        score = np.asarray(conf.fill_null(np.nan).to_numpy(zero_copy_only=False), np.float64)
        return outcome, score
    return compute


def _no_detections(ds: Any) -> bool:
    """Whether the dataset holds no primary detection of an original image at all: the detector has
    not run, so no rule on detections judges anything (a sample whose detections are an empty list
    among others' was detected, and GenEval FAILs it)."""
    d = ds.detections
    return not bool(len(d)) or not bool(((np.asarray(d.source) == PRIMARY) & (np.asarray(d.variant) == 0)).any())


def _geneval(project: Any, t: Targets) -> tuple[np.ndarray, np.ndarray]:
    ds = _dataset(project, t)
    if _no_detections(ds):
        return np.full(ds.n, None, dtype=object), np.full(ds.n, np.nan)
    passed, score = geneval_outcomes(ds)
    return np.where(passed == 1, "PASS", "FAIL").astype(object), score


def _twin(project: Any, t: Targets) -> tuple[np.ndarray, np.ndarray]:
    ds = _dataset(project, t)
    if _no_detections(ds):
        return np.full(ds.n, None, dtype=object), np.full(ds.n, np.nan)
    return twin_outcomes(ds)


def _scorer(scorer: str) -> Any:
    vqa = scorer.split("@", 1)[0].lower().startswith("vqa")

    def compute(project: Any, t: Targets) -> tuple[np.ndarray, np.ndarray]:
        ds = _dataset(project, t)
        text = dict(zip(ds.prompts.prompt_id.tolist(), ds.prompts.text.tolist()))
        twin = dict(zip(ds.prompts.prompt_id.tolist(), ds.prompts.twin_id.tolist()))
        tab = project.scores.table(scorer)
        by = {(str(s), str(x)): float(v) for s, x, v in zip(tab["sample_id"].tolist(), tab["text"].tolist(),
                                                           tab["score"].tolist())}
        own = np.array([by.get((str(s), str(text.get(p, ""))), np.nan)
                        for s, p in zip(ds.samples.sample_id.tolist(), ds.samples.prompt_id.tolist())])
        outcome = np.empty(ds.n, dtype=object)
        outcome[:] = None
        if vqa:
            ok = np.isfinite(own)
            outcome[ok & (own >= 0.5)] = "PASS"
            outcome[ok & (own < 0.5)] = "FAIL"
        else:
            other = np.array([by.get((str(s), str(text.get(twin.get(p) or "", ""))), np.nan)
                              for s, p in zip(ds.samples.sample_id.tolist(), ds.samples.prompt_id.tolist())])
            ok = np.isfinite(own) & np.isfinite(other)
            outcome[ok & (own > other)] = "PASS"
            outcome[ok & (own <= other)] = "FAIL"
        return outcome, own
    return compute


def spatial_judges(project: Any) -> MethodJudges:
    """The spatial judges of a project (listed from the store; nothing is computed)."""
    judges: list[Judge] = []
    has_table = bool(project.con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'spatial_verdicts'").fetchone()[0])
    stored: set[int] = set()
    if has_table:
        stored = {int(r[0]) for r in project.con.execute("SELECT DISTINCT eval_id FROM spatial_verdicts").fetchall()}
    for ev in project.evaluations.all("spatial"):
        eid = int(ev["eval_id"])
        if eid not in stored:
            continue
        h = str(ev["content_hash"])
        judges.append(Judge(f"spatial.checker:{h}", f"the checker under config v{eid}"
                            + (f" ({ev['name']})" if ev.get("name") else ""), h, TASK, VALUES, _checker(eid),
                            abstain="UNDECIDABLE", score="the checker's confidence",
                            description="the stored verdicts of this checker config", short=f"checker v{eid}"))
    judges.append(Judge("spatial.geneval", "GenEval's position rule on the same detections",
                        f"threshold={GENEVAL_THRESHOLD:g},position_threshold={POSITION_THRESHOLD:g}", TASK,
                        ("PASS", "FAIL"), _geneval, score="the shrunk offset's component in the asked direction",
                        description="djghosh13/geneval relative_position: most confident boxes above 0.3",
                        short="GenEval"))
    judges.append(Judge("spatial.twin", "MetaLogic's consistency with the counterfactual twin's image",
                        f"order,threshold={GENEVAL_THRESHOLD:g}", TASK, VALUES, _twin, abstain="UNDECIDABLE",
                        score="the share of the two images that show the relation",
                        description="A r B and B r⁻¹ A of the same run and seed read by their boxes' order",
                        short="twin"))
    sids = project.con.execute(
        "SELECT DISTINCT sc.scorer FROM scores sc JOIN samples s USING (sample_id) JOIN prompts p "
        "USING (prompt_id) WHERE p.method = 'spatial' ORDER BY sc.scorer").fetchall()
    for (scorer,) in sids:
        judges.append(Judge(f"spatial.score:{scorer}", f"the scorer {scorer}", str(scorer), TASK, ("PASS", "FAIL"),
                            _scorer(str(scorer)), score="its score against the sample's prompt", short=str(scorer)))
    return MethodJudges("spatial", TASK, VALUES, tuple(judges), _targets, _human, abstain="UNDECIDABLE",
                        item="sample", cluster="prompt")


# ---- every judge of every sample, for Browse ------------------------------------------------------

@dataclass(frozen=True)
class JudgeColumn:
    """One judge over every sample of a dataset, as Browse shows it: ``code`` the VERDICTS index
    of its outcome (int8; -1 where it did not judge the sample), ``score`` its score (float32,
    NaN where none)."""

    name: str
    short: str
    title: str
    code: np.ndarray
    score: np.ndarray


def outcome_codes(outcome: np.ndarray) -> np.ndarray:
    """VERDICTS index of each outcome (object: PASS / FAIL / UNDECIDABLE or None → -1), int8."""
    o = np.asarray(outcome, dtype=object)
    code = np.full(len(o), -1, np.int8)
    for k, v in enumerate(VERDICTS):
        code[o == v] = k
    return code


def judge_columns(project: Any, ds: Any, stop: Any = None, pause: Any = None) -> list[JudgeColumn] | None:
    """Every judge of `spatial_judges` over every sample of the loaded spatial dataset ``ds`` (in
    its row order), one after the other, leaving out a judge that judged no sample; ``stop()`` true
    between two steps ends it early (None). ``pause()``, called between two judges and between
    two chunks of the detections' boxes, may wait (the window pauses the judges while a slider is
    dragged). Reads the stored verdicts and scores through ``project`` and the detections of
    ``ds``: the dataset is not loaded again."""
    spec = spatial_judges(project)
    t = Targets(np.asarray(ds.samples.sample_id, dtype=object), np.asarray(ds.samples.prompt_id, dtype=object),
                {"dataset": ds})
    out: list[JudgeColumn] = []
    if pause is not None:
        ds.cache["judges.between"] = pause
    try:
        for j in spec.judges:
            if pause is not None:
                pause()
            if stop is not None and stop():
                return None
            outcome, score = j.compute(project, t)
            if len(outcome) != ds.n or len(score) != ds.n:
                raise WorkstationError(f"judge {j.name!r} gave {len(outcome)} outcomes for {ds.n} samples")
            code, sc = outcome_codes(outcome), np.asarray(score, np.float32)
            if not bool((code >= 0).any()) and not bool(np.isfinite(sc).any()):
                continue  # it judged no sample (no detections yet, say): no column of dashes
            out.append(JudgeColumn(j.name, j.short or j.name, j.title, code, sc))
    finally:
        ds.cache.pop("judges.between", None)
    return out


__all__ = ["relative_position", "geneval_components", "geneval_outcomes", "most_confident_boxes", "order_shown",
           "twin_rows", "twin_outcomes", "spatial_judges", "disagreement_counts", "item_judges", "JudgeColumn", "judge_columns", "outcome_codes", "GENEVAL_THRESHOLD", "POSITION_THRESHOLD", "RELATIONS"]


def disagreement_counts(run: Any, a: str, b: str) -> list[dict[str, Any]]:
    """Per relation, where judges ``a`` and ``b`` (names of `spatial_judges`) stand on the samples:
    ``agree`` (both decided, the same), ``disagree`` (both decided, not the same) and ``undecided``
    (one abstained or did not judge), with the samples of each relation."""
    from ...evaluation.judges import disagreement_strata
    from .data import spatial_columns

    strata, _names = disagreement_strata(run.output(a), run.output(b))
    rel = spatial_columns(run.targets.cache["dataset"]).relation
    out = []
    for code, name in enumerate(RELATIONS):
        m = rel == code
        out.append({"relation": name, "samples": int(m.sum()), "agree": int((m & (strata == 0)).sum()),
                    "disagree": int((m & (strata == 1)).sum()), "undecided": int((m & (strata == 2)).sum())})
    return out


# ---- one sample's judges -------------------------------------------------------------------------

def _two_samples(ds: Any, rows: np.ndarray) -> Any:
    """`Dataset.subset` of a sample or two, without a pass over the prompts (the rows' prompt
    rows are read once per dataset) and, where the detections are not given by sample, one
    comparison of their sample column."""
    ds.prompt_rows()  # cached on the dataset: the subset takes its rows from it
    if ds.detections.sample_offsets() is not None:
        return ds.subset(rows)
    from ...dataset import Dataset

    sidx = ds.cache.get("judges.sample_idx")
    if sidx is None or len(sidx) != len(ds.detections):  # its int64 copy, made once per dataset
        sidx = ds.cache["judges.sample_idx"] = np.asarray(ds.detections.sample_idx, np.int64)
        ds.cache["judges.sorted"] = bool(len(sidx) < 2 or (sidx[1:] >= sidx[:-1]).all())
    if ds.cache["judges.sorted"]:  # by sample, as a loader gives them: each sample's rows by bisection
        keep = np.concatenate([np.arange(np.searchsorted(sidx, r, "left"), np.searchsorted(sidx, r, "right"))
                               for r in rows.tolist()]).astype(np.int64)
    else:
        hit = sidx == rows[0]
        for r in rows[1:]:
            hit |= sidx == r
        keep = np.flatnonzero(hit)
    dets = ds.detections.take(keep)
    remap = {int(r): i for i, r in enumerate(rows.tolist())}
    dets.sample_idx = np.array([remap[int(x)] for x in sidx[keep].tolist()], np.int64)
    sub = Dataset(ds.samples.take(rows), dets, ds.prompts, ds.variant_names)
    sub.cache["prompt_rows"] = ds.prompt_rows()[rows]
    return sub


def item_judges(project: Any, ds: Any, row: int, twin_row: int | None = None) -> list[dict[str, Any]]:
    """Every judge of `spatial_judges` on the sample at ``row`` of the spatial dataset ``ds`` alone
    (the pair view's lines): per judge ``judge`` (its name), ``short`` (a few words), ``outcome``
    (None: not judged) and ``score`` (NaN: none) — what the judge gives that sample over all the
    samples, computed from that sample and its twin only (a few rows: cheap on any project).
    ``twin_row``: the row of its twin's sample of the same run and seed (-1: none), when known."""
    if row < 0 or row >= ds.n:
        return []
    sid = str(ds.samples.sample_id[row])
    out: list[dict[str, Any]] = []
    has_table = bool(project.con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'spatial_verdicts'").fetchone()[0])
    stored: dict[int, tuple[str, float]] = {}
    if has_table:
        stored = {int(e): (str(v), np.nan if c is None else float(c)) for e, v, c in project.con.execute(
            "SELECT eval_id, verdict, conf FROM spatial_verdicts WHERE sample_id = ?", [sid]).fetchall()}
    for ev in project.evaluations.all("spatial") if has_table else []:
        eid = int(ev["eval_id"])
        if eid not in stored and not project.con.execute(
                "SELECT count(*) FROM (SELECT 1 FROM spatial_verdicts WHERE eval_id = ? LIMIT 1)", [eid]).fetchone()[0]:
            continue  # a config with no stored verdicts is no judge
        v, c = stored.get(eid, (None, np.nan))
        out.append({"judge": f"spatial.checker:{ev['content_hash']}", "short": f"checker v{eid}",
                    "outcome": v if v in VERDICTS else None, "score": c})
    # the sample and its twin's sample of the same run and seed, alone
    s = ds.samples
    twin_prompt = ds.cache.get("judges.twin_prompt")
    if twin_prompt is None:  # read once per dataset: the pair view asks for one sample after another
        twin_prompt = ds.cache["judges.twin_prompt"] = {
            str(p): str(t) for p, t in zip(ds.prompts.prompt_id.tolist(), ds.prompts.twin_id.tolist()) if t}
    want = twin_prompt.get(str(s.prompt_id[row]), "")
    tw = -1 if twin_row is None else int(twin_row)
    if want and twin_row is None:
        hit = np.flatnonzero((np.asarray(s.prompt_id, dtype=object) == want)
                             & (np.asarray(s.run_id, dtype=object) == s.run_id[row])
                             & (np.asarray(s.seed) == s.seed[row]))
        tw = int(hit[0]) if len(hit) else -1
    rows = np.array([row] + ([tw] if tw >= 0 else []), np.int64)
    none = ds.cache.get("judges.no_detections")
    if none is None:
        none = ds.cache["judges.no_detections"] = _no_detections(ds)
    g: tuple[Any, float] = (None, np.nan)
    t: tuple[Any, float] = (None, np.nan)
    if not none:  # a project whose detector has not run: neither rule judges anything
        sub = _two_samples(ds, rows)
        passed, score = geneval_outcomes(sub)
        g = ("PASS" if passed[0] == 1 else "FAIL", float(score[0]))
        if tw >= 0:  # `twin_outcomes` on the sample and its twin
            shown = order_shown(sub)
            a, b = bool(shown[0]), bool(shown[1])
            t = ("PASS" if a and b else "FAIL" if not (a or b) else "UNDECIDABLE", (float(a) + float(b)) / 2.0)
    out.append({"judge": "spatial.geneval", "short": "GenEval", "outcome": g[0], "score": g[1]})
    out.append({"judge": "spatial.twin", "short": "twin", "outcome": t[0], "score": t[1]})
    scored = project.con.execute(
        "SELECT scorer, text, score FROM scores WHERE sample_id = ? ORDER BY scorer", [sid]).fetchall()
    if scored:
        text = ds.cache.get("judges.prompt_text")
        if text is None:
            text = ds.cache["judges.prompt_text"] = dict(zip(ds.prompts.prompt_id.tolist(), ds.prompts.text.tolist()))
        own_text = str(text.get(s.prompt_id[row], ""))
        twin_text = str(text.get(want, "")) if want else ""
        by: dict[str, dict[str, float]] = {}
        for scorer, x, v in scored:
            by.setdefault(str(scorer), {})[str(x)] = float(v)
        for scorer, got in by.items():
            own = got.get(own_text, np.nan)
            outcome = None
            if np.isfinite(own):
                if scorer.split("@", 1)[0].lower().startswith("vqa"):
                    outcome = "PASS" if own >= 0.5 else "FAIL"
                else:
                    other = got.get(twin_text, np.nan) if twin_text else np.nan
                    if np.isfinite(other):
                        outcome = "PASS" if own > other else "FAIL"
            out.append({"judge": f"spatial.score:{scorer}", "short": scorer, "outcome": outcome, "score": own})
    return out
