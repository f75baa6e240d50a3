"""`main.py demo` says what it builds while it builds: a line per part with its counts and time,
and within a part how far it is (count and time left), even when the terminal shows no progress
bars (a pipe, an IDE console)."""

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
    assert int(m.group(1).replace(",", "")) == summary["methods"]["spatial"]["samples"] == 8  # 8 prompts x 1 seed


def test_demo_says_it_opens_the_window(tmp_path: Path, capsys, monkeypatch) -> None:
    import workstation.cli as cli
    from workstation.commands import demo

    calls = []
    monkeypatch.setattr(cli, "has_command", lambda name: True)
    monkeypatch.setattr(cli, "main", lambda argv: calls.append(argv) or 0)
    assert demo.open_gui(tmp_path) == 0
    assert calls == [["gui", "--project", str(tmp_path)]]
    assert capsys.readouterr().out == f"opening the workstation window on {tmp_path}…\n"


def test_a_hidden_bar_says_how_far_it_is_every_few_seconds(capsys) -> None:
    from workstation.progress import TerminalProgress

    now = [0.0]
    with TerminalProgress("spatial: scenes", unit="img", show=False, lines_every_s=5, label="[1/4] spatial",
                          noun="images", clock=lambda: now[0]) as bar:
        for t, done in [(0, 0), (2, 40), (4.9, 90), (6, 200), (8, 300), (12, 600), (20, 800)]:
            now[0] = t
            bar(done, 800)
    assert capsys.readouterr().out.splitlines() == [
        "  [1/4] spatial: 200/800 images (25%), about 18 s left",  # 200 in 6 s: 600 more take 18 s
        "  [1/4] spatial: 600/800 images (75%), about 4 s left",
        "  [1/4] spatial: 800/800 images (100%)",
    ]


def test_time_left_reads_in_minutes_and_hours() -> None:
    from workstation.progress import progress_text

    assert progress_text(100, 1000, 20.0, "items") == "100/1,000 items (10%), about 3 min 00 s left"
    assert progress_text(1, 1000, 30.0, "images") == "1/1,000 images (0%), about 8 h 19 min left"
    assert progress_text(0, 1000, 5.0, "images") == "0/1,000 images (0%)"


def test_demo_build_reports_each_stage_with_count_and_time_left(tmp_path: Path, capsys, monkeypatch) -> None:
    from workstation.commands import demo

    monkeypatch.setattr(demo, "PROGRESS_EVERY_S", 0.0)  # a line at every step the stage reports
    demo.build(tmp_path / "demo", seeds=1, workers=1, pairs=4, methods=["spatial"])
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("  [1/1] spatial: ")]
    assert lines, "the spatial stage said nothing while it ran"
    counts = []
    for ln in lines:
        m = re.fullmatch(r"  \[1/1\] spatial: (\d+)/16 images \(\d+%\)(, about \d+ s left)?", ln)
        assert m, ln
        counts.append(int(m.group(1)))
        assert (m.group(2) is not None) == (0 < counts[-1] < 16), ln  # time left while under way
    assert counts == sorted(counts) and counts[-1] == 16


def test_a_demo_of_one_method_other_than_spatial_builds_and_is_reused(tmp_path: Path, capsys) -> None:
    from workstation.cli import main

    folder = tmp_path / "demo"
    assert main(["demo", "--method", "dyeval", "--no-gui", "--project", str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"demo project built: {folder}" in out and "  dyeval:" in out and "checker (config" not in out
    assert main(["demo", "--method", "dyeval", "--no-gui", "--project", str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"demo project reused: {folder}" in out and "  dyeval:" in out
