"""The core stays free of Qt and of heavy ML imports at start-up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

_BLOCK_QT = r"""
import importlib.abc, sys
class _NoQt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {'PySide6', 'shiboken6', 'pyqtgraph', 'superqt'}:
            raise ImportError(f'{name} is blocked: the core must not import Qt')
        return None
sys.meta_path.insert(0, _NoQt())
"""


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_import_linter_contract_holds() -> None:
    exe = Path(sys.executable).with_name("lint-imports")
    if not exe.exists():
        pytest.skip("import-linter is not installed in this environment")
    r = subprocess.run([str(exe)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "KEPT" in r.stdout


def test_every_core_module_imports_without_qt_torch_or_transformers() -> None:
    code = _BLOCK_QT + r"""
import pkgutil, importlib, workstation
names = [m.name for m in pkgutil.walk_packages(workstation.__path__, 'workstation.')]
for n in names:
    importlib.import_module(n)
heavy = sorted(m for m in ('torch', 'diffusers', 'transformers', 'PySide6') if m in sys.modules)
print('modules', len(names), 'heavy', heavy)
"""
    r = _run(code)
    assert r.returncode == 0, r.stderr
    assert "heavy []" in r.stdout, r.stdout
    assert int(r.stdout.split()[1]) > 10


def test_main_entry_starts_without_heavy_ml_modules() -> None:
    code = r"""
import sys, runpy
sys.argv = ['main.py', '--help']
try:
    runpy.run_path('main.py', run_name='__main__')
except SystemExit:
    pass
print('heavy', sorted(m for m in ('torch', 'diffusers', 'transformers') if m in sys.modules))
"""
    r = _run(code)
    assert "heavy []" in r.stdout, r.stdout + r.stderr
    assert "import-sbuc" in r.stdout


@pytest.mark.slow
def test_core_test_suite_passes_with_qt_blocked() -> None:
    """The core's own tests run green in a process where PySide6 cannot be imported."""
    env = dict(os.environ, WORKSTATION_BLOCK_QT="1")
    r = subprocess.run([sys.executable, "-m", "pytest", "tests/core", "-q", "-x", "-p", "no:pytest-qt",
                        "-p", "no:cacheprovider", "-m", "not slow"],
                       cwd=ROOT, capture_output=True, text=True, env=env, timeout=1800)
    tail = r.stdout[-3000:] + r.stderr[-2000:]
    assert r.returncode == 0, tail
    assert " passed" in r.stdout, tail
