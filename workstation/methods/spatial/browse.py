"""The Browse table's rows without Qt: a filter and a sort over the live verdicts, the labels
and the samples, a page at a time.

The live checker verdicts (recomputed as the calibration sliders move) live in numpy arrays in
the window's session; they reach SQL as an Arrow table registered on the project's connection
(`LIVE_TABLE`), re-registered when verdicts or labels change, at the first query after the change.
Its sample columns (id, run, prompt text, relation, seed, image path) are built once per loaded
dataset and reused, so a re-registration only wraps the new verdict arrays (no copy). Human
labels come from the label log: the latest event per sample and annotator, aggregated once per
label change into `LABELS_TABLE` (row, labels, number of distinct verdicts).

Filter and sort run in numpy for every sort but the text columns (`numpy_order`), the same as
the SQL gives, without a query per slider move: the parts of a filter that the checker cannot
change (runs, relations, free text) are matched once by SQL and kept as a mask; the verdict,
reason, confidence, label and agreement conditions and the sort are numpy comparisons and one
stable argsort over the matching rows. SQL semantics copied: DuckDB orders NaN above every
number (so ``conf >= x`` holds for NaN and ``conf <= x`` does not; NaN comes last ascending and
first descending); ties in the sort key keep ascending dataset row order.

Every judge of the samples (`judges.judge_columns`: each stored checker config, GenEval's
position rule, the twin consistency, each scorer) is a column after `COLUMNS`, once the window has
computed them (off its thread, once per loaded dataset): their outcome codes are arrays beside the
live verdicts, so their sort and the filter "judges disagree" (`FilterSpec.judges_disagree`: two
judge names, `LIVE_JUDGE` the live checker) are numpy comparisons like the verdict's, never a
query or a judge's computation per slider move. They are automatic outcomes: a blind audit hides
them as it hides the checker's.

`FilterSpec` is what the filter bar edits and what `project.audit.save_filter` stores;
`FilterSpec.allowed` drops the conditions on what a blind audit hides.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .data import spatial_columns
from .store import LABELS_RELATION
from .types import REASONS, RELATIONS, VERDICTS
from ...util.grouping import factorize

LIVE_TABLE = "_ui_live"
LABELS_TABLE = "_ui_labels"

COLUMNS: tuple[str, ...] = ("Sample", "Run", "Prompt", "Relation", "Seed", "Checker", "Reason", "Conf",
                            "Human", "Agreement", "Notes")
CHECKER_COLUMNS = (5, 6, 7, 9)  # the checker's outcome (and the agreement with it)
#: the live checker's name among the judges of the filter "judges disagree"
LIVE_JUDGE = "checker"
LIVE_JUDGE_SHORT = "checker (live)"
HUMAN_COLUMNS = (8, 9, 10)  # every annotator's labels and notes (and the agreement)

_AGREE = ("CASE WHEN coalesce(l.nv, 0) > 1 THEN 'annotators differ' WHEN v.human < 0 THEN '' "
          "WHEN v.human = v.verdict THEN 'agrees' ELSE 'differs' END")
SORT_EXPR = ("v.sample_id", "v.run_id", "v.text", "v.relation", "v.seed", "v.verdict", "v.reason", "v.conf",
             "v.human", _AGREE, "l.notes")

_SELECT = ("v.row, v.sample_id, v.run_id, v.text, v.relation, v.seed, v.verdict, v.reason, v.conf, l.labels, "
           f"v.human, {_AGREE} AS agreement, v.image_path, l.notes")
# tuple positions in a fetched row
R_ROW, R_SID, R_RUN, R_TEXT, R_REL, R_SEED, R_VERDICT, R_REASON, R_CONF, R_LABELS, R_HUMAN, R_AGREE, R_PATH, \
    R_NOTES = range(14)

_FROM = f"FROM {LIVE_TABLE} v LEFT JOIN {LABELS_TABLE} l USING (row) "

# latest event per (sample, annotator): each annotator's verdict, and each annotator's note
LABELS_SQL = (
    "WITH ev AS (SELECT sample_id, annotator, verdict, notes, row_number() OVER "
    "(PARTITION BY sample_id, annotator ORDER BY event_id DESC) AS rn FROM " + LABELS_RELATION + ") "
    "SELECT sample_id, string_agg(annotator || ': ' || verdict, ', ' ORDER BY annotator) "
    "FILTER (WHERE verdict IS NOT NULL) AS labels, "
    "count(DISTINCT verdict) AS nv, "
    "string_agg(annotator || ': ' || trim(notes), '; ' ORDER BY annotator) "
    "FILTER (WHERE trim(coalesce(notes, '')) <> '') AS notes "
    "FROM ev WHERE rn = 1 AND (verdict IS NOT NULL OR trim(coalesce(notes, '')) <> '') GROUP BY sample_id")


def sample_columns(ds: Any) -> dict[str, Any]:
    """The dataset's per-sample columns as Arrow arrays (built once per dataset, cached)."""
    cached = ds.cache.get("ui_arrow_samples")
    if cached is not None:
        return cached
    import pyarrow as pa

    s = ds.samples

    def coded(codes: np.ndarray, names: Any) -> Any:
        """A dictionary-encoded column (DuckDB reads it as text): 4 bytes per sample."""
        return pa.DictionaryArray.from_arrays(pa.array(np.asarray(codes, np.int32)), pa.array(names, pa.string()))

    # each sample's prompt text (its prompt id where the prompt is not loaded): codes into the
    # prompts' texts, so 1M samples of 250k prompts hold each text once
    prow = ds.prompt_rows()
    if len(ds.prompts) and len(prow) and bool((prow >= 0).all()):
        text = coded(prow, np.asarray(ds.prompts.text, dtype=object))
    elif len(ds.prompts):
        text = pa.array(np.where(prow >= 0, ds.prompts.text[np.maximum(prow, 0)], s.prompt_id), pa.string())
    else:
        text = pa.array(np.asarray(s.prompt_id, dtype=object), pa.string())
    run_codes, run_names = factorize(s.run_id, sort=False)
    rel = np.asarray(spatial_columns(ds).relation, np.int64)

    def strings(name: str) -> Any:
        """A text column: the loader's Arrow form where it kept one, else converted."""
        kept = ds.kept_arrow(name)
        return kept if kept is not None else pa.array(np.asarray(getattr(s, name), dtype=object), pa.string())

    cols = {
        "row": pa.array(np.arange(ds.n, dtype=np.int64)),
        "sample_id": strings("sample_id"),
        "run_id": coded(run_codes, run_names),
        "text": text,
        "relation": (coded(rel, list(RELATIONS)) if not len(rel) or int(rel.min()) >= 0
                     else pa.array(np.array(RELATIONS + ("",), dtype=object)[rel], pa.string())),
        "seed": pa.array(np.asarray(s.seed, np.int64)),
        "image_path": strings("image_path"),
    }
    ds.cache["ui_arrow_samples"] = cols
    return cols


def like_literal(text: str) -> str:
    """`text` for a LIKE pattern with ESCAPE '\\': its \\, % and _ match themselves."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


@dataclass
class FilterSpec:
    """What the filter bar selects; stored as JSON by `project.audit.save_filter`."""

    runs: list[str] = field(default_factory=list)  # empty = all
    relations: list[str] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)  # PASS / FAIL / UNDECIDABLE
    reasons: list[str] = field(default_factory=list)  # REASONS names; "decided" for PASS/FAIL
    conf_min: float = 0.0
    conf_max: float = 1.0
    labelled: str = "all"  # "all" | "labelled" | "unlabelled"
    checker_vs_human: bool = False  # only samples where the checker and the human differ
    annotators_disagree: bool = False
    text: str = ""  # free text on the prompt (or sample id)
    judges_disagree: list[str] = field(default_factory=list)  # two judges both decided and differing

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> "FilterSpec":
        known = set(FilterSpec.__dataclass_fields__)
        return FilterSpec(**{k: v for k, v in d.items() if k in known})

    def allowed(self, outcome: bool = True, human: bool = True) -> "FilterSpec":
        """This filter without the conditions on what may not be shown (the checker's outcome,
        the annotators' labels): a blind audit's table never selects by them."""
        f = FilterSpec(**self.to_dict())
        if not outcome:
            f.verdicts, f.reasons, f.conf_min, f.conf_max, f.checker_vs_human = [], [], 0.0, 1.0, False
            f.judges_disagree = []
        if not human:
            f.labelled, f.checker_vs_human, f.annotators_disagree = "all", False, False
        return f

    def where(self) -> tuple[str, list[Any]]:
        parts: list[str] = []
        params: list[Any] = []
        if self.runs:
            parts.append("v.run_id IN (SELECT unnest(?))")
            params.append(list(self.runs))
        if self.relations:
            parts.append("v.relation IN (SELECT unnest(?))")
            params.append(list(self.relations))
        if self.verdicts:
            parts.append("v.verdict IN (SELECT unnest(?))")
            params.append([VERDICTS.index(x) for x in self.verdicts])
        if self.reasons:
            parts.append("v.reason IN (SELECT unnest(?))")
            params.append([0 if r == "decided" else REASONS.index(r) for r in self.reasons])
        if self.conf_min > 0.0:
            parts.append("v.conf >= ?")
            params.append(float(self.conf_min))
        if self.conf_max < 1.0:
            parts.append("v.conf <= ?")
            params.append(float(self.conf_max))
        if self.labelled == "labelled":
            parts.append("v.human >= 0")
        elif self.labelled == "unlabelled":
            parts.append("v.human < 0")
        if self.checker_vs_human:
            parts.append("v.human >= 0 AND v.human <> v.verdict")
        if self.annotators_disagree:
            parts.append("coalesce(l.nv, 0) > 1")
        if self.text.strip():
            # the text is matched literally: \, % and _ are escaped, and the ESCAPE clause says how
            parts.append("(v.text ILIKE ? ESCAPE '\\' OR v.sample_id ILIKE ? ESCAPE '\\')")
            pat = "%" + like_literal(self.text.strip()) + "%"
            params += [pat, pat]
        return (("WHERE " + " AND ".join(parts) + " ") if parts else ""), params


# text of the Agreement column (sample_table._AGREE) in SQL's string order
AGREE_TEXT = ("", "agrees", "annotators differ", "differs")
_REL_RANK = np.argsort(np.argsort(np.array(RELATIONS, dtype=object).astype(str))).astype(np.int64)
SORTABLE = frozenset({-1, 3, 4, 5, 6, 7, 8, 9})


@dataclass
class LiveColumns:
    """The per-row arrays the live table holds (aligned with the dataset)."""

    relation: np.ndarray  # int codes (types.RELATIONS)
    seed: np.ndarray  # int64
    verdict: np.ndarray  # int8, -1 none
    reason: np.ndarray  # int8
    conf: np.ndarray  # float64
    human: np.ndarray  # int8, -1 none
    nv: np.ndarray  # int32: distinct verdicts among the annotators' latest labels
    judges: tuple[Any, ...] = ()  # `judges.JudgeColumn`s, in column order after COLUMNS

    def judge_code(self, name: str) -> np.ndarray | None:
        """The outcome codes (VERDICTS index, -1 none) of the judge `name` (`LIVE_JUDGE`: the live
        verdicts); None where no such judge is known (not computed yet, or not in this project)."""
        if name == LIVE_JUDGE:
            return self.verdict
        for j in self.judges:
            if j.name == name:
                return j.code
        return None

    def judges_differ(self, a: str, b: str) -> np.ndarray:
        """Samples both judges decided (PASS or FAIL) with different outcomes; none where either
        judge is unknown."""
        ca, cb = self.judge_code(a), self.judge_code(b)
        if ca is None or cb is None or a == b:
            return np.zeros(len(self.verdict), bool)
        return (ca >= 0) & (ca <= 1) & (cb >= 0) & (cb <= 1) & (ca != cb)

    def agreement(self, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Code of the Agreement text (index into AGREE_TEXT) of the rows."""
        nv, human, verdict = self.nv[rows], self.human[rows], self.verdict[rows]
        return np.where(nv > 1, 2, np.where(human < 0, 0, np.where(human == verdict, 1, 3))).astype(np.int8)


def _one_of(codes: np.ndarray, wanted: list[int], n_codes: int) -> np.ndarray:
    """codes ∈ wanted, for codes 0..n_codes-1 or -1 (none, never wanted): a table lookup (-1
    reads the table's extra last entry, False)."""
    table = np.zeros(n_codes + 1, bool)
    table[np.asarray(wanted, np.int64)] = True
    return table[codes]


def dynamic_mask(spec: Any, live: LiveColumns, base: np.ndarray | None) -> np.ndarray:
    """Rows passing the verdict / reason / confidence / label conditions of `spec` (and `base`,
    the mask of the other conditions, when given)."""
    n = len(live.verdict)
    m = np.ones(n, bool) if base is None else base.copy()
    if spec.verdicts:
        m &= _one_of(live.verdict, [VERDICTS.index(x) for x in spec.verdicts], len(VERDICTS))
    if spec.reasons:
        m &= _one_of(live.reason, [0 if r == "decided" else REASONS.index(r) for r in spec.reasons], len(REASONS))
    nan = np.isnan(live.conf) if (spec.conf_min > 0.0 or spec.conf_max < 1.0) else np.zeros(0, bool)
    if spec.conf_min > 0.0:
        m &= (live.conf >= float(spec.conf_min)) | nan
    if spec.conf_max < 1.0:
        m &= (live.conf <= float(spec.conf_max)) & ~nan
    if spec.labelled == "labelled":
        m &= live.human >= 0
    elif spec.labelled == "unlabelled":
        m &= live.human < 0
    if spec.checker_vs_human:
        m &= (live.human >= 0) & (live.human != live.verdict)
    if spec.annotators_disagree:
        m &= live.nv > 1
    if getattr(spec, "judges_disagree", None):
        a, b = (list(spec.judges_disagree) + ["", ""])[:2]
        m &= live.judges_differ(a, b)
    return m


class RowOrder:
    """Dataset rows in table order, sorted only as far as asked: a page near the top sorts the
    rows whose key is at most the page end's key (found by a partition); the whole order is
    sorted once something asks for all of it (or a page deep in it). Ties keep row order."""

    def __init__(self, idx: np.ndarray, key: np.ndarray | None) -> None:
        self._idx = idx  # ascending rows
        self._key = key  # their sort keys (None: already in order)
        self._full: np.ndarray | None = idx if key is None else None

    def __len__(self) -> int:
        return len(self._idx)

    def all(self) -> np.ndarray:
        if self._full is None:
            assert self._key is not None
            self._full = self._idx[np.argsort(self._key, kind="stable")]
        return self._full

    def page(self, offset: int, limit: int) -> np.ndarray:
        end = min(offset + limit, len(self._idx))
        if self._full is not None or end * 8 >= len(self._idx) or end <= 0:
            return self.all()[offset:end]
        key = self._key
        assert key is not None
        cut = np.partition(key, end - 1)[end - 1]  # the end-th smallest key
        if np.isnan(cut):  # NaN sorts last: the page reaches into them
            return self.all()[offset:end]
        cand = np.flatnonzero(key <= cut)  # every row that can be in the first `end`, in row order
        return self._idx[cand[np.argsort(key[cand], kind="stable")]][offset:end]


def ordered_rows(mask: np.ndarray, live: LiveColumns, sort_column: int, descending: bool) -> RowOrder:
    """The rows of `mask` in table order."""
    idx = np.flatnonzero(mask)
    if sort_column < 0 or len(idx) < 2:
        return RowOrder(idx, None)
    if sort_column == 7:
        key = live.conf[idx]
        if descending:
            key = -key
            key[np.isnan(key)] = -np.inf  # NaN first when descending (conf is within [0, 1])
        # ascending: numpy's stable sort puts NaN last, as DuckDB does
        return RowOrder(idx, key)
    if sort_column == 3:
        key = _REL_RANK[np.asarray(live.relation[idx], np.int64)]
    elif sort_column == 4:
        key = np.asarray(live.seed[idx], np.int64)
    elif sort_column == 5:
        key = live.verdict[idx].astype(np.int64)
    elif sort_column == 6:
        key = live.reason[idx].astype(np.int64)
    elif sort_column == 8:
        key = live.human[idx].astype(np.int64)
    elif sort_column == 9:
        key = live.agreement(idx).astype(np.int64)
    elif 0 <= sort_column - len(COLUMNS) < len(live.judges):
        code = live.judges[sort_column - len(COLUMNS)].code[idx].astype(np.int64)
        key = np.where(code < 0, len(VERDICTS), code)  # not judged after every outcome
    else:
        raise ValueError(f"column {sort_column} is sorted by SQL")
    if descending:
        key = -key
    return RowOrder(idx, key)


def row_tuples(rows: np.ndarray, ds: Any, text: Any, relation_names: Any, live: LiveColumns,
               labels: dict[int, str], notes: dict[int, str] | None = None) -> list[tuple[Any, ...]]:
    """The table's fetched-row tuples (sample_table._SELECT's columns) of `rows`: `text` and
    `relation_names` are the live table's Arrow columns."""
    import pyarrow as pa

    if len(rows) == 0:
        return []
    r = np.asarray(rows, np.int64)
    take = pa.array(r)
    s = ds.samples
    verdict = live.verdict[r].tolist()
    human = live.human[r].tolist()
    agree = [AGREE_TEXT[a] for a in live.agreement(r).tolist()]
    return list(zip(r.tolist(), s.sample_id[r].tolist(), s.run_id[r].tolist(), text.take(take).to_pylist(),
                    relation_names.take(take).to_pylist(), np.asarray(live.seed[r], np.int64).tolist(),
                    verdict, live.reason[r].tolist(), live.conf[r].tolist(),
                    [labels.get(x) for x in r.tolist()], human, agree, s.image_path[r].tolist(),
                    [(notes or {}).get(x) for x in r.tolist()]))


class SampleQuery:
    """The rows of the samples matching `spec`, sorted by `sort_column` (-1: project order),
    from ``source`` (an object with ``project``, ``dataset``, ``verdicts`` and ``human``: the
    window's spatial session). `register` binds the current data; `count`, `page` and
    `all_rows` answer."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self.spec = FilterSpec()
        self.sort_column = -1
        self.descending = False
        self.labels_version = 0
        self._registered = False
        self._pending: dict[str, Any] | None = None
        self._ds: Any = None
        self._live_key: tuple[Any, int, Any] = (None, -1, None)
        self._live_cols: LiveColumns | None = None
        self._label_text: dict[int, str] = {}
        self._note_text: dict[int, str] = {}
        self._nv = np.zeros(0, np.int32)
        self._np_order: RowOrder | None = None
        self._static: tuple[Any, np.ndarray | None] = (None, None)
        self.forget()

    def labels_changed(self) -> None:
        self.labels_version += 1

    @property
    def registered(self) -> bool:
        return self._registered

    @property
    def bound_dataset(self) -> Any:
        return self._ds

    @property
    def live_key(self) -> tuple[Any, int, Any]:
        return self._live_key

    @property
    def live_columns(self) -> "LiveColumns | None":
        return self._live_cols

    def judges_of(self, ds: Any) -> Any:
        """The source's judge columns of ``ds`` (None until computed): ``source.judge_columns``, a
        (dataset, columns) pair, when it is of this dataset."""
        got = getattr(self.source, "judge_columns", None)
        return got[1] if got is not None and got[0] is ds else None

    @property
    def judges(self) -> tuple[Any, ...]:
        """The judge columns registered (after COLUMNS, in this order)."""
        return self._live_cols.judges if self._live_cols is not None else ()

    def sortable(self, column: int) -> bool:
        """Whether `column` is sorted by numpy (every column but the text ones)."""
        return column in SORTABLE or 0 <= column - len(COLUMNS) < len(self.judges)

    def set_filter(self, spec: FilterSpec) -> None:
        self.spec = spec
        self._np_order = None

    def set_sort(self, column: int, descending: bool) -> None:
        self.sort_column, self.descending = column, bool(descending)
        self._np_order = None

    def reset_order(self) -> None:
        self._np_order = None

    # ---- registered tables ---------------------------------------------------------------------
    def forget(self) -> None:
        """No registered tables, and nothing of a closed project kept (its columns are the
        size of its samples)."""
        self._registered = False
        self._pending = None  # live columns not registered yet (see `sql`)
        self._ds = None  # the dataset the registered tables describe
        self._live_key = (None, -1, None)  # (verdicts, labels version, judge columns) registered
        # the filter and sort in numpy, for every sort but the text columns
        self._live_cols = None
        self._label_text = {}
        self._note_text = {}
        self._nv = np.zeros(0, np.int32)
        self._np_order = None
        self._static = (None, None)

    def _register_labels(self) -> None:
        import pyarrow as pa

        st = self.source
        rows, labels, nv, notes = [], [], [], []
        found = st.project.con.execute(LABELS_SQL).fetchall()
        idx = st.dataset.sample_index() if found else {}
        for sid, text, k, note in found:
            r = idx.get(sid)
            if r is not None:
                rows.append(r)
                labels.append(text)
                nv.append(int(k))
                notes.append(note)
        st.project.con.register(LABELS_TABLE, pa.table({
            "row": pa.array(rows, pa.int64()), "labels": pa.array(labels, pa.string()),
            "nv": pa.array(nv, pa.int32()), "notes": pa.array(notes, pa.string())}))
        self._label_text = dict(zip(rows, labels))
        self._note_text = dict(zip(rows, notes))
        self._nv = np.zeros(st.dataset.n, np.int32)
        if rows:
            self._nv[np.asarray(rows, np.int64)] = np.asarray(nv, np.int32)

    def register(self) -> bool:
        """(Re-)register the live table (and the labels when they changed); False without data."""
        st = self.source
        if st.project is None or st.dataset is None or st.dataset.n == 0:
            self.forget()
            return False
        import pyarrow as pa

        ds = st.dataset
        n = ds.n
        new_ds = ds is not self._ds or not self._registered
        judges = self.judges_of(ds)
        key = (st.verdicts, self.labels_version, judges)
        if not new_ds and key[0] is self._live_key[0] and key[1] == self._live_key[1] and key[2] is self._live_key[2]:
            return True
        if new_ds:
            self._static = (None, None)
        if new_ds or key[1] != self._live_key[1]:
            self._register_labels()
        v = st.verdicts
        if v is not None and len(v.verdict) == n:
            verdict = np.asarray(v.verdict, np.int8)
            reason = np.asarray(v.reason, np.int8)
            conf = np.asarray(v.conf, np.float64)
        else:
            verdict = np.full(n, -1, np.int8)
            reason = np.zeros(n, np.int8)
            conf = np.full(n, np.nan)
        human = np.asarray(st.human if len(st.human) == n else np.full(n, -1), np.int8).copy()
        cols = dict(sample_columns(ds))
        cols.update(verdict=pa.array(verdict), reason=pa.array(reason), conf=pa.array(conf),
                    human=pa.array(human))
        self._live_cols = LiveColumns(relation=spatial_columns(ds).relation, seed=ds.samples.seed, verdict=verdict,
                                      reason=reason, conf=conf, human=human, nv=self._nv, judges=tuple(judges or ()))
        self._np_order = None
        self._pending = cols  # registered by sql() when a query needs it
        self._registered = True
        self._ds = ds
        self._live_key = key
        return True

    # ---- queries -------------------------------------------------------------------------------
    def sql(self, sql: str, params: list[Any] | None = None) -> Any:
        """Run `sql` on the project's connection with the live table registered as it stands."""
        con = self.source.project.con
        if self._pending is not None:
            import pyarrow as pa

            con.register(LIVE_TABLE, pa.table(self._pending))
            self._pending = None
        return con.execute(sql, params or [])

    def order_sql(self) -> str:
        if self.sort_column < 0 or self.sort_column >= len(SORT_EXPR):
            return "ORDER BY v.row"
        d = "DESC" if self.descending else "ASC"
        return f"ORDER BY {SORT_EXPR[self.sort_column]} {d} NULLS LAST, v.row"

    def numpy_order(self) -> RowOrder | None:
        """The matching rows in table order, by numpy (None where the sort is by a text column and
        SQL answers; with "judges disagree", which SQL does not know, SQL's order of the rows is
        filtered by numpy)."""
        if self._live_cols is None or not self._registered:
            return None
        if not self.sortable(self.sort_column):
            if not self.spec.judges_disagree:
                return None
            if self._np_order is None:
                where, params = self.spec.where()
                table = self.sql(f"SELECT v.row {_FROM}{where}{self.order_sql()}", params).to_arrow_table()
                rows = (table.column(0).to_numpy() if table.num_rows else np.zeros(0, np.int64)).astype(np.int64)
                keep = dynamic_mask(FilterSpec(judges_disagree=list(self.spec.judges_disagree)), self._live_cols,
                                    None)
                self._np_order = RowOrder(rows[keep[rows]], None)
            return self._np_order
        if self._np_order is None:
            self._np_order = ordered_rows(dynamic_mask(self.spec, self._live_cols, self.static_mask()),
                                          self._live_cols, self.sort_column,
                                          self.descending)
        return self._np_order

    def static_mask(self) -> np.ndarray | None:
        """Rows passing the conditions the checker cannot change (runs, relations, text), by SQL
        once per dataset and filter; None when the filter has none."""
        f = self.spec
        key = (id(self._ds), tuple(f.runs), tuple(f.relations), f.text.strip())
        if not (f.runs or f.relations or f.text.strip()):
            return None
        if self._static[0] != key:
            where, params = FilterSpec(runs=list(f.runs), relations=list(f.relations), text=f.text).where()
            rows = self.sql(f"SELECT v.row {_FROM}{where}", params).fetchall()
            mask = np.zeros(self.source.dataset.n, bool)
            if rows:
                mask[np.fromiter((r[0] for r in rows), np.int64, len(rows))] = True
            self._static = (key, mask)
        return self._static[1]

    def page(self, limit: int, offset: int) -> list[tuple[Any, ...]]:
        order = self.numpy_order()
        if order is not None:
            cols = sample_columns(self.source.dataset)
            assert self._live_cols is not None
            return row_tuples(order.page(offset, limit), self.source.dataset, cols["text"], cols["relation"],
                              self._live_cols, self._label_text, self._note_text)
        where, params = self.spec.where()
        sql = f"SELECT {_SELECT} {_FROM}{where}{self.order_sql()} LIMIT {int(limit)} OFFSET {int(offset)}"
        return self.sql(sql, params).fetchall()

    def count(self) -> int:
        order = self.numpy_order()
        if order is not None:
            return len(order)
        where, params = self.spec.where()
        return int(self.sql(f"SELECT count(*) {_FROM}{where}", params).fetchone()[0])

    def all_rows(self) -> np.ndarray:
        """Dataset rows of every sample matching the filter, in table order (the review queue)."""
        if not self._registered:
            return np.zeros(0, np.int64)
        order = self.numpy_order()
        if order is not None:
            return order.all()
        where, params = self.spec.where()
        sql = f"SELECT v.row {_FROM}{where}{self.order_sql()}"
        table = self.sql(sql, params).to_arrow_table()
        return table.column(0).to_numpy() if table.num_rows else np.zeros(0, np.int64)

    def label_text(self, row: int) -> tuple[str | None, str | None]:
        """(every annotator's latest verdict, their notes) of a row, as the Human and Notes cells."""
        return self._label_text.get(row), self._note_text.get(row)

