"""A corpus of bad inputs across every importer and option, checked by one parametrised test.

Every case builds one broken input in tmp_path (most start from the SpatialBench-UC fixture and
change one line) and runs the command line on it. What must hold, for every case:

* exit code 2;
* exactly one line on stderr, ``error: …``, naming the file and the line where there is a file
  (and the words the case lists), never a traceback;
* the project's tables are identical before and after (every row of every table), and its
  files are the same; a command that would have created a project leaves no folder behind.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.core.conftest import assert_one_clear_error, dump_tables, edit_json_line, edit_line
from workstation.cli import main
from workstation.store import DB_NAME, Project

SID1 = "sd15_boxdiff_v1_000000_seed0000"  # manifest / per-sample line 1 (prompt v1_000000: cake left_of bed)
IMG1 = "images/sd15_boxdiff_v1_000000_seed0000.png"


# ---------------------------------------------------------------------------------------------
# the context a case builds its input in
# ---------------------------------------------------------------------------------------------


class Ctx:
    def __init__(self, tmp: Path, imported: Path, labelled: Path, run_dir: Path, prompts: Path,
                 shard_template: Callable[[], Path]) -> None:
        self.tmp = tmp
        self._imported = imported
        self._labelled = labelled
        self._run_src = run_dir
        self._prompts_src = prompts
        self._shard_template = shard_template
        self.project: Path | None = None  # the project whose tables must not change
        self.template: Path | None = None  # the project it is a copy of
        self.new_target: Path | None = None  # a folder that must not exist afterwards

    # projects
    def use_project(self, labelled: bool = False) -> Path:
        dst = self.tmp / "project"
        self.template = self._labelled if labelled else self._imported
        shutil.copytree(self.template, dst)
        self.project = dst
        return dst

    def new_folder(self) -> Path:
        self.new_target = self.tmp / "new" / "project"
        return self.new_target

    # the run folder and prompt file
    @property
    def run(self) -> Path:
        dst = self.tmp / "run"
        if not dst.exists():
            shutil.copytree(self._run_src, dst)
        return dst

    @property
    def prompts(self) -> Path:
        dst = self.tmp / "prompts.jsonl"
        if not dst.exists():
            shutil.copy(self._prompts_src, dst)
        return dst

    def import_argv(self, new: bool = False, run_id: str = "second_run") -> list[str]:
        target = self.new_folder() if new else self.use_project()
        self.run, self.prompts  # noqa: B018 - materialise the copies
        return ["import-sbuc", str(self.run), "--prompts", str(self.prompts), "--project", str(target),
                "--run-id", run_id]

    def shard(self, name: str = "shard") -> Path:
        dst = self.tmp / name
        shutil.copytree(self._shard_template(), dst)
        return dst


@dataclass
class Case:
    id: str
    make: Callable[[Ctx], list[str]]
    file: str | None = None  # the file the message names (its name), None for option errors
    line: int | None = None
    words: tuple[str, ...] = ()
    extra_check: Callable[[Ctx], None] | None = field(default=None)


CASES: list[Case] = []


def case(id: str, file: str | None = None, line: int | None = None, *words: str,
         check: Callable[[Ctx], None] | None = None) -> Callable[[Callable[[Ctx], list[str]]], Callable[[Ctx], list[str]]]:
    def deco(fn: Callable[[Ctx], list[str]]) -> Callable[[Ctx], list[str]]:
        CASES.append(Case(id, fn, file, line, words, check))
        return fn
    return deco


def png(w: int = 512, h: int = 512) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.zeros((h, w, 3), np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def png_header_only(w: int, h: int) -> bytes:
    def chunk(k: bytes, b: bytes) -> bytes:
        return struct.pack(">I", len(b)) + k + b + struct.pack(">I", zlib.crc32(k + b) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b""))


def raw_line(path: Path, lineno: int, data: bytes) -> None:
    lines = path.read_bytes().split(b"\n")
    lines[lineno - 1] = data
    path.write_bytes(b"\n".join(lines))


# ---------------------------------------------------------------------------------------------
# import-sbuc: manifest.jsonl
# ---------------------------------------------------------------------------------------------


def manifest_case(id: str, line: int, change: Callable[[dict[str, Any]], Any], *words: str) -> None:
    def make(c: Ctx) -> list[str]:
        argv = c.import_argv()
        edit_json_line(c.run / "manifest.jsonl", line, change)
        return argv
    CASES.append(Case(f"manifest-{id}", make, "manifest.jsonl", line, words))


def gp(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda o: o["gen_params"].__setitem__(key, value)


manifest_case("sample-id-list", 2, lambda o: o.update(sample_id=["a", "b"]), "sample_id", "must be text")
manifest_case("sample-id-object", 3, lambda o: o.update(sample_id={"id": 1}), "sample_id", "must be text")
manifest_case("sample-id-nul", 4, lambda o: o.update(sample_id="abc\u0000def"), "control character")
manifest_case("sample-id-newline", 5, lambda o: o.update(sample_id="abc\ndef"), "control character")
manifest_case("sample-id-empty", 6, lambda o: o.update(sample_id=""), "sample_id")
manifest_case("prompt-id-unknown", 7, lambda o: o.update(prompt_id="v9_999999"), "not in the prompt file")
manifest_case("prompt-id-list", 8, lambda o: o.update(prompt_id=["v1_000000"]), "prompt_id", "must be text")
manifest_case("gen-params-missing", 9, lambda o: o.pop("gen_params"), "gen_params")
manifest_case("gen-params-list", 10, lambda o: o.update(gen_params=[512, 512]), "gen_params")
manifest_case("seed-2-pow-70", 11, gp("seed", 2**70), "seed", "2**63-1")
manifest_case("seed-true", 12, gp("seed", True), "seed", "whole number")
manifest_case("seed-string", 13, gp("seed", "3"), "seed", "whole number")
manifest_case("seed-negative", 14, gp("seed", -1), "seed")
manifest_case("seed-fraction", 15, gp("seed", 1.5), "seed", "whole number")
manifest_case("width-1e300", 16, gp("width", 1e300), "width", "16384")
manifest_case("width-negative", 17, gp("width", -5), "width")
manifest_case("width-string", 18, gp("width", "512"), "width", "must be a number")
manifest_case("width-true", 19, gp("width", True), "width", "must be a number")
manifest_case("width-fraction", 20, gp("width", 512.5), "width", "whole number")
manifest_case("height-zero", 21, gp("height", 0), "height")
manifest_case("height-nan", 22, gp("height", float("nan")), "height", "finite")
manifest_case("width-infinity", 23, gp("width", float("inf")), "width", "finite")
manifest_case("image-path-dotdot", 24, lambda o: o.update(image_path="../../../outside.png"), "escapes")
manifest_case("image-path-absolute", 25, lambda o: o.update(image_path="/etc/passwd"), "absolute")
manifest_case("image-path-list", 26, lambda o: o.update(image_path=["a.png"]), "image_path", "must be text")
manifest_case("image-path-nul", 27, lambda o: o.update(image_path="images/a\u0000.png"), "control character")
manifest_case("relation-unknown", 28, lambda o: o.update(relation="inside"), "unknown relation")
manifest_case("relation-list", 30, lambda o: o.update(relation=[]), "unknown relation")
manifest_case("relation-contradicts-prompt", 1, lambda o: o.update(relation="right_of"), "contradicts", "left_of")
manifest_case("object-contradicts-prompt", 1, lambda o: o.update(object_a="giraffe"), "contradicts", "cake")
manifest_case("duplicate-sample-id", 2, lambda o: o.update(sample_id=SID1), "duplicate sample_id")
manifest_case("run-id-list", 29, lambda o: o.update(run_id=["x"]), "run_id", "must be text")


@case("manifest-run-id-dotdot", "manifest.jsonl", 1, "run id", "--run-id")
def _(c: Ctx) -> list[str]:
    argv = c.import_argv()[:-2]  # the run id comes from the manifest
    edit_json_line(c.run / "manifest.jsonl", 1, lambda o: o.update(run_id="../escape"))
    return argv


@case("manifest-non-utf8", "manifest.jsonl", 4, "not UTF-8")
def _(c: Ctx) -> list[str]:
    argv = c.import_argv()
    raw_line(c.run / "manifest.jsonl", 4, b'{"sample_id": "caf\xe9"}')
    return argv


@case("manifest-malformed-json", "manifest.jsonl", 2, "malformed JSON")
def _(c: Ctx) -> list[str]:
    argv = c.import_argv()
    edit_line(c.run / "manifest.jsonl", 2, lambda old: old[:40])
    return argv


@case("manifest-line-is-a-list", "manifest.jsonl", 3, "JSON object")
def _(c: Ctx) -> list[str]:
    argv = c.import_argv()
    edit_line(c.run / "manifest.jsonl", 3, lambda old: "[1, 2, 3]")
    return argv


@case("manifest-deeply-nested", "manifest.jsonl", 5, "malformed JSON")
def _(c: Ctx) -> list[str]:
    argv = c.import_argv()
    edit_line(c.run / "manifest.jsonl", 5, lambda old: "[" * 100000 + "]" * 100000)
    return argv


@case("manifest-line-30-mb", "manifest.jsonl", 2, "16,777,216 bytes", "docs/security.md")
def _(c: Ctx) -> list[str]:  # strict JSON the format allows; over the program's own line limit
    argv = c.import_argv()
    edit_json_line(c.run / "manifest.jsonl", 2, lambda o: o.update(note="x" * 30_000_000))
    return argv


def test_the_jsonl_line_limit_is_the_one_docs_security_names() -> None:
    from workstation.io.jsonl import MAX_LINE_BYTES

    doc = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text(encoding="utf-8")
    row = next((ln for ln in doc.splitlines() if ln.startswith("| one line of a JSONL file")), "")
    assert f"{MAX_LINE_BYTES:,} bytes" in row and "manifest.jsonl" in row, "docs/security.md names no line limit"


@case("manifest-empty", "manifest.jsonl", None, "no samples")
def _(c: Ctx) -> list[str]:
    argv = c.import_argv()
    (c.run / "manifest.jsonl").write_text("\n\n")
    return argv


@case("manifest-missing", "manifest.jsonl", None, "not found")
def _(c: Ctx) -> list[str]:
    argv = c.import_argv()
    (c.run / "manifest.jsonl").unlink()
    return argv


# ---------------------------------------------------------------------------------------------
# import-sbuc: eval/per_sample.jsonl
# ---------------------------------------------------------------------------------------------


def per_sample_case(id: str, line: int, change: Callable[[dict[str, Any]], Any], *words: str) -> None:
    def make(c: Ctx) -> list[str]:
        argv = c.import_argv()
        edit_json_line(c.run / "eval" / "per_sample.jsonl", line, change)
        return argv
    CASES.append(Case(f"per-sample-{id}", make, "per_sample.jsonl", line, words))


def cc(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda o: o["conf_components"].__setitem__(key, value)


def det0(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda o: o["detectors"]["primary"]["detections"][0].__setitem__(key, value)


per_sample_case("conf-5", 3, lambda o: o.update(conf=5.0), "conf", "[0, 1]")
per_sample_case("conf-infinity", 4, lambda o: o.update(conf=float("inf")), "conf", "finite")
per_sample_case("conf-negative", 5, lambda o: o.update(conf=-0.1), "conf", "[0, 1]")
per_sample_case("conf-string", 6, lambda o: o.update(conf="high"), "conf", "must be a number")
per_sample_case("conf-true", 7, lambda o: o.update(conf=True), "conf", "must be a number")
per_sample_case("conf-missing", 8, lambda o: o.pop("conf"), "missing field 'conf'")
per_sample_case("component-minus-3", 9, cc("detection", -3), "conf_components.detection", "[0, 1]")
per_sample_case("component-1.5", 10, cc("geometry", 1.5), "conf_components.geometry")
per_sample_case("components-list", 11, lambda o: o.update(conf_components=[1, 2]), "conf_components")
per_sample_case("relation-contradicts-prompt", 1, lambda o: o.update(relation="right_of"), "contradicts")
per_sample_case("object-b-contradicts-prompt", 1, lambda o: o.update(object_b="cake"), "contradicts", "object_b")
per_sample_case("relation-unknown", 12, lambda o: o.update(relation="behind"), "unknown relation")
per_sample_case("verdict-unknown", 13, lambda o: o.update(verdict_raw="MAYBE"), "unknown verdict")
per_sample_case("verdict-missing", 14, lambda o: o.pop("verdict_raw"), "verdict_raw")
per_sample_case("sample-not-in-manifest", 15, lambda o: o.update(sample_id="nowhere"), "not in the manifest")
per_sample_case("sample-id-list", 16, lambda o: o.update(sample_id=[SID1]), "must be text")
per_sample_case("duplicate-sample-id", 17, lambda o: o.update(sample_id=SID1), "duplicate sample_id")
per_sample_case("prompt-id-differs", 18, lambda o: o.update(prompt_id="v1_000001"), "differs from the manifest")
per_sample_case("detections-not-a-list", 19,
                lambda o: o["detectors"]["primary"].update(detections={"a": 1}), "detections")
per_sample_case("score-1.5", 20, det0("score", 1.5), "score", "[0, 1]")
per_sample_case("score-true", 21, det0("score", True), "score", "must be a number")
per_sample_case("box-nan", 22, det0("box_xyxy", [float("nan"), 1, 2, 3]), "NaN")
per_sample_case("box-three-numbers", 23, det0("box_xyxy", [1, 2, 3]), "4 numbers")
per_sample_case("box-text", 24, det0("box_xyxy", [1, "2", 3, 4]), "non-numeric")
per_sample_case("box-inverted", 25, det0("box_xyxy", [300, 10, 100, 60]), "inverted box")
per_sample_case("box-outside", 26, det0("box_xyxy", [10, 10, 5000, 60]), "outside")
per_sample_case("label-missing", 27, lambda o: o["detectors"]["primary"]["detections"][0].pop("label"), "label")
per_sample_case("delta-text", 28, lambda o: o.setdefault("geometry", {}).update(delta="x"), "geometry.delta")
per_sample_case("iou-2", 29, lambda o: o.setdefault("geometry", {}).update(iou_ab=2.0), "geometry.iou_ab")
per_sample_case("reason-list", 30, lambda o: o.update(verdict_reason=["x"]), "verdict_reason", "text")


@case("per-sample-non-utf8", "per_sample.jsonl", 7, "not UTF-8")
def _(c: Ctx) -> list[str]:
    argv = c.import_argv()
    raw_line(c.run / "eval" / "per_sample.jsonl", 7, b'{"sample_id": "\xff\xfe"}')
    return argv


@case("per-sample-malformed", "per_sample.jsonl", 9, "malformed JSON")
def _(c: Ctx) -> list[str]:
    argv = c.import_argv()
    edit_line(c.run / "eval" / "per_sample.jsonl", 9, lambda old: old[: len(old) // 2])
    return argv


@case("per-sample-missing-a-result", "per_sample.jsonl", None, "have no result")
def _(c: Ctx) -> list[str]:
    argv = c.import_argv()
    p = c.run / "eval" / "per_sample.jsonl"
    lines = p.read_text().splitlines()
    p.write_text("\n".join(lines[:-1]) + "\n")
    return argv


# ---------------------------------------------------------------------------------------------
# import-sbuc: prompts.jsonl
# ---------------------------------------------------------------------------------------------


def prompts_case(id: str, line: int, change: Callable[[dict[str, Any]], Any], *words: str) -> None:
    def make(c: Ctx) -> list[str]:
        argv = c.import_argv()
        edit_json_line(c.prompts, line, change)
        return argv
    CASES.append(Case(f"prompts-{id}", make, "prompts.jsonl", line, words))


prompts_case("duplicate-id", 3, lambda o: o.update(prompt_id="v1_000000"), "duplicate prompt_id")
prompts_case("relation-unknown", 4, lambda o: o.update(relation="near"), "unknown relation")
prompts_case("id-list", 5, lambda o: o.update(prompt_id=["x"]), "prompt_id", "must be text")
prompts_case("id-newline", 6, lambda o: o.update(prompt_id="v1\n000005"), "control character")
prompts_case("object-empty", 7, lambda o: o.update(object_a=""), "object_a")
prompts_case("text-missing", 8, lambda o: o.pop("prompt"), "prompt")
prompts_case("counterfactual-unknown", 9, lambda o: o["counterfactual"].update(prompt_id="v9_nowhere"),
             "counterfactual", "not in the file")
prompts_case("text-conflicts-with-project", 10, lambda o: o.update(prompt="A photo of something else."),
             "already in the project", "another text")


@case("prompts-non-utf8", "prompts.jsonl", 2, "not UTF-8")
def _(c: Ctx) -> list[str]:
    argv = c.import_argv()
    raw_line(c.prompts, 2, b'{"prompt_id": "\xc3\x28"}')
    return argv


# ---------------------------------------------------------------------------------------------
# import-sbuc: eval/checker_config.yaml, gen_config.yaml, eval/provenance.json
# ---------------------------------------------------------------------------------------------

GOOD_SBUC_CONFIG = """\
thresholds:
  detection_score: 0.2
  min_area_fraction: 0.005
  ambiguity_delta: 0.1
  max_overlap_iou: 0.5
geometry:
  margin: 0.1
stability:
  enabled: true
  consistency_threshold: 0.5
  perturbations:
  - type: brightness
    factor: 1.1
confidence:
  geom_slope: 0.15
  weights:
    detection: 0.4
    geometry: 0.3
    stability: 0.2
    agreement: 0.1
"""


def sbuc_config_case(id: str, old: str | None, new: str | bytes, line: int | None, *words: str) -> None:
    def make(c: Ctx) -> list[str]:
        argv = c.import_argv()
        p = c.run / "eval" / "checker_config.yaml"
        if isinstance(new, bytes):
            p.write_bytes(new)
        else:
            text = GOOD_SBUC_CONFIG if old is None else GOOD_SBUC_CONFIG.replace(old, new)
            assert old is None or text != GOOD_SBUC_CONFIG
            p.write_text(text if old is not None else new)
        return argv
    CASES.append(Case(f"checker-config-{id}", make, "checker_config.yaml", line, words))


sbuc_config_case("weight-abc", "detection: 0.4", "detection: abc", 17, "confidence.weights.detection", "number")
sbuc_config_case("weight-1e308-text", "geometry: 0.3", "geometry: 1e308", 18, "weights.geometry", "1.0e-3")
sbuc_config_case("t-det-true", "detection_score: 0.2", "detection_score: true", 2, "detection_score", "boolean")
sbuc_config_case("margin-negative", "margin: 0.1", "margin: -1", 7, "margin", "[0, 1]")
sbuc_config_case("enabled-no-text", "enabled: true", "enabled: 'no'", 9, "stability.enabled", "true or false")
sbuc_config_case("resize-1e6", "  - type: brightness\n    factor: 1.1",
                 "  - type: resize\n    scale: 1000000.0", 13, "resize")
sbuc_config_case("weights-not-a-mapping", "  weights:\n    detection: 0.4\n    geometry: 0.3\n    stability: 0.2\n"
                 "    agreement: 0.1\n", "  weights: [1, 2]\n", 16, "confidence.weights", "mapping")
sbuc_config_case("syntax-error", "margin: 0.1", "margin: [0.1", 8, "not valid YAML")
sbuc_config_case("duplicate-key", "  margin: 0.1", "  margin: 0.1\n  margin: 0.2", 8, "given twice")
sbuc_config_case("python-tag", None, "thresholds: !!python/object/apply:os.system ['true']\n", 1,
                 "not valid YAML", "constructor")
sbuc_config_case("top-level-list", None, "- 1\n- 2\n", 1, "mapping")
sbuc_config_case("anchor", "geometry:\n  margin: 0.1", "geometry: &g\n  margin: 0.1", 6, "anchors")
sbuc_config_case("non-utf8", None, b"thresholds:\n  detection_score: 0.2\n# caf\xe9\n", 3, "not UTF-8")
sbuc_config_case("over-1-MiB", None, "# " + "x" * (1 << 20) + "\n", None, "limit")

BILLION_LAUGHS = ("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
                  + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
                            f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
                            f"*{chr(97 + i)}]\n" for i in range(8)))
sbuc_config_case("billion-laughs", None, BILLION_LAUGHS, 1, "anchors")


@case("gen-config-billion-laughs", "gen_config.yaml", 1, "anchors")
def _(c: Ctx) -> list[str]:
    argv = c.import_argv()
    (c.run / "gen_config.yaml").write_text(BILLION_LAUGHS)
    assert len(BILLION_LAUGHS) < 1000  # a few hundred bytes that would expand to 9**9 items
    return argv


@case("gen-config-syntax-error", "gen_config.yaml", 3, "not valid YAML")
def _(c: Ctx) -> list[str]:
    argv = c.import_argv()
    (c.run / "gen_config.yaml").write_text("generator:\n  type: boxdiff\n  steps: [30\n")
    return argv


@case("gen-config-non-utf8", "gen_config.yaml", 2, "not UTF-8")
def _(c: Ctx) -> list[str]:
    argv = c.import_argv()
    (c.run / "gen_config.yaml").write_bytes(b"generator:\n  type: \xff\n")
    return argv


@case("provenance-malformed", "provenance.json", 2, "malformed JSON")
def _(c: Ctx) -> list[str]:
    argv = c.import_argv()
    (c.run / "eval" / "provenance.json").write_text('{\n  "a": ,\n}\n')
    return argv


# ---------------------------------------------------------------------------------------------
# import-sbuc: images in the run folder (the manifest line names them)
# ---------------------------------------------------------------------------------------------


def image_case(id: str, put: Callable[[Path], None], *words: str) -> None:
    def make(c: Ctx) -> list[str]:
        argv = c.import_argv()
        (c.run / "images").mkdir(exist_ok=True)
        put(c.run / IMG1)
        return argv
    CASES.append(Case(f"image-{id}", make, "manifest.jsonl", 1, words))


def _symlink_out(p: Path) -> None:
    os.symlink("/etc/hostname", p)


def _symlink_dir_out(p: Path) -> None:
    images = p.parent
    shutil.rmtree(images)
    os.symlink("/etc", images)


image_case("symlink-to-a-system-file", _symlink_out, "link", "outside")
image_case("folder-symlink-out", _symlink_dir_out, "outside")
image_case("dangling-symlink", lambda p: os.symlink(p.parent / "nowhere.png", p), "link to nothing")
image_case("zero-bytes", lambda p: p.write_bytes(b""), "empty file")
image_case("text-file", lambda p: p.write_text("this is not a picture\n"), "not a PNG")
image_case("truncated-png", lambda p: p.write_bytes(png()[:200]), "corrupt or truncated")
image_case("header-claims-100000-squared", lambda p: p.write_bytes(png_header_only(100000, 100000)), "pixels")
image_case("wrong-size", lambda p: p.write_bytes(png(64, 64)), "64x64", "512x512")
image_case("a-folder", lambda p: p.mkdir(), "not a regular file")


@case("image-into-new-folder-leaves-nothing", "manifest.jsonl", 1, "not a PNG")
def _(c: Ctx) -> list[str]:
    argv = c.import_argv(new=True)
    (c.run / "images").mkdir()
    (c.run / IMG1).write_text("<svg/>")
    return argv


@case("per-sample-into-new-folder-leaves-nothing", "per_sample.jsonl", 2, "malformed JSON")
def _(c: Ctx) -> list[str]:
    argv = c.import_argv(new=True)
    edit_line(c.run / "eval" / "per_sample.jsonl", 2, lambda old: "{not json")
    return argv


@case("run-id-dotdot", None, None, "run id", "'../evil'")
def _(c: Ctx) -> list[str]:
    return c.import_argv(new=True, run_id="../evil")


@case("run-id-space", None, None, "run id")
def _(c: Ctx) -> list[str]:
    return c.import_argv(run_id="two words")


# ---------------------------------------------------------------------------------------------
# labels import: JSON, CSV, Parquet
# ---------------------------------------------------------------------------------------------


def labels_json_case(id: str, record: dict[str, Any], *words: str) -> None:
    def make(c: Ctx) -> list[str]:
        proj = c.use_project()
        f = c.tmp / "labels.json"
        good = {"sample_id": SID1, "human_verdict": "PASS", "notes": "", "timestamp": "2026-01-14T15:39:09.080Z"}
        f.write_text(json.dumps([good, {**good, **record}], indent=2))
        return ["labels", "import", str(f), "--project", str(proj)]
    CASES.append(Case(f"labels-json-{id}", make, "labels.json", 8, words))


labels_json_case("sample-id-list", {"sample_id": [SID1]}, "sample_id", "must be text")
labels_json_case("sample-id-nul", {"sample_id": "a\u0000b"}, "control character")
labels_json_case("sample-id-object", {"sample_id": {"x": 1}}, "must be text")
labels_json_case("verdict-unknown", {"human_verdict": "YES"}, "unknown verdict")
labels_json_case("verdict-number", {"human_verdict": 1}, "verdict")
labels_json_case("rating-5", {"rating": 5}, "rating")
labels_json_case("rating-true", {"rating": True}, "rating")
labels_json_case("timestamp-bad", {"timestamp": "yesterday"}, "timestamp")
labels_json_case("notes-object", {"notes": {"a": 1}}, "notes", "text")
labels_json_case("annotator-list", {"annotator": ["x"]}, "annotator", "must be text")
labels_json_case("unknown-sample", {"sample_id": "no_such_sample"}, "unknown sample")


@case("labels-json-non-utf8", "labels.json", 3, "not UTF-8")
def _(c: Ctx) -> list[str]:
    proj = c.use_project()
    f = c.tmp / "labels.json"
    f.write_bytes(b'[\n  {"sample_id": "x",\n   "notes": "caf\xe9"}\n]\n')
    return ["labels", "import", str(f), "--project", str(proj)]


@case("labels-json-malformed", "labels.json", 2, "malformed JSON")
def _(c: Ctx) -> list[str]:
    proj = c.use_project()
    f = c.tmp / "labels.json"
    f.write_text('[\n  {"sample_id": "x", "human_verdict": }\n]\n')
    return ["labels", "import", str(f), "--project", str(proj)]


@case("labels-json-nested-100k-deep", "labels.json", 3, "nested more than 64")
def _(c: Ctx) -> list[str]:  # the parser's stack ran out: a RecursionError traceback
    proj = c.use_project()
    f = c.tmp / "labels.json"
    f.write_text('[\n  {"sample_id": "' + SID1 + '", "human_verdict": "PASS"},\n  {"notes": '
                 + "[" * 100_000 + "]" * 100_000 + "}\n]\n")
    return ["labels", "import", str(f), "--project", str(proj)]


@case("labels-json-only-brackets-100k-deep", "labels.json", 1, "nested more than 64")
def _(c: Ctx) -> list[str]:
    proj = c.use_project()
    f = c.tmp / "labels.json"
    f.write_text("[" * 100_000)
    return ["labels", "import", str(f), "--project", str(proj)]


@case("labels-json-nan", "labels.json", 2, "NaN", "not a finite number")
def _(c: Ctx) -> list[str]:
    proj = c.use_project()
    f = c.tmp / "labels.json"
    f.write_text('[\n  {"sample_id": "' + SID1 + '", "human_verdict": "PASS", "rating": NaN}\n]\n')
    return ["labels", "import", str(f), "--project", str(proj)]


def labels_csv_case(id: str, body: str | bytes, line: int | None, *words: str) -> None:
    def make(c: Ctx) -> list[str]:
        proj = c.use_project()
        f = c.tmp / "labels.csv"
        if isinstance(body, bytes):
            f.write_bytes(body)
        else:
            f.write_text(body)
        return ["labels", "import", str(f), "--project", str(proj)]
    CASES.append(Case(f"labels-csv-{id}", make, "labels.csv", line, words))


CSV_HEAD = "sample_id,annotator,verdict,rating,notes,created_at\n"
labels_csv_case("non-utf8", (CSV_HEAD + f"{SID1},a,PASS,,ok,\n").encode() + b"x,a,PASS,,\xe9,\n", 3, "not UTF-8")
labels_csv_case("field-count", CSV_HEAD + f"{SID1},a,PASS,,ok\n", 2, "fields")
labels_csv_case("no-sample-id-column", "id,verdict\nx,PASS\n", 1, "sample_id")
labels_csv_case("verdict-unknown", CSV_HEAD + f"{SID1},a,PASSED,,,\n", 2, "unknown verdict")
labels_csv_case("rating-0", CSV_HEAD + f"{SID1},a,PASS,0,,\n", 2, "rating")
labels_csv_case("sample-id-control", CSV_HEAD + f"{SID1}\x01,a,PASS,,,\n", 2, "control character")
labels_csv_case("unknown-sample", CSV_HEAD + f"{SID1},a,PASS,,,\nnowhere,a,FAIL,,,\n", 3, "unknown sample")
labels_csv_case("empty", "", None, "empty file")


@case("labels-parquet-not-parquet", "labels.parquet", None, "Parquet")
def _(c: Ctx) -> list[str]:
    proj = c.use_project()
    f = c.tmp / "labels.parquet"
    f.write_text("sample_id,verdict\n")
    return ["labels", "import", str(f), "--project", str(proj)]


@case("labels-parquet-bad-verdict", "labels.parquet", None, "row 3", "unknown verdict")
def _(c: Ctx) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    proj = c.use_project()
    f = c.tmp / "labels.parquet"
    pq.write_table(pa.table({"sample_id": [SID1] * 3, "verdict": ["PASS", "FAIL", "GOOD"]}), f)
    return ["labels", "import", str(f), "--project", str(proj)]


@case("labels-unknown-type", "labels.xlsx", None, "unknown label file type")
def _(c: Ctx) -> list[str]:
    proj = c.use_project()
    f = c.tmp / "labels.xlsx"
    f.write_bytes(b"PK\x03\x04")
    return ["labels", "import", str(f), "--project", str(proj)]


@case("labels-file-missing", "nowhere.json", None, "not found")
def _(c: Ctx) -> list[str]:
    proj = c.use_project()
    return ["labels", "import", str(c.tmp / "nowhere.json"), "--project", str(proj)]


# ---------------------------------------------------------------------------------------------
# evaluate --config: our flat checker config
# ---------------------------------------------------------------------------------------------


def flat_config_case(id: str, text: str | bytes, line: int | None, *words: str) -> None:
    def make(c: Ctx) -> list[str]:
        proj = c.use_project()
        f = c.tmp / "checker.yaml"
        if isinstance(text, bytes):
            f.write_bytes(text)
        else:
            f.write_text(text)
        return ["evaluate", "--project", str(proj), "--config", str(f)]
    CASES.append(Case(f"config-{id}", make, "checker.yaml", line, words))


flat_config_case("t-det-true", "margin: 0.05\nt_det: true\n", 2, "t_det", "boolean")
flat_config_case("use-secondary-no-text", "margin: 0.05\nuse_secondary: 'no'\n", 2, "use_secondary", "true or false")
flat_config_case("unknown-parameter", "margin: 0.05\nmargn: 0.1\n", 2, "unknown checker parameter", "margn")
flat_config_case("margin-text", "name: x\nmargin: abc\n", 2, "margin", "must be a number")
flat_config_case("tau-2", "tau: 2\n", 1, "tau", "[0, 1]")
flat_config_case("w-geometry-1e308-text", "w_geometry: 1e308\n", 1, "w_geometry", "text")
flat_config_case("perturbation-resize-1e9", "perturbations: [resize_1000000000]\n", 1, "resize")
flat_config_case("perturbations-not-a-list", "perturbations: blur\n", 1, "perturbations", "list")
flat_config_case("aliases", "a: &x 0.1\nmargin: *x\n", 1, "anchors")
flat_config_case("non-utf8", b"margin: 0.05\nname: \xe9t\xe9\n", 2, "not UTF-8")
flat_config_case("syntax-error", "margin: 0.05\nt_det: [oops\n", 2, "not valid YAML")
flat_config_case("control-character", "margin: 0.05\nname: a\x1fb\n", 2, "not allowed")
flat_config_case("tab-indentation", "thresholds:\n\tmargin: 0.1\n", 2, "not valid YAML")


@case("config-missing", "nowhere.yaml", None, "not found")
def _(c: Ctx) -> list[str]:
    proj = c.use_project()
    return ["evaluate", "--project", str(proj), "--config", str(c.tmp / "nowhere.yaml")]


# ---------------------------------------------------------------------------------------------
# command-line options of every command (no file: one line naming the option)
# ---------------------------------------------------------------------------------------------


def option_case(id: str, argv: Callable[[Ctx], list[str]], *words: str, labelled: bool = False,
                new: bool = False) -> None:
    def make(c: Ctx) -> list[str]:
        if new:
            c.new_folder()
        else:
            c.use_project(labelled=labelled)
        return argv(c)
    CASES.append(Case(f"option-{id}", make, None, None, words))


def P(c: Ctx) -> str:
    return str(c.project)


def N(c: Ctx) -> str:
    return str(c.new_target)


option_case("audit-sample-size-0", lambda c: ["audit-sample", "--project", P(c), "--size", "0", "--seed", "1",
                                              "--out", str(c.tmp / "a.csv")], "--size")
option_case("audit-sample-size-text", lambda c: ["audit-sample", "--project", P(c), "--size", "ten", "--seed", "1",
                                                 "--out", str(c.tmp / "a.csv")], "--size", "invalid int")
option_case("audit-sample-out-not-csv", lambda c: ["audit-sample", "--project", P(c), "--size", "5", "--seed", "1",
                                                   "--out", str(c.tmp / "a.txt")], "--out", ".csv")
option_case("audit-sample-unknown-stratum", lambda c: ["audit-sample", "--project", P(c), "--size", "5", "--seed", "1",
                                                       "--strata", "colour", "--out", str(c.tmp / "a.csv")], "colour")
option_case("audit-sample-disagree-unknown-judge",
            lambda c: ["audit-sample", "--project", P(c), "--size", "5", "--seed", "1", "--disagree",
                       "spatial.geneval,spatial.oracle", "--out", str(c.tmp / "a.csv")], "spatial.oracle", "judge")
option_case("audit-sample-disagree-one-judge",
            lambda c: ["audit-sample", "--project", P(c), "--size", "5", "--seed", "1", "--disagree",
                       "spatial.geneval", "--out", str(c.tmp / "a.csv")], "--disagree", "two")
option_case("audit-sample-disagree-share-2",
            lambda c: ["audit-sample", "--project", P(c), "--size", "5", "--seed", "1", "--disagree",
                       "spatial.geneval,spatial.twin", "--disagree-share", "2", "--out", str(c.tmp / "a.csv")],
            "share", "between 0 and 1")
option_case("judges-unknown-method", lambda c: ["judges", "--project", P(c), "--method", "geneval"],
            "unknown method", "geneval")
option_case("audit-metrics-taus-text", lambda c: ["audit-metrics", "--project", P(c), "--taus", "0.1,abc",
                                                  "--out", str(c.tmp / "m.json")], "--taus", labelled=True)
option_case("calibrate-tau-true", lambda c: ["calibrate", "--project", P(c), "--grid", "tau=true",
                                             "--out", str(c.tmp / "c.json")], "tau", "boolean", labelled=True)
option_case("calibrate-t-det-true", lambda c: ["calibrate", "--project", P(c), "--grid", "t_det=true,0.2",
                                               "--out", str(c.tmp / "c.json")], "t_det", "boolean", labelled=True)
option_case("calibrate-margin-nan", lambda c: ["calibrate", "--project", P(c), "--grid", "margin=nan",
                                               "--out", str(c.tmp / "c.json")], "margin", "finite", labelled=True)
option_case("calibrate-huge-grid", lambda c: [
    "calibrate", "--project", P(c), "--grid", "margin=" + ",".join(f"{i / 10000:.4f}" for i in range(1000)),
    "--grid", "t_det=" + ",".join(f"{i / 1000:.3f}" for i in range(1000)),
    "--grid", "tau=" + ",".join(f"{i / 100:.2f}" for i in range(100)), "--out", str(c.tmp / "c.json")],
    "1,000,000 checker evaluations", "limit is 100,000", labelled=True)
option_case("calibrate-too-many-rows", lambda c: [
    "calibrate", "--project", P(c), "--grid", "margin=" + ",".join(f"{i / 10000:.4f}" for i in range(100)),
    "--grid", "tau=" + ",".join(f"{i / 10000:.4f}" for i in range(10000)), "--out", str(c.tmp / "c.json")],
    "1,000,000 combinations", labelled=True)
option_case("calibrate-unknown-parameter", lambda c: ["calibrate", "--project", P(c), "--grid", "colour=1",
                                                      "--out", str(c.tmp / "c.json")], "colour", labelled=True)
option_case("calibrate-weights-two", lambda c: ["calibrate", "--project", P(c), "--weights", "1,2",
                                                "--out", str(c.tmp / "c.json")], "--weights", labelled=True)
option_case("calibrate-out-not-json", lambda c: ["calibrate", "--project", P(c), "--out", str(c.tmp / "c.csv")],
            "--out", ".json", labelled=True)
option_case("calibrate-without-labels", lambda c: ["calibrate", "--project", P(c), "--out", str(c.tmp / "c.json")],
            "human labels")
option_case("export-sbuc-unknown-run", lambda c: ["export-sbuc", "--project", P(c), "--run", "nosuch",
                                                  "--out", str(c.tmp / "e.jsonl")], "nosuch")
option_case("report-out-exists", lambda c: (c.tmp.joinpath("rep").mkdir(), (c.tmp / "rep" / "x").write_text("x"),
                                            ["report", "--project", P(c), "--out", str(c.tmp / "rep")])[-1],
            "already exists")
option_case("labels-export-xlsx", lambda c: ["labels", "export", "--project", P(c), "--out", str(c.tmp / "l.xlsx")],
            "unknown label file type")
option_case("labels-export-sbuc-parquet", lambda c: ["labels", "export", "--project", P(c), "--format", "sbuc",
                                                     "--out", str(c.tmp / "l.parquet")], "Parquet")
option_case("labels-export-format-unknown", lambda c: ["labels", "export", "--project", P(c), "--format", "xml",
                                                       "--out", str(c.tmp / "l.csv")], "--format", "invalid choice")
option_case("evaluate-no-project", lambda c: ["evaluate", "--project", str(c.tmp / "nowhere")], "no project")
option_case("generate-shard-5-of-4", lambda c: ["generate", "--project", N(c), "--model", "procedural",
                                                "--shard", "5/4"], "shard 5/4", new=True)
option_case("generate-shard-text", lambda c: ["generate", "--project", N(c), "--model", "procedural",
                                               "--shard", "half"], "--shard", new=True)
option_case("generate-width-negative", lambda c: ["generate", "--project", N(c), "--model", "procedural",
                                                  "--width", "-5"], "width", new=True)
option_case("generate-run-id-dotdot", lambda c: ["generate", "--project", N(c), "--model", "procedural",
                                                 "--run-id", "../escape"], "run id", new=True)
option_case("generate-seeds-0", lambda c: ["generate", "--project", N(c), "--model", "procedural", "--seeds", "0"],
            "--seeds", new=True)
option_case("generate-seed-start-negative", lambda c: ["generate", "--project", N(c), "--model", "procedural",
                                                       "--seed-start", "-3"], "seeds", new=True)
option_case("generate-seed-start-huge", lambda c: ["generate", "--project", N(c), "--model", "procedural",
                                                   "--seed-start", str(2**70)], "seeds", new=True)
option_case("generate-unknown-generator", lambda c: ["generate", "--project", N(c), "--model", "procedural",
                                                     "--generator", "nosuch"], "unknown generator", new=True)
option_case("generate-batch-size-0", lambda c: ["generate", "--project", N(c), "--model", "procedural",
                                                "--batch-size", "0"], "batch size", new=True)
option_case("generate-width-not-multiple-of-8", lambda c: ["generate", "--project", N(c), "--model", "procedural",
                                                           "--width", "100"], "multiples of 8", new=True)
option_case("generate-missing-model-folder", lambda c: ["generate", "--project", N(c), "--model",
                                                        str(c.tmp / "no_model")], "model folder not found", new=True)
option_case("detect-unknown-detector", lambda c: ["detect", "--project", P(c), "--detector", "nosuch", "--no-run"],
            "unknown detector", "nosuch")
option_case("detect-unknown-secondary", lambda c: ["detect", "--project", P(c), "--detector", "scene",
                                                   "--secondary", "nosuch", "--no-run"], "unknown detector")
option_case("detect-perturbation-huge", lambda c: ["detect", "--project", P(c), "--detector", "scene",
                                                   "--perturbations", "resize_1e9", "--no-run"], "perturbation")
option_case("detect-batch-size-0", lambda c: ["detect", "--project", P(c), "--detector", "scene",
                                              "--batch-size", "0", "--no-run"], "batch size")
option_case("detect-unknown-run", lambda c: ["detect", "--project", P(c), "--detector", "scene",
                                             "--runs", "nosuch", "--no-run"], "nosuch")
option_case("demo-seeds-0", lambda c: ["demo", "--project", N(c), "--seeds", "0", "--no-gui"], "--seeds", new=True)
option_case("jobs-show-unknown", lambda c: ["jobs", "show", "--project", P(c), "nosuch"], "nosuch")
option_case("unknown-command", lambda c: ["frobnicate", "--project", P(c)], "invalid choice")
option_case("gui-no-project", lambda c: ["gui", "--project", str(c.tmp / "nowhere")], "no project")
option_case("jobs-resume-unknown", lambda c: ["jobs", "resume", "--project", P(c), "nosuch"], "nosuch")
option_case("export-sbuc-unknown-version", lambda c: ["export-sbuc", "--project", P(c), "--run", "sd15_boxdiff",
                                                      "--config-version", "99", "--out", str(c.tmp / "e.jsonl")], "99")


@case("gold-file-bad-answer", "gold.csv", 3, "MAYBE")
def _(c: Ctx) -> list[str]:
    f = c.tmp / "gold.csv"
    f.write_text("target,task,answer\nx1,spatial.verdict,PASS\nx2,spatial.verdict,MAYBE\n", encoding="utf-8")
    return ["audit", "gold", "import", str(f), "--project", str(c.use_project())]


@case("gold-file-unknown-task", "gold.csv", 2, "unknown label task")
def _(c: Ctx) -> list[str]:
    f = c.tmp / "gold.csv"
    f.write_text("target,task,answer\nx1,spatial.nothing,PASS\n", encoding="utf-8")
    return ["audit", "gold", "import", str(f), "--project", str(c.use_project())]


@case("gold-file-unknown-sample", "gold.csv", 2, "unknown sample")
def _(c: Ctx) -> list[str]:
    f = c.tmp / "gold.csv"
    f.write_text("target,task,answer\nno-such-sample,spatial.verdict,FAIL\n", encoding="utf-8")
    return ["audit", "gold", "import", str(f), "--project", str(c.use_project())]


@case("gold-file-no-answer-column", "gold.csv", 1, "answer")
def _(c: Ctx) -> list[str]:
    f = c.tmp / "gold.csv"
    f.write_text("target,task,value\nx1,spatial.verdict,PASS\n", encoding="utf-8")
    return ["audit", "gold", "import", str(f), "--project", str(c.use_project())]


option_case("audit-qualification-percent", lambda c: ["audit", "qualification", "--project", P(c),
                                                      "--min-accuracy", "90"], "share in [0, 1]")
option_case("audit-adjudicate-unknown-item", lambda c: ["audit", "adjudicate", "--project", P(c), "--task",
                                                        "spatial.verdict", "--item", "nosuch", "--value", "PASS",
                                                        "--note", "n", "--as", "lead"], "nosuch")
option_case("audit-draw-k-above-raters", lambda c: ["audit", "draw", "--project", P(c), "--method", "spatial",
                                                    "--size", "4", "--seed", "1", "--raters", "a,b", "--k", "3"],
            "k = 3")
option_case("audit-draw-gold-without-answers", lambda c: ["audit", "draw", "--project", P(c), "--method", "spatial",
                                                          "--size", "4", "--seed", "1", "--gold-rate", "0.2"],
            "no target of spatial.verdict has a gold answer")


@case("generate-suite-file-non-utf8", "suite.csv", 2, "not UTF-8")
def _(c: Ctx) -> list[str]:
    f = c.tmp / "suite.csv"
    f.write_bytes(b"prompt,relation,object_a,object_b\nA caf\xe9 left of a dog,left_of,cup,dog\n")
    return ["generate", "--project", str(c.new_folder()), "--model", "procedural", "--suite", str(f)]


@case("generate-suite-file-unterminated-quote", "suite.csv", 3, "malformed CSV")
def _(c: Ctx) -> list[str]:
    f = c.tmp / "suite.csv"
    f.write_text("prompt,relation,object_a,object_b\nA cat left of a dog,left_of,cat,dog\n"
                 '"A cup left of a bowl,left_of,cup,bowl\nA dog left of a cat,left_of,dog,cat\n', encoding="utf-8")
    return ["generate", "--project", str(c.new_folder()), "--model", "procedural", "--suite", str(f)]


@case("generate-suite-file-id-newline", "suite.jsonl", 1, "control character")
def _(c: Ctx) -> list[str]:
    f = c.tmp / "suite.jsonl"
    f.write_text(json.dumps({"prompt_id": "a\nb", "prompt": "a cat left of a dog", "relation": "left_of",
                             "object_a": "cat", "object_b": "dog"}) + "\n")
    return ["generate", "--project", str(c.new_folder()), "--model", "procedural", "--suite", str(f)]


@case("generate-suite-text-conflicts-with-project", "suite.jsonl", 2, "already in the project", "another text")
def _(c: Ctx) -> list[str]:
    proj = c.use_project()
    f = c.tmp / "suite.jsonl"
    rows = [{"prompt_id": "mine_1", "prompt": "a cat to the left of a dog", "relation": "left_of",
             "object_a": "cat", "object_b": "dog"},
            {"prompt_id": "v1_000000", "prompt": "not the published text", "relation": "left_of",
             "object_a": "cake", "object_b": "bed"}]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return ["generate", "--project", str(proj), "--model", "procedural", "--suite", str(f), "--no-run"]


# ---------------------------------------------------------------------------------------------
# merge: shard projects from elsewhere (validated before anything is created or written)
# ---------------------------------------------------------------------------------------------


def _set_image_path(shard: Path, rel: str) -> None:
    with Project.open(shard) as p:
        sid = p.con.execute("SELECT sample_id FROM samples ORDER BY ord LIMIT 1").fetchone()[0]
        p.con.execute("UPDATE samples SET image_path = ? WHERE sample_id = ?", [rel, sid])


def _first_image(shard: Path) -> Path:
    with Project.open(shard, read_only=True) as p:
        rel = p.con.execute("SELECT image_path FROM samples ORDER BY ord LIMIT 1").fetchone()[0]
    return shard / rel


def _nothing_outside(c: Ctx) -> None:
    assert not (c.tmp / "outside").exists(), "merge created a folder outside the project"


def merge_case(id: str, spoil: Callable[[Ctx, Path], None], *words: str, new: bool = True,
               check: Callable[[Ctx], None] | None = None) -> None:
    def make(c: Ctx) -> list[str]:
        shard = c.shard()
        spoil(c, shard)
        target = c.new_folder() if new else c.use_project()
        return ["merge", "--project", str(target), str(shard)]
    CASES.append(Case(f"merge-{id}", make, None, None, words, check))


merge_case("image-path-dotdot", lambda c, s: _set_image_path(s, "../outside/x/evil.png"), "escapes",
           check=_nothing_outside)
merge_case("image-path-absolute", lambda c, s: _set_image_path(s, "/tmp/evil.png"), "absolute")
merge_case("image-symlink-out", lambda c, s: (_first_image(s).unlink(), os.symlink("/etc/hostname", _first_image(s))),
           "outside")
merge_case("image-truncated", lambda c, s: _first_image(s).write_bytes(_first_image(s).read_bytes()[:150]),
           "corrupt or truncated")
merge_case("image-not-an-image", lambda c, s: _first_image(s).write_bytes(b"\x89PNG\r\n\x1a\nbroken"), "not a PNG")
merge_case("image-missing", lambda c, s: _first_image(s).unlink(), "missing")
merge_case("image-into-existing-project", lambda c, s: _set_image_path(s, "../../outside/evil.png"), "escapes",
           new=False, check=_nothing_outside)
merge_case("source-not-a-project", lambda c, s: (s / DB_NAME).unlink(), "neither a project")


@case("merge-source-missing", None, None, "not a folder")
def _(c: Ctx) -> list[str]:
    return ["merge", "--project", str(c.new_folder()), str(c.tmp / "nowhere")]


@case("merge-into-itself", None, None, "target project itself")
def _(c: Ctx) -> list[str]:
    proj = c.use_project()
    return ["merge", "--project", str(proj), str(proj)]


# ---------------------------------------------------------------------------------------------
# the one test
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shard_template(tmp_path_factory: pytest.TempPathFactory) -> Callable[[], Path]:
    """A small generated shard project (4 procedural images), made on first use."""
    made: list[Path] = []

    def get() -> Path:
        if not made:
            folder = tmp_path_factory.mktemp("shard") / "shard"
            assert main(["generate", "--project", str(folder), "--suite", "builtin", "--pairs", "1",
                         "--model", "procedural", "--seeds", "1", "--width", "64", "--height", "64"]) == 0
            made.append(folder)
        return made[0]

    return get


@pytest.fixture(scope="module")
def pristine(imported: Path, labelled_imported: Path) -> dict[Path, Any]:
    return {imported: dump_tables(imported), labelled_imported: dump_tables(labelled_imported)}


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.name.endswith(".wal"))


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) >= 100, len(CASES)
    assert len({c.id for c in CASES}) == len(CASES), "case ids must be unique"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case, tmp_path: Path, imported: Path, labelled_imported: Path, pristine: dict[Path, Any],
                   sbuc_run_dir: Path, sbuc_prompts: Path, shard_template: Callable[[], Path],
                   capsys: pytest.CaptureFixture[str]) -> None:
    ctx = Ctx(tmp_path, imported, labelled_imported, sbuc_run_dir, sbuc_prompts, shard_template)
    argv = case.make(ctx)
    files_before = _files(ctx.project) if ctx.project is not None else None
    capsys.readouterr()
    try:
        rc = main(argv, extra_commands=("ui.command",))  # as main.py runs it (the gui command checks before Qt)
    except SystemExit as e:  # argparse
        rc = int(e.code or 0)
    err = capsys.readouterr().err
    assert rc == 2, f"exit code {rc}; stderr:\n{err}"
    assert_one_clear_error(err, case.file, case.line, *case.words)
    if ctx.project is not None:
        assert ctx.template is not None
        assert dump_tables(ctx.project) == pristine[ctx.template], "the project's tables changed"
        assert _files(ctx.project) == files_before, "the project's files changed"
    if ctx.new_target is not None:
        assert not ctx.new_target.exists(), f"{ctx.new_target} was left behind"
        parent = ctx.new_target.parent
        assert not parent.exists() or not any(parent.iterdir()), f"left in {parent}: {list(parent.iterdir())}"
    if case.extra_check is not None:
        case.extra_check(ctx)
