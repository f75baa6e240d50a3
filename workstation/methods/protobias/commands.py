"""`protobias`: what is specific to the ProtoBias method.

    python main.py protobias import FOLDER --project DIR [--index FILE] [--run-id NAME]

`import` adds a folder of triplet images to a project: an index (``index.jsonl`` / ``index.csv``
/ ``triplets.jsonl`` / ``triplets.csv`` in the folder, or --index) with one triplet per line —
``triplet_id``, ``text`` (T), ``domain`` (animals / objects / demography), ``knob`` (count, color,
color_tone, layout_relation, spatial, scale_size), ``image_corr`` and ``image_adv`` (paths relative
to the folder); optional ``prompt_corr``, ``prompt_adv``, ``extra_element``, ``knob_value``,
``knob_value_adv``, ``seed``. Every line and every image is checked first (a bad line is reported
as FILE:LINE and nothing is written); then the images are copied into the project and the run,
prompts and samples are added in one transaction. The project is created when missing.

The built-in suite and generation go through the common commands:

    python main.py suite --method protobias --set n=100 --out triplets.jsonl
    python main.py generate --method protobias --suite triplets.jsonl --model MODEL_FOLDER --project DIR
    python main.py score --method protobias --scorer clipscore --model CLIP_FOLDER --project DIR
    python main.py evaluate --method protobias --project DIR
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

from ...command_base import add_command, add_project_arg


def register(sub: Any) -> None:
    p = add_command(sub, "protobias", "ProtoBias: import a folder of triplet images", doc=__doc__)
    psub = p.add_subparsers(dest="protobias_command", metavar="ACTION", required=True)
    imp = add_command(psub, "import", "import a folder of triplet images with a JSONL / CSV index",
                      run_import, doc=__doc__)
    imp.add_argument("folder", type=Path, metavar="FOLDER", help="the image folder")
    add_project_arg(imp, "project folder (created if missing)")
    imp.add_argument("--index", type=Path, metavar="FILE", help="the index file (default: the one in FOLDER)")
    imp.add_argument("--run-id", default=None, metavar="NAME",
                     help="run id of the import (default: import-<folder>-<hash of its content>)")


def run_import(args: argparse.Namespace) -> int:
    from .importer import import_folder, plan_import
    from .io import read_triplet_index
    from ...store import DB_NAME, Project

    imported = read_triplet_index(args.folder, args.index)  # everything checked before a project is touched
    plan_import(imported, args.run_id)
    folder = Path(args.project)
    created = not (folder / DB_NAME).exists()
    existed = folder.exists()
    try:
        with Project.create(folder, exist_ok=True) as project:
            s = import_folder(project, args.folder, run_id=args.run_id, imported=imported)
    except BaseException:
        if created:  # a project this command made is removed again
            if existed:
                for name in (DB_NAME, DB_NAME + ".wal"):
                    (folder / name).unlink(missing_ok=True)
                img = folder / "images"
                if img.is_dir() and not any(img.iterdir()):
                    img.rmdir()
            else:
                shutil.rmtree(folder, ignore_errors=True)
        raise
    if s.already:
        print(f"run {s.run_id} of {folder} already holds this import ({s.triplets} triplets, {s.images} images); "
              "nothing to do")
        return 0
    print(f"imported {s.triplets} triplets ({s.images} images) from {s.index} into run {s.run_id} of {folder}")
    print(f"next: python main.py score --method protobias --scorer clipscore --model CLIP_FOLDER --project {folder}")
    return 0
