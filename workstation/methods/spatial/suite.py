"""Prompt suites: the built-in spatial suite, custom prompt files, content hashes.

The built-in spatial suite is the workstation's own data: object pairs drawn (seeded) from a
fixed list of COCO classes, each pair asked in the four relations so that every prompt has its
counterfactual twin (``A left_of B`` <-> ``B right_of A``, ``A above B`` <-> ``B below A``).
The four prompts of one object pair share a ``pair_id``; twins link each other through
``counterfactual_id``.

Custom suites come from a prompt file: SpatialBench-UC JSONL (one prompt object per line) or a
simple CSV with the columns ``prompt, relation, object_a, object_b`` (optional ``prompt_id``,
``counterfactual_id``, ``pair_id``). Every problem raises :class:`InputError` naming the file and
line.
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...dataset import Prompts
from ...demo.classes import DEMO_OBJECTS
from ...types import InputError, WorkstationError
from ...util.ids import check_id
from .data import PromptRows, prompt_columns, spatial_prompts
from .types import INVERSE_RELATION, RELATION_CODE, RELATIONS

# Thirty COCO classes used by the built-in suite (the ones the procedural demo draws).
SPATIAL_OBJECTS: tuple[str, ...] = DEMO_OBJECTS

# Text templates per relation; {a} / {b} include their article ("a cat", "an apple").
TEMPLATES: dict[str, str] = {
    "left_of": "A photo of {a} to the left of {b}.",
    "right_of": "A photo of {a} to the right of {b}.",
    "above": "A photo of {a} above {b}.",
    "below": "A photo of {a} below {b}.",
}

DEFAULT_VERSION = "builtin-1"
CSV_REQUIRED = ("prompt", "relation", "object_a", "object_b")
CSV_OPTIONAL = ("prompt_id", "counterfactual_id", "pair_id")


def with_article(name: str) -> str:
    """'cat' -> 'a cat', 'apple' -> 'an apple'."""
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def prompt_text(relation: str, a: str, b: str) -> str:
    """The built-in template text for `a relation b`."""
    return TEMPLATES[relation].format(a=with_article(a), b=with_article(b))


def _slug(name: str) -> str:
    return "-".join(name.split())


def spatial_suite(
    n_pairs: int = 50,
    seed: int = 1234,
    objects: Sequence[str] | None = None,
    version: str = DEFAULT_VERSION,
) -> Prompts:
    """The built-in spatial suite: `n_pairs` object pairs x 4 relations = 4·n_pairs prompts.

    For an object pair (A, B) the four prompts are, in order:
    ``A left_of B``, ``B right_of A`` (its twin), ``A above B``, ``B below A`` (its twin).
    Prompt ids name their content (``<version>_cat_left_of_dog``), pair ids the object pair
    (``<version>_pair_cat_dog``), so suites of other sizes or seeds agree on every shared id;
    the same arguments always give the same suite (and the same :func:`content_hash`).
    """
    objs = [o.strip().lower() for o in (SPATIAL_OBJECTS if objects is None else objects)]
    if any(not o for o in objs):
        raise WorkstationError("object names of a prompt suite must not be empty")
    if len(set(objs)) != len(objs):
        raise WorkstationError("object names of a prompt suite must be distinct")
    combos = list(itertools.combinations(objs, 2))
    if n_pairs < 1:
        raise WorkstationError(f"a spatial suite needs at least one object pair, got n_pairs={n_pairs}")
    if n_pairs > len(combos):
        raise WorkstationError(
            f"{len(objs)} objects make only {len(combos)} distinct pairs; n_pairs={n_pairs} is too many"
        )
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(combos), size=n_pairs, replace=False)
    flip = rng.random(n_pairs) < 0.5
    rows: list[tuple[str, str, str, str, str, str]] = []  # id, text, rel, a, b, pair
    cf: list[str] = []
    for ci, f in zip(pick.tolist(), flip.tolist()):
        a, b = combos[ci]
        if f:
            a, b = b, a
        # ids name the content, so suites of different sizes or seeds never give one id two texts
        pair = f"{version}_pair_{_slug(a)}_{_slug(b)}"
        ids = [f"{version}_{_slug(x)}_{rel}_{_slug(y)}" for rel, x, y in
               (("left_of", a, b), ("right_of", b, a), ("above", a, b), ("below", b, a))]
        for j, (rel, x, y) in enumerate(
            (("left_of", a, b), ("right_of", b, a), ("above", a, b), ("below", b, a))
        ):
            rows.append((ids[j], prompt_text(rel, x, y), rel, x, y, pair))
        cf.extend([ids[1], ids[0], ids[3], ids[2]])
    return spatial_prompts([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
                           [r[3] for r in rows], [r[4] for r in rows], counterfactual_id=cf,
                           pair_id=[r[5] for r in rows], suite=version)


def content_hash(prompts: Prompts) -> str:
    """sha256 (16 hex digits) of a suite's content, independent of row order and suite name."""
    pc = prompt_columns(prompts)
    rows = sorted(
        zip(
            prompts.prompt_id.astype(str).tolist(),
            prompts.text.astype(str).tolist(),
            [RELATIONS[int(r)] for r in pc.relation],
            pc.label_a.astype(str).tolist(),
            pc.label_b.astype(str).tolist(),
            prompts.twin_id.astype(str).tolist(),
            prompts.group_id.astype(str).tolist(),
        )
    )
    blob = json.dumps(rows, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:16]


# ---- custom prompt files ---------------------------------------------------------------------
def load_prompt_file(path: str | Path, suite: str | None = None) -> Prompts:
    """Read a custom prompt suite: SpatialBench-UC JSONL (``.jsonl``) or CSV (``.csv``).

    The suite name defaults to the file name without extension.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "prompt file not found")
    return load_prompt_file_with_lines(path, suite)[0]


def load_prompt_file_with_lines(path: str | Path, suite: str | None = None) -> tuple[Prompts, dict[str, int]]:
    """`load_prompt_file` and the line of each prompt id (for messages naming file and line)."""
    from .sbuc import parse_prompts_with_lines

    path = Path(path)
    if not path.is_file():
        raise InputError(path, "prompt file not found")
    name = suite or path.stem
    ext = path.suffix.lower()
    if ext in (".jsonl", ".ndjson"):
        return parse_prompts_with_lines(path, suite=name)
    if ext == ".csv":
        return _parse_csv(path, name)
    raise InputError(path, f"unsupported prompt file type {path.suffix!r}: expected .jsonl or .csv")


def _parse_csv(path: Path, suite: str) -> tuple[Prompts, dict[str, int]]:
    from ...util.textio import read_text

    text = read_text(path, what="prompt file")  # a byte that is not UTF-8 names its line
    reader = _RowStarts(csv.reader(text.splitlines(keepends=True), strict=True))  # an open quote never swallows rows
    try:
        return _parse_csv_rows(path, suite, reader)
    except csv.Error as e:
        raise InputError(path, f"malformed CSV ({e}) in the row that starts here", reader.line_num or None) from None


class _RowStarts:
    """A CSV reader whose ``line_num`` is the line the current row starts on (a quoted field may
    hold line breaks; an error is named by where its row starts)."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        self.line_num = 0
        self._end = 0

    def __iter__(self) -> "_RowStarts":
        return self

    def __next__(self) -> list[str]:
        self.line_num = self._end + 1
        row = next(self.reader)
        self._end = self.reader.line_num
        return row


def _parse_csv_rows(path: Path, suite: str, reader: Any) -> tuple[Prompts, dict[str, int]]:
    try:
        header = [h.strip().lower() for h in next(reader)]
    except StopIteration:
        raise InputError(path, "prompt file is empty") from None
    missing = [c for c in CSV_REQUIRED if c not in header]
    if missing:
        raise InputError(
            path,
            f"missing column(s) {', '.join(missing)} in the header "
            f"(expected {', '.join(CSV_REQUIRED)}; optional {', '.join(CSV_OPTIONAL)})",
            1,
        )
    col = {h: i for i, h in enumerate(header)}
    rows = PromptRows()
    lines: list[int] = []
    seen: dict[str, int] = {}
    for row in reader:
        line = reader.line_num
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise InputError(path, f"expected {len(header)} fields, got {len(row)}", line)
        get = lambda k: row[col[k]].strip() if k in col else ""  # noqa: E731
        for k in CSV_REQUIRED:
            if not get(k):
                raise InputError(path, f"empty field '{k}'", line)
        try:
            for k in ("prompt_id", "object_a", "object_b", "counterfactual_id", "pair_id"):
                if get(k):
                    check_id(get(k), k)
        except ValueError as e:
            raise InputError(path, str(e), line) from None
        if "\x00" in get("prompt"):
            raise InputError(path, "the prompt holds a NUL character", line)
        rel = get("relation").lower()
        if rel not in RELATION_CODE:
            raise InputError(
                path, f"unknown relation {get('relation')!r} (expected one of {', '.join(RELATIONS)})", line)
        a, b = get("object_a").lower(), get("object_b").lower()
        if a == b:
            raise InputError(path, f"object_a and object_b are the same object {a!r}", line)
        pid = get("prompt_id") or f"{suite}_{len(rows.ids):06d}"
        if pid in seen:
            raise InputError(path, f"duplicate prompt_id {pid!r} (first on line {seen[pid]})", line)
        seen[pid] = line
        rows.add(pid, get("prompt"), rel, a, b, get("counterfactual_id"), get("pair_id"))
        lines.append(line)
    if not rows.ids:
        raise InputError(path, "prompt file has no prompts")
    for i, c in enumerate(rows.counterfactual_id):
        if c and c not in seen:
            raise InputError(path, f"counterfactual_id {c!r} of {rows.ids[i]!r} is not in the file", lines[i])
    triples = list(zip(rows.relations, rows.label_a, rows.label_b))
    if "counterfactual_id" not in col:
        # link twins by content: A r B <-> B r^-1 A
        key = dict(zip(triples, rows.ids))
        rows.counterfactual_id = [key.get((INVERSE_RELATION[r], b, a), "") for r, a, b in triples]
    if "pair_id" not in col:
        groups: dict[frozenset[str], str] = {}
        for i, (_, a, b) in enumerate(triples):
            labels = frozenset((a, b))
            if labels not in groups:
                groups[labels] = f"{suite}_pair_{len(groups):04d}"
            rows.pair_id[i] = groups[labels]
    return rows.prompts(suite), seen


def write_prompt_file(prompts: Prompts, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write a suite as SpatialBench-UC prompt JSONL (readable by :func:`load_prompt_file`): an
    output the user named (`util.output`), an existing file replaced only with ``overwrite``."""
    from ...util.output import write_output_text

    path = Path(path)
    index = {p: i for i, p in enumerate(prompts.prompt_id.astype(str).tolist())}
    pc = prompt_columns(prompts)
    lines = []
    for i in range(len(prompts)):
        rec: dict[str, Any] = {
            "prompt_id": str(prompts.prompt_id[i]),
            "pair_id": str(prompts.group_id[i]),
            "version": str(prompts.suite[i]),
            "relation": RELATIONS[int(pc.relation[i])],
            "object_a": {"name": str(pc.label_a[i]), "coco_label": str(pc.label_a[i])},
            "object_b": {"name": str(pc.label_b[i]), "coco_label": str(pc.label_b[i])},
            "prompt": str(prompts.text[i]),
        }
        c = str(prompts.twin_id[i])
        if c and c in index:
            j = index[c]
            rec["counterfactual"] = {"prompt_id": c, "relation": RELATIONS[int(pc.relation[j])],
                                     "prompt": str(prompts.text[j])}
        lines.append(json.dumps(rec, ensure_ascii=False))
    write_output_text(path, "\n".join(lines) + "\n", "prompt file", overwrite=overwrite)
    return path
