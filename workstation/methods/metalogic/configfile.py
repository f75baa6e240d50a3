"""MetaLogic config files: a flat mapping of `MetaLogicConfig` parameters in YAML or JSON.

    # metalogic.yaml
    name: strict
    score_threshold: 0.35
    near_band: 0.05
    axis_margin: 0.08

YAML is read with the project's one YAML loader (`workstation.util.safeyaml`: no anchors or
aliases — a file is data, not a graph); a key given twice is an error. Every problem raises `InputError` naming the file and, where it
has one, the line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...types import InputError
from ...util.jsonsafe import JSONInputError, loads_strict
from ...util.textio import decode_utf8, quote, read_bytes_capped
from .config import MetaLogicConfig

__all__ = ["load_config_file", "MAX_BYTES"]

MAX_BYTES = 1 << 20


def _yaml_mapping(path: Path, text: str) -> tuple[dict[str, Any], dict[str, int]]:
    from ...util.safeyaml import line_of, loads_yaml

    raw = loads_yaml(text, path)  # the one YAML loader: no anchors or aliases, lines in errors
    if raw is None:
        raise InputError(path, "the config file is empty; expected a mapping of MetaLogic parameters")
    if not isinstance(raw, dict):
        raise InputError(path, "expected a mapping of MetaLogic parameters (key: value lines)", 1)
    lines: dict[str, int] = {}
    for k, v in raw.items():
        line = line_of(raw, k)
        if not isinstance(k, str):
            raise InputError(path, "a parameter name must be plain text", line)
        if isinstance(v, (dict, list)):
            raise InputError(path, f"parameter {quote(k, 40)} must be a single value, not a list or a mapping", line)
        lines[k] = line or 1
    return dict(raw), lines


def _json_mapping(path: Path, text: str) -> tuple[dict[str, Any], dict[str, int]]:
    seen: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in items:
            if k in out:
                seen.append(k)
            out[k] = v
        return out

    try:
        raw = loads_strict(text, object_pairs_hook=pairs)
    except JSONInputError as e:
        raise InputError(path, f"not valid JSON: {e.message}", e.line) from None
    text_lines = text.splitlines()

    def line_of(key: str, nth: int = 1) -> int | None:
        pat = re.compile(r'"' + re.escape(key) + r'"\s*:')
        found = 0
        for no, line in enumerate(text_lines, start=1):
            found += len(pat.findall(line))
            if found >= nth:
                return no
        return None

    if seen:
        raise InputError(path, f"parameter {quote(seen[0], 40)} is given twice", line_of(seen[0], 2))
    if not isinstance(raw, dict):
        raise InputError(path, "expected a JSON object of MetaLogic parameters", 1)
    for k, v in raw.items():
        if isinstance(v, (dict, list)):
            raise InputError(path, f"parameter {quote(k, 40)} must be a single value, not a list or an object",
                             line_of(k))
    return raw, {k: line_of(k) or 1 for k in raw}


def load_config_file(path: str | Path) -> MetaLogicConfig:
    """A validated `MetaLogicConfig` from a YAML (.yaml / .yml) or JSON (.json) file."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise InputError(path, "MetaLogic config file not found") from None
    except OSError as e:
        raise InputError(path, f"cannot read the config file: {e.strerror or e}") from None
    if path.is_dir():
        raise InputError(path, "is a folder, not a config file")
    if size > MAX_BYTES:
        raise InputError(path, f"config file is {size:,} bytes; at most {MAX_BYTES:,}")
    text = decode_utf8(path, read_bytes_capped(path, MAX_BYTES, "config file"))
    ext = path.suffix.lower()
    if ext == ".json":
        raw, lines = _json_mapping(path, text)
    elif ext in (".yaml", ".yml"):
        raw, lines = _yaml_mapping(path, text)
    else:
        raise InputError(path, f"unsupported config file type {path.suffix!r}: expected .yaml, .yml or .json")
    known = MetaLogicConfig().to_dict()
    for k, v in raw.items():
        if k not in known:
            raise InputError(path, f"unknown MetaLogic parameter {quote(k, 40)} (known: {', '.join(sorted(known))})",
                             lines.get(k))
        try:  # one parameter at a time, so the error names its line
            MetaLogicConfig.from_dict({k: v})
        except (TypeError, ValueError) as e:
            raise InputError(path, " ".join(str(e).split())[:200], lines.get(k)) from None
    try:
        return MetaLogicConfig.from_dict(raw)
    except (TypeError, ValueError) as e:
        raise InputError(path, str(e)) from None
