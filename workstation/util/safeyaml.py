"""The one way the project reads YAML: safe, small, without aliases, with line numbers.

* Only plain data (PyYAML's safe loader: no Python tags, no code).
* Anchors (``&a``) and aliases (``*a``) are refused: a few hundred bytes of nested aliases
  expand to gigabytes ("billion laughs"), and no configuration the project reads needs them.
* Files over `MAX_YAML_BYTES` are refused before they are parsed; nesting deeper than
  `MAX_DEPTH` is refused.
* Mappings come back as `LineDict` (a dict) that knows the line of each key, so a value error
  can name the file and the line (`line_of`); a key given twice is an error.
* Every problem is one `InputError` line naming the file and the line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..types import InputError
from .textio import decode_utf8, quote, read_bytes_capped

MAX_YAML_BYTES = 1 << 20  # 1 MiB: configs are a few KB
MAX_DEPTH = 64


class LineDict(dict):  # type: ignore[type-arg]
    """A mapping read from YAML; `lines[key]` is the 1-based line of the key."""

    lines: dict[Any, int]

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.lines = {}


def line_of(mapping: Any, key: Any) -> int | None:
    """The line of `key` in a mapping read by this module (None for other mappings)."""
    lines = getattr(mapping, "lines", None)
    return lines.get(key) if isinstance(lines, dict) else None


class _Refused(yaml.MarkedYAMLError):
    pass


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses anchors, aliases, duplicate keys and deep nesting."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise _Refused(problem=f"aliases (*{event.anchor[:40]}) are not allowed", problem_mark=event.start_mark)
        if getattr(event, "anchor", None) is not None:
            raise _Refused(problem=f"anchors (&{event.anchor[:40]}) are not allowed", problem_mark=event.start_mark)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(problem=f"nested more than {MAX_DEPTH} levels deep", problem_mark=event.start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _construct_map(loader: _StrictLoader, node: yaml.MappingNode) -> Any:
    data = LineDict()
    yield data
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise _Refused(problem="a mapping key must be a plain value", problem_mark=key_node.start_mark) from None
        if key in data:
            raise _Refused(problem=f"key {quote(key, 40)} is given twice (first on line {data.lines[key]})",
                           problem_mark=key_node.start_mark)
        data[key] = loader.construct_object(value_node, deep=True)
        data.lines[key] = key_node.start_mark.line + 1


MAX_INT_DIGITS = 40


def _construct_int(loader: _StrictLoader, node: yaml.ScalarNode) -> Any:
    digits = sum(c.isalnum() for c in str(node.value))
    if digits > MAX_INT_DIGITS:  # Python refuses to read a few thousand digits; no setting needs 40
        raise _Refused(problem=f"a whole number with {digits:,} digits (at most {MAX_INT_DIGITS})",
                       problem_mark=node.start_mark)
    return yaml.SafeLoader.construct_yaml_int(loader, node)


_StrictLoader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def _one_line(text: object) -> str:
    return " ".join(str(text or "").split())


def loads_yaml(text: str, source: object = "<yaml>") -> Any:
    """Parse YAML text (see the module doc); errors name `source` and the line."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_YAML_BYTES:
        raise InputError(source, f"YAML text is over the limit of {MAX_YAML_BYTES:,} bytes")
    loader: _StrictLoader | None = None
    try:
        loader = _StrictLoader(text)  # the reader refuses control characters here already
        return loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        if e.context_mark is not None and "<stream end>" in str(e.problem or ""):
            mark = e.context_mark  # "expected ']' but got the end": name where the open bracket is
        what = _one_line(e.problem) or _one_line(e.context) or "syntax error"
        if e.context and e.problem and not isinstance(e, _Refused):
            what = f"{_one_line(e.problem)} ({_one_line(e.context)})"
        line = None if mark is None else mark.line + 1
        col = "" if mark is None else f" at column {mark.column + 1}"
        raise InputError(source, f"not valid YAML: {what}{col}", line) from None
    except yaml.reader.ReaderError as e:
        line = text.count("\n", 0, max(0, e.position)) + 1
        raise InputError(source, f"not valid YAML: character {e.character!r} is not allowed", line) from None
    except yaml.YAMLError as e:
        raise InputError(source, f"not valid YAML: {_one_line(e)}") from None
    except RecursionError:
        raise InputError(source, f"not valid YAML: nested too deeply (more than {MAX_DEPTH} levels)") from None
    except (ValueError, OverflowError) as e:  # a value the constructors cannot read (a date out of range)
        raise InputError(source, f"not valid YAML: a value cannot be read ({_one_line(e)[:100]})") from None
    finally:
        if loader is not None:
            loader.dispose()


def load_yaml(path: str | Path, what: str = "YAML file", max_bytes: int = MAX_YAML_BYTES) -> Any:
    """Read and parse a YAML file (see the module doc)."""
    data = read_bytes_capped(path, max_bytes, what)
    return loads_yaml(decode_utf8(path, data), path)


def load_yaml_mapping(path: str | Path, what: str, expected: str) -> dict[Any, Any]:
    """A YAML file whose top level is a mapping (an empty file: an empty one); anything else is
    an error naming the file's first line and `expected`."""
    raw = load_yaml(path, what=what)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise InputError(path, expected, 1)
    return raw


__all__ = ["MAX_DEPTH", "MAX_YAML_BYTES", "LineDict", "line_of", "load_yaml", "load_yaml_mapping", "loads_yaml"]
