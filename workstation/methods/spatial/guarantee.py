"""Calibration with a guarantee: beside the configuration that minimises the paper's objective J,
the one whose risk is at most α with probability at least 1 − δ (Learn then Test,
`workstation.evaluation.ltt`), over the same grid and the same audited samples.

Risk is the paper's (METHODS.md §1): among the audited samples a configuration covers (checker
PASS / FAIL with confidence ≥ τ) and a human decided (PASS / FAIL), the share where the checker
and the human differ; n_λ and k_λ are those counts. The testing order of the fixed sequence is the
coverage each configuration has on *all* samples of the dataset, smallest first (most
conservative first; it uses no label); the guaranteed choice is the qualifying configuration with
the largest such coverage. The guarantee assumes the audited samples are a random draw of the
run's images: a uniform one, or one whose inclusion probabilities are recorded (a stratified
audit set, an audit plan), each sample then weighted by 1/π (`workstation.evaluation.ltt`'s
`design_counts`). With labels of no recorded draw (free labelling, several audit sets pooled)
the test still runs on the plain counts, and the comparison says the guarantee does not hold for
such labels (`GuaranteeComparison.caveat`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...dataset import Dataset
from ...evaluation.ltt import LTTResult, design_counts, learn_then_test
from ...types import WorkstationError
from .calibration import (
    PAPER_GRID,
    Evaluator,
    GridSearchCancelled,
    Weights,
    _check_grids,
    _Sorted,
    human_by_row,
    objective,
    rank_combinations,
    run_steps,
)
from .config import CheckerConfig
from .types import FAIL, PASS, UNDECIDABLE


@dataclass
class GuaranteeComparison:
    """Every configuration of the grid with its audited counts, J and p-value; J's choice and the
    guaranteed one."""

    params: tuple[str, ...]
    rows: list[dict[str, Any]]  # grid order
    j_index: int
    ltt: LTTResult
    n_audited: int
    weights: Weights
    weighted: bool = False  # the counts are design-weighted (1/π)
    caveat: str = ""  # why the guarantee does not hold for these labels ("" : it does)

    @property
    def j_choice(self) -> dict[str, Any]:
        return self.rows[self.j_index]

    @property
    def guaranteed(self) -> dict[str, Any] | None:
        return None if self.ltt.chosen is None else self.rows[self.ltt.chosen]

    def describe(self, i: int) -> str:
        r = self.rows[i]
        return ", ".join(f"{p}={r[p]:g}" for p in self.params)

    def message(self) -> str:
        text = self.ltt.message(self.describe)
        if self.caveat:
            text += f" — the guarantee does not hold for these labels: {self.caveat}"
        elif self.weighted:
            text += " (weighted by the audit draw's inclusion probabilities)"
        return text


def _combos(base_cfg: CheckerConfig, grids: Mapping[str, Sequence[Any]]) -> tuple[list[str], list[tuple[Any, ...]], np.ndarray]:
    names, values, taus = _check_grids(base_cfg, grids)
    combos = list(itertools.product(*values)) if names else [()]
    tau_values = np.asarray(taus if taus is not None else [base_cfg.tau], np.float64)
    return names, combos, tau_values


def iter_compare(ds: Dataset, base_cfg: CheckerConfig, human: np.ndarray | Sequence[Any] | Mapping[Any, Any],
                 grids: Mapping[str, Sequence[Any]] | None = None, *, alpha: float = 0.1, delta: float = 0.1,
                 method: str = "fixed_sequence", weights: Weights | None = None,
                 evaluator: Evaluator | None = None, inclusion: np.ndarray | None = None,
                 drawn_share: float = 1.0, caveat: str | None = None,
                 ) -> Generator[tuple[int, int], None, GuaranteeComparison]:
    """The comparison as a generator: yields (done, total) checker evaluations (each over every
    sample of ``ds``), returns a `GuaranteeComparison`. ``inclusion``: per sample row its
    inclusion probability in the audit draw (NaN: not known); when every audited row has one the
    counts are weighted by 1/π, ``drawn_share`` the share of the samples the draw could reach.
    ``caveat``: why the labels are of no known draw (None: every audited row must have its
    probability for the guarantee to hold; "" : a uniform draw is assumed, as before)."""
    w = weights or Weights()
    names, combos, taus = _combos(base_cfg, PAPER_GRID if grids is None else grids)
    h = human_by_row(ds, human)
    rows = np.flatnonzero((h >= 0) & (h <= UNDECIDABLE))
    if len(rows) == 0:
        raise WorkstationError("a guaranteed choice needs human labels: no sample has one")
    if evaluator is None:
        from . import checker

        evaluator = checker.evaluate  # type: ignore[assignment]
    assert evaluator is not None
    ha = h[rows]
    decided_h = (ha == PASS) | (ha == FAIL)
    wts: np.ndarray | None = None
    note = caveat
    if inclusion is not None:
        pi = np.asarray(inclusion, np.float64).reshape(-1)
        if len(pi) != ds.n:
            raise WorkstationError(f"{len(pi)} inclusion probabilities for {ds.n} samples")
        pr = pi[rows]
        if np.isfinite(pr).all() and (pr > 0).all():
            wts = 1.0 / pr
            if note is None:
                note = ""
        elif note is None:
            note = "they are not one recorded random draw (free labelling, or several draws pooled)"
    note = note or ""
    out: list[dict[str, Any]] = []
    total = len(combos)
    yield 0, total
    for ci, combo in enumerate(combos):
        cfg = base_cfg.replace(**dict(zip(names, combo)))
        try:
            cfg.validate()
        except ValueError as e:
            raise WorkstationError(f"calibration grid: {e}") from None
        v = evaluator(ds, cfg)
        verdict = np.asarray(v.verdict)
        conf = np.asarray(v.conf, np.float64)
        decided = ((verdict == PASS) | (verdict == FAIL)) & np.isfinite(conf)
        rc = _Sorted(verdict[rows], conf[rows], ha).at(taus)
        va, ca = verdict[rows], conf[rows]
        for ti, tau in enumerate(taus.tolist()):
            share = float((decided & (conf >= tau)).mean()) if len(conf) else 0.0
            covered = decided[rows] & (ca >= tau)
            dc = design_counts(covered[None, :], decided_h, (va != ha)[None, :], wts, alpha,
                               covered_all=np.array([share]), drawn_share=drawn_share if wts is not None else 1.0)
            n, k = int(dc.n[0]), int(dc.k[0])
            row = dict(zip(names, combo))
            row.update(tau=float(tau), n=n, k=k, level=float(dc.alpha[0]),
                       audited_risk=float(dc.risk[0]) if n else float("nan"),
                       coverage_all=share, coverage=float(rc.coverage[ti]), risk=float(rc.risk[ti]),
                       fpr_pass=float(rc.fpr_pass[ti]))
            out.append(row)
        yield ci + 1, total
    params = tuple(names) + ("tau",)
    cov_a = np.array([r["coverage"] for r in out])
    j = objective(np.array([r["fpr_pass"] for r in out]), np.array([r["risk"] for r in out]), cov_a, w)
    for r, jj in zip(out, j.tolist()):
        r["j"] = float(jj)
    j_index = int(rank_combinations(j, cov_a)[0])
    cov_all = np.array([r["coverage_all"] for r in out])
    order = np.lexsort((np.arange(len(out)), cov_all))
    res = learn_then_test([r["n"] for r in out], [r["k"] for r in out], alpha, delta, order=order, score=cov_all,
                          method=method, n_audited=len(rows),
                          levels=[r["level"] for r in out] if wts is not None else None)
    for r, p, rej in zip(out, res.pvalues.tolist(), res.rejected.tolist()):
        r["p_value"] = float(p)
        r["qualifies"] = bool(rej)
    return GuaranteeComparison(params, out, j_index, res, len(rows), w, weighted=wts is not None, caveat=note)


def compare(ds: Dataset, base_cfg: CheckerConfig, human: np.ndarray | Sequence[Any] | Mapping[Any, Any],
            grids: Mapping[str, Sequence[Any]] | None = None, *, alpha: float = 0.1, delta: float = 0.1,
            method: str = "fixed_sequence", weights: Weights | None = None, evaluator: Evaluator | None = None,
            progress: Callable[[int, int], None] | None = None,
            cancel: Callable[[], bool] | None = None, inclusion: np.ndarray | None = None,
            drawn_share: float = 1.0, caveat: str | None = None) -> GuaranteeComparison:
    """`iter_compare` run to the end (``progress(done, total)``, ``cancel()`` as `grid_search`)."""
    gen = iter_compare(ds, base_cfg, human, grids, alpha=alpha, delta=delta, method=method, weights=weights,
                       evaluator=evaluator, inclusion=inclusion, drawn_share=drawn_share, caveat=caveat)
    return run_steps(gen, progress, cancel, "cancelled")
