"""`runs`: list a project's generation runs, or remove one with everything made from it.

    python main.py runs list   --project DIR
    python main.py runs remove --project DIR RUN_ID [--yes]

Removing a run deletes, in one transaction, its samples, their detections, verdicts, scores and
every method's results that name the run or its samples, the run itself and the records of the
generation jobs that made it; then its image files and those jobs' folders. The prompts stay
(other runs may share them), and so do the labels: the label log is append-only, so the label
events of the removed samples stay in it (they count nowhere while the samples are gone, and
come back if the run is imported again); the command says how many there are. Audit plans follow
their items: the removed samples leave every plan made on them (never drawn or handed out again,
their labels counting in no estimate; the estimate is over the items that remain), and the
command says what each plan loses. Without --yes the command asks (on a terminal) or refuses
(otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..types import WorkstationError
from ..command_base import add_command, add_project_arg

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Project

_OWN = ("runs", "samples", "label_events", "audit_items", "jobs", "prompts")


@dataclass
class RunRemoval:
    """What removing a run takes away (or took away)."""

    run_id: str
    samples: int = 0
    rows: dict[str, int] = field(default_factory=dict)  # table → rows of the run's samples or of the run
    images: list[str] = field(default_factory=list)  # image paths relative to the project folder
    jobs: list[str] = field(default_factory=list)  # generation jobs that made the run
    labels_kept: int = 0  # label events of the run's samples (kept in the log)
    not_deleted: list[str] = field(default_factory=list)  # files that could not be deleted afterwards
    plans: list[tuple[int, str, int, int]] = field(default_factory=list)  # (plan id, name, items lost, items held)

    def summary(self) -> str:
        parts = [f"{self.samples} sample(s)"]
        parts += [f"{n} {t.replace('_', ' ')} row(s)" for t, n in sorted(self.rows.items()) if n]
        parts.append(f"{len(self.images)} image file(s)")
        if self.jobs:
            parts.append(f"{len(self.jobs)} generation job(s)")
        labels = (f"; {self.labels_kept} label event(s) of these samples stay in the label log"
                  if self.labels_kept else "")
        plans = "".join(f"; audit plan #{pid} loses {lost} of its {held} item(s) (its estimate is over the rest)"
                        for pid, _name, lost, held in self.plans[:5])
        if len(self.plans) > 5:
            plans += f"; {len(self.plans) - 5} more audit plan(s) lose items"
        return f"run {self.run_id!r}: " + ", ".join(parts) + labels + plans


def _tables_with(project: "Project", column: str) -> list[str]:
    rows = project.con.execute(
        "SELECT c.table_name FROM information_schema.columns c JOIN information_schema.tables t "
        "ON c.table_name = t.table_name AND c.table_schema = t.table_schema "
        "WHERE c.column_name = ? AND t.table_type = 'BASE TABLE' AND c.table_schema = 'main' "
        "ORDER BY c.table_name", [column]).fetchall()
    return [r[0] for r in rows if r[0] not in _OWN]


def _generate_jobs(project: "Project", run_id: str) -> list[str]:
    out = []
    for j in project.jobs.all():
        try:
            spec = j["spec"] if isinstance(j["spec"], dict) else json.loads(j["spec"] or "{}")
        except ValueError:
            continue
        if isinstance(spec, dict) and j["kind"] == "generate" and spec.get("run_id") == run_id:
            out.append(str(j["job_id"]))
    return out


def _count(project: "Project", sql: str, params: list[Any]) -> int:
    row = project.con.execute(sql, params).fetchone()
    return int(row[0]) if row else 0


def plan_run_removal(project: "Project", run_id: str) -> RunRemoval:
    """What `remove_run` would take away (nothing is changed)."""
    con = project.con
    if run_id not in project.samples.run_ids():
        known = ", ".join(project.samples.run_ids()) or "(none)"
        raise WorkstationError(f"run {run_id!r} is not in the project; runs: {known}")
    r = RunRemoval(run_id)
    rows = con.execute("SELECT sample_id, image_path FROM samples WHERE run_id = ?", [run_id]).fetchall()
    r.samples = len(rows)
    r.images = sorted({str(p) for _s, p in rows if p})
    sub = "SELECT sample_id FROM samples WHERE run_id = ?"
    for t in _tables_with(project, "sample_id"):
        r.rows[t] = _count(project, f'SELECT count(*) FROM "{t}" WHERE sample_id IN ({sub})', [run_id])
    for t in _tables_with(project, "run_id"):
        if t not in r.rows:
            r.rows[t] = _count(project, f'SELECT count(*) FROM "{t}" WHERE run_id = ?', [run_id])
    r.labels_kept = _count(project, f"SELECT count(*) FROM label_events WHERE target_id IN ({sub})", [run_id])
    r.jobs = _generate_jobs(project, run_id)
    from ..methods.audit_sources import plans_losing

    r.plans = plans_losing(project, run_id)
    return r


def remove_run(project: "Project", run_id: str) -> RunRemoval:
    """Remove a run and everything made from it (see the module docstring): the database in one
    transaction (all or nothing), then the image files and job folders. Labels stay in the log."""
    from ..jobs.spec import JobPaths
    from ..util.images import resolve_inside
    from ..util.paths import UnsafePath, remove_tree_inside

    if project.read_only:
        raise WorkstationError(f"project {project.folder} is open read-only: a run cannot be removed")
    r = plan_run_removal(project, run_id)
    con = project.con
    sub = "SELECT sample_id FROM samples WHERE run_id = ?"
    with project.transaction():
        for t in _tables_with(project, "sample_id"):
            con.execute(f'DELETE FROM "{t}" WHERE sample_id IN ({sub})', [run_id])
        for t in _tables_with(project, "run_id"):
            con.execute(f'DELETE FROM "{t}" WHERE run_id = ?', [run_id])
        for j in r.jobs:
            con.execute("DELETE FROM jobs WHERE job_id = ?", [j])
        con.execute("DELETE FROM samples WHERE run_id = ?", [run_id])
        con.execute("DELETE FROM runs WHERE run_id = ?", [run_id])
    # files last: the project no longer names them; nothing outside the project is ever removed
    folder = Path(project.folder)
    real_folder = Path(os.path.realpath(folder))
    for rel in r.images:
        try:
            path = resolve_inside(folder, rel)
            path.unlink(missing_ok=True)
            parent = path.parent
            while parent != real_folder and parent.is_relative_to(real_folder) and parent.is_dir() \
                    and not any(parent.iterdir()):
                parent.rmdir()
                parent = parent.parent
        except (OSError, WorkstationError):
            r.not_deleted.append(rel)
    for j in r.jobs:
        try:
            d = JobPaths(folder, j).dir
            remove_tree_inside(folder / "jobs", d)
        except (OSError, WorkstationError, UnsafePath):
            r.not_deleted.append(f"jobs/{ascii(j)[1:-1][:80]}")
    return r


def list_runs(project: "Project") -> list[dict[str, Any]]:
    """Every run with its sample count, generator and model (for `runs list` and the window)."""
    out = []
    for run in project.samples.runs():
        model = run.get("model")
        if isinstance(model, dict):
            model = model.get("name") or model.get("path") or json.dumps(model)
        out.append({"run_id": run["run_id"], "samples": run["samples"], "method": run.get("method") or "",
                    "model": "" if model is None else str(model), "created_at": run.get("created_at")})
    return out


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = add_command(sub, "runs", "list the project's runs, or remove one", run, doc=__doc__)
    rs = p.add_subparsers(dest="runs_command", metavar="ACTION", required=True)
    q = rs.add_parser("list", help="the project's runs with their sample counts")
    add_project_arg(q)
    q = rs.add_parser("remove", help="remove a run: its samples, detections, results, images")
    add_project_arg(q)
    q.add_argument("run_id")
    q.add_argument("--yes", action="store_true", help="remove without asking")


def run(args: argparse.Namespace) -> int:
    from ..command_base import open_project, reading_project
    from ..methods import after_samples_changed

    if args.runs_command == "list":
        with reading_project(args.project) as project:
            runs = list_runs(project)
        if not runs:
            print("no runs in this project")
            return 0
        print(f"{'run':40} {'samples':>8}  {'method':16} model")
        for r in runs:
            print(f"{r['run_id']:40} {r['samples']:>8}  {r['method']:16} {r['model']}")
        return 0
    project = open_project(args.project)
    try:
        plan = plan_run_removal(project, args.run_id)
        if not args.yes:
            if not sys.stdin.isatty():
                raise WorkstationError(f"this removes {plan.summary()}; add --yes to remove it")
            answer = input(f"remove {plan.summary()}? [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                print("nothing removed")
                return 1
        done = remove_run(project, args.run_id)
        print(f"removed {done.summary()}")
        if done.not_deleted:
            print(f"note: {len(done.not_deleted)} file(s) could not be deleted, e.g. {done.not_deleted[0]}",
                  file=sys.stderr)
        after_samples_changed(project)
    finally:
        project.close()
    return 0
