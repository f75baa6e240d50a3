"""Figures of the code's shape: repeated code, the largest files and classes, import cycles.

    .venv/bin/python tests/benchmarks/house_figures.py [--top 5] [--list-duplicates]

Prints, for `workstation/` and `ui/`:
- the pairs of places that share six or more lines, as the `duplicates` command counts them
  (its pairs whose two sides both lie in `workstation/` or `ui/`: all of them, those the same to
  the letter, and those it does not mark as boilerplate); when the command is not on PATH, the
  line says so and no count is given;
- the largest files (lines), the largest classes (lines of the class statement, and "assembled":
  with the bases defined in the tree, such as mixins, added in) and their callables;
- the import cycles between the modules of one folder (a folder's modules and sub-packages as
  siblings; imports anywhere in a module count, also those inside functions), from the source
  with `ast`: each cycle's members.
"""

from __future__ import annotations

import argparse
import ast
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TREES = ("workstation", "ui")


def python_files() -> list[Path]:
    return sorted(p for tree in TREES for p in (ROOT / tree).rglob("*.py"))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def duplicate_pairs(show: bool) -> None:
    tool = shutil.which("duplicates")
    if tool is None:
        print("duplicates: the `duplicates` command is not on PATH; no count")
        return
    out = subprocess.run([tool, "--repo", str(ROOT), "--most", "200", "--seconds", "300"],
                         capture_output=True, text=True, timeout=400, check=False).stdout
    rows = [line for line in out.splitlines() if line.startswith("D")]
    ours = [r for r in rows
            if all(side.strip().split(":")[0].split("/")[0] in TREES
                   for side in r.split(" ", 1)[1].split(" ~ ")[:2])]
    identical = [r for r in ours if " shape" not in r]
    solid = [r for r in ours if "boilerplate" not in r]
    print(f"duplicates: {len(ours)} pairs of places in workstation/ and ui/ share 6 or more lines "
          f"({len(identical)} the same to the letter, {len(solid)} not marked boilerplate)")
    for line in out.splitlines():
        if line.startswith(("left out", "incomplete")):
            print(f"  duplicates says: {line}")
    if show:
        for r in ours:
            print("  " + r)


def sizes(top: int) -> None:
    files = [(len(p.read_text(encoding="utf-8").splitlines()), p) for p in python_files()]
    files.sort(key=lambda t: -t[0])
    print(f"largest files (of {len(files)}):")
    for n, p in files[:top]:
        print(f"  {n:6d} lines  {p.relative_to(ROOT)}")
    classes: dict[str, tuple[str, ast.ClassDef]] = {}
    by_name: dict[str, list[str]] = defaultdict(list)
    for p in python_files():
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                key = f"{module_name(p)}.{node.name}"
                classes[key] = (str(p.relative_to(ROOT)), node)
                by_name[node.name].append(key)

    def own(node: ast.ClassDef) -> tuple[int, int]:
        lines = (node.end_lineno or node.lineno) - node.lineno + 1
        calls = sum(isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) for b in node.body)
        return lines, calls

    def assembled(key: str, seen: set[str]) -> tuple[int, int]:
        if key in seen:
            return 0, 0
        seen.add(key)
        lines, calls = own(classes[key][1])
        for base in classes[key][1].bases:
            name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None)
            found = by_name.get(name or "", [])
            if len(found) == 1:
                more = assembled(found[0], seen)
                lines, calls = lines + more[0], calls + more[1]
        return lines, calls

    rows = [(own(node), assembled(key, set()), key, path) for key, (path, node) in classes.items()]
    print(f"largest classes (of {len(rows)}), own lines:")
    for (lines, calls), _, key, path in sorted(rows, key=lambda r: -r[0][0])[:top]:
        print(f"  {lines:6d} lines {calls:3d} callables  {key}  ({path})")
    print("largest classes, assembled with their bases defined in the tree (mixins):")
    for _, (lines, calls), key, path in sorted(rows, key=lambda r: -r[1][0])[:top]:
        print(f"  {lines:6d} lines {calls:3d} callables  {key}  ({path})")


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The tree's modules that a module imports (a `from a import b` of a module counts b)."""
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            names = [node.args[0].value]
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    found.discard(me)
    return found


def cycles() -> None:
    paths = {module_name(p): p for p in python_files()}
    modules = set(paths)
    imports = {m: imported_modules(p, modules) for m, p in paths.items()}
    packages = sorted({m for m, p in paths.items() if p.name == "__init__.py"})
    found: list[tuple[str, list[str]]] = []
    for package in packages:
        prefix = package + "."
        children = sorted({m[len(prefix):].split(".")[0] for m in modules if m.startswith(prefix)})
        edges: dict[str, set[str]] = {c: set() for c in children}
        for m, targets in imports.items():
            if not m.startswith(prefix):
                continue
            src = m[len(prefix):].split(".")[0]
            for t in targets:
                if t.startswith(prefix):
                    dst = t[len(prefix):].split(".")[0]
                    if dst != src:
                        edges[src].add(dst)
        for component in strongly_connected(edges):
            if len(component) > 1:
                found.append((package, sorted(component)))
    print(f"import cycles between the modules of one folder: {len(found)}")
    for package, members in found:
        print(f"  {package}: {' <-> '.join(members)}")


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            out.append(component)

    for v in edges:
        if v not in index:
            visit(v)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--list-duplicates", action="store_true")
    args = parser.parse_args()
    sys.setrecursionlimit(10_000)
    duplicate_pairs(args.list_duplicates)
    sizes(args.top)
    cycles()


if __name__ == "__main__":
    main()
