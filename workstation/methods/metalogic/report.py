"""The MetaLogic section of a report bundle: tables (CSV), figures (PNG) and an index.html.

    <out_dir>/index.html          every table, both figures, the config and the provenance
    <out_dir>/tables/<name>.csv   the tables at full precision (text cells spreadsheet-safe)
    <out_dir>/assets/heatmap.png  law × dimension misalignment rate (the paper's rule), one panel
                                  per run, with 95 % intervals and the abstention-aware rate
    <out_dir>/assets/rates.png    both rates per law / modifier / dimension with 95 % intervals,
                                  the published figures marked beside them

Everything comes from the **stored** result set of the active MetaLogic version (so a report
says which version its numbers are), joined to the project's image pairs; the human pair
judgements and the image scores (CLIPScore, VQA faithfulness) are added when the project has
them. The bundle (`workstation.evaluation.bundle`) writes into a temporary folder and renames it
into place, so a failed report leaves nothing half-written.
"""

from __future__ import annotations

import csv
import html
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...evaluation.base import ReportSection
from ...evaluation.bundle import LONG_TEXT, page_start
from ...evaluation.intervals import SMALL_N
from ...evaluation.intervals import provenance as interval_provenance
from ...types import WorkstationError
from ...util.jsonsafe import dumps
from .adapter import MetaLogicData, load_project
from .compare import paper_outcomes
from .config import MetaLogicConfig
from .laws import DIMENSION_TITLES, DIMENSIONS, LAWS
from .metrics import (
    PUBLISHED,
    PUBLISHED_SOURCE,
    StoredOutcomes,
    agreement,
    heatmap,
    misalignment_tables,
    reason_rows,
)
from .results import VERDICTS

__all__ = ["report_section", "write_csv", "csv_cell", "plot_heatmap", "plot_rates", "score_rows", "TITLE"]

METHOD = "metalogic"
TITLE = "MetaLogic (logically equivalent prompts)"

TABLE_TITLES: dict[str, str] = {
    "overall": "Misalignment rate per run",
    "law": "Per law",
    "modifier": "Per modifier",
    "dimension": "Per dimension",
    "law_dimension": "Per law × dimension (the heatmap's cells)",
    "law_modifier": "Per law × modifier",
    "reasons": "Abstentions (UNDECIDABLE) by reason",
    "published": "Published figures (for reference)",
    "human": "Human pair outcomes (the label selection)",
    "agreement": "Computed outcome vs human pair judgements",
    "scores_category": "Image scores per category (law × dimension)",
    "scores_law": "Image scores per law",
    "scores_dimension": "Image scores per dimension",
    "pairs": "Every image pair",
}
DEFINITION = ("The misalignment rate (paper_rate, the headline) decides every pair as the MetaLogic paper does — "
              "a misalignment when the detected entities, counts or centroid order differ, from the detection "
              "threshold alone, no abstention band — and counts MISALIGNED over all pairs. The abstention-aware "
              "rate (decided_rate) is MISALIGNED / (ALIGNED + MISALIGNED) under the comparison's abstention "
              "bands, its coverage = decided / all pairs. 95 % intervals: the cluster bootstrap over suite pairs "
              "(the seeds and runs of one suite pair resampled together; Wilson when each suite pair has one "
              "image pair).")


# ---- CSV ---------------------------------------------------------------------------------------
def csv_cell(value: Any) -> str:
    """One CSV cell: numbers exact (``repr``; NaN as ``nan``), text that a spreadsheet would read as
    a formula (starting with = + - @, a tab or CR) prefixed with '."""
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return "nan" if math.isnan(f) else repr(f)
    s = str(value)
    return "'" + s if s[:1] in ("=", "+", "-", "@", "\t", "\r") else s


def _columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    return cols


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> None:
    cols = list(columns) if columns is not None else _columns(rows)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for r in rows:
            w.writerow([csv_cell(r.get(c)) for c in cols])


# ---- figures (matplotlib's object API on an Agg canvas) -------------------------------------------
def _figure(w: float, h: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=110)
    FigureCanvasAgg(fig)
    return fig


def _pct(x: float | None) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.0f}%"


def plot_heatmap(outcomes: StoredOutcomes, path: Path) -> None:
    """Law × dimension misalignment rate by the paper's rule, one panel per run: each cell the
    rate, its 95 % interval and the pairs, and the abstention-aware rate over the decided pairs;
    row and column labels carry the published figures."""
    runs = sorted(set(np.asarray(outcomes.run).astype(str).tolist()))
    dims = [DIMENSIONS[d] for d in sorted(set(np.asarray(outcomes.dimension).tolist()))]
    n = len(runs)
    fig = _figure(max(4.8, 1.3 * len(dims) + 2.6) * n, 4.6)
    for k, run in enumerate(runs):
        hm = heatmap(outcomes, run=run, dimensions=dims)
        ax = fig.add_subplot(1, n, k + 1)
        rate = np.ma.masked_invalid(hm["paper_rate"])
        cmap = _cmap()
        ax.imshow(rate, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
        for i in range(len(LAWS)):
            for j in range(len(dims)):
                r = hm["paper_rate"][i, j]
                pairs, dec = int(hm["pairs"][i, j]), int(hm["decided"][i, j])
                if pairs == 0:
                    txt, color = "no pairs", "#555555"
                else:
                    d = hm["decided_rate"][i, j]
                    txt = (f"{_pct(r)} [{_pct(hm['paper_lo'][i, j])[:-1]}–{_pct(hm['paper_hi'][i, j])}]\nn={pairs}"
                           + ("*" if pairs < SMALL_N else "")
                           + f"\ndecided {_pct(d)} of {dec}")
                    color = "white" if not np.isnan(r) and r > 0.6 else "black"
                ax.text(j, i, txt, ha="center", va="center", fontsize=7, color=color)
        ax.set_xticks(range(len(dims)), [_dim_label(d) for d in dims], fontsize=8)
        ax.set_yticks(range(len(LAWS)), [_law_label(x) for x in LAWS] if k == 0 else [""] * len(LAWS), fontsize=8)
        ax.set_title(f"run {run}", fontsize=9)
    fig.suptitle("MetaLogic misalignment rate per law × dimension, the paper's rule (every pair decided), 95 % "
                 "interval; below: the abstention-aware rate over decided pairs. Published figures in the labels; "
                 f"* fewer than {SMALL_N} pairs", fontsize=9, wrap=True)
    fig.tight_layout()
    fig.savefig(str(path), format="png")


def _cmap() -> Any:
    from matplotlib import colormaps

    return colormaps["Reds"].with_extremes(bad="#e6e6e6")


def _law_label(law: str) -> str:
    pub = PUBLISHED["law"].get(law)
    return f"{law} ({_pct(pub)})" if pub is not None else law


def _dim_label(dim: str) -> str:
    pub = PUBLISHED["dimension"].get(dim)
    title = DIMENSION_TITLES.get(dim, dim)
    return f"{title}\n({_pct(pub)})" if pub is not None else title


def plot_rates(tables: Mapping[str, list[dict[str, Any]]], path: Path) -> None:
    """The paper's rate per law, modifier and dimension (one bar per run, 95 % intervals), the
    abstention-aware rate as an open marker with its interval, and the published figure of each
    group as a black diamond."""
    groups = (("law", "per law"), ("modifier", "per modifier"), ("dimension", "per dimension"))
    fig = _figure(12.5, 4.0)
    for k, (key, title) in enumerate(groups):
        ax = fig.add_subplot(1, 3, k + 1)
        rows = tables.get(key, [])
        runs = sorted({r["run"] for r in rows})
        names = list(dict.fromkeys(r[key] for r in rows))
        x = np.arange(len(names))
        width = 0.8 / max(len(runs), 1)
        for i, run in enumerate(runs):
            rr = {r[key]: r for r in rows if r["run"] == run}

            def col(name: str) -> np.ndarray:
                return np.array([rr[nm][name] if nm in rr and rr[nm][name] is not None else np.nan
                                 for nm in names], np.float64)

            xs = x + (i - (len(runs) - 1) / 2) * width
            rate, lo, hi = col("paper_rate"), col("paper_rate_lo"), col("paper_rate_hi")
            err = np.maximum(np.nan_to_num(np.stack([rate - lo, hi - rate]), nan=0.0), 0.0)  # rounding
            ax.bar(xs, np.nan_to_num(rate), width, yerr=err, capsize=2, label=f"{run} (paper's rule)")
            d, dlo, dhi = col("decided_rate"), col("decided_rate_lo"), col("decided_rate_hi")
            derr = np.maximum(np.nan_to_num(np.stack([d - dlo, dhi - d]), nan=0.0), 0.0)
            ok = np.isfinite(d)
            ax.errorbar(xs[ok] + width * 0.2, d[ok], yerr=derr[:, ok], fmt="o", mfc="white", color="#444444",
                        markersize=4, capsize=2, elinewidth=0.8, label="abstention-aware" if i == 0 else None)
        pub = [PUBLISHED.get(key, {}).get(nm) for nm in names]
        px = [xi for xi, p in zip(x, pub) if p is not None]
        if px:
            ax.plot(px, [p for p in pub if p is not None], "D", color="black", markersize=5, label="published")
        labels = [DIMENSION_TITLES.get(nm, nm) if key == "dimension" else nm for nm in names]
        ax.set_xticks(x, labels, rotation=30 if key != "modifier" else 0, ha="right" if key != "modifier" else "center",
                      fontsize=8)
        ax.set_ylim(0, 1)
        ax.set_title(f"misalignment rate {title}", fontsize=9)
        if k == 0:
            ax.set_ylabel("misalignment rate")
        ax.grid(True, axis="y", alpha=0.3)
    handles, labels_ = fig.axes[0].get_legend_handles_labels() if fig.axes else ([], [])
    if handles:
        fig.legend(handles, labels_, loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(str(path), format="png")


# ---- tables --------------------------------------------------------------------------------------
def score_rows(data: MetaLogicData, law: np.ndarray, dimension: np.ndarray) -> dict[str, list[dict[str, Any]]]:
    """The image-score tables (per pair, per category, per law, per dimension) when the project
    holds CLIPScore and / or VQA faithfulness scores of the pairs' images; {} otherwise."""
    from .metrics import pair_scores, score_tables

    clip, faith = data.scores.get("clip"), data.scores.get("faith")
    if clip is None and faith is None:
        return {}
    n = len(data)
    nan = np.full(n, np.nan)
    sc = pair_scores(clip["a"] if clip else nan, clip["b"] if clip else nan,
                     faith["a"] if faith else None, faith["b"] if faith else None)
    if clip is None:
        for k in ("clip_a", "clip_b", "clip_diff", "clip_stability"):
            sc.pop(k)
    per_pair = []
    for i in range(n):
        row: dict[str, Any] = {"image_pair": str(data.pair_id[i]), "law": LAWS[int(law[i])],
                               "dimension": DIMENSIONS[int(dimension[i])]}
        row.update({k: float(v[i]) for k, v in sc.items()})
        per_pair.append(row)
    agg = score_tables(law, dimension, {k: v for k, v in sc.items()})
    scorers = {f"{k}_scorer": v["scorer"] for k, v in data.scores.items()}
    out = {"scores_pairs": per_pair}
    for name, rows in agg.items():
        out[f"scores_{name}"] = [{**r, **scorers} for r in rows]
    return out


def human_rate_row(human: np.ndarray, disputed: np.ndarray, unit: np.ndarray | None) -> dict[str, Any]:
    """The "human" table's row: the selection's pair outcomes and the human misalignment rate."""
    from .metrics import human_rates

    r = human_rates(human, disputed, unit)
    return {k: r[k] for k in ("judged", "aligned", "misaligned", "undecidable", "disputed", "misaligned_rate",
                              "misaligned_rate_lo", "misaligned_rate_hi")}


def _pair_rows(data: MetaLogicData, cols: Mapping[str, np.ndarray], human: np.ndarray,
               disputed: np.ndarray | None = None) -> list[dict[str, Any]]:
    keys = ("law", "modifier", "dimension", "verdict", "kind", "reason", "entity", "entity2", "side", "conf",
            "detail")
    out = []
    lists = {k: np.asarray(cols[k], dtype=object).tolist() for k in keys}
    for i in range(len(data)):
        r: dict[str, Any] = {"image_pair": str(data.pair_id[i]), "pair_id": str(data.group[i]),
                             "run": str(data.pairs.run[i]), "seed": int(data.pairs.seed[i])}
        r.update({k: lists[k][i] for k in keys})
        r["conf"] = float(r["conf"]) if r["conf"] is not None else float("nan")
        r["human"] = VERDICTS[int(human[i])] if human[i] >= 0 else (
            "disputed" if disputed is not None and disputed[i] else "")
        r.update(sample_a=str(data.sample_a[i]), sample_b=str(data.sample_b[i]), prompt_a=str(data.text_a[i]),
                 prompt_b=str(data.text_b[i]))
        out.append(r)
    return out


# ---- HTML ---------------------------------------------------------------------------------------
# on the report's style (`REPORT_CSS`): text left, numbers right, figures framed
_CSS = "td,th{text-align:left}td.num{text-align:right}img{border:1px solid #d8dce5}"
#: the columns the page shows (the CSV keeps every column, suite pairs and the counts behind each rate too)
_RATE_HTML_COLS = ("run", "law", "modifier", "dimension", "pairs", "paper_rate", "paper_rate_lo", "paper_rate_hi",
                   "published", "decided", "decided_rate", "decided_rate_lo", "decided_rate_hi", "coverage",
                   "coverage_lo", "coverage_hi", "omission", "duplication", "positional", "note")
_RATE_TITLES = {"paper_rate": "misalignment rate (paper's rule)", "paper_misaligned": "misaligned (paper's rule)",
                "decided_rate": "abstention-aware rate (over decided)", "misaligned": "misaligned (decided)"}


def _fmt(c: str, v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return "–"
        if c.endswith(("rate", "rate_lo", "rate_hi", "coverage", "coverage_lo", "coverage_hi", "agreement",
                       "agreement_lo", "agreement_hi")) or c in ("published", "fraction"):
            return f"{100 * f:.1f}%"
        return f"{f:.4f}"
    return str(v)


def _bounds(c: str, r: Mapping[str, Any]) -> str:
    lo, hi = r.get(f"{c}_lo"), r.get(f"{c}_hi")
    if isinstance(lo, (float, np.floating)) and isinstance(hi, (float, np.floating)) and math.isfinite(lo) \
            and math.isfinite(hi):
        return f" [{_fmt(c, float(lo))[:-1]}, {_fmt(c, float(hi))}]"
    return ""


def html_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None, limit: int = 60) -> str:
    """Rows as an HTML table; a value with ``<col>_lo`` / ``<col>_hi`` bounds shows them beside it
    (the bound columns are left out of the page; the CSV keeps them)."""
    cols = [c for c in (columns or _columns(rows)) if any(c in r for r in rows)] if rows else list(columns or [])
    cols = [c for c in cols if not (c.endswith(("_lo", "_hi")) and c[:-3] in cols)]
    head = "".join(f"<th>{html.escape(_RATE_TITLES.get(c, c))}</th>" for c in cols)
    body = []
    for r in rows[:limit]:
        cells = []
        for c in cols:
            v = r.get(c)
            cls = (" class='num'" if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                   else " class='text'" if isinstance(v, str) and len(v) > LONG_TEXT else "")
            title = f" title='{html.escape(repr(float(v)))}'" if isinstance(v, (float, np.floating)) else ""
            cells.append(f"<td{cls}{title}>{html.escape(_fmt(c, v) + _bounds(c, r))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    more = f"<p class='src'>{len(rows) - limit} more rows in the CSV.</p>" if len(rows) > limit else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{more}"


def _kv(d: Mapping[str, Any]) -> str:
    return "<table>" + "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                               for k, v in d.items()) + "</table>"


# ---- the section -----------------------------------------------------------------------------------
def _empty_section(project: Any, out_dir: Path, data: MetaLogicData) -> ReportSection:
    note = (f"The project holds {data.n_prompts} MetaLogic prompts ({data.n_suite_pairs} pairs) but no image pair "
            "yet: generate images for them (`generate --method metalogic`), detect, and evaluate.")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "index.html").write_text(
        f"{page_start(TITLE, _CSS)}<h1>{html.escape(TITLE)}</h1><p>{html.escape(note)}</p></body></html>",
        encoding="utf-8")
    return ReportSection(method=METHOD, title=TITLE, html=f"<p>{html.escape(note)}</p>",
                         meta={"pairs": 0, "summary_lines": ["  metalogic: " + note]})


def report_section(project: Any, out_dir: Path, annotator: str | None = None, **_: Any) -> ReportSection:
    """Write the MetaLogic section of the active version's stored results under ``out_dir``."""
    from .store import aligned_outcomes, human_selected

    data = load_project(project)
    if data.n_prompts == 0:
        raise WorkstationError(f"the project {project.folder} has no MetaLogic prompts; add a suite first "
                               "(`suite --method metalogic --project DIR`)")
    if len(data) == 0:
        return _empty_section(project, out_dir, data)
    eid = project.evaluations.active_id(METHOD)
    if eid is None:
        raise WorkstationError("the project has no MetaLogic results yet; run `evaluate --method metalogic` first")
    ev = project.evaluations.get(eid, METHOD)
    cols = aligned_outcomes(project, eid, data)
    outcomes = StoredOutcomes.from_columns(cols)
    cfg = MetaLogicConfig.from_dict(ev["config"])
    outcomes.paper_verdict = paper_outcomes(data.pairs, cfg)[0]  # the version's threshold, no abstention
    chosen = human_selected(project, data, annotator=annotator)
    human = chosen.codes
    labels_line = chosen.line(project)
    tables: dict[str, list[dict[str, Any]]] = dict(misalignment_tables(outcomes))
    tables["reasons"] = reason_rows(outcomes)
    tables["human"] = [human_rate_row(human, chosen.disputed, outcomes.unit)]
    if (human >= 0).any():
        ag = agreement(outcomes.verdict, human, outcomes.unit)
        tables["agreement"] = [{"computed": VERDICTS[i], **{f"human_{VERDICTS[j]}": int(ag["confusion"][i, j])
                                                             for j in range(3)}} for i in range(3)]
        kappa = "– (undefined)" if math.isnan(ag["kappa"]) else f"{ag['kappa']:.3f}" + (
            f" [{ag['kappa_lo']:.3f}, {ag['kappa_hi']:.3f}]" if math.isfinite(ag["kappa_lo"]) else "")
        agreement_line = (f"{ag['n']} image pairs judged by people ({labels_line}); "
                          f"agreement {_fmt('agreement', ag['agreement'])}{_bounds('agreement', ag)}, Cohen's κ "
                          f"{kappa} (95 % intervals, resampling suite pairs)"
                          + (f"; fewer than {SMALL_N} judged pairs" if ag["small"] else "") + ".")
    else:
        agreement_line = f"No human pair judgements under the label selection ({labels_line})."
    tables.update(score_rows(data, outcomes.law, outcomes.dimension))
    tables["pairs"] = _pair_rows(data, cols, human, chosen.disputed)

    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "tables").mkdir(exist_ok=True)
    (out_dir / "assets").mkdir(exist_ok=True)
    for name, rows in tables.items():
        write_csv(out_dir / "tables" / f"{name}.csv", rows)
    figures = {"heatmap": out_dir / "assets" / "heatmap.png", "rates": out_dir / "assets" / "rates.png"}
    plot_heatmap(outcomes, figures["heatmap"])
    plot_rates(tables, figures["rates"])

    runs = sorted(set(data.pairs.run.astype(str).tolist()))
    provenance = {
        "project": str(Path(project.folder).resolve()), "config_version": eid,
        "config_hash": ev["content_hash"], "config_note": ev.get("note") or "",
        "image_pairs": len(data), "suite_pairs": data.n_suite_pairs, "prompts": data.n_prompts,
        "runs": [{k: r[k] for k in ("run_id", "method", "model", "source", "samples")} for r in project.samples.runs()
                 if r["run_id"] in runs],
        "detections": "primary detector, original images",
        "scorers": {k: v["scorer"] for k, v in data.scores.items()},
        "labels": chosen.provenance(project),
        "notes": data.notes,
        "published_source": PUBLISHED_SOURCE,
        "paper_rule": ("every pair decided with the version's detection threshold, area filter and duplicate IoU, "
                       "no abstention band (near_band, ambiguity_delta, axis_margin 0)"),
        "intervals": interval_provenance("suite pair (its image pairs: seeds, and runs when pooled)"),
    }
    lines = summary_from_tables(tables, eid, str(ev["content_hash"]), len(data))
    _write_index(out_dir, tables, ev, provenance, agreement_line)
    (out_dir / "report_meta.json").write_text(dumps({"config": ev["config"], "provenance": provenance,
                                                     "tables": {k: v for k, v in tables.items() if k != "pairs"}},
                                                    indent=1), encoding="utf-8")
    rel = out_dir.name
    body = (f"<p class='src'>{len(data)} image pairs ({data.n_suite_pairs} suite pairs) of run(s) "
            f"{html.escape(', '.join(runs))}, stored results of MetaLogic config v{eid} "
            f"<code>{html.escape(str(ev['content_hash']))}</code>. {html.escape(DEFINITION)}</p>"
            + html_table(tables["overall"], _RATE_HTML_COLS)
            + f"<img src='{html.escape(rel)}/assets/heatmap.png' alt='law × dimension heatmap'>"
            + f"<p class='src'>{html.escape(agreement_line)}</p>")
    return ReportSection(method=METHOD, title=TITLE, html=body,
                         tables={k: v for k, v in tables.items() if k != "pairs"}, figures=figures,
                         meta={"config_version": eid, "config_hash": ev["content_hash"], "pairs": len(data),
                               "provenance": provenance, "summary_lines": lines})


def summary_from_tables(tables: Mapping[str, list[dict[str, Any]]], eid: int, chash: str, n: int) -> list[str]:
    lines = [f"  metalogic: {n} image pairs, config v{eid} ({chash})"]
    for r in tables.get("overall", []):
        lines.append(f"    {r['run']}: misalignment rate (the paper's rule) {_fmt('rate', r['paper_rate'])} "
                     f"[{_fmt('rate', r['paper_rate_lo'])}, {_fmt('rate', r['paper_rate_hi'])}] over {r['pairs']} "
                     f"pairs; abstention-aware {_fmt('rate', r['decided_rate'])} "
                     f"[{_fmt('rate', r['decided_rate_lo'])}, {_fmt('rate', r['decided_rate_hi'])}] over "
                     f"{r['decided']} decided, coverage {_fmt('coverage', r['coverage'])} ({r['undecidable']} "
                     f"UNDECIDABLE); omission {r['omission']}, duplication {r['duplication']}, positional "
                     f"{r['positional']}")
    return lines


def _write_index(out_dir: Path, tables: Mapping[str, list[dict[str, Any]]], ev: Mapping[str, Any],
                 provenance: Mapping[str, Any], agreement_line: str) -> None:
    parts = [page_start(TITLE, _CSS),
             f"<h1>{html.escape(TITLE)}</h1>",
             f"<p class='src'>Stored results of config v{ev['eval_id']} <code>{html.escape(str(ev['content_hash']))}"
             f"</code>. {html.escape(DEFINITION)} Every table is in <code>tables/&lt;name&gt;.csv</code> at full "
             "precision.</p>",
             "<h2>Law × dimension</h2><img src='assets/heatmap.png' alt='heatmap'>",
             "<h2>Rates with the published figures</h2><img src='assets/rates.png' alt='rates'>"]
    order = ["overall", "law", "modifier", "dimension", "law_dimension", "law_modifier", "reasons", "human", "agreement",
             "scores_category", "scores_law", "scores_dimension", "published", "pairs"]
    for name in order:
        rows = tables.get(name)
        if rows is None:
            continue
        parts.append(f"<h2 id='{name}'>{html.escape(TABLE_TITLES.get(name, name))}</h2>")
        if name == "agreement":
            parts.append(f"<p class='src'>{html.escape(agreement_line)}</p>")
        if name == "human":
            parts.append(f"<p class='src'>{html.escape(str(provenance['labels']['line']))}. A disputed pair (its "
                         "annotators disagree under the rule) counts in no rate.</p>")
        parts.append(f"<p class='src'><a href='tables/{name}.csv'>tables/{name}.csv</a></p>")
        cols = _RATE_HTML_COLS if name in ("overall", "law", "modifier", "dimension", "law_dimension",
                                           "law_modifier") else None
        parts.append(html_table(rows, cols) if rows else "<p>(no rows)</p>")
    if "scores_pairs" in tables:
        parts.append("<p class='src'>Per-pair image scores: <a href='tables/scores_pairs.csv'>tables/scores_pairs.csv"
                     "</a> (clip_diff = |clip_A − clip_B| / 100, clip_stability = 1 − clip_diff; faith_diff = "
                     "|faith_A − faith_B|, faith_stability = 1 − faith_diff).</p>")
    parts.append("<h2>Configuration</h2>" + _kv(ev["config"]))
    parts.append("<h2>Provenance</h2><pre>" + html.escape(dumps(provenance, indent=1)) + "</pre>")
    parts.append("</body></html>")
    (out_dir / "index.html").write_text("\n".join(parts), encoding="utf-8")
