"""The bundle smoke test's window driver, run against the source tree.

CI runs packaging/smoke_test.py only on the built bundles, after the suite; this keeps the
driver (which labels one item with the P key and reads it back) in step with the window's API,
so a renamed method fails here, in seconds, not in a bundle that hangs until its timeout.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "packaging"))
import smoke_test  # noqa: E402


def test_the_smoke_driver_labels_one_item_from_source(tmp_path: Path) -> None:
    main = str(ROOT / "main.py")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.update(QT_QPA_PLATFORM="offscreen", HF_HUB_OFFLINE="1")
    subprocess.run([sys.executable, main, "demo", "--project", str(tmp_path / "demo"), "--no-gui",
                    "--pairs", "4", "--seeds", "1"], check=True, capture_output=True, env=env, timeout=300)
    driver = tmp_path / "driver.py"
    driver.write_text(smoke_test.DRIVER, encoding="utf-8")
    env.update(WORKSTATION_TEST_DRIVER=str(driver), WORKSTATION_SETTINGS=str(tmp_path / "settings.ini"),
               SMOKE_OUT=str(tmp_path), SMOKE_SOURCE_TREE=str(tmp_path / "no-source-tree"))
    r = subprocess.run([sys.executable, main, "gui", "--project", str(tmp_path / "demo")],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("SMOKE-WINDOW"))
    assert "labelled=" in line and "frozen=False" in line
    assert (tmp_path / "smoke_window.png").stat().st_size > 10000
