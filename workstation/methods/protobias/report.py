"""The ProtoBias section of a report bundle: CSV tables, bar charts, an HTML fragment.

    <out_dir>/index.html           the whole section (every table, both charts, provenance)
    <out_dir>/tables/<name>.csv    every table of `tables.audit_tables`, full precision
    <out_dir>/assets/failure_rates.png   failure rate per metric × domain with bootstrap intervals,
                                         the seed's published overall rate marked where it has one
    <out_dir>/assets/margins.png         correct- and incorrect-ranking margins per metric × domain

CSV cells are spreadsheet-safe (a text cell starting with = + - @ tab or CR gets a leading ').
"""

from __future__ import annotations

import csv
import html
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...evaluation.base import ReportSection
from ...evaluation.bundle import page_start, text_cell
from ...evaluation.intervals import SMALL_N
from ...evaluation.intervals import provenance as interval_provenance
from ...types import WorkstationError
from ...util.atomic import atomic_path
from .tables import RESCALING_RULE, TABLE_TITLES, audit_tables, published_rate

DOMAIN_ORDER = ("animals", "objects", "demography", "all")
_COLOURS = ("#4f81bd", "#c0504d", "#9bbb59", "#8064a2", "#f79646", "#4bacc6", "#7f7f7f", "#d9a441")


def csv_cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else repr(v)
    s = str(v)
    return "'" + s if s[:1] in ("=", "+", "-", "@", "\t", "\r") else s


def write_table_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path, fsync=False) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for r in rows:
            w.writerow([csv_cell(r.get(c)) for c in cols])


def _fmt(v: Any, digits: int = 3) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return "–" if math.isnan(v) else f"{v:.{digits}f}"
    return "" if v is None else str(v)


def _ci(r: Mapping[str, Any], k: str) -> str:
    v, lo, hi = r.get(k), r.get(f"{k}_lo"), r.get(f"{k}_hi")
    if not isinstance(v, float) or math.isnan(v):
        return "–"
    small = _small(r)
    if isinstance(lo, float) and not math.isnan(lo):
        return f"{v:.3f} [{lo:.3f},\u00a0{hi:.3f}]" + small  # a line may break before the interval, not inside it
    return f"{v:.3f}" + small


def _small(r: Mapping[str, Any]) -> str:
    """" (n 4: fewer than 10)" for a row over fewer than 10 triplets (images for κ), else ""."""
    n = r.get("n")
    return f" (n {n}: fewer than {SMALL_N})" if isinstance(n, int) and 0 < n < SMALL_N else ""


def _boot_line(results: Any) -> str:
    cfg = results.cfg
    return f"{int(cfg.n_boot)} resamples, seed {int(cfg.boot_seed)}, level {float(cfg.level):g}"


def html_table(columns: Sequence[tuple[str, str]], rows: Sequence[Mapping[str, Any]]) -> str:
    """(key, heading) columns; a key ending in "~" shows the value with its interval."""
    head = "".join(f"<th>{html.escape(h)}</th>" for _k, h in columns)
    body = []
    for r in rows:
        cells = [(_ci(r, k[:-1]) if k.endswith("~") else _fmt(r.get(k))) for k, _h in columns]
        body.append("<tr>" + "".join(text_cell(html.escape(c), c) for c in cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


FAILURE_COLUMNS = (("metric", "metric"), ("domain", "domain"), ("n", "n"), ("n_fail", "fail"), ("n_tie", "ties"),
                   ("failure_rate~", "failure rate [95% CI]"), ("sc", "SC"), ("pa", "PA"), ("delta", "Δ"),
                   ("correct_margin~", "correct margin"), ("incorrect_margin~", "incorrect margin"))


# ---- charts (matplotlib's object API on an Agg canvas) ------------------------------------------
def _figure(w: float, h: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=110)
    FigureCanvasAgg(fig)
    return fig


class _Grouped:
    """Rows of (metric, domain) figures as grouped bars: x = domain, one bar per metric."""

    def __init__(self, rows: Sequence[Mapping[str, Any]]) -> None:
        import numpy as np

        self.metrics = list(dict.fromkeys(str(r["metric"]) for r in rows))
        present = {str(r["domain"]) for r in rows if r.get("n")}
        self.domains = [d for d in DOMAIN_ORDER if d in present] + sorted(present - set(DOMAIN_ORDER))
        self.by = {(str(r["metric"]), str(r["domain"])): r for r in rows}
        self.width = 0.8 / max(1, len(self.metrics))
        self.x = np.arange(len(self.domains))

    def column(self, metric: str, key: str) -> Any:
        """``key`` of ``metric`` per domain (NaN where a domain has none)."""
        import numpy as np

        return np.array([float(self.by.get((metric, d), {}).get(key, math.nan)) for d in self.domains])

    def positions(self, j: int) -> Any:
        """Where the bars of the ``j``-th metric stand."""
        return self.x - 0.4 + self.width * (j + 0.5)

    def label_domains(self, ax: Any) -> None:
        ax.set_xticks(self.x)
        ax.set_xticklabels(self.domains)


def plot_failure_rates(rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    """Grouped bars: x = domain, one bar per metric, bootstrap interval as an error bar; the seed's
    published overall failure rate as a diamond on the "all" group where the metric has one."""
    import numpy as np

    g = _Grouped(rows)
    fig = _figure(max(6.0, 1.2 + 1.1 * len(g.domains) * max(1, len(g.metrics)) * 0.45), 4.2)
    ax = fig.add_subplot(111)
    for j, m in enumerate(g.metrics):
        vals = g.column(m, "failure_rate")
        err = np.vstack([np.nan_to_num(vals - g.column(m, "failure_rate_lo")),
                         np.nan_to_num(g.column(m, "failure_rate_hi") - vals)])
        pos = g.positions(j)
        ax.bar(pos, np.nan_to_num(vals), g.width * 0.9, yerr=err, capsize=3, color=_COLOURS[j % len(_COLOURS)],
               label=m, error_kw={"elinewidth": 1, "ecolor": "#333333"})
        pub = published_rate(m)
        if pub is not None and "all" in g.domains:
            k = g.domains.index("all")
            ax.plot([pos[k]], [pub[0]], marker="D", color="black", markersize=5,
                    label=f"published {m.partition('@')[0]} ({'>' if pub[1] == '>' else ''}{pub[0]:.0%})")
    ax.axhline(0.5, color="#999999", linestyle=":", linewidth=1)
    g.label_domains(ax)
    ax.set_ylim(0, 1)
    ax.set_ylabel("failure rate  (M(T, I_adv) ≥ M(T, I_corr))")
    ax.set_title("ProtoBias: how often each metric prefers the prototype")
    _legend_beside(fig, ax, path)


def plot_margins(rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    import numpy as np

    g = _Grouped(rows)
    fig = _figure(max(6.0, 1.5 + 0.9 * len(g.domains) * max(1, len(g.metrics)) * 0.5), 4.0)
    ax = fig.add_subplot(111)
    for j, m in enumerate(g.metrics):
        pos, c = g.positions(j), _COLOURS[j % len(_COLOURS)]
        ax.bar(pos, np.nan_to_num(g.column(m, "correct_margin")), g.width * 0.9, color=c,
               label=f"{m}: correct (up)")
        ax.bar(pos, -np.nan_to_num(g.column(m, "incorrect_margin")), g.width * 0.9, color=c, alpha=0.45,
               hatch="//", label=f"{m}: incorrect (down)")
    ax.axhline(0.0, color="black", linewidth=0.8)
    g.label_domains(ax)
    ax.set_ylabel("mean rescaled margin")
    ax.set_title("Correct-ranking margin (up) and incorrect-ranking margin (down)")
    _legend_beside(fig, ax, path)


def _legend_beside(fig: Any, ax: Any, path: Path) -> None:
    """The legend to the right of the plot, where it covers no bar; the image grows to hold it (the
    plot keeps its width)."""
    fig.tight_layout()
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False)
    fig.savefig(str(path), format="png", bbox_inches="tight", pad_inches=0.1)


# ---- the section ------------------------------------------------------------------------------
def _published_beside(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        if r["domain"] != "all":
            continue
        pub = published_rate(str(r["metric"]))
        out.append({"metric": r["metric"], "measured": r["failure_rate"], "measured_lo": r["failure_rate_lo"],
                    "measured_hi": r["failure_rate_hi"],
                    "published": (("> " if pub[1] == ">" else "") + f"{pub[0]:.4f}") if pub else "none for this metric"})
    return out


def write_section(project: Any, out_dir: Path, data: Any, results: Any, eval_info: Mapping[str, Any],
                  labels: Any = None) -> ReportSection:
    from .data import selected_ratings, selection_for

    if labels is None:
        labels = selected_ratings(data, selection_for(data, results.cfg))
    tables = audit_tables(data, results, labels)
    lines_html = f"<p class='src'>{html.escape(labels.line())}</p>"
    agreement_html = f"<p class='src'>{html.escape(labels.agreement_line())}</p>"
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, rows in tables.items():
        write_table_csv(out_dir / "tables" / f"{name}.csv", rows)
    assets = out_dir / "assets"
    assets.mkdir(exist_ok=True)
    figures: dict[str, Path] = {}
    if results.metrics:
        plot_failure_rates(tables["failure_by_domain"], assets / "failure_rates.png")
        plot_margins(tables["failure_by_domain"], assets / "margins.png")
        figures = {"failure_rates": assets / "failure_rates.png", "margins": assets / "margins.png"}
    s = tables["summary"][0]
    head = (f"<p class='src'>{s['triplets']} triplets ({s['incomplete_triplets']} incomplete left out) in "
            f"{s['runs']} run(s); {s['metrics']} metric(s); {s['rated_images']} image(s) rated by "
            f"{s['annotators']} annotator(s). Evaluation v{eval_info.get('eval_id')} "
            f"<code>{html.escape(str(eval_info.get('content_hash', '')))}</code>.</p>")
    rule = f"<p class='src'>{html.escape(RESCALING_RULE)}</p>"
    metrics_html = html_table((("metric", "metric (scorer id)"), ("model", "model"), ("triplets_scored", "triplets"),
                               ("scale", "rescaling")), tables["metrics"])

    def body(prefix: str) -> str:
        img = "".join(f"<p><img src='{html.escape(prefix)}assets/{k}.png' alt='{k}' style='max-width:100%'></p>"
                      for k in figures)
        return (head + metrics_html + rule
                + f"<h3>{TABLE_TITLES['failure_by_domain']}</h3>" + html_table(FAILURE_COLUMNS, tables["failure_by_domain"])
                + img
                + "<h3>Measured beside published (all domains)</h3>"
                + html_table((("metric", "metric"), ("measured~", "measured failure rate"),
                              ("published", "published (seed Fig. 2)")),
                             _published_beside(tables["failure_by_domain"]))
                + f"<h3>{TABLE_TITLES['sc_pa']}</h3>" + lines_html
                + html_table((("metric", "metric"), ("domain", "domain"), ("n", "n"), ("sc~", "SC"), ("pa~", "PA"),
                              ("delta~", "Δ")), tables["sc_pa"])
                + f"<h3>{TABLE_TITLES['human_agreement']}</h3>" + lines_html
                + html_table((("metric", "metric"), ("domain", "domain"), ("n", "n"), ("n_agree", "agree"),
                              ("agreement~", "agreement"), ("n_human_tie", "human ties (left out)")),
                             tables["human_agreement"])
                + f"<h3>{TABLE_TITLES['annotator_kappa']}</h3>" + agreement_html
                + (html_table((("annotator_a", "annotator"), ("annotator_b", "annotator"), ("n", "images"),
                               ("triplets", "triplets"), ("percent_agreement~", "agreement"),
                               ("kappa_w~", "κ_w (quadratic) [95% CI]"), ("kappa~", "κ [95% CI]"), ("note", "note")),
                              tables["annotator_kappa"]) if tables["annotator_kappa"]
                   else "<p class='src'>Fewer than two annotators rated the same images.</p>")
                + "<p class='src'>Published pairwise κ_w between the seed's five annotators: 0.60–0.84. Intervals: "
                  "the bootstrap over the triplets both annotators rated (an image's two sides together), "
                  f"{html.escape(str(_boot_line(results)))}.</p>")

    page = (page_start("ProtoBias: metric audit against prototypes") + "<h1>ProtoBias: metric audit against prototypes</h1>" + body("")
            + f"<h3>{TABLE_TITLES['failure_by_knob']}</h3>" + html_table(FAILURE_COLUMNS[:1] + (("knob", "knob"),)
                                                                         + FAILURE_COLUMNS[1:], tables["failure_by_knob"])
            + f"<h3>{TABLE_TITLES['human']}</h3>" + lines_html
            + html_table((("domain", "domain"), ("n", "n"), ("sc~", "SC"), ("pa~", "PA"), ("delta~", "Δ"),
                          ("n_prefer_corr", "prefer I_corr"), ("n_tie", "tie"), ("n_prefer_adv", "prefer I_adv")),
                         tables["human"])
            + f"<h3>{TABLE_TITLES['published_margins']}</h3>"
            + html_table((("metric", "metric"), ("domain", "domain"), ("correct_margin", "correct"),
                          ("incorrect_margin", "incorrect")), tables["published_margins"])
            + f"<h3>{TABLE_TITLES['published_sc_pa']}</h3>"
            + html_table((("metric", "metric"), ("domain", "domain"), ("sc", "SC"), ("pa", "PA"), ("delta", "Δ")),
                         tables["published_sc_pa"])
            + "</body></html>")
    (out_dir / "index.html").write_text(page, encoding="utf-8")
    return ReportSection(method="protobias", title="ProtoBias (metrics vs prototypes)", html=body(f"{out_dir.name}/"),
                         tables={k: tables[k] for k in ("summary", "metrics", "failure_by_domain", "sc_pa",
                                                        "human_agreement", "annotator_kappa")},
                         figures=figures,
                         meta={"config_version": eval_info.get("eval_id"), "config_hash": eval_info.get("content_hash"),
                               "triplets": len(data), "rescaling": RESCALING_RULE,
                               "runs": sorted(set(data.run_id.tolist())),
                               "provenance": {"labels": {**labels.provenance(),
                                                         "config_annotators": list(results.cfg.annotators)},
                                              "intervals": {
                                   **interval_provenance("triplet (its two images)", n_boot=int(results.cfg.n_boot),
                                                         seed=int(results.cfg.boot_seed),
                                                         level=float(results.cfg.level)),
                                   "rates": "failure rates and agreement with humans: Wilson over the triplets"}}})


def report_section(project: Any, out_dir: Path, annotator: str | None = None) -> ReportSection:
    """The section for the project's active ProtoBias evaluation (the defaults when none is stored),
    its human tables over the task's label selection (`data.selection_for`); ``annotator``: the
    rule ``annotator:NAME`` instead of the selection's own (the agreement table between
    annotators keeps the selection's annotators)."""
    from ...evaluation.run import config_of
    from ...evaluation.selection import with_annotator
    from .data import load_project_data, selected_ratings, selection_for
    from .results import evaluate

    data = load_project_data(project)
    if len(data) == 0:
        raise WorkstationError("the project has no complete ProtoBias triplets (both images of a triplet); import, "
                               "generate or build the demo first")
    eid, cfg = config_of(project, _method(), None)
    results = evaluate(data, cfg)
    info = project.evaluations.get(eid) if eid is not None else {"eval_id": None, "content_hash": cfg.content_hash()}
    labels = selected_ratings(data, with_annotator(selection_for(data, cfg), annotator))
    return write_section(project, out_dir, data, results, info, labels)


def _method() -> Any:
    """The registered method object (its module imports this one)."""
    from .. import get_method

    return get_method("protobias")
