"""One output-path policy for every command that writes a file or a folder (`util.outpaths`).

The commands that take an output path are found in the command registry itself: every parser of
`workstation.cli.build_parser` (the kernel's commands, each method's `METHOD.commands()`, the
UI's `gui`) is walked, and every option that names an output (``--out``, ``--todo``,
``--output``, ...) must be declared through `command_base.add_output_arg` and must be in
`INVOKE`, the table of how to run each — a command that registers such an option without an entry
here fails `test_every_output_option_is_declared_and_in_the_table`.

Each command is then pointed at each forbidden target: the project's database and its
write-ahead log, a file inside ``images/`` and inside ``jobs/<job>/``, a file or folder of the
project folder outside its ``exports/`` and ``reports/``, the project folder itself, an existing
file the program did not write (without ``--overwrite``), a link (with ``--overwrite``), and the
hostile spellings of the same places (``..``, a relative path, a trailing slash, another case, the
project through a link, a link above the target into the project). Each is refused with exit code
2 and one line naming the path, and nothing changes: the project's tables and files
(`tests.digest`) and everything beside it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.digest import project_digest, tree_digest
from tests.hostile import MAX_MESSAGE, assert_one_line
from workstation.cli import build_parser, main

VICTIM_TEXT = "the victim: every number here took a year\n"
THESIS_TEXT = "my thesis, written by hand\n"


@dataclass(frozen=True)
class Invoke:
    """How to run a command that writes ``out``: ``argv(project, out)``; ``name``: a valid name for
    its output (the suffix it requires); ``folder``: it writes a folder."""

    argv: Callable[[str, str], list[str]]
    name: str
    folder: bool = False


BLIND_EXPORT: list[Path] = []  # a (header-only) blind ProtoBias export, written beside the template


def _unblind(p: str, o: str) -> list[str]:
    return ["labels", "unblind", str(BLIND_EXPORT[-1]), "--project", p, "--out", o]


# (command path, option) -> how to invoke it; every output option of the registry must be here
INVOKE: dict[str, Invoke] = {
    "suite --out": Invoke(lambda p, o: ["suite", "--method", "metalogic", "--set", "n_pairs=2", "--out", o],
                          "prompts.jsonl"),
    "report --out": Invoke(lambda p, o: ["report", "--project", p, "--out", o], "report", folder=True),
    "labels export --out": Invoke(lambda p, o: ["labels", "export", "--project", p, "--out", o], "labels.csv"),
    "labels unblind --out": Invoke(_unblind, "unblinded.csv"),
    "labels select --json": Invoke(lambda p, o: ["labels", "select", "--project", p, "--json", o], "selection.json"),
    "raters --json": Invoke(lambda p, o: ["raters", "--project", p, "--boot", "0", "--json", o], "raters.json"),
    "judges --json": Invoke(lambda p, o: ["judges", "--project", p, "--json", o], "judges.json"),
    "audit adjudicate --json": Invoke(lambda p, o: ["audit", "adjudicate", "--project", p, "--task", "spatial.verdict",
                                                    "--list", "--json", o], "adjudication.json"),
    "dyeval show --todo": Invoke(lambda p, o: ["dyeval", "show", "--project", p, "--todo", o], "todo.csv"),
    "dyeval export --out": Invoke(lambda p, o: ["dyeval", "export", "--project", p, "--out", o], "tree.json"),
    "export-sbuc --out": Invoke(lambda p, o: ["export-sbuc", "--project", p, "--run", "demo_procedural",
                                              "--out", o], "per_sample.jsonl"),
    "audit-sample --out": Invoke(lambda p, o: ["audit-sample", "--project", p, "--size", "4", "--seed", "1",
                                               "--out", o], "audit.csv"),
    "audit-metrics --out": Invoke(lambda p, o: ["audit-metrics", "--project", p, "--out", o], "metrics.json"),
    "calibrate --out": Invoke(lambda p, o: ["calibrate", "--project", p, "--grid", "tau=0.3,0.5", "--out", o],
                              "calibration.json"),
}

# an option that names something to write, by its name (a new writer's ``--out``, ``--output``,
# ``--todo``, ``--save``, ``--dest``, ``--export-to`` ...)
OUTPUT_FLAG = re.compile(r"^--(out|output|todo|save|dest|destination|export|write|to|target)([-_].*)?$")


# ---- the registry ------------------------------------------------------------------------------

def _parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from _parsers(sub, (*path, name))


def output_options(parser: argparse.ArgumentParser) -> tuple[dict[str, argparse.ArgumentParser], list[str]]:
    """Every output option of the command line, ``"PATH --flag"`` → its parser; and the problems
    found (an output option not declared through `add_output_arg`, a missing ``--overwrite``)."""
    from workstation.command_base import OUTPUTS_DEST

    found: dict[str, argparse.ArgumentParser] = {}
    problems: list[str] = []
    for path, p in _parsers(parser):
        declared = {dest for dest, *_ in (p.get_default(OUTPUTS_DEST) or ())}
        for a in p._actions:
            flags = [f for f in a.option_strings if OUTPUT_FLAG.match(f)]
            if not flags and a.dest not in declared:
                continue
            key = f"{' '.join(path)} {a.option_strings[0] if a.option_strings else a.dest}"
            found[key] = p
            if a.dest not in declared:
                problems.append(f"{key}: not declared through command_base.add_output_arg")
        if declared and not any("--overwrite" in a.option_strings for a in p._actions):
            problems.append(f"{' '.join(path)}: no --overwrite")
    return found, problems


def test_every_output_option_is_declared_and_in_the_table() -> None:
    found, problems = output_options(build_parser(["ui.command"]))
    assert problems == []
    assert set(found) == set(INVOKE), "every command that writes a file must be in INVOKE (and only those)"
    for key, p in found.items():
        text = " ".join(p.format_help().split())
        assert "--overwrite" in text, key


def test_a_new_command_with_an_output_option_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """A method registering a command whose ``--out`` bypasses `add_output_arg` is reported."""
    from workstation.command_base import Command
    from workstation.methods import METHODS

    def register(sub: Any) -> None:
        q = sub.add_parser("rogue-export")
        q.add_argument("--project", type=Path)
        q.add_argument("--output", type=Path)

    class Rogue:
        def commands(self) -> tuple[Command, ...]:
            return (Command("rogue-export", register),)

    METHODS.register("rogue", Rogue())  # type: ignore[arg-type]
    try:
        found, problems = output_options(build_parser(["ui.command"]))
    finally:
        METHODS._entries.pop("rogue", None)
    assert "rogue-export --output" in found and set(found) != set(INVOKE)
    assert problems == ["rogue-export --output: not declared through command_base.add_output_arg"]


def test_commands_and_the_window_write_outputs_only_through_util_output() -> None:
    """The atomic writer knows no policy: a command (kernel or method) or the window that writes a
    file the user named goes through `util.output` (which asks `util.outpaths`)."""
    root = Path(__file__).resolve().parents[2]
    files = [*(root / "workstation" / "commands").glob("*.py"), *(root / "workstation" / "methods").glob("*/commands*.py"),
             *(root / "workstation" / "methods").glob("*/commands/*.py"), *(root / "ui").rglob("*.py")]
    assert len(files) > 20
    bypass = [f.relative_to(root).as_posix() for f in files
              if re.search(r"\batomic_(path|write_bytes|write_text)\b", f.read_text(encoding="utf-8"))]
    assert bypass == []


# ---- the project --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project every writing command can run on: the spatial demo (8 procedural images, verdicts)
    with a human label for each sample, a DyEval tree, a stored generation job (its folder under
    jobs/), and an exports/ folder."""
    from workstation.methods import get_method
    from workstation.methods.dyeval.config import DyEvalConfig
    from workstation.methods.dyeval.runner import DyEvalRunner
    from workstation.methods.spatial.store import SpatialStore
    from workstation.store import Project

    folder = tmp_path_factory.mktemp("policy") / "p"
    with Project.create(folder) as p:
        get_method("spatial").build_demo(p, small=True, workers=0)
        DyEvalRunner.create(p, DyEvalConfig(n_i=2, n_x=2), topics=["Material objects"])
        rows = p.con.execute("SELECT sample_id, verdict FROM spatial_verdicts ORDER BY sample_id").fetchall()
        SpatialStore(p).add_labels_bulk({"sample_id": [r[0] for r in rows], "annotator": ["alice"] * len(rows),
                                         "verdict": [str(r[1]) for r in rows]})
    assert main(["generate", "--project", str(folder), "--model", "procedural", "--pairs", "1", "--seeds", "1",
                 "--no-run"]) == 0
    (folder / "exports").mkdir()
    blind = folder.parent / "blind_labels.csv"
    blind.write_text("task,target_kind,target_id,annotator,value,notes,created_at,source,audit_set_id\n",
                     encoding="utf-8")
    BLIND_EXPORT.append(blind)
    return folder


@pytest.fixture(scope="module")
def template_digest(template: Path) -> dict[str, Any]:
    return project_digest(template)


@dataclass
class Place:
    tmp: Path
    project: Path
    outside: Path  # a folder of the user's beside the project: a victim file, a thesis

    @property
    def image(self) -> Path:
        return sorted((self.project / "images").rglob("*.png"))[0]

    @property
    def job(self) -> Path:
        (job,) = sorted((self.project / "jobs").iterdir())
        return job


@pytest.fixture
def place(tmp_path: Path, template: Path, monkeypatch: pytest.MonkeyPatch) -> Place:
    project = tmp_path / "p"
    shutil.copytree(template, project, symlinks=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text(VICTIM_TEXT, encoding="utf-8")
    os.symlink(project, tmp_path / "alias")  # the project through another path
    os.symlink(project / "images", tmp_path / "into")  # a link above a target, into the project
    monkeypatch.chdir(tmp_path)  # for relative paths
    return Place(tmp_path, project, outside)


# ---- the forbidden targets ------------------------------------------------------------------------

@dataclass(frozen=True)
class Target:
    """A forbidden target: ``make(place, name, folder)`` → (the path as typed, extra options)."""

    id: str
    make: Callable[[Place, str, bool], tuple[str, list[str]]]
    words: tuple[str, ...] = ()


def _existing(pl: Place, name: str, folder: bool) -> tuple[str, list[str]]:
    """An existing file (a folder, for a folder output) the program did not write."""
    target = pl.outside / name
    if folder:
        target.mkdir()
        (target / "thesis.tex").write_text(THESIS_TEXT, encoding="utf-8")
        return str(target), ["--overwrite"]  # not even with --overwrite: it holds no report marker
    target.write_text(THESIS_TEXT, encoding="utf-8")
    return str(target), []


def _link(pl: Place, name: str, folder: bool) -> tuple[str, list[str]]:
    os.symlink(pl.outside / "victim.txt", pl.outside / name)
    return str(pl.outside / name), ["--overwrite"]


def _dangling_link(pl: Place, name: str, folder: bool) -> tuple[str, list[str]]:
    os.symlink(pl.outside / "made-through-the-link", pl.outside / name)
    return str(pl.outside / name), ["--overwrite"]


TARGETS = [
    Target("database", lambda pl, n, f: (str(pl.project / "project.duckdb"), []), ("database",)),
    Target("database-overwrite", lambda pl, n, f: (str(pl.project / "project.duckdb"), ["--overwrite"]),
           ("database",)),
    Target("wal", lambda pl, n, f: (str(pl.project / "project.duckdb.wal"), ["--overwrite"]), ("write-ahead log",)),
    Target("image", lambda pl, n, f: (str(pl.image), ["--overwrite"]), ("images/",)),
    Target("new-in-images", lambda pl, n, f: (str(pl.project / "images" / n), []), ("images/",)),
    Target("job-spec", lambda pl, n, f: (str(pl.job / "spec.json"), ["--overwrite"]), ("jobs/",)),
    Target("new-in-job", lambda pl, n, f: (str(pl.job / n), []), ("jobs/",)),
    Target("project-root", lambda pl, n, f: (str(pl.project / n), []), ("project folder",)),
    Target("project-subfolder", lambda pl, n, f: (str(pl.project / "notes" / n), []), ("notes/",)),
    Target("exports-itself", lambda pl, n, f: (str(pl.project / "exports"), ["--overwrite"]), ("exports/",)),
    Target("project-folder", lambda pl, n, f: (str(pl.project), ["--overwrite"]), ("project folder",)),
    Target("project-folder-slash", lambda pl, n, f: (str(pl.project) + "/", ["--overwrite"])),
    Target("above-the-project", lambda pl, n, f: (str(pl.tmp), ["--overwrite"])),
    Target("dotdot", lambda pl, n, f: (f"{pl.project}/exports/../project.duckdb", []), ("database",)),
    Target("relative", lambda pl, n, f: ("p/images/../project.duckdb", []), ("database",)),
    Target("other-case", lambda pl, n, f: (str(pl.project / "PROJECT.DUCKDB"), [])),
    Target("project-through-a-link", lambda pl, n, f: (str(pl.tmp / "alias" / "project.duckdb"), []),
           ("database",)),
    Target("link-above-into-the-project", lambda pl, n, f: (str(pl.tmp / "into" / n), []), ("images/",)),
    Target("existing", _existing),
    Target("link", _link, ("symbolic link",)),
    Target("dangling-link", _dangling_link, ("symbolic link",)),
]
CASES = [(k, t) for k in INVOKE for t in TARGETS]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        rc = main(argv, extra_commands=("ui.command",))
    except SystemExit as e:  # argparse
        rc = int(e.code or 0)
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.parametrize(("key", "target"), CASES, ids=[f"{k.split(' --')[0]}-{t.id}" for k, t in CASES])
def test_a_forbidden_target_is_refused_and_nothing_changes(key: str, target: Target, place: Place,
                                                          template_digest: dict[str, Any],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    inv = INVOKE[key]
    path, extra = target.make(place, inv.name, inv.folder)
    beside = tree_digest(place.tmp, skip=("p",))  # the user's folder, the links beside the project
    rc, out, err = _run(inv.argv(str(place.project), path) + extra, capsys)
    assert rc == 2, f"exit {rc}\n{out}\n{err}"
    msg = assert_one_line(err, None, None, target.words)
    assert len(msg) < MAX_MESSAGE
    assert path.rstrip("/") in msg, f"{path!r} not named in {msg!r}"
    assert project_digest(place.project) == template_digest, "the project changed"
    assert tree_digest(place.tmp, skip=("p",)) == beside, "something beside the project changed"
    assert (place.outside / "victim.txt").read_text(encoding="utf-8") == VICTIM_TEXT


def test_enough_cases() -> None:
    assert len(CASES) == len(INVOKE) * len(TARGETS) >= 9 * 20


# ---- where outputs go ---------------------------------------------------------------------------

@pytest.mark.parametrize("key", list(INVOKE))
def test_an_output_lands_in_exports_and_is_replaced_only_with_overwrite(key: str, place: Place,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from workstation.evaluation.bundle import REPORT_MARKER
    from workstation.util.atomic import new_file_mode

    inv = INVOKE[key]
    for folder in ("exports", "reports"):
        out = place.project / folder / inv.name
        rc, _, err = _run(inv.argv(str(place.project), str(out)), capsys)
        assert rc == 0, err
        st = os.lstat(out)
        if inv.folder:
            assert (out / REPORT_MARKER).is_file() and (out / "index.html").is_file()
        else:
            assert os.path.isfile(out) and not os.path.islink(out)
            assert st.st_mode & 0o777 == new_file_mode(), "an export is as readable as any new file"
    before = tree_digest(out) if inv.folder else out.read_bytes()
    rc, _, err = _run(inv.argv(str(place.project), str(out)), capsys)
    assert rc == 2
    assert_one_line(err, str(out), None, ("already exists", "--overwrite"))
    assert (tree_digest(out) if inv.folder else out.read_bytes()) == before
    rc, _, err = _run(inv.argv(str(place.project), str(out)) + ["--overwrite"], capsys)
    assert rc == 0, err
    leftovers = [q.name for q in out.parent.iterdir() if q.name.startswith(".")]
    assert leftovers == [], "no temporary file or folder is left beside the output"


def test_outside_the_project_a_new_file_is_written(place: Place, capsys: pytest.CaptureFixture[str]) -> None:
    out = place.outside / "deep" / "labels.csv"
    rc, _, err = _run(INVOKE["labels export --out"].argv(str(place.project), str(out)), capsys)
    assert rc == 0, err
    assert out.read_text(encoding="utf-8").startswith("sample_id,")


# ---- the policy itself ----------------------------------------------------------------------------

def test_a_project_is_recognised_by_its_database_without_being_named(tmp_path: Path) -> None:
    from workstation.util.outpaths import OutputRefused, check_output

    other = tmp_path / "other"
    (other / "images").mkdir(parents=True)
    (other / "project.duckdb").write_bytes(b"")
    for bad in (other / "project.duckdb", other / "images" / "x.png", other / "x.csv"):
        with pytest.raises(OutputRefused, match=re.escape(str(bad))):
            check_output(bad)
    assert check_output(other / "exports" / "x.csv") == other / "exports" / "x.csv"
    # a project named with --project is protected even before it has its database
    with pytest.raises(OutputRefused, match="project folder"):
        check_output(tmp_path / "new" / "x.csv", projects=[tmp_path / "new"])


def test_a_file_that_appears_meanwhile_is_not_replaced_without_overwrite(tmp_path: Path) -> None:
    """The policy said yes (nothing there); a file appears while the export is written: it stays."""
    from workstation.util.outpaths import OutputRefused
    from workstation.util.output import output_file

    out = tmp_path / "labels.csv"
    with pytest.raises(OutputRefused, match="already exists"):
        with output_file(out, "label file") as tmp:
            tmp.write_text("the export\n", encoding="utf-8")
            out.write_text(THESIS_TEXT, encoding="utf-8")  # someone else's file, just now
    assert out.read_text(encoding="utf-8") == THESIS_TEXT
    assert [q.name for q in tmp_path.iterdir()] == ["labels.csv"]
