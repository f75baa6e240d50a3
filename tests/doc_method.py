"""The method that docs/adding-a-method.md builds, made from the page's own code blocks.

A block of the page that is a file opens with a fence naming it, `` ```python title="PATH" ``
(PATH under ``workstation/methods/`` or ``ui/methods/``); a block that is a line added to a
registry is `` ```python title="workstation/methods/__init__.py" registers `` (or the views'
``ui/methods/__init__.py``). `write_package` writes the files under a folder of its own;
`registered(folder)` makes the packages importable as ``workstation.methods.<name>`` and
``ui.methods.<name>`` (the folder is added to those packages' search paths, nothing is written
into the checkout) and runs the page's registry lines, for as long as the block runs.

``WORKSTATION_DOC_METHOD=FOLDER`` makes `tests/conftest.py` register the method written there
for a whole test run, so the contract tests that run over every registered method run over it
too (`tests/test_adding_a_method_doc.py`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "adding-a-method.md"
ENV = "WORKSTATION_DOC_METHOD"
NAME = "count"  # the method the page builds

_FENCE = re.compile(r'^```python title="([^"]+)"( registers)?\n(.*?)^```$', re.M | re.S)
_ROOTS = ("workstation/methods/", "ui/methods/")


@dataclass(frozen=True)
class Block:
    path: str  # as the page names it
    code: str
    line: int  # where the block's code begins on the page
    registers: bool  # a registry line, not a file


def blocks(text: str | None = None) -> list[Block]:
    """The page's titled code blocks, in page order."""
    text = DOC.read_text(encoding="utf-8") if text is None else text
    out = []
    for m in _FENCE.finditer(text):
        out.append(Block(m[1], m[3], text.count("\n", 0, m.start(3)) + 1, bool(m[2])))
    return out


def write_package(folder: Path, text: str | None = None) -> list[Path]:
    """Write the page's file blocks under ``folder`` (``folder/workstation/methods/count/...``);
    a block that does not compile is a `SyntaxError` naming the page's line."""
    written = []
    for b in blocks(text):
        if b.registers:
            continue
        if not b.path.startswith(_ROOTS) or ".." in b.path or not b.path.endswith(".py"):
            raise ValueError(f"{DOC.name}:{b.line}: a file block must be a .py file under "
                             f"{' or '.join(_ROOTS)}, not {b.path!r}")
        compile(b.code, f"{DOC.name}:{b.line}:{b.path}", "exec")
        dst = folder / b.path
        if dst in written:
            raise ValueError(f"{DOC.name}:{b.line}: {b.path} is written twice")
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(b.code, encoding="utf-8")
        written.append(dst)
    return written


@contextmanager
def registered(folder: Path, text: str | None = None, views: bool = True) -> Iterator[None]:
    """The method written under ``folder`` (`write_package`) importable and registered by the
    page's own registry lines, for as long as the block runs."""
    import ui.methods as ui_methods
    import workstation.methods as ws_methods

    paths = [(ws_methods, str(folder / "workstation" / "methods"))]
    if views:
        paths.append((ui_methods, str(folder / "ui" / "methods")))
    registries = {"workstation/methods/__init__.py": (ws_methods.METHODS, "METHODS"),
                  "ui/methods/__init__.py": (ui_methods.VIEWS, "VIEWS")}
    added: list[tuple[Any, str]] = []
    for pkg, path in paths:
        pkg.__path__.append(path)
    try:
        for b in blocks(text):
            if not b.registers or (b.path.startswith("ui/") and not views):
                continue
            registry, name = registries[b.path]
            before = set(registry.names())
            exec(compile(b.code, f"{DOC.name}:{b.line}", "exec"), {name: registry})  # noqa: S102 - the page's line
            added += [(registry, n) for n in set(registry.names()) - before]
        yield
    finally:
        for registry, n in added:
            registry._entries.pop(n, None)  # the registry keeps no way out: a test's own clean-up
        for pkg, path in paths:
            if path in pkg.__path__:
                pkg.__path__.remove(path)
        for mod in [m for m in sys.modules if m.startswith((f"workstation.methods.{NAME}", f"ui.methods.{NAME}"))]:
            del sys.modules[mod]
