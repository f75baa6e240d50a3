"""MetaLogic config files: a flat mapping of `MetaLogicConfig` parameters in YAML or JSON.

    # metalogic.yaml
    name: strict
    score_threshold: 0.35
    near_band: 0.05
    axis_margin: 0.08

YAML is read with the safe loader and without aliases (``*name``: a file is data, not a graph);
a key given twice is an error. Every problem raises `InputError` naming the file and, where it
has one, the line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ...types import InputError
from .config import MetaLogicConfig

__all__ = ["load_config_file", "MAX_BYTES"]

MAX_BYTES = 1 << 20


def _yaml_mapping(path: Path, text: str) -> tuple[dict[str, Any], dict[str, int]]:
    import yaml

    class Loader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: D401 - PyYAML hook
            if self.check_event(yaml.AliasEvent):
                ev = self.peek_event()
                raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed in a config file",
                                                  ev.start_mark)
            return super().compose_node(parent, index)

    try:
        node = yaml.compose(text, Loader=Loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise InputError(path, f"not valid YAML: {getattr(e, 'problem', None) or e}",
                         None if mark is None else mark.line + 1) from None
    if node is None:
        raise InputError(path, "the config file is empty; expected a mapping of MetaLogic parameters")
    if not isinstance(node, yaml.MappingNode):
        raise InputError(path, "expected a mapping of MetaLogic parameters (key: value lines)", node.start_mark.line + 1)
    lines: dict[str, int] = {}
    for k, v in node.value:
        line = k.start_mark.line + 1
        if not isinstance(k, yaml.ScalarNode):
            raise InputError(path, "a parameter name must be plain text", line)
        if k.value in lines:
            raise InputError(path, f"parameter {k.value!r} is given twice (first on line {lines[k.value]})", line)
        if not isinstance(v, yaml.ScalarNode):
            raise InputError(path, f"parameter {k.value!r} must be a single value, not a list or a mapping", line)
        lines[k.value] = line
    raw = yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader subclass
    return {str(k): v for k, v in raw.items()}, lines


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
        raw = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as e:
        raise InputError(path, f"not valid JSON: {e.msg}", e.lineno) from None
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
        raise InputError(path, f"parameter {seen[0]!r} is given twice", line_of(seen[0], 2))
    if not isinstance(raw, dict):
        raise InputError(path, "expected a JSON object of MetaLogic parameters", 1)
    for k, v in raw.items():
        if isinstance(v, (dict, list)):
            raise InputError(path, f"parameter {k!r} must be a single value, not a list or an object", line_of(k))
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
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(path, f"not UTF-8 text (byte {e.start + 1})") from None
    except OSError as e:
        raise InputError(path, f"cannot read the config file: {e.strerror or e}") from None
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
            raise InputError(path, f"unknown MetaLogic parameter {k!r} (known: {', '.join(sorted(known))})",
                             lines.get(k))
        try:  # one parameter at a time, so the error names its line
            MetaLogicConfig.from_dict({k: v})
        except (TypeError, ValueError) as e:
            raise InputError(path, str(e), lines.get(k)) from None
    try:
        return MetaLogicConfig.from_dict(raw)
    except (TypeError, ValueError) as e:
        raise InputError(path, str(e)) from None
