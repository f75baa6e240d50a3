"""Images from outside the project: a path that must stay inside its folder, and a file that
must be a real, reasonably sized image.

Every importer that takes images from a folder the user points at treats the folder as hostile:

* `resolve_inside(root, rel)` — ``rel`` is a relative path with ``/`` separators; absolute paths,
  drive letters, backslashes, ``..`` components, control characters and anything that resolves
  (through symlinks, at any level) outside ``root`` are refused. A symlink that resolves inside
  ``root`` is allowed.
* `check_image(path)` / `image_info(path)` — the file is a regular file (opened without following
  a last-moment symlink), not empty, at most ``max_bytes``; it is PNG, JPEG, WebP or BMP (the
  formats a generator writes; TIFF, GIF, ICO, PSD, EPS, ... are refused); its header size is
  checked against ``max_side`` and ``max_pixels`` *before* any pixel is decoded (so a
  decompression bomb is refused without being inflated), PIL's own decompression-bomb warning is
  an error, a still image only (no animation), and it must decode completely (truncated and
  corrupt files are refused).

Limits (defaults): 64 MiB per file, 8192 pixels per side, 40 megapixels per image — far above
what a text-to-image generator writes (1024² = 1 MP; 4096² = 16.8 MP), far below PIL's own bomb
limit (89.5 MP warning, 179 MP error), which stays in force.

`check_image(path, max_side=…, max_pixels=…) -> (width, height)` is the quick form the run-folder
importers use (SpatialBench-UC runs, merges; the generators write PNG, JPEG or WebP): it raises
`BadImage` with a one-line reason, which the importer places after the manifest's file and line:

* an empty file, a text file, a truncated or corrupt image (the whole image is decoded);
* a header that claims more than `max_pixels` pixels or a side over `max_side` — refused from
  the header alone, before any pixel is decoded (a "decompression bomb": a few KB of PNG that
  claims 100000 × 100000 pixels would need 30 GB to decode);
* other formats (GIF, TIFF, BMP, …): detectors and the viewer expect the generator's formats.

Defaults: `MAX_SIDE` = 16384 pixels, `MAX_PIXELS` = 64 megapixels (an 8192 × 8192 image).
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import warnings
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from ..types import InputError, WorkstationError
from .textio import quote, regular_file

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_SIDE = 8192
DEFAULT_MAX_PIXELS = 40_000_000
ALLOWED_FORMATS: tuple[str, ...] = ("PNG", "JPEG", "WEBP", "BMP")
MAX_PATH_CHARS = 1024


@dataclass(frozen=True)
class ImageInfo:
    width: int
    height: int
    format: str  # PIL format name: PNG, JPEG, WEBP, BMP
    mode: str  # PIL mode: RGB, RGBA, L, P, ...
    n_bytes: int
    sha256: str  # of the file's bytes, so a copy can be verified


def resolve_inside(root: str | Path, rel: object, what: str = "image path") -> Path:
    """The real path of ``root/rel``, or a WorkstationError saying why it is refused.

    ``root`` is the folder the user chose (its own symlinks are resolved first); ``rel`` must be
    a relative path with ``/`` separators that stays inside it (see the module doc). The file need
    not exist (`image_info` checks that).
    """
    if not isinstance(rel, str):
        raise WorkstationError(f"{what} must be text, got {type(rel).__name__}")
    if not rel.strip():
        raise WorkstationError(f"{what} is empty")
    if len(rel) > MAX_PATH_CHARS:
        raise WorkstationError(f"{what} is longer than {MAX_PATH_CHARS} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in rel):
        raise WorkstationError(f"{what} {quote(rel)} contains a control character")
    if "\\" in rel:
        raise WorkstationError(f"{what} {quote(rel)} contains a backslash: use / as the separator")
    win = PureWindowsPath(rel)
    posix = PurePosixPath(rel)
    if posix.is_absolute() or win.drive or win.anchor:
        raise WorkstationError(f"{what} {quote(rel)} is absolute: it must be relative to the image folder")
    if ".." in posix.parts:
        raise WorkstationError(f"{what} {quote(rel)} contains '..': it must stay inside the image folder")
    base = Path(os.path.realpath(root))
    real = Path(os.path.realpath(base.joinpath(*posix.parts)))
    try:
        inside = os.path.commonpath([str(base), str(real)]) == str(base) and real != base
    except ValueError:  # different drives
        inside = False
    if not inside:
        raise WorkstationError(f"{what} {quote(rel)} resolves outside the image folder (a symlink?)")
    return real


def rgb_array_problem(im: Any) -> str | None:
    """What is wrong with `im` as an image handed to a model (an H×W×3 RGB uint8 array of at
    least 2×2 pixels), said after "image i", or None when nothing is."""
    import numpy as np

    if not isinstance(im, np.ndarray) or im.ndim != 3 or im.shape[2] != 3 or im.dtype != np.uint8:
        desc = f"{im.dtype} {im.shape}" if isinstance(im, np.ndarray) else type(im).__name__
        return f"must be an H×W×3 RGB uint8 array, got {desc}"
    if im.shape[0] < 2 or im.shape[1] < 2:
        return f"is too small: {im.shape[1]}×{im.shape[0]}"
    return None


def _read_regular(path: Path, max_bytes: int) -> bytes:
    regular_file(path, "image", missing="image file not found", irregular="not a regular file")  # before opening
    # O_NOFOLLOW: a symlink swapped in since the path was resolved is refused; O_NONBLOCK: a
    # FIFO swapped in does not block (fstat below refuses it)
    flags = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
             | getattr(os, "O_BINARY", 0))
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise InputError(path, "image file not found") from None
    except OSError as e:
        raise InputError(path, f"cannot open the image: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(path, "not a regular file")
        if st.st_size == 0:
            raise InputError(path, "the image file is empty (0 bytes)")
        if st.st_size > max_bytes:
            raise InputError(path, f"the image file is {st.st_size:,} bytes; the limit is {max_bytes:,}")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise InputError(path, f"the image file is over the limit of {max_bytes:,} bytes")
    if not data:
        raise InputError(path, "the image file is empty (0 bytes)")
    return data


def decode_check(data: bytes, where: str | Path, *, max_side: int = DEFAULT_MAX_SIDE,
                 max_pixels: int = DEFAULT_MAX_PIXELS,
                 formats: tuple[str, ...] = ALLOWED_FORMATS) -> tuple[int, int, str, str]:
    """(width, height, format, mode) of image bytes that pass the checks of the module doc."""
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=list(formats)) as im:
                w, h = im.size
                fmt, mode = str(im.format), str(im.mode)
                if w <= 0 or h <= 0:
                    raise InputError(where, f"the image has no pixels ({w}x{h})")
                if w > max_side or h > max_side:
                    raise InputError(where, f"the image is {w}x{h}; the limit is {max_side} pixels per side")
                if w * h > max_pixels:
                    raise InputError(where, f"the image has {w * h:,} pixels; the limit is {max_pixels:,}")
                if getattr(im, "n_frames", 1) > 1:
                    raise InputError(where, "the image is animated (several frames): a still image is needed")
                im.load()
    except InputError:
        raise
    except Image.UnidentifiedImageError:
        raise InputError(where, f"not an image in an accepted format ({', '.join(formats)})") from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
        raise InputError(where, f"refused as a decompression bomb ({e})") from None
    except Exception as e:  # PIL raises many kinds on corrupt data (OSError, SyntaxError, ...)
        raise InputError(where, f"the image does not decode ({type(e).__name__}: {e})") from None
    return int(w), int(h), fmt, mode


def image_info(path: str | Path, *, max_side: int = DEFAULT_MAX_SIDE, max_pixels: int = DEFAULT_MAX_PIXELS,
               max_bytes: int = DEFAULT_MAX_BYTES, formats: tuple[str, ...] = ALLOWED_FORMATS) -> ImageInfo:
    """Read and check one image file (module doc); InputError naming the file when refused."""
    p = Path(path)
    data = _read_regular(p, max_bytes)
    w, h, fmt, mode = decode_check(data, p, max_side=max_side, max_pixels=max_pixels, formats=formats)
    return ImageInfo(w, h, fmt, mode, len(data), hashlib.sha256(data).hexdigest())


MAX_SIDE = 16384
MAX_PIXELS = 64 * 1024 * 1024
FORMATS = ("PNG", "JPEG", "WEBP")
MAX_FILE_BYTES = 512 * 1024 * 1024


class BadImage(WorkstationError):
    """A file that is not an acceptable image (the message says why, without the file name)."""


def check_image(path: str | Path, *, max_side: int = MAX_SIDE, max_pixels: int = MAX_PIXELS) -> tuple[int, int]:
    """(width, height) of an acceptable image; `BadImage` otherwise (see the module doc)."""
    from PIL import Image, UnidentifiedImageError

    path = Path(path)
    try:
        st = os.stat(path)
    except OSError as e:
        raise BadImage(f"cannot be read ({e.strerror or e})") from None
    if not stat.S_ISREG(st.st_mode):
        raise BadImage("is not a regular file")
    if st.st_size == 0:
        raise BadImage("is an empty file (0 bytes)")
    if st.st_size > MAX_FILE_BYTES:
        raise BadImage(f"is {st.st_size:,} bytes; the limit is {MAX_FILE_BYTES:,}")
    fmt = "image"
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            with Image.open(path, formats=list(FORMATS)) as im:
                w, h = im.size
                fmt = im.format or fmt
                if w < 1 or h < 1:
                    raise BadImage(f"has an empty size {w}x{h}")
                if w > max_side or h > max_side:
                    raise BadImage(f"is {w}x{h} pixels; the limit is {max_side} pixels a side")
                if w * h > max_pixels:
                    raise BadImage(f"is {w}x{h} = {w * h:,} pixels; the limit is {max_pixels:,}")
                im.load()  # decode every pixel: a truncated or corrupt file fails here
        except BadImage:
            raise
        except UnidentifiedImageError:
            raise BadImage(f"is not a {', '.join(FORMATS[:-1])} or {FORMATS[-1]} image") from None
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
            raise BadImage(f"claims too many pixels ({e})") from None
        except (OSError, SyntaxError, ValueError, EOFError, MemoryError) as e:
            raise BadImage(f"is a corrupt or truncated {fmt} ({' '.join(str(e).split())[:120]})") from None
    return int(w), int(h)
