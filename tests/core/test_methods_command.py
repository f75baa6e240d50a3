"""`main.py methods`: every registered method, its label keys and default settings."""

from __future__ import annotations

import pytest

from workstation.cli import main as cli_main
from workstation.methods import METHODS


def test_methods_lists_every_method_with_its_label_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["methods"]) == 0
    out = capsys.readouterr().out
    for name in METHODS.names():
        assert f"\n{name}: " in "\n" + out
    assert "labels spatial.verdict on each sample: P = pass, F = fail, U = undecidable" in out
    assert "labels metalogic.pair on each pair: A = Aligned" in out
    assert "t_det=0.2" in out  # the spatial checker's published default


def test_methods_name_selects_one_and_an_unknown_name_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["methods", "--name", "metalogic"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("metalogic: ") and "spatial" not in out.split("\n")[0]
    assert cli_main(["methods", "--name", "nosuch"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nosuch" in err
