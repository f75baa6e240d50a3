"""Import a ProtoBias image folder: an index (JSONL or CSV) of triplets and their two images.

The index has one triplet per line (JSONL: one object per line; CSV: a header row, then one
row per triplet) with the fields

==============  =================================================================================
triplet_id      1-128 characters ``A-Z a-z 0-9 . _ : -``, starting with a letter or digit; unique
text            T, the text both images are scored against (1-2000 characters)
domain          animals | objects | demography (case-insensitive; "animal", "object" accepted)
knob            count | color | color_tone | layout_relation | spatial | scale_size
image_corr      path of I_corr relative to the folder, ``/`` separators
image_adv       path of I_adv, likewise; a different file from image_corr
(anything else) kept as the triplet's extra fields (JSON values; CSV: text; empty CSV cells dropped)
==============  =================================================================================

The folder is treated as hostile (`workstation.util.images`): every image path must stay
inside it (no absolute path, no ``..``, no symlink resolving outside), every image must be a
regular, non-empty, decodable PNG/JPEG/WebP/BMP within the size limits. The index must be UTF-8
(a byte-order mark is allowed), at most `MAX_INDEX_BYTES`, with no NUL character and no line
over `MAX_LINE_CHARS`. Every line is checked — images included — before anything is returned,
and the first problem raises ``InputError(index, message, line)``; the caller copies images into
the project only after `read_triplet_index` returned.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...types import InputError, WorkstationError
from ...util.textio import quote, regular_file
from ...util.images import (DEFAULT_MAX_BYTES, DEFAULT_MAX_PIXELS, DEFAULT_MAX_SIDE, ImageInfo, image_info,
                            resolve_inside)
from .vocab import DOMAINS, KNOBS

MAX_INDEX_BYTES = 64 * 1024 * 1024
MAX_LINE_CHARS = 100_000
MAX_TRIPLETS = 100_000
MAX_TEXT_CHARS = 2000
MAX_EXTRA_CHARS = 20_000  # all extra fields of one line, as JSON
INDEX_NAMES: tuple[str, ...] = ("index.jsonl", "index.csv", "triplets.jsonl", "triplets.csv")
REQUIRED: tuple[str, ...] = ("triplet_id", "text", "domain", "knob", "image_corr", "image_adv")
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_DOMAIN_ALIASES = {"animal": "animals", "object": "objects", "demographics": "demography"}


@dataclass(frozen=True)
class ImportedTriplets:
    """Validated triplets of an image folder (aligned arrays; image paths relative, ``/``)."""

    folder: Path  # the folder's real path
    index_path: Path
    triplet_id: np.ndarray  # object str
    text: np.ndarray
    domain: np.ndarray  # canonical domain names
    knob: np.ndarray
    image_corr: np.ndarray  # relative paths as written in the index (validated)
    image_adv: np.ndarray
    width_corr: np.ndarray  # int64
    height_corr: np.ndarray
    width_adv: np.ndarray
    height_adv: np.ndarray
    sha256_corr: np.ndarray  # object str: hash of the file as validated, to verify a copy
    sha256_adv: np.ndarray
    extra: np.ndarray  # object array of dict: the line's other fields
    line: np.ndarray  # int64: the index line of each triplet

    def __len__(self) -> int:
        return len(self.triplet_id)

    def source_path(self, rel: str) -> Path:
        """The validated real path of an image of this import (for copying)."""
        return resolve_inside(self.folder, rel)


def find_index(folder: str | Path) -> Path:
    """The index file of an image folder: exactly one of `INDEX_NAMES`."""
    f = Path(folder)
    found = [f / n for n in INDEX_NAMES if os.path.lexists(f / n)]
    if not found:
        raise InputError(f, f"no index file in the folder (expected one of {', '.join(INDEX_NAMES)})")
    if len(found) > 1:
        raise InputError(f, f"several index files ({', '.join(p.name for p in found)}): keep one")
    try:  # the folder's own index is one of its files: a link out of it is not followed
        resolve_inside(f, found[0].name, what="the index")
    except WorkstationError as e:
        raise InputError(found[0], str(e)) from None
    return found[0]


def _read_index_text(path: Path) -> str:
    st = regular_file(path, "index", missing="index file not found")
    if st.st_size > MAX_INDEX_BYTES:
        raise InputError(path, f"the index is {st.st_size:,} bytes; the limit is {MAX_INDEX_BYTES:,}")
    with open(path, "rb") as fh:
        data = fh.read(MAX_INDEX_BYTES + 1)
    if len(data) > MAX_INDEX_BYTES:
        raise InputError(path, f"the index is over the limit of {MAX_INDEX_BYTES:,} bytes")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise InputError(path, f"not UTF-8 text (byte 0x{data[e.start]:02x} at column {col})", line) from None
    nul = text.find("\x00")
    if nul >= 0:
        raise InputError(path, "the index contains a NUL character", text.count("\n", 0, nul) + 1)
    for i, ln in enumerate(text.split("\n"), start=1):
        if len(ln) > MAX_LINE_CHARS:
            raise InputError(path, f"line longer than {MAX_LINE_CHARS:,} characters", i)
    return text


def _jsonl_rows(path: Path, text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    from ...io.jsonl import object_of_line

    for lineno, ln in enumerate(text.split("\n"), start=1):
        obj = object_of_line(path, ln, lineno)
        if obj is not None:
            yield lineno, obj


def _csv_rows(path: Path, text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] | None = None
    prev_end = 0
    try:
        for row in reader:
            start = prev_end + 1
            prev_end = reader.line_num
            if not row or all(not c.strip() for c in row):
                continue
            if header is None:
                header = [h.strip() for h in row]
                missing = [k for k in REQUIRED if k not in header]
                if missing:
                    raise InputError(path, f"the CSV header lacks {', '.join(missing)}", start)
                dup = sorted({h for h in header if header.count(h) > 1})
                if dup or any(not h for h in header):
                    raise InputError(path, f"the CSV header has empty or repeated column names {dup}", start)
                continue
            if len(row) != len(header):
                raise InputError(path, f"expected {len(header)} columns as in the header, got {len(row)}", start)
            yield start, {h: v for h, v in zip(header, row) if h in REQUIRED or v != ""}
    except csv.Error as e:
        raise InputError(path, f"malformed CSV ({e})", prev_end + 1) from None
    if header is None:
        raise InputError(path, "the CSV file is empty (no header row)")


def _text_field(obj: dict[str, Any], key: str, path: Path, line: int, max_chars: int) -> str:
    if key not in obj or obj[key] is None:
        raise InputError(path, f"missing field '{key}'", line)
    v = obj[key]
    if not isinstance(v, str):
        raise InputError(path, f"field '{key}' must be text, got {type(v).__name__}", line)
    v = v.strip()
    if not v:
        raise InputError(path, f"field '{key}' is empty", line)
    if len(v) > max_chars:
        raise InputError(path, f"field '{key}' is longer than {max_chars} characters", line)
    if any(ord(c) < 32 and c not in "\t" for c in v):
        raise InputError(path, f"field '{key}' contains a control character", line)
    return v


def _finite_json(v: Any) -> bool:
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, dict):
        return all(_finite_json(x) for x in v.values())
    if isinstance(v, list):
        return all(_finite_json(x) for x in v)
    return True


def _image(folder: Path, rel: str, field: str, path: Path, line: int, limits: dict[str, int]) -> ImageInfo:
    try:
        real = resolve_inside(folder, rel, what=field)
        return image_info(real, max_side=limits["max_side"], max_pixels=limits["max_pixels"],
                          max_bytes=limits["max_bytes"])
    except InputError as e:
        raise InputError(path, f"{field} {quote(rel)}: {e.detail}", line) from None
    except WorkstationError as e:
        raise InputError(path, str(e), line) from None


def read_triplet_index(
    folder: str | Path,
    index: str | Path | None = None,
    *,
    max_side: int = DEFAULT_MAX_SIDE,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    max_image_bytes: int = DEFAULT_MAX_BYTES,
    max_triplets: int = MAX_TRIPLETS,
) -> ImportedTriplets:
    """Validate an image folder and its index (module doc) and return its triplets.

    ``index`` defaults to the one index file in ``folder`` (`find_index`); a ``.jsonl`` or
    ``.csv`` file elsewhere may be given. Image paths are relative to ``folder`` either way.
    """
    root = Path(folder)
    if not root.is_dir():
        raise InputError(root, "image folder not found")
    folder_real = Path(os.path.realpath(root))
    path = find_index(root) if index is None else Path(index)
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".csv"):
        raise InputError(path, "the index must be a .jsonl or .csv file")
    text = _read_index_text(path)
    rows = _jsonl_rows(path, text) if suffix == ".jsonl" else _csv_rows(path, text)
    limits = {"max_side": max_side, "max_pixels": max_pixels, "max_bytes": max_image_bytes}
    cols: dict[str, list[Any]] = {k: [] for k in (
        "triplet_id", "text", "domain", "knob", "image_corr", "image_adv", "width_corr", "height_corr",
        "width_adv", "height_adv", "sha256_corr", "sha256_adv", "extra", "line")}
    seen: dict[str, int] = {}
    for line, obj in rows:
        if len(seen) >= max_triplets:
            raise InputError(path, f"more than {max_triplets:,} triplets", line)
        tid = _text_field(obj, "triplet_id", path, line, 128)
        if not _ID_RE.match(tid):
            raise InputError(path, f"triplet_id {tid!r} may hold only letters, digits and . _ : - "
                                   "(starting with a letter or digit, at most 128)", line)
        if tid in seen:
            raise InputError(path, f"triplet_id {tid!r} repeats line {seen[tid]}", line)
        t = _text_field(obj, "text", path, line, MAX_TEXT_CHARS)
        dom = _text_field(obj, "domain", path, line, 40).lower()
        dom = _DOMAIN_ALIASES.get(dom, dom)
        if dom not in DOMAINS:
            raise InputError(path, f"domain {obj['domain']!r} is not one of {', '.join(DOMAINS)}", line)
        knob = _text_field(obj, "knob", path, line, 40).lower()
        if knob not in KNOBS:
            raise InputError(path, f"knob {obj['knob']!r} is not one of {', '.join(KNOBS)}", line)
        rc = _text_field(obj, "image_corr", path, line, 1024)
        ra = _text_field(obj, "image_adv", path, line, 1024)
        extra = {k: v for k, v in obj.items() if k not in REQUIRED}
        if not _finite_json(extra):
            raise InputError(path, "extra fields hold NaN or Infinity", line)
        if len(json.dumps(extra, ensure_ascii=False)) > MAX_EXTRA_CHARS:
            raise InputError(path, f"extra fields are longer than {MAX_EXTRA_CHARS:,} characters", line)
        ic = _image(folder_real, rc, "image_corr", path, line, limits)
        ia = _image(folder_real, ra, "image_adv", path, line, limits)
        if resolve_inside(folder_real, rc) == resolve_inside(folder_real, ra):
            raise InputError(path, f"image_corr and image_adv are the same file ({rc!r})", line)
        seen[tid] = line
        for k, v in (("triplet_id", tid), ("text", t), ("domain", dom), ("knob", knob), ("image_corr", rc),
                     ("image_adv", ra), ("width_corr", ic.width), ("height_corr", ic.height),
                     ("width_adv", ia.width), ("height_adv", ia.height), ("sha256_corr", ic.sha256),
                     ("sha256_adv", ia.sha256), ("extra", extra), ("line", line)):
            cols[k].append(v)
    if not seen:
        raise InputError(path, "the index holds no triplets")

    def obj_arr(k: str) -> np.ndarray:
        a = np.empty(len(cols[k]), dtype=object)
        a[:] = cols[k]
        return a

    return ImportedTriplets(
        folder=folder_real, index_path=path,
        **{k: obj_arr(k) for k in ("triplet_id", "text", "domain", "knob", "image_corr", "image_adv",
                                   "sha256_corr", "sha256_adv", "extra")},
        **{k: np.asarray(cols[k], np.int64) for k in ("width_corr", "height_corr", "width_adv", "height_adv",
                                                       "line")},
    )
