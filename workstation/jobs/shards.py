"""Deterministic sharding of a job's items over several machines or GPUs.

``--shard i/n`` (1-based: ``1/4`` … ``4/4``) gives each item to exactly one shard by a stable
hash of the item's shard key (for generation ``prompt_id|seed``, for detection the sample id).
The assignment depends only on the key, never on the order of the list or on which other items
exist, so every machine computes the same split from the same suite, the shards are disjoint
and together cover the whole job; a suite that grows keeps the old items where they were.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ..types import WorkstationError

T = TypeVar("T")

_SHARD_RE = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based index)."""

    index: int = 1
    count: int = 1

    def __post_init__(self) -> None:
        if self.count < 1:
            raise WorkstationError(f"shard count must be at least 1, got {self.count}")
        if not 1 <= self.index <= self.count:
            raise WorkstationError(
                f"shard {self.index}/{self.count} does not exist: shards are numbered 1/{self.count} "
                f"… {self.count}/{self.count}"
            )

    @property
    def whole(self) -> bool:
        return self.count == 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def to_list(self) -> list[int]:
        return [self.index, self.count]

    @staticmethod
    def parse(text: "str | Shard | Sequence[int] | None") -> "Shard":
        """'2/4' → Shard(2, 4); None or '' → the whole job."""
        if text is None or text == "":
            return Shard()
        if isinstance(text, Shard):
            return text
        if not isinstance(text, str):
            i, n = (int(v) for v in text)
            return Shard(i, n)
        m = _SHARD_RE.match(text)
        if not m:
            raise WorkstationError(f"--shard must look like i/n, e.g. 1/4 (1-based), got {text!r}")
        return Shard(int(m.group(1)), int(m.group(2)))

    def owns(self, key: str) -> bool:
        return self.whole or shard_of(key, self.count) == self.index


def stable_hash(key: str) -> int:
    """A 64-bit hash of ``key`` that is the same on every machine and Python version."""
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "big")


def shard_of(key: str, count: int) -> int:
    """The shard (1 … count) that owns ``key``."""
    if count < 1:
        raise WorkstationError(f"shard count must be at least 1, got {count}")
    return stable_hash(key) % count + 1


def select(items: Iterable[T], shard: Shard, key: Callable[[T], str]) -> list[T]:
    """The items of ``shard``, in their original order."""
    if shard.whole:
        return list(items)
    return [it for it in items if shard_of(key(it), shard.count) == shard.index]


def split(items: Iterable[T], count: int, key: Callable[[T], str]) -> list[list[T]]:
    """All ``count`` shards of ``items`` (shard i at position i-1)."""
    out: list[list[T]] = [[] for _ in range(count)]
    for it in items:
        out[shard_of(key(it), count) - 1].append(it)
    return out
