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
                          timeout=500)  # below the per-test limit, so that this deadline is the one that applies


def test_import_linter_contract_holds() -> None:
    exe = Path(sys.executable).with_name("lint-imports")
    if not exe.exists():
        pytest.skip("import-linter is not installed in this environment")
    r = subprocess.run([str(exe)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "KEPT" in r.stdout


def test_every_core_module_imports_without_qt_torch_transformers_or_scipy() -> None:
    code = _BLOCK_QT + r"""
import pkgutil, importlib, workstation
names = [m.name for m in pkgutil.walk_packages(workstation.__path__, 'workstation.')]
for n in names:
    importlib.import_module(n)
heavy = sorted(m for m in ('torch', 'diffusers', 'transformers', 'PySide6', 'scipy') if m in sys.modules)
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
@pytest.mark.timeout(2000)  # the whole core suite runs inside, with a deadline of its own (1800 s)
def test_core_test_suite_passes_with_qt_blocked() -> None:
    """The core's own tests run green in a process where PySide6 cannot be imported."""
    env = dict(os.environ, WORKSTATION_BLOCK_QT="1")
    r = subprocess.run([sys.executable, "-m", "pytest", "tests/core", "-q", "-x", "-p", "no:pytest-qt",
                        "-p", "no:cacheprovider", "-m", "not slow"],
                       cwd=ROOT, capture_output=True, text=True, env=env, timeout=1800)
    tail = r.stdout[-3000:] + r.stderr[-2000:]
    assert r.returncode == 0, tail
    assert " passed" in r.stdout, tail


def _python_files(*roots: str) -> list[Path]:
    out: list[Path] = []
    for r in roots:
        p = ROOT / r
        out += [p] if p.is_file() else sorted(p.rglob("*.py"))
    return out


def test_yaml_is_read_only_through_the_one_safe_loader() -> None:
    """Every YAML the program reads goes through `workstation.util.safeyaml` (no anchors or aliases,
    size-capped, lines in errors): any other import of a YAML library in the program fails here."""
    import ast

    allowed = {ROOT / "workstation" / "util" / "safeyaml.py"}
    found = []
    for f in _python_files("workstation", "ui", "main.py"):
        if f in allowed:
            continue
        tree = ast.parse(f.read_text(encoding="utf-8"), str(f))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                    "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
                names = [str(node.args[0].value)]
            for n in names:
                if n.split(".")[0] in ("yaml", "ruamel", "oyaml", "strictyaml"):
                    found.append(f"{f.relative_to(ROOT)}:{node.lineno}: {n}")
    assert not found, "YAML read outside workstation/util/safeyaml.py:\n" + "\n".join(found)


def test_tests_read_the_processes_they_start_with_a_deadline() -> None:
    """No test blocks on a process without a deadline that applies: no plain readline() on a
    process's output (tests/proc.py reads it with one), no communicate() / subprocess.run() /
    check_output() without a timeout, no wait() without one."""
    import ast

    found = []
    for f in _python_files("tests"):
        if f.name == "proc.py" or "benchmarks" in f.parts:
            continue
        tree = ast.parse(f.read_text(encoding="utf-8"), str(f))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            attr, kws = node.func.attr, {k.arg for k in node.keywords}
            target = node.func.value
            if attr in ("readline", "read", "readlines") and isinstance(target, ast.Attribute) \
                    and target.attr in ("stdout", "stderr"):
                found.append(f"{f.relative_to(ROOT)}:{node.lineno}: {attr}() on a process's output")
            elif attr in ("run", "check_output", "check_call", "call", "communicate") and "timeout" not in kws \
                    and (attr == "communicate" or getattr(target, "id", "") == "subprocess"):
                found.append(f"{f.relative_to(ROOT)}:{node.lineno}: {attr}() without a timeout")
            elif attr == "wait" and not node.args and "timeout" not in kws:
                found.append(f"{f.relative_to(ROOT)}:{node.lineno}: wait() without a timeout")
    assert not found, "reads without a deadline:\n" + "\n".join(found)
