"""The path guards: relative paths from outside never leave their folder — on Windows either
(backslashes, drive letters, UNC shares) — and links never lead out of it."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import pytest

from workstation.util.paths import MAX_PATH_LEN, UnsafePath, check_relative, source_file, target_file


@pytest.mark.parametrize("rel", [
    "..\\..\\x", "..\\x", "a\\..\\..\\x", "../x", "a/../../x", "a/..", "..",  # parents, either separator
    "C:/x", "C:\\x", "c:x", "Z:", "/etc/passwd", "\\x", "//server/share/x", "\\\\server\\share\\x",  # absolute
])
def test_paths_that_leave_their_folder_are_refused_on_any_system(rel: str) -> None:
    with pytest.raises(UnsafePath, match="escapes its folder"):
        check_relative(rel)


@pytest.mark.parametrize("rel,why", [
    ("", "non-empty relative path"), (".", "names no file"), ("./", "names no file"),
    ("a\x00b", "control character"), ("a\nb", "control character"), ("a\x7fb", "control character"),
    ("x" * (MAX_PATH_LEN + 1), f"limit is {MAX_PATH_LEN}"),
])
def test_empty_control_and_overlong_paths_are_refused(rel: str, why: str) -> None:
    with pytest.raises(UnsafePath, match=why):
        check_relative(rel)
    with pytest.raises(UnsafePath):
        check_relative(None)  # type: ignore[arg-type]


def test_relative_paths_inside_the_folder_are_kept_with_forward_slashes() -> None:
    assert check_relative("images/a.png") == PurePosixPath("images/a.png")
    assert check_relative("images\\sub\\a.png") == PurePosixPath("images/sub/a.png")
    assert check_relative("./a/./b.png") == PurePosixPath("a/b.png")
    assert check_relative("a..b/c..png") == PurePosixPath("a..b/c..png")  # dots inside a name are fine
    assert check_relative("x" * MAX_PATH_LEN) == PurePosixPath("x" * MAX_PATH_LEN)
    assert check_relative("1:x") == PurePosixPath("1:x")  # not a drive letter
    e = pytest.raises(UnsafePath, check_relative, "../x", "image path")
    assert str(e.value) == "image path '../x' escapes its folder ('..')"
    assert str(pytest.raises(UnsafePath, check_relative, "/x").value) == "path '/x' is absolute and escapes its folder"
    assert str(pytest.raises(UnsafePath, check_relative, ".").value) == "path '.' names no file"
    long = "a" * 100 + "\x00"
    assert str(pytest.raises(UnsafePath, check_relative, long).value) == \
        f"path {('a' * 60)!r}… (101 characters) holds a control character"  # the first 60 characters are named


def test_source_file_follows_links_only_inside_the_folder(tmp_path: Path) -> None:
    root = tmp_path / "run"
    (root / "images").mkdir(parents=True)
    (root / "images" / "a.png").write_bytes(b"png")
    outside = tmp_path / "secret.txt"
    outside.write_text("x")
    (root / "images" / "inside.png").symlink_to(root / "images" / "a.png")
    (root / "images" / "out.png").symlink_to(outside)
    (root / "linked").symlink_to(tmp_path)  # a folder link out
    (root / "dangling.png").symlink_to(root / "nothing.png")
    (root / "folder").mkdir()
    assert source_file(root, "images/a.png") == (root / "images" / "a.png").resolve()
    assert source_file(root, "images/inside.png") == (root / "images" / "a.png").resolve()
    e = pytest.raises(UnsafePath, source_file, root, "images/out.png")
    assert str(e.value) == (f"image 'images/out.png' is a link to {outside.resolve()}, outside {root}; only files "
                            "inside the folder are copied")
    e = pytest.raises(UnsafePath, source_file, root, "linked/secret.txt", "label file")
    assert str(e.value) == (f"label file 'linked/secret.txt' lies behind a link to {tmp_path.resolve()}, outside "
                            f"{root}; only files inside the folder are copied")
    assert str(pytest.raises(UnsafePath, source_file, root, "folder").value) == "image 'folder' is not a regular file"
    e = pytest.raises(FileNotFoundError, source_file, root, "images/none.png")
    assert str(e.value) == str(root / "images" / "none.png")
    e = pytest.raises(UnsafePath, source_file, root, "..\\secret.txt")
    assert str(e.value) == "image path '..\\\\secret.txt' escapes its folder ('..')"
    e = pytest.raises(UnsafePath, source_file, root, "dangling.png")
    assert str(e.value) == f"image 'dangling.png' is a link to nothing ({(root / 'nothing.png').resolve()})"
    fifo = root / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(UnsafePath, match="not a regular file"):
        source_file(root, "pipe")


def test_target_file_never_writes_through_a_link(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "images").mkdir(parents=True)
    assert target_file(root, "images/new/a.png") == root / "images" / "new" / "a.png"
    (root / "out").symlink_to(tmp_path)
    with pytest.raises(UnsafePath, match="is a symbolic link"):
        target_file(root, "out/a.png")
    (root / "images" / "b.png").symlink_to(tmp_path / "elsewhere.png")
    with pytest.raises(UnsafePath, match="is a symbolic link"):
        target_file(root, "images/b.png")
    e = pytest.raises(UnsafePath, target_file, root, "C:/Windows/x.png")
    assert str(e.value) == "image path 'C:/Windows/x.png' is absolute and escapes its folder"
    e = pytest.raises(UnsafePath, target_file, root, "out/a.png", "label file")
    assert str(e.value) == f"label file path 'out/a.png': {root / 'out'} is a symbolic link; nothing is written through links"
