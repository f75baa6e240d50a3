"""The core package type-checks cleanly with mypy (configured in pyproject.toml, [tool.mypy])."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(900)  # mypy's own deadline (600 s) applies first
def test_mypy_reports_no_errors_in_the_core() -> None:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed in this environment (pip install -e .[dev])")
    r = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"mypy found errors:\n{r.stdout}{r.stderr}"
