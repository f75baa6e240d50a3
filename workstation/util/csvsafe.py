"""CSV cells that a spreadsheet will not run as formulas ("CSV injection").

The rule, for every CSV file the project writes (label exports, audit samples, report tables):

* a text cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a
  leading apostrophe: ``=HYPERLINK(…)`` is written ``'=HYPERLINK(…)``, which Excel, LibreOffice
  and Google Sheets show as text;
* a text cell that already starts with an apostrophe gets one more (``'abc`` → ``''abc``), so
  that the rule can be undone without guessing;
* numbers are written as numbers (``-0.5`` stays a number).

Reading our own CSV back (`labels import`, which also reads a filled-in audit sample) undoes it: one leading apostrophe is
removed when the next character is one of the characters above or another apostrophe. So
every value survives an export and an import unchanged. A CSV from elsewhere whose cell
starts with ``'=`` loses that apostrophe on import — the same thing a spreadsheet shows.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..types import InputError

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_ESCAPED_START = FORMULA_START + ("'",)


def escape_cell(value: Any) -> Any:
    """The cell as it should be written: text is escaped, anything else is returned unchanged."""
    if isinstance(value, str) and value.startswith(_ESCAPED_START):
        return "'" + value
    return value


def unescape_cell(value: str) -> str:
    """Undo `escape_cell` on a text cell read from a CSV."""
    if len(value) >= 2 and value[0] == "'" and value[1] in _ESCAPED_START:
        return value[1:]
    return value


def escape_row(row: list[Any] | tuple[Any, ...]) -> list[Any]:
    return [escape_cell(v) for v in row]


def write_dict_rows(path: Any, rows: Sequence[Mapping[str, Any]]) -> None:
    """`rows` (dicts sharing the first one's keys, in its order) to a CSV file at `path`, a header
    line first and every cell formula-escaped (a report's own table: its folder is the report's)."""
    cols = list(rows[0])
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for r in rows:
            w.writerow(escape_row([r[c] for c in cols]))


__all__ = ["FORMULA_START", "escape_cell", "escape_row", "unescape_cell", "write_dict_rows"]


def numbered_rows(reader: Any, path: str | Path,
                  malformed: str = "malformed CSV ({e}) in the row that starts here") -> Iterator[tuple[int, list[str]]]:
    """The rows a strict `csv.reader` reads on, each with the line it starts on: a malformed row
    (an unterminated quote, a character after a closing quote, a field over the size limit) is
    one `InputError` naming that line (`malformed`, with the reader's reason as ``{e}``), where a
    lenient reader would swallow the rows after it into one field."""
    end = reader.line_num
    while True:
        start = end + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise InputError(path, malformed.format(e=e), start) from None
        end = reader.line_num
        yield start, row
