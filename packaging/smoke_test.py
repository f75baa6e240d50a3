"""Smoke-test a built bundle, run from a folder outside the source tree with a clean environment.

    python packaging/smoke_test.py dist/viewer/workstation/workstation [--variant viewer|full]

1. `--help`; the demo project built without the window (`demo --no-gui`); a report of it;
   a generation job and a detection job (their worker process is the bundle itself).
2. The window, offscreen, on the demo: the first pair is shown, one item is labelled with the
   P key, a screenshot of the window is saved, and the label is read back from the project.
3. Nothing may come from the source tree: every module the window loaded lives in the bundle
   (checked inside the running app), and no run is given PYTHONPATH or the source folder as
   its working directory.
4. The variant: a `viewer` bundle has no torch / diffusers / transformers; a `full` bundle has
   them. The bundle's size is printed.

Prints one `SMOKE …` line per step and `bundle smoke test passed`; exits non-zero on failure.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent
ML = ("torch", "diffusers", "transformers")

DRIVER = textwrap.dedent('''
    # runs inside the bundled window (WORKSTATION_TEST_DRIVER): app, window, state are given
    import importlib.util, os, sys
    from pathlib import Path
    from PySide6.QtCore import QEvent, Qt, QTimer
    from PySide6.QtGui import QKeyEvent

    out = Path(os.environ["SMOKE_OUT"])
    source = Path(os.environ["SMOKE_SOURCE_TREE"]).resolve()

    def fail(msg):
        print("SMOKE-FAIL " + msg, flush=True)
        os._exit(4)

    def step():
        if window.spatial.dataset is None or window.spatial.dataset.n == 0:
            fail("the demo project did not load")
        window.spatial.set_annotator("smoke")
        window.method_views["spatial"].review_from_browse(window, 0)
        app.processEvents()
        row = window.spatial.current
        sid = str(window.spatial.dataset.samples.sample_id[row])
        target = app.focusWidget() or window
        for kind in (QEvent.KeyPress, QEvent.KeyRelease):
            app.sendEvent(target, QKeyEvent(kind, Qt.Key_P, Qt.NoModifier, "p"))
        app.processEvents()
        from workstation.methods.spatial.store import SpatialStore
        labels = {r.sample_id: r.verdict for r in SpatialStore(window.spatial.project).latest_labels("smoke")}
        if labels.get(sid) != "PASS":
            fail(f"the P key did not label {sid}: {labels}")
        shot = out / "smoke_window.png"
        if not window.grab().save(str(shot)) or shot.stat().st_size < 10000:
            fail("no screenshot")
        bundle = Path(sys.executable).resolve().parent  # dist/<variant>/workstation may lie in the checkout
        def from_source_tree(f):
            p = Path(f).resolve()
            return p.is_relative_to(source) and not p.is_relative_to(bundle)
        from_source = sorted(name for name, m in list(sys.modules.items())
                             if isinstance(getattr(m, "__file__", None), str) and os.path.isabs(m.__file__)
                             and from_source_tree(m.__file__))
        if from_source:
            fail("imported from the source tree: " + ", ".join(from_source[:10]))
        ml = {n: importlib.util.find_spec(n) is not None for n in ("torch", "diffusers", "transformers")}
        print(f"SMOKE-WINDOW labelled={sid} screenshot={shot} frozen={getattr(sys, 'frozen', False)} "
              f"modules={len(sys.modules)} ml={','.join(n for n, ok in ml.items() if ok) or 'none'}", flush=True)
        window.close()
        app.quit()

    def guarded():
        try:
            step()
        except BaseException:
            import traceback
            traceback.print_exc()
            fail("the window step raised")

    QTimer.singleShot(200, guarded)
''')


def run(exe: str, *args: str, cwd: Path, timeout: int = 600, **extra_env: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(QT_QPA_PLATFORM="offscreen", PYTHONNOUSERSITE="1", HF_HUB_OFFLINE="1", **extra_env)
    t0 = time.perf_counter()
    r = subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=str(cwd))
    if r.returncode != 0:
        sys.exit(f"FAILED ({r.returncode}): {exe} {' '.join(args)}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    print(f"SMOKE {' '.join(args[:2])}: ok in {time.perf_counter() - t0:.1f} s", flush=True)
    return r.stdout


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("exe", help="the bundle's executable, e.g. dist/viewer/workstation/workstation")
    ap.add_argument("--variant", choices=("viewer", "full"), default="viewer")
    ap.add_argument("--screenshot", type=Path, help="also copy the window's screenshot here")
    args = ap.parse_args()
    exe = str(Path(args.exe).resolve())
    bundle = Path(exe).parent
    if bundle.resolve().is_relative_to(SOURCE / "workstation") or bundle.resolve().is_relative_to(SOURCE / "ui"):
        sys.exit("FAILED: the executable lies inside the source packages")
    with tempfile.TemporaryDirectory(prefix="workstation-smoke-") as tmp_s:
        tmp = Path(tmp_s)  # every run starts here: nothing can be found through the current folder
        out = run(exe, "--help", cwd=tmp)
        assert "import-sbuc" in out and "demo" in out, out
        proj = tmp / "demo"
        print(run(exe, "demo", "--project", str(proj), "--no-gui", "--pairs", "10", "--seeds", "2", cwd=tmp)
              .strip().splitlines()[-1])
        run(exe, "report", "--project", str(proj), "--out", str(tmp / "report"), cwd=tmp)
        assert (tmp / "report" / "index.html").is_file()
        # a generation job: its worker process is the bundle itself (`jobs worker`)
        gen = tmp / "gen"
        run(exe, "generate", "--project", str(gen), "--suite", "builtin", "--pairs", "1", "--model", "procedural",
            "--seeds", "1", cwd=tmp)
        run(exe, "detect", "--project", str(gen), "--detector", "scene", "--evaluate", cwd=tmp)
        assert len(list((gen / "images").rglob("*.png"))) == 4, "the generation job made no images"
        # the window: open the demo, label one item, screenshot, no import from the source tree
        driver = tmp / "driver.py"
        driver.write_text(DRIVER, encoding="utf-8")
        out = run(exe, "gui", "--project", str(proj), cwd=tmp, timeout=300, WORKSTATION_TEST_DRIVER=str(driver),
                  WORKSTATION_SETTINGS=str(tmp / "settings.ini"), SMOKE_OUT=str(tmp),
                  SMOKE_SOURCE_TREE=str(SOURCE))
        line = next((ln for ln in out.splitlines() if ln.startswith("SMOKE-WINDOW")), None)
        if line is None:
            sys.exit(f"FAILED: the window did not report\n{out[-3000:]}")
        print(line)
        if "frozen=True" not in line:
            sys.exit("FAILED: the window did not run from the bundle")
        ml = line.rsplit("ml=", 1)[1]
        if args.variant == "viewer" and ml != "none":
            sys.exit(f"FAILED: the viewer bundle holds model libraries ({ml})")
        if args.variant == "full" and ml != ",".join(ML):
            sys.exit(f"FAILED: the full bundle lacks model libraries (has {ml})")
        if args.screenshot is not None:
            args.screenshot.parent.mkdir(parents=True, exist_ok=True)
            args.screenshot.write_bytes((tmp / "smoke_window.png").read_bytes())
    size = folder_size(bundle)
    print(f"SMOKE size: {args.variant} bundle {bundle} is {size / 2**20:.0f} MiB")
    print("bundle smoke test passed")


if __name__ == "__main__":
    main()
