"""The commands reach a method only through the registry and the method object's optional hooks
(`workstation.evaluation.base.METHOD_HOOKS`): a method that defines a hook has it called by the
kernel's commands, one that does not needs nothing. Shown with the Lamp method of the tests
(`tests/toy_method`), which no command knows by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests import toy_method
from workstation.cli import main
from workstation.methods import get_method


@pytest.fixture()
def lamp() -> Any:
    with toy_method.registered(views=False):
        yield get_method(toy_method.NAME)


def _lamp_demo(folder: Path) -> None:
    assert main(["demo", "--method", toy_method.NAME, "--no-gui", "--project", str(folder)]) == 0


def test_a_command_that_changes_the_samples_calls_each_method_s_hook(lamp: Any, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "demo"
    _lamp_demo(folder)
    seen: list[Path] = []
    monkeypatch.setattr(lamp, "after_samples_changed", lambda project: seen.append(project.folder),
                        raising=False)
    assert main(["runs", "remove", "--project", str(folder), f"{toy_method.NAME}-demo", "--yes"]) == 0
    assert seen == [folder]  # once, with the project the command changed
    target = tmp_path / "merged"
    assert main(["merge", "--project", str(target), str(folder)]) == 0
    assert seen == [folder, target]
    capsys.readouterr()


def test_a_method_without_hooks_is_left_alone(lamp: Any, tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    _lamp_demo(folder)  # the Lamp method defines no hook: its part is `build_demo`'s
    assert not hasattr(lamp, "after_samples_changed")
    assert main(["runs", "remove", "--project", str(folder), f"{toy_method.NAME}-demo", "--yes"]) == 0


def test_the_demo_command_builds_and_shows_a_part_through_the_method_s_hooks(
        lamp: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    built: list[tuple[int, int]] = []

    def build_demo_part(project: Any, *, seeds: int, pairs: int, progress: Any = None,
                        workers: int | None = None) -> dict[str, Any]:
        built.append((seeds, pairs))
        return {**lamp.build_demo(project, small=True, progress=progress), "lamps": 12}

    monkeypatch.setattr(lamp, "demo_part", lambda seeds, pairs: (f"{pairs} lamps x {seeds}", "item"), raising=False)
    monkeypatch.setattr(lamp, "build_demo_part", build_demo_part, raising=False)
    monkeypatch.setattr(lamp, "demo_lines", lambda s: [f"  the lamps: {s['lamps']}"], raising=False)
    monkeypatch.setattr(lamp, "demo_summary", lambda project: {"lamps": 7}, raising=False)
    folder = tmp_path / "demo"
    assert main(["demo", "--method", toy_method.NAME, "--no-gui", "--project", str(folder),
                 "--seeds", "2", "--pairs", "3"]) == 0
    out = capsys.readouterr().out
    assert built == [(2, 3)]  # the command's own options reach the method
    assert f"[1/1] {toy_method.NAME}: building 3 lamps x 2…" in out
    assert "  the lamps: 12\n" in out and f"  {toy_method.NAME}:\n" not in out
    assert main(["demo", "--method", toy_method.NAME, "--no-gui", "--project", str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"demo project reused: {folder}" in out and "  the lamps: 7\n" in out  # the reused project's summary


def test_a_pipeline_s_builtin_suite_and_prompt_file_come_from_the_method_s_hooks(
        lamp: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.toy_method.core import lamp_suite
    from workstation.commands.pipeline import load_suite_with_lines

    monkeypatch.setattr(lamp, "pipeline_suite", lambda pairs, options: (lamp_suite(pairs), f"lamps:{pairs}"),
                        raising=False)
    prompts, label, lines = load_suite_with_lines("builtin", 5, None, toy_method.NAME)
    assert (len(prompts), label, lines) == (5, "lamps:5", {})
    own = tmp_path / "lamps.txt"
    own.write_text("two lamps\n", encoding="utf-8")
    first = lamp_suite(2)
    monkeypatch.setattr(lamp, "read_suite_file_with_lines",
                        lambda path: (first, {pid: 7 for pid in first.prompt_id.tolist()}), raising=False)
    prompts, label, lines = load_suite_with_lines(str(own), 5, None, toy_method.NAME)
    assert len(prompts) == 2 and label == str(own.resolve()) and set(lines.values()) == {7}


def test_every_hook_the_kernel_asks_a_method_for_is_declared() -> None:
    """The optional hooks the commands and the registry look up on a method object are the ones
    `METHOD_HOOKS` (and the `Method` protocol's notes) declare: none asked for in secret."""
    import re

    from workstation.evaluation.base import METHOD_HOOKS, Method

    root = Path(__file__).resolve().parents[2] / "workstation"
    asked: set[str] = set()
    for path in [*sorted((root / "commands").glob("*.py")), root / "methods" / "__init__.py"]:
        asked |= set(re.findall(r'getattr\(\s*(?:m|get_method\([^()]*\))\s*,\s*"(\w+)"', path.read_text("utf-8")))
    members = set(vars(Method)) | set(Method.__annotations__)  # what every method has
    assert asked - members == set(METHOD_HOOKS)
    base = (root / "evaluation" / "base.py").read_text("utf-8")
    assert all(f"``{name}" in base for name in METHOD_HOOKS)  # each described where `Method` is


def test_labels_export_writes_a_method_s_own_layout_through_its_hook(
        lamp: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "demo"
    _lamp_demo(folder)
    asked: list[dict[str, Any]] = []

    def write_label_file(project: Any, path: Path, **options: Any) -> int:
        asked.append({"folder": project.folder, "path": Path(path), **options})
        Path(path).write_text("lamps\n", encoding="utf-8")
        return 3

    monkeypatch.setattr(lamp, "write_label_file", write_label_file, raising=False)
    monkeypatch.setattr(lamp, "label_file_formats", ("lampish",), raising=False)
    out = tmp_path / "lamps.csv"
    assert main(["labels", "export", "--project", str(folder), "--out", str(out), "--task", toy_method.NAME,
                 "--format", "lampish", "--annotator", "ann"]) == 0
    assert out.read_text("utf-8") == "lamps\n"
    assert asked == [{"folder": folder, "path": out, "layout": "lampish", "all_events": False,
                      "annotator": "ann", "overwrite": False, "projects": [folder]}]
    assert f"wrote 3 labels (the latest standing one per target and annotator) of {toy_method.NAME}.sample" \
        in capsys.readouterr().out
    # a .jsonl file is the label log's layout, which takes no method's --format
    assert main(["labels", "export", "--project", str(folder), "--out", str(tmp_path / "l.jsonl"),
                 "--task", toy_method.NAME, "--format", "lampish"]) == 2
    assert f"--format lampish is a layout of {toy_method.NAME} labels" in capsys.readouterr().err
    assert len(asked) == 1


def test_labels_unblind_maps_neutral_ids_through_the_method_s_hook(
        lamp: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import csv

    from workstation.methods import get_method

    folder = tmp_path / "demo"
    _lamp_demo(folder)
    blind = tmp_path / "blind.csv"
    blind.write_text("target_id,value\nlamp#A,LIT\n", encoding="utf-8")
    seen: list[Path] = []

    def unblind(project: Any, path: Path) -> tuple[list[str], list[list[str]]]:
        seen.append(Path(path))
        return ["target_id", "value"], [["lamp-1", "LIT"]]

    monkeypatch.setattr(lamp, "unblind_label_file", unblind, raising=False)
    monkeypatch.delattr(type(get_method("protobias")), "unblind_label_file")  # the Lamp's the one hook
    out = tmp_path / "open.csv"
    assert main(["labels", "unblind", str(blind), "--project", str(folder), "--out", str(out)]) == 0
    assert seen == [blind]
    assert list(csv.reader(out.open(encoding="utf-8"))) == [["target_id", "value"], ["lamp-1", "LIT"]]
    assert f"wrote 1 label(s) of {blind}" in capsys.readouterr().out
