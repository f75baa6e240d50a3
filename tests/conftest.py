"""Shared test set-up: offscreen Qt, paths to ../shared, small fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# the loader's detection cache (workstation.store.detection_cache) goes to a folder of the
# test run's own, never the user's
if "WORKSTATION_CACHE_DIR" not in os.environ:
    import tempfile

    os.environ["WORKSTATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="workstation-test-cache-")
# a test run inside a Slurm job array must not shard the tests' own jobs
for _var in [v for v in os.environ if v.startswith("SLURM_ARRAY_") or v == "WORKSTATION_SHARDS"]:
    del os.environ[_var]

if os.environ.get("WORKSTATION_BLOCK_QT") == "1":
    # Run the core's tests as if PySide6 were not installed (see tests/test_architecture.py).
    import importlib.abc
    import sys

    class _NoQt(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
            if name.split(".")[0] in {"PySide6", "shiboken6", "pyqtgraph", "superqt", "pytestqt"}:
                raise ImportError(f"{name} is blocked for this run")
            return None

    sys.meta_path.insert(0, _NoQt())

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
SBUC = SHARED / "fixtures" / "spatialbench_uc"
SBUC_RUN = SBUC / "sd15_boxdiff"
SBUC_PROMPTS = SBUC / "v1.0.1" / "prompts.jsonl"
MODELS = SHARED / "models"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--headed", action="store_true", help="show GUI tests on a real display")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--headed"):
        os.environ["QT_QPA_PLATFORM"] = os.environ.get("WORKSTATION_HEADED_PLATFORM", "xcb")
    doc_method = os.environ.get("WORKSTATION_DOC_METHOD")
    if doc_method:  # the method docs/adding-a-method.md builds, for this whole run (tests/doc_method.py)
        from contextlib import ExitStack

        from tests.doc_method import registered

        stack = ExitStack()
        stack.enter_context(registered(Path(doc_method)))
        config.add_cleanup(stack.close)


@pytest.fixture(scope="session")
def sbuc_run_dir() -> Path:
    if not (SBUC_RUN / "eval" / "per_sample.jsonl").is_file():
        pytest.skip(f"SpatialBench-UC fixture not found at {SBUC_RUN} (needs ../shared beside the checkout)")
    return SBUC_RUN


@pytest.fixture(scope="session")
def sbuc_prompts() -> Path:
    if not SBUC_PROMPTS.is_file():
        pytest.skip(f"SpatialBench-UC prompts not found at {SBUC_PROMPTS}")
    return SBUC_PROMPTS


@pytest.fixture(scope="session")
def sbuc_parsed(sbuc_run_dir: Path, sbuc_prompts: Path):
    from workstation.methods.spatial.sbuc import parse_run

    return parse_run(sbuc_run_dir, sbuc_prompts)


@pytest.fixture(scope="session")
def models_dir() -> Path:
    if not MODELS.is_dir():
        pytest.skip(f"model files not found at {MODELS}")
    return MODELS
