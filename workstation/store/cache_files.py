"""The folders of the user's cache, written whole and read back as files from outside.

A cache folder (the loader's detection entry, the checker's kept preparation inside one) holds
`.npy` arrays and a `manifest.json`. Anything read back is treated like a file from outside:

* The manifest is a regular file (opened without following a link, `O_NOFOLLOW`, and without
  blocking on a pipe, `O_NONBLOCK`) of at most a given size, read strictly
  (`util.jsonsafe.loads_strict`: no NaN / Infinity, no huge numbers, nesting at most 64 levels;
  a deeply nested manifest once ended every command in a RecursionError), and its fields are
  checked one by one (`Fields`).
* An array file is opened the same way, its `.npy` header parsed by numpy's own reader (never
  unpickled: an object dtype is refused), and mapped read-only from the descriptor that was
  checked, so the file read is the one checked (no link swapped in between).
* **Contents.** Every file's size and a keyed digest of all of its bytes (the header with them)
  are in the manifest, and so is a digest of the manifest itself (which holds, for instance,
  the names the label codes stand for). The key is the entry's own (a digest of everything the
  entry was built from) with the file's name: a file of another entry, another project or
  another column never checks out, even where its shape, dtype and range would. On load every
  byte of every file is hashed again (`file_digest`, reading the file in blocks: its pages do not
  become the process's memory) and compared before the file is used. A file whose contents
  differ in any way is refused — zeroed behind its header, negated, mirrored, swapped in from
  another entry, truncated or extended, a single flipped bit anywhere — and the caller rebuilds
  the entry from the project. The digest is XXH3-128 (the `xxhash` package, seeded with the
  key; ≈0.07 s of CPU for the 0.3 GB of detection columns of a million samples), or HMAC-SHA256
  where that package is missing (about five times the CPU); the manifest names the one it was
  written with, and an entry written with one this installation lacks is rebuilt.
  A full check was chosen over a cheaper one (the structure and a sample of blocks): at a
  million samples its own work is 0.13–0.18 s of CPU for the 0.69 GB of both caches (the sampled
  one's 0.05–0.08 s), and a sampled check cannot see a damaged block it does not sample — a single
  flipped block, a few zeroed pages (docs/performance.md has both).
  What the digests do not defend against: someone who can write the user's cache folder and
  means to — the key is not secret (it is derived from the project), so a forger can write an
  entry that checks out, as they could change the project or the program itself; and a file
  changed after it was checked, while it is mapped (the workstation's writers never change a
  file in place: they write a new folder and rename it).
* Writing (`write_arrays`, `sync_folder`, `publish`): each file is written, flushed and synced,
  the manifest last; the folder, still under a temporary name, is synced, renamed into place and
  its parent synced. A crash leaves either no entry or a whole one (a file of a renamed entry
  whose blocks never reached the disk reads as zeros: its digest says so).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
from pathlib import Path
from typing import Any

import numpy as np

from ..util.jsonsafe import JSONInputError, loads_strict

MANIFEST = "manifest.json"
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
_BLOCK = 4 << 20  # bytes hashed at a time
_HEADER_MAX = 10_000  # bytes of an .npy header (numpy's own default limit)

_xxhash: Any
try:  # the faster digest where it is installed
    import xxhash as _xxhash
except ImportError:  # pragma: no cover - depends on the environment
    _xxhash = None

DIGEST = "xxh3_128" if _xxhash is not None else "hmac-sha256"


class Unusable(ValueError):
    """A cache folder that does not check out; the message says why, in a few words."""


def _one_line(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def reason(e: BaseException) -> str:
    """Why a cache folder was refused, in one short line."""
    if isinstance(e, Unusable):
        return _one_line(str(e))
    if isinstance(e, OSError):
        return _one_line(f"{e.strerror or type(e).__name__}" + (f": {Path(e.filename).name}" if e.filename else ""))
    return _one_line(f"{type(e).__name__}: {e}")


def digest_key(*parts: str) -> bytes:
    """The digest key of a cache folder's files: what it was built from, and the file's name."""
    return hashlib.sha256("\x1f".join(("workstation-cache", *parts)).encode()).digest()


def _hasher(key: bytes, algorithm: str) -> Any:
    if algorithm == "xxh3_128" and _xxhash is not None:
        return _xxhash.xxh3_128(seed=int.from_bytes(key[:8], "little"))
    if algorithm == "hmac-sha256":
        return hmac.new(key, digestmod=hashlib.sha256)
    raise Unusable(f"written with the {algorithm!r} digest, which this installation does not have")


def file_digest(fd: int, size: int, key: bytes, algorithm: str | None = None) -> int:
    """The keyed digest (`algorithm`, default `DIGEST`) of the first `size` bytes of the open file
    `fd` (read, not mapped: the pages do not become this process's memory). Unusable when the
    file holds fewer."""
    h = _hasher(key, algorithm or DIGEST)
    buf = bytearray(min(_BLOCK, max(size, 1)))
    view = memoryview(buf)
    at = 0
    while at < size:
        if hasattr(os, "preadv"):
            n = os.preadv(fd, [view[:min(_BLOCK, size - at)]], at)
        else:  # pragma: no cover - not Linux
            n = _pread_into(fd, view, size - at, at)
        if n <= 0:
            raise Unusable("shorter than the manifest says")
        h.update(view[:n])
        at += n
    return int.from_bytes(h.digest()[:16], "big")


def _pread_into(fd: int, view: memoryview, left: int, at: int) -> int:  # pragma: no cover - not Linux
    data = os.pread(fd, min(len(view), left), at)
    view[:len(data)] = data
    return len(data)


def manifest_digest(meta: dict[str, Any], key: bytes) -> int:
    """The keyed digest of a manifest's fields other than its own ``digest``."""
    body = json.dumps({k: v for k, v in meta.items() if k != "digest"}, sort_keys=True, ensure_ascii=True)
    return int.from_bytes(hashlib.blake2b(body.encode(), key=key[:64], digest_size=16).digest(), "big")


def open_regular(path: Path) -> tuple[int, os.stat_result]:
    """A read-only descriptor of `path` and its status: a regular file, not reached through a
    link (Unusable if not; a pipe is not waited on)."""
    if path.is_symlink():
        raise Unusable(f"{path.name} is a link")
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        raise Unusable(f"{path.name} is missing") from None
    except OSError as e:
        raise Unusable(f"{path.name} cannot be opened ({e.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unusable(f"{path.name} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def read_manifest(path: Path, max_bytes: int) -> dict[str, Any]:
    """A cache folder's manifest: a regular file of at most `max_bytes` holding a JSON object,
    read strictly (module doc); Unusable if not."""
    fd, info = open_regular(path)
    try:
        if info.st_size > max_bytes:
            raise Unusable(f"{path.name} is larger than {max_bytes:,} bytes")
        data = os.pread(fd, max_bytes + 1, 0)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise Unusable(f"{path.name} is larger than {max_bytes:,} bytes")
    try:
        meta = loads_strict(data)
    except JSONInputError as e:
        raise Unusable(f"{path.name} is not strict JSON: {e.message}") from None
    if not isinstance(meta, dict):
        raise Unusable(f"{path.name} does not hold an object")
    return meta


class Fields:
    """Typed reads of a manifest's fields: each missing or mistyped one is Unusable."""

    def __init__(self, meta: dict[str, Any], what: str = MANIFEST) -> None:
        self.meta, self.what = meta, what

    def get(self, name: str, kind: type | tuple[type, ...]) -> Any:
        if name not in self.meta:
            raise Unusable(f"{self.what} has no {name!r}")
        v = self.meta[name]
        if not isinstance(v, kind) or (isinstance(v, bool) and kind in (int, float, (int, float))):
            raise Unusable(f"{self.what}'s {name!r} is not what it should be")
        return v

    def whole(self, name: str, lo: int = 0, hi: int = 2**62) -> int:
        v = self.get(name, int)
        if not lo <= v <= hi:
            raise Unusable(f"{self.what}'s {name!r} is out of range")
        return int(v)

    def strings(self, name: str, limit: int = 1 << 22) -> list[str]:
        v = self.get(name, list)
        if len(v) > limit or not all(isinstance(x, str) for x in v):
            raise Unusable(f"{self.what}'s {name!r} is not a list of names")
        return list(v)

    def files(self) -> dict[str, tuple[int, int]]:
        """The manifest's ``files``: each file's name, size and digest."""
        raw = self.get("files", dict)
        out: dict[str, tuple[int, int]] = {}
        for name, entry in raw.items():
            if (not isinstance(entry, list) or len(entry) != 2
                    or not all(isinstance(x, int) and not isinstance(x, bool) for x in entry)
                    or not 0 <= entry[0] < 2**50 or not 0 <= entry[1] < 2**128):
                raise Unusable(f"{self.what}'s entry of {_one_line(name, 40)!r} is not a size and a digest")
            out[name] = (int(entry[0]), entry[1])
        return out


def check_manifest(meta: dict[str, Any], key: bytes) -> str:
    """Refuse a manifest whose own digest is not its fields' (another entry's, or edited);
    returns the digest algorithm its files were written with."""
    f = Fields(meta)
    if f.get("digest", int) != manifest_digest(meta, key):
        raise Unusable("the manifest's digest does not match its contents (damaged, or another entry's)")
    algorithm = f.get("digest_algorithm", str)
    _hasher(key, algorithm)  # one this installation has
    return str(algorithm)


def open_array(folder: Path, name: str, expect: tuple[int, int], key: bytes, algorithm: str,
               check: bool = True) -> np.ndarray:
    """`folder`/`name` memory-mapped read-only: its size and (with `check`) its keyed digest
    must be `expect`'s (size, digest); its header is parsed without unpickling."""
    path = folder / name
    fd, info = open_regular(path)
    try:
        size, digest = expect
        if info.st_size != size:
            raise Unusable(f"{name} holds {info.st_size:,} bytes where {size:,} were written")
        if check and file_digest(fd, size, key, algorithm) != digest:
            raise Unusable(f"{name}'s contents differ from what was written")
        with os.fdopen(os.dup(fd), "rb") as fh:
            try:
                version = np.lib.format.read_magic(fh)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh, max_header_size=_HEADER_MAX)
                elif version == (2, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh, max_header_size=_HEADER_MAX)
                else:
                    raise Unusable(f"{name} is an .npy file of version {version}")
            except (ValueError, SyntaxError, TypeError) as e:
                raise Unusable(f"{name}'s header cannot be read ({_one_line(str(e), 60)})") from None
            if dtype.hasobject or fortran:
                raise Unusable(f"{name} holds objects or is in Fortran order")
            offset = fh.tell()
            count = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
            if offset + count * dtype.itemsize != size:
                raise Unusable(f"{name}: its header's {dtype} {shape} is not its {size:,} bytes")
            return np.memmap(fh, dtype=dtype, mode="r", offset=offset, shape=tuple(shape))
    finally:
        os.close(fd)


def _sync(path: Path, directory: bool = False) -> None:
    flags = os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        if directory:  # a platform that cannot open a folder (Windows): its rename is durable as is
            return
        raise
    try:
        os.fsync(fd)
    except OSError:
        if not directory:
            raise
    finally:
        os.close(fd)


def described(path: Path, key: bytes) -> list[Any]:
    """A written file's manifest entry: its size and keyed digest (read back from the file)."""
    fd, info = open_regular(path)
    try:
        return [int(info.st_size), file_digest(fd, info.st_size, key)]
    finally:
        os.close(fd)


def sync_file(path: Path) -> None:
    """Flush `path`'s written pages (a file filled through a memory map too) to the disk."""
    _sync(path)


def write_arrays(folder: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write `arrays` as `.npy` files into the (temporary) `folder`, each synced."""
    for name, arr in arrays.items():
        with open(folder / f"{name}.npy", "wb") as fh:
            np.save(fh, np.ascontiguousarray(arr), allow_pickle=False)
            fh.flush()
            os.fsync(fh.fileno())


def write_manifest(folder: Path, meta: dict[str, Any], key: bytes, files: dict[str, list[Any]]) -> None:
    """Write the manifest of `folder` (its `files`' sizes and digests, the algorithm, its own
    digest) and sync it and the folder: written last, it marks the folder complete."""
    meta = dict(meta, files=files, digest_algorithm=DIGEST)
    meta["digest"] = manifest_digest(meta, key)
    with open(folder / MANIFEST, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(meta))
        fh.flush()
        os.fsync(fh.fileno())
    _sync(folder, directory=True)


def publish(tmp: Path, final: Path) -> None:
    """Rename the synced folder `tmp` to `final` and sync their parent (the rename on disk)."""
    os.replace(tmp, final)
    _sync(final.parent, directory=True)
