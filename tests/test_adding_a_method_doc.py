"""docs/adding-a-method.md is true: its own code blocks, written into a package and registered by
its own registry lines as a fifth method ("count"), pass every method and views contract.

The page's file blocks are written under a temporary folder (`tests.doc_method`); a test run of
the contract modules that run over every registered method — the core's
(`tests/methods/test_contract.py`), the views' (`tests/gui/test_method_views.py`), the judging
and undo contracts (`tests/gui/test_judging_contract.py`, `tests/gui/test_undo_contract.py`) —
is started with the method registered for the whole run (``WORKSTATION_DOC_METHOD``,
`tests/conftest.py`), and must pass every one of its tests of the page's method. The page's
method object and views are also checked the way mypy and the views' registry check a method:
`METHOD: Method` type-checks and the views register without a missing member. A page whose code
is broken fails here.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import doc_method
from tests.doc_method import NAME

ROOT = Path(__file__).resolve().parent.parent
CONTRACTS = ("tests/methods/test_contract.py", "tests/gui/test_method_views.py",
             "tests/gui/test_judging_contract.py", "tests/gui/test_undo_contract.py")


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("doc_method")
    doc_method.write_package(folder)
    return folder


def test_the_page_shows_every_file_of_the_method_and_its_two_registry_lines() -> None:
    bs = doc_method.blocks()
    files = {b.path for b in bs if not b.registers}
    core = {f"workstation/methods/{NAME}/{m}.py" for m in
            ("__init__", "config", "results", "suite", "demo", "report", "audit_source", "method")}
    views = {f"ui/methods/{NAME}/__init__.py", f"ui/methods/{NAME}/page.py"}
    assert files == core | views
    assert sorted(b.path for b in bs if b.registers) == ["ui/methods/__init__.py", "workstation/methods/__init__.py"]
    # the core's files never import Qt or the UI
    for b in bs:
        if b.path.startswith("workstation/") and not b.registers:
            for node in ast.walk(ast.parse(b.code)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                assert not any(n.split(".")[0] in ("PySide6", "ui") for n in names), f"{b.path} imports {names}"


def test_the_page_names_every_optional_hook_the_kernel_calls() -> None:
    from workstation.evaluation.base import METHOD_HOOKS

    page = (ROOT / "docs" / "adding-a-method.md").read_text("utf-8")
    assert [h for h in METHOD_HOOKS if not re.search(rf"`{h}\b", page)] == []


def test_a_broken_block_is_refused_naming_the_page_s_line(tmp_path: Path) -> None:
    text = doc_method.DOC.read_text(encoding="utf-8")
    broken = text.replace("class CountConfig:", "class CountConfig(:", 1)
    line = broken[:broken.index("class CountConfig(:")].count("\n") + 1
    with pytest.raises(SyntaxError) as e:
        doc_method.write_package(tmp_path, broken)
    assert e.value.filename == f"adding-a-method.md:{doc_method.blocks(broken)[0].line}:" \
                               f"workstation/methods/{NAME}/config.py" and e.value.lineno is not None
    assert doc_method.blocks(broken)[0].line + e.value.lineno - 1 == line


def test_the_page_s_views_register_and_its_method_object_type_checks(package: Path) -> None:
    from ui.methods import VIEWS, views_for
    from workstation.methods import METHODS, get_method

    assert NAME not in METHODS and NAME not in VIEWS
    with doc_method.registered(package):
        assert get_method(NAME).name == NAME
        assert views_for(NAME).method == NAME  # checked against ui.method_views.MethodViews
    assert NAME not in METHODS and NAME not in VIEWS
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed in this environment (pip install -e .[dev])")
    env = dict(os.environ, MYPYPATH=str(package))
    r = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent", "--no-incremental",
                        str(package / "workstation" / "methods" / NAME / "method.py")],
                       cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.timeout(1500)
def test_the_page_s_method_passes_every_method_and_views_contract(package: Path) -> None:
    env = dict(os.environ, WORKSTATION_DOC_METHOD=str(package), QT_QPA_PLATFORM="offscreen",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-k", NAME,
           "-o", "addopts=--import-mode=importlib", *CONTRACTS]
    try:
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1400, env=env)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"the contract tests of the page's method ran past 1400 s:\n{e.stdout!r}") from None
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    passed = re.search(r"(\d+) passed", out)
    # every parametrised contract test of the method ran and passed: the core's 5, the views' 1, the
    # judging contract's 2, the undo contract's 1 (and nothing was skipped)
    assert passed is not None and int(passed[1]) >= 9 and " skipped" not in out and " failed" not in out, out[-3000:]
