"""Benchmark: slider moves with the Calibration tab shown, and where each move's time goes. Prints figures; asserts nothing.

    .venv/bin/python tests/benchmarks/bench_calibration_moves.py PROJECT [--moves 30] [--rounds 1] [--tab Calibration]

In a fresh process per round, as `main.py gui` sets it up: open PROJECT in the window, show
the tab, then make bench_gui's slider moves (margin and t_det, a new config each, so that the
checker's selection stage runs again too). For each move: set_config → every view updated and
painted (the figure of bench_gui's "with the Calibration tab shown"), and inside it the time in
the checker, in the tab's refresh (`_on_verdicts`), in its coverage curve (on a helper thread,
beside the refresh), and in the sample table's model. Then, on the project's last verdicts,
the tab's two per-move computations alone against the plain ways to do them: the coverage
curve by sorting the confidences and by binning them; the prompt
and abstention totals counted over every sample and updated from the samples a move changed.
To compare trees, run it from another checkout (see `window_rounds.py`); stages and
computations that tree lacks are left out of its lines.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from window_rounds import moved, open_window, result, round_parser, run_rounds


def _timed(owner: Any, name: str, into: dict[str, list[float]], label: str) -> None:
    """Wrap owner.name so that each call adds its milliseconds to into[label] (if it exists)."""
    f = getattr(owner, name, None)
    if f is None:
        return

    def wrapper(*a: Any, **k: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            into[label].append((time.perf_counter() - t0) * 1000)

    setattr(owner, name, wrapper)


def _best(fn: Callable[[], Any], repeat: int = 7) -> float:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return min(out)


def one_round(project: Path, moves: int, tab: str) -> None:
    import bench_gui as bench

    import ui.methods.spatial.sample_table as table
    from ui.methods.spatial.calibration import panel
    from workstation.methods.spatial import checker

    stages: dict[str, list[float]] = defaultdict(list)
    _timed(checker, "evaluate", stages, "checker")
    _timed(panel.CalibrationPanel, "_on_verdicts", stages, "tab refresh")
    _timed(panel, "coverage_curve", stages, "coverage (helper thread)")
    _timed(table.SampleTableModel, "refresh_live", stages, "table model")
    app, w = open_window(project, "bench_calibration_moves.ini")
    w.show_tab(tab)
    bench.wait(app, 0.5)
    st = w.spatial
    total: list[float] = []
    per: dict[str, list[float]] = defaultdict(list)
    for i in range(moves):
        cfg = moved(st.config, i)
        stages.clear()
        t0 = time.perf_counter()
        st.set_config(cfg)
        app.processEvents()
        total.append((time.perf_counter() - t0) * 1000)
        for k, v in stages.items():
            per[k].append(sum(v))
        bench.wait(app, 0.05)
    n = st.dataset.n
    result(f"{n:,} samples, {tab} tab, {moves} moves: set_config -> painted p50 {np.percentile(total, 50):.1f} ms, "
          f"p95 {np.percentile(total, 95):.1f} ms, max {max(total):.1f} ms")
    result("  inside (p50 / p95 ms): " + "; ".join(
        f"{k} {np.percentile(v, 50):.1f} / {np.percentile(v, 95):.1f}" for k, v in per.items()))
    _pieces(st.dataset, st.verdicts, checker)
    os._exit(0)  # no teardown: the figures are printed


def _pieces(ds: Any, v: Any, checker: Any) -> None:
    """The tab's per-move computations alone, on the last verdicts (one core, best of 7)."""
    from ui.methods.spatial.calibration import plots
    from workstation.methods.spatial import metrics
    from workstation.methods.spatial.types import REASONS

    if not hasattr(plots, "_binned_counts"):  # a tree from before these computations
        return
    taus, verdict, conf = plots.TAU_GRID, np.asarray(v.verdict), np.asarray(v.conf, np.float64)
    sort_ms = _best(lambda: plots._sorted_counts(verdict, conf, taus))
    bin_ms = _best(lambda: plots._binned_counts(verdict, conf, taus))
    same = all(np.array_equal(a, b) for a, b in zip(plots._sorted_counts(verdict, conf, taus),
                                                    plots._binned_counts(verdict, conf, taus)))
    result(f"coverage curve over {len(taus)} τ: sorted {sort_ms:.1f} ms, binned {bin_ms:.1f} ms "
           f"(the same numbers: {same})")

    def counted() -> None:
        metrics.prompt_pass_totals(ds, v)
        np.bincount(v.verdict.astype(np.intp) * len(REASONS) + v.reason, minlength=3 * len(REASONS))

    full_ms = _best(counted)
    # the next move's verdicts: the tally is updated from the samples that changed
    w = checker.evaluate(ds, v.config.replace(margin=v.config.margin + 0.01))
    changed = int(np.count_nonzero((w.verdict != v.verdict) | (w.reason != v.reason)))
    pair = [v, w]

    def updated() -> None:
        metrics.verdict_totals(ds, pair[0])
        pair.reverse()

    metrics.verdict_totals(ds, v)
    upd_ms = _best(updated)
    ok = metrics.verdict_totals(ds, w)[:3] == metrics.prompt_pass_totals(ds, w)
    result(f"prompt and abstention totals: counted over all {ds.n:,} samples {full_ms:.1f} ms, "
           f"updated from the {changed:,} a margin step of 0.01 changed {upd_ms:.1f} ms (the same totals: {ok})")


def main() -> None:
    ap = round_parser(__doc__)
    ap.add_argument("--tab", default="Calibration")
    a = ap.parse_args()
    if a.one:
        one_round(a.project, a.moves, a.tab)
    run_rounds(__file__, [str(a.project), "--moves", str(a.moves), "--tab", a.tab], a.rounds)

if __name__ == "__main__":
    main()
