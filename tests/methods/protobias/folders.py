"""A ProtoBias triplet folder for tests: ``n`` triplets, PNG I_corr and JPEG I_adv images, an index."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image


def _png(path: Path, w: int, h: int, colour: tuple[int, int, int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((h, w, 3), colour, np.uint8)).save(path)


def make_folder(root: Path, n: int = 3, fmt: str = "jsonl") -> Path:
    rows = []
    for i in range(n):
        _png(root / "img" / f"{i}_corr.png", 40 + i, 32, (200, 40, 40))
        Image.fromarray(np.full((30, 30, 3), (30, 30, 190), np.uint8)).save(root / "img" / f"{i}_adv.jpg",
                                                                          quality=90)
        rows.append({"triplet_id": f"tr{i}", "text": f"An animal stands near a pond with exactly {i + 1} rocks.",
                     "domain": ["animals", "objects", "demography"][i % 3], "knob": "count",
                     "image_corr": f"img/{i}_corr.png", "image_adv": f"img/{i}_adv.jpg",
                     "prompt_corr": f"An okapi stands near a pond with exactly {i + 1} rocks.",
                     "extra_element": "rock", "knob_value": str(i + 1), "knob_value_adv": str(i + 2),
                     "source_model": "sdxl"})
    if fmt == "jsonl":
        (root / "index.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    else:
        cols = ["triplet_id", "text", "domain", "knob", "image_corr", "image_adv"]
        lines = [",".join(cols)] + [",".join(f'"{r[c]}"' for c in cols) for r in rows]
        (root / "index.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root
