"""`main.py demo` says what it builds while it builds (issue 11, item 7): a line per part with
its counts and time, even when the terminal shows no progress bars (a pipe, an IDE console)."""

from __future__ import annotations

import re
from pathlib import Path


def test_demo_build_prints_a_line_per_part_with_counts(tmp_path: Path, capsys) -> None:
    from workstation.commands.demo import build

    summary = build(tmp_path / "demo", seeds=1, workers=1, pairs=2, methods=["spatial"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"building the demo project in {tmp_path / 'demo'}")
    # 2 pairs of the suite: 8 prompts (each pair's prompts and their counterfactual twins)
    assert out[1] == "[1/1] spatial: building scenes of 2 objects (8 prompts x 1 seeds)…"
    m = re.fullmatch(r"\[1/1\] spatial: done — ([\d,]+) images in (\d+\.\d) s", out[2])
    assert m, out[2]
    assert int(m.group(1).replace(",", "")) == summary["samples"] == 8  # 8 prompts x 1 seed


def test_demo_says_it_opens_the_window(tmp_path: Path, capsys, monkeypatch) -> None:
    import workstation.cli as cli
    from workstation.commands import demo

    calls = []
    monkeypatch.setattr(cli, "has_command", lambda name: True)
    monkeypatch.setattr(cli, "main", lambda argv: calls.append(argv) or 0)
    assert demo.open_gui(tmp_path) == 0
    assert calls == [["gui", "--project", str(tmp_path)]]
    assert capsys.readouterr().out == f"opening the workstation window on {tmp_path}…\n"
