"""From the project's generic tables to `PairData`: the MetaLogic method's ``load``.

An **image pair** is the sample of prompt ``<pair>.A`` and the sample of its twin ``<pair>.B``
made by the same run with the same seed. `pairs_from_dataset` joins them, vectorised over
samples (numpy keys and sorts; the only Python loop is over prompts, in `prompts.prompt_table`):

1. every MetaLogic prompt's side, law, modifier, dimension, entities and expectations;
2. suite pairs = prompts grouped by ``group_id``, exactly one A and one B each, twins of each
   other, naming the same entities with the same expectations (A's fields are used);
3. samples keyed by (suite pair, run, seed); the first A sample and the first B sample of a key
   (project order) form the image pair ``"<pair>|<run>|<seed>"`` (the target id of its human
   labels); samples without a twin image are counted, not compared;
4. detections: the primary detector's, on the original image (``source == 0``,
   ``variant == 0``), mapped to ``det_image = 2 · pair row + side``.

`MetaLogicData` carries the `PairData` and, per image pair, where it came from (sample ids,
image paths, prompt texts) and the image scores the project holds (CLIPScore and VQA
faithfulness of A and B, when a scoring job has run).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...dataset import Dataset
from ...types import WorkstationError
from ...util.grouping import group_codes
from .data import PairData
from .prompts import prompt_table

__all__ = ["MetaLogicData", "pairs_from_dataset", "load_project", "image_pair_ids", "SCORE_FAMILIES"]

METHOD = "metalogic"
#: score families the metrics use: our name -> the scorer's registry name (the part before "@")
SCORE_FAMILIES: dict[str, str] = {"clip": "clipscore", "faith": "vqa_faithfulness"}


@dataclass
class MetaLogicData:
    """What the MetaLogic method evaluates: `PairData` (``pairs``) and, per image pair (row),
    ``group`` (the suite pair id), ``sample_a`` / ``sample_b``, ``image_a`` / ``image_b`` (paths
    relative to the project folder), ``prompt_a`` / ``prompt_b`` and ``text_a`` / ``text_b``.
    ``scores`` maps a score family ("clip", "faith") to {"scorer": id, "a": float64 (P,), "b": ...}
    (NaN where an image has no score). ``notes`` say what was left out (images without a twin)."""

    pairs: PairData
    group: np.ndarray
    sample_a: np.ndarray
    sample_b: np.ndarray
    image_a: np.ndarray
    image_b: np.ndarray
    prompt_a: np.ndarray
    prompt_b: np.ndarray
    text_a: np.ndarray
    text_b: np.ndarray
    n_prompts: int = 0
    n_suite_pairs: int = 0
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return self.pairs.n_pairs

    @property
    def pair_id(self) -> np.ndarray:
        return self.pairs.pair_id

    def row_of(self) -> dict[str, int]:
        """Image pair id -> row."""
        return {str(p): i for i, p in enumerate(self.pairs.pair_id.tolist())}


def image_pair_ids(group: np.ndarray, run: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """``"<pair>|<run>|<seed>"`` for each row (object array)."""
    g = np.asarray(group).astype(str).astype(object)
    r = np.asarray(run).astype(str).astype(object)
    s = np.asarray(seed, np.int64).astype(str).astype(object)
    return g + "|" + r + "|" + s if len(g) else np.zeros(0, dtype=object)


def _first_per_key(key: np.ndarray, rows: np.ndarray, n_keys: int) -> np.ndarray:
    """For each key code 0..n_keys-1, the smallest row with it (-1 none)."""
    out = np.full(n_keys, -1, np.int64)
    if len(rows):
        o = np.argsort(rows, kind="stable")[::-1]  # descending: the smallest row is written last
        out[key[o]] = rows[o]
    return out


def pairs_from_dataset(ds: Dataset) -> MetaLogicData:
    """The image pairs of a `Dataset` (its MetaLogic prompts and their samples); see the module
    docstring. WorkstationError (one line) on inconsistent prompts."""
    prompts = ds.prompts.of_method(METHOD) if len(ds.prompts) else ds.prompts
    t = prompt_table(prompts)
    n_pr = len(t)
    notes: list[str] = []
    # ---- suite pairs: one A and one B prompt per group ---------------------------------------
    gcode = group_codes(t.group) if n_pr else np.zeros(0, np.int64)
    n_groups = int(gcode.max()) + 1 if n_pr else 0
    a_of = np.full(n_groups, -1, np.int64)
    b_of = np.full(n_groups, -1, np.int64)
    for side_code, target in ((0, a_of), (1, b_of)):
        rows = np.flatnonzero(t.side == side_code)
        cnt = np.bincount(gcode[rows], minlength=n_groups)
        if (cnt > 1).any():
            g = int(np.flatnonzero(cnt > 1)[0])
            raise WorkstationError(f"MetaLogic pair {t.group[rows[gcode[rows] == g][0]]!r} has "
                                   f"{int(cnt[g])} prompts of side {'AB'[side_code]}")
        target[gcode[rows]] = rows
    empty_group = np.flatnonzero(t.group == "")
    if len(empty_group):
        raise WorkstationError(f"MetaLogic prompt {t.prompt_id[empty_group[0]]!r} belongs to no pair (empty group_id)")
    whole = (a_of >= 0) & (b_of >= 0)
    if (~whole).any():
        g = int(np.flatnonzero(~whole)[0])
        have = a_of[g] if a_of[g] >= 0 else b_of[g]
        raise WorkstationError(f"MetaLogic pair {t.group[have]!r} has only prompt {t.prompt_id[have]!r}; "
                               "a pair needs an A and a B prompt")
    if n_groups:
        bad = (t.twin[a_of] != t.prompt_id[b_of]) | (t.twin[b_of] != t.prompt_id[a_of])
        if bad.any():
            g = int(np.flatnonzero(bad)[0])
            raise WorkstationError(f"MetaLogic prompts {t.prompt_id[a_of[g]]!r} and {t.prompt_id[b_of[g]]!r} share "
                                   "a pair but are not each other's twin")
        same = ((t.entity[a_of] == t.entity[b_of]).all(axis=1) & (t.count[a_of] == t.count[b_of]).all(axis=1)
                & (t.rank[a_of] == t.rank[b_of]).all(axis=1) & (t.law[a_of] == t.law[b_of])
                & (t.modifier[a_of] == t.modifier[b_of]) & (t.dimension[a_of] == t.dimension[b_of]))
        if not same.all():
            g = int(np.flatnonzero(~same)[0])
            raise WorkstationError(f"MetaLogic pair {t.group[a_of[g]]!r}: prompts A and B differ in law, modifier, "
                                   "dimension, entities or expected counts / order")
    # ---- samples of MetaLogic prompts, keyed by (pair, run, seed) ---------------------------------
    s = ds.samples
    if len(ds.prompts) and n_pr:
        order = np.argsort(t.prompt_id.astype(str), kind="stable")
        sorted_ids = t.prompt_id.astype(str)[order]
        sid = s.prompt_id.astype(str)
        pos = np.clip(np.searchsorted(sorted_ids, sid), 0, n_pr - 1) if len(sid) else np.zeros(0, np.int64)
        prow = np.where(sorted_ids[pos] == sid, order[pos], -1) if len(sid) else np.zeros(0, np.int64)
    else:
        prow = np.full(len(s), -1, np.int64)
    ours = np.flatnonzero(prow >= 0)
    pr = prow[ours]
    side = t.side[pr].astype(np.int64)
    key = group_codes(gcode[pr], s.run_id[ours], s.seed[ours]) if len(ours) else np.zeros(0, np.int64)
    n_keys = int(key.max()) + 1 if len(key) else 0
    sa = _first_per_key(key[side == 0], ours[side == 0], n_keys)
    sb = _first_per_key(key[side == 1], ours[side == 1], n_keys)
    dup = len(ours) - int((sa >= 0).sum()) - int((sb >= 0).sum())
    if dup:
        notes.append(f"{dup} image(s) repeat a (prompt, run, seed) already seen; the first of each is used")
    both = (sa >= 0) & (sb >= 0)
    alone = int(((sa >= 0) ^ (sb >= 0)).sum())
    if alone:
        notes.append(f"{alone} image(s) have no twin image (same run and seed) yet and are not compared")
    ra, rb = sa[both], sb[both]
    o = np.argsort(ra, kind="stable")  # image pairs in the project order of their A image
    ra, rb = ra[o], rb[o]
    p = len(ra)
    pa = prow[ra]  # A prompt row of each image pair
    run = s.run_id[ra].astype(object)
    seed = s.seed[ra].astype(np.int64)
    group = t.group[pa].astype(object)
    ids = image_pair_ids(group, run, seed)
    # ---- detections: primary, original image --------------------------------------------------------
    d = ds.detections
    pair_of = np.full(len(s), -1, np.int64)
    side_of = np.zeros(len(s), np.int64)
    pair_of[ra], pair_of[rb] = np.arange(p), np.arange(p)
    side_of[rb] = 1
    if len(d):
        keep = (d.source == 0) & (d.variant == 0) & (pair_of[d.sample_idx] >= 0)
        k = np.flatnonzero(keep)
        si = d.sample_idx[k]
        det_image = 2 * pair_of[si] + side_of[si]
        det = (np.asarray(d.labels_at(k), dtype=object), np.asarray(d.score, np.float64)[k],
               *(np.asarray(getattr(d, c), np.float64)[k] for c in ("x1", "y1", "x2", "y2")))
    else:
        det_image = np.zeros(0, np.int64)
        det = (np.zeros(0, dtype=object),) + tuple(np.zeros(0) for _ in range(5))
    used = (t.count[pa] >= 0).any(axis=0) if p else np.zeros(t.entity.shape[1], bool)
    e = int(np.flatnonzero(used)[-1]) + 1 if used.any() else 0  # slots some image pair uses
    data = PairData(
        pair_id=ids, law=t.law[pa].copy(), modifier=t.modifier[pa].copy(), dimension=t.dimension[pa].copy(),
        axis=t.axis[pa].copy(), run=run, seed=seed,
        entity=t.entity[pa, :e] if p else np.full((0, e), "", dtype=object),
        expected_count=t.count[pa, :e], expected_rank=t.rank[pa, :e],
        width=np.stack([s.width[ra], s.width[rb]], axis=1).astype(np.float64) if p else np.zeros((0, 2)),
        height=np.stack([s.height[ra], s.height[rb]], axis=1).astype(np.float64) if p else np.zeros((0, 2)),
        det_image=det_image.astype(np.int64), det_label=det[0], det_score=det[1], det_x1=det[2], det_y1=det[3],
        det_x2=det[4], det_y2=det[5],
    )
    data.validate()
    pb = prow[rb]
    return MetaLogicData(
        pairs=data, group=group, sample_a=s.sample_id[ra].astype(object), sample_b=s.sample_id[rb].astype(object),
        image_a=s.image_path[ra].astype(object), image_b=s.image_path[rb].astype(object),
        prompt_a=t.prompt_id[pa].astype(object), prompt_b=t.prompt_id[pb].astype(object),
        text_a=t.text[pa].astype(object), text_b=t.text[pb].astype(object), n_prompts=n_pr,
        n_suite_pairs=n_groups, notes=notes)


def attach_scores(data: MetaLogicData, table: dict[str, np.ndarray]) -> None:
    """Fill ``data.scores`` from the project's scores table (columns sample_id, scorer, text, score).

    Per family (`SCORE_FAMILIES`), the scorer id with scores for the most of these images is used
    (ties: the first by name); a score counts when its text is the image's prompt text (what a
    score job scores a MetaLogic image against: its prompts set no ``score_text``)."""
    data.scores = {}
    n = len(data)
    if n == 0 or not len(table.get("sample_id", ())):
        return
    sid = np.asarray(table["sample_id"]).astype(str)
    scorer = np.asarray(table["scorer"]).astype(str)
    text = np.asarray(table["text"]).astype(str)
    value = np.asarray(table["score"], np.float64)
    family = np.array([x.split("@", 1)[0] for x in scorer.tolist()], dtype=object) if len(scorer) else scorer
    both_ids = np.concatenate([data.sample_a.astype(str), data.sample_b.astype(str)])
    texts = np.concatenate([data.text_a.astype(str), data.text_b.astype(str)])
    order = np.argsort(both_ids, kind="stable")
    srt = both_ids[order]
    pos = np.clip(np.searchsorted(srt, sid), 0, len(srt) - 1)
    img = np.where(srt[pos] == sid, order[pos], -1)  # image row (0..2n) of each score row, -1 not ours
    ok = img >= 0
    ok[ok] &= text[ok] == texts[img[ok]]
    for name, reg in SCORE_FAMILIES.items():
        rows = np.flatnonzero(ok & (family == reg))
        if not len(rows):
            continue
        ids, counts = np.unique(scorer[rows], return_counts=True)
        best = str(ids[int(np.argmax(counts))])
        rows = rows[scorer[rows] == best]
        vals = np.full(2 * n, np.nan)
        vals[img[rows]] = value[rows]
        data.scores[name] = {"scorer": best, "a": vals[:n], "b": vals[n:]}


def load_project(project: Any) -> MetaLogicData:
    """The MetaLogic image pairs of an open project, with the image scores it holds."""
    ds = project.samples.load_dataset(method=METHOD)
    data = pairs_from_dataset(ds)
    if len(data) and project.scores.scorers():
        attach_scores(data, project.scores.table(sample_ids=np.concatenate([data.sample_a, data.sample_b]).tolist()))
    return data
