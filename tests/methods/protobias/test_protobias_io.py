"""Importing a ProtoBias image folder: a hostile folder and index are refused line by line."""

from __future__ import annotations

import hashlib
import json
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from workstation.methods.protobias.io import find_index, read_triplet_index
from workstation.types import InputError, WorkstationError
from workstation.util.images import image_info, resolve_inside


def _png(path: Path, w: int = 24, h: int = 16, colour: tuple[int, int, int] = (200, 30, 30)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((h, w, 3), colour, np.uint8)).save(path)
    return path


def _row(i: int, **over: Any) -> dict[str, Any]:
    r = {"triplet_id": f"t{i}", "text": f"An animal stands near a pond with exactly {i} rocks beside it.",
         "domain": "animals", "knob": "count", "image_corr": f"img/{i}_corr.png", "image_adv": f"img/{i}_adv.png"}
    r.update(over)
    return r


def _folder(tmp: Path, n: int = 3) -> Path:
    root = tmp / "folder"
    for i in range(n):
        _png(root / "img" / f"{i}_corr.png", 24 + i, 16)
        _png(root / "img" / f"{i}_adv.png", 30, 20 + i, (20, 20, 200))
    return root


def _write_jsonl(root: Path, rows: list[dict[str, Any]], name: str = "index.jsonl") -> Path:
    p = root / name
    p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return p


def _error(root: Path, index: Path | None = None) -> InputError:
    with pytest.raises(InputError) as ei:
        read_triplet_index(root, index)
    return ei.value


def test_valid_jsonl_index(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    rows = [_row(0), _row(1, domain="Animal", knob="COLOR", prompt_corr="A penguin ...", seed=7), _row(2)]
    _write_jsonl(root, [rows[0]] + [{}][:0] + rows[1:])
    (root / "index.jsonl").write_text((root / "index.jsonl").read_text().replace("\n", "\n\n", 1))  # a blank line
    got = read_triplet_index(root)
    assert list(got.triplet_id) == ["t0", "t1", "t2"]
    assert list(got.domain) == ["animals"] * 3 and list(got.knob) == ["count", "color", "count"]
    assert list(got.line) == [1, 3, 4]
    assert list(got.width_corr) == [24, 25, 26] and list(got.height_adv) == [20, 21, 22]
    assert got.extra[1] == {"prompt_corr": "A penguin ...", "seed": 7} and got.extra[0] == {}
    assert got.sha256_corr[0] == hashlib.sha256((root / "img/0_corr.png").read_bytes()).hexdigest()
    assert got.source_path("img/1_adv.png") == (root / "img/1_adv.png").resolve()
    assert find_index(root) == root / "index.jsonl"


def test_valid_csv_index_with_a_multiline_field(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    (root / "index.csv").write_text(
        "triplet_id,text,domain,knob,image_corr,image_adv,note,empty\n"
        't0,"An animal stands, near a pond.",objects,spatial,img/0_corr.png,img/0_adv.png,"two\nlines",\n'
        "t1,A text.,demography,layout_relation,img/1_corr.png,img/1_adv.png,hello,\n", encoding="utf-8")
    got = read_triplet_index(root)
    assert list(got.line) == [2, 4]  # the first record spans lines 2-3
    assert got.text[0] == "An animal stands, near a pond."
    assert got.extra[0] == {"note": "two\nlines"} and got.extra[1] == {"note": "hello"}  # empty cells dropped
    # a line break inside a required field is refused
    (root / "index.csv").write_text(
        "triplet_id,text,domain,knob,image_corr,image_adv\n"
        't0,"two\nlines",objects,spatial,img/0_corr.png,img/0_adv.png\n', encoding="utf-8")
    e = _error(root)
    assert e.line == 2 and "control character" in e.detail


def test_csv_errors_name_the_line(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    idx = root / "index.csv"
    idx.write_text("triplet_id,text,domain,knob,image_corr,image_adv,note\n"
                   't0,"a, b",animals,count,img/0_corr.png,img/0_adv.png,"two\nlines"\n'
                   "t1,x,animals,count,img/1_corr.png,img/1_adv.png\n", encoding="utf-8")
    e = _error(root)
    assert (e.line, e.path) == (4, str(idx)) and "expected 7 columns" in e.detail
    idx.write_text('triplet_id,text\nt0,"unterminated\n', encoding="utf-8")
    assert "lacks domain" in _error(root).detail
    idx.write_text('triplet_id,text,domain,knob,image_corr,image_adv\nt0,"unterminated\n', encoding="utf-8")
    e = _error(root)
    assert e.line == 2 and "malformed CSV" in e.detail
    idx.write_text("triplet_id,text,domain\nt0,x,animals\n", encoding="utf-8")
    e = _error(root)
    assert e.line == 1 and "lacks knob, image_corr, image_adv" in e.detail


@pytest.mark.parametrize("mutate,line,needle", [
    (lambda r: r.pop("text"), 2, "missing field 'text'"),
    (lambda r: r.update(domain="plants"), 2, "domain 'plants'"),
    (lambda r: r.update(knob="texture"), 2, "knob 'texture'"),
    (lambda r: r.update(triplet_id="t 1/../x"), 2, "may hold only"),
    (lambda r: r.update(triplet_id="t0"), 2, "repeats line 1"),
    (lambda r: r.update(text=3), 2, "must be text"),
    (lambda r: r.update(image_adv="img/1_corr.png"), 2, "the same file"),
    (lambda r: r.update(image_corr="../outside.png"), 2, "contains '..'"),
    (lambda r: r.update(image_corr="/etc/passwd"), 2, "is absolute"),
    (lambda r: r.update(image_corr="C:/x.png"), 2, "is absolute"),
    (lambda r: r.update(image_corr="img\\1_corr.png"), 2, "backslash"),
    (lambda r: r.update(image_corr="img/nothere.png"), 2, "not found"),
    (lambda r: r.update(image_corr=""), 2, "is empty"),
])
def test_bad_lines_are_refused_with_file_and_line(tmp_path: Path, mutate: Any, line: int, needle: str) -> None:
    root = _folder(tmp_path)
    r1 = _row(1)
    mutate(r1)
    idx = _write_jsonl(root, [_row(0), r1, _row(2)])
    e = _error(root)
    assert e.path == str(idx) and e.line == line, str(e)
    assert needle in e.detail, str(e)
    assert str(e).startswith(f"{idx}:{line}: ")


def test_malformed_json_non_utf8_nul_and_nan(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    idx = root / "index.jsonl"
    good = json.dumps(_row(0)) + "\n"
    idx.write_bytes(good.encode() + b'{"triplet_id": "t1", \n')
    e = _error(root)
    assert e.line == 2 and "malformed JSON" in e.detail
    idx.write_bytes(good.encode() + json.dumps(_row(1)).encode() + b"\n" + b'{"text": "caf\xe9"}\n')
    e = _error(root)
    assert e.line == 3 and "not UTF-8" in e.detail and "0xe9" in e.detail
    idx.write_bytes(good.encode() + b'{"a": "x\x00y"}\n')
    assert _error(root).line == 2
    idx.write_text(good + json.dumps(_row(1, score=float("nan"))) + "\n", encoding="utf-8")
    e = _error(root)
    assert e.line == 2 and "NaN is not a finite number" in e.detail
    idx.write_text(good + "[1, 2]\n", encoding="utf-8")
    assert "JSON object" in _error(root).detail
    idx.write_text("\n\n", encoding="utf-8")
    assert "no triplets" in _error(root).detail
    # a byte-order mark is fine
    idx.write_bytes(b"\xef\xbb\xbf" + good.encode())
    assert list(read_triplet_index(root).triplet_id) == ["t0"]


def test_symlinks_inside_are_allowed_outside_refused(tmp_path: Path) -> None:
    root = _folder(tmp_path)
    outside = _png(tmp_path / "secret" / "x.png")
    (root / "img" / "link_in.png").symlink_to(root / "img" / "0_corr.png")
    (root / "img" / "link_out.png").symlink_to(outside)
    (root / "sub").symlink_to(tmp_path / "secret", target_is_directory=True)
    _write_jsonl(root, [_row(0, image_corr="img/link_in.png", image_adv="img/0_adv.png")])
    assert read_triplet_index(root).width_corr[0] == 24
    for bad in ("img/link_out.png", "sub/x.png"):
        _write_jsonl(root, [_row(0), _row(1, image_corr=bad)])
        e = _error(root)
        assert e.line == 2 and "resolves outside the image folder" in e.detail
    # a symlink to a directory inside, pointing back out through '..' in its target
    (root / "img" / "up").symlink_to("../..", target_is_directory=True)
    _write_jsonl(root, [_row(0, image_corr="img/up/secret/x.png")])
    assert "resolves outside" in _error(root).detail


def _crafted_png(path: Path, w: int, h: int) -> Path:
    """A tiny PNG whose header claims w×h pixels (a decompression bomb's header)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
                     + chunk(b"IEND", b""))
    return path


def test_bad_image_files_are_refused(tmp_path: Path) -> None:
    root = _folder(tmp_path, 2)
    img = root / "img"
    (img / "empty.png").write_bytes(b"")
    (img / "text.png").write_text("hello, I am not an image\n")
    good = (img / "0_corr.png").read_bytes()
    (img / "trunc.png").write_bytes(good[: len(good) // 2])
    _crafted_png(img / "bomb.png", 30000, 30000)  # 900 MP claimed in ~100 bytes
    _crafted_png(img / "wide.png", 9000, 10)
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(img / "x.gif")
    os.mkfifo(img / "fifo.png")
    (img / "dir.png").mkdir()
    cases = {"empty.png": "empty (0 bytes)", "text.png": "not an image", "trunc.png": "does not decode",
             "bomb.png": "decompression bomb", "wide.png": "limit is 8192 pixels per side",
             "x.gif": "not an image in an accepted format", "fifo.png": "not a regular file",
             "dir.png": "not a regular file"}
    for name, needle in cases.items():
        _write_jsonl(root, [_row(0), _row(1, image_adv=f"img/{name}")])
        e = _error(root)
        assert e.line == 2 and needle in e.detail and f"image_adv 'img/{name}'" in e.detail, (name, str(e))


def test_image_checks_directly(tmp_path: Path) -> None:
    p = _png(tmp_path / "a.png", 40, 30)
    assert (image_info(p).width, image_info(p).height) == (40, 30)
    info = image_info(p)
    assert (info.format, info.mode, info.n_bytes) == ("PNG", "RGB", p.stat().st_size)
    with pytest.raises(InputError, match="1,200 pixels; the limit is 1,000"):
        image_info(p, max_pixels=1000)
    with pytest.raises(InputError, match="limit is 39 pixels per side"):
        image_info(p, max_side=39)
    with pytest.raises(InputError, match="the limit is 10"):
        image_info(p, max_bytes=10)
    Image.fromarray(np.zeros((5, 5, 3), np.uint8)).save(tmp_path / "b.jpg", quality=90)
    assert image_info(tmp_path / "b.jpg").width == 5
    frames = [Image.fromarray(np.full((6, 6, 3), v, np.uint8)) for v in (0, 255)]
    frames[0].save(tmp_path / "anim.webp", save_all=True, append_images=frames[1:])
    with pytest.raises(InputError, match="animated"):
        image_info(tmp_path / "anim.webp")


def test_resolve_inside(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    assert resolve_inside(tmp_path, "a/b.png") == (tmp_path / "a" / "b.png").resolve()
    assert resolve_inside(tmp_path, "./a/b.png") == (tmp_path / "a" / "b.png").resolve()
    for bad, needle in (("", "empty"), ("a/../../x", "'..'"), ("/x", "absolute"), ("a\x01b", "control"),
                        (".", "outside"), ("\\\\server\\share\\x", "backslash"), ("x" * 2000, "longer")):
        with pytest.raises(WorkstationError, match=needle):
            resolve_inside(tmp_path, bad)
    with pytest.raises(WorkstationError, match="must be text"):
        resolve_inside(tmp_path, 3)


def test_index_discovery(tmp_path: Path) -> None:
    root = _folder(tmp_path, 1)
    with pytest.raises(InputError, match="no index file"):
        find_index(root)
    _write_jsonl(root, [_row(0)])
    _write_jsonl(root, [_row(0)], "triplets.jsonl")
    with pytest.raises(InputError, match="several index files"):
        find_index(root)
    # an index given explicitly may live elsewhere; paths stay relative to the folder
    other = _write_jsonl(tmp_path, [_row(0)], "mine.jsonl")
    assert list(read_triplet_index(root, other).triplet_id) == ["t0"]
    bad = tmp_path / "mine.txt"
    bad.write_text("x")
    with pytest.raises(InputError, match=r"\.jsonl or \.csv"):
        read_triplet_index(root, bad)
    with pytest.raises(InputError, match="image folder not found"):
        read_triplet_index(tmp_path / "nope")
