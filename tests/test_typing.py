"""The core and the window type-check cleanly with mypy (configured in pyproject.toml, [tool.mypy])."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_checks_the_window_as_well_as_the_core() -> None:
    """What `python -m mypy` checks: the core, the window (every module of ui/, the methods' views
    among them) and the composition root."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert {"workstation", "ui", "main.py"} <= set(config["files"]), config["files"]
    assert not config.get("exclude"), config.get("exclude")


@pytest.mark.timeout(900)  # mypy's own deadline (600 s) applies first
def test_mypy_reports_no_errors_in_the_core_and_the_window() -> None:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed in this environment (pip install -e .[dev])")
    r = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"mypy found errors:\n{r.stdout}{r.stderr}"


@pytest.mark.timeout(900)
def test_a_method_object_is_checked_against_the_method_protocol(tmp_path: Path) -> None:
    """`METHOD: Method = ...` is what mypy checks a method by: the Lamp method of the tests passes,
    an object that lacks most of the protocol is refused."""
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed in this environment (pip install -e .[dev])")
    half = tmp_path / "half_method.py"
    half.write_text("from workstation.evaluation.base import Method\n\n\n"
                    "class Half:\n    name = 'half'\n    title = 'Half'\n\n\n"
                    "METHOD: Method = Half()\n", encoding="utf-8")
    runs = {}
    for name, path in (("lamp", ROOT / "tests" / "toy_method" / "core.py"), ("half", half)):
        runs[name] = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent", str(path)],
                                    cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert runs["lamp"].returncode == 0, runs["lamp"].stdout + runs["lamp"].stderr
    assert runs["half"].returncode == 1 and 'variable has type "Method"' in runs["half"].stdout, runs["half"].stdout
