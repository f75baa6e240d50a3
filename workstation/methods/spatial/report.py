"""Report bundle: CSV tables, PNG plots and an index.html, written all at once or not at all.

Layout (as SpatialBench-UC publishes its reports)::

    <out_dir>/index.html          tables, plots, config hash and provenance
    <out_dir>/report_meta.json    config, hash, provenance, every table at full precision
    <out_dir>/tables/*.csv        presentation tables
    <out_dir>/data/*.csv          the same tables at full precision
    <out_dir>/assets/*.png        plots

Tables `main_results`, `by_relation`, `counterfactual` and `prompt_metrics` carry
SpatialBench-UC's column names and formatting: text quoted, counts as integers, rates with
4 decimals (its published tables round every rate to 4 decimals, e.g. pass_rate 0.4037 for
0.40375). `abstention` (and, with human labels, `audit_confusion` and `risk_coverage`) follow the
same presentation. Nothing is rounded anywhere else: `data/*.csv` (Python's shortest exact float
`repr`, plus the detail columns the metrics carry, e.g. pass/fail counts) and `report_meta.json`
hold the exact values.

The bundle is built in a hidden temporary folder beside `out_dir` and renamed into place when
complete, so a failed report leaves nothing half-written.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import math
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...dataset import Dataset
from ...evaluation.bundle import page_start
from ...types import WorkstationError
from ...util.csvsafe import escape_cell
from ...util.jsonsafe import dumps, jsonable
from ...util.output import replace_folder
from ...util.paths import remove_made
from .config import CheckerConfig
from .types import FAIL, PASS, UNDECIDABLE, VERDICTS

# SpatialBench-UC's table columns (its report's tables/*.csv), in its order.
SBUC_COLUMNS: dict[str, tuple[str, ...]] = {
    "main_results": ("run", "samples", "pass_rate", "coverage", "pass_rate_cond", "prompt_pass_rate", "mean_conf"),
    "by_relation": ("run", "above_pass_rate", "below_pass_rate", "left_of_pass_rate", "right_of_pass_rate"),
    "counterfactual": ("run", "pairs", "both_pass_rate", "one_sided_rate", "both_fail_rate", "undecidable_rate",
                       "undecidable_count"),
    "prompt_metrics": ("run", "total_prompts", "best_of_k_pass_rate", "all_of_k_pass_rate"),
}
TABLES: tuple[str, ...] = ("main_results", "by_relation", "counterfactual", "prompt_metrics", "abstention")
HEADLINE_COLUMNS: tuple[str, ...] = ("statistic", "label", "value", "lo", "hi", "n", "units", "interval", "value_at_tau",
                                     "lo_at_tau", "hi_at_tau", "n_at_tau")
OPERATING_POINT_COLUMNS: tuple[str, ...] = ("statistic", "value", "lo", "hi", "n", "units", "interval")

TABLE_TITLES: dict[str, str] = {
    "headline": "Headline: every run together, as stored and at the operating point τ",
    "operating_point": "The operating point τ on the audited samples",
    "main_results": "Main results (per-image checker metrics; prompt pass rate is best-of-K)",
    "by_relation": "Pass rate by relation",
    "counterfactual": "Counterfactual pairs (from best-of-K prompt verdicts)",
    "prompt_metrics": "Prompt-level pass rates (best-of-K and all-of-K)",
    "abstention": "Abstentions by reason (as a fraction of all samples)",
    "audit_confusion": "Checker vs human labels (audited samples)",
    "audit_confusion_at_tau": "Checker at the operating point τ vs human labels (audited samples)",
    "risk_coverage": "Risk–coverage on the audited samples",
}

TABLE_DEFINITIONS: dict[str, str] = {
    "headline": "value: over the stored verdicts; value_at_tau: at the operating point τ (a PASS/FAIL with "
                "confidence below τ counts as UNDECIDABLE). Rates per image with the cluster bootstrap over "
                "prompts, prompt-level rates with Wilson over prompts; n items, units the prompts behind them. "
                "The calibration panel's Live-verdicts table shows the same numbers.",
    "operating_point": "At τ over the audited samples: coverage, risk, accuracy and FPR_PASS, each with its "
                       "cluster-bootstrap interval over the audited samples' prompts; n is the rate's "
                       "denominator; — is undefined (nothing to count).",
    "main_results": "pass_rate = P/N, coverage = (P+F)/N, pass_rate_cond = P/(P+F), mean_conf over all N; "
                    "prompt_pass_rate: a prompt passes when any of its K seeds passes.",
    "by_relation": "pass_rate = P/N over the samples of each relation.",
    "counterfactual": "Each pair (A r B, B r⁻¹ A) counted once from best-of-K prompt verdicts: undecidable if "
                      "either is UNDECIDABLE, else both_pass, both_fail or one_sided.",
    "prompt_metrics": "best-of-K: PASS if any seed PASS; all-of-K: PASS if all K PASS (a prompt with fewer "
                      "than K samples is UNDECIDABLE); rates over all prompts.",
    "abstention": "UNDECIDABLE counts by reason, as a fraction of all samples.",
    "audit_confusion": "Rows: checker verdict; columns: human verdict (latest label per sample).",
    "audit_confusion_at_tau": "As above, with checker PASS/FAIL below confidence τ counted as UNDECIDABLE.",
    "risk_coverage": "covered = checker PASS/FAIL with conf ≥ τ; coverage = covered / audited; risk = 1 − "
                     "accuracy over covered samples with a human PASS/FAIL label (coverage 0 → risk 0; "
                     "undefined, —, when none of the covered samples has one: n_evaluated 0); risk_lo / "
                     "risk_hi: the pointwise 95 % band (cluster bootstrap over prompts); fpr_pass = fraction "
                     "of covered checker PASS that humans label FAIL (undefined when n_pass_covered is 0).",
}


# ---------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------


def _plain(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    return x


def table_rows(summary: Any, name: str) -> list[dict[str, Any]]:
    """Rows of one table of a metrics summary (attribute or key `name`): a list of mappings, a
    mapping of equal-length columns, or an object with `rows()` / `to_rows()`."""
    if isinstance(summary, Mapping):
        obj = summary.get(name)
    else:
        obj = getattr(summary, name, None)
    if obj is None:
        return []
    for meth in ("rows", "to_rows"):
        if hasattr(obj, meth) and callable(getattr(obj, meth)):
            obj = getattr(obj, meth)()
            break
    if isinstance(obj, Mapping):
        cols = {k: list(np.asarray(v).tolist()) if not isinstance(v, list) else v for k, v in obj.items()}
        n = len(next(iter(cols.values()))) if cols else 0
        return [{k: _plain(c[i]) for k, c in cols.items()} for i in range(n)]
    return [{str(k): _plain(v) for k, v in dict(r).items()} for r in obj]


def _columns_for(name: str, rows: list[dict[str, Any]]) -> list[str]:
    if name == "by_relation" and rows:
        # one <relation>_pass_rate column per relation present, sorted by name (as SpatialBench-UC)
        rates = sorted(k for k in rows[0] if k.endswith("_pass_rate"))
        return ["run"] + rates
    if name in SBUC_COLUMNS:
        cols = list(SBUC_COLUMNS[name])
        if rows:
            missing = [c for c in cols if c not in rows[0]]
            if missing:
                raise WorkstationError(
                    f"metrics table {name!r} lacks column(s) {', '.join(missing)}; cannot write the report")
        return cols
    cols = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    return cols


def _fmt(x: Any, full: bool) -> str:
    x = _plain(x)
    if x is None:
        return ""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if full:
            return repr(x)
        return f"{x:.4f}"
    s = escape_cell(str(x))  # a run named "=cmd()" is shown as text by spreadsheets
    return '"' + s.replace('"', '""') + '"'


def write_csv(path: Path, columns: Sequence[str], rows: Sequence[Mapping[str, Any]], full: bool) -> None:
    """CSV in SpatialBench-UC's style: header bare, text quoted (and escaped against spreadsheet
    formulas, `util.csvsafe`), integers plain, floats 4 decimals (or `repr`, exact, when `full`)."""
    lines = [",".join(columns)]
    for r in rows:
        lines.append(",".join(_fmt(r.get(c), full) for c in columns))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Plots (matplotlib's object API on an Agg canvas: no pyplot, no global backend change)
# ---------------------------------------------------------------------------------------------


def _figure(w: float = 7.0, h: float = 4.2) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=110)
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(str(path), format="png")


def _yerr(vals: np.ndarray, lo: Sequence[Any], hi: Sequence[Any]) -> np.ndarray:
    """Error bar lengths (2 × n) from bounds; 0 where a bound is missing or undefined."""
    lo_ = np.array([np.nan if x is None else float(x) for x in lo], np.float64)
    hi_ = np.array([np.nan if x is None else float(x) for x in hi], np.float64)
    return np.maximum(np.nan_to_num(np.stack([vals - lo_, hi_ - vals]), nan=0.0), 0.0)


def plot_pass_rate_by_relation(rows: list[dict[str, Any]], path: Path) -> None:
    fig = _figure()
    ax = fig.add_subplot(1, 1, 1)
    rels = ["above", "below", "left_of", "right_of"]
    x = np.arange(len(rels))
    width = 0.8 / max(len(rows), 1)
    for i, r in enumerate(rows):
        vals = np.array([float(r.get(f"{rel}_pass_rate", np.nan)) for rel in rels])
        err = _yerr(vals, [r.get(f"{rel}_pass_rate_lo") for rel in rels], [r.get(f"{rel}_pass_rate_hi") for rel in rels])
        ax.bar(x + (i - (len(rows) - 1) / 2) * width, np.nan_to_num(vals), width, yerr=err, capsize=3,
               label=str(r.get("run")))
    ax.set_xticks(x, rels)
    ax.set_ylim(0, 1)
    ax.set_ylabel("pass rate (checker PASS / N)")
    ax.set_title("Pass rate by run and relation (95 % intervals, resampling prompts)")
    if rows:
        ax.legend(fontsize=8)
    _save(fig, path)


def plot_pass_rate_comparison(rows: list[dict[str, Any]], path: Path) -> None:
    fig = _figure()
    ax = fig.add_subplot(1, 1, 1)
    keys = [("pass_rate", "pass rate"), ("coverage", "coverage"), ("pass_rate_cond", "pass | decided")]
    x = np.arange(len(rows))
    width = 0.8 / len(keys)
    for i, (k, label) in enumerate(keys):
        vals = np.array([float(r.get(k, np.nan)) for r in rows])
        err = _yerr(vals, [r.get(f"{k}_lo") for r in rows], [r.get(f"{k}_hi") for r in rows])
        ax.bar(x + (i - 1) * width, np.nan_to_num(vals), width, yerr=err, capsize=3, label=label)
    ax.set_xticks(x, [str(r.get("run")) for r in rows])
    ax.set_ylim(0, 1)
    ax.set_title("Pass rate, coverage and conditional pass rate by run (95 % intervals)")
    ax.legend(fontsize=8)
    _save(fig, path)


def plot_confidence_distribution(verdict: np.ndarray, conf: np.ndarray, path: Path, tau: float | None) -> None:
    fig = _figure()
    ax = fig.add_subplot(1, 1, 1)
    bins = np.linspace(0.0, 1.0, 21)
    c = np.clip(np.nan_to_num(np.asarray(conf, np.float64)), 0.0, 1.0)
    data = [c[np.asarray(verdict) == code] for code in (PASS, FAIL, UNDECIDABLE)]
    colors = ["#2e9d48", "#d0453a", "#8d8d8d"]
    ax.hist(data, bins=bins, stacked=True, label=list(VERDICTS), color=colors)
    if tau is not None and tau > 0:
        ax.axvline(tau, color="black", linestyle="--", linewidth=1, label=f"τ = {tau:g}")
    ax.set_xlabel("checker confidence")
    ax.set_ylabel("samples")
    ax.set_title("Confidence distribution by checker verdict")
    ax.legend(fontsize=8)
    _save(fig, path)


def plot_counterfactual(rows: list[dict[str, Any]], path: Path) -> None:
    fig = _figure()
    ax = fig.add_subplot(1, 1, 1)
    parts = [("both_pass_rate", "both pass", "#2e9d48"), ("one_sided_rate", "one-sided", "#e0a526"),
             ("both_fail_rate", "both fail", "#d0453a"), ("undecidable_rate", "undecidable", "#8d8d8d")]
    x = np.arange(len(rows))
    bottom = np.zeros(len(rows))
    for k, label, color in parts:
        vals = np.array([float(r.get(k, 0.0)) for r in rows])
        ax.bar(x, vals, 0.6, bottom=bottom, label=label, color=color)
        bottom += np.nan_to_num(vals)
    ax.set_xticks(x, [str(r.get("run")) for r in rows])
    ax.set_xlim(-0.5 - 0.5 * (len(rows) < 3), len(rows) - 0.5 + 0.5 * (len(rows) < 3))
    ax.set_ylim(0, 1)
    ax.set_ylabel("fraction of pairs")
    ax.set_title("Counterfactual consistency")
    ax.legend(fontsize=8)
    _save(fig, path)


def plot_risk_coverage(rc: Any, path: Path, point: Any = None, band: tuple[np.ndarray, np.ndarray] | None = None
                       ) -> None:
    """Step plot of risk over coverage with its pointwise 95 % band (``band``: lo, hi per τ of
    ``rc``). Thresholds whose risk is undefined (covered samples, none with a human PASS/FAIL
    label) are left out, as the table shows them "—"; `point` (a one-τ RiskCoverage) marks the
    operating point."""
    fig = _figure(6.0, 4.5)
    ax = fig.add_subplot(1, 1, 1)
    defined = np.isfinite(rc.risk)
    cov, risk = rc.coverage[defined], rc.risk[defined]
    order = np.argsort(cov, kind="stable")
    if band is not None:
        lo, hi = band[0][defined][order], band[1][defined][order]
        ok = np.isfinite(lo) & np.isfinite(hi)
        ax.fill_between(cov[order][ok], lo[ok], hi[ok], step="post", alpha=0.25, color="#0072B2", linewidth=0,
                        label="95 % band (pointwise, resampling prompts)")
    ax.step(cov[order], risk[order], where="post", linewidth=2, color="#0072B2")
    if point is not None and len(point.tau):
        pr = float(point.risk[0])
        risk_txt = f"{pr:.3f}" if math.isfinite(pr) else f"— (n_evaluated {int(point.n_evaluated[0])})"
        if math.isfinite(pr):
            ax.plot([point.coverage[0]], [pr], "o", color="black",
                    label=f"τ = {point.tau[0]:g}: coverage {point.coverage[0]:.3f}, risk {risk_txt}")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    ax.set_xlim(0, 1)
    top = float(np.max(risk)) if len(risk) else 0.0
    if band is not None and np.isfinite(band[1][defined]).any():
        top = max(top, float(np.nanmax(band[1][defined])))
    ax.set_ylim(0, max(0.05, top * 1.15))
    ax.set_xlabel("coverage (checker PASS/FAIL with conf ≥ τ, of audited)")
    ax.set_ylabel("risk (1 − accuracy on human PASS/FAIL)")
    ax.set_title(f"Risk–coverage on {rc.n_audited} audited samples")
    ax.grid(True, alpha=0.3)
    _save(fig, path)


# ---------------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------------


def _bounds_text(r: Mapping[str, Any], c: str) -> str:
    """" [lo, hi]" of column ``c`` when the row carries its bounds (``c_lo`` / ``c_hi``, or
    ``lo`` / ``hi`` beside ``value``), else ""."""
    if c == "value" or c.startswith("value_"):
        suffix = c[len("value"):]
        lo, hi = _plain(r.get(f"lo{suffix}")), _plain(r.get(f"hi{suffix}"))
    else:
        lo, hi = _plain(r.get(f"{c}_lo")), _plain(r.get(f"{c}_hi"))
    if isinstance(lo, float) and isinstance(hi, float) and math.isfinite(lo) and math.isfinite(hi):
        return f" [{lo:.4f}, {hi:.4f}]"
    return ""


def _is_bound(c: str) -> bool:
    return c.endswith(("_lo", "_hi")) or c in ("lo", "hi") or c.startswith(("lo_", "hi_"))


def _html_table(columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for r in rows:
        cells = []
        for c in columns:
            v = _plain(r.get(c))
            if isinstance(v, float):
                txt, title = ("—" if math.isnan(v) else f"{v:.4f}" + _bounds_text(r, c)), repr(v)
                cells.append(f'<td class="num" title="{html.escape(title)}">{txt}</td>')
            elif isinstance(v, int) and not isinstance(v, bool):
                cells.append(f'<td class="num">{v}</td>')
            else:
                cells.append(f"<td>{html.escape('' if v is None else str(v))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _rounded(v: Any, digits: int = 4) -> Any:
    """`v` with every float rounded for reading (nested dicts and lists too)."""
    v = _plain(v)
    if isinstance(v, float):
        return v if not math.isfinite(v) else round(v, digits)
    if isinstance(v, Mapping):
        return {k: _rounded(x, digits) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_rounded(x, digits) for x in v]
    return v


def _kv_table(d: Mapping[str, Any]) -> str:
    """Key-value rows for people: floats with 4 decimals (the exact value in the hover title)."""
    rows = []
    for k, v in d.items():
        v = _plain(v)
        if isinstance(v, (dict, list, tuple)):
            text = json.dumps(_rounded(v), indent=1, default=str, ensure_ascii=False)
            val = f"<pre>{html.escape(text)}</pre>"
        elif isinstance(v, float) and math.isfinite(v):
            val = f'<span title="{html.escape(repr(v))}">{v:.4f}</span>'
        else:
            val = html.escape(str(v))
        rows.append(f"<tr><th>{html.escape(str(k))}</th><td>{val}</td></tr>")
    return f"<table class='kv'>{''.join(rows)}</table>"


# on the report's style (`REPORT_CSS`): text left, numbers right, figures framed
_CSS = ("td,th{text-align:left}td.num{text-align:right}table.kv th{text-align:left}.warn{color:#a33}"
        "img{border:1px solid #d8dce5}pre{margin:0;font-size:.85em}")


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------


def _finite_or_none(x: Any) -> Any:
    return jsonable(x)


def write_report(
    out_dir: str | Path,
    ds: Dataset,
    v: Any,
    cfg: CheckerConfig,
    config_hash: str,
    provenance: Mapping[str, Any],
    summary: Any = None,
    labels: np.ndarray | Sequence[Any] | Mapping[Any, Any] | None = None,
    overwrite: bool = False,
    label_weights: np.ndarray | None = None,
    label_note: str = "",
) -> dict[str, Path]:
    """Write the report bundle for a verdict set; returns {name: path} of every file written.

    `v` is the verdict set (verdict, reason, conf arrays aligned with `ds.samples`), produced by
    `cfg` whose stored hash is `config_hash`. `provenance` (project, verdict-set version, runs,
    label set, ...) is shown in index.html and stored in report_meta.json. `summary` defaults to
    `metrics.summarize(ds, v)`. `labels` (human verdict per sample row, -1 for none, or a mapping
    sample_id → verdict) adds the audit confusion, the risk–coverage table and plot.
    `label_weights` (per sample row, 1/π in the labels' audit draw; read at the audited rows)
    weights the operating point (`calibration.operating_point`); `label_note` says beside it what
    its figures rest on (`store.SelectedHuman.draw_basis`). An existing `out_dir` is replaced only with `overwrite=True`.
    """
    out = Path(out_dir)
    if out.exists() and not overwrite and (not out.is_dir() or any(out.iterdir())):
        raise WorkstationError(f"report folder {out} already exists; choose another or allow overwriting")
    verdict = np.asarray(v.verdict)
    conf = np.asarray(v.conf, dtype=np.float64)
    if len(verdict) != ds.n or len(conf) != ds.n:
        raise WorkstationError(f"verdict set has {len(verdict)} rows but the dataset has {ds.n} samples")
    if summary is None:
        from .metrics import summarize

        summary = summarize(ds, v)

    from ...evaluation.intervals import N_BOOT, SEED
    from ...evaluation.intervals import provenance as interval_provenance
    from .metrics import INTERVAL_UNIT, headline

    tables: dict[str, tuple[list[str], list[dict[str, Any]]]] = {}
    tables["headline"] = (list(HEADLINE_COLUMNS), headline(ds, v, tau=cfg.tau).rows())
    for name in TABLES:
        rows = table_rows(summary, name)
        tables[name] = (_columns_for(name, rows), rows)
    provenance = {**dict(provenance), "intervals": interval_provenance(INTERVAL_UNIT, n_boot=N_BOOT, seed=SEED)}

    rc = None
    at_tau = None
    band = None
    audit_info: dict[str, Any] | None = None
    if labels is not None:
        from .audit import confusion_summary
        from .calibration import OPERATING_POINT_ROWS, apply_tau, human_by_row, operating_point, risk_band, \
            risk_coverage

        human = human_by_row(ds, labels)
        audited = np.flatnonzero((human >= 0) & (human <= UNDECIDABLE))
        cs = confusion_summary(verdict[audited], human[audited])
        rc = risk_coverage(verdict[audited], conf[audited], human[audited])
        prompts = np.asarray(ds.samples.prompt_id, dtype=object)[audited]
        band = risk_band(verdict[audited], conf[audited], human[audited], prompts, rc.tau)
        op_w = None if label_weights is None else np.asarray(label_weights, np.float64).reshape(-1)[audited]
        op = operating_point(verdict[audited], conf[audited], human[audited], prompts, cfg.tau, weights=op_w)
        tables["operating_point"] = (list(OPERATING_POINT_COLUMNS), [
            {"statistic": key, "value": e.value, "lo": e.lo, "hi": e.hi, "n": e.n, "units": e.units,
             "interval": e.method, **({"note": e.small_note()} if e.small_note() else {})}
            for key, _label in OPERATING_POINT_ROWS for e in (op[key],)])

        def matrix_rows(m: np.ndarray) -> list[dict[str, Any]]:
            out_rows = []
            for i, name in enumerate(VERDICTS):
                row: dict[str, Any] = {"checker": name}
                for j, hname in enumerate(VERDICTS):
                    row[f"human_{hname}"] = int(m[i, j])
                out_rows.append(row)
            return out_rows

        m_cols = ["checker"] + [f"human_{h}" for h in VERDICTS]
        tables["audit_confusion"] = (m_cols, matrix_rows(cs.matrix))
        cs_tau = None
        if cfg.tau > 0:
            cs_tau = confusion_summary(apply_tau(verdict[audited], conf[audited], cfg.tau), human[audited])
            tables["audit_confusion_at_tau"] = (m_cols, matrix_rows(cs_tau.matrix))
        rc_rows = rc.rows()
        for r_, lo_, hi_ in zip(rc_rows, band[0].tolist(), band[1].tolist()):
            r_["risk_lo"], r_["risk_hi"] = lo_, hi_
        tables["risk_coverage"] = (list(rc_rows[0].keys()) if rc_rows else ["tau"], rc_rows)
        at_tau = risk_coverage(verdict[audited], conf[audited], human[audited], taus=[cfg.tau])
        audit_info = {
            "n_audited": len(audited), "confusion": cs.to_dict(),
            "confusion_at_tau": None if cs_tau is None else cs_tau.to_dict(),
            "operating_point": {k: _finite_or_none(val) for k, val in at_tau.rows()[0].items()} if len(at_tau) else {},
            "operating_point_intervals": {k: e.to_dict() for k, e in op.items()},
            "operating_point_weighted": op_w is not None,
            "operating_point_draw": label_note,
        }

    created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    runs = sorted(set(np.asarray(ds.samples.run_id).astype(str).tolist()))
    computed_hash = cfg.content_hash()
    source_line = (f"Computed from the verdict set of checker config <code>{html.escape(config_hash)}</code> "
                   f"over {ds.n} samples of run(s) {html.escape(', '.join(runs))}")

    made = [p for p in reversed((out.parent, *out.parent.parents)) if not p.exists()]
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=str(out.parent)))
    except BaseException:
        remove_made(made)
        raise
    written: dict[str, Path] = {}
    try:
        (tmp / "tables").mkdir()
        (tmp / "data").mkdir()
        (tmp / "assets").mkdir()
        for name, (cols, rows) in tables.items():
            write_csv(tmp / "tables" / f"{name}.csv", cols, rows, full=False)
            extra = [k for k in _columns_for("", rows) if k not in cols]  # detail columns
            write_csv(tmp / "data" / f"{name}.csv", cols + extra, rows, full=True)
            written[name] = Path("tables") / f"{name}.csv"
            written[f"{name}_full"] = Path("data") / f"{name}.csv"

        plots: list[tuple[str, str]] = []
        main_rows = tables["main_results"][1]
        plot_pass_rate_by_relation(tables["by_relation"][1], tmp / "assets" / "pass_rate_by_relation.png")
        plots.append(("pass_rate_by_relation", "Pass rate by run and relation"))
        plot_pass_rate_comparison(main_rows, tmp / "assets" / "pass_rate_comparison.png")
        plots.append(("pass_rate_comparison", "Pass rate, coverage and conditional pass rate by run"))
        plot_confidence_distribution(verdict, conf, tmp / "assets" / "confidence_distribution.png",
                                     cfg.tau if cfg.tau > 0 else None)
        plots.append(("confidence_distribution", "Confidence distribution by checker verdict"))
        plot_counterfactual(tables["counterfactual"][1], tmp / "assets" / "counterfactual_consistency.png")
        plots.append(("counterfactual_consistency", "Counterfactual consistency"))
        if rc is not None:
            plot_risk_coverage(rc, tmp / "assets" / "risk_coverage.png", at_tau, band)
            plots.append(("risk_coverage", "Risk–coverage on the audited samples"))
        for key, _ in plots:
            written[key] = Path("assets") / f"{key}.png"

        meta = {
            "created_utc": created,
            "config_hash": config_hash,
            "config_content_hash": computed_hash,
            "config": cfg.to_dict(),
            "provenance": dict(provenance),
            "samples": ds.n,
            "runs": runs,
            "tables": {name: {"csv": f"tables/{name}.csv", "full_precision_csv": f"data/{name}.csv",
                              "columns": cols, "rows": [{k: _finite_or_none(val) for k, val in r.items()} for r in rows]}
                       for name, (cols, rows) in tables.items()},
            "assets": [f"assets/{k}.png" for k, _ in plots],
            "audit": audit_info,
            "rounding": "tables/*.csv: rates with 4 decimals as SpatialBench-UC publishes them; "
                        "data/*.csv and this file: full precision",
        }
        (tmp / "report_meta.json").write_text(
            dumps(meta, indent=2),
            encoding="utf-8")
        written["meta"] = Path("report_meta.json")

        (tmp / "index.html").write_text(
            _index_html(tables, plots, cfg, config_hash, computed_hash, provenance, created, source_line, audit_info),
            encoding="utf-8")
        written["index"] = Path("index.html")

        replace_folder(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        remove_made(made)  # folders this call created for the report
        raise
    return {k: out / p for k, p in written.items()}


def _index_html(
    tables: dict[str, tuple[list[str], list[dict[str, Any]]]],
    plots: list[tuple[str, str]],
    cfg: CheckerConfig,
    config_hash: str,
    computed_hash: str,
    provenance: Mapping[str, Any],
    created: str,
    source_line: str,
    audit_info: dict[str, Any] | None,
) -> str:
    parts = [
        page_start(f"Evaluation report {config_hash}", _CSS),
        "<h1>Evaluation report</h1>",
        f"<p>Generated {html.escape(created)} (UTC). Checker config hash <code>{html.escape(config_hash)}</code>"
        f" (<code>{html.escape(cfg.name)}</code>).</p>",
    ]
    note = str(provenance.get("config_note") or "").strip()
    if note:
        parts.append(f"<p class='note'>Version note: {html.escape(note)}</p>")
    if computed_hash != config_hash:
        parts.append(f"<p class='warn'>Note: the config shown hashes to <code>{html.escape(computed_hash)}</code>, "
                     f"not <code>{html.escape(config_hash)}</code>; the verdicts may come from a recorded run.</p>")
    parts.append("<h2>Provenance</h2>")
    parts.append(_kv_table(provenance) if provenance else "<p>(none given)</p>")
    sections = [n for n in ("headline", *TABLES, "audit_confusion", "audit_confusion_at_tau", "operating_point",
                            "risk_coverage") if n in tables]
    labels = provenance.get("labels") if isinstance(provenance.get("labels"), Mapping) else {}
    labels_line = str(labels.get("line") or "") if labels else ""
    for name in sections:
        cols, rows = tables[name]
        uses_labels = name.startswith(("audit_", "risk_", "operating_point"))
        parts.append(f"<h2 id='{name}'>{html.escape(TABLE_TITLES.get(name, name))}</h2>")
        parts.append(f"<p class='src'>{source_line}"
                     + ("; human labels of the audited samples" if uses_labels else "")
                     + (f" ({html.escape(labels_line)})" if uses_labels and labels_line else "")
                     + f". {html.escape(TABLE_DEFINITIONS.get(name, ''))} "
                     f"Files: <a href='tables/{name}.csv'>tables/{name}.csv</a> (4 decimals), "
                     f"<a href='data/{name}.csv'>data/{name}.csv</a> (full precision; hover a number to see it).</p>")
        if name == "operating_point" and audit_info and audit_info.get("operating_point_draw"):
            parts.append(f"<p class='note' id='operating_point_draw'>{html.escape(audit_info['operating_point_draw'])}."
                         "</p>")
        shown = rows if len(rows) <= 60 else rows[:60]
        # the bounds stand beside their value in the page; the CSV files keep them as columns
        notes = [c for c in ("note", "note_at_tau") if any(c in r for r in rows)]
        html_cols = [c for c in cols if not _is_bound(c)] + notes
        parts.append(_html_table(html_cols, shown))
        if len(rows) > len(shown):
            parts.append(f"<p class='src'>{len(rows) - len(shown)} more rows in the CSV.</p>")
    parts.append("<h2>Plots</h2>")
    for key, title in plots:
        parts.append(f"<h3>{html.escape(title)}</h3><p class='src'>{source_line}.</p>"
                     f"<img src='assets/{key}.png' alt='{html.escape(title)}'>")
    parts.append("<h2>Checker configuration</h2>")
    parts.append(_kv_table(cfg.to_dict()))
    parts.append("</body></html>")
    return "\n".join(parts)


def report_section(project: Any, out_dir: Path, annotator: str | None = None) -> Any:
    """The spatial section of a report bundle: the full report of the active verdict set written into
    ``out_dir`` (tables, plots, its own index.html), and a summary for the bundle's index."""
    from ...evaluation.base import ReportSection
    from .metrics import summarize
    from .sbuc_export import stored_verdicts
    from .store import SpatialStore, load_dataset

    store = SpatialStore(project)
    ds = load_dataset(project)
    if ds.n == 0:
        raise WorkstationError("the project has no samples of spatial prompts")
    cid = store.active_config_id()
    if cid is None:
        raise WorkstationError("the project has no verdict set yet; run `evaluate` first")
    cfg = store.get_config(cid)
    v = stored_verdicts(project, ds, cid)
    from ...evaluation.selection import load_selection, set_names
    from .store import TASK

    selection = load_selection(project, TASK)
    if annotator:
        selection = selection.replace(annotators=(annotator,))
    chosen = store.human_selected(ds, selection)
    human = chosen.codes
    labels = human if (human >= 0).any() else None
    op_weights, op_note = chosen.draw_basis(ds.n)
    row_weights = None
    if op_weights is not None:
        row_weights = np.full(ds.n, np.nan)
        row_weights[np.flatnonzero(human >= 0)] = op_weights
    ev = project.evaluations.get(cid)
    provenance = {
        "project": str(Path(project.folder).resolve()),
        "config_version": cid,
        "config_name": cfg.name,
        "runs": [{k: r[k] for k in ("run_id", "method", "model", "params", "source", "samples")}
                 for r in project.samples.runs() if r["run_id"] in set(ds.samples.run_id.tolist())],
        "labels": {"audited_samples": int((human >= 0).sum()), "annotators": store.annotators(),
                   **chosen.resolved.provenance(),
                   "line": chosen.resolved.describe(set_names(project, TASK)),
                   **({"operating_point": op_note} if op_note else {})},
        "config_note": ev.get("note") or "",
    }
    summary = summarize(ds, v)
    written = write_report(out_dir, ds, v, cfg, str(ev["content_hash"]), provenance, summary=summary,
                           labels=labels, overwrite=True, label_weights=row_weights, label_note=op_note)
    cols, rows = _columns_for("main_results", table_rows(summary, "main_results")), \
        table_rows(summary, "main_results")
    body = (f"<p class='src'>{ds.n} samples, checker config v{cid} <code>{html.escape(str(ev['content_hash']))}"
            f"</code>" + (f" — note: {html.escape(ev['note'])}" if ev.get("note") else "") + ".</p>"
            + _html_table(cols, rows))
    return ReportSection(method="spatial", title="Spatial checker (SpatialBench-UC)", html=body,
                         tables={"main_results": rows},
                         figures={k: p for k, p in written.items() if str(p).endswith(".png")},
                         meta={"config_version": cid, "config_hash": ev["content_hash"], "samples": ds.n,
                               "provenance": provenance, "summary_lines": summary_lines(ds, v)})


def _fmt4(x: Any, digits: int = 4) -> str:
    if isinstance(x, float):
        return "n/a" if math.isnan(x) else f"{x:.{digits}f}"
    return str(x)


def summary_lines(ds: Dataset, v: Any) -> list[str]:
    """Two lines per run: the main metrics (4 decimals) and the verdict counts with abstention reasons."""
    from .metrics import abstention, main_results

    lines = []
    ab = abstention(ds, v)
    for row in main_results(ds, v):
        lines.append(f"  {row['run']}: samples {row['samples']}  pass_rate {_fmt4(row['pass_rate'])}  "
                     f"coverage {_fmt4(row['coverage'])}  pass_rate_cond {_fmt4(row['pass_rate_cond'])}  "
                     f"prompt_pass_rate (best-of-{row['k']}) {_fmt4(row['prompt_pass_rate'])}  "
                     f"mean_conf {_fmt4(row['mean_conf'])}")
        reasons = [f"{r['reason']} {r['count']}" for r in ab if r["run"] == row["run"] and r["count"]]
        lines.append(f"    PASS {row['pass_count']}  FAIL {row['fail_count']}  UNDECIDABLE {row['undecidable_count']}"
                     + (f" ({', '.join(reasons)})" if reasons else ""))
    return lines
