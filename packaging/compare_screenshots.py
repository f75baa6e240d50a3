"""Compare two folders of screenshots pixel by pixel.

    .venv/bin/python packaging/compare_screenshots.py BEFORE AFTER [--only PREFIX] [--diffs DIR]

For each PNG in either folder (or those whose name starts with PREFIX), prints the number of
pixels that differ in any channel and where they lie (their bounding box), "missing" for an
image in only one folder and the two sizes where they differ. ``--diffs DIR`` also writes, for
each image that differs, the after image with its differing pixels in magenta. Exits 1 when any
image differs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def compare(before: Path, after: Path, diffs: Path | None = None) -> tuple[str, int]:
    """A line saying how ``after`` differs from ``before``, and the count of differing pixels (-1:
    not comparable)."""
    import numpy as np
    from PIL import Image

    if not before.is_file() or not after.is_file():
        return f"{before.name}: missing {'before' if not before.is_file() else 'after'}", -1
    with Image.open(before) as a_im, Image.open(after) as b_im:
        a = np.asarray(a_im.convert("RGBA"))
        b = np.asarray(b_im.convert("RGBA"))
    if a.shape != b.shape:
        return f"{before.name}: size {a.shape[1]}x{a.shape[0]} -> {b.shape[1]}x{b.shape[0]}", -1
    differ = (a != b).any(axis=2)
    n = int(differ.sum())
    if not n:
        return f"{before.name}: identical", 0
    ys, xs = np.nonzero(differ)
    if diffs is not None:
        diffs.mkdir(parents=True, exist_ok=True)
        marked = b.copy()
        marked[differ] = (255, 0, 255, 255)
        Image.fromarray(marked).save(diffs / before.name)
    return (f"{before.name}: {n} pixels differ ({100.0 * n / differ.size:.3f} %) in x {xs.min()}-{xs.max()}, "
            f"y {ys.min()}-{ys.max()}"), n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--only", default="", metavar="PREFIX", help="only the images whose name starts so")
    ap.add_argument("--diffs", type=Path, default=None, metavar="DIR", help="write marked images of the changes")
    args = ap.parse_args(argv)
    names = sorted({p.name for d in (args.before, args.after) for p in d.glob(f"{args.only}*.png")})
    changed = 0
    for name in names:
        line, n = compare(args.before / name, args.after / name, args.diffs)
        print(line)
        changed += n != 0
    print(f"{changed} of {len(names)} images differ")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
