"""Columnar, in-memory view of a project's prompts, samples and cached detections.

This is the contract between the store (which loads / saves it), the importers and jobs
(which build it) and the methods (which evaluate it, vectorised). It knows no method:
a prompt carries its entities (lower-case names, in prompt order) and its method's own
fields in `attrs`; the method that owns a prompt reads what it needs from there.
All arrays of one table have the same length.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, TypeVar, cast

import numpy as np

from .types import ORIGINAL_NAME
from .util.grouping import factorize


_T = TypeVar("_T", bound="_Table")


class _Table:
    """A table of equally long column arrays (a dataclass's fields); ``_key`` names the column
    that identifies a row."""

    _key: ClassVar[str]

    def __len__(self) -> int:
        return len(getattr(self, self._key))

    def take(self: _T, idx: np.ndarray) -> _T:
        """The rows ``idx`` (indices or a boolean mask) of every column."""
        return type(self)(**{f.name: getattr(self, f.name)[idx] for f in fields(cast(Any, self))})


@dataclass
class Samples(_Table):
    sample_id: np.ndarray  # object (str), unique
    run_id: np.ndarray  # object (str)
    prompt_id: np.ndarray  # object (str)
    seed: np.ndarray  # int64
    width: np.ndarray  # float64, pixels
    height: np.ndarray  # float64, pixels
    image_path: np.ndarray  # object (str), relative to the project folder ("" if none)
    has_secondary: np.ndarray  # bool: the secondary detector ran on this image
    has_perturbed: np.ndarray  # bool: perturbed-variant detections are cached

    _key = "sample_id"

    @staticmethod
    def empty() -> "Samples":
        o = np.array([], dtype=object)
        f = np.array([], dtype=np.float64)
        b = np.array([], dtype=bool)
        return Samples(o, o, o, np.array([], np.int64), f, f, o, b, b)

    @staticmethod
    def build(sample_id: Any, run_id: Any, prompt_id: Any, seed: Any = None, width: Any = 512.0,
              height: Any = 512.0, image_path: Any = "", has_secondary: Any = False,
              has_perturbed: Any = False) -> "Samples":
        """Samples from lists or scalars (a scalar is repeated for every sample)."""
        n = len(sample_id)

        def col(v: Any, dtype: Any) -> np.ndarray:
            if np.ndim(v) == 0 and not isinstance(v, (list, tuple, np.ndarray)):
                return np.full(n, v, dtype=dtype) if dtype is not object else np.array([v] * n, dtype=object)
            return np.asarray(list(v) if dtype is object else v, dtype=dtype)

        return Samples(col(sample_id, object), col(run_id, object), col(prompt_id, object),
                       col(0 if seed is None else seed, np.int64), col(width, np.float64),
                       col(height, np.float64), col(image_path, object), col(has_secondary, bool),
                       col(has_perturbed, bool))


@dataclass(eq=False)
class CodedLabels:
    """A label column as codes into its distinct names: 2 bytes per detection (4 beyond
    32,767 names) where an object array holds an 8-byte pointer. The loader gives
    ``Detections.label`` in this form; the column is built as an object array the first time
    something reads ``label`` whole."""

    codes: np.ndarray  # int16 (int32 beyond 32,767 names), index into names
    names: np.ndarray  # object (str): distinct labels

    def __len__(self) -> int:
        return len(self.codes)

    def materialize(self) -> np.ndarray:
        if not len(self.names):
            return np.full(len(self.codes), "", dtype=object)
        return self.names[self.codes]


@dataclass
class SampleRuns:
    """A ``sample_idx`` column of detections sorted by sample, as where each sample's
    detections begin: ``offsets[i]:offsets[i + 1]`` are sample i's rows. 8 bytes per sample
    where the column holds 4 per detection (52 MB at 13M detections). The loader gives
    ``Detections.sample_idx`` in this form; the column is built the first time something reads
    it whole (the checker and the overlays read the offsets)."""

    offsets: np.ndarray  # int64 (N + 1,), non-decreasing, offsets[0] == 0
    dtype: np.dtype[Any]  # of the column it stands for

    def __len__(self) -> int:
        return int(self.offsets[-1]) if len(self.offsets) else 0

    def materialize(self) -> np.ndarray:
        counts = np.diff(self.offsets)
        return np.repeat(np.arange(len(counts), dtype=self.dtype), counts)


@dataclass
class Detections:
    sample_idx: np.ndarray  # int64 (int32 from the loader), row in Samples (may be given as SampleRuns)
    source: np.ndarray  # int8, types.PRIMARY / SECONDARY
    variant: np.ndarray  # int16 (int8 from the loader up to 127 variants); 0 original, k: variant_names[k]
    label: np.ndarray  # object (str), lower-case (may be given as CodedLabels: see label_codes)
    score: np.ndarray  # float64 (float32 from the loader where every value is one: read it as float64)
    x1: np.ndarray  # float64 (as score), pixels
    y1: np.ndarray
    x2: np.ndarray
    y2: np.ndarray

    def __len__(self) -> int:
        runs = self.__dict__.get("_runs")
        return len(runs) if runs is not None else len(self.sample_idx)

    def _columns_at(self, idx: np.ndarray) -> dict[str, Any]:
        """Every column but sample_idx at rows ``idx`` (the labels still coded when they are)."""
        out = {f.name: getattr(self, f.name)[idx] for f in fields(self) if f.name not in ("label", "sample_idx")}
        coded = self.__dict__.get("_coded")
        out["label"] = CodedLabels(coded.codes[idx], coded.names) if coded is not None else self.label[idx]
        return out

    def take(self, idx: np.ndarray) -> "Detections":
        runs = self.__dict__.get("_runs")
        whole = self.__dict__.get("_sample_idx")  # a column built from runs is not kept for a take
        sample_idx = (whole if whole is not None else runs.materialize() if runs is not None else self.sample_idx)[idx]
        return Detections(sample_idx=sample_idx, **self._columns_at(idx))

    def take_samples(self, rows: np.ndarray) -> "Detections | None":
        """The detections of samples ``rows`` (in that order; sample i of the result is
        ``rows[i]``), given as SampleRuns, reading only those samples' rows; None unless the
        rows were given as SampleRuns."""
        runs = self.__dict__.get("_runs")
        if runs is None:
            return None
        off = runs.offsets
        starts = off[rows]
        counts = off[rows + 1] - starts
        new_off = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(counts, out=new_off[1:])
        # detection j of the result is row starts[i] + (j - new_off[i]) of sample i's run
        idx = np.repeat(starts - new_off[:-1], counts) + np.arange(int(new_off[-1]), dtype=np.int64)
        return Detections(sample_idx=SampleRuns(new_off, runs.dtype), **self._columns_at(idx))  # type: ignore[arg-type]

    def sample_offsets(self) -> np.ndarray | None:
        """Where each sample's detections begin (N + 1 offsets) when the rows were given as
        SampleRuns (sorted by sample), else None."""
        runs = self.__dict__.get("_runs")
        return runs.offsets if runs is not None else None

    def sample_identity(self) -> object:
        """An object that stays the same for as long as the sample_idx column does (see
        label_identity)."""
        runs = self.__dict__.get("_runs")
        return runs if runs is not None else self.sample_idx

    def label_codes(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(codes, distinct names) when the labels were given coded, else None."""
        coded = self.__dict__.get("_coded")
        return (coded.codes, coded.names) if coded is not None else None

    def labels_at(self, idx: Any) -> Any:
        """``label[idx]`` without building the whole column."""
        coded = self.__dict__.get("_coded")
        if coded is not None and self.__dict__.get("_label") is None:
            return coded.names[coded.codes[idx]]
        return self.label[idx]

    def label_identity(self) -> object:
        """An object that stays the same for as long as the label column does (caches key on
        it; building the coded column's object array does not change it)."""
        coded = self.__dict__.get("_coded")
        return coded if coded is not None else self.label

    @staticmethod
    def empty() -> "Detections":
        f = np.array([], dtype=np.float64)
        return Detections(np.array([], np.int64), np.array([], np.int8), np.array([], np.int16),
                          np.array([], dtype=object), f, f, f, f, f)


def _compact_column(column: str, compact: str, kind: type) -> property:
    """A Detections column that may be given in a compact form (a `kind` with `materialize()`,
    kept in ``__dict__[compact]``): the array is built the first time the column is read and
    kept in ``__dict__["_" + column]``."""
    full = "_" + column

    def get(self: Detections) -> np.ndarray:
        arr = self.__dict__.get(full)
        if arr is None:
            arr = self.__dict__[full] = self.__dict__[compact].materialize()
        return arr

    def put(self: Detections, value: Any) -> None:
        if isinstance(value, kind):
            self.__dict__[compact], self.__dict__[full] = value, None
        else:
            self.__dict__[compact], self.__dict__[full] = None, value

    return property(get, put)


Detections.label = _compact_column("label", "_coded", CodedLabels)  # type: ignore[assignment]
Detections.sample_idx = _compact_column("sample_idx", "_runs", SampleRuns)  # type: ignore[assignment]


@dataclass
class Prompts(_Table):
    prompt_id: np.ndarray  # object (str), unique
    text: np.ndarray  # object (str)
    suite: np.ndarray  # object (str): where the prompt came from (provenance)
    method: np.ndarray  # object (str): the evaluation method whose suite it belongs to
    entities: np.ndarray  # object: tuple[str, ...] of lower-case entity names, in prompt order
    attrs: np.ndarray  # object: dict of the method's own fields (JSON-serialisable)
    twin_id: np.ndarray  # object (str): the prompt this one is compared with ("" if none)
    group_id: np.ndarray  # object (str): the pair / triplet / node it belongs to ("" if none)

    _key = "prompt_id"

    @staticmethod
    def empty() -> "Prompts":
        o = np.array([], dtype=object)
        return Prompts(o, o, o, o, o, o, o, o)

    @staticmethod
    def build(prompt_id: Any, text: Any, *, method: str | Any, suite: str | Any = "",
              entities: Any = None, attrs: Any = None, twin_id: Any = None, group_id: Any = None) -> "Prompts":
        """Prompts from lists (a str given for method / suite applies to all)."""
        n = len(prompt_id)

        def strs(v: Any, default: str = "") -> np.ndarray:
            if v is None:
                v = [default] * n
            elif isinstance(v, str):
                v = [v] * n
            return np.array([("" if x is None else str(x)) for x in v], dtype=object)

        ents = np.empty(n, dtype=object)
        for i, e in enumerate(entities if entities is not None else [()] * n):
            ents[i] = tuple(str(x).lower() for x in (e or ()))
        ats = np.empty(n, dtype=object)
        for i, a in enumerate(attrs if attrs is not None else [None] * n):
            ats[i] = dict(a or {})
        return Prompts(strs(prompt_id), strs(text), strs(suite), strs(method), ents, ats, strs(twin_id),
                       strs(group_id))

    def of_method(self, method: str) -> "Prompts":
        return self.take(np.flatnonzero(self.method == method))

    def content_hash(self) -> str:
        """Hash of the prompts' content (ids, texts, methods, entities, attrs, links), order-free."""
        import hashlib
        import json

        h = hashlib.sha256()
        for i in np.argsort(self.prompt_id.astype(str), kind="stable"):
            h.update(json.dumps([self.prompt_id[i], self.text[i], self.method[i], list(self.entities[i]),
                                 self.attrs[i], self.twin_id[i], self.group_id[i]],
                                sort_keys=True, default=str).encode())
            h.update(b"\x1e")
        return h.hexdigest()[:16]


def label_codes(ds: "Dataset") -> tuple[np.ndarray, list[str]] | None:
    """Codes of ``ds.detections.label`` into its distinct names, when the loader gave them
    (None otherwise): the checker's label matching reads them instead of hashing every label."""
    lc = ds.detections.label_codes()
    if lc is None:
        return None
    return lc[0], [str(x) for x in lc[1]]


@dataclass
class Dataset:
    samples: Samples
    detections: Detections
    prompts: Prompts
    variant_names: tuple[str, ...] = (ORIGINAL_NAME,)
    # per-sample columns a method keeps in its own tables (``"<method>.<name>"``: an array row for
    # row with `samples`), attached by the method's load; `subset` and `of_method` carry them
    sample_columns: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    # free-form cache for parameter-independent precomputation (checker.prepare)
    cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def n(self) -> int:
        return len(self.samples)

    def drop_mapped_pages(self) -> int:
        """Hand back the resident pages of detection columns that are memory-mapped files (the
        loader's cache, see ``store.detection_cache``); they are read back from the page cache
        when needed. Call after a whole-table pass (the checker's preparation). Returns the
        bytes of the mappings advised (0 when no column is mapped)."""
        from .util.memory import drop_mapped_pages

        d = self.detections
        cols = [d.source, d.variant, d.score, d.x1, d.y1, d.x2, d.y2]
        coded = d.label_codes()
        if coded is not None:
            cols.append(coded[0])
        offsets = d.sample_offsets()
        cols.append(offsets if offsets is not None else d.sample_idx)
        return drop_mapped_pages(cols)

    def sample_index(self) -> dict[str, int]:
        idx = self.cache.get("sample_index")
        if idx is None:
            ids = self.samples.sample_id.tolist()
            idx = dict(zip(ids, range(len(ids))))
            self.cache["sample_index"] = idx
        return idx

    def row_of(self, sample_id: str) -> int:
        """Row of one sample id (-1 if absent), without building ``sample_index`` for it."""
        idx = self.cache.get("sample_index")
        if idx is not None:
            return int(idx.get(sample_id, -1))
        hit = np.flatnonzero(self.samples.sample_id == sample_id)
        return int(hit[0]) if len(hit) else -1

    def keep_arrow(self, name: str, column: Any) -> None:
        """Keep `column` (Arrow strings, sample for sample) as the Arrow form of the samples'
        column `name` as it stands (the loader's, read from the store: no second conversion)."""
        self.cache[f"arrow.samples.{name}"] = (getattr(self.samples, name), column)

    def kept_arrow(self, name: str) -> Any:
        """The Arrow form of the samples' column `name` kept by `keep_arrow`, while that column
        is still the array it was kept for; else None."""
        kept = self.cache.get(f"arrow.samples.{name}")
        if kept is None or kept[0] is not getattr(self.samples, name) or len(kept[1]) != self.n:
            return None
        return kept[1]

    def prompt_rows(self) -> np.ndarray:
        """Row in `prompts` of every sample's prompt (int64; -1 where the prompt is not loaded)."""
        rows = self.cache.get("prompt_rows")
        if rows is None or len(rows) != self.n:
            import pyarrow as pa
            import pyarrow.compute as pc

            # each distinct prompt id of the samples looked up once, by an Arrow hash lookup (the
            # loader's column knows its distinct values); a repeated prompt id gives its first row
            codes, names = factorize(self.samples.prompt_id, sort=False)
            ids = pa.array(list(map(str, self.prompts.prompt_id.tolist())), pa.string())
            wanted = pa.array(names, pa.string())
            if 4 * len(names) < len(ids):  # a few samples' prompts (a subset): hash those, not all
                at = pc.fill_null(pc.index_in(ids, value_set=wanted), -1).to_numpy(zero_copy_only=False)
                hit = np.flatnonzero(at >= 0)
                found_names, first = np.unique(at[hit], return_index=True)
                name_rows = np.full(len(names), -1, np.int64)
                name_rows[found_names] = hit[first]
            else:
                found = pc.fill_null(pc.index_in(wanted, value_set=ids), -1)
                name_rows = np.asarray(found.to_numpy(zero_copy_only=False), np.int64)
            rows = name_rows[codes] if self.n else np.zeros(0, np.int64)
            self.cache["prompt_rows"] = rows
        return rows

    def of_method(self, method: str) -> "Dataset":
        """The samples whose prompt belongs to ``method`` (with their detections and those prompts)."""
        rows = self.prompt_rows()
        pm = self.prompts.method
        keep = np.flatnonzero((rows >= 0) & (pm[np.maximum(rows, 0)] == method)) if self.n else np.zeros(0, np.int64)
        sub = self.subset(keep)
        sub.prompts = self.prompts.of_method(method)
        sub.cache.pop("prompt_rows", None)
        return sub

    def subset(self, sample_rows: np.ndarray) -> "Dataset":
        """Dataset restricted to the given sample rows (detections re-indexed; only those samples'
        detections are read when the loader gave them by sample). It shares the prompts table,
        and so the samples' prompt rows when they are known."""
        sample_rows = np.asarray(sample_rows, dtype=np.int64)
        dets = self.detections.take_samples(sample_rows)
        if dets is None:  # a plain sample_idx column: every detection is looked at
            remap = np.full(self.n, -1, dtype=np.int64)
            remap[sample_rows] = np.arange(len(sample_rows))
            keep = remap[self.detections.sample_idx] >= 0
            dets = self.detections.take(np.nonzero(keep)[0])
            dets.sample_idx = remap[dets.sample_idx]
        sub = Dataset(self.samples.take(sample_rows), dets, self.prompts, self.variant_names,
                      {k: v[sample_rows] for k, v in self.sample_columns.items() if len(v) == self.n})
        rows = self.cache.get("prompt_rows")
        if rows is not None and len(rows) == self.n:  # the same prompts table: the same rows
            sub.cache["prompt_rows"] = rows[sample_rows]
        return sub
