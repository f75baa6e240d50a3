"""DyEval's section of a report bundle.

Written under the section folder:

    tables/nodes.csv             every node: topic, depth, state, prompts, tests, APR, AFR, #Bugs
    tables/trees.csv             every tree's totals
    tables/triggers.csv          failure triggers found by failure location
    tables/accumulated_bugs.csv  #Bugs accumulated breadth-first over each root (the paper's Fig. 3)
    trees/<tree>.json            the JSON export of each whole tree (topics, prompts, scene graphs,
                                 image paths, judgements, pre-marks, locations, events)
    accumulated_bugs.png         the same as a plot
    index.html                   each tree as an indented, coloured tree and as a table, its
                                 triggers and the links to its export

CSV cells are spreadsheet-safe (a text starting with = + - @ tab or CR gets a leading ').
"""

from __future__ import annotations

import csv
import html
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...evaluation.bundle import page_start, text_cell
from ...evaluation.intervals import N_BOOT, SEED
from ...evaluation.intervals import provenance as interval_provenance
from ...types import WorkstationError
from ...util import atomic_write_text, dumps
from .results import DyEvalData, NodeResults, evaluate, load_data, metrics
from .tree import TestTree

TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "nodes": ("tree_id", "node_id", "parent_id", "depth", "topic", "perspective", "state", "prompts",
              "complete_prompts", "tests", "passes", "fails", "apr", "apr_lo", "apr_hi", "afr", "afr_lo", "afr_hi",
              "bugs", "locations", "triggers", "note"),
    "trees": ("tree_id", "roots", "nodes", "prompts", "images", "judged", "tests", "passes", "fails", "apr", "apr_lo",
              "apr_hi", "afr", "afr_lo", "afr_hi", "bugs", "locations", "triggers", "note"),
    "triggers": ("tree_id", "node_id", "topic", "location", "prompt", "kind", "trigger", "context", "test",
                 "elements", "step"),
    "accumulated_bugs": ("tree_id", "root", "nodes", "node_id", "accumulated_bugs"),
}

_CSS = (".dytree,.dytree ul{list-style:none;padding-left:1.4em;margin:.1em 0}.dytree{padding-left:0}"
        ".dyn{display:inline-block;padding:1px 8px;border-radius:4px;border:1px solid #9aa3b5;margin:1px 0}"
        ".dym{color:#4b5466;font-size:.9em}.dyloc{color:#7a3b00;font-size:.9em}.dytrig{background:#ffe1b3;"
        "padding:0 4px;border-radius:3px}")


def safe_cell(value: Any) -> str:
    """A CSV cell as spreadsheets should read it (text starting with = + - @ tab CR gets a ')."""
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    s = str(value)
    return "'" + s if s[:1] in ("=", "+", "-", "@", "\t", "\r") else s


def write_csv(path: Path, columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> None:
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([safe_cell(r.get(c)) for c in columns])
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, buf.getvalue())


def apr_colour(apr: float | None) -> str:
    """Background for a pass rate: red (0) → amber → green (1); grey when nothing is judged."""
    if apr is None or (isinstance(apr, float) and math.isnan(apr)):
        return "#e3e6ec"
    return f"hsl({int(round(120 * max(0.0, min(1.0, apr))))}, 62%, 80%)"


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.2f}" if isinstance(v, float) else str(v)


def tree_html(tree: TestTree, rows: Mapping[str, Mapping[str, Any]]) -> str:
    """The tree as nested lists: each node coloured by its APR, with #Bugs and state; its failure
    locations and their triggers under it."""
    def node(nid: str) -> str:
        n = tree.nodes[nid]
        r = rows[nid]
        parts = [f"<li><span class='dyn' style='background:{apr_colour(r['apr'])}'>{html.escape(n.topic)}</span> "
                 f"<span class='dym'>APR {_fmt(r['apr'])} · #Bugs {r['bugs']} · {html.escape(str(r['state']))} · "
                 f"{r['prompts']} prompts, {r['tests']} judged images</span>"]
        subs = []
        for lid in n.location_ids:
            loc = tree.locations[lid]
            trig = ", ".join(f"<span class='dytrig'>{html.escape(t.text)}</span>" for t in loc.machine.triggers)
            state = "done" if loc.machine.done else f"{len(loc.machine.pending())} step(s) waiting"
            subs.append(f"<li class='dyloc'>failure location {lid} of “{html.escape(tree.prompts[loc.prompt_id].text)}” "
                        f"({len(loc.machine.rendered_steps())} tests, {state})" + (f": triggers {trig}" if trig else "")
                        + "</li>")
        for pid in n.proposal_ids:
            p = tree.proposals[pid]
            if p.state == "proposed":
                subs.append(f"<li class='dym'>proposed: {html.escape(p.text)}</li>")
        subs.extend(node(c) for c in n.child_ids)
        if subs:
            parts.append("<ul>" + "".join(subs) + "</ul>")
        parts.append("</li>")
        return "".join(parts)

    roots = [nid for nid in tree.bfs_order() if tree.nodes[nid].parent_id is None]
    return "<ul class='dytree'>" + "".join(node(r) for r in roots) + "</ul>"


def _with_bounds(r: Mapping[str, Any], c: str) -> str:
    """A value with its 95 % interval when the row carries ``c_lo`` / ``c_hi``; after APR / AFR
    the row's note ("fewer than 10 judged images", "... prompts") when it has one."""
    v = r.get(c)
    lo, hi = r.get(f"{c}_lo"), r.get(f"{c}_hi")
    text = _fmt(v)
    if isinstance(lo, float) and isinstance(hi, float) and not (math.isnan(lo) or math.isnan(hi)) and v is not None:
        text += f" [{lo:.2f}, {hi:.2f}]"
    if c in ("apr", "afr") and r.get("note"):
        text += f" ({r['note']})"
    return text


def _table(columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(text_cell(html.escape(_with_bounds(r, c)), r.get(c)) for c in columns) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def plot_accumulated(rows: Sequence[Mapping[str, Any]], path: Path) -> bool:
    if not rows:
        return False
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 3.6), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    series: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for r in rows:
        series.setdefault((str(r["tree_id"]), str(r["root"])), []).append((int(r["nodes"]), int(r["accumulated_bugs"])))
    for (tid, root), pts in series.items():
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{tid}: {root}")
    from matplotlib.ticker import MaxNLocator

    ax.set_xlabel("nodes tested (breadth-first)")
    ax.set_ylabel("#Bugs accumulated")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # counts: whole ticks only
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(str(path))
    return True


def section_html(data: DyEvalData, results: NodeResults, tables: Mapping[str, list[dict[str, Any]]],
                 base: str, cfg_line: str) -> str:
    """The section body; links are relative to ``base`` ("" inside the section folder)."""
    rows_by = {(r["tree_id"], r["node_id"]): r for r in tables["nodes"]}
    parts = [f"<style>{_CSS}</style>", f"<p class='src'>{html.escape(cfg_line)}</p>"]
    for tr in tables["trees"]:
        tid = tr["tree_id"]
        t = data.trees[tid]
        parts.append(f"<h3>Tree {html.escape(tid)} — {html.escape(tr['roots'])}</h3>")
        parts.append(f"<p>{tr['nodes']} nodes, {tr['prompts']} prompts, {tr['images']} images ({tr['judged']} judged): "
                     f"APR {_with_bounds(tr, 'apr')}, AFR {_with_bounds(tr, 'afr')} (95 % intervals, resampling "
                     f"prompts), #Bugs {tr['bugs']}; {tr['locations']} failure "
                     f"location(s), {tr['triggers']} trigger(s). "
                     f"<a href='{base}trees/{html.escape(tid)}.json'>JSON export of the whole tree</a></p>")
        parts.append(tree_html(t, {nid: rows_by[(tid, nid)] for nid in t.nodes}))
        mine = [r for r in tables["nodes"] if r["tree_id"] == tid]
        parts.append(_table(("node_id", "depth", "topic", "state", "prompts", "tests", "apr", "afr", "bugs"), mine))
        trig = [r for r in tables["triggers"] if r["tree_id"] == tid]
        if trig:
            parts.append("<h4>Failure triggers</h4>")
            parts.append(_table(("topic", "prompt", "kind", "trigger", "context", "test"), trig))
    parts.append("<p class='src'>APR and AFR carry 95 % intervals: the cluster bootstrap over the prompts (a "
                 "prompt's images together; Wilson when each prompt has one judged image), "
                 f"{N_BOOT} resamples, seed {SEED}.</p>")
    if (tables.get("accumulated_bugs")):
        parts.append(f"<h4>#Bugs accumulated breadth-first</h4><img src='{base}accumulated_bugs.png' "
                     "alt='accumulated bugs'>")
    parts.append(f"<p class='src'>Tables: " + ", ".join(f"<a href='{base}tables/{k}.csv'>{k}.csv</a>"
                                                         for k in TABLE_COLUMNS) + "</p>")
    return "\n".join(parts)


def report_section(project: Any, out_dir: Path, **options: Any) -> Any:
    from ...evaluation.base import ReportSection
    from ...evaluation.run import config_of
    from .export import export_dict
    from .. import get_method

    METHOD = get_method("dyeval")  # the registered method object (it imports this module)
    data = load_data(project)
    if not data.trees:
        raise WorkstationError("the project has no DyEval tree; make one with `dyeval new-tree`")
    eid, cfg = config_of(project, METHOD, None)
    results = evaluate(data, cfg)
    tables = metrics(data, results)
    out = Path(out_dir)
    for name, cols in TABLE_COLUMNS.items():
        write_csv(out / "tables" / f"{name}.csv", cols, tables[name])
    for tid, t in data.trees.items():
        d = export_dict(t)
        d["project_folder"] = str(Path(project.folder).resolve())
        (out / "trees").mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / "trees" / f"{tid}.json", dumps(d, indent=1))
    figures = {}
    if plot_accumulated(tables["accumulated_bugs"], out / "accumulated_bugs.png"):
        figures["accumulated_bugs"] = out / "accumulated_bugs.png"
    from ...evaluation.selection import resolve_project, set_names
    from .store import TASK

    labels = resolve_project(project, TASK)
    labels_line = labels.describe(set_names(project, TASK))
    cfg_line = (f"Evaluated with config " + (f"v{eid} " if eid is not None else "(default, not stored) ")
                + f"{cfg.content_hash()}: ρ = {cfg.rho:g} (a prompt is a bug when its pass rate is below it), "
                f"pre-marks {'count as FAIL' if cfg.premark_counts else 'shown only; human labels count'}. "
                f"{labels_line}.")
    page = (page_start("DyEval test trees") + "<h1>DyEval test trees</h1>"
            + section_html(data, results, tables, "", cfg_line) + "</body></html>")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "index.html", page)
    body = section_html(data, results, tables, f"{out.name}/", cfg_line)
    return ReportSection(method="dyeval", title=METHOD.title, html=body,
                         tables={k: tables[k] for k in ("trees", "nodes", "triggers")}, figures=figures,
                         meta={"config_version": eid, "config_hash": cfg.content_hash(),
                               "trees": list(data.trees), "nodes": len(results),
                               "provenance": {"intervals": interval_provenance("prompt (its judged images)"),
                                              "labels": labels.provenance()}})
