"""Small helpers shared by the whole core: JSON-safe values, atomic writes, group codes."""

from .atomic import atomic_path, atomic_write_bytes, atomic_write_text
from .grouping import factorize, group_codes
from .jsonsafe import dumps, jsonable

__all__ = ["atomic_path", "atomic_write_bytes", "atomic_write_text", "dumps", "factorize", "group_codes",
           "jsonable"]
