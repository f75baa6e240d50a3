"""Smoke-test a built bundle: help, a demo project without GUI, a report, and the window offscreen.

    python packaging/smoke_test.py dist/workstation/workstation
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path


def run(exe: str, *args: str, timeout: int = 300, **extra_env: str) -> str:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", **extra_env)
    r = subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout, env=env)
    if r.returncode != 0:
        sys.exit(f"FAILED: {exe} {' '.join(args)}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}")
    return r.stdout


def main() -> None:
    exe = sys.argv[1]
    out = run(exe, "--help")
    assert "import-sbuc" in out and "demo" in out, out
    with tempfile.TemporaryDirectory() as tmp:
        proj = Path(tmp) / "demo"
        print(run(exe, "demo", "--project", str(proj), "--no-gui").strip().splitlines()[-1])
        run(exe, "report", "--project", str(proj), "--out", str(Path(tmp) / "report"))
        assert (Path(tmp) / "report" / "index.html").is_file()
        # a generation job: its worker process is the bundle itself (`jobs worker`)
        gen = Path(tmp) / "gen"
        run(exe, "generate", "--project", str(gen), "--suite", "builtin", "--pairs", "1",
            "--model", "procedural", "--seeds", "1")
        run(exe, "detect", "--project", str(gen), "--detector", "scene", "--evaluate")
        assert len(list((gen / "images").rglob("*.png"))) == 4, "the generation job made no images"
        out = run(exe, "gui", "--project", str(proj), timeout=120, WORKSTATION_EXIT_WHEN_READY="1")
        assert "READY" in out and "samples=800" in out, out
        print(out.strip().splitlines()[-1])
    print("bundle smoke test passed")


if __name__ == "__main__":
    main()
