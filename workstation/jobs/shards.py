"""Deterministic sharding of a job's items over several machines or GPUs.

``--shard i/n`` (1-based: ``1/4`` … ``4/4``) gives each item to exactly one shard by a stable
hash of the item's shard key (for generation ``prompt_id|seed``, for detection the sample id).
The assignment depends only on the key, never on the order of the list or on which other items
exist, so every machine computes the same split from the same suite, the shards are disjoint
and together cover the whole job; a suite that grows keeps the old items where they were.

Inside a Slurm job array, ``generate`` and ``detect`` take the shard from the array's
variables when ``--shard`` is not given (``shard_from_slurm``); the job log says so. With
``WORKSTATION_SHARDS=N`` set, array task k is shard k+1 of N whatever else the array holds, so a
failed task resubmitted alone (``sbatch --array=2``) is still its own shard.

Every number (in ``--shard``, in ``WORKSTATION_SHARDS``, in the ``SLURM_ARRAY_*`` variables, in a
stored job's shard) is checked as a decimal whole number in range before it is used: ASCII digits
only, no sign, no leading zero, no spaces, at most `MAX_SHARDS` shards. A count such as
``18446744073709551617`` is refused, not wrapped or taken as a count no machine would finish.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ..types import WorkstationError

T = TypeVar("T")

_SHARD_RE = re.compile(r"([^/]*)/([^/]*)")
_DECIMAL = re.compile(r"0|[1-9][0-9]*", re.ASCII)

#: the most shards a job may have (Slurm's own largest array, MaxArraySize, is 4,000,001; its
#: default is 1,001): more shards than that would each hold a few items, and a mistyped count
#: must be an error, not a job whose shards no machine makes
MAX_SHARDS = 100_000
#: the largest array task id read (Slurm's task ids are below MaxArraySize)
MAX_TASK_ID = 4_000_000


def decimal(text: object, what: str, lo: int, hi: int, hint: str = "") -> int:
    """``text`` as a whole number from ``lo`` to ``hi``, written in decimal: ASCII digits only, no
    sign, no leading zero, no spaces (``08``, ``+4``, ``٣``, ``1_000``, ``4 `` are refused);
    anything else is one `WorkstationError` naming ``what``."""
    from ..util.textio import quote

    s = text if isinstance(text, str) else None
    if s is None or len(s) > 20 or not _DECIMAL.fullmatch(s):
        shown = quote(text, 30) if isinstance(text, str) else repr(text)[:30]
        raise WorkstationError(f"{what}={shown} is not a whole number written in decimal (digits only, no sign or "
                               f"leading zero){hint}")
    v = int(s)
    if v < lo:
        raise WorkstationError(f"{what}={s} must be at least {lo}{hint}")
    if v > hi:
        raise WorkstationError(f"{what}={s} is more than {hi:,}, the most it may be{hint}")
    return v


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based index)."""

    index: int = 1
    count: int = 1

    def __post_init__(self) -> None:
        for v in (self.index, self.count):
            if isinstance(v, bool) or not isinstance(v, int):
                raise WorkstationError(f"a shard is two whole numbers i/n, got {repr(v)[:30]}")
        if self.count < 1:
            raise WorkstationError(f"shard count must be at least 1, got {self.count}")
        if self.count > MAX_SHARDS:
            raise WorkstationError(f"shard count {self.count} is more than {MAX_SHARDS:,}, the most shards a job "
                                   "may have")
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
        if not isinstance(text, str):  # a stored job's shard: two whole numbers
            try:
                i, n = text
            except (TypeError, ValueError):
                raise WorkstationError(f"a shard is two whole numbers [i, n], got {repr(text)[:40]}") from None
            return Shard(i, n)
        m = _SHARD_RE.fullmatch(text)
        if not m:
            from ..util.textio import quote

            raise WorkstationError(f"--shard must look like i/n, e.g. 1/4 (1-based), got {quote(text, 30)}")
        # spaces around a number are let through (" 1 / 4 "), never inside one
        count = decimal(m.group(2).strip(" \t"), "--shard's count", 1, MAX_SHARDS)
        index = decimal(m.group(1).strip(" \t"), "--shard's index", 0, MAX_SHARDS)
        return Shard(index, count)

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


# ---- Slurm job arrays ---------------------------------------------------------------------------
SLURM_VARS = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX",
              "SLURM_ARRAY_TASK_STEP")
SHARDS_ENV = "WORKSTATION_SHARDS"  # the shard count of the whole job: array task k is shard k+1 of it


def shard_from_slurm(env: Mapping[str, str]) -> tuple[Shard, str] | None:
    """The shard of this Slurm job-array task, and a note saying where it came from; None outside an array.

    ``sbatch --array=0-7`` runs 8 tasks with ``SLURM_ARRAY_TASK_ID`` 0 … 7 (``_MIN`` 0, ``_MAX`` 7,
    ``_COUNT`` 8): task k is shard (k − MIN) / STEP + 1 of COUNT. Any evenly spaced array works
    (``--array=1-16``, ``--array=0-30:2``); a list such as ``--array=1,5,7`` does not map onto
    shards and is refused (pass ``--shard i/n`` yourself).

    The array's variables describe the array as submitted, not the job: a task resubmitted on its
    own (``--array=2``) is a one-task array. ``WORKSTATION_SHARDS=N`` names the job's shard count;
    then task k is shard k+1 of N (tasks 0 … N-1) in any array, whole or partial.
    """
    raw = env.get("SLURM_ARRAY_TASK_ID")
    if raw is None or raw == "":
        return None
    total_raw = env.get(SHARDS_ENV)
    if total_raw is not None and total_raw != "":
        return _shard_of_job(raw, total_raw)
    hint = "; pass --shard i/n"

    def num(name: str, default: int | None = None, lo: int = 0) -> int | None:
        v = env.get(name)
        if v is None or v == "":
            return default
        return decimal(v, name, lo, MAX_TASK_ID, hint)

    task = num("SLURM_ARRAY_TASK_ID")
    count = num("SLURM_ARRAY_TASK_COUNT", lo=1)
    lo = num("SLURM_ARRAY_TASK_MIN")
    hi = num("SLURM_ARRAY_TASK_MAX")
    step = num("SLURM_ARRAY_TASK_STEP", 1, lo=1)
    assert task is not None and step is not None
    if count is None and lo is not None and hi is not None:
        if hi < lo:
            raise WorkstationError(f"SLURM_ARRAY_TASK_MAX={hi} is below SLURM_ARRAY_TASK_MIN={lo}{hint}")
        count = (hi - lo) // step + 1
    if lo is None and hi is not None and count is not None:
        lo = hi - (count - 1) * step
        if lo < 0:
            raise WorkstationError(f"SLURM_ARRAY_TASK_MAX={hi} and SLURM_ARRAY_TASK_COUNT={count} give no array{hint}")
    if count is None or lo is None:
        raise WorkstationError("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT / _MIN / _MAX are not; "
                               "pass --shard i/n")
    if count > MAX_SHARDS:
        raise WorkstationError(f"SLURM_ARRAY_TASK_COUNT={count} is more than {MAX_SHARDS:,}, the most shards a job "
                               f"may have{hint}")
    where = (f"SLURM_ARRAY_TASK_ID={task}, SLURM_ARRAY_TASK_MIN={lo}, SLURM_ARRAY_TASK_COUNT={count}"
             + (f", SLURM_ARRAY_TASK_STEP={step}" if step != 1 else ""))
    if hi is not None and hi != lo + (count - 1) * step:
        raise WorkstationError(f"the Slurm job array is not evenly spaced ({where}, SLURM_ARRAY_TASK_MAX={hi}), "
                               "so its tasks do not map onto shards; use --array=0-N or pass --shard i/n")
    if (task - lo) % step or not lo <= task <= lo + (count - 1) * step:
        raise WorkstationError(f"Slurm task {task} is not one of the array's tasks ({where}); pass --shard i/n")
    shard = Shard((task - lo) // step + 1, count)
    return shard, f"shard {shard} from the Slurm job array ({where})"


def _shard_of_job(task_raw: str, total_raw: str) -> tuple[Shard, str]:
    """Array task ``task_raw`` as a shard of a job of ``total_raw`` shards (WORKSTATION_SHARDS)."""
    total = decimal(total_raw, SHARDS_ENV, 1, MAX_SHARDS, " (the job's number of shards)")
    task = decimal(task_raw, "SLURM_ARRAY_TASK_ID", 0, MAX_TASK_ID, "; pass --shard i/n")
    if not 0 <= task < total:
        raise WorkstationError(
            f"Slurm task SLURM_ARRAY_TASK_ID={task} is not a shard of {SHARDS_ENV}={total}: task k is shard k+1, so the array's "
            f"tasks are 0 … {total - 1} (--array=0-{total - 1}, or some of them)")
    shard = Shard(task + 1, total)
    return shard, f"shard {shard} from the Slurm job array (SLURM_ARRAY_TASK_ID={task}, {SHARDS_ENV}={total})"


def resolve_shard(text: "str | None", env: Mapping[str, str]) -> tuple[Shard, str]:
    """``--shard`` when given, else the Slurm job array's shard, else the whole job; with a note."""
    if text:
        return Shard.parse(text), ""
    got = shard_from_slurm(env)
    if got is None:
        return Shard(), ""
    return got
