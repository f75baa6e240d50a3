"""Decoded images kept in an LRU cache, with background prefetch on a thread pool.

`ImageCache.get(path)` answers at once when the image is cached and otherwise decodes it on
the calling thread; `prefetch(paths)` decodes the next items of the queue on pool threads so
that moving on to them costs no decode. A missing or unreadable file gives an `ImageResult`
with `image=None` and a message saying what was wrong (never an exception): the pair viewer
then draws a neutral canvas.

QImage (not QPixmap) is used off the GUI thread; the viewer converts on display.
The thumbnail grid uses a second cache whose images are decoded already scaled down
(`max_side`), which QImageReader does while decoding (cheap for large PNGs).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, QRunnable, QSize, QThreadPool, Signal
from PySide6.QtGui import QImage, QImageReader

# read here, on the thread that imports this module (the GUI thread): PySide creates an enum's
# type the first time it is reached, which `decode` on a pool thread must not be the one to do
_RGB32 = QImage.Format.Format_RGB32
_ARGB32_PRE = QImage.Format.Format_ARGB32_Premultiplied


@dataclass(frozen=True)
class ImageResult:
    image: QImage | None
    error: str = ""  # why there is no image ("" when there is one)

    @property
    def nbytes(self) -> int:
        return int(self.image.sizeInBytes()) if self.image is not None else 64


def decode(path: str | Path, max_side: int = 0, display: str | None = None) -> ImageResult:
    """Read one image file; `max_side` > 0 scales it down while decoding. Never raises."""
    p = Path(path)
    shown = display or str(p)
    if not str(path):
        return ImageResult(None, "this sample has no image file")
    if not p.is_file():
        return ImageResult(None, f"image not found: {shown}")
    reader = QImageReader(str(p))
    reader.setAutoTransform(True)
    if max_side > 0:
        size = reader.size()
        if size.isValid() and max(size.width(), size.height()) > max_side:
            s = max_side / max(size.width(), size.height())
            reader.setScaledSize(QSize(max(1, round(size.width() * s)), max(1, round(size.height() * s))))
    img = reader.read()
    if img.isNull():
        return ImageResult(None, f"cannot read image {shown}: {reader.errorString()}")
    if img.format() not in (_RGB32, _ARGB32_PRE):
        img = img.convertToFormat(_ARGB32_PRE if img.hasAlphaChannel() else _RGB32)
    return ImageResult(img)


class _Signals(QObject):
    loaded = Signal(str)  # the key that finished loading (queued to the GUI thread)


class _Job(QRunnable):
    def __init__(self, cache: "ImageCache", key: str) -> None:
        super().__init__()
        self.cache = cache
        self.key = key
        self.setAutoDelete(True)

    def run(self) -> None:
        self.cache._load_in_thread(self.key)


class ImageCache:
    """LRU cache of decoded images keyed by absolute path, with a byte budget."""

    def __init__(self, max_bytes: int = 192 * 1024 * 1024, max_side: int = 0,
                 pool: QThreadPool | None = None, threads: int = 2) -> None:
        self.max_bytes = max_bytes
        self.max_side = max_side
        self._items: OrderedDict[str, ImageResult] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        self._generation = 0  # bumped by clear(): late results of older requests are dropped
        if pool is None:
            pool = QThreadPool()
            pool.setMaxThreadCount(threads)
        self.pool = pool
        self.signals = _Signals()
        self.loaded = self.signals.loaded  # connect to learn when a prefetched image is ready
        self.hits = 0
        self.misses = 0

    # ---- lookups ------------------------------------------------------------------------------
    def peek(self, key: str) -> ImageResult | None:
        """The cached result, or None; never decodes."""
        with self._lock:
            r = self._items.get(key)
            if r is not None:
                self._items.move_to_end(key)
            return r

    def get(self, key: str, display: str | None = None) -> ImageResult:
        """The image for `key`, decoding it now if it is not cached."""
        r = self.peek(key)
        if r is not None:
            self.hits += 1
            return r
        self.misses += 1
        r = decode(key, self.max_side, display)
        self._put(key, r)
        return r

    def request(self, key: str) -> ImageResult | None:
        """The cached image, or None after queueing a background decode (`loaded` fires)."""
        r = self.peek(key)
        if r is None:
            self.prefetch([key])
        return r

    def prefetch(self, keys: list[str]) -> None:
        """Decode these on the pool (those not cached nor already queued)."""
        for k in keys:
            if not k:
                continue
            with self._lock:
                if k in self._items or k in self._pending:
                    continue
                self._pending.add(k)
            self.pool.start(_Job(self, k))

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._pending.clear()
            self._bytes = 0
            self._generation += 1

    def wait(self, msecs: int = 5000) -> bool:
        """Wait for queued decodes (tests and benchmarks)."""
        return self.pool.waitForDone(msecs)

    def __len__(self) -> int:
        return len(self._items)

    @property
    def nbytes(self) -> int:
        return self._bytes

    # ---- internals ----------------------------------------------------------------------------
    def _load_in_thread(self, key: str) -> None:
        gen = self._generation
        r = decode(key, self.max_side)
        with self._lock:
            self._pending.discard(key)
            if gen != self._generation:
                return
        self._put(key, r)
        try:
            self.signals.loaded.emit(key)
        except RuntimeError:  # the cache was deleted while decoding
            pass

    def _put(self, key: str, r: ImageResult) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old.nbytes
            self._items[key] = r
            self._bytes += r.nbytes
            while self._bytes > self.max_bytes and len(self._items) > 1:
                _, ev = self._items.popitem(last=False)
                self._bytes -= ev.nbytes
