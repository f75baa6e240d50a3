"""The largest parts of a built bundle, as `packaging/build.sh` prints them after each build.

    python packaging/bundle_parts.py dist/viewer/workstation [--top 10] [--label viewer]

A part is a file, or a folder at most four levels below the bundle's folder with everything
under it (`_internal/PySide6/Qt/lib`, `_internal/cv2/cv2.abi3.so`): fine enough to name what
takes the room, coarse enough to read at a glance. Sizes are the files' apparent sizes in MiB.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DEPTH = 4


def part_sizes(folder: Path, depth: int = DEPTH) -> tuple[dict[str, int], int, int]:
    """({part: bytes}, total bytes, file count) of the bundle in `folder`."""
    parts: dict[str, int] = {}
    total = files = 0
    for p in folder.rglob("*"):
        if p.is_symlink() or not p.is_file():
            continue
        size = p.stat().st_size
        rel = p.relative_to(folder).parts
        key = "/".join(rel[:depth])
        parts[key] = parts.get(key, 0) + size
        total += size
        files += 1
    return parts, total, files


def table(folder: Path, top: int = 10, label: str = "") -> str:
    parts, total, files = part_sizes(folder)
    head = f"{label + ': ' if label else ''}the {top} largest parts of {folder} ({total / 2**20:,.0f} MiB in {files:,} files)"
    lines = [head, f"  {'MiB':>7}  part"]
    for name, size in sorted(parts.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"  {size / 2**20:7.1f}  {name}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", type=Path, help="the bundle's folder (dist/<variant>/workstation)")
    ap.add_argument("--top", type=int, default=10, help="how many parts (default 10)")
    ap.add_argument("--label", default="", help="a name to lead the table (the variant)")
    args = ap.parse_args(argv)
    if not args.folder.is_dir():
        print(f"error: no bundle in {args.folder}", file=sys.stderr)
        return 2
    print(table(args.folder, args.top, args.label))
    return 0


if __name__ == "__main__":
    sys.exit(main())
