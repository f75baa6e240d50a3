"""Benchmark: the window's resident memory through a review session. Prints figures; asserts nothing.

    .venv/bin/python tests/benchmarks/bench_window_memory.py PROJECT [--moves 30] [--rounds 1]

In a fresh process per round, as `main.py gui` sets it up: open PROJECT in the window (Browse
tab), make every sample the review queue ("review from Browse" on the first row), then make
bench_gui's slider moves (margin and t_det, a new config each). Prints the resident memory
after each step, again 1 s after the last move, and the process peak (VmHWM). To compare trees, run it from another checkout
(see `window_rounds.py`).
"""

from __future__ import annotations

import os
from pathlib import Path

from window_rounds import moved, open_window, result, round_parser, run_rounds


def one_round(project: Path, moves: int) -> str:
    import bench_gui as bench

    app, w = open_window(project, "bench_window_memory.ini")
    opened = bench.rss_mb()
    w.method_views["spatial"].review_from_browse(w, 0)
    w.show_tab("Browse")
    bench.wait(app, 0.3)
    reviewed = bench.rss_mb()
    st = w.spatial
    for i in range(moves):
        st.set_config(moved(st.config, i))
        app.processEvents()
        bench.wait(app, 0.05)
    after = bench.rss_mb()
    bench.wait(app, 1.0)  # the drag over: the window trims its heap once it rests (ui/idle_trim.py)
    return (f"queue of {len(st.queue):,} samples; resident after open {opened:.0f} MB, after the review "
            f"{reviewed:.0f} MB, after {moves} moves {after:.0f} MB, 1 s later {bench.rss_mb():.0f} MB; "
            f"peak {bench.peak_mb():.0f} MB")


def main() -> None:
    ap = round_parser(__doc__)
    a = ap.parse_args()
    if a.one:
        result(one_round(a.project, a.moves))
        os._exit(0)  # no teardown: the figures are printed
    run_rounds(__file__, [str(a.project), "--moves", str(a.moves)], a.rounds)

if __name__ == "__main__":
    main()
