"""Benchmark: a first open of a large project as the window shows it — how soon it says how far
its read is, how the window answers meanwhile, and how soon a cancel gives the window back.

    .venv/bin/python tests/benchmarks/bench_open_cancel.py PROJECT [--rounds 3] [--at 30] [--busy-core]

Each round, in a fresh process, builds the window (offscreen, 1500×940), empties a detection
cache of the round's own (a first open: the detections are scanned), and opens PROJECT as the
recent projects and File → Open do (`open_project_in_background`). A 16 ms timer on the window's
thread records the gaps between its ticks while the load runs (how long the window could not
answer input). When the status bar reports `--at` percent of the detections read, the round
presses **Cancel opening** and times until the window has finished the open (`load_finished`);
then it opens the project again to its end, to time the whole first open and check that the
cancelled one left nothing in the way. It prints, per round: the first progress report (seconds
from the open's start), the cancel to the window given back (ms), the gaps of the window's thread
while the load ran before the cancel (p50 / p95 / max), and the full first open after it; then
the medians over the rounds. `--busy-core` keeps one core busy with a second process.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from window_rounds import MARK, open_window, result, round_parser

import machine_load


def one_round(project: Path, at: int) -> None:
    cache = Path(tempfile.mkdtemp(prefix="bench-open-cancel-"))
    os.environ["WORKSTATION_CACHE_DIR"] = str(cache)
    import numpy as np
    from PySide6.QtCore import QTimer

    app, w = open_window(None, f"{cache.name}.ini")
    finished: list[tuple[float, bool]] = []
    w.load_finished.connect(lambda ok: finished.append((time.perf_counter(), ok)))
    gaps: list[float] = []
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        gaps.append((now - last[0]) * 1000)
        last[0] = now

    timer = QTimer()
    timer.setInterval(16)
    timer.timeout.connect(tick)
    t0 = time.perf_counter()
    w.open_project_in_background(project)
    last[0] = time.perf_counter()
    timer.start()
    first_report = None
    cancel_at = None
    while not finished and time.perf_counter() - t0 < 600:
        app.processEvents()
        progress = w.opener.progress
        if progress is not None and progress.phase == "detections" and progress.done > 0 and first_report is None:
            first_report = time.perf_counter() - t0
        if (cancel_at is None and progress is not None and progress.total > 0
                and progress.done * 100 >= at * progress.total):
            cancel_at = time.perf_counter()
            w.opener.indicator.cancel_button.click()
        time.sleep(0.002)
    timer.stop()
    if not finished or cancel_at is None:
        result(f"round failed: finished={finished} cancel_at={cancel_at}")
        return
    back_ms = (finished[0][0] - cancel_at) * 1000
    g = np.array(gaps) if gaps else np.zeros(1)
    ok_after_cancel = finished[0][1]
    # the whole first open, after the cancelled one
    shutil.rmtree(cache / "detections", ignore_errors=True)
    finished.clear()
    t1 = time.perf_counter()
    w.open_project_in_background(project)
    while not finished and time.perf_counter() - t1 < 600:
        app.processEvents()
        time.sleep(0.002)
    full = time.perf_counter() - t1
    n = w.spatial.dataset.n if w.spatial.dataset is not None else 0
    result(f"first report {first_report:.2f} s; cancel at {at} % to the window given back {back_ms:.0f} ms "
           f"(opened: {ok_after_cancel}); gaps while loading p50 / p95 / max {np.percentile(g, 50):.0f} / "
           f"{np.percentile(g, 95):.0f} / {g.max():.0f} ms; the first open after it, samples on screen "
           f"{full:.2f} s ({n:,} samples, ok={finished[0][1] if finished else None})")
    w.close()
    shutil.rmtree(cache, ignore_errors=True)


def main() -> None:
    ap = round_parser(__doc__ or "")
    ap.add_argument("--at", type=int, default=30, help="the share of detections read when cancel is pressed (%%)")
    ap.add_argument("--busy-core", action="store_true", help="keep one core busy with a second process")
    a = ap.parse_args()
    if a.one:
        one_round(a.project, a.at)
        return
    print(machine_load.describe(), flush=True)
    with machine_load.one_core_busy(a.busy_core) as busy:
        lines: list[str] = []
        import subprocess

        for _ in range(a.rounds):
            out = subprocess.run([sys.executable, __file__, str(a.project), "--at", str(a.at), "--one"],
                                 capture_output=True, text=True, check=False, timeout=1200)
            got = [ln[len(MARK):] for ln in out.stdout.splitlines() if ln.startswith(MARK)]
            print("\n".join(got) if got else f"round failed (exit {out.returncode}): {out.stderr[-2000:]}",
                  flush=True)
            lines += got
    if a.busy_core:
        print(busy.summary())
    import re

    def med(pattern: str) -> str:
        vals = [float(m.group(1)) for ln in lines if (m := re.search(pattern, ln))]
        return f"{statistics.median(vals):g}" if vals else "-"

    print(f"medians of {len(lines)} rounds: first report {med(r'first report ([0-9.]+)')} s; cancel to the window "
          f"given back {med(r'given back ([0-9.]+) ms')} ms; gaps p95 {med(r'p50 / p95 / max [0-9]+ / ([0-9]+)')} ms, "
          f"max {med(r'p50 / p95 / max [0-9]+ / [0-9]+ / ([0-9]+)')} ms; first open {med(r'on screen ([0-9.]+) s')} s")
    print(machine_load.describe(), flush=True)


if __name__ == "__main__":
    main()
