"""Browse's judge columns at scale: how long the judges take on the worker, and what a slider move
costs with them in, with the filter "judges disagree" on, and while they are being computed.
Prints figures; asserts nothing.

    .venv/bin/python tests/benchmarks/bench_browse_judges.py WORK/synthetic_1000000_f32 [--moves 30] [--rounds 1]

Each round, in this process, on a window as `main.py gui` makes it (`window_rounds.open_window`):

1. the project opened on Browse; from the checker's verdicts in to the judge columns in (the
   window waits `browse_judges.IDLE_MS` idle first, then the worker computes every judge: GenEval's
   position rule and the twin consistency on a synthetic project, each stored checker config too);
2. `moves` slider moves (margin and t_det together, as `bench_gui.slider_moves`), each timed from
   `set_config` to the views updated and painted: with the judge columns in; then with the filter
   "checker (live) ≠ GenEval" on (every move filters again, by numpy);
3. the project opened again and the same moves started the moment the judges' worker starts: a
   drag during their computation (the worst case; a move before it starts postpones it).

Build the project with `bench_gui.py --n 1000000 --work WORK` (or its `build_project`).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for _p in (ROOT, HERE):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))


def pct(xs: list[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(np.asarray(xs, float), q)) if xs else float("nan")


def moves(app, w, n: int, until=None) -> list[float]:
    """n slider moves (margin and t_det together), each timed to the views updated and painted;
    stop early when ``until()`` becomes true."""
    from bench_gui import wait

    st = w.spatial
    out = []
    for i in range(n):
        m = 0.02 + 0.2 * (i % 20) / 20
        cfg = st.config.replace(margin=round(m, 4), t_det=round(0.2 + (m % 0.05), 4))
        t0 = time.perf_counter()
        st.set_config(cfg)
        app.processEvents()
        out.append((time.perf_counter() - t0) * 1000)
        wait(app, 0.05)
        if until is not None and until():
            break
    return out


def open_on_browse(app, w, project: Path) -> float:
    """Open the project and show Browse; seconds until the verdicts are in."""
    from bench_gui import wait

    t0 = time.perf_counter()
    w.open_project(project)
    w.show_tab("Browse")
    while w.spatial.verdicts is None or w.spatial.checking:
        wait(app, 0.01)
    return time.perf_counter() - t0


def one_round(project: Path, n_moves: int) -> None:
    from bench_gui import peak_mb, rss_mb, wait

    from ui.main_window import MainWindow
    from window_rounds import open_window

    app, w = open_window(None, "bench_browse_judges.ini")
    verdicts_s = open_on_browse(app, w, project)
    m = w.browser.model
    t_in = time.perf_counter()
    started = None
    while not m.q.judges:
        if started is None and m.judges.computing:
            started = time.perf_counter()
        wait(app, 0.01)
        if time.perf_counter() - t_in > 600:
            print("RESULT the judges did not come in within 600 s")
            return
    done = time.perf_counter()
    names = [j.short for j in m.q.judges]
    rss_judged = rss_mb()
    print(f"RESULT open to verdicts in {verdicts_s:.2f} s; verdicts in to judge columns in {done - t_in:.2f} s "
          f"(the worker {done - (started or t_in):.2f} s; judges: {', '.join(names)}); "
          f"RSS {rss_judged:.0f} MB with them", flush=True)
    wait(app, 0.5)
    plain = moves(app, w, n_moves)
    print(f"RESULT moves with the judge columns in: p50 {pct(plain, 50):.1f} ms, p95 {pct(plain, 95):.1f} ms, "
          f"max {max(plain):.1f} ms over {len(plain)}", flush=True)
    w.browser.filters.pick_judges("checker", "spatial.geneval")
    wait(app, 0.5)
    shown = m.total
    filt = moves(app, w, n_moves)
    print(f"RESULT moves with the filter checker (live) ≠ GenEval ({shown:,} samples at the start): "
          f"p50 {pct(filt, 50):.1f} ms, p95 {pct(filt, 95):.1f} ms, max {max(filt):.1f} ms; "
          f"the table's query p95 {pct([m.last_query_ms], 95):.1f} ms at the last", flush=True)
    w.browser.filters.set_spec(type(w.browser.filters.spec())())
    w.close()
    app.processEvents()
    # a drag the moment the judges' worker starts
    w2 = MainWindow(ask_annotator=lambda: "bench")
    w2.resize(1500, 940)
    w2.show()
    wait(app, 0.2)
    open_on_browse(app, w2, project)
    m2 = w2.browser.model
    t0 = time.perf_counter()
    while not m2.judges.computing and not m2.q.judges and time.perf_counter() - t0 < 60:
        wait(app, 0.005)
    during = moves(app, w2, n_moves, until=lambda: bool(m2.q.judges))
    print(f"RESULT moves while the judges are computed: p50 {pct(during, 50):.1f} ms, p95 {pct(during, 95):.1f} ms, "
          f"max {max(during):.1f} ms over {len(during)} (the worker ended "
          f"{'during' if m2.q.judges else 'after'} them); peak {peak_mb():.0f} MB", flush=True)
    w2.close()
    app.processEvents()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("project", type=Path)
    ap.add_argument("--moves", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args(argv)
    load = os.getloadavg()
    print(f"{args.project} · {args.rounds} round(s) · load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    for r in range(args.rounds):
        print(f"== round {r + 1}", flush=True)
        one_round(args.project, args.moves)
    return 0


if __name__ == "__main__":
    sys.exit(main())
