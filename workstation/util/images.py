"""One check for every image that comes from outside, before it is copied into a project.

`check_image(path, max_side=…, max_pixels=…) -> (width, height)` accepts a regular file that
decodes completely as PNG, JPEG or WebP and whose size is within the limits; anything else
raises `BadImage` with a one-line reason:

* an empty file, a text file, a truncated or corrupt image (the whole image is decoded);
* a header that claims more than `max_pixels` pixels or a side over `max_side` — refused from
  the header alone, before any pixel is decoded (a "decompression bomb": a few KB of PNG that
  claims 100000 × 100000 pixels would need 30 GB to decode);
* other formats (GIF, TIFF, BMP, …): detectors and the viewer expect the generator's formats.

Defaults: `MAX_SIDE` = 16384 pixels, `MAX_PIXELS` = 64 megapixels (an 8192 × 8192 image).
"""

from __future__ import annotations

import os
import stat
import warnings
from pathlib import Path

from ..types import WorkstationError

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


__all__ = ["FORMATS", "MAX_PIXELS", "MAX_SIDE", "BadImage", "check_image"]
