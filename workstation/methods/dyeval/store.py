"""How DyEval test trees live in a project.

A project holds any number of trees, each named by a short id ("t1", "demo"). A tree is its
**event log** (`tree.TestTree` events) in the method's table ``dyeval_events``: one row per
event — (tree_id, seq, kind, event JSON, created_at) — appended and committed one by one as the
tree changes, so a process killed at any point loses no event it had acknowledged; opening the
tree replays the log (`TreeStore.load`). Nothing else about a tree is stored: node states, APR /
AFR / #Bugs and failure-location steps follow from the events.

The tree meets the rest of the project in four places (`link.py` keeps them in step):

* **prompts** — a node's prompts and the texts of failure-location steps become the project's
  prompts of method "dyeval" when their images are asked for: id ``dyeval-<tree>-<owner>``
  (``dyeval-t1-p3``, ``dyeval-t1-L1-s4``), group id ``<tree>/<node>`` for a node's prompt and
  ``<tree>/<owner>`` for a step, entities the objects of the scene graph, and in ``attrs`` the
  tree, owner, node, topic and the graph itself (the procedural generator draws from it);
* **images** — samples made by generation jobs for those prompts (one run per job, seeds from 0
  up), added to the tree as ``image_added`` events: the tree's image id is the sample id;
* **judgements** — a human PASS / FAIL is a label event of task ``dyeval.image`` on the sample
  (durable when the key is pressed), applied to the tree as a ``label`` event; the latest
  judgement of any annotator counts in the tree, each annotator's own stay in the label log;
* **pre-marks** — CLIPScores in the project's scores table (a score job with a local CLIP
  folder) become ``image_premarked`` events; the threshold is the tree's config. The pre-mark
  and the human label are kept side by side on the image.

``dyeval_node_results`` holds the per-node APR / AFR / #Bugs of each stored evaluation version.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any

from ...types import WorkstationError
from ...util import dumps
from .config import DyEvalConfig
from .tree import TestTree

METHOD = "dyeval"
TASK = "dyeval.image"
_TREE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]{0,39}$")

MIGRATIONS: list[list[Any]] = [[
    """CREATE TABLE dyeval_events (
        tree_id VARCHAR NOT NULL, seq INTEGER NOT NULL, kind VARCHAR NOT NULL, event VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL, PRIMARY KEY (tree_id, seq))""",
    """CREATE TABLE dyeval_node_results (
        eval_id INTEGER NOT NULL, tree_id VARCHAR NOT NULL, node_id VARCHAR NOT NULL, parent_id VARCHAR,
        topic VARCHAR, depth INTEGER, state VARCHAR, prompts INTEGER, complete_prompts INTEGER, tests INTEGER,
        passes INTEGER, bugs INTEGER, apr DOUBLE, afr DOUBLE, PRIMARY KEY (eval_id, tree_id, node_id))""",
]]


RESULT_COLUMNS = ("eval_id", "tree_id", "node_id", "parent_id", "topic", "depth", "state", "prompts",
                  "complete_prompts", "tests", "passes", "bugs", "apr", "afr")


def check_tree_id(tree_id: str) -> str:
    if not isinstance(tree_id, str) or not _TREE_ID.fullmatch(tree_id):
        raise WorkstationError(f"tree id {str(tree_id)[:40]!r}: use letters, digits and '_' (up to 40, starting "
                               "with a letter or digit)")
    return tree_id


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


class TreeStore:
    """The trees of one open project (see the module docstring)."""

    def __init__(self, project: Any) -> None:
        self.project = project
        # the method's tables are made with the first tree (`create`), not by opening the store: a
        # command that only reads, or is refused, leaves a project without trees as it was
        if not project.read_only and project.component_version(METHOD) >= 1:
            project.ensure_schema(METHOD, MIGRATIONS)  # tables of an older version brought up to date

    @property
    def ready(self) -> bool:
        """Whether the project has the method's tables (a read-only project may not)."""
        return bool(self.project.component_version(METHOD) >= 1)

    # --- listing ------------------------------------------------------------------------------------
    def tree_ids(self) -> list[str]:
        """Trees in the order they were made."""
        if not self.ready:
            return []
        rows = self.project.con.execute(
            "SELECT tree_id FROM dyeval_events WHERE seq = 1 ORDER BY created_at, tree_id").fetchall()
        return [str(r[0]) for r in rows]

    def summaries(self) -> list[dict[str, Any]]:
        """Per tree: id, events, created / last changed, and its root topics."""
        out: list[dict[str, Any]] = []
        if not self.ready:
            return out
        rows = self.project.con.execute(
            "SELECT tree_id, count(*), min(created_at), max(created_at), "
            "list(event ORDER BY seq) FILTER (WHERE kind = 'node_added') "
            "FROM dyeval_events GROUP BY tree_id ORDER BY min(created_at), tree_id").fetchall()
        for tid, n, first, last, nodes in rows:
            roots = [e["topic"] for e in (json.loads(x) for x in (nodes or [])) if e.get("parent_id") is None]
            out.append({"tree_id": tid, "events": int(n), "created_at": first, "changed_at": last, "roots": roots})
        return out

    def next_tree_id(self) -> str:
        have = set(self.tree_ids())
        k = 1
        while f"t{k}" in have:
            k += 1
        return f"t{k}"

    # --- events -------------------------------------------------------------------------------------
    def events(self, tree_id: str) -> list[dict[str, Any]]:
        if not self.ready:
            return []
        rows = self.project.con.execute("SELECT event FROM dyeval_events WHERE tree_id = ? ORDER BY seq",
                                        [tree_id]).fetchall()
        return [json.loads(r[0]) for r in rows]

    def append(self, tree_id: str, event: dict[str, Any]) -> None:
        """Store one applied event (committed when this returns, unless a transaction is open)."""
        self.project._check_writable()
        with self.project._lock:
            self.project.con.execute("INSERT INTO dyeval_events VALUES (?, ?, ?, ?, ?)",
                                     [tree_id, int(event["seq"]), str(event["kind"]), dumps(event), _now()])

    def _attach(self, tree: TestTree) -> TestTree:
        tid = tree.tree_id

        def write(e: dict[str, Any]) -> None:
            try:
                self.append(tid, e)
            except WorkstationError:
                tree.on_event = None
                raise
            except Exception as err:  # noqa: BLE001 - a database error: the tree must be reloaded
                tree.on_event = None
                raise WorkstationError(f"DyEval: event {e['seq']} of tree {tid} was not stored ({err}); "
                                       "reopen the tree") from None

        tree.on_event = write
        return tree

    # --- trees ----------------------------------------------------------------------------------------
    def create(self, config: DyEvalConfig | None = None, tree_id: str | None = None) -> TestTree:
        """A new, empty tree (its first event stored)."""
        self.project._check_writable()
        cfg = config or DyEvalConfig()
        cfg.validate()
        tid = check_tree_id(tree_id) if tree_id else self.next_tree_id()
        self.project.ensure_schema(METHOD, MIGRATIONS)
        if tid in self.tree_ids():
            raise WorkstationError(f"the project already has a DyEval tree {tid!r}")
        tree = self._attach(TestTree(cfg, tid))
        tree.apply({"kind": "tree_created", "tree_id": tid, "config": cfg.to_dict()})
        return tree

    def load(self, tree_id: str, *, persist: bool = True) -> TestTree:
        """Replay a stored tree; its further events are stored as they happen (``persist`` and a
        project open for writing)."""
        events = self.events(tree_id)
        if not events:
            known = self.tree_ids()
            raise WorkstationError(f"no DyEval tree {tree_id!r} in the project"
                                   + (f"; its trees: {', '.join(known)}" if known else "; make one with `dyeval new-tree`"))
        tree = TestTree.from_events(events)
        if persist and not self.project.read_only:
            self._attach(tree)
        return tree

    def resolve(self, tree_id: str | None) -> str:
        """``tree_id``, or the only tree / the newest tree when None."""
        ids = self.tree_ids()
        if tree_id:
            if tree_id not in ids:
                raise WorkstationError(f"no DyEval tree {tree_id!r} in the project"
                                       + (f"; its trees: {', '.join(ids)}" if ids else ""))
            return tree_id
        if not ids:
            raise WorkstationError("the project has no DyEval tree; make one with `dyeval new-tree`")
        return ids[-1]

    # --- results of evaluation versions ----------------------------------------------------------------
    def save_node_results(self, eval_id: int, columns: dict[str, Any]) -> None:
        self.project.ensure_schema(METHOD, MIGRATIONS)
        self.project.con.execute("DELETE FROM dyeval_node_results WHERE eval_id = ?", [int(eval_id)])
        self.project.insert_columns("dyeval_node_results", columns)

    def node_results(self, eval_id: int) -> list[dict[str, Any]]:
        if not self.ready:
            return []
        rows = self.project.con.execute(
            f"SELECT {', '.join(RESULT_COLUMNS)} FROM dyeval_node_results WHERE eval_id = ? ORDER BY tree_id, node_id",
            [int(eval_id)]).fetchall()
        return [dict(zip(RESULT_COLUMNS, r)) for r in rows]
