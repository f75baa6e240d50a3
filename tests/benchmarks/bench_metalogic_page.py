"""Benchmark: the MetaLogic page on many image pairs (offscreen Qt, synthetic pairs, no project).

Prints how long the page takes to show newly loaded data (heatmap, list columns, pair names),
to follow a slider move (the core's evaluation, timed apart, then the views' refresh on the GUI
thread), to list one heatmap cell, and to step to the next pair.

    QT_QPA_PLATFORM=offscreen .venv/bin/python tests/benchmarks/bench_metalogic_page.py [--n 200000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
for p in (ROOT, ROOT / "tests" / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from bench_metalogic import synthetic_pairs

from workstation.methods import get_method
from workstation.methods.metalogic.adapter import MetaLogicData


class _Window:
    def __init__(self, state: object) -> None:
        self.state = state
        self.images = None
        self.ask_annotator = lambda: "bench"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200_000, help="image pairs")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)

    from PySide6.QtWidgets import QApplication

    from ui.methods.metalogic.page import MetaLogicPage
    from ui.session import MethodSession
    from ui.state import AppState

    app = QApplication.instance() or QApplication([])
    method = get_method("metalogic")
    pairs = synthetic_pairs(args.n, seed=1)
    n = pairs.n_pairs
    obj = np.array([f"s{i}" for i in range(n)], dtype=object)
    data = MetaLogicData(pairs=pairs, group=pairs.pair_id, sample_a=obj, sample_b=obj, image_a=obj, image_b=obj,
                         prompt_a=obj, prompt_b=obj, text_a=obj, text_b=obj)
    state = AppState()
    session = MethodSession(method, state)
    page = MetaLogicPage(session, _Window(state))
    page.resize(1400, 900)
    page.show()
    cfg = method.default_config()
    results = method.evaluate(data, cfg)  # warm-up (prepare)

    t = time.perf_counter()
    session.data, session.config, session.results = data, cfg, results
    session.data_changed.emit()
    app.processEvents()
    print(f"{n:,} image pairs; show new data (heatmap, list, names):  {time.perf_counter() - t:.3f} s")

    ev, views = [], []
    for k in range(args.repeat):
        c = cfg.replace(near_band=0.02 + 0.03 * k)
        t = time.perf_counter()
        r = method.evaluate(data, c)
        ev.append(time.perf_counter() - t)
        t = time.perf_counter()
        session.adopt(c, r)
        app.processEvents()
        views.append(time.perf_counter() - t)
    print(f"slider move: evaluate (worker thread) {statistics.median(ev):.3f} s median, "
          f"views refresh (GUI thread) {statistics.median(views):.3f} s median of {args.repeat}")
    cells = []
    for law, dim in (("Commutative", "x"), ("DeMorgan", "none"), ("Complement", "y")):
        t = time.perf_counter()
        page.show_cell(law, dim)
        app.processEvents()
        cells.append(time.perf_counter() - t)
    print(f"heatmap cell click -> list: {statistics.median(cells):.3f} s median ({page.model.rowCount():,} rows last)")
    steps = []
    for _ in range(20):
        t = time.perf_counter()
        page.controller.next()
        app.processEvents()
        steps.append(time.perf_counter() - t)
    print(f"next pair: {1000 * statistics.median(steps):.1f} ms median of 20")
    page.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
