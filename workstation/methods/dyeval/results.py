"""DyEval's data, evaluation and metrics as the kernel sees them (`Method.load / evaluate / metrics`).

The data are the project's trees (`DyEvalData`): each replayed from its events, with the
project's newer images, judgements and pre-marks applied in memory (nothing is written). The
evaluation is per **node** (item kind "node", id ``<tree>/<node>``): APR, AFR and #Bugs of its
own prompts (failure-location steps excluded, Eq. 7-9), under the evaluated config's ρ and
pre-mark rule — so a version with another ρ shows how many bugs that threshold would count. The
metrics add the whole tree, the failure triggers and #Bugs accumulated breadth-first (Fig. 3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .config import DyEvalConfig
from .metrics import Summary, merge, outcome, summarize
from .tree import TestTree

NODE_COLUMNS = ("tree_id", "node_id", "parent_id", "topic", "perspective", "depth", "state", "prompts",
                "complete_prompts", "tests", "passes", "fails", "bugs", "apr", "afr", "locations", "triggers",
                "apr_lo", "apr_hi", "afr_lo", "afr_hi", "note")


@dataclass
class DyEvalData:
    """The trees of a project, by id (in the order they were made)."""

    trees: dict[str, TestTree] = field(default_factory=dict)
    folder: Path | None = None

    def __len__(self) -> int:
        return sum(len(t.nodes) for t in self.trees.values())


def load_data(project: Any) -> DyEvalData:
    from .link import sync_tree
    from .store import TreeStore

    store = TreeStore(project)
    trees: dict[str, TestTree] = {}
    for tid in store.tree_ids():
        t = store.load(tid, persist=False)
        sync_tree(project, t)  # in memory only: the tree has no writer attached
        trees[tid] = t
    return DyEvalData(trees, Path(project.folder))


def node_summary(tree: TestTree, node_id: str, cfg: DyEvalConfig) -> Summary:
    """APR / AFR / #Bugs of a node's own prompts under ``cfg``'s ρ and pre-mark rule."""
    n = tree.nodes[node_id]
    outs = []
    for pid in n.prompt_ids:
        labels = [tree.images[i].effective(cfg.premark_counts) for i in tree.prompts[pid].image_ids]
        outs.append(outcome(pid, labels, n.n_x, cfg.rho))
    return summarize(outs)


@dataclass
class NodeResults:
    """Per-node figures of every tree (aligned numpy columns, `NODE_COLUMNS`)."""

    ids: np.ndarray
    cols: dict[str, np.ndarray]
    #: each node's summary (its prompts' counts: the units of the intervals), by id
    summaries: dict[str, Summary] = field(default_factory=dict)
    item_kind: str = "node"
    verdict: np.ndarray | None = None
    conf: np.ndarray | None = None
    verdict_names: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.ids)

    def columns(self) -> dict[str, np.ndarray]:
        return {"node": self.ids, **self.cols}

    def rows(self) -> list[dict[str, Any]]:
        keys = list(self.cols)
        out = []
        for i in range(len(self.ids)):
            r: dict[str, Any] = {"node": str(self.ids[i])}
            for k in keys:
                v = self.cols[k][i]
                if isinstance(v, np.floating):
                    v = None if math.isnan(float(v)) else float(v)
                elif isinstance(v, np.integer):
                    v = int(v)
                r[k] = v
            out.append(r)
        return out


def evaluate(data: DyEvalData, cfg: DyEvalConfig) -> NodeResults:
    rows: dict[str, list[Any]] = {c: [] for c in NODE_COLUMNS}
    ids: list[str] = []
    summaries: dict[str, Summary] = {}
    for tid, t in data.trees.items():
        for nid in t.bfs_order():
            n = t.nodes[nid]
            s = node_summary(t, nid, cfg)
            summaries[f"{tid}/{nid}"] = s
            a = s.apr_estimate()
            locs = [t.locations[x] for x in n.location_ids]
            ids.append(f"{tid}/{nid}")
            vals = (tid, nid, n.parent_id or "", n.topic, n.perspective, n.depth, t.node_state(nid), s.prompts,
                    s.complete_prompts, s.tests, s.passes, s.fails, s.bugs,
                    math.nan if s.apr is None else s.apr, math.nan if s.afr is None else s.afr, len(locs),
                    sum(len(x.machine.triggers) for x in locs), a.lo, a.hi, 1.0 - a.hi, 1.0 - a.lo,
                    a.small_note("judged images", "prompts") if a.n else "")
            for c, v in zip(NODE_COLUMNS, vals):
                rows[c].append(v)
    ints = {"depth", "prompts", "complete_prompts", "tests", "passes", "fails", "bugs", "locations", "triggers"}
    floats = {"apr", "afr", "apr_lo", "apr_hi", "afr_lo", "afr_hi"}
    cols = {c: (np.asarray(v, np.int64) if c in ints else np.asarray(v, np.float64) if c in floats
                else np.asarray(v, dtype=object)) for c, v in rows.items()}
    return NodeResults(np.asarray(ids, dtype=object), cols, summaries)


def _rate(passes: int, tests: int) -> float | None:
    return passes / tests if tests else None


def metrics(data: DyEvalData, results: NodeResults) -> dict[str, list[dict[str, Any]]]:
    """Tables: nodes, trees (whole-tree APR / AFR / #Bugs, with the 95 % bounds of APR and AFR:
    the cluster bootstrap over the tree's prompts), triggers, accumulated_bugs."""
    nodes = results.rows()
    trees = []
    for tid, t in data.trees.items():
        mine = [r for r in nodes if r["tree_id"] == tid]
        tests = sum(r["tests"] for r in mine)
        passes = sum(r["passes"] for r in mine)
        apr = _rate(passes, tests)
        bounds: dict[str, Any] = {}
        if all(r["node"] in results.summaries for r in mine):
            d = merge(results.summaries[r["node"]] for r in mine).to_dict()
            bounds = {k: d[k] for k in ("apr_lo", "apr_hi", "afr_lo", "afr_hi", "note")}
        trees.append({"tree_id": tid, "roots": "; ".join(t.nodes[n].topic for n in t.bfs_order()
                                                         if t.nodes[n].parent_id is None),
                      "nodes": len(mine), "prompts": sum(r["prompts"] for r in mine), "tests": tests,
                      "passes": passes, "fails": tests - passes, "apr": apr, "afr": None if apr is None else 1 - apr,
                      **bounds,
                      "bugs": sum(r["bugs"] for r in mine), "locations": len(t.locations),
                      "triggers": sum(len(x.machine.triggers) for x in t.locations.values()),
                      "images": len(t.images), "judged": sum(1 for i in t.images.values() if i.label is not None)})
    triggers = []
    for tid, t in data.trees.items():
        for loc in t.locations.values():
            for tr in loc.machine.triggers:
                triggers.append({"tree_id": tid, "node_id": loc.node_id, "topic": t.nodes[loc.node_id].topic,
                                 "location": loc.location_id, "prompt": t.prompts[loc.prompt_id].text,
                                 "kind": tr.kind, "trigger": tr.cell_text, "context": tr.context_text,
                                 "test": tr.text, "elements": "; ".join(tr.elements), "step": tr.step})
    acc = []
    by_id = {r["node"]: r for r in nodes}
    for tid, t in data.trees.items():
        for root in [n for n in t.bfs_order() if t.nodes[n].parent_id is None]:
            total = 0
            for k, nid in enumerate(t.bfs_order(root), 1):
                total += int(by_id[f"{tid}/{nid}"]["bugs"])
                acc.append({"tree_id": tid, "root": t.nodes[root].topic, "nodes": k, "node_id": nid,
                            "accumulated_bugs": total})
    return {"nodes": nodes, "trees": trees, "triggers": triggers, "accumulated_bugs": acc}
