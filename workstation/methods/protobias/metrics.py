"""ProtoBias statistics: metric failure rates and margins, human ratings, agreement.

Rules (seed §3.1, §5; METHODS.md §3), and ours where the seed is silent:

* **Failure**: a metric M fails on a triplet when M(T, I_adv) ≥ M(T, I_corr) — ties fail. The
  comparison is made on the raw scores (a rescaling cannot create or break a tie).
* **Missing scores**: a triplet whose score for a metric is NaN or ±inf on either image is left
  out of that metric's statistics and counted in ``n_missing`` — neither a failure nor a success.
* **Rescaling to [0, 1]** (the seed reports SC, PA and margins "scaled to the [0, 1] range" without
  saying how): a metric with a known bounded range is mapped linearly from that range — VQA-style
  P(yes), ProtoScore and the demo's toy metric from [0, 1] (unchanged), 1-4 judges (LLM-as-judge,
  humans) by (s − 1) / 3; any other metric (CLIPScore, PickScore, a new one) min–max over every finite score of that
  metric in the data set given (both images, all domains together, so domains stay comparable).
  `DEFAULT_SCALES` holds the known ranges; a caller may pass others. A score outside its stated
  range is an error; a constant metric (max = min) maps to 0.5.
* **SC / PA**: mean rescaled score on I_corr / on I_adv; Δ = SC − PA (the mean paired difference).
* **Correct-ranking margin**: mean of M(corr) − M(adv) over the triplets where M ranks correctly;
  **incorrect-ranking margin**: mean of M(adv) − M(corr) over the failures (ties add 0), both on
  rescaled scores; NaN where there are none.
* **Intervals** (`workstation.evaluation.intervals.ratio_estimates`): every statistic is a ratio
  Σnum / Σden over the group's triplets (a failure rate is Σfail / Σvalid, a margin
  Σ(margin · correct) / Σcorrect). Rates of independent triplets (failure rates, agreement with
  humans) have the Wilson interval; means (SC, PA, Δ, margins) the seeded percentile bootstrap
  over the triplets, all statistics of all metrics of one group on the same resamples (so metrics
  stay paired, and a margin's interval also reflects how many triplets it is a mean of). The
  seed of each group's resamples is derived from the caller's seed, the table and the group.
  κ between annotators: the bootstrap over the triplets (the two images of a triplet together).
* **Empty groups** give a row with n = 0 and NaN statistics (a domain asked for in ``domains`` but
  absent, or a metric with no finite score).
* **Humans** rate each image 1-4; the latest rating of each annotator for an image counts (NaN =
  no rating). An image's human score is the mean over its annotators; a triplet enters the human
  statistics when both its images have one. Human SC / PA are rescaled by (r − 1) / 3 like a 1-4
  judge; humans "prefer" I_corr when its mean rating is higher, and tie when the means are equal.
* **Agreement with humans**: over triplets with a finite metric score on both images and a human
  score on both, human ties left out (and counted): the fraction where the metric's preference
  (I_corr when M(corr) > M(adv), else I_adv — ties as in the failure rule) equals the humans'.
* **Annotator agreement**: per pair of annotators over the images both rated, quadratic weighted
  Cohen's κ on the 1-4 scale (κ_w = 1 − Σ w·O / Σ w·E, w_ij = (i − j)² / 9) and the unweighted κ.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...evaluation.agreement import annotator_agreement, latest_labels
from ...evaluation.intervals import SMALL_N, ratio_estimates
from ...types import WorkstationError
from .build import ROLES, split_image_target_id
from .vocab import DOMAINS

RATING_MIN, RATING_MAX = 1, 4
N_RATING_CATEGORIES = RATING_MAX - RATING_MIN + 1
ALL = "all"


# ---- inputs -------------------------------------------------------------------------------------
def _obj(a: Any) -> np.ndarray:
    arr = np.asarray(a, dtype=object).reshape(-1)
    return np.array([str(v) for v in arr], dtype=object)


@dataclass(frozen=True)
class TripletScores:
    """Metric scores of triplets: one row per triplet, one column per metric.

    ``score_corr[i, j]`` is metric ``metrics[j]`` on (T_i, I_corr,i), ``score_adv`` on
    (T_i, I_adv,i); NaN = not scored. Build it with `TripletScores.from_mapping`.
    """

    triplet_id: np.ndarray  # object str, unique
    domain: np.ndarray  # object str
    knob: np.ndarray  # object str
    metrics: tuple[str, ...]
    score_corr: np.ndarray  # float64 (n, m)
    score_adv: np.ndarray  # float64 (n, m)

    def __post_init__(self) -> None:
        n, m = len(self.triplet_id), len(self.metrics)
        if len(self.domain) != n or len(self.knob) != n:
            raise WorkstationError("triplet scores: triplet_id, domain and knob differ in length")
        if self.score_corr.shape != (n, m) or self.score_adv.shape != (n, m):
            raise WorkstationError(f"triplet scores: score arrays must be {n}×{m}")
        if len(set(self.metrics)) != m:
            raise WorkstationError("triplet scores: a metric name repeats")
        if len(np.unique(self.triplet_id.astype(str))) != n:
            raise WorkstationError("triplet scores: a triplet id repeats")

    @classmethod
    def from_mapping(cls, triplet_id: Sequence[Any] | np.ndarray, domain: Sequence[Any] | np.ndarray,
                     knob: Sequence[Any] | np.ndarray,
                     scores: Mapping[str, tuple[Sequence[float] | np.ndarray, Sequence[float] | np.ndarray]],
                     ) -> TripletScores:
        """From aligned id / domain / knob columns and ``{metric: (score_corr, score_adv)}``."""
        ids = _obj(triplet_id)
        n = len(ids)
        names = tuple(scores)
        corr = np.full((n, len(names)), np.nan)
        adv = np.full((n, len(names)), np.nan)
        for j, name in enumerate(names):
            c, a = scores[name]
            c_arr = np.asarray(c, np.float64).reshape(-1)
            a_arr = np.asarray(a, np.float64).reshape(-1)
            if len(c_arr) != n or len(a_arr) != n:
                raise WorkstationError(f"metric {name!r}: expected {n} scores per image role, "
                                       f"got {len(c_arr)} and {len(a_arr)}")
            corr[:, j], adv[:, j] = c_arr, a_arr
        return cls(ids, _obj(domain), _obj(knob), names, corr, adv)

    def __len__(self) -> int:
        return len(self.triplet_id)

    def column(self, metric: str) -> tuple[np.ndarray, np.ndarray]:
        j = self.metrics.index(metric)
        return self.score_corr[:, j], self.score_adv[:, j]

    def subset(self, mask: np.ndarray) -> TripletScores:
        return TripletScores(self.triplet_id[mask], self.domain[mask], self.knob[mask], self.metrics,
                             self.score_corr[mask], self.score_adv[mask])


@dataclass(frozen=True)
class Ratings:
    """Human 1-4 semantic-fidelity ratings, one per (image, annotator) event.

    ``order`` (timestamps or sequence numbers) decides which event of an annotator for an image
    counts (the latest); without it the later position wins. NaN rating = no rating.
    """

    triplet_id: np.ndarray  # object str
    role: np.ndarray  # object str: "corr" | "adv"
    annotator: np.ndarray  # object str
    rating: np.ndarray  # float64, whole numbers 1..4 or NaN
    order: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.triplet_id)
        if not (len(self.role) == len(self.annotator) == len(self.rating) == n) or (
                self.order is not None and len(self.order) != n):
            raise WorkstationError("ratings: the columns differ in length")
        bad_role = sorted({str(r) for r in self.role} - set(ROLES))
        if bad_role:
            raise WorkstationError(f"ratings: role must be corr or adv, got {', '.join(bad_role)}")
        r = self.rating[np.isfinite(self.rating)]
        if len(r) and (r.min() < RATING_MIN or r.max() > RATING_MAX or np.any(r != np.round(r))):
            raise WorkstationError(f"ratings must be whole numbers {RATING_MIN}..{RATING_MAX}")
        if np.any(np.isinf(self.rating)):
            raise WorkstationError("ratings: infinite rating")

    @classmethod
    def from_columns(cls, triplet_id: Any, role: Any, annotator: Any, rating: Any,
                     order: Any = None) -> Ratings:
        return cls(_obj(triplet_id), _obj(role), _obj(annotator), np.asarray(rating, np.float64).reshape(-1),
                   None if order is None else np.asarray(order))

    @classmethod
    def from_label_events(cls, target_id: Any, annotator: Any, value: Any, order: Any = None) -> Ratings:
        """From "protobias.fidelity" label events: target ids ``<triplet_id>:<role>``, values
        "1".."4" (None / "" = no rating)."""
        tids, roles, ratings = [], [], []
        for t, v in zip(_obj(target_id), np.asarray(value, dtype=object).reshape(-1)):
            tid, role = split_image_target_id(t)
            tids.append(tid)
            roles.append(role)
            if v is None or str(v).strip() == "":
                ratings.append(np.nan)
                continue
            try:
                ratings.append(float(v))
            except ValueError:
                raise WorkstationError(f"rating of {t}: {v!r} is not a number 1..4") from None
        return cls.from_columns(tids, roles, annotator, ratings, order)

    def image_ids(self) -> np.ndarray:
        return np.array([f"{t}:{r}" for t, r in zip(self.triplet_id, self.role)], dtype=object)


# ---- rescaling ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scale:
    """How a metric's scores map to [0, 1]: ``kind`` "range" (linear from [lo, hi]) or "minmax"."""

    kind: str
    lo: float = 0.0
    hi: float = 1.0

    def describe(self) -> str:
        return "min-max over the data set" if self.kind == "minmax" else f"linear from [{self.lo:g}, {self.hi:g}]"


_UNIT = Scale("range", 0.0, 1.0)
_JUDGE = Scale("range", 1.0, 4.0)
MINMAX = Scale("minmax")
#: known ranges (lower-case metric names); every other metric is min–max rescaled
DEFAULT_SCALES: dict[str, Scale] = {
    "vqa_yes": _UNIT, "vqascore": _UNIT, "protoscore": _UNIT, "toy_proto": _UNIT,
    "gpt-4o": _JUDGE, "gpt-5": _JUDGE, "llm_judge": _JUDGE, "human": _JUDGE,
    "clipscore": MINMAX, "pickscore": MINMAX,
}


def scale_for(metric: str, scales: Mapping[str, Scale] | None = None) -> Scale:
    if scales is not None and metric in scales:
        return scales[metric]
    return DEFAULT_SCALES.get(metric.lower(), MINMAX)


def rescale(values_corr: np.ndarray, values_adv: np.ndarray, scale: Scale, metric: str = "metric"
            ) -> tuple[np.ndarray, np.ndarray]:
    """Both images' scores of one metric mapped to [0, 1] by ``scale`` (module doc)."""
    c = np.asarray(values_corr, np.float64)
    a = np.asarray(values_adv, np.float64)
    both = np.concatenate([c, a])
    fin = both[np.isfinite(both)]
    if scale.kind == "minmax":
        if len(fin) == 0:
            return c.copy(), a.copy()
        lo, hi = float(fin.min()), float(fin.max())
        if hi == lo:
            return np.where(np.isfinite(c), 0.5, c), np.where(np.isfinite(a), 0.5, a)
    elif scale.kind == "range":
        lo, hi = float(scale.lo), float(scale.hi)
        if not hi > lo:
            raise WorkstationError(f"{metric}: scale range [{lo}, {hi}] is empty")
        tol = 1e-9 * (hi - lo)
        if len(fin) and (fin.min() < lo - tol or fin.max() > hi + tol):
            raise WorkstationError(f"{metric}: scores from {fin.min():g} to {fin.max():g} lie outside "
                                   f"its stated range [{lo:g}, {hi:g}]")
    else:
        raise WorkstationError(f"{metric}: unknown scale kind {scale.kind!r}")
    d = hi - lo
    return np.clip((c - lo) / d, 0.0, 1.0), np.clip((a - lo) / d, 0.0, 1.0)


# ---- helpers ------------------------------------------------------------------------------------
def _seed(base: int, *keys: object) -> int:
    h = hashlib.sha256("|".join([str(int(base)), *map(str, keys)]).encode()).digest()
    return int.from_bytes(h[:4], "little")


class _Stats:
    """Named ratio statistics Σnum / Σden over the triplets of one group, with intervals from one
    shared set of bootstrap resamples of those triplets (`bootstrap_ratio_intervals`)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.num: list[np.ndarray] = []
        self.den: list[np.ndarray] = []
        self.proportion: list[bool] = []

    def add(self, name: str, num: np.ndarray, den: np.ndarray, proportion: bool = False) -> None:
        """A statistic Σnum / Σden; ``proportion`` for a rate of 0/1 outcomes (a failure rate),
        whose interval is Wilson's (the triplets are independent items)."""
        self.names.append(name)
        self.num.append(np.asarray(num, np.float64))
        self.den.append(np.asarray(den, np.float64))
        self.proportion.append(proportion)

    def compute(self, n_boot: int, level: float, seed: int) -> dict[str, float]:
        out: dict[str, float] = {}
        if not self.names:
            return out
        num, den = np.stack(self.num, axis=1), np.stack(self.den, axis=1)
        est = ratio_estimates(num, den, None, proportion=self.proportion, n_boot=n_boot, seed=seed, level=level)
        for name, e in zip(self.names, est):
            # an undefined estimate has no interval
            out[name], out[f"{name}_lo"], out[f"{name}_hi"] = e.value, e.lo, e.hi
        return out


def _domain_order(present: np.ndarray, domains: Sequence[str] | None) -> list[str]:
    if domains is not None:
        return list(domains)
    have = {str(d) for d in present}
    return [d for d in DOMAINS if d in have] + sorted(have - set(DOMAINS))


def _groups(dom: np.ndarray, knob: np.ndarray | None, domains: Sequence[str] | None
            ) -> list[tuple[str, str, np.ndarray]]:
    """(domain, knob, mask) per reported group: each domain (and its knobs when ``knob`` is
    given), then all domains together (and each knob over all domains)."""
    out: list[tuple[str, str, np.ndarray]] = []
    for d in _domain_order(dom, domains):
        dm = dom == d
        out.append((d, ALL, dm))
        if knob is not None:
            for k in sorted({str(x) for x in knob[dm]}):
                out.append((d, k, dm & (knob == k)))
    out.append((ALL, ALL, np.ones(len(dom), bool)))
    if knob is not None:
        for k in sorted({str(x) for x in knob}):
            out.append((ALL, k, knob == k))
    return out


# ---- metrics -------------------------------------------------------------------------------------
def failures(score_corr: np.ndarray, score_adv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(failed, valid): failed = M(adv) ≥ M(corr) where both scores are finite (ties fail)."""
    c = np.asarray(score_corr, np.float64)
    a = np.asarray(score_adv, np.float64)
    valid = np.isfinite(c) & np.isfinite(a)
    return valid & (a >= c), valid


@dataclass(frozen=True)
class _MetricColumns:
    """One metric's per-triplet columns: validity, failure, tie, rescaled scores (0 where invalid)."""

    name: str
    scale: Scale
    valid: np.ndarray
    fail: np.ndarray
    tie: np.ndarray
    sc: np.ndarray
    pa: np.ndarray

    @classmethod
    def of(cls, scores: TripletScores, j: int, scales: Mapping[str, Scale] | None) -> _MetricColumns:
        metric = scores.metrics[j]
        raw_c, raw_a = scores.score_corr[:, j], scores.score_adv[:, j]
        fail, valid = failures(raw_c, raw_a)
        rule = scale_for(metric, scales)
        sc, pa = rescale(raw_c, raw_a, rule, metric)
        return cls(metric, rule, valid, fail, valid & (raw_a == raw_c),
                   np.where(valid, sc, 0.0), np.where(valid, pa, 0.0))

    def add_stats(self, st: _Stats, m: np.ndarray, prefix: str = "") -> None:
        v = self.valid[m].astype(np.float64)
        f = self.fail[m].astype(np.float64)
        ok = v - f
        diff = self.sc[m] - self.pa[m]
        st.add(prefix + "failure_rate", f, v, proportion=True)
        st.add(prefix + "sc", self.sc[m], v)
        st.add(prefix + "pa", self.pa[m], v)
        st.add(prefix + "delta", diff, v)
        st.add(prefix + "correct_margin", diff * ok, ok)
        st.add(prefix + "incorrect_margin", -diff * f, f)

    def counts(self, m: np.ndarray) -> dict[str, int]:
        v, f = self.valid[m], self.fail[m]
        return {"n": int(v.sum()), "n_missing": int((~v).sum()), "n_fail": int(f.sum()),
                "n_tie": int(self.tie[m].sum()), "n_correct": int((v & ~f).sum())}


_STAT_NAMES = ("failure_rate", "sc", "pa", "delta", "correct_margin", "incorrect_margin")


def _stat_fields(values: dict[str, float], prefix: str = "") -> dict[str, float]:
    return {f"{s}{suf}": values[f"{prefix}{s}{suf}"] for s in _STAT_NAMES for suf in ("", "_lo", "_hi")}


def _metric_rows(cols: list[_MetricColumns], groups: list[tuple[str, str, np.ndarray]], n_boot: int,
                 level: float, seed: int, table: str) -> list[dict[str, Any]]:
    """Rows (metric-major) of every metric in every group; one bootstrap per group for all."""
    per_group: list[dict[str, float]] = []
    for d, k, m in groups:
        st = _Stats()
        for j, c in enumerate(cols):
            c.add_stats(st, m, prefix=f"{j}:")
        per_group.append(st.compute(n_boot, level, _seed(seed, table, d, k)))
    rows = []
    for j, c in enumerate(cols):
        for (d, k, m), values in zip(groups, per_group):
            rows.append({"metric": c.name, "domain": d, "knob": k, **c.counts(m),
                         **_stat_fields(values, f"{j}:"), "scale": c.scale.describe()})
    return rows


def metric_table(scores: TripletScores, *, by_knob: bool = False, domains: Sequence[str] | None = None,
                 scales: Mapping[str, Scale] | None = None, n_boot: int = 1000, level: float = 0.95,
                 seed: int = 0) -> list[dict[str, Any]]:
    """One row per metric × domain (then "all"), and × knob when ``by_knob``: n, n_missing,
    n_fail, n_tie, n_correct, failure_rate, sc, pa, delta, correct_margin, incorrect_margin,
    each statistic with ``_lo`` / ``_hi`` bootstrap bounds, and the rescaling used (module doc).
    ``domains`` fixes the domain rows (absent ones give empty rows); ``n_boot=0`` skips intervals.
    """
    cols = [_MetricColumns.of(scores, j, scales) for j in range(len(scores.metrics))]
    groups = _groups(scores.domain, scores.knob if by_knob else None, domains)
    return _metric_rows(cols, groups, n_boot, level, seed, "metric_table")


# ---- humans ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HumanScores:
    """Mean human rating per triplet image (NaN where nobody rated it) and how many rated it."""

    triplet_id: np.ndarray  # object str, unique, sorted
    mean_corr: np.ndarray
    mean_adv: np.ndarray
    n_corr: np.ndarray  # int64: annotators who rated I_corr
    n_adv: np.ndarray

    def lookup(self, triplet_id: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(mean_corr, mean_adv) aligned with ``triplet_id`` (NaN for triplets nobody rated)."""
        pos = {t: i for i, t in enumerate(self.triplet_id)}
        c = np.full(len(triplet_id), np.nan)
        a = np.full(len(triplet_id), np.nan)
        for k, t in enumerate(triplet_id):
            i = pos.get(str(t))
            if i is not None:
                c[k], a[k] = self.mean_corr[i], self.mean_adv[i]
        return c, a


def human_scores(ratings: Ratings) -> HumanScores:
    """Latest rating per (image, annotator), averaged over annotators per image (module doc)."""
    idx = latest_labels(ratings.image_ids(), ratings.annotator, ratings.order)
    r = ratings.rating[idx]
    keep = np.isfinite(r)
    tid, role, r = ratings.triplet_id[idx][keep], ratings.role[idx][keep], r[keep]
    names = np.unique(np.asarray(ratings.triplet_id, dtype=str))
    pos = {t: i for i, t in enumerate(names)}
    code = np.array([pos[str(t)] for t in tid], np.int64)
    out = {}
    for rl in ROLES:
        m = role == rl
        s = np.bincount(code[m], weights=r[m], minlength=len(names))
        c = np.bincount(code[m], minlength=len(names))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[rl] = (np.where(c > 0, s / np.maximum(c, 1), np.nan), c.astype(np.int64))
    return HumanScores(names.astype(object), out["corr"][0], out["adv"][0], out["corr"][1], out["adv"][1])


def _rating01(r: np.ndarray) -> np.ndarray:
    return (r - RATING_MIN) / (RATING_MAX - RATING_MIN)


def human_table(ratings: Ratings, triplet_id: Sequence[Any] | np.ndarray, domain: Sequence[Any] | np.ndarray,
                *, domains: Sequence[str] | None = None, n_boot: int = 1000, level: float = 0.95,
                seed: int = 0) -> list[dict[str, Any]]:
    """Human SC / PA / Δ per domain and overall (rescaled (r − 1) / 3) over the triplets with both
    images rated, with bootstrap bounds; n_prefer_corr, n_tie, n_prefer_adv, failure_rate (ties
    fail, as for metrics). ``triplet_id`` / ``domain`` give each triplet's domain."""
    ids, dom = _obj(triplet_id), _obj(domain)
    hc, ha = human_scores(ratings).lookup(ids)
    rated = np.isfinite(hc) & np.isfinite(ha)
    sc = np.where(rated, _rating01(hc), 0.0)
    pa = np.where(rated, _rating01(ha), 0.0)
    rows = []
    for d, _k, mask in _groups(dom, None, domains):
        r = rated[mask].astype(np.float64)
        s, p = sc[mask], pa[mask]
        st = _Stats()
        st.add("sc", s, r)
        st.add("pa", p, r)
        st.add("delta", s - p, r)
        st.add("failure_rate", (p >= s) * r, r, proportion=True)
        vals = st.compute(n_boot, level, _seed(seed, "human", d))
        rb = r > 0
        rows.append({
            "metric": "human", "domain": d, "n": int(rb.sum()), "n_unrated": int((~rb).sum()),
            **{k: vals[k] for k in ("sc", "sc_lo", "sc_hi", "pa", "pa_lo", "pa_hi", "delta", "delta_lo",
                                    "delta_hi")},
            "n_prefer_corr": int((s > p)[rb].sum()), "n_tie": int((s == p)[rb].sum()),
            "n_prefer_adv": int((s < p)[rb].sum()),
            **{k: vals[k] for k in ("failure_rate", "failure_rate_lo", "failure_rate_hi")},
        })
    return rows


def sc_pa_table(scores: TripletScores, ratings: Ratings, *, domains: Sequence[str] | None = None,
                scales: Mapping[str, Scale] | None = None, n_boot: int = 1000, level: float = 0.95,
                seed: int = 0) -> list[dict[str, Any]]:
    """The seed's Table 2: SC, PA and Δ per domain for every metric and for the humans, all on the
    triplets whose two images were rated. Metrics are rescaled over the whole of ``scores`` first
    (so the scale does not depend on which triplets were rated), then restricted."""
    hc, ha = human_scores(ratings).lookup(scores.triplet_id)
    rated = np.isfinite(hc) & np.isfinite(ha)
    cols = [_MetricColumns.of(scores, j, scales) for j in range(len(scores.metrics))]
    groups = [(d, k, m & rated) for d, k, m in _groups(scores.domain, None, domains)]
    keep = ("metric", "domain", "n", "n_missing", "sc", "sc_lo", "sc_hi", "pa", "pa_lo", "pa_hi", "delta",
            "delta_lo", "delta_hi", "failure_rate")
    rows = [{k: r[k] for k in keep} for r in _metric_rows(cols, groups, n_boot, level, seed, "sc_pa_table")]
    for r in human_table(ratings, scores.triplet_id[rated], scores.domain[rated], domains=domains,
                         n_boot=n_boot, level=level, seed=seed):
        rows.append({"metric": "human", "domain": r["domain"], "n": r["n"], "n_missing": 0,
                     **{k: r[k] for k in keep[4:]}})
    return rows


def human_agreement_table(scores: TripletScores, ratings: Ratings, *, domains: Sequence[str] | None = None,
                          n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> list[dict[str, Any]]:
    """Per metric × domain (then "all"): how often the metric's preference equals the humans'
    (module doc). Columns: n, n_agree, agreement (+ bounds), n_human_tie (left out), n_missing
    (human-rated, not human-tied, but a score missing), n_unrated (no human score on both)."""
    hc, ha = human_scores(ratings).lookup(scores.triplet_id)
    rated = np.isfinite(hc) & np.isfinite(ha)
    human_tie = rated & (hc == ha)
    human_corr = hc > ha
    groups = _groups(scores.domain, None, domains)
    per_metric = []
    for j in range(len(scores.metrics)):
        fail, valid = failures(scores.score_corr[:, j], scores.score_adv[:, j])
        use = rated & ~human_tie & valid
        per_metric.append((use, ((~fail) == human_corr) & use))
    per_group = []
    for d, _k, m in groups:
        st = _Stats()
        for j, (use, agree) in enumerate(per_metric):
            st.add(f"{j}", agree[m].astype(np.float64), use[m].astype(np.float64), proportion=True)
        per_group.append(st.compute(n_boot, level, _seed(seed, "agreement", d)))
    rows = []
    for j, metric in enumerate(scores.metrics):
        use, agree = per_metric[j]
        for (d, _k, m), vals in zip(groups, per_group):
            rows.append({
                "metric": metric, "domain": d, "n": int(use[m].sum()), "n_agree": int(agree[m].sum()),
                "agreement": vals[f"{j}"], "agreement_lo": vals[f"{j}_lo"], "agreement_hi": vals[f"{j}_hi"],
                "n_human_tie": int((m & human_tie).sum()),
                "n_missing": int((m & rated & ~human_tie & ~use).sum()),
                "n_unrated": int((m & ~rated).sum()),
            })
    return rows


def annotator_kappa_table(ratings: Ratings, n_boot: int | None = None) -> list[dict[str, Any]]:
    """Per pair of annotators (over images both rated; latest rating counts): n, percent
    agreement, quadratic weighted κ (``kappa_w``) and unweighted Cohen's κ (``kappa``), each with
    95 % bounds from the bootstrap over the triplets (an image's two sides share a prompt), and
    ``note`` "fewer than 10 images" (or triplets) when the pair rated so few in common."""
    ids = ratings.image_ids()
    # the latest event of an annotator for an image counts, even when it cleared the rating (NaN)
    idx = latest_labels(ids, ratings.annotator, ratings.order)
    idx = idx[np.isfinite(ratings.rating[idx])]
    ids, ann, r = ids[idx], ratings.annotator[idx], ratings.rating[idx]

    def triplet(image_id: Any) -> str:
        return split_image_target_id(str(image_id))[0]

    weighted = annotator_agreement(ids, ann, r, weighted_categories=N_RATING_CATEGORIES, unit_of=triplet,
                                   n_boot=n_boot)
    plain = annotator_agreement(ids, ann, r, unit_of=triplet, n_boot=n_boot)
    rows = []
    for w, p in zip(weighted, plain):
        note = (f"fewer than {SMALL_N} images" if w["n"] < SMALL_N else
                f"fewer than {SMALL_N} triplets" if w["units"] < SMALL_N else "")
        rows.append({"annotator_a": w["annotator_a"], "annotator_b": w["annotator_b"], "n": w["n"],
                     "triplets": w["units"], "percent_agreement": w["percent_agreement"],
                     "percent_agreement_lo": w["percent_lo"], "percent_agreement_hi": w["percent_hi"],
                     "kappa_w": w["kappa"], "kappa_w_lo": w["kappa_lo"], "kappa_w_hi": w["kappa_hi"],
                     "kappa": p["kappa"], "kappa_lo": p["kappa_lo"], "kappa_hi": p["kappa_hi"], "note": note})
    return rows
