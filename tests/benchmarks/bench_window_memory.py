"""Benchmark: the window's resident memory through a review session. Prints figures; asserts nothing.

    .venv/bin/python tests/benchmarks/bench_window_memory.py PROJECT [--moves 30] [--rounds 1]

In a fresh process per round, as `main.py gui` sets it up: open PROJECT in the window (Browse
tab), make every sample the review queue ("review from Browse" on the first row), then make
bench_gui's slider moves (margin and t_det, a new config each). Prints the resident memory
after each step and the process peak (VmHWM). Run it from another checkout to compare trees
(it imports `ui` and `workstation` from the checkout it lives in).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def one_round(project: Path, moves: int) -> str:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    # the window's settings in a file of the benchmark's own, not the user's
    os.environ.setdefault("WORKSTATION_SETTINGS", str(Path(tempfile.gettempdir()) / "bench_window_memory.ini"))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_gui as bench

    from ui import app as ui_app
    from ui import theme
    from ui.main_window import MainWindow

    app = ui_app.create_application([])
    theme.apply_theme(app, "dark")
    w = MainWindow(ask_annotator=lambda: "bench")
    w.resize(1500, 940)
    w.show()
    bench.wait(app, 0.2)
    w.open_project(project)
    app.processEvents()
    opened = bench.rss_mb()
    w.review_from_browse(0)
    w.show_tab("Browse")
    bench.wait(app, 0.3)
    reviewed = bench.rss_mb()
    st = w.state
    for i in range(moves):
        m = 0.02 + 0.2 * (i % 20) / 20
        st.set_config(st.config.replace(margin=round(m, 4), t_det=round(0.2 + (m % 0.05), 4)))
        app.processEvents()
        bench.wait(app, 0.05)
    return (f"queue of {len(st.queue):,} samples; resident after open {opened:.0f} MB, after the review "
            f"{reviewed:.0f} MB, after {moves} moves {bench.rss_mb():.0f} MB; peak {bench.peak_mb():.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("project", type=Path)
    ap.add_argument("--moves", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=1, help="fresh processes, one after the other")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a round, in this process
    a = ap.parse_args()
    if a.one:
        print(one_round(a.project, a.moves), flush=True)
        os._exit(0)  # no teardown: the figures are printed
    for _ in range(a.rounds):
        out = subprocess.run([sys.executable, __file__, str(a.project), "--moves", str(a.moves), "--one"],
                             capture_output=True, text=True, check=False)
        lines = [ln for ln in out.stdout.splitlines() if ln.startswith("queue of")]
        print(lines[-1] if lines else f"round failed (exit {out.returncode}): {out.stderr[-2000:]}", flush=True)


if __name__ == "__main__":
    main()
