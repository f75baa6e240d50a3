"""The window on a real X display, as `.ci/run` checks it after the README's set-up.

    .venv/bin/python packaging/window_check.py [--timeout 600]

Runs `main.py demo` as a newcomer does — the window's start-up check, a small demo project
built, then the window — with Qt's xcb platform (QT_QPA_PLATFORM unset) on the display it is
given, or under a virtual one (`xvfb-run`) where there is none. Inside the window a driver labels
the first item with the P key and reads the label back from the project. A system library the
xcb platform needs and the machine lacks fails here, as it would for a user; the tests, which
run offscreen, cannot see it.

Prints `WINDOW-CHECK ok …` and exits 0, or says what failed and exits 1. Every wait has a
deadline: the whole run (`--timeout`), and the driver inside the window (`DRIVER_DEADLINE_S`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DRIVER_DEADLINE_S = 120

DRIVER = textwrap.dedent(f'''
    # runs inside the window (WORKSTATION_TEST_DRIVER): app, window, state are given
    import os, traceback
    from PySide6.QtCore import QEvent, Qt, QTimer
    from PySide6.QtGui import QKeyEvent

    def fail(msg):
        print("WINDOW-CHECK-FAIL " + msg, flush=True)
        os._exit(4)

    QTimer.singleShot({DRIVER_DEADLINE_S * 1000}, lambda: fail("the window did not finish within {DRIVER_DEADLINE_S} s"))

    def step():
        if app.platformName() != "xcb":
            fail("the window runs on the " + app.platformName() + " platform, not xcb")
        if window.spatial.dataset is None or window.spatial.dataset.n == 0:
            fail("the demo project did not load")
        window.spatial.set_annotator("window-check")
        window.method_views["spatial"].review_from_browse(window, 0)
        # on a real display the window takes the keyboard once the display server made it active
        window.raise_()
        window.activateWindow()
        import time
        until = time.monotonic() + 10
        while app.activeWindow() is not window and time.monotonic() < until:
            app.processEvents()
            time.sleep(0.02)
        if app.activeWindow() is not window:
            fail("the window never became active on the display")
        app.processEvents()
        sid = str(window.spatial.dataset.samples.sample_id[window.spatial.current])
        target = app.focusWidget() or window
        for kind in (QEvent.KeyPress, QEvent.KeyRelease):
            app.sendEvent(target, QKeyEvent(kind, Qt.Key_P, Qt.NoModifier, "p"))
        app.processEvents()
        from workstation.methods.spatial.store import SpatialStore
        labels = {{r.sample_id: r.verdict for r in SpatialStore(window.spatial.project).latest_labels("window-check")}}
        if labels.get(sid) != "PASS":
            fail(f"the P key did not label {{sid}}: {{labels}}")
        print(f"WINDOW-CHECK ok platform={{app.platformName()}} labelled={{sid}} read back=PASS", flush=True)
        window.close()
        app.quit()

    def guarded():
        try:
            step()
        except BaseException:
            traceback.print_exc()
            fail("the driver raised")

    QTimer.singleShot(200, guarded)
''')


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--timeout", type=int, default=600, help="seconds for the whole run (default 600)")
    args = ap.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k != "QT_QPA_PLATFORM"}
    with tempfile.TemporaryDirectory(prefix="window-check-") as tmp_s:
        tmp = Path(tmp_s)
        driver = tmp / "driver.py"
        driver.write_text(DRIVER, encoding="utf-8")
        env.update(WORKSTATION_TEST_DRIVER=str(driver), WORKSTATION_SETTINGS=str(tmp / "settings.ini"),
                   XDG_DATA_HOME=str(tmp / "data"))
        cmd = [sys.executable, str(ROOT / "main.py"), "demo", "--project", str(tmp / "demo"),
               "--method", "spatial", "--pairs", "4", "--seeds", "1"]
        if not env.get("DISPLAY"):
            xvfb = shutil.which("xvfb-run")
            if xvfb is None:
                print("WINDOW-CHECK failed: no display and no xvfb-run (Debian: apt-get install xvfb xauth, or "
                      "`bash packaging/setup.sh --tests` as root)")
                return 1
            cmd = [xvfb, "-a", "-s", "-screen 0 1280x800x24", *cmd]
        try:
            r = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            print(f"WINDOW-CHECK failed: no result within {args.timeout} s\n{out[-3000:]}")
            return 1
        ok = next((ln for ln in r.stdout.splitlines() if ln.startswith("WINDOW-CHECK ok")), None)
        if r.returncode != 0 or ok is None:
            print(f"WINDOW-CHECK failed (exit {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
            return 1
        print(ok)
    return 0


if __name__ == "__main__":
    sys.exit(main())
