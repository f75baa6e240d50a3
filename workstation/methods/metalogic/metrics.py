"""MetaLogic metrics: misalignment rates with Wilson intervals, the law × dimension heatmap, the
published figures beside them, and the student variant's CLIPScore / VQA stability scores.

Rules:

* **The paper's misalignment rate** (``paper_rate``, the headline) = MISALIGNED / all pairs with
  every pair decided as the paper decides it (`compare.paper_outcomes`: the detection threshold
  and the centroid order, no abstention band).
* **The abstention-aware rate** (``decided_rate``) = MISALIGNED / (ALIGNED + MISALIGNED) under the
  comparison with its abstention bands; UNDECIDABLE pairs are left out of the denominator and
  counted separately (``undecidable``, and ``coverage`` = decided / all).
* **Intervals**: 95 %, the cluster bootstrap over the suite pairs (the image pairs of one suite
  pair — its seeds, and its runs when runs are pooled — are resampled together; Wilson when
  every suite pair has one image pair), `workstation.evaluation.intervals`; NaN when there is
  nothing to count. ``n_boot=0`` gives no bounds.
* Every table is per run (the generating model; ``run`` of `data.PairData`) and per group
  (law, modifier, dimension, law × dimension), plus the misalignment types.
* **Published figures** (METHODS.md §2; the seed's section 4.2 for AND / OR) are a constant table,
  shown in a ``published`` column beside the measured rate where one exists.
* **Student scores** (per pair, from per-image CLIPScore on the 0–100 scale and VQA faithfulness
  in [0, 1]): clip_diff = |clip_A − clip_B| / 100, clip_stability = 1 − clip_diff;
  faith_mean = (faith_A + faith_B) / 2, faith_diff = |faith_A − faith_B|, faith_stability =
  1 − faith_diff; aggregated as means (with seeded 95 % bootstrap intervals) per category
  (law × dimension), per law and per dimension. A pair with a NaN score is left out of that
  score's mean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ...evaluation.intervals import N_BOOT, SEED, Estimate, bootstrap_interval, ratio_estimates
from ...util.grouping import group_codes
from .laws import DIMENSION_TITLES, DIMENSIONS, LAWS, MODIFIERS, STUDENT_DIMENSIONS
from .results import ALIGNED, KINDS, MISALIGNED, REASONS, UNDECIDABLE, VERDICTS

__all__ = ["PUBLISHED", "published_rate", "rate_rows", "misalignment_tables", "heatmap", "pair_scores",
           "score_tables", "GROUPINGS", "Outcomes", "StoredOutcomes", "reason_rows", "agreement", "human_rates"]


class Outcomes(Protocol):
    """What the rate tables read of a result set, one entry per image pair: `results.PairResults`
    (live) or `StoredOutcomes` (a stored result set). They also read, where present,
    ``paper_verdict`` (the paper's decisions) and ``unit`` (the suite pair of each image pair)."""

    verdict: np.ndarray  # int8 VERDICTS codes
    kind: np.ndarray  # int8 KINDS codes
    reason: np.ndarray  # int8 REASONS codes
    law: np.ndarray  # int8 LAWS codes
    modifier: np.ndarray  # int8 MODIFIERS codes
    dimension: np.ndarray  # int8 DIMENSIONS codes
    run: np.ndarray  # object

    def __len__(self) -> int: ...


@dataclass
class StoredOutcomes:
    """A stored result set as codes (see `from_columns`); ``unit`` the suite pair of each image
    pair, ``paper_verdict`` the paper's decisions when known."""

    verdict: np.ndarray
    kind: np.ndarray
    reason: np.ndarray
    law: np.ndarray
    modifier: np.ndarray
    dimension: np.ndarray
    run: np.ndarray
    unit: np.ndarray | None = None
    paper_verdict: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.verdict)

    @staticmethod
    def from_columns(cols: Mapping[str, np.ndarray]) -> "StoredOutcomes":
        """From stored columns with names (verdict, kind, reason, law, modifier, dimension, run_id)."""
        def codes(key: str, names: Sequence[str]) -> np.ndarray:
            table = {n: i for i, n in enumerate(names)}
            vals = [("" if v is None else str(v)) for v in np.asarray(cols[key], dtype=object).tolist()]
            bad = [v for v in vals if v not in table]
            if bad:
                raise ValueError(f"stored MetaLogic result has an unknown {key} {bad[0]!r}")
            return np.array([table[v] for v in vals], np.int8)

        return StoredOutcomes(verdict=codes("verdict", VERDICTS), kind=codes("kind", KINDS),
                              reason=codes("reason", REASONS), law=codes("law", LAWS),
                              modifier=codes("modifier", MODIFIERS), dimension=codes("dimension", DIMENSIONS),
                              run=np.asarray(cols["run_id"], dtype=object),
                              unit=np.asarray(cols["pair_id"], dtype=object) if "pair_id" in cols else None)

#: published misalignment rates (fractions). Overall per model; per law, modifier and axis the
#: paper reports one figure (over its runs).
PUBLISHED: dict[str, dict[str, float]] = {
    "model": {"Flux.dev": 0.71, "DALL-E 3": 0.59},
    "law": {"Distributive": 0.86, "Associative": 0.73, "DeMorgan": 0.59, "Commutative": 0.54,
            "Complement": 0.52},
    "modifier": {"AND": 0.458, "OR": 0.653},
    "dimension": {"x": 0.63, "y": 0.85},
}
PUBLISHED_SOURCE = ("MetaLogic (arXiv 2510.00796), 800 pairs, Florence-2 detection: METHODS.md §2; "
                    "AND / OR from the paper's section 4.2 as summarised in its seed")

#: table name -> the pair attributes it groups by (besides the run)
GROUPINGS: dict[str, tuple[str, ...]] = {
    "overall": (),
    "law": ("law",),
    "modifier": ("modifier",),
    "dimension": ("dimension",),
    "law_dimension": ("law", "dimension"),
    "law_modifier": ("law", "modifier"),
}
_NAMES = {"law": LAWS, "modifier": MODIFIERS, "dimension": DIMENSIONS}
NAN = float("nan")


def published_rate(grouping: str, key: str) -> float | None:
    """The published rate for a group (``grouping`` "law" / "modifier" / "dimension" / "model")."""
    return PUBLISHED.get(grouping, {}).get(key)


def _units(results: Outcomes) -> np.ndarray:
    """The suite pair of every image pair (the unit the intervals resample); without one
    (``unit`` None) every image pair is its own."""
    unit = getattr(results, "unit", None)
    return np.arange(len(results)).astype(object) if unit is None else np.asarray(unit, dtype=object)


def _paper(results: Outcomes) -> np.ndarray | None:
    pv = getattr(results, "paper_verdict", None)
    return None if pv is None else np.asarray(pv)


def _group_estimates(verdict: np.ndarray, paper: np.ndarray | None, units: np.ndarray, n_boot: int,
                     seed: int) -> tuple[Estimate, Estimate, Estimate]:
    """(paper's rate over all pairs, rate over decided pairs, coverage) of one group's pairs, on
    one set of resamples of its suite pairs."""
    mis = (verdict == MISALIGNED).astype(np.float64)
    dec = (verdict != UNDECIDABLE).astype(np.float64)
    ones = np.ones(len(verdict))
    pmis = (paper == MISALIGNED).astype(np.float64) if paper is not None else np.zeros(len(verdict))
    e_paper, e_dec, e_cov = ratio_estimates(np.stack([pmis, mis, dec], axis=1), np.stack([ones, dec, ones], axis=1),
                                            units, n_boot=n_boot, seed=seed)
    if paper is None:
        e_paper = Estimate(NAN, n=len(verdict), units=e_cov.units)
    return e_paper, e_dec, e_cov


def rate_rows(results: Outcomes, by: Sequence[str] = (), *, per_run: bool = True,
              mask: np.ndarray | None = None, n_boot: int = N_BOOT, seed: int = SEED) -> list[dict[str, Any]]:
    """One row per group: counts, the paper's misalignment rate (``paper_rate``, every pair
    decided, over all pairs) and the abstention-aware rate (``decided_rate``, over the decided
    pairs) each with its 95 % interval (cluster bootstrap over suite pairs), coverage with its
    interval, the misalignment types, and the published rate where the paper has one.

    ``by`` names pair attributes ("law", "modifier", "dimension"); ``per_run`` adds the run;
    ``mask`` restricts to some pairs. Groups are in code order (laws as in LAWS, ...). Without
    the paper's decisions (``results.paper_verdict`` None) the paper columns are NaN."""
    n = len(results)
    sel = np.ones(n, bool) if mask is None else np.asarray(mask, bool)
    idx = np.flatnonzero(sel)
    cols: list[np.ndarray] = []
    keys: list[str] = []
    if per_run:
        cols.append(np.asarray(results.run, dtype=object)[idx])
        keys.append("run")
    for b in by:
        if b not in _NAMES:
            raise ValueError(f"cannot group MetaLogic pairs by {b!r} (law, modifier or dimension)")
        cols.append(np.asarray(getattr(results, b), np.int64)[idx])
        keys.append(b)
    if len(idx) == 0:
        return []
    g = group_codes(*cols) if cols else np.zeros(len(idx), np.int64)
    k = int(g.max()) + 1
    v = results.verdict[idx].astype(np.int64)
    paper = _paper(results)
    pv = paper[idx].astype(np.int64) if paper is not None else None
    units = _units(results)[idx]
    count = lambda mask_: np.bincount(g[mask_], minlength=k)  # noqa: E731
    n_al, n_mis, n_und = count(v == ALIGNED), count(v == MISALIGNED), count(v == UNDECIDABLE)
    n_pmis = count(pv == MISALIGNED) if pv is not None else np.zeros(k, np.int64)
    kind = results.kind[idx]
    kinds = {name: count((v == MISALIGNED) & (kind == code)) for code, name in enumerate(KINDS) if name}
    decided = n_al + n_mis
    _, first = np.unique(g, return_index=True)  # a representative member of each group
    rows = []
    for c in range(k):
        members = np.flatnonzero(g == c)
        e_paper, e_dec, e_cov = _group_estimates(v[members], None if pv is None else pv[members], units[members],
                                                 n_boot, seed)
        row: dict[str, Any] = {}
        for name, col in zip(keys, cols):
            val = col[first[c]]
            row[name] = str(val) if name == "run" else _NAMES[name][int(val)]
        total = int(n_al[c] + n_mis[c] + n_und[c])
        row.update(pairs=total, suite_pairs=e_cov.units, paper_misaligned=int(n_pmis[c]) if pv is not None else None,
                   **e_paper.columns("paper_rate"),
                   aligned=int(n_al[c]), misaligned=int(n_mis[c]), undecidable=int(n_und[c]),
                   decided=int(decided[c]), **e_dec.columns("decided_rate"), **e_cov.columns("coverage"),
                   **{k_: int(a[c]) for k_, a in kinds.items()})
        row["note"] = e_paper.small_note("pairs", "suite pairs") or e_dec.small_note("decided pairs", "suite pairs")
        pub = None
        if len(by) == 1:
            pub = published_rate(by[0], row[by[0]])
        elif not by and per_run:
            pub = published_rate("model", row["run"])
        row["published"] = pub
        if "dimension" in row:
            row["dimension_title"] = DIMENSION_TITLES[row["dimension"]]
        rows.append(row)
    order_keys = [k_ for k_ in keys if k_ != "run"]
    rows.sort(key=lambda r: ((r["run"],) if per_run else ())
              + tuple(_NAMES[k_].index(r[k_]) for k_ in order_keys))
    return rows


def misalignment_tables(results: Outcomes, *, per_run: bool = True, n_boot: int = N_BOOT,
                        seed: int = SEED) -> dict[str, list[dict[str, Any]]]:
    """Every grouping of `GROUPINGS` as rows (`rate_rows`), plus ``published`` (the constant table)."""
    out = {name: rate_rows(results, by, per_run=per_run, n_boot=n_boot, seed=seed) for name, by in GROUPINGS.items()}
    out["published"] = [{"grouping": g, "group": k, "rate": v, "source": PUBLISHED_SOURCE}
                        for g, d in PUBLISHED.items() for k, v in d.items()]
    return out


def heatmap(results: Outcomes, *, run: str | None = None,
            dimensions: Sequence[str] | None = None, n_boot: int = N_BOOT, seed: int = SEED) -> dict[str, Any]:
    """Law × dimension misalignment rates as matrices (rows LAWS, columns ``dimensions``; by
    default the dimensions present): ``paper_rate`` / ``paper_lo`` / ``paper_hi`` (the paper's
    rule, over all pairs; NaN without its decisions) and ``decided_rate`` / ``decided_lo`` /
    ``decided_hi`` (over the decided pairs), float, NaN where there is nothing to count; ``pairs``
    / ``decided`` / ``misaligned`` / ``paper_misaligned`` / ``undecidable`` int. Intervals:
    cluster bootstrap over the suite pairs of each cell."""
    sel = np.ones(len(results), bool) if run is None else (np.asarray(results.run, dtype=object) == run)
    dims_present = sorted(set(np.asarray(results.dimension)[sel].tolist()))
    dims = list(dimensions) if dimensions is not None else [DIMENSIONS[d] for d in dims_present]
    dcode = {d: i for i, d in enumerate(dims)}
    shape = (len(LAWS), len(dims))
    law = np.asarray(results.law, np.int64)
    dim_map = np.full(len(DIMENSIONS), -1, np.int64)
    for name, j in dcode.items():
        dim_map[DIMENSIONS.index(name)] = j
    col = dim_map[np.asarray(results.dimension, np.int64)]
    keep = sel & (col >= 0)
    v = np.asarray(results.verdict)
    paper = _paper(results)
    units = _units(results)
    flat = np.full(len(v), -1, np.int64)
    flat[keep] = law[keep] * len(dims) + col[keep]
    out: dict[str, Any] = {"laws": list(LAWS), "dimensions": dims}
    for name in ("paper_rate", "paper_lo", "paper_hi", "decided_rate", "decided_lo", "decided_hi"):
        out[name] = np.full(shape, np.nan)
    counts = {name: np.zeros(shape, np.int64) for name in ("pairs", "decided", "misaligned", "paper_misaligned",
                                                            "undecidable")}
    for cell in np.unique(flat[keep]).tolist():
        members = np.flatnonzero(flat == cell)
        i, j = divmod(int(cell), len(dims))
        vm = v[members]
        e_paper, e_dec, _ = _group_estimates(vm, None if paper is None else paper[members], units[members],
                                             n_boot, seed)
        out["paper_rate"][i, j], out["paper_lo"][i, j], out["paper_hi"][i, j] = e_paper.value, e_paper.lo, e_paper.hi
        out["decided_rate"][i, j], out["decided_lo"][i, j], out["decided_hi"][i, j] = e_dec.value, e_dec.lo, e_dec.hi
        counts["pairs"][i, j] = len(members)
        counts["decided"][i, j] = int(np.count_nonzero(vm != UNDECIDABLE))
        counts["misaligned"][i, j] = int(np.count_nonzero(vm == MISALIGNED))
        counts["undecidable"][i, j] = int(np.count_nonzero(vm == UNDECIDABLE))
        if paper is not None:
            counts["paper_misaligned"][i, j] = int(np.count_nonzero(paper[members] == MISALIGNED))
    out.update(counts)
    return out


def reason_rows(results: Outcomes) -> list[dict[str, Any]]:
    """Per run: UNDECIDABLE pairs by reason (counts and fraction of the run's pairs)."""
    run = np.asarray(results.run, dtype=object).astype(str)
    rows = []
    for r in sorted(set(run.tolist())):
        sel = run == r
        n = int(sel.sum())
        und = sel & (np.asarray(results.verdict) == UNDECIDABLE)
        for code, name in enumerate(REASONS):
            if not name:
                continue
            k = int((und & (np.asarray(results.reason) == code)).sum())
            rows.append({"run": r, "reason": name, "count": k, "fraction": k / n})  # a run has pairs
    return rows


def agreement(computed: np.ndarray, human: np.ndarray, unit: np.ndarray | None = None, *,
              n_boot: int = N_BOOT, seed: int = SEED) -> dict[str, Any]:
    """The computed outcome against human judgements (codes; human -1 = unlabelled, left out):
    ``n``, ``agreement`` (fraction equal), Cohen's ``kappa`` (NaN when undefined), each with
    ``_lo`` / ``_hi`` bounds (the cluster bootstrap over ``unit``, the suite pair of each image
    pair; the pairs themselves without it), ``small`` (fewer than 10 judged pairs) and
    ``confusion[computed][human]`` (3 × 3 counts, VERDICTS order)."""
    from ...evaluation.intervals import kappa_estimate

    c = np.asarray(computed, np.int64)
    h = np.asarray(human, np.int64)
    if c.shape != h.shape:
        raise ValueError("computed and human outcomes differ in length")
    sel = h >= 0
    m = np.zeros((3, 3), np.int64)
    np.add.at(m, (c[sel], h[sel]), 1)
    n = int(sel.sum())
    u = None if unit is None else np.asarray(unit, dtype=object)[sel]
    same = (c[sel] == h[sel]).astype(np.float64)
    e_agree = ratio_estimates(same, np.ones(n), u, n_boot=n_boot, seed=seed)[0]
    e_kappa = kappa_estimate(c[sel], h[sel], u, categories=3, n_boot=n_boot, seed=seed)
    return {"n": n, **e_agree.columns("agreement"), **e_kappa.columns("kappa"), "small": e_agree.small,
            "confusion": m}


def human_rates(human: np.ndarray, disputed: np.ndarray | None = None, unit: np.ndarray | None = None, *,
                n_boot: int = N_BOOT, seed: int = SEED) -> dict[str, Any]:
    """The human pair outcomes of a label selection (codes; -1 none or disputed): ``judged`` (an
    outcome), ``aligned`` / ``misaligned`` / ``undecidable``, ``disputed`` (the annotators
    disagree under the selection's rule: counted in no rate), and the human misalignment rate
    ``misaligned_rate`` = MISALIGNED / (ALIGNED + MISALIGNED) with its 95 % interval (the cluster
    bootstrap over ``unit``, the suite pairs; Wilson-like over the pairs without it)."""
    h = np.asarray(human, np.int64)
    judged = h >= 0
    counts = np.bincount(h[judged], minlength=3)
    decided = judged & (h != UNDECIDABLE)
    u = None if unit is None else np.asarray(unit, dtype=object)[decided]
    e = ratio_estimates((h[decided] == MISALIGNED).astype(np.float64), np.ones(int(decided.sum())), u,
                        n_boot=n_boot, seed=seed)[0]
    return {"judged": int(judged.sum()), "aligned": int(counts[ALIGNED]), "misaligned": int(counts[MISALIGNED]),
            "undecidable": int(counts[UNDECIDABLE]),
            "disputed": 0 if disputed is None else int(np.asarray(disputed, bool).sum()),
            **e.columns("misaligned_rate"), "small": e.small}


# ---- the student variant's scores ----------------------------------------------------------------
def pair_scores(clip_a: Sequence[float] | np.ndarray, clip_b: Sequence[float] | np.ndarray,
                faith_a: Sequence[float] | np.ndarray | None = None,
                faith_b: Sequence[float] | np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Per-pair stability scores from per-image CLIPScore (0–100) and VQA faithfulness (0–1)."""
    ca, cb = np.asarray(clip_a, np.float64), np.asarray(clip_b, np.float64)
    if ca.shape != cb.shape:
        raise ValueError("clip_a and clip_b differ in length")
    clip_diff = np.abs(ca - cb) / 100.0
    out = {"clip_a": ca, "clip_b": cb, "clip_diff": clip_diff, "clip_stability": 1.0 - clip_diff}
    if faith_a is not None or faith_b is not None:
        if faith_a is None or faith_b is None:
            raise ValueError("give both faith_a and faith_b")
        fa, fb = np.asarray(faith_a, np.float64), np.asarray(faith_b, np.float64)
        if fa.shape != ca.shape or fb.shape != ca.shape:
            raise ValueError("faithfulness arrays differ in length from the CLIPScore arrays")
        fd = np.abs(fa - fb)
        out.update(faith_a=fa, faith_b=fb, faith_mean=(fa + fb) / 2.0, faith_diff=fd,
                   faith_stability=1.0 - fd)
    return out


def _names(values: Sequence[Any] | np.ndarray, table: Sequence[str]) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind in ("i", "u"):
        return np.asarray(table, dtype=object)[arr.astype(np.int64)]
    return arr.astype(object)


def score_tables(law: Sequence[Any] | np.ndarray, dimension: Sequence[Any] | np.ndarray,
                 scores: dict[str, np.ndarray], *, n_boot: int = 1000, seed: int = 0
                 ) -> dict[str, list[dict[str, Any]]]:
    """Means of each score per category (law × dimension), per law and per dimension.

    ``law`` / ``dimension``: names or codes per pair; ``scores``: `pair_scores` output (any
    per-pair arrays). Each row: the group, ``n`` and, per score, ``<score>`` (mean),
    ``<score>_lo`` / ``<score>_hi`` (bootstrap 95 % interval)."""
    laws = _names(law, LAWS)
    dims = _names(dimension, DIMENSIONS)
    names = [k for k in scores if k not in ("clip_a", "clip_b", "faith_a", "faith_b")]
    out: dict[str, list[dict[str, Any]]] = {}
    for table, keys in (("category", ("law", "dimension")), ("law", ("law",)), ("dimension", ("dimension",))):
        cols = {"law": laws, "dimension": dims}
        groups: dict[tuple[str, ...], list[int]] = {}
        for i, key in enumerate(zip(*(cols[k].tolist() for k in keys))):
            groups.setdefault(tuple(str(x) for x in key), []).append(i)
        rows = []
        for key, members in groups.items():
            row: dict[str, Any] = dict(zip(keys, key))
            row["n"] = len(members)
            for s in names:
                x = np.asarray(scores[s], np.float64)[members]
                x = x[np.isfinite(x)]
                row[s] = float(np.mean(x)) if len(x) else NAN
                row[s + "_lo"], row[s + "_hi"] = bootstrap_interval(x, n_boot=n_boot, seed=seed)
            rows.append(row)

        def order(r: dict[str, Any]) -> tuple[int, ...]:
            o = []
            if "law" in r:
                o.append(LAWS.index(r["law"]) if r["law"] in LAWS else len(LAWS))
            if "dimension" in r:
                d = r["dimension"]
                o.append(STUDENT_DIMENSIONS.index(d) if d in STUDENT_DIMENSIONS else
                         len(STUDENT_DIMENSIONS) + (DIMENSIONS.index(d) if d in DIMENSIONS else len(DIMENSIONS)))
            return tuple(o)

        rows.sort(key=order)
        out[table] = rows
    return out
