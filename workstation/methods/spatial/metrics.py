"""Evaluation metrics over checker verdicts (METHODS.md §1), grouped by run.

Every function takes the dataset and the checker's ``VerdictArrays`` (aligned with
``ds.samples``; any object with ``verdict``, ``reason`` and ``conf`` arrays will do, e.g. a
verdict set loaded from the store) and returns plain rows (``list[dict]``) whose keys follow SpatialBench-UC's report
tables; the ``*_COLUMNS`` tuples give each table's published column order (extra keys follow
them in the rows). ``summarize`` returns all tables at once.

Definitions
-----------
* Per image, over N samples with counts P, F, U: pass_rate = P/N, coverage = (P+F)/N,
  pass_rate_cond = P/(P+F), undecidable_rate = U/N, mean_conf = mean of conf over all N.
* Prompt level, per run: the run's prompts are those with at least one sample in the run.
  K is ``k`` when given, else the run's seeds per prompt (the largest number of samples any
  prompt has in that run). best-of-K = PASS if any sample PASS, FAIL if all FAIL, else
  UNDECIDABLE. all-of-K = UNDECIDABLE when the prompt has fewer than K samples; otherwise PASS
  if all its samples PASS, FAIL if any FAILs, else UNDECIDABLE. Rates are over all the run's
  prompts (prompt_pass_rate in main_results = best-of-K pass rate).
* Counterfactual pairs: a prompt and its ``counterfactual_id`` twin, both with samples in the run,
  counted once per run, from the best-of-K prompt verdicts: undecidable if either is
  UNDECIDABLE, else both_pass, both_fail or one_sided. Rates are over the pairs.
* Abstention: UNDECIDABLE samples by reason, as counts and as a fraction / percent of all samples.

A rate whose denominator is 0 is NaN (for example pass_rate_cond with no decided sample).

Intervals (`workstation.evaluation.intervals`, docs/statistics.md): every per-image rate carries
``<rate>_lo`` / ``<rate>_hi``, the 95 % cluster bootstrap over the prompts (the K seeds of a prompt
are resampled together); prompt-level rates and counterfactual pair rates the Wilson interval
over the prompts / pairs (independent items). ``n_boot=0`` leaves the bounds NaN. `headline`
gives the numbers over all runs together, without τ and at τ, as `Estimate`s: the calibration
panel's Live-verdicts table and the report's headline table both show it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .checker import VerdictColumns
from ...dataset import Dataset
from ...evaluation.intervals import N_BOOT, SEED, Estimate, ratio_estimates, wilson_estimate
from ...util.grouping import factorize
from .data import spatial_columns
from .types import FAIL, PASS, REASONS, RELATIONS, UNDECIDABLE, VERDICTS

__all__ = [
    "MAIN_RESULTS_COLUMNS", "BY_RELATION_RATE_SUFFIX", "COUNTERFACTUAL_COLUMNS",
    "PROMPT_METRICS_COLUMNS", "ABSTENTION_COLUMNS", "RELATION_DETAIL_COLUMNS",
    "PromptVerdicts", "Summary", "image_metrics", "main_results", "relation_detail", "by_relation",
    "prompt_verdicts", "prompt_metrics", "counterfactual", "abstention", "summarize", "Headline", "headline",
    "HEADLINE_ROWS", "INTERVAL_UNIT",
]

#: what the cluster bootstrap of the per-image rates resamples
INTERVAL_UNIT = "prompt (all its samples, every run)"

MAIN_RESULTS_COLUMNS = ("run", "samples", "pass_rate", "coverage", "pass_rate_cond",
                        "prompt_pass_rate", "mean_conf")
BY_RELATION_RATE_SUFFIX = "_pass_rate"  # by_relation: run, then <relation>_pass_rate, relations sorted
RELATION_DETAIL_COLUMNS = ("run", "relation", "samples", "pass_count", "fail_count",
                           "undecidable_count", "pass_rate", "coverage", "pass_rate_cond", "mean_conf")
COUNTERFACTUAL_COLUMNS = ("run", "pairs", "both_pass_rate", "one_sided_rate", "both_fail_rate",
                          "undecidable_rate", "undecidable_count")
PROMPT_METRICS_COLUMNS = ("run", "total_prompts", "best_of_k_pass_rate", "all_of_k_pass_rate")
ABSTENTION_COLUMNS = ("run", "reason", "count", "rate", "percent", "share_of_undecidable")

_NAN = float("nan")


def _rate(num: float | np.number[Any], den: float | np.number[Any]) -> float:
    return float(num) / float(den) if den else _NAN


def _factorize(values: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Integer codes (order of first appearance) and the distinct values of a string column."""
    return factorize(values, sort=False)


# =============================================================================================
# Per image
# =============================================================================================
def image_metrics(verdict: np.ndarray, conf: np.ndarray) -> dict[str, Any]:
    """Counts and rates over the given samples (METHODS.md §1, per-image metrics)."""
    verdict = np.asarray(verdict)
    n = len(verdict)
    p = int(np.count_nonzero(verdict == PASS))
    f = int(np.count_nonzero(verdict == FAIL))
    u = n - p - f
    return {
        "samples": n, "pass_count": p, "fail_count": f, "undecidable_count": u,
        "pass_rate": _rate(p, n), "coverage": _rate(p + f, n), "pass_rate_cond": _rate(p, p + f),
        "undecidable_rate": _rate(u, n), "mean_conf": float(np.mean(conf)) if n else _NAN,
    }


def _codes(ds: Dataset, column: str) -> tuple[np.ndarray, list[str]]:
    """`_factorize` of a sample column, cached in ds.cache (metrics are recomputed on every
    slider move; the columns never change under them)."""
    values = getattr(ds.samples, column)
    key = f"metrics.codes.{column}"
    hit = ds.cache.get(key)
    if hit is not None and hit[0] is values:
        return hit[1], hit[2]
    codes, names = _factorize(values)
    ds.cache[key] = (values, codes, names)
    return codes, names


def _runs(ds: Dataset) -> tuple[np.ndarray, list[str]]:
    return _codes(ds, "run_id")


def _image_intervals(ds: Dataset, verdict: np.ndarray, conf: np.ndarray, sel: np.ndarray | None,
                     n_boot: int, seed: int) -> dict[str, Estimate]:
    """pass_rate, coverage, pass_rate_cond and mean_conf over the samples ``sel`` (all when None)
    with cluster-bootstrap intervals over their prompts (one set of resamples for all four)."""
    prompt_code = _codes(ds, "prompt_id")[0]
    v = np.asarray(verdict)
    c = np.asarray(conf, np.float64)
    if sel is not None:
        v, c, prompt_code = v[sel], c[sel], prompt_code[sel]
    is_pass = (v == PASS).astype(np.float64)
    decided = is_pass + (v == FAIL)
    ones = np.ones(len(v))
    est = ratio_estimates(np.stack([is_pass, decided, is_pass, c], axis=1),
                          np.stack([ones, ones, decided, ones], axis=1), prompt_code,
                          proportion=[True, True, True, False], n_boot=n_boot, seed=seed)
    return dict(zip(("pass_rate", "coverage", "pass_rate_cond", "mean_conf"), est))


def _bounds(row: dict[str, Any], estimates: dict[str, Estimate]) -> None:
    for name, e in estimates.items():
        row[f"{name}_lo"], row[f"{name}_hi"] = e.lo, e.hi


def _check(ds: Dataset, v: VerdictColumns) -> None:
    if len(v.verdict) != ds.n:
        raise ValueError(f"verdicts are for {len(v.verdict)} samples but the dataset has {ds.n}")


# =============================================================================================
# Prompt level
# =============================================================================================
@dataclass
class PromptVerdicts:
    """Per (run, prompt) verdicts: one entry per prompt with samples in the run."""

    run: np.ndarray  # object (str)
    prompt_id: np.ndarray  # object (str)
    n_samples: np.ndarray  # int64
    pass_count: np.ndarray  # int64
    fail_count: np.ndarray  # int64
    best_of_k: np.ndarray  # int8 verdict code
    all_of_k: np.ndarray  # int8 verdict code
    k: dict[str, int] = field(default_factory=dict)  # K used per run

    def rows(self) -> list[dict[str, Any]]:
        names = np.array(VERDICTS, dtype=object)
        return [
            {"run": r, "prompt_id": p, "samples": int(n), "pass_count": int(pc), "fail_count": int(fc),
             "undecidable_count": int(n - pc - fc), "best_of_k": str(b), "all_of_k": str(a)}
            for r, p, n, pc, fc, b, a in zip(
                self.run.tolist(), self.prompt_id.tolist(), self.n_samples.tolist(),
                self.pass_count.tolist(), self.fail_count.tolist(),
                names[self.best_of_k.astype(np.int64)].tolist(), names[self.all_of_k.astype(np.int64)].tolist())
        ]


def _prompt_groups(ds: Dataset, run_code: np.ndarray, prompt_code: np.ndarray,
                   n_prompts: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(group of every sample, first sample of every group, samples per group) of the
    (run, prompt) groups in order of first appearance; cached in ds.cache with the code arrays
    it was computed from (the grouping does not depend on the verdicts)."""
    hit = ds.cache.get("metrics.prompt_groups")
    if hit is not None and hit[0] is run_code and hit[1] is prompt_code:
        return hit[2]
    key = run_code * max(n_prompts, 1) + prompt_code
    uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # groups in order of first appearance
    rank = np.empty(len(uniq), np.int64)
    rank[order] = np.arange(len(uniq))
    g = rank[inv.ravel()]
    n = np.bincount(g, minlength=len(uniq)).astype(np.int64)
    out = (g, first[order], n)
    for a in out:
        a.setflags(write=False)
    ds.cache["metrics.prompt_groups"] = (run_code, prompt_code, out)
    return out


def _prompt_k(ds: Dataset, k: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """(group of every sample, first sample of every (run, prompt) group, samples per group,
    K of every group, K per run)."""
    if k is not None and k < 1:
        raise ValueError(f"K (seeds per prompt) must be at least 1, got {k}")
    run_code, run_names = _runs(ds)
    prompt_code, prompt_names = _codes(ds, "prompt_id")
    g, g_first, n = _prompt_groups(ds, run_code, prompt_code, len(prompt_names))
    hit = ds.cache.get("metrics.prompt_k")
    if hit is not None and hit[0] is g and hit[1] == k:  # the grouping and K do not change on a move
        return g, g_first, n, hit[2], dict(hit[3])
    g_run = run_code[g_first]
    if k is not None:
        k_run = np.full(len(run_names), int(k), np.int64)
    else:  # each run's largest group (0 for a run without any)
        k_run = np.zeros(len(run_names), np.int64)
        np.maximum.at(k_run, g_run, n)
    k_of_group = k_run[g_run]
    ks = {name: int(k_run[rc]) for rc, name in enumerate(run_names)}
    k_of_group.setflags(write=False)
    ds.cache["metrics.prompt_k"] = (g, k, k_of_group, ks)
    return g, g_first, n, k_of_group, dict(ks)


def _check_codes(verdict: np.ndarray) -> None:
    if len(verdict) and (int(verdict.min()) < 0 or int(verdict.max()) > 2):
        raise ValueError("verdict codes must be PASS, FAIL or UNDECIDABLE")


def _prompt_outcomes(ds: Dataset, v: VerdictColumns, k: int | None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                dict[str, int]]:
    """(first sample of each (run, prompt) group, samples, PASS and FAIL counts, best-of-K and
    all-of-K codes per group, K per run): `prompt_verdicts` without its text columns."""
    _check(ds, v)
    g, g_first, n, k_of_group, ks = _prompt_k(ds, k)
    n_groups = len(g_first)
    verdict = np.asarray(v.verdict)
    _check_codes(verdict)
    # one pass: counts of every (group, verdict code) pair
    per = np.bincount(g * 3 + verdict, minlength=3 * n_groups).reshape(n_groups, 3)
    npass = per[:, PASS].astype(np.int64)
    nfail = per[:, FAIL].astype(np.int64)
    best = np.full(n_groups, UNDECIDABLE, np.int8)
    best[nfail == n] = FAIL
    best[npass > 0] = PASS
    allk = np.full(n_groups, UNDECIDABLE, np.int8)
    full = n >= k_of_group
    allk[full & (nfail > 0)] = FAIL
    allk[full & (npass == n)] = PASS
    return g_first, n, npass, nfail, best, allk, ks


def prompt_verdicts(ds: Dataset, v: VerdictColumns, k: int | None = None) -> PromptVerdicts:
    """best-of-K and all-of-K verdict of every prompt of every run (see module docstring)."""
    g_first, n, npass, nfail, best, allk, ks = _prompt_outcomes(ds, v, k)
    run_code, run_names = _runs(ds)
    prompt_code, prompt_names = _codes(ds, "prompt_id")
    n_groups = len(g_first)
    runs = np.array(run_names, dtype=object)
    prompts = np.array(prompt_names, dtype=object)
    return PromptVerdicts(
        run=runs[run_code[g_first]] if n_groups else np.array([], dtype=object),
        prompt_id=prompts[prompt_code[g_first]] if n_groups else np.array([], dtype=object),
        n_samples=n, pass_count=npass, fail_count=nfail, best_of_k=best, all_of_k=allk, k=ks)


def prompt_pass_totals(ds: Dataset, v: VerdictColumns, k: int | None = None) -> tuple[int, int, int]:
    """(prompts, best-of-K PASS, all-of-K PASS) over every run: the sums of `prompt_metrics`'
    total_prompts, best_of_k_pass and all_of_k_pass, without building its tables."""
    g_first, _n, _p, _f, best, allk, _k = _prompt_outcomes(ds, v, k)
    return len(g_first), int(np.count_nonzero(best == PASS)), int(np.count_nonzero(allk == PASS))


@dataclass
class _Tally:
    """What `verdict_totals` keeps between calls on one dataset."""

    key: tuple[Any, ...]  # (K, the group array it counted by)
    verdict: np.ndarray  # int8 copies of the verdicts and reasons last counted
    reason: np.ndarray
    npass: np.ndarray  # int64 PASS samples per (run, prompt) group
    n: np.ndarray  # samples per group
    full: np.ndarray  # bool: the group has at least K samples
    best_pass: int
    allk_pass: int
    pairs: np.ndarray  # int64 (3 * len(REASONS),): samples per (verdict, reason)


_TALLY_LOCK = threading.Lock()


def verdict_totals(ds: Dataset, v: VerdictColumns, k: int | None = None) -> tuple[int, int, int, np.ndarray]:
    """(prompts, best-of-K PASS, all-of-K PASS, samples per (verdict, reason) pair as a (3, R)
    array) over every run: `prompt_pass_totals` and the abstention counts together, for a view
    that recounts them on every slider move. The counts of the previous call on ``ds`` are kept
    (2 bytes a sample and 8 a prompt) and updated from the samples whose verdict or reason
    changed since; past a quarter of the samples, or under another K, everything is recounted."""
    _check(ds, v)
    verdict = np.asarray(v.verdict, np.int8)
    reason = np.asarray(v.reason, np.int8)
    n_pairs = 3 * len(REASONS)
    g, g_first, n, k_of_group, _ks = _prompt_k(ds, k)
    key = (k, g)
    with _TALLY_LOCK:
        t: _Tally | None = ds.cache.get("metrics.tally")
        changed = None
        if t is not None and t.key[0] == key[0] and t.key[1] is g and len(t.verdict) == len(verdict):
            changed = np.flatnonzero((verdict != t.verdict) | (reason != t.reason))
            if len(changed) > len(verdict) // 4:
                changed = None
        if changed is None or t is None:
            t = _full_tally(key, verdict, reason, g, n, n >= k_of_group, n_pairs)
            ds.cache["metrics.tally"] = t
        elif len(changed):
            _update_tally(t, g, changed, verdict[changed], reason[changed], n_pairs)
        pairs = t.pairs.reshape(3, len(REASONS)).copy()
        return len(g_first), t.best_pass, t.allk_pass, pairs


def _pair_counts(verdict: np.ndarray, reason: np.ndarray, n_pairs: int) -> np.ndarray:
    if len(reason) and (int(reason.min()) < 0 or int(reason.max()) >= len(REASONS)):
        raise ValueError("reason codes must be one of the checker's reasons")
    return np.bincount(verdict.astype(np.intp) * len(REASONS) + reason, minlength=n_pairs)


def _full_tally(key: tuple[Any, ...], verdict: np.ndarray, reason: np.ndarray, g: np.ndarray,
                n: np.ndarray, full: np.ndarray, n_pairs: int) -> _Tally:
    _check_codes(verdict)
    pairs = _pair_counts(verdict, reason, n_pairs)
    npass = np.bincount(g[verdict == PASS], minlength=len(n)).astype(np.int64)
    return _Tally(key=key, verdict=verdict.copy(), reason=reason.copy(), npass=npass, n=n, full=full,
                  best_pass=int(np.count_nonzero(npass > 0)),
                  allk_pass=int(np.count_nonzero(full & (npass == n))), pairs=pairs.astype(np.int64))


def _update_tally(t: _Tally, g: np.ndarray, changed: np.ndarray, nv: np.ndarray, nr: np.ndarray,
                  n_pairs: int) -> None:
    """``t`` counted again after the samples ``changed`` took verdicts ``nv`` and reasons ``nr``."""
    _check_codes(nv)
    ov, orr = t.verdict[changed], t.reason[changed]
    t.pairs += _pair_counts(nv, nr, n_pairs) - _pair_counts(ov, orr, n_pairs)
    flip = (nv == PASS) != (ov == PASS)  # the PASS count of its group moves
    if flip.any():
        gs = g[changed[flip]]
        step = np.where(nv[flip] == PASS, 1, -1).astype(np.int64)
        touched = np.unique(gs)
        before = t.npass[touched]
        np.add.at(t.npass, gs, step)
        after = t.npass[touched]
        full, size = t.full[touched], t.n[touched]
        t.best_pass += int(np.count_nonzero(after > 0)) - int(np.count_nonzero(before > 0))
        t.allk_pass += int(np.count_nonzero(full & (after == size))) - int(np.count_nonzero(full & (before == size)))
    t.verdict[changed] = nv
    t.reason[changed] = nr


def prompt_metrics(ds: Dataset, v: VerdictColumns, k: int | None = None,
                   pv: PromptVerdicts | None = None, n_boot: int = N_BOOT) -> list[dict[str, Any]]:
    """Per run: total_prompts, best_of_k_pass_rate, all_of_k_pass_rate (with Wilson bounds over
    the prompts), K and the counts."""
    pv = pv if pv is not None else prompt_verdicts(ds, v, k)
    rows = []
    for run in _run_names(ds):
        sel = pv.run == run
        total = int(np.count_nonzero(sel))
        b, a = pv.best_of_k[sel], pv.all_of_k[sel]
        row: dict[str, Any] = {
            "run": run, "total_prompts": total,
            "best_of_k_pass_rate": _rate(np.count_nonzero(b == PASS), total),
            "all_of_k_pass_rate": _rate(np.count_nonzero(a == PASS), total),
            "k": pv.k.get(run, 0),
        }
        for nm, arr in (("best_of_k", b), ("all_of_k", a)):
            row[f"{nm}_pass"] = int(np.count_nonzero(arr == PASS))
            row[f"{nm}_fail"] = int(np.count_nonzero(arr == FAIL))
            row[f"{nm}_undecidable"] = int(np.count_nonzero(arr == UNDECIDABLE))
            row[f"{nm}_coverage"] = _rate(row[f"{nm}_pass"] + row[f"{nm}_fail"], total)
        _bounds(row, {f"{nm}_pass_rate": _wilson(row[f"{nm}_pass"], total, n_boot)
                      for nm in ("best_of_k", "all_of_k")})
        rows.append(row)
    return rows


def _run_names(ds: Dataset) -> list[str]:
    return _runs(ds)[1]


def _wilson(successes: int, n: int, n_boot: int) -> Estimate:
    """Wilson over independent items; no bounds when intervals are switched off (``n_boot`` 0)."""
    e = wilson_estimate(successes, n)
    return e if n_boot > 0 else Estimate(e.value, n=e.n, units=e.units)


# =============================================================================================
# Tables
# =============================================================================================
def main_results(ds: Dataset, v: VerdictColumns, k: int | None = None,
                 pv: PromptVerdicts | None = None, n_boot: int = N_BOOT, seed: int = SEED) -> list[dict[str, Any]]:
    """Per run: samples, pass_rate, coverage, pass_rate_cond, prompt_pass_rate (best-of-K),
    mean_conf, then pass/fail/undecidable counts, undecidable_rate, prompts and K, and the
    ``_lo`` / ``_hi`` bounds of the rates (module doc)."""
    _check(ds, v)
    pv = pv if pv is not None else prompt_verdicts(ds, v, k)
    run_code, run_names = _runs(ds)
    rows = []
    for rc, run in enumerate(run_names):
        sel = run_code == rc
        im = image_metrics(v.verdict[sel], v.conf[sel])
        psel = pv.run == run
        n_prompts = int(np.count_nonzero(psel))
        rows.append({
            "run": run, "samples": im["samples"], "pass_rate": im["pass_rate"],
            "coverage": im["coverage"], "pass_rate_cond": im["pass_rate_cond"],
            "prompt_pass_rate": _rate(np.count_nonzero(pv.best_of_k[psel] == PASS), n_prompts),
            "mean_conf": im["mean_conf"], "pass_count": im["pass_count"], "fail_count": im["fail_count"],
            "undecidable_count": im["undecidable_count"], "undecidable_rate": im["undecidable_rate"],
            "prompts": n_prompts, "k": pv.k.get(run, 0),
        })
        _bounds(rows[-1], _image_intervals(ds, v.verdict, v.conf, sel, n_boot, seed))
        _bounds(rows[-1], {"prompt_pass_rate": _wilson(int(np.count_nonzero(pv.best_of_k[psel] == PASS)),
                                                       n_prompts, n_boot)})
    return rows


def relation_detail(ds: Dataset, v: VerdictColumns, n_boot: int = N_BOOT,
                    seed: int = SEED) -> list[dict[str, Any]]:
    """Per run and relation (long form): counts and per-image rates with their bounds."""
    _check(ds, v)
    run_code, run_names = _runs(ds)
    rel = np.asarray(spatial_columns(ds).relation, np.int64)
    rows = []
    for rc, run in enumerate(run_names):
        in_run = run_code == rc
        for code in sorted(range(len(RELATIONS)), key=lambda c: RELATIONS[c]):
            sel = in_run & (rel == code)
            if not sel.any():
                continue
            im = image_metrics(v.verdict[sel], v.conf[sel])
            rows.append({"run": run, "relation": RELATIONS[code],
                         **{c: im[c] for c in RELATION_DETAIL_COLUMNS[2:]}})
            _bounds(rows[-1], _image_intervals(ds, v.verdict, v.conf, sel, n_boot, seed))
    return rows


def by_relation(ds: Dataset, v: VerdictColumns,
                detail: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """SpatialBench-UC's by_relation table: per run, ``<relation>_pass_rate`` for every relation
    present in the dataset (sorted by name); NaN where a run has no sample of that relation."""
    detail = detail if detail is not None else relation_detail(ds, v)
    present = sorted({r["relation"] for r in detail})
    rows = []
    for run in _run_names(ds):
        row: dict[str, Any] = {"run": run}
        for r in present:
            row[f"{r}{BY_RELATION_RATE_SUFFIX}"] = _NAN
        for d in detail:
            if d["run"] == run:
                row[f"{d['relation']}{BY_RELATION_RATE_SUFFIX}"] = d["pass_rate"]
        for d in detail:  # the bounds after every rate: the published columns come first
            if d["run"] == run and "pass_rate_lo" in d:
                row[f"{d['relation']}{BY_RELATION_RATE_SUFFIX}_lo"] = d["pass_rate_lo"]
                row[f"{d['relation']}{BY_RELATION_RATE_SUFFIX}_hi"] = d["pass_rate_hi"]
        rows.append(row)
    return rows


def counterfactual(ds: Dataset, v: VerdictColumns, k: int | None = None,
                   pv: PromptVerdicts | None = None, n_boot: int = N_BOOT) -> list[dict[str, Any]]:
    """Per run: counterfactual pairs by best-of-K outcome (see module docstring), with Wilson
    bounds over the pairs."""
    pv = pv if pv is not None else prompt_verdicts(ds, v, k)
    twin = {str(p): str(c) for p, c in zip(ds.prompts.prompt_id.tolist(),
                                           ds.prompts.twin_id.tolist()) if c}
    rows = []
    for run in _run_names(ds):
        sel = pv.run == run
        verdict_of = dict(zip(pv.prompt_id[sel].tolist(), pv.best_of_k[sel].tolist()))
        seen: set[tuple[str, str]] = set()
        counts = {"both_pass": 0, "both_fail": 0, "one_sided": 0, "undecidable": 0}
        for p, vp in verdict_of.items():
            c = twin.get(p)
            if c is None or c == p or c not in verdict_of:
                continue
            pair = (p, c) if p < c else (c, p)
            if pair in seen:
                continue
            seen.add(pair)
            vc = verdict_of[c]
            if vp == UNDECIDABLE or vc == UNDECIDABLE:
                counts["undecidable"] += 1
            elif vp == PASS and vc == PASS:
                counts["both_pass"] += 1
            elif vp == FAIL and vc == FAIL:
                counts["both_fail"] += 1
            else:
                counts["one_sided"] += 1
        pairs = len(seen)
        rows.append({
            "run": run, "pairs": pairs,
            "both_pass_rate": _rate(counts["both_pass"], pairs),
            "one_sided_rate": _rate(counts["one_sided"], pairs),
            "both_fail_rate": _rate(counts["both_fail"], pairs),
            "undecidable_rate": _rate(counts["undecidable"], pairs),
            "undecidable_count": counts["undecidable"],
            "both_pass": counts["both_pass"], "one_sided": counts["one_sided"],
            "both_fail": counts["both_fail"],
        })
        _bounds(rows[-1], {f"{nm}_rate": _wilson(counts[nm], pairs, n_boot)
                           for nm in ("both_pass", "one_sided", "both_fail", "undecidable")})
    return rows


def abstention(ds: Dataset, v: VerdictColumns, n_boot: int = N_BOOT, seed: int = SEED) -> list[dict[str, Any]]:
    """Per run and abstention reason (every reason, zeros included): count, rate (fraction of
    all the run's samples, with cluster-bootstrap bounds over the prompts), percent (100 x rate)
    and share_of_undecidable."""
    _check(ds, v)
    run_code, run_names = _runs(ds)
    prompt_code = _codes(ds, "prompt_id")[0]
    reason_all = np.asarray(v.reason, np.int64)
    rows = []
    for rc, run in enumerate(run_names):
        sel = run_code == rc
        n = int(np.count_nonzero(sel))
        und = sel & (v.verdict == UNDECIDABLE)
        n_und = int(np.count_nonzero(und))
        counts = np.bincount(v.reason[und].astype(np.int64), minlength=len(REASONS))
        u_sel = (v.verdict == UNDECIDABLE)[sel]
        r_sel = reason_all[sel]
        num = np.stack([u_sel & (r_sel == code) for code in range(1, len(REASONS))], axis=1).astype(np.float64)
        est = ratio_estimates(num, np.ones_like(num), prompt_code[sel], n_boot=n_boot, seed=seed)
        for code in range(1, len(REASONS)):
            c = int(counts[code])
            rate = _rate(c, n)
            e = est[code - 1]
            rows.append({"run": run, "reason": REASONS[code], "count": c, "rate": rate,
                         "percent": 100.0 * rate, "share_of_undecidable": _rate(c, n_und),
                         "rate_lo": e.lo, "rate_hi": e.hi})
    return rows


@dataclass
class Summary:
    """Every report table as rows (list of dicts), grouped by run.

    main_results, by_relation (wide, SpatialBench-UC layout), counterfactual, prompt_metrics and
    abstention map to the CSV files of the same names; relation_detail (long form) and
    prompts (per-prompt best-of-K / all-of-K rows) are their detail.
    """

    main_results: list[dict[str, Any]]
    by_relation: list[dict[str, Any]]
    relation_detail: list[dict[str, Any]]
    counterfactual: list[dict[str, Any]]
    prompt_metrics: list[dict[str, Any]]
    abstention: list[dict[str, Any]]
    prompts: list[dict[str, Any]]
    k: dict[str, int]


def summarize(ds: Dataset, v: VerdictColumns, k: int | None = None, n_boot: int = N_BOOT,
              seed: int = SEED) -> Summary:
    """All metric tables for the verdicts ``v`` of ``ds`` (K = seeds per prompt, see above), with
    95 % bounds from ``n_boot`` resamples (0: none)."""
    _check(ds, v)
    pv = prompt_verdicts(ds, v, k)
    detail = relation_detail(ds, v, n_boot, seed)
    return Summary(
        main_results=main_results(ds, v, k, pv=pv, n_boot=n_boot, seed=seed),
        by_relation=by_relation(ds, v, detail=detail),
        relation_detail=detail,
        counterfactual=counterfactual(ds, v, k, pv=pv, n_boot=n_boot),
        prompt_metrics=prompt_metrics(ds, v, k, pv=pv, n_boot=n_boot),
        abstention=abstention(ds, v, n_boot, seed),
        prompts=pv.rows(),
        k=dict(pv.k),
    )


# =============================================================================================
# Headline numbers: all runs together, without τ and at τ
# =============================================================================================
#: the statistics of `headline`, in display order: (key, label, kind) with kind "d" a count,
#: "f" a rate or mean
HEADLINE_ROWS: tuple[tuple[str, str, str], ...] = (
    ("pass_count", "PASS", "d"),
    ("fail_count", "FAIL", "d"),
    ("undecidable_count", "UNDECIDABLE", "d"),
    ("pass_rate", "pass rate", "f"),
    ("coverage", "coverage", "f"),
    ("pass_rate_cond", "PASS | decided", "f"),
    ("prompt_pass_rate", "prompt pass (best-of-K)", "f"),
    ("all_of_k_pass_rate", "prompt pass (all-of-K)", "f"),
    ("mean_conf", "mean conf", "f"),
)


@dataclass
class Headline:
    """`headline`'s answer: every statistic of ``HEADLINE_ROWS`` as an `Estimate`, over the
    verdicts as they are (``plain``) and at the operating point τ (``at_tau``: a PASS / FAIL
    with confidence below τ counts as UNDECIDABLE; empty without τ)."""

    tau: float | None
    plain: dict[str, Estimate]
    at_tau: dict[str, Estimate]

    def rows(self) -> list[dict[str, Any]]:
        """One row per statistic: value, bounds, n, units and interval method, then the same at τ."""
        out = []
        for key, label, kind in HEADLINE_ROWS:
            row: dict[str, Any] = {"statistic": key, "label": label}
            for suffix, d in (("", self.plain), ("_at_tau", self.at_tau)):
                e = d.get(key)
                if e is None:
                    continue
                value: Any = int(e.value) if kind == "d" else e.value
                row.update({f"value{suffix}": value, f"lo{suffix}": e.lo, f"hi{suffix}": e.hi,
                            f"n{suffix}": e.n, f"units{suffix}": e.units, f"interval{suffix}": e.method})
                if kind != "d" and e.small_note():
                    row[f"note{suffix}"] = e.small_note()
            out.append(row)
        return out


class _AtTau:
    def __init__(self, verdict: np.ndarray) -> None:
        self.verdict = verdict


def _headline_of(ds: Dataset, verdict: np.ndarray, conf: np.ndarray, k: int | None, n_boot: int,
                 seed: int) -> dict[str, Estimate]:
    n = len(verdict)
    p = int(np.count_nonzero(verdict == PASS))
    f = int(np.count_nonzero(verdict == FAIL))
    out = {"pass_count": Estimate(float(p), n=n, units=n), "fail_count": Estimate(float(f), n=n, units=n),
           "undecidable_count": Estimate(float(n - p - f), n=n, units=n)}
    out.update(_image_intervals(ds, verdict, conf, None, n_boot, seed))
    prompts, best, allk = prompt_pass_totals(ds, _AtTau(verdict), k)  # type: ignore[arg-type]
    out["prompt_pass_rate"] = _wilson(best, prompts, n_boot)
    out["all_of_k_pass_rate"] = _wilson(allk, prompts, n_boot)
    return out


def headline(ds: Dataset, v: VerdictColumns, tau: float | None = None, k: int | None = None, *,
             n_boot: int = N_BOOT, seed: int = SEED) -> Headline:
    """The headline numbers over every sample of ``ds`` (all runs together) with their intervals
    (module doc), and with ``tau`` the same at the operating point τ. The calibration panel and
    the report both call this, so they show the same numbers for the same verdicts."""
    _check(ds, v)
    verdict = np.asarray(v.verdict)
    _check_codes(verdict)
    conf = np.asarray(v.conf, np.float64)
    plain = _headline_of(ds, verdict, conf, k, n_boot, seed)
    at: dict[str, Estimate] = {}
    if tau is not None:
        low = ((verdict == PASS) | (verdict == FAIL)) & ~(conf >= tau)
        at = _headline_of(ds, np.where(low, UNDECIDABLE, verdict).astype(np.int8), conf, k, n_boot, seed)
    return Headline(tau=tau, plain=plain, at_tau=at)
