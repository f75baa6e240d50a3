"""Export of a whole test tree as strict JSON, and its import.

The export is the tree's snapshot (`TestTree.to_dict`: topics, prompts with scene graphs and
provenance, images with paths, human labels and CLIPScore pre-marks, proposals, failure locations
with every step and trigger, reflections, and the event log) plus a ``derived`` section for readers
— each node's state and APR / AFR / #Bugs, each prompt's and step's outcome, the tree's totals.
Import reads the snapshot back and ignores ``derived`` (it is recomputed), so
``import_tree(export_json(t)).to_dict() == t.to_dict()``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...types import InputError, WorkstationError
from ...util import dumps
from ...util.output import write_output_text
from .tree import TestTree


def derived(tree: TestTree) -> dict[str, Any]:
    """States, summaries and outcomes computed from the tree (not needed to rebuild it)."""
    owners = list(tree.prompts)
    for loc in tree.locations.values():
        owners.extend(loc.owner(s.step_id) for s in loc.machine.steps[1:] if s.reused_from is None)
    return {
        "states": {nid: tree.node_state(nid) for nid in tree.nodes},
        "node_summaries": {nid: tree.node_summary(nid).to_dict() for nid in tree.nodes},
        "subtree_summaries": {nid: tree.subtree_summary(nid).to_dict() for nid in tree.nodes
                              if tree.nodes[nid].parent_id is None},
        "tree_summary": tree.tree_summary().to_dict(),
        "outcomes": {o: tree.outcome(o).to_dict() for o in owners},
        "bfs_order": tree.bfs_order(),
    }


def export_dict(tree: TestTree, *, include_events: bool = True) -> dict[str, Any]:
    d = tree.to_dict(include_events=include_events)
    d["derived"] = derived(tree)
    return d


def export_json(tree: TestTree, *, indent: int | None = 1, include_events: bool = True) -> str:
    """Strict JSON (`workstation.util.dumps`: no NaN / Infinity)."""
    return dumps(export_dict(tree, include_events=include_events), indent=indent)


def write_tree(tree: TestTree, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write the tree's export to ``path`` (an output the user named, `util.output`: an existing
    file is replaced only with ``overwrite``)."""
    p = Path(path)
    write_output_text(p, export_json(tree), "tree export", overwrite=overwrite)
    return p


def import_tree(data: str | bytes | Mapping[str, Any], *, source: str = "<json>") -> TestTree:
    """A tree from exported JSON text or its parsed dict; bad input is an InputError naming
    ``source`` (and the line, for JSON syntax errors)."""
    if isinstance(data, (str, bytes)):
        try:
            obj = json.loads(data)
        except json.JSONDecodeError as e:
            raise InputError(source, f"invalid JSON: {e.msg}", e.lineno) from None
    else:
        obj = data
    if not isinstance(obj, Mapping):
        raise InputError(source, "expected a JSON object (an exported DyEval tree)")
    try:
        return TestTree.from_dict(obj)
    except InputError:
        raise
    except WorkstationError as e:
        raise InputError(source, str(e)) from None
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(source, f"malformed DyEval tree ({e.__class__.__name__}: {e})") from None


def read_tree(path: str | Path) -> TestTree:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(p, f"cannot read ({e.strerror})") from None
    return import_tree(text, source=str(p))
