"""The spatial method's part of a project: checker-config versions, verdict sets and P/F/U labels.

`SpatialStore(project)` wraps an open `Project`: checker configs are the project's evaluation
versions of method "spatial"; a version's verdict set lives in the method's own table
``spatial_verdicts``; human verdicts are label events of task ``spatial.verdict`` on samples; the
stability term an imported run recorded per sample is in ``spatial_stability`` (rows only where it
is finite), which `load_dataset` attaches to the samples it loads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from ...dataset import Dataset
from ...store import Project, ProjectError
from ...store.base import _arrow
from ...store.schema import SPATIAL_V1, SPATIAL_V2, SPATIAL_V3
from .config import CheckerConfig
from .data import STABILITY, recorded_stability, with_stability
from .types import REASONS, VERDICT_CODE, VERDICTS

if TYPE_CHECKING:  # pragma: no cover
    from .checker import StorableVerdicts

METHOD = "spatial"
TASK = "spatial.verdict"


@dataclass
class SelectedHuman:
    """The human verdicts of a label selection, per sample row (`SpatialStore.human_selected`)."""

    codes: np.ndarray  # int8, -1: none
    inclusion: np.ndarray  # float64, NaN: not known
    disputed: np.ndarray  # bool
    resolved: Any  # workstation.evaluation.selection.Resolved

    def weights(self) -> np.ndarray | None:
        """1/π per audited row (codes ≥ 0) when the labels come from one recorded draw, else None."""
        if not self.resolved.known_draw:
            return None
        pi = self.inclusion[self.codes >= 0]
        if not len(pi) or not np.isfinite(pi).all() or (pi <= 0).any():
            return None
        return 1.0 / pi

    def drawn_share(self, n: int) -> float:
        """The share of the ``n`` samples the draw could reach (1 when not known)."""
        pop = self.resolved.population
        return 1.0 if not pop or not n else min(1.0, pop / n)

    def draw_basis(self, n: int) -> tuple[np.ndarray | None, str]:
        """What estimates over the audited rows rest on: the weights 1/π per audited row (None:
        the plain counts) and one line saying so, for ``n`` samples in all. Labels of one recorded
        draw are weighted (a uniform draw's weights are equal); labels of no recorded draw are
        counted as they are, and the line says that the figures assume a uniform random draw,
        which the labels are not ("" when there is no label)."""
        res = self.resolved
        if res is None or not len(res) or not (self.codes >= 0).any():
            return None, ""
        w = self.weights()
        if w is None:
            why = {"free": "free labelling", "mixed": "several draws pooled"}.get(res.design, "draw not recorded")
            return None, f"these figures assume a uniform random draw, which these labels are not ({why})"
        share = self.drawn_share(n)
        if res.design == "uniform" or bool(np.all(w == w[0])):
            text = f"labels of one {res.design} draw, counted with equal weights"
        else:
            text = f"weighted by the {res.design} draw's inclusion probabilities (1/π)"
        if share < 1.0:
            text += (f"; the draw reached {100 * share:.0f} % of the samples (its population), "
                     "so these figures are of that part")
        return w, text

#: the label log's P/F/U events as a relation with the spatial names (for SQL over labels)
LABELS_RELATION = ("(SELECT event_id, target_id AS sample_id, annotator, value AS verdict, rating, notes, created_at, "
                   f"audit_set_id, source FROM label_events WHERE task = '{TASK}')")

#: the method's own tables, one list of statements per version. Version 2 takes the index on
#: (eval_id, sample_id) away: replacing a verdict set deleted its rows from the index one by one
#: when the transaction committed (half a minute for a million samples, ten times the cost of
#: writing the set), and no read used it (a set is read by eval_id, which the table's row groups
#: already narrow down: each set is written in one insert). Version 3 adds ``spatial_stability``
#: (the kernel's version 7 moves the samples' recorded stabilities there).
MIGRATIONS: list[list[Any]] = [list(SPATIAL_V1), list(SPATIAL_V2), list(SPATIAL_V3)]


def _has_stability_table(project: Project) -> bool:
    row = project.con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'spatial_stability' "
                              "AND schema_name = 'main'").fetchone()
    return bool(row and row[0])


def stabilities_of(project: Project, sample_ids: Any, arrow_ids: Any = None) -> np.ndarray:
    """The recorded stability of each of ``sample_ids`` (float64, NaN where none), in their order
    (``arrow_ids``: the same ids as Arrow strings, when the caller has them)."""
    ids = np.asarray(sample_ids, dtype=object)
    out = np.full(len(ids), np.nan)
    if not len(ids) or not _has_stability_table(project):
        return out
    n_rows = project.con.execute("SELECT count(*) FROM spatial_stability").fetchone()
    if not n_rows or not n_rows[0]:
        return out
    import pyarrow as pa
    import pyarrow.compute as pc

    if arrow_ids is None or len(arrow_ids) != len(ids):
        arrow_ids = pa.array(ids.tolist(), pa.string())
    # the table's rows placed by an Arrow hash lookup of their ids among the samples' (no
    # registered relation: DuckDB keeps a little of each one alive)
    t = project.con.raw.sql("SELECT sample_id, recorded FROM spatial_stability").to_arrow_table()
    at = pc.index_in(t.column("sample_id"), value_set=arrow_ids).to_numpy(zero_copy_only=False)
    found = ~np.isnan(at) if at.dtype.kind == "f" else np.ones(len(at), bool)
    rec = np.asarray(t.column("recorded").to_numpy(zero_copy_only=False), np.float64)
    out[at[found].astype(np.int64)] = rec[found]
    return out


def attach_stability(project: Project, ds: Dataset) -> Dataset:
    """``ds`` (samples of ``project``) with their recorded stabilities from the project; returns it."""
    return with_stability(ds, stabilities_of(project, ds.samples.sample_id, ds.kept_arrow("sample_id")))


def load_dataset(project: Project, **options: Any) -> Dataset:
    """The spatial samples (`SamplesRepo.load_dataset` with ``method="spatial"`` and ``options``)
    with their recorded stabilities."""
    return attach_stability(project, project.samples.load_dataset(method=METHOD, **options))


def merge_stabilities(target: Project, source: Project, new_ids: list[str],
                      same_ids: list[str]) -> list[tuple[str, str]]:
    """The recorded stabilities of ``source``'s samples ``new_ids`` copied into ``target`` (where
    any is finite); the samples of ``same_ids`` (in both) whose recorded stability differs, with
    what differs."""
    if new_ids:
        got = stabilities_of(source, new_ids)
        if np.isfinite(got).any():
            SpatialStore(target).set_stabilities(new_ids, got)
    differ: list[tuple[str, str]] = []
    if same_ids:
        a, b = stabilities_of(source, same_ids), stabilities_of(target, same_ids)
        bad = np.flatnonzero(~((a == b) | (np.isnan(a) & np.isnan(b))))
        differ = [(str(same_ids[i]), "recorded stability") for i in bad.tolist()]
    return differ


def add_dataset(project: Project, ds: Dataset, **options: Any) -> None:
    """Add ``ds`` to the project (`SamplesRepo.add_dataset` with ``options``) and its recorded
    stabilities (when it has any) to the spatial method's table, in one transaction."""
    with project.transaction():
        project.samples.add_dataset(ds, **options)
        if STABILITY in ds.sample_columns:
            SpatialStore(project).set_stabilities(ds.samples.sample_id, recorded_stability(ds))


@dataclass
class LabelRow:
    """A P/F/U label event of one sample."""

    sample_id: str
    annotator: str
    verdict: str | None
    rating: int | None
    notes: str | None
    created_at: datetime
    event_id: int
    audit_set_id: int | None = None
    source: str | None = None  # "ui", "recheck" (a consistency re-check), "import", ...


class SpatialStore:
    """The spatial method's view of a project (see the module docstring)."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.con = project.con
        project.ensure_schema(METHOD, MIGRATIONS) if not project.read_only else None

    def _has_table(self) -> bool:
        return self.project.component_version(METHOD) >= 1

    # ---- checker configs ---------------------------------------------------------------------
    def save_config(self, cfg: CheckerConfig, note: str = "", parent_id: int | None = None,
                    activate: bool = True) -> int:
        """Store `cfg` as a new version (or return the id of an identical stored one)."""
        return self.project.evaluations.save(METHOD, cfg.to_dict(), cfg.content_hash(), name=cfg.name, note=note,
                                             parent_id=parent_id, activate=activate)

    def configs(self) -> list[dict[str, Any]]:
        counts: dict[int, int] = {}
        if self._has_table():
            counts = {int(e): int(n) for e, n in self.con.execute(
                "SELECT eval_id, count(*) FROM spatial_verdicts GROUP BY eval_id").fetchall()}
        return [{"config_id": e["eval_id"], "name": e["name"], "content_hash": e["content_hash"], "note": e["note"],
                 "parent_id": e["parent_id"], "created_at": e["created_at"], "verdicts": counts.get(e["eval_id"], 0)}
                for e in self.project.evaluations.all(METHOD)]

    def get_config(self, config_id: int) -> CheckerConfig:
        try:
            ev = self.project.evaluations.get(config_id, METHOD)
        except ProjectError:
            raise ProjectError(f"no checker config version {config_id} in the project") from None
        return CheckerConfig.from_dict(ev["config"])

    def active_config_id(self) -> int | None:
        return self.project.evaluations.active_id(METHOD)

    def active_config(self) -> tuple[int | None, CheckerConfig]:
        cid = self.active_config_id()
        if cid is None:
            return None, CheckerConfig()
        return cid, self.get_config(cid)

    def set_active_config(self, config_id: int) -> None:
        self.project.evaluations.set_active(METHOD, config_id)

    # ---- verdict sets ------------------------------------------------------------------------
    def save_verdicts(self, config_id: int, ds: Dataset, v: "StorableVerdicts") -> None:
        """Replace the verdict set of `config_id` for the samples of `ds`. Transactional: a
        reader sees the old set or the new one, and a crash before the commit leaves the old."""
        import pyarrow as pa

        self.project._check_writable()
        n = ds.n
        texts = v.reason_texts()
        with self.project.transaction():
            stored = self.con.execute("SELECT count(*) FROM spatial_verdicts WHERE eval_id=?", [config_id]).fetchone()
            if stored and stored[0]:
                self.con.register("_ids", _arrow({"sample_id": ds.samples.sample_id}))
                try:
                    self.con.execute("DELETE FROM spatial_verdicts WHERE eval_id=? AND sample_id IN "
                                     "(SELECT sample_id FROM _ids)", [config_id])
                finally:
                    self.con.unregister("_ids")
            self.project.insert_columns("spatial_verdicts", {
                "eval_id": np.full(n, config_id, np.int32), "sample_id": ds.samples.sample_id,
                # the names by their codes (DuckDB writes the names): no string object per sample
                "verdict": pa.DictionaryArray.from_arrays(np.asarray(v.verdict, np.int8), list(VERDICTS)),
                "reason": pa.DictionaryArray.from_arrays(np.asarray(v.reason, np.int8), list(REASONS)),
                "reason_text": texts, "conf": v.conf, "c_detection": v.c_detection,
                "c_geometry": v.c_geometry, "c_stability": v.c_stability, "c_agreement": v.c_agreement,
                "delta": v.delta, "iou_ab": v.iou_ab,
            })

    def load_verdict_table(self, config_id: int) -> dict[str, np.ndarray]:
        """Stored verdicts of a config version as columns (sample_id, verdict code, reason code, ...)."""
        if not self._has_table():
            raise ProjectError(f"no verdicts stored for checker config version {config_id}")
        t = self.con.execute(
            "SELECT v.sample_id, v.verdict, v.reason, v.reason_text, v.conf, v.c_detection, v.c_geometry, "
            "v.c_stability, v.c_agreement, v.delta, v.iou_ab FROM spatial_verdicts v JOIN samples s USING (sample_id) "
            "WHERE v.eval_id=? ORDER BY s.ord", [config_id]).to_arrow_table()
        cols = {k: t.column(k).to_numpy(zero_copy_only=False) for k in t.column_names}
        cols["verdict"] = np.array([VERDICT_CODE[x] for x in cols["verdict"]], np.int8)
        rc = {r: i for i, r in enumerate(REASONS)}
        cols["reason"] = np.array([rc[x] for x in cols["reason"]], np.int8)
        return cols

    # ---- recorded stabilities ----------------------------------------------------------------------
    def set_stabilities(self, sample_ids: Any, recorded: Any) -> int:
        """Record the stability term of these samples (distinct ids; NaN: none, its row removed);
        returns the number of finite values written. One row per sample (the table has no key)."""
        import pyarrow as pa

        self.project._check_writable()
        ids = pa.array([str(x) for x in np.asarray(sample_ids, dtype=object).tolist()], pa.string())
        vals = np.asarray(recorded, np.float64).reshape(-1)
        if len(vals) != len(ids):
            raise ProjectError(f"{len(vals)} recorded stabilities for {len(ids)} samples")
        if not len(ids):
            return 0
        import pyarrow.compute as pc

        if pc.count_distinct(ids).as_py() != len(ids):
            raise ProjectError("recorded stabilities given twice for one sample")
        finite = np.isfinite(vals)
        with self.project.transaction():
            self.con.register("_stab", pa.table({"sample_id": ids, "keep": pa.array(finite),
                                                 "recorded": pa.array(np.where(finite, vals, 0.0))}))
            try:
                self.con.execute("DELETE FROM spatial_stability WHERE sample_id IN "
                                 "(SELECT sample_id FROM _stab)")
                self.con.execute("INSERT INTO spatial_stability SELECT sample_id, recorded FROM _stab "
                                 "WHERE keep")
            finally:
                self.con.unregister("_stab")
        return int(finite.sum())

    # ---- labels ---------------------------------------------------------------------------------
    def add_label(self, sample_id: str, annotator: str, verdict: str | None, *, rating: int | None = None,
                  notes: str | None = None, audit_set_id: int | None = None, source: str = "ui",
                  created_at: datetime | None = None) -> int:
        """Append one P/F/U label event; it is committed (durable) when this returns."""
        if verdict is not None and verdict not in VERDICT_CODE:
            raise ProjectError(f"unknown verdict {verdict!r}; expected PASS, FAIL or UNDECIDABLE")
        if not isinstance(annotator, str) or not annotator.strip():
            raise ProjectError("an annotator name is required")
        return self.project.labels.add(TASK, "sample", sample_id, annotator, verdict, rating=rating, notes=notes,
                                       audit_set_id=audit_set_id, source=source, created_at=created_at)

    def add_labels_bulk(self, rows: Mapping[str, Sequence[Any]], source: str = "import") -> int:
        """Append many label events in one transaction (columns: sample_id, annotator, verdict,
        and optionally rating, notes, created_at). Unknown samples are an error."""
        cols = {k: v for k, v in rows.items() if k not in ("sample_id", "verdict")}
        cols["target_id"] = rows["sample_id"]
        cols["value"] = rows["verdict"]
        return self.project.labels.add_bulk(TASK, "sample", cols, source=source)

    @staticmethod
    def _row(e: Any) -> LabelRow:
        return LabelRow(e.target_id, e.annotator, e.value, e.rating, e.notes, e.created_at, e.event_id,
                        e.audit_set_id, e.source)

    def label_events(self, sample_id: str | None = None) -> list[LabelRow]:
        return [self._row(e) for e in self.project.labels.events(task=TASK, target_id=sample_id)]

    def prefetch_label_events(self, sample_ids: Sequence[str]) -> None:
        """Read these samples' events in one query, kept for `label_events` until the next write."""
        self.project.labels.events_of(TASK, sample_ids)

    def latest_labels(self, annotator: str | None = None) -> list[LabelRow]:
        """The latest event per (sample, annotator)."""
        return [self._row(e) for e in self.project.labels.latest(TASK, annotator)]

    def annotators(self) -> list[str]:
        return self.project.labels.annotators(TASK)

    def human_verdicts(self, ds: Dataset, annotator: str | None = None) -> np.ndarray:
        """Per sample of `ds`: the latest human verdict code (int8) or -1 where unlabelled.

        With several annotators and no `annotator` given, the most recent label of anyone counts.
        """
        out = np.full(ds.n, -1, np.int8)
        labels = self.latest_labels(annotator)
        if not labels:
            return out  # no id index to build (a dict of every sample id)
        idx = ds.sample_index()
        for r in sorted(labels, key=lambda r: r.event_id):
            i = idx.get(r.sample_id)
            if i is not None and r.verdict in VERDICT_CODE:
                out[i] = VERDICT_CODE[r.verdict]
        return out

    def human_selected(self, ds: Dataset, selection: Any = None) -> "SelectedHuman":
        """Per sample of `ds`: the human verdict code the label selection gives (-1 where it gives
        none or the annotators dispute it) and the sample's inclusion probability (NaN: not
        known), with the resolved selection (`workstation.evaluation.selection`); the project's
        kept selection when none is given."""
        from ...evaluation.selection import resolve_project

        res = resolve_project(self.project, TASK, selection)
        codes, incl, disputed = res.per_row(ds.sample_index() if len(res) else {}, ds.n, VERDICT_CODE)
        return SelectedHuman(codes, incl, disputed, res)

    # ---- audit sets --------------------------------------------------------------------------------
    def create_audit_set(self, name: str, sample_ids: Sequence[str], params: dict[str, Any],
                         blind: bool = True, rechecks: Sequence[tuple[int, str]] = ()) -> int:
        return self.project.audit.create_set(name, TASK, sample_ids, params, blind=blind, rechecks=rechecks)

    def audit_sets(self) -> list[dict[str, Any]]:
        return self.project.audit.sets(TASK)
