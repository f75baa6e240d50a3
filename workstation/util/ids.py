"""Identifiers read from outside (sample, prompt, run ids, annotator names).

An id is text (a whole number is accepted and written as text), not empty, at most `MAX_ID_LEN`
characters, without control characters (NUL, newline, tab, …): ids end up in file names,
CSV cells, log lines and SQL parameters, where such characters break or hide things.

An id that becomes a file or folder name (a job id: ``jobs/<job_id>/``) is stricter
(`check_name_id`): letters, digits, ``.``, ``_`` and ``-``, starting with a letter or digit, at
most `MAX_NAME_ID_LEN` characters — one path component that can only name a folder inside its
parent (no ``/``, ``\\``, ``..``, drive or leading dot). `check_job_id` is that check for job ids,
made where a job id comes in (a project's job rows, a merged shard, the command line) and
again wherever a path is built from one (`workstation.jobs.spec.JobPaths`).
"""

from __future__ import annotations

import re
from typing import Any

MAX_ID_LEN = 512
MAX_NAME_ID_LEN = 200
_NAME_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")


def check_id(value: Any, what: str = "id") -> str:
    """`value` as an id; ValueError with a one-line reason otherwise."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        kind = {list: "a list", dict: "an object", float: "a decimal number", bool: "a boolean"}.get(
            type(value), type(value).__name__)
        raise ValueError(f"{what} must be text, got {kind}")
    s = str(value).strip()
    if not s:
        raise ValueError(f"{what} is empty")
    if len(s) > MAX_ID_LEN:
        raise ValueError(f"{what} is {len(s)} characters long; the limit is {MAX_ID_LEN}")
    m = _CONTROL.search(s)
    if m:
        raise ValueError(f"{what} {s[:60]!r} holds a control character (U+{ord(m.group()):04X})")
    return s


def check_name_id(value: Any, what: str = "id") -> str:
    """`value` as an id that is also a safe folder name (module doc); ValueError otherwise."""
    from .textio import quote

    if not isinstance(value, str):
        raise ValueError(f"{what} must be text, got {quote(value)}")
    if len(value) > MAX_NAME_ID_LEN:
        raise ValueError(f"{what} {quote(value, 40)} is longer than {MAX_NAME_ID_LEN} characters")
    if not _NAME_ID.fullmatch(value):
        raise ValueError(f"{what} {quote(value, 40)} may hold only letters, digits, '.', '_' and '-' and must "
                         "start with a letter or digit")
    return value


def check_job_id(value: Any) -> str:
    """A job id (`check_name_id`): it names the job's folder ``jobs/<job_id>/``."""
    return check_name_id(value, "job id")


__all__ = ["MAX_ID_LEN", "MAX_NAME_ID_LEN", "check_id", "check_job_id", "check_name_id"]
