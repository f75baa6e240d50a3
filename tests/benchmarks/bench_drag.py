"""Benchmark: dragging a Calibration slider on a large project as an auditor does, with the window's
handling of slow live updates and with every live update on the window's thread, in turn.

    .venv/bin/python tests/benchmarks/bench_drag.py PROJECT [--slider margin] [--seconds 3]
        [--rounds 3] [--busy-core]

Each round, in a fresh process (`window_rounds.py`), opens PROJECT in the window on the
Calibration tab and drags one slider twice: the handle is pressed, moved by a mouse that reports
every 16 ms (a 60 Hz mouse: its position follows the clock, back and forth over the groove) for
`--seconds`, then released. Once with the window's handling (`LIVE_BUDGET_MS`: once a live update
holds the window's thread longer, the rest of the drag is evaluated on another thread) and once
with every live update on the window's thread (the budget infinite), the order alternating from
round to round, each from a config new to the checker. For each drag: the gaps between the mouse
moves the window handled (p50 / p95 / max: how long the handle stood still), the live verdict
updates shown, the release to the exact verdicts shown (its evaluation and the views painted),
and whether the status bar said the live figures were coarser (`COARSE_NOTE`) and cleared that
line once the exact verdicts showed; after the rounds, each way's medians over them. `--busy-core` keeps
one core busy with a second process for the whole run.
"""

from __future__ import annotations

import math
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from window_rounds import MARK, open_window, result, round_parser

import machine_load

TICK_MS = 16


def drag(app: Any, w: Any, slider_name: str, seconds: float) -> dict[str, Any]:
    from PySide6.QtCore import QEvent, QPoint, QPointF, Qt, QTimer
    from PySide6.QtGui import QMouseEvent
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication, QStyle, QStyleOptionSlider

    panel = w.calibration
    st = w.spatial
    slider = panel.params_box.sliders[slider_name].slider
    opt = QStyleOptionSlider()
    slider.initStyleOption(opt)
    handle = slider.style().subControlRect(QStyle.ComplexControl.CC_Slider, opt,
                                           QStyle.SubControl.SC_SliderHandle, slider).center()
    span = max(40, slider.width() - 2 * handle.x() - 10)
    updates = [0]
    said: list[str] = []
    st.verdicts_changed.connect(lambda: updates.__setitem__(0, updates[0] + 1))
    st.message.connect(said.append)
    handled: list[float] = []
    last = [handle]
    QTest.mousePress(slider, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, handle)
    app.processEvents()
    t0 = time.perf_counter()
    updates[0] = 0
    timer = QTimer()
    timer.setInterval(TICK_MS)

    def move() -> None:
        now = time.perf_counter()
        handled.append(now)
        phase = ((now - t0) / 1.5) % 2.0  # over the groove in 1.5 s and back
        dx = int(span * (phase if phase <= 1.0 else 2.0 - phase))
        p = last[0] = handle + QPoint(dx, 0)
        QApplication.sendEvent(slider, QMouseEvent(QEvent.Type.MouseMove, QPointF(p), QPointF(slider.mapToGlobal(p)),
                                                   Qt.MouseButton.NoButton, Qt.MouseButton.LeftButton,
                                                   Qt.KeyboardModifier.NoModifier))

    timer.timeout.connect(move)
    timer.start()
    while time.perf_counter() - t0 < seconds:
        app.processEvents()
        time.sleep(0.001)
    timer.stop()
    live = updates[0]
    t1 = time.perf_counter()
    QTest.mouseRelease(slider, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, last[0])
    app.processEvents()  # the exact verdicts of the value let go, painted
    release_ms = (time.perf_counter() - t1) * 1000
    exact = st.config == panel.slider_config() and not st.previewing
    gaps = np.diff(handled) * 1000 if len(handled) > 1 else np.zeros(1)
    return {"gaps": gaps, "live": live, "moves": len(handled), "release_ms": release_ms, "exact": exact, "said": said}


def one_round(project: Path, slider_name: str, seconds: float, first_on_thread: bool) -> None:
    import bench_gui as bench

    from ui.methods.spatial.calibration import panel as panel_mod

    app, w = open_window(project, "bench_drag.ini")
    w.show_tab("Calibration")
    bench.wait(app, 1.0)
    st = w.spatial
    budget = panel_mod.LIVE_BUDGET_MS
    modes = [("on the window's thread", math.inf), ("the window's handling", budget)]
    if not first_on_thread:
        modes.reverse()
    for k, (label, b) in enumerate(modes):
        panel_mod.LIVE_BUDGET_MS = b
        # a config new to the checker's caches for each drag
        st.set_config(st.config.replace(t_det=round(0.2 + 0.0013 * (k + 1) + (time.time() % 1000) * 1e-7, 8)))
        bench.wait(app, 0.8)
        r = drag(app, w, slider_name, seconds)
        g = r["gaps"]
        coarse = panel_mod.COARSE_NOTE in r["said"]
        cleared = not coarse or r["said"][-1] == ""  # the note gone once the exact verdicts show
        result(f"{slider_name} drag, {label:24s}: mouse moves handled {r['moves']} in {seconds:.0f} s, gaps p50 "
               f"{np.percentile(g, 50):.0f} / p95 {np.percentile(g, 95):.0f} / max {g.max():.0f} ms; live updates "
               f"shown {r['live']}; release -> exact verdicts painted {r['release_ms']:.0f} ms (exact: {r['exact']}); "
               f"status bar said coarser: {coarse} (cleared on release: {cleared}); "
               f"load {machine_load.load()[0]:.2f}")
        bench.wait(app, 0.8)
    panel_mod.LIVE_BUDGET_MS = budget
    w.close()
    app.processEvents()


def main(argv: list[str] | None = None) -> int:
    ap = round_parser(__doc__)
    ap.add_argument("--slider", default="margin", choices=("margin", "t_det", "ambiguity_delta", "max_overlap_iou"))
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--busy-core", action="store_true", help="a second process keeps one core busy")
    ap.add_argument("--first-on-thread", action="store_true", help=argparse_suppress())
    args = ap.parse_args(argv)
    if args.one:
        one_round(args.project, args.slider, args.seconds, args.first_on_thread)
        return 0
    print(f"dragging {args.slider} on {args.project}, {args.rounds} rounds; {machine_load.describe()}")
    lines: list[str] = []
    with machine_load.one_core_busy(args.busy_core) as busy:
        for r in range(args.rounds):
            extra = ["--first-on-thread"] if r % 2 == 0 else []
            try:
                out = subprocess.run([sys.executable, __file__, str(args.project), "--slider", args.slider,
                                      "--seconds", str(args.seconds), *extra, "--one"], capture_output=True, text=True,
                                     check=False, timeout=900)
            except subprocess.TimeoutExpired:
                print("round failed: no answer within 900 s", flush=True)
                continue
            got = [ln[len(MARK):] for ln in out.stdout.splitlines() if ln.startswith(MARK)]
            print("\n".join(got) if got else f"round failed (exit {out.returncode}): {out.stderr[-2000:]}", flush=True)
            lines += got
            busy.sample()
    summarize(args.slider, lines)
    if args.busy_core:
        print(busy.summary())
    print(f"after: {machine_load.describe()}")
    return 0


ROUND = re.compile(r"drag, (?P<mode>.+?)\s*: .*gaps p50 (?P<p50>\d+) / p95 (?P<p95>\d+) / max (?P<max>\d+) ms; "
                   r"live updates shown (?P<live>\d+); release -> exact verdicts painted (?P<rel>\d+) ms "
                   r"\(exact: (?P<exact>\w+)\); status bar said coarser: (?P<coarse>\w+) "
                   r"\(cleared on release: (?P<cleared>\w+)\); load (?P<load>[\d.]+)")


def summarize(slider: str, lines: list[str]) -> None:
    """Each way of handling the drag: the medians over the rounds of its figures."""
    by: dict[str, list[dict[str, str]]] = {}
    for ln in lines:
        m = ROUND.search(ln)
        if m:
            by.setdefault(m["mode"], []).append(m.groupdict())
    for mode, rs in by.items():
        def med(k: str) -> float:
            return statistics.median(float(r[k]) for r in rs)
        loads = [float(r["load"]) for r in rs]
        print(f"{slider} drag, {mode}, medians of {len(rs)} rounds: gaps p50 {med('p50'):.0f} / p95 {med('p95'):.0f} / "
              f"max {med('max'):.0f} ms; live updates shown {med('live'):.0f}; release -> exact verdicts painted "
              f"{med('rel'):.0f} ms; exact in {sum(r['exact'] == 'True' for r in rs)} of {len(rs)}, status bar said "
              f"coarser in {sum(r['coarse'] == 'True' for r in rs)} (cleared on release in "
              f"{sum(r['coarse'] == 'True' and r['cleared'] == 'True' for r in rs)}); "
              f"load {min(loads):.2f}-{max(loads):.2f}")


def argparse_suppress() -> str:
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    raise SystemExit(main())
