"""Hostile scoring requests: model folders that cannot serve (empty, a broken or hostile config.json,
pickle-only weights, remote code, corrupt safetensors, no tokenizer) and bad options are refused in
one line before a job exists — no job row, no job folder, nothing else changed (`tests.hostile`)."""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile import Case, Place, assert_refused, cases_of
from workstation.cli import main

CONFIG = {"model_type": "clip", "architectures": ["CLIPModel"]}


def _safetensors(header: object, data: bytes = b"") -> bytes:
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


def model_folder(root: Path, config: bytes | None = json.dumps(CONFIG).encode(),
                 weights: dict[str, bytes] | None = None, tokenizer: bool = True) -> Path:
    """A model folder that passes every check unless a part is spoiled: config.json, a
    header-valid safetensors file, tokenizer and image-processor configs."""
    root.mkdir(parents=True)
    if config is not None:
        (root / "config.json").write_bytes(config)
    for name, data in (weights if weights is not None else
                       {"model.safetensors": _safetensors({"__metadata__": {"format": "pt"}})}).items():
        (root / name).write_bytes(data)
    if tokenizer:
        (root / "tokenizer.json").write_text("{}", encoding="utf-8")
        (root / "preprocessor_config.json").write_text("{}", encoding="utf-8")
    return root


def _score(make: Callable[[Path], Path | str], *extra: str) -> Callable[[Place], list[str]]:
    def argv(place: Place) -> list[str]:
        model = make(place.tmp / "model")
        return ["score", "--project", str(place.project), "--scorer", "clipscore", "--model", str(model), *extra]
    return argv


def case(id: str, make: Callable[[Path], Path | str], *words: str, file: str | None = None,
         line: int | None = None, extra: tuple[str, ...] = ()) -> Case:
    return Case(f"score-{id}", _score(make, *extra), file, line, words)


FOLDERS = [
    case("empty-folder", lambda d: (d.mkdir(), d)[1], "config.json is missing"),
    case("config-not-json", lambda d: model_folder(d, config=b"{not json"), "not a readable model config",
         file="config.json", line=1),
    case("config-deep", lambda d: model_folder(d, config=b"[" * 5000 + b"]" * 5000), "nested", file="config.json",
         line=1),
    case("config-5000-digits", lambda d: model_folder(d, config=b'{"model_type": "clip",\n "x": ' + b"9" * 5000 + b"}"),
         "5,000 digits", file="config.json", line=2),
    case("config-a-list", lambda d: model_folder(d, config=b"[1, 2]"), "not hold a JSON object", file="config.json"),
    case("config-nan", lambda d: model_folder(d, config=b'{"model_type": NaN}'), "NaN", file="config.json", line=1),
    case("config-architectures-text", lambda d: model_folder(d, config=json.dumps({**CONFIG, "architectures": "x" * 900})
                                                               .encode()), "architectures"),
    case("pickle-only", lambda d: model_folder(d, weights={"pytorch_model.bin": b"\x80\x04pickle"}),
         "no .safetensors", "only safetensors are loaded"),
    case("remote-code", lambda d: model_folder(d, config=json.dumps({
        "model_type": "evil_clip", "architectures": ["EvilModel"],
        "auto_map": {"AutoModel": "modeling_evil.EvilModel"}}).encode()), "'evil_clip'"),
    case("safetensors-truncated", lambda d: model_folder(d, weights={"model.safetensors": struct.pack("<Q", 1 << 40)}),
         "corrupt weights"),
    case("safetensors-header-a-list", lambda d: model_folder(d, weights={"model.safetensors": _safetensors([1, 2])}),
         "corrupt weights"),
    case("safetensors-data-missing", lambda d: model_folder(d, weights={"model.safetensors": _safetensors(
        {"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})}), "truncated"),
    case("no-tokenizer", lambda d: model_folder(d, tokenizer=False), "no tokenizer files"),
    case("model-is-a-file", lambda d: (d.write_bytes(b"x"), d)[1], "is a file"),
    case("model-missing", lambda d: d / "nowhere", "not found"),
]


def _options(*args: str) -> Callable[[Place], list[str]]:
    return lambda p: ["score", "--project", str(p.project), *args]


OPTIONS = [
    Case("score-unknown-scorer", _options("--scorer", "nosuch", "--model", "x"), None, None, ("unknown scorer",)),
    Case("score-batch-size-0", _options("--scorer", "fake", "--batch-size", "0"), None, None, ("batch size",)),
    Case("score-shard-5-of-4", _options("--scorer", "fake", "--shard", "5/4"), None, None, ("shard",)),
    Case("score-unknown-run", _options("--scorer", "fake", "--run", "nosuch"), None, None, ("nosuch",)),
    Case("score-nothing-to-score", _options("--scorer", "fake", "--method", "protobias"), None, None,
         ("no samples with images",)),
    Case("score-no-model", _options("--scorer", "clipscore"), None, None, ("needs a model",)),
]

CASES = cases_of(FOLDERS, OPTIONS)


def test_enough_cases() -> None:
    assert len(CASES) >= 10


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sc") / "p"
    assert main(["generate", "--project", str(folder), "--suite", "builtin", "--pairs", "1", "--model", "procedural",
                 "--seeds", "1", "--width", "64", "--height", "64"]) == 0
    return folder


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_scoring_request(case: Case, tmp_path: Path, template: Path, capsys: pytest.CaptureFixture[str]) -> None:
    place = Place(tmp_path)
    place.project = tmp_path / "p"
    shutil.copytree(template, place.project)
    assert_refused(case, place, capsys)


def test_a_folder_that_passes_the_checks_makes_a_job(tmp_path: Path, template: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The checks refuse what cannot serve, not every folder: the spoiled parts above are the reasons."""
    proj = tmp_path / "p"
    shutil.copytree(template, proj)
    model = model_folder(tmp_path / "model")
    assert main(["score", "--project", str(proj), "--scorer", "clipscore", "--model", str(model), "--no-run"]) == 0
    assert "job score-clipscore-" in capsys.readouterr().out
