"""Hostile ProtoBias inputs (triplet folders and their index, configs, suite options): each is refused
in one line naming the file and line, and nothing changes (`tests.hostile`)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import Case, Place, assert_refused, cases_of
from tests.methods.protobias.folders import _png, make_folder
from workstation.cli import main


def _import(place: Place, spoil: Callable[[Path], None], fmt: str = "jsonl", *extra: str) -> list[str]:
    src = make_folder(place.tmp / "f", n=3, fmt=fmt)
    spoil(src)
    target = place.project if place.project is not None else place.tmp / "new" / "p"
    if place.project is None:
        place.new = place.tmp / "new"
    return ["protobias", "import", str(src), "--project", str(target), *extra]


def _line(n: int, change: Callable[[dict[str, Any]], Any]) -> Callable[[Path], None]:
    def spoil(src: Path) -> None:
        f = src / "index.jsonl"
        rows = f.read_text(encoding="utf-8").splitlines()
        obj = json.loads(rows[n - 1])
        change(obj)
        rows[n - 1] = json.dumps(obj)
        f.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return spoil


def _raw(n: int, text: str) -> Callable[[Path], None]:
    def spoil(src: Path) -> None:
        f = src / "index.jsonl"
        rows = f.read_text(encoding="utf-8").splitlines()
        rows[n - 1] = text
        f.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return spoil


def _index_link_out(src: Path) -> None:
    outside = src.parent / "elsewhere.jsonl"
    (src / "index.jsonl").rename(outside)
    os.symlink(outside, src / "index.jsonl")


def _image_link_out(src: Path) -> None:
    secret = src.parent / "secret.png"
    _png(secret, 40, 32, (0, 0, 0))
    (src / "img" / "1_corr.png").unlink()
    os.symlink(secret, src / "img" / "1_corr.png")


def _csv_rows(text: bytes) -> Callable[[Path], None]:
    return lambda src: (src / "index.csv").write_bytes(text)


CSV_HEAD = b"triplet_id,text,domain,knob,image_corr,image_adv\n"
CSV_ROW = b'tr%d,"A cat near a pond.",animals,count,img/%d_corr.png,img/%d_adv.jpg\n'


def imp(id: str, spoil: Callable[[Path], None], file: str | None, line: int | None, *words: str,
        fmt: str = "jsonl", extra: tuple[str, ...] = (), new: bool = False) -> Case:
    return Case(f"import-{id}", lambda p: _import(p, spoil, fmt, *extra), file, line, words, project=not new)


IMPORTS = [
    imp("seed-1e20", _line(2, lambda o: o.update(seed=1e20)), "index.jsonl", 2, "seed", "2**63-1"),
    imp("seed-2-pow-64", _line(1, lambda o: o.update(seed=2**64)), "index.jsonl", 1, "seed", "2**63-1"),
    imp("seed-infinity", _raw(3, '{"triplet_id": "tr2", "seed": Infinity}'), "index.jsonl", 3, "Infinity"),
    imp("seed-text", _line(2, lambda o: o.update(seed="abc")), "index.jsonl", 2, "seed"),
    imp("deep-json", _raw(2, "[" * 5000 + "]" * 5000), "index.jsonl", 2, "nested"),
    imp("5000-digits", _raw(1, '{"triplet_id": "tr0", "n": ' + "9" * 5000 + "}"), "index.jsonl", 1, "5,000 digits"),
    imp("index-link-out", _index_link_out, "index.jsonl", None, "outside"),
    imp("image-link-out", _image_link_out, "index.jsonl", 2, "outside"),
    imp("image-dotdot", _line(3, lambda o: o.update(image_adv="../../etc/passwd")), "index.jsonl", 3, ".."),
    imp("triplet-id-slash", _line(2, lambda o: o.update(triplet_id="../x")), "index.jsonl", 2, "triplet_id"),
    imp("text-huge", _line(1, lambda o: o.update(text="x" * 5000)), "index.jsonl", 1, "longer than 2000"),
    imp("csv-unterminated-quote", _csv_rows(CSV_HEAD + CSV_ROW % (0, 0, 0) + b'tr1,"A cat,animals,count,a,b\n'
                                            + CSV_ROW % (2, 2, 2)), "index.csv", 3, "malformed CSV", fmt="csv"),
    imp("csv-non-utf8", _csv_rows(CSV_HEAD + b'tr0,"caf\xe9",animals,count,img/0_corr.png,img/0_adv.jpg\n'),
        "index.csv", 2, "not UTF-8", fmt="csv"),
    imp("csv-seed-5000-digits", _csv_rows(CSV_HEAD.replace(b"\n", b",seed\n") + (CSV_ROW % (0, 0, 0)).replace(
        b"\n", b"," + b"9" * 5000 + b"\n")), "index.csv", 2, "seed", fmt="csv"),
    imp("run-id-dotdot", lambda src: None, None, None, "run id", extra=("--run-id", "../victim")),
    imp("into-new-folder", _line(2, lambda o: o.update(seed=1e20)), "index.jsonl", 2, "seed", new=True),
    imp("new-folder-link-out", _index_link_out, "index.jsonl", None, "outside", new=True),
]


def _config(place: Place, data: bytes) -> list[str]:
    f = place.tmp / "c.yaml"
    f.write_bytes(data)
    return ["evaluate", "--project", str(place.project), "--method", "protobias", "--config", str(f)]


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8))
CONFIGS = [
    Case("config-n-boot-inf", lambda p: _config(p, b"level: 0.9\nn_boot: .inf\n"), "c.yaml", 2, ("n_boot",)),
    Case("config-alias-bomb", lambda p: _config(p, BOMB.encode()), "c.yaml", 1, ("anchors",)),
    Case("config-boot-seed-huge", lambda p: _config(p, b"boot_seed: 99999999999999999999999999\n"), "c.yaml", 1,
         ("boot_seed",)),
    Case("config-non-utf8", lambda p: _config(p, b"name: caf\xe9\n"), "c.yaml", 1, ("not UTF-8",)),
    Case("config-range-infinite", lambda p: _config(p, b"n_boot: 10\nranges:\n  clipscore: [0, .inf]\n"), "c.yaml", 2,
         ("finite",)),
    Case("config-unknown-key", lambda p: _config(p, b"n_boot: 10\nbogus: 1\n"), "c.yaml", 2, ("bogus",)),
]


def _suite(place: Place, *sets: str) -> list[str]:
    place.new = place.tmp / "s.jsonl"
    return ["suite", "--method", "protobias", *[x for s in sets for x in ("--set", s)], "--out", str(place.new)]


OPTIONS = [
    Case("suite-seed-text", lambda p: _suite(p, "seed=abc"), None, None, ("seed", "abc"), project=False),
    Case("suite-n-1e400", lambda p: _suite(p, "n=1e400"), None, None, ("finite",), project=False),
    Case("suite-n-huge", lambda p: _suite(p, "n=100000000"), None, None, ("10,000",), project=False),
]

CASES = cases_of(IMPORTS, CONFIGS, OPTIONS)


def test_enough_cases() -> None:
    assert len(CASES) >= 10


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project that holds one import."""
    root = tmp_path_factory.mktemp("pb")
    assert main(["protobias", "import", str(make_folder(root / "first", n=2)), "--project", str(root / "p"),
                 "--run-id", "first"]) == 0
    return root / "p"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_protobias_input(case: Case, tmp_path: Path, template: Path, capsys: pytest.CaptureFixture[str]) -> None:
    place = Place(tmp_path)
    if case.project:
        place.project = tmp_path / "p"
        shutil.copytree(template, place.project)
    assert_refused(case, place, capsys)
