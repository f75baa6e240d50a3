"""One check for every hostile-input case of every surface: the command is refused cleanly and
nothing changed.

A case builds one hostile input beside a project (or beside where a new project would go) and
names the command line that reads it. `assert_refused` runs it as `main.py` does and asserts
what a user would check:

* the exit code is not 0;
* stderr is exactly one line, ``error: …``, under `MAX_MESSAGE` characters, naming the file and
  the line where there is one (and the words the case lists), never a traceback;
* the project is unchanged: its database contents and its file tree (`tests.digest`);
* a sentinel folder beside the project (a thesis, a link) is unchanged;
* a folder the command would have created does not exist.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.digest import make_sentinel, project_digest, tree_digest

MAX_MESSAGE = 300


@dataclass
class Place:
    """Where a case builds its input: ``tmp`` (a folder of its own), ``project`` (an existing
    project that must not change, or None), ``sentinel`` beside it, and ``new`` (a folder the
    command must not leave behind, or None)."""

    tmp: Path
    project: Path | None = None
    new: Path | None = None
    sentinel: Path = field(init=False)

    def __post_init__(self) -> None:
        self.sentinel = make_sentinel(self.tmp / "sentinel")


@dataclass
class Case:
    id: str
    make: Callable[[Place], list[str]]
    file: str | None = None  # the file the message names (its name), None for an option or a folder
    line: int | None = None
    words: tuple[str, ...] = ()
    project: bool = True  # the case runs against an existing project
    check: Callable[[Place], None] | None = None  # anything more to assert afterwards


def cases_of(*groups: list[Case]) -> list[Case]:
    out = [c for g in groups for c in g]
    assert len({c.id for c in out}) == len(out), "case ids must be unique"
    return out


def assert_one_line(err: str, file: str | None, line: int | None, words: tuple[str, ...]) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one message, got:\n{err}"
    msg = lines[0]
    assert msg.startswith("error: "), msg
    assert "Traceback" not in err
    assert len(msg) < MAX_MESSAGE, f"{len(msg)} characters: {msg}"
    if file is not None:
        where = f"{file}:{line}:" if line is not None else file
        assert where in msg, f"{where!r} not in {msg!r}"
    for w in words:
        assert w.lower() in msg.lower(), f"{w!r} not in {msg!r}"
    return msg


def assert_refused(case: Case, place: Place, capsys: pytest.CaptureFixture[str]) -> str:
    """Run the case's command (module doc); returns its message."""
    from workstation.cli import main

    argv = case.make(place)
    before = project_digest(place.project) if place.project is not None else None
    sentinel = tree_digest(place.sentinel)
    assert sentinel
    capsys.readouterr()
    try:
        rc = main(argv, extra_commands=("ui.command",))
    except SystemExit as e:  # argparse
        rc = int(e.code or 0)
    out = capsys.readouterr()
    assert rc != 0, f"exit code {rc}; stdout:\n{out.out}\nstderr:\n{out.err}"
    msg = assert_one_line(out.err, case.file, case.line, case.words)
    if place.project is not None:
        assert project_digest(place.project) == before, "the project changed"
    assert tree_digest(place.sentinel) == sentinel, "the sentinel folder beside the project changed"
    if place.new is not None:
        assert not place.new.exists(), f"{place.new} was left behind"
    if case.check is not None:
        case.check(place)
    return msg


__all__ = ["Case", "MAX_MESSAGE", "Place", "assert_one_line", "assert_refused", "cases_of"]
