"""Benchmark: the auditor's screen. Prints figures; asserts nothing but that torch stays unloaded.

    .venv/bin/python tests/benchmarks/bench_gui.py [--n 100000] [--images 120] [--work DIR]

1. cold start: `python main.py gui` as a new process until its window is shown and
   interactive (the app prints READY, then quits): empty window, the SpatialBench-UC fixture
   project (if ../shared is there) and the N-sample synthetic project. Target ≤ 1.5 s to an
   interactive window; `torch` must not be in sys.modules. The synthetic project is opened
   --first-opens times with its detection cache emptied before each (the first open after a
   change: it scans the detections and writes the cache, in `WORK/cache` unless
   WORKSTATION_CACHE_DIR says otherwise), then --opens times from the cache. Each start is
   timed from the process's start to its READY line (target at 1M: ≤ 5 s) and to its exit, with
   the CPU seconds the process used (which other work on the machine does not stretch).
2. next-pair latency: Right arrow → pair viewer showing the next pair (two 512² PNGs decoded,
   overlays, seed strip, table selection) and painted, with prefetch and an auditor's dwell
   of 150 ms per pair; and the same with prefetch off. Target p95 ≤ 50 ms.
3. slider move → all views updated: `AppState.set_config` with a new margin and t_det on the
   N-sample project (checker re-evaluation, live table re-registered and re-queried, pair viewer
   and status bar refreshed, events processed and painted), then with a new margin alone (one
   slider dragged). Target p95 ≤ 100 ms.
4. resident memory with the N-sample project open: after the open, right after the last of 30
   moves, and once the drag has rested (the window trims its heap, `ui/idle_trim.py`), with the
   process's peak. Targets ≤ 500 MB at 100k, ≤ 1.2 GB (peak ≤ 2 GB) at 1M.
5. open and close the N-sample project --cycles times in one window: resident memory after each
   open and close, and after each close what Python's small-object arenas and the C heap hold.
   Target: no growth.

Like the window's process (`main.py gui`), the benchmark restarts itself with Python's objects in
the C library's heap (`workstation.util.memory.restart_with_c_allocator`); PYTHONMALLOC=pymalloc
runs it on Python's own allocator instead, for comparison.

Projects are built once under --work (default: a temp folder) and reused when present.
`--busy-core` keeps one core busy with a second process for the whole run (an auditor's machine
running another job); the load averages seen are printed with the figures.
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from workstation.methods.spatial.store import SpatialStore
from workstation.methods.spatial.store import add_dataset as add_spatial_dataset
from workstation.util.memory import glibc, python_allocator, restart_with_c_allocator

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SHARED = ROOT.parent / "shared" / "fixtures" / "spatialbench_uc"

VOCAB = np.array(["person", "dog", "cat", "car", "bicycle", "chair", "table", "bottle", "cup", "bird",
                  "horse", "sheep", "cow", "bench", "clock", "vase", "laptop", "book", "pizza", "cake"],
                 dtype=object)
RELS = ("left_of", "right_of", "above", "below")
INV = {0: 1, 1: 0, 2: 3, 3: 2}


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q))


# ---------------------------------------------------------------------------------------------
# synthetic projects
# ---------------------------------------------------------------------------------------------

FLOAT64 = False  # --float64-detections: scores and boxes with float64 digits (an imported run's)


def _f32(a: np.ndarray) -> np.ndarray:
    return a if FLOAT64 else a.astype(np.float32).astype(np.float64)


def big_project_name(n: int) -> str:
    return f"synthetic_{n}" if FLOAT64 else f"synthetic_{n}_f32"


def synthetic_dataset(n: int, seed: int = 0, image_paths: list[str] | None = None):
    """n samples (K = 4 seeds per prompt, prompts in counterfactual twin pairs), 512×512, with
    3 primary detections (A, B, a distractor), 2 secondary and A / B on 4 perturbed variants."""
    from workstation.perturb import DEFAULT_PERTURBATIONS
    from workstation.dataset import Dataset, Detections, Samples
    from workstation.methods.spatial.data import spatial_prompts
    from workstation.types import ORIGINAL_NAME

    rng = np.random.default_rng(seed)
    W = H = 512.0
    n_prompts = (n + 3) // 4
    n_prompts += n_prompts % 2
    pair = np.arange(n_prompts) // 2
    twin_first = (np.arange(n_prompts) % 2) == 0
    base_rel = rng.integers(0, 4, n_prompts // 2)
    base_a = rng.integers(0, len(VOCAB), n_prompts // 2)
    base_b = (base_a + rng.integers(1, len(VOCAB), n_prompts // 2)) % len(VOCAB)
    p_rel = np.where(twin_first, base_rel[pair], [INV[int(r)] for r in base_rel[pair]]).astype(np.int8)
    p_a = np.where(twin_first, base_a[pair], base_b[pair])
    p_b = np.where(twin_first, base_b[pair], base_a[pair])
    pid = np.array([f"p{i:06d}" for i in range(n_prompts)], dtype=object)
    cf = np.array([f"p{(i + 1 if i % 2 == 0 else i - 1):06d}" for i in range(n_prompts)], dtype=object)
    text = np.array([f"a photo of a {VOCAB[a]} {RELS[r].replace('_', ' ')} a {VOCAB[b]} #{i}"
                     for i, (a, r, b) in enumerate(zip(p_a, p_rel, p_b))], dtype=object)
    prompts = spatial_prompts(pid, text, p_rel, VOCAB[p_a], VOCAB[p_b], counterfactual_id=cf,
                              pair_id=[f"pair{i:06d}" for i in pair], suite="synthetic")
    s_prompt = np.arange(n) // 4
    a = p_a[s_prompt]
    b = p_b[s_prompt]
    # primary: A, B, distractor
    si = np.repeat(np.arange(n), 3)
    slot = np.tile(np.arange(3), n)
    lab = np.where(slot == 0, a[si], np.where(slot == 1, b[si], rng.integers(0, len(VOCAB), len(si))))
    score = np.round(rng.uniform(0.15, 1.0, len(si)), 3)
    cx = rng.uniform(40, W - 40, len(si))
    cy = rng.uniform(40, H - 40, len(si))
    bw = W * rng.uniform(0.05, 0.4, len(si))
    bh = H * rng.uniform(0.05, 0.4, len(si))
    x1, x2 = np.clip(cx - bw / 2, 0, W), np.clip(cx + bw / 2, 0, W)
    y1, y2 = np.clip(cy - bh / 2, 0, H), np.clip(cy + bh / 2, 0, H)
    ab = np.flatnonzero(slot < 2)
    # secondary: jittered copies of A and B
    j = lambda m, s: rng.normal(0, s, m)  # noqa: E731
    s_x1 = np.clip(x1[ab] + j(len(ab), 5), 0, W)
    s_y1 = np.clip(y1[ab] + j(len(ab), 5), 0, H)
    s_x2 = np.clip(np.maximum(x2[ab] + j(len(ab), 5), s_x1 + 1), 0, W)
    s_y2 = np.clip(np.maximum(y2[ab] + j(len(ab), 5), s_y1 + 1), 0, H)
    # perturbed variants of A and B
    nv = len(DEFAULT_PERTURBATIONS)
    rep = np.repeat(ab, nv)
    var = np.tile(np.arange(1, nv + 1), len(ab))
    p_x1 = np.clip(x1[rep] + j(len(rep), 3), 0, W)
    p_y1 = np.clip(y1[rep] + j(len(rep), 3), 0, H)
    p_x2 = np.clip(np.maximum(x2[rep] + j(len(rep), 3), p_x1 + 1), 0, W)
    p_y2 = np.clip(np.maximum(y2[rep] + j(len(rep), 3), p_y1 + 1), 0, H)
    cat = np.concatenate
    if not FLOAT64:  # scores and boxes as the detectors give them: float32 values
        score, x1, y1, x2, y2, s_x1, s_y1, s_x2, s_y2, p_x1, p_y1, p_x2, p_y2 = (
            a.astype(np.float32).astype(np.float64)
            for a in (score, x1, y1, x2, y2, s_x1, s_y1, s_x2, s_y2, p_x1, p_y1, p_x2, p_y2))
    sample_idx = cat([si, si[ab], si[rep]]).astype(np.int64)
    order = np.argsort(sample_idx, kind="stable")
    dets = Detections(
        sample_idx=sample_idx[order],
        source=cat([np.zeros(len(si)), np.ones(len(ab)), np.zeros(len(rep))]).astype(np.int8)[order],
        variant=cat([np.zeros(len(si)), np.zeros(len(ab)), var]).astype(np.int16)[order],
        label=VOCAB[cat([lab, lab[ab], lab[rep]])][order],
        score=_f32(cat([score, np.clip(score[ab] * 0.9 + 0.05, 0, 1),
                        np.clip(score[rep] + j(len(rep), 0.03), 0, 1)]))[order],
        x1=cat([x1, s_x1, p_x1])[order], y1=cat([y1, s_y1, p_y1])[order],
        x2=cat([x2, s_x2, p_x2])[order], y2=cat([y2, s_y2, p_y2])[order])
    paths = image_paths if image_paths is not None else [""] * n
    samples = Samples(
        sample_id=np.array([f"s{i:07d}" for i in range(n)], dtype=object),
        run_id=np.full(n, "synthetic", dtype=object), prompt_id=pid[s_prompt],
        seed=(np.arange(n) % 4).astype(np.int64),
        width=np.full(n, W), height=np.full(n, H), image_path=np.array(paths, dtype=object),
        has_secondary=np.ones(n, bool), has_perturbed=np.ones(n, bool))
    used = np.unique(s_prompt)
    names = (ORIGINAL_NAME,) + tuple(p.name for p in DEFAULT_PERTURBATIONS)
    return Dataset(samples, dets, prompts.take(used), names)


def build_project(folder: Path, n: int, images: bool = False, distinct: int | None = None) -> Path:
    """A synthetic project of n samples; with `images`, 512² PNGs on disk: one per sample, or
    `distinct` files that the samples share in turn (a large project with real images)."""
    from workstation.methods.spatial.config import CheckerConfig
    from workstation.store import DB_NAME, Project

    if (folder / DB_NAME).is_file():
        return folder
    m = min(n, distinct) if distinct else n
    paths = [f"images/s{i % m:07d}.png" for i in range(n)] if images else None
    ds = synthetic_dataset(n, image_paths=paths)
    p = Project.create(folder)
    try:
        with p.transaction():
            p.samples.add_run("synthetic", method="synthetic")
            p.samples.add_dataset(ds)
            SpatialStore(p).save_config(CheckerConfig(name="bench"))
        p.set_setting("annotator", "bench")
    finally:
        p.close()
    if images:
        write_images(folder, ds, m)
    return folder


def write_images(folder: Path, ds, count: int | None = None) -> None:
    """512² PNGs with photo-like entropy (blurred noise; about the size of a generated photo) and
    the A / B boxes painted in."""
    import cv2

    rng = np.random.default_rng(1)
    d = ds.detections
    for i in range(ds.n if count is None else count):
        noise = rng.integers(0, 255, (512, 512, 3), dtype=np.uint8)
        img = cv2.GaussianBlur(noise, (0, 0), 1.4)  # ~400 KB per PNG, like a generated photo
        img = cv2.addWeighted(img, 0.6, np.full_like(img, (150, 170, 190)), 0.4, 0)
        rows = np.flatnonzero((d.sample_idx == i) & (d.source == 0) & (d.variant == 0))[:2]
        for k, r in enumerate(rows):
            cv2.rectangle(img, (int(d.x1[r]), int(d.y1[r])), (int(d.x2[r]), int(d.y2[r])),
                          (60, 60, 200) if k == 0 else (200, 90, 40), -1)
        out = folder / str(ds.samples.image_path[i])
        out.parent.mkdir(parents=True, exist_ok=True)
        cv2.imwrite(str(out), img)


def build_fixture_project(folder: Path) -> Path | None:
    from workstation.store import DB_NAME, Project

    if (folder / DB_NAME).is_file():
        return folder
    if not (SHARED / "sd15_boxdiff" / "eval" / "per_sample.jsonl").is_file():
        return None
    from workstation.methods.spatial.config import CheckerConfig
    from workstation.methods.spatial.sbuc import parse_run

    parsed = parse_run(SHARED / "sd15_boxdiff", SHARED / "v1.0.1" / "prompts.jsonl")
    p = Project.create(folder)
    try:
        with p.transaction():
            p.samples.add_run(parsed.run_id, method=parsed.run_id)
            add_spatial_dataset(p, parsed.dataset)
            SpatialStore(p).save_config(parsed.config or CheckerConfig())
        p.set_setting("annotator", "bench")
    finally:
        p.close()
    return folder


# ---------------------------------------------------------------------------------------------
# 1. cold start
# ---------------------------------------------------------------------------------------------

def ready_field(line: str, name: str) -> float:
    """A number of the app's READY line (`name=value`), NaN when absent."""
    for part in line.split():
        if part.startswith(name + "="):
            return float(part.split("=", 1)[1])
    return float("nan")


START_DEADLINE_S = 300.0  # one cold start, from its process's start to its exit


def cold_start(project: Path | None, settings: Path, repeat: int = 3,
               before_each: Callable[[], object] | None = None, checkout: Path = ROOT,
               extra_env: dict[str, str] | None = None,
               cpu: list[float] | None = None) -> tuple[list[float], list[float], list[str]]:
    """`repeat` cold starts of `checkout`'s `main.py gui`: (seconds from process start until the
    app printed READY — its window shown, the project's samples shown and their verdicts in —,
    whole-process wall times, the READY lines). `before_each()` runs before each start, outside
    the timing; `extra_env` is added to the environment; `cpu` (when given) gets each process's
    CPU seconds, user and system, from its start to its exit (what other work on the machine
    does not stretch)."""
    env = dict(os.environ, WORKSTATION_EXIT_WHEN_READY="1", WORKSTATION_SETTINGS=str(settings), **(extra_env or {}))
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    cmd = [sys.executable, "main.py", "gui"] + (["--project", str(project)] if project else [])
    readies: list[float] = []
    walls: list[float] = []
    lines: list[str] = []
    for _ in range(repeat):
        if before_each is not None:
            before_each()
        with tempfile.TemporaryFile("w+") as err:  # a file, so that a chatty stderr cannot block the pipe
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            proc = subprocess.Popen(cmd, cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
            # an app that never exits (a dialog waiting on the offscreen screen) is killed: its
            # output ends, and the start counts as failed
            deadline = threading.Timer(START_DEADLINE_S, proc.kill)
            deadline.start()
            ready_at: float | None = None
            out: list[str] = []
            assert proc.stdout is not None
            try:
                for ln in proc.stdout:  # the READY line as it is printed, before the process winds down
                    if ready_at is None and ln.startswith("READY"):
                        ready_at = time.perf_counter() - t0
                    out.append(ln.rstrip("\n"))
                rc = proc.wait(timeout=START_DEADLINE_S)
            finally:
                deadline.cancel()
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)  # this process reaped: its CPU counts
            if cpu is not None:
                cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            err.seek(0)
            ready = [ln for ln in out if ln.startswith("READY")]
            if rc != 0 or ready_at is None:
                why = f" (killed: no exit within {START_DEADLINE_S:.0f} s)" if wall >= START_DEADLINE_S else ""
                raise SystemExit(f"the app did not start: rc={rc}{why}\n" + "\n".join(out) + f"\n{err.read()}")
        lines.append(ready[-1])
        assert "torch=False" in ready[-1], f"torch was imported at start: {ready[-1]}"
        readies.append(ready_at)
        walls.append(wall)
    return readies, walls, lines


# ---------------------------------------------------------------------------------------------
# 2 and 3: in-process measurements
# ---------------------------------------------------------------------------------------------

def wait(app, seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.005)


def next_pair_latency(app, folder: Path, steps: int, dwell: float, prefetch: bool) -> list[float]:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from ui import main_window
    from ui.main_window import MainWindow

    main_window.PREFETCH_AHEAD = 4 if prefetch else 0
    w = MainWindow(ask_annotator=lambda: "bench")
    w.resize(1500, 940)
    w.show()
    w.activateWindow()
    wait(app, 0.2)
    w.open_project(folder)
    w.method_views["spatial"].review_from_browse(w, 0)
    wait(app, 0.3)
    out = []
    for _ in range(steps):
        if not prefetch:
            w.images.clear()
        wait(app, dwell)
        t0 = time.perf_counter()
        QTest.keyClick(w, Qt.Key_Right)
        app.processEvents()  # layout and paint of the new pair
        out.append((time.perf_counter() - t0) * 1000)
    w.close()
    app.processEvents()
    return out


def rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def peak_mb() -> float:
    """The process's peak resident memory so far (VmHWM; Linux), NaN elsewhere."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


@functools.cache
def _allocator_probes() -> tuple[int | None, Any]:
    """A scratch file for ``sys._debugmallocstats`` and glibc's ``mallinfo2``, made once: a
    new file object, ctypes structure or library handle per call would leave objects alive
    in the very arenas being counted."""
    import ctypes

    fd: int | None = None
    try:
        with tempfile.TemporaryFile("w+b") as tf:
            fd = os.dup(tf.fileno())  # the unnamed file lives on through this descriptor
    except OSError:
        pass

    class _Info(ctypes.Structure):
        _fields_ = [(f, ctypes.c_size_t) for f in
                    ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                     "fordblks", "keepcost")]
    try:
        mallinfo2 = glibc().mallinfo2
        mallinfo2.restype = _Info
    except AttributeError:  # not glibc
        mallinfo2 = None
    return fd, mallinfo2


def allocator_split() -> tuple[float, float]:
    """(MB in Python's small-object arenas, MB in use in the C heap) of this process: where the
    resident memory left after a close lives. The arenas come from ``sys._debugmallocstats``
    (CPython; NaN elsewhere), the C heap from glibc's ``mallinfo2`` (NaN elsewhere)."""
    fd, mallinfo2 = _allocator_probes()
    arenas = heap = float("nan")
    if fd is not None and hasattr(sys, "_debugmallocstats"):
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        saved = os.dup(2)
        try:
            sys.stderr.flush()
            os.dup2(fd, 2)
            sys._debugmallocstats()  # writes to the C-level stderr
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        os.lseek(fd, 0, os.SEEK_SET)
        text = b""
        while chunk := os.read(fd, 1 << 16):
            text += chunk
        for line in text.splitlines():
            if line.startswith(b"# arenas allocated current"):
                arenas = int(line.split(b"=")[1]) * 1.0  # 1 MiB arenas (CPython 3.10+, 64-bit)
                break
    if mallinfo2 is not None:
        info = mallinfo2()
        heap = (info.uordblks + info.hblkhd) / 2**20
    return arenas, heap


def open_close_cycles(app, folder: Path, cycles: int) -> list[tuple[float, float, float, float]]:
    """(resident after open, resident after close, Python arenas MB, C heap in use MB after close)
    of each of `cycles` open / close rounds of the same project in one window."""
    import gc

    from workstation.store import release_freed_memory

    from ui.main_window import MainWindow

    w = MainWindow(ask_annotator=lambda: "bench")
    w.resize(1500, 940)
    w.show()
    wait(app, 0.2)
    out = []
    for _ in range(cycles):
        w.open_project(folder)
        app.processEvents()
        wait(app, 0.3)
        after_open = rss_mb()
        w.close_project()
        app.processEvents()
        wait(app, 0.3)
        gc.collect()
        release_freed_memory()
        out.append((after_open, rss_mb(), *allocator_split()))
    w.close()
    app.processEvents()
    return out


def slider_moves(app, folder: Path, moves: int, with_calibration: bool, filtered: bool = False,
                 one_slider: bool = False) -> dict[str, object]:
    """`moves` config changes on `folder`'s project, each timed from `set_config` to the views
    updated and painted; before each, the checker alone times a change of the same sliders to
    values the move does not use. Each move
    changes the margin and t_det together (the selection stage recomputed too), or with
    `one_slider` the margin alone, as dragging one slider does. Every config is new to the
    checker's stage caches."""
    from PySide6.QtCore import Qt

    from workstation.methods.spatial.checker import evaluate

    from ui.main_window import MainWindow
    from ui.methods.spatial.sample_table import FilterSpec

    w = MainWindow(ask_annotator=lambda: "bench")
    w.resize(1500, 940)
    w.show()
    wait(app, 0.2)
    t0 = time.perf_counter()
    w.open_project(folder)
    app.processEvents()
    open_s = time.perf_counter() - t0
    rss_open = rss_mb()
    st = w.spatial
    if with_calibration:
        w.show_tab("Calibration")
        wait(app, 0.5)
    else:
        w.method_views["spatial"].review_from_browse(w, 0)
        w.show_tab("Browse")
        if filtered:  # a filter and a sort that depend on the verdicts: every move re-queries
            w.browser.filters.set_spec(FilterSpec(verdicts=["UNDECIDABLE"]))
            w.browser.table.sortByColumn(7, Qt.DescendingOrder)
        wait(app, 0.3)
    if one_slider:  # margins never repeated: each move new to the caches
        margins = [0.02 + 0.2 * i / moves for i in range(moves)]
    else:
        margins = [0.02 + 0.2 * (i % 20) / 20 for i in range(moves)]
    total, ev_only, table = [], [], []
    for m in margins:
        t_move = round(0.2 + (m % 0.05), 4)  # with the margin, a new t_det: a new config (no cache hit)
        # the checker alone, on a config the move below does not use, changed as the move changes
        # it: the margin alone, or the margin and t_det (its selection stage runs too)
        alone = {"margin": round(m, 4) + 0.00005}
        if not one_slider:
            alone["t_det"] = t_move + 0.00003
        t1 = time.perf_counter()
        evaluate(st.dataset, st.config.replace(**alone))
        ev_only.append((time.perf_counter() - t1) * 1000)
        cfg = st.config.replace(margin=round(m, 4))
        if not one_slider:
            cfg = cfg.replace(t_det=t_move)
        t0 = time.perf_counter()
        st.set_config(cfg)
        app.processEvents()
        total.append((time.perf_counter() - t0) * 1000)
        table.append(w.browser.model.last_query_ms)
        wait(app, 0.05)
    rss_after = rss_mb()
    trims = st.idle_trim.count
    wait(app, st.idle_trim.timer.interval() / 1000 + 0.3)  # the drag over: the window trims its heap
    res = {"open_s": open_s, "rss_open": rss_open, "rss_after": rss_after, "rss_rest": rss_mb(),
           "rested": st.idle_trim.count > trims, "peak": peak_mb(), "total": total, "evaluate": ev_only,
           "table": table, "n": st.dataset.n, "dets": len(st.dataset.detections)}
    w.close()
    app.processEvents()
    return res


def slider_part(work: Path, n: int, moves: int, cycles: int = 10) -> None:
    """Sections 3 and 4, in a fresh process (so that the image caches of section 2 do not
    count in the resident memory)."""
    from ui import app as ui_app, theme

    app = ui_app.create_application([])  # as main.py gui makes it (the allocator tuned)
    theme.apply_theme(app, "dark")
    big = work / big_project_name(n)
    print(f"\n== 3. slider move -> all views updated ({n:,} samples; load {os.getloadavg()[0]:.2f}) ==")
    r = slider_moves(app, big, moves, with_calibration=False)
    tot = r["total"]
    print(f"  project: {r['n']:,} samples, {r['dets']:,} detections; opened in {r['open_s']:.2f} s")
    print(f"  checker evaluate alone (margin and t_det changed, as by the moves): p50 {pct(r['evaluate'], 50):.1f} ms, "
          f"p95 {pct(r['evaluate'], 95):.1f} ms")
    print(f"  table refresh (re-register; rows patched in place): p50 {pct(r['table'], 50):.1f} ms, "
          f"p95 {pct(r['table'], 95):.1f} ms")
    print(f"  Browse tab shown (table, pair viewer, status bar): set_config -> views updated and painted "
          f"p50 {pct(tot, 50):.1f} ms, p95 {pct(tot, 95):.1f} ms, max {max(tot):.1f} ms over {len(tot)} moves")
    print("  target p95 <= 100 ms")
    print(f"\n== 4. resident memory with the {n:,}-sample project open ==")
    print(f"  RSS after open {r['rss_open']:.0f} MB, after {len(tot)} slider moves {r['rss_after']:.0f} MB "
          f"(the last move's temporaries freed but not yet handed back), "
          f"{r['rss_rest']:.0f} MB once the drag has rested ("
          f"{'the window trimmed its heap' if r['rested'] else 'no trim ran'}) "
          f"(target <= 500 MB at 100k, <= 1.2 GB at 1M); process peak while opening (VmHWM) {r['peak']:.0f} MB "
          "(target <= 2 GB at 1M)")
    r3 = slider_moves(app, big, moves, with_calibration=False, filtered=True)
    tot = r3["total"]
    print(f"  (filtered to UNDECIDABLE and sorted by confidence, so each move re-queries: p50 "
          f"{pct(tot, 50):.1f} ms, p95 {pct(tot, 95):.1f} ms; query p95 {pct(r3['table'], 95):.1f} ms)")
    r2 = slider_moves(app, big, moves, with_calibration=True)
    tot = r2["total"]
    print(f"  (with the Calibration tab shown instead, its plots included: p50 {pct(tot, 50):.1f} ms, "
          f"p95 {pct(tot, 95):.1f} ms)")
    print("  the moves above change margin and t_det together (the checker's selection stage runs too);")
    print("  one slider dragged, the margin alone (each value new):")
    for label, calibration, filtered in (("Browse tab", False, False), ("filtered and sorted", False, True),
                                         ("Calibration tab", True, False)):
        r1 = slider_moves(app, big, moves, with_calibration=calibration, filtered=filtered, one_slider=True)
        print(f"    {label}: p50 {pct(r1['total'], 50):.1f} ms, p95 {pct(r1['total'], 95):.1f} ms; "
              f"checker alone p50 {pct(r1['evaluate'], 50):.1f} ms, p95 {pct(r1['evaluate'], 95):.1f} ms")
    print(f"\n== 5. open and close the {n:,}-sample project repeatedly in one process ==")
    rounds = open_close_cycles(app, big, cycles)
    print("  RSS after open / after close: " + ", ".join(f"{r[0]:.0f} / {r[1]:.0f}" for r in rounds)
          + " MB (target: no growth)")
    pymalloc = python_allocator() == "pymalloc"  # else Python's objects are in the C heap: no arenas
    if pymalloc:
        print("  after close, Python's small-object arenas / C heap in use: "
              + ", ".join(f"{r[2]:.0f} / {r[3]:.0f}" for r in rounds) + " MB")
    else:
        print("  after close, C heap in use (Python's objects included): "
              + ", ".join(f"{r[3]:.0f}" for r in rounds) + " MB")
    if len(rounds) >= 4:
        half = len(rounds) // 2
        k = len(rounds) - half

        def slope(i: int) -> float:
            return (rounds[-1][i] - rounds[half - 1][i]) / k
        print(f"  growth over the last {k} rounds, MB a round: resident after open {slope(0):+.1f}, after close "
              f"{slope(1):+.1f}, of which " + (f"Python's arenas {slope(2):+.1f} and " if pymalloc else "")
              + f"the C heap {slope(3):+.1f}")
    assert "torch" not in sys.modules


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # in-process parts on the allocator the window's process uses (main.py gui);
        restart_with_c_allocator()  # PYTHONMALLOC=pymalloc keeps Python's own, for comparison
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="samples in the large synthetic project")
    ap.add_argument("--images", type=int, default=120, help="512² images for the next-pair benchmark")
    ap.add_argument("--steps", type=int, default=100, help="next-pair steps")
    ap.add_argument("--pairs-n", type=int, default=0,
                    help="also time next pair on a project of this many samples sharing the --images PNGs")
    ap.add_argument("--moves", type=int, default=30, help="slider moves")
    ap.add_argument("--opens", type=int, default=3, help="cold starts of each project (cache in place)")
    ap.add_argument("--first-opens", type=int, default=3,
                    help="cold starts of the large project with its detection cache removed before each")
    ap.add_argument("--cycles", type=int, default=10, help="open / close rounds of the large project")
    ap.add_argument("--work", type=Path, default=None, help="folder for the projects (kept)")
    ap.add_argument("--float64-detections", action="store_true",
                    help="the large project's scores and boxes with float64 digits (default: float32 "
                         "values, as the detectors give them); loaded in 8 bytes a value instead of 4")
    ap.add_argument("--part", choices=("all", "slider", "starts"), default="all",
                    help="starts: section 1 alone (the cold starts)")
    ap.add_argument("--busy-core", action="store_true", help="a second process keeps one core busy throughout")
    args = ap.parse_args(argv)
    import machine_load

    print(f"{'one core kept busy by a second process; ' if args.busy_core else ''}{machine_load.describe()}", flush=True)
    with machine_load.one_core_busy(args.busy_core) as busy:
        rc = _main(args)
    if args.busy_core:
        print(busy.summary())
    print(f"after: {machine_load.describe()}")
    return rc


def _main(args: argparse.Namespace) -> int:
    global FLOAT64
    FLOAT64 = bool(args.float64_detections)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    work = args.work or Path(tempfile.mkdtemp(prefix="bench_gui_"))
    work.mkdir(parents=True, exist_ok=True)
    settings = work / "settings.ini"
    os.environ["WORKSTATION_SETTINGS"] = str(settings)
    # the detection cache in a folder of the benchmark's own (subprocesses inherit it)
    os.environ.setdefault("WORKSTATION_CACHE_DIR", str(work / "cache"))
    cache_dir = Path(os.environ["WORKSTATION_CACHE_DIR"]) / "detections"
    if args.part == "slider":
        slider_part(work, args.n, args.moves, args.cycles)
        return 0
    first_opens, opens = args.first_opens, args.opens
    print(f"platform {os.environ['QT_QPA_PLATFORM']}, {os.cpu_count()} cores, Python objects in "
          f"{python_allocator()}, projects in {work}")
    t = time.perf_counter()
    big = build_project(work / big_project_name(args.n), args.n)
    pics = build_project(work / f"images_{args.images}", args.images, images=True)
    fixture = build_fixture_project(work / "fixture")
    pairs_big = (build_project(work / f"pairs_{args.pairs_n}_{args.images}", args.pairs_n, images=True,
                               distinct=args.images) if args.pairs_n else None)
    print(f"projects ready in {time.perf_counter() - t:.1f} s")

    print(f"\n== 1. cold start to an interactive window (new process, wall clock; load {os.getloadavg()[0]:.2f}) ==")
    for name, proj in (("empty window", None), ("fixture project (800 samples)", fixture),
                       (f"synthetic project ({args.n:,} samples)", big)):
        if name.startswith("fixture") and proj is None:
            print(f"  {name}: skipped (../shared not found)")
            continue
        if name.startswith("synthetic"):
            # the first open after a change of the project scans its detections and writes the
            # detection cache (store.detection_cache); the opens after it map the cached columns
            cpu: list[float] = []
            readies, walls, lines = cold_start(proj, settings, repeat=first_opens,
                                               before_each=lambda: shutil.rmtree(cache_dir, ignore_errors=True),
                                               cpu=cpu)
            print(f"  {name}, first open (no cache entry: scans and writes it), {len(lines)} runs: READY "
                  f"from process start median {statistics.median(readies):.2f} s (min {min(readies):.2f}, "
                  f"max {max(readies):.2f}); whole process median {statistics.median(walls):.2f} s, its CPU "
                  f"median {statistics.median(cpu):.2f} s (min {min(cpu):.2f}, max {max(cpu):.2f}); "
                  "window shown / samples shown / verdicts in, medians from ui.app's import: "
                  + " / ".join(f"{statistics.median(ready_field(ln, k) for ln in lines) / 1000:.2f}"
                               for k in ("window_ms", "project_ms", "verdicts_ms")) + " s")
        cpu = []
        readies, walls, lines = cold_start(proj, settings, repeat=opens, cpu=cpu)
        med = {k: statistics.median(ready_field(ln, k) for ln in lines) / 1000
               for k in ("window_ms", "project_ms", "verdicts_ms")}
        print(f"  {name}: window {med['window_ms']:.2f} s, samples shown {med['project_ms']:.2f} s, verdicts "
              f"in {med['verdicts_ms']:.2f} s (medians of {len(lines)}, from ui.app's import); READY from "
              f"process start median {statistics.median(readies):.2f} s (max {max(readies):.2f}); whole "
              f"process median {statistics.median(walls):.2f} s, max {max(walls):.2f} s, its CPU median "
              f"{statistics.median(cpu):.2f} s   [last: {lines[-1]}]")
    print("  (window: shown and interactive; samples shown: the project loaded in the background and its")
    print("   samples on screen; verdicts in: the checker's verdicts of them evaluated on a worker thread and")
    print("   shown; all from the start of ui.app's import. READY: the same moment seen from the start of")
    print("   the process; the whole process adds its exit. Targets: <= 1.5 s to an interactive window;")
    print("   at 1M samples <= 5 s from process start to the data in.)")
    print("  torch not imported at start: OK")
    if args.part == "starts":
        return 0

    print(f"\n== 2. next-pair latency, 512x512 PNG pairs (Right arrow -> new pair painted; load {os.getloadavg()[0]:.2f}) ==")
    from PySide6.QtWidgets import QApplication

    from ui import theme

    app = QApplication.instance() or QApplication([])
    theme.apply_theme(app, "dark")
    for prefetch in (True, False):
        lat = next_pair_latency(app, pics, args.steps, dwell=0.15, prefetch=prefetch)
        label = "with prefetch (150 ms dwell)" if prefetch else "prefetch off (cold decode)"
        print(f"  {label}: p50 {pct(lat, 50):.1f} ms, p95 {pct(lat, 95):.1f} ms, max {max(lat):.1f} ms "
              f"over {len(lat)} steps")
    if pairs_big is not None:
        for prefetch in (True, False):
            lat = next_pair_latency(app, pairs_big, args.steps, dwell=0.15, prefetch=prefetch)
            label = "with prefetch (150 ms dwell)" if prefetch else "prefetch off (cold decode)"
            print(f"  {args.pairs_n:,}-sample project, its {args.images} PNGs shared in turn, {label}: "
                  f"p50 {pct(lat, 50):.1f} ms, p95 {pct(lat, 95):.1f} ms, max {max(lat):.1f} ms over {len(lat)} steps")
    print("  target p95 <= 50 ms with prefetch")
    sys.stdout.flush()

    subprocess.run([sys.executable, __file__, "--part", "slider", "--work", str(work), "--n", str(args.n),
                    "--moves", str(args.moves), "--cycles", str(args.cycles)] + (["--float64-detections"] if FLOAT64 else []), check=True)
    print(f"\ntorch imported by the UI: {'torch' in sys.modules}")
    assert "torch" not in sys.modules
    return 0


if __name__ == "__main__":
    sys.exit(main())
