"""Reading text files from outside: a size cap and UTF-8 decoding errors that name the line.

Every text file the project reads from elsewhere (manifests, per-sample results, prompt files,
label files, YAML configs) goes through `read_text`: a file that is not valid UTF-8 gives one
`InputError` naming the file and the line of the first bad byte (not a byte offset), and a
file larger than the caller's limit is refused before it is read.

`quote(value)` is how a message repeats a value from outside: its repr, cut to a short prefix
with the full length said, so that a huge or hostile value never makes a huge message.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..types import InputError


def line_of_offset(data: bytes, offset: int) -> int:
    """1-based line number of byte `offset` in `data`."""
    return data.count(b"\n", 0, max(0, offset)) + 1


def decode_utf8(path: str | Path, data: bytes, *, bom: bool = True) -> str:
    """`data` as text; a UTF-8 error names the line (and the column of the bad byte)."""
    try:
        return data.decode("utf-8-sig" if bom else "utf-8")
    except UnicodeDecodeError as e:
        line = line_of_offset(data, e.start)
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise InputError(path, f"not UTF-8 text (byte 0x{data[e.start]:02x} at column {col})", line) from None


def regular_file(path: Path, what: str, missing: str | None = None, irregular: str | None = None) -> os.stat_result:
    """The status of ``path`` (symlinks are followed), which must be a regular file: opening a FIFO
    or a device could block or have side effects. ``what`` names it in the messages (``missing``:
    the one for a path that does not exist; ``irregular``: for one that is not a regular file)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError(path, missing or f"{what} not found") from None
    except OSError as e:
        raise InputError(path, f"cannot read the {what}: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(path, irregular or f"the {what} is not a regular file")
    return st


def read_bytes_capped(path: str | Path, max_bytes: int | None, what: str = "file") -> bytes:
    """The bytes of a regular file (symlinks are followed), refusing one over `max_bytes`."""
    path = Path(path)
    st = regular_file(path, what)
    if max_bytes is not None and st.st_size > max_bytes:
        raise InputError(path, f"the {what} is {st.st_size:,} bytes; the limit is {max_bytes:,} bytes")
    try:
        with open(path, "rb") as fh:
            data = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
    except OSError as e:
        raise InputError(path, f"cannot read the {what}: {e.strerror or e}") from None
    if max_bytes is not None and len(data) > max_bytes:  # grew while we looked
        raise InputError(path, f"the {what} is over the limit of {max_bytes:,} bytes")
    return data


def read_text(path: str | Path, max_bytes: int | None = None, what: str = "file") -> str:
    """A UTF-8 text file (a leading byte-order mark is dropped); see the module doc."""
    return decode_utf8(path, read_bytes_capped(path, max_bytes, what))


QUOTE_CHARS = 60


def quote(value: object, limit: int = QUOTE_CHARS) -> str:
    """``repr(value)``, or its first ``limit`` characters and how long it is (module doc)."""
    if isinstance(value, (str, bytes)) and len(value) > limit:
        return f"{value[:limit]!r}… ({len(value):,} characters)"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 192:
        return f"a whole number of about {int(value.bit_length() * 0.30103):,} digits"
    if isinstance(value, (list, tuple, dict, set)) and len(value) > 8:
        kind = type(value).__name__
        return f"a {kind} of {len(value):,} items"
    r = repr(value)
    return r if len(r) <= limit else f"{r[:limit]}… ({len(r):,} characters)"


__all__ = ["QUOTE_CHARS", "decode_utf8", "line_of_offset", "quote", "read_bytes_capped", "read_text"]
