"""ProtoBias triplets as a project holds them, read into numpy columns (what `evaluate` takes).

How a triplet lives in a project:

* **Prompts** — two per triplet, ``<triplet_id>:corr`` and ``<triplet_id>:adv`` (method
  ``protobias``, ``group_id`` = the triplet id, each the other's twin). Their ``attrs`` hold the
  domain, the knob, the role, the extra element, what T and each image's prompt state
  (``knob_value_text`` / ``knob_value_adv``), T itself (``eval_text``) and ``score_text`` = T, so
  that a score job scores *both* images against T, never against their own generation prompt.
* **Samples** — the two images, each a sample of a run: a generation run (the ``generate`` job
  makes one image per prompt and seed) or an import run (``protobias import``). A triplet
  *instance* — what is evaluated — is one (run, triplet, seed) with both images present; its id
  is ``<run_id>/<triplet_id>/s<seed>`` (`item_id_for`). A triplet with one image only is counted
  as incomplete and left out.
* **Metric scores** — the project's ``scores`` table: one scorer id per metric (its name and
  the hash of its weights, ``clipscore@3f2a…``; the demo's ``toy_proto@p=0.35``), scored against
  T. A score against another text (an old job, the generation prompt) is ignored.
* **Human ratings** — ``protobias.fidelity`` label events on the images (target kind
  ``image``, target id = the sample id), values "1".."4"; the latest event per (image,
  annotator) counts, an undo clears it. Which of them the human tables use, and how several
  annotators' ratings of one image become one, is the task's label selection
  (`workstation.evaluation.selection`; `selected_ratings`, `selection_for`): its mean rating
  per image by default. The agreement tables between annotators take the selection's
  annotators, audit sets and re-checks, never its consensus rule.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...dataset import Prompts
from .build import METHOD_NAME, ROLES, Triplet, TripletSet
from .labels import FIDELITY_SCHEME
from .metrics import Ratings, TripletScores

TOY_NAME = "toy_proto"


def item_id_for(run_id: str, triplet_id: str, seed: int) -> str:
    """The id of one evaluated triplet instance: ``<run_id>/<triplet_id>/s<seed>``."""
    return f"{run_id}/{triplet_id}/s{int(seed)}"


def triplet_prompts(triplets: TripletSet | Sequence[Triplet], suite: str | None = None) -> Prompts:
    """Generic `Prompts` of triplets (two rows each; see the module doc)."""
    from .build import triplet_prompt_columns

    if isinstance(triplets, TripletSet):
        cols = triplets.to_prompt_columns(suite)
    else:
        cols = triplet_prompt_columns(tuple(triplets), suite or "protobias")
    return Prompts(**cols)


@dataclass(frozen=True)
class MetricInfo:
    """One metric under audit: its scorer id, name, weights hash and where it came from."""

    metric_id: str  # the scorer id in the scores table
    name: str  # the scorer's registry name (before "@")
    weights: str  # what follows "@" (weights hash, or the toy metric's parameter)
    model: str  # the model folder it was loaded from, or a description ("" when unknown)
    n_scores: int  # scores of triplet images against T

    def label(self) -> str:
        """How tables name it: the scorer id, and the model folder's name when known."""
        if self.model and self.name != TOY_NAME:
            return f"{self.metric_id} ({Path(self.model).name})"
        return self.metric_id


@dataclass
class ProtoBiasData:
    """The complete triplet instances of a project, their metric scores and human ratings."""

    item_id: np.ndarray  # object str: item_id_for(run, triplet, seed)
    triplet_id: np.ndarray
    run_id: np.ndarray
    seed: np.ndarray  # int64
    domain: np.ndarray
    knob: np.ndarray
    text: np.ndarray  # T
    extra_element: np.ndarray
    knob_value: np.ndarray  # what T states ("" when the import did not say)
    knob_value_adv: np.ndarray  # what I_adv's prompt states instead ("" when unknown)
    prompt_corr: np.ndarray  # the generation prompts (T itself for an import that gave none)
    prompt_adv: np.ndarray
    sample_corr: np.ndarray  # sample ids (label targets)
    sample_adv: np.ndarray
    path_corr: np.ndarray  # image paths relative to the project folder
    path_adv: np.ndarray
    scores: TripletScores  # rows aligned with item_id (TripletScores.triplet_id = item_id)
    ratings: Ratings  # every annotator's rating events (triplet_id = item_id)
    metric_info: tuple[MetricInfo, ...] = ()
    n_incomplete: int = 0  # (run, triplet, seed) with one image only
    folder: Path | None = None
    #: every protobias.fidelity event on the images (the label log's columns), for label selections
    label_events: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    draws: dict[int, Any] = field(default_factory=dict, repr=False)  # the task's audit sets' draws
    set_names: dict[int, str] = field(default_factory=dict, repr=False)
    kept_selection: Any = None  # the project's kept selection of the task (None: none kept)
    #: annotator → why the project's qualification rule leaves their labels out (`raters.unqualified`)
    left_out: dict[str, str] = field(default_factory=dict, repr=False)
    cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.item_id)

    def row_of(self, item_id: str) -> int:
        idx = self.cache.get("row_of")
        if idx is None:
            idx = {s: i for i, s in enumerate(self.item_id.tolist())}
            self.cache["row_of"] = idx
        return int(idx.get(str(item_id), -1))

    def metric(self, metric_id: str) -> MetricInfo | None:
        return next((m for m in self.metric_info if m.metric_id == metric_id), None)

    def image_path(self, row: int, role: str) -> Path | None:
        rel = str((self.path_corr if role == "corr" else self.path_adv)[row] or "")
        if not rel or self.folder is None:
            return None
        return self.folder / rel

    def ratings_of(self, annotators: Sequence[str] = ()) -> Ratings:
        """The rating events of ``annotators`` (everyone's when empty)."""
        if not annotators:
            return self.ratings
        keep = np.isin(self.ratings.annotator.astype(str), list(annotators))
        r = self.ratings
        return Ratings(r.triplet_id[keep], r.role[keep], r.annotator[keep], r.rating[keep],
                       None if r.order is None else r.order[keep])

    @staticmethod
    def empty() -> ProtoBiasData:
        o = np.array([], dtype=object)
        return ProtoBiasData(o, o, o, np.zeros(0, np.int64), o, o, o, o, o, o, o, o, o, o, o, o,
                             TripletScores(o, o, o, (), np.zeros((0, 0)), np.zeros((0, 0))),
                             Ratings(o, o, o, np.zeros(0)))


def _obj(values: Sequence[Any]) -> np.ndarray:
    a = np.empty(len(values), dtype=object)
    a[:] = list(values)
    return a


def _scorer_models(project: Any) -> dict[str, str]:
    """scorer id → model folder, from the provenance the score jobs wrote."""
    out: dict[str, str] = {}
    jobs = Path(project.folder) / "jobs"
    if not jobs.is_dir():
        return out
    for prov in sorted(jobs.glob("score-*/provenance.json")):
        try:
            backend = json.loads(prov.read_text(encoding="utf-8")).get("backend") or {}
        except (OSError, ValueError):
            continue
        sid = backend.get("scorer_id")
        if sid:
            out[str(sid)] = str(backend.get("model_path") or backend.get("model_id") or "")
    return out


def load_project_data(project: Any) -> ProtoBiasData:
    """Every complete triplet instance of the project with its scores and ratings (module doc)."""
    rows = project.con.execute(
        "SELECT s.sample_id, s.run_id, s.seed, coalesce(s.image_path, ''), p.prompt_id, p.text, p.attrs, "
        "p.group_id FROM samples s JOIN prompts p USING (prompt_id) WHERE p.method = ? ORDER BY s.ord",
        [METHOD_NAME]).fetchall()
    groups: dict[tuple[str, str, int], dict[str, Any]] = {}
    for sid, run, seed, path, pid, text, attrs_json, gid in rows:
        a = json.loads(attrs_json) if attrs_json else {}
        role = str(a.get("role") or str(pid).rpartition(":")[2])
        if role not in ROLES:
            continue
        tid = str(gid or a.get("triplet_id") or str(pid).rpartition(":")[0])
        key = (str(run), tid, int(seed or 0))
        g = groups.setdefault(key, {})
        g[role] = (str(sid), str(path), str(text), a)
    complete = [(k, g) for k, g in groups.items() if "corr" in g and "adv" in g]
    n_incomplete = len(groups) - len(complete)
    n = len(complete)
    cols: dict[str, list[Any]] = {k: [] for k in (
        "item_id", "triplet_id", "run_id", "seed", "domain", "knob", "text", "extra_element", "knob_value",
        "knob_value_adv", "prompt_corr", "prompt_adv", "sample_corr", "sample_adv", "path_corr", "path_adv")}
    for (run, tid, seed), g in complete:
        sc, pc, tc, ac = g["corr"]
        sa, pa, ta, aa = g["adv"]
        t = str(ac.get("score_text") or ac.get("eval_text") or tc)
        for k, v in (("item_id", item_id_for(run, tid, seed)), ("triplet_id", tid), ("run_id", run), ("seed", seed),
                     ("domain", str(ac.get("domain") or "")), ("knob", str(ac.get("knob") or "")), ("text", t),
                     ("extra_element", str(ac.get("extra_element") or "")),
                     ("knob_value", str(ac.get("knob_value_text") or ac.get("knob_value") or "")),
                     ("knob_value_adv", str(ac.get("knob_value_adv") or aa.get("knob_value") or "")),
                     ("prompt_corr", tc), ("prompt_adv", ta), ("sample_corr", sc), ("sample_adv", sa),
                     ("path_corr", pc), ("path_adv", pa)):
            cols[k].append(v)
    arr: dict[str, Any] = {k: (np.asarray(v, np.int64) if k == "seed" else _obj(v)) for k, v in cols.items()}
    scores, info = _load_scores(project, arr, n)
    events = project.labels.table(FIDELITY_SCHEME.task)
    ratings = _load_ratings(events, arr)
    from ...evaluation.draws import draws_of
    from ...evaluation.selection import SETTING, load_selection, set_names

    images = set(arr["sample_corr"].tolist()) | set(arr["sample_adv"].tolist())
    keep = np.array([str(t) in images for t in events.get("target_id", [])], bool)
    mine = {k: np.asarray(v)[keep] for k, v in events.items()} if len(keep) else {}
    kept = (load_selection(project, FIDELITY_SCHEME.task)
            if project.get_setting(SETTING + FIDELITY_SCHEME.task) else None)
    from ...evaluation.raters import unqualified

    left_out = unqualified(project, FIDELITY_SCHEME.task, sorted({str(a) for a in mine.get("annotator", ())}))
    return ProtoBiasData(**arr, scores=scores, ratings=ratings, metric_info=info, n_incomplete=n_incomplete,
                         folder=Path(project.folder), label_events=mine,
                         draws=dict(draws_of(project, FIDELITY_SCHEME.task)),
                         set_names=set_names(project, FIDELITY_SCHEME.task), kept_selection=kept,
                         left_out=left_out)


def _load_scores(project: Any, arr: dict[str, np.ndarray], n: int) -> tuple[TripletScores, tuple[MetricInfo, ...]]:
    """Each scorer's scores of both images against T, as a (n × metrics) TripletScores."""
    sample_ids = np.concatenate([arr["sample_corr"], arr["sample_adv"]])
    table = project.scores.table(sample_ids=sample_ids.tolist()) if n else None
    names: list[str] = []
    corr_cols: list[np.ndarray] = []
    adv_cols: list[np.ndarray] = []
    info: list[MetricInfo] = []
    if table is not None and len(table["sample_id"]):
        pos = {s: i for i, s in enumerate(sample_ids.tolist())}  # < n: corr, ≥ n: adv
        srow = np.array([pos.get(str(s), -1) for s in table["sample_id"]], np.int64)
        t_of = np.concatenate([arr["text"], arr["text"]])
        texts = np.asarray(table["text"], dtype=object)
        ok = (srow >= 0)
        ok[ok] = texts[ok] == t_of[srow[ok]]
        scorer = np.asarray(table["scorer"], dtype=object)
        values = np.asarray(table["score"], np.float64)
        models = _scorer_models(project)
        for sid in sorted({str(x) for x in scorer[ok]}):
            m = ok & (scorer == sid)
            full = np.full(2 * n, np.nan)
            full[srow[m]] = values[m]
            names.append(sid)
            corr_cols.append(full[:n])
            adv_cols.append(full[n:])
            name, _, weights = sid.partition("@")
            model = models.get(sid, "")
            if name == TOY_NAME and not model:
                model = "the demo's toy metric"
            info.append(MetricInfo(sid, name, weights, model, int(m.sum())))
    m_ = len(names)
    sc = np.stack(corr_cols, axis=1) if m_ else np.zeros((n, 0))
    sa = np.stack(adv_cols, axis=1) if m_ else np.zeros((n, 0))
    return TripletScores(arr["item_id"], arr["domain"], arr["knob"], tuple(names), sc, sa), tuple(info)


def _load_ratings(t: dict[str, np.ndarray], arr: dict[str, np.ndarray]) -> Ratings:
    """Every first-pass ``protobias.fidelity`` event (``t``: the task's label log) on an image of a
    complete triplet instance."""
    n = len(arr["item_id"])
    if not len(t.get("target_id", ())) or n == 0:
        o = np.array([], dtype=object)
        return Ratings(o, o, o, np.zeros(0), np.zeros(0, np.int64))
    where: dict[str, tuple[int, str]] = {}
    for i, s in enumerate(arr["sample_corr"].tolist()):
        where[s] = (i, "corr")
    for i, s in enumerate(arr["sample_adv"].tolist()):
        where[s] = (i, "adv")
    keep, items, roles, values = [], [], [], []
    sources = t["source"]
    for k, (target, value) in enumerate(zip(t["target_id"], t["value"])):
        w = where.get(str(target))
        if w is None or str(sources[k] or "") == "recheck":
            continue
        keep.append(k)
        items.append(arr["item_id"][w[0]])
        roles.append(w[1])
        v = np.nan
        if value is not None and str(value).strip():
            try:
                v = float(FIDELITY_SCHEME.validate(value))
            except Exception:  # noqa: BLE001 - a value outside 1-4 in the log counts as no rating
                v = np.nan
        values.append(v)
    idx = np.asarray(keep, np.int64)
    return Ratings(_obj(items), _obj(roles), _obj([str(a) for a in np.asarray(t["annotator"], dtype=object)[idx]]),
                   np.asarray(values, np.float64), np.asarray(t["event_id"], np.int64)[idx])


def _rating(value: Any) -> float:
    """A 1-4 rating of the label log (NaN for a value outside the scale)."""
    try:
        return float(FIDELITY_SCHEME.validate(value))
    except Exception:  # noqa: BLE001 - a value outside 1-4 in the log counts as no rating
        return float("nan")


def selection_for(data: ProtoBiasData, cfg: Any = None) -> Any:
    """The label selection of the human tables: the project's kept selection of
    ``protobias.fidelity``; where none is kept, the default (first passes, the mean rating per
    image) over the config's ``annotators`` when it names some — a config of earlier versions
    reads as it did. A kept selection alone decides: the config's annotators no longer count."""
    return data.kept_selection if data.kept_selection is not None else default_for(cfg)


def default_for(cfg: Any = None) -> Any:
    """The selection where the project keeps none: first passes, the mean rating per image, over
    the config's ``annotators`` when it names some (`selection_for`)."""
    from ...evaluation.selection import default_selection

    sel = default_selection(FIDELITY_SCHEME.task)
    names = tuple(getattr(cfg, "annotators", ()) or ())
    return sel.replace(annotators=names) if names else sel


@dataclass
class SelectedRatings:
    """The ratings a label selection gives (`selected_ratings`)."""

    ratings: Ratings  # the human tables': per image the consensus (rule mean: each annotator's, averaged)
    by_annotator: Ratings  # the agreement tables': each selected annotator's standing rating
    resolved: Any  # workstation.evaluation.selection.Resolved
    agreement: Any  # workstation.evaluation.selection.AgreementLabels
    set_names: dict[int, str] = field(default_factory=dict)

    @property
    def selection(self) -> Any:
        return self.resolved.selection

    def line(self) -> str:
        """"labels: …, mean rating — 118 items" beside the human tables."""
        return str(self.resolved.describe(self.set_names))

    def agreement_line(self) -> str:
        """"labels: audit set #3, a1 and a2, first passes — 40 items" beside the agreement table."""
        return str(self.agreement.describe(self.set_names))

    def provenance(self) -> dict[str, Any]:
        """What the report records about the labels of its human and agreement tables."""
        return {**self.resolved.provenance(), "line": self.line(), "agreement_line": self.agreement_line(),
                "agreement_items": self.agreement.n_items}


def selected_ratings(data: ProtoBiasData, selection: Any) -> SelectedRatings:
    """The ratings of ``selection`` over the triplets' images: for the human tables one rating per
    image by the selection's rule (a disputed image counts as unrated; under ``mean`` every
    selected annotator's standing rating, which `metrics.human_scores` averages), and for the
    agreement tables each selected annotator's standing rating."""
    from ...evaluation.selection import DISPUTED, agreement_labels, resolve, standing_labels

    where: dict[str, tuple[str, str]] = {}
    for i, s in enumerate(data.sample_corr.tolist()):
        where[str(s)] = (str(data.item_id[i]), "corr")
    for i, s in enumerate(data.sample_adv.tolist()):
        where[str(s)] = (str(data.item_id[i]), "adv")
    events = data.label_events or {k: np.zeros(0, dtype=object) for k in (
        "event_id", "target_id", "annotator", "value", "rating", "audit_set_id", "source")}
    res = resolve(events, selection, data.draws, data.left_out)

    def ratings(rows: list[tuple[str, str, float, int]]) -> Ratings:
        rows = [r for r in rows if r[0] in where and np.isfinite(r[2])]
        return Ratings(_obj([where[r[0]][0] for r in rows]), _obj([where[r[0]][1] for r in rows]),
                       _obj([r[1] for r in rows]), np.asarray([r[2] for r in rows], np.float64),
                       np.asarray([r[3] for r in rows], np.int64))

    if selection.rule == "mean":
        human = ratings([(st.target, st.annotator, _rating(st.value), st.event_id)
                         for st in standing_labels(events, selection, data.draws, data.left_out)])
    else:
        rule = selection.named or selection.rule
        human = ratings([(str(t), rule, _rating(v), k) for k, (t, v) in
                         enumerate(zip(res.target_ids.tolist(), res.values.tolist())) if v != DISPUTED])
    agree = agreement_labels(events, selection)
    by_annotator = ratings([(st.target, st.annotator, _rating(st.value), st.event_id) for st in agree.labels])
    return SelectedRatings(human, by_annotator, res, agree, dict(data.set_names))


__all__ = [
    "SelectedRatings",
    "selected_ratings",
    "selection_for",
    "default_for",
    "TOY_NAME",
    "MetricInfo",
    "ProtoBiasData",
    "item_id_for",
    "load_project_data",
    "triplet_prompts",
]
