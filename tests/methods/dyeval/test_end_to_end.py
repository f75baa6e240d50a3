"""End to end, offline: a root topic → prompts by templates → images by the procedural generator
through generation jobs (worker processes) → PASS / FAIL labels → child topics → failure location
of one failing prompt → JSON export; with the process that holds the project killed (SIGKILL)
twice on the way — in the middle of a generation job, and right after acknowledged labels — and
the tree resumed each time with nothing lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.proc import Lines

from workstation.methods.dyeval.config import DyEvalConfig
from workstation.methods.dyeval.runner import DyEvalRunner
from workstation.methods.dyeval.store import TASK, TreeStore
from workstation.methods.dyeval.weakness import DEMO_WEAKNESSES
from workstation.store import Project

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow

GENERATE = r'''
import sys
from workstation.store import Project
from workstation.methods.dyeval.runner import DyEvalRunner
p = Project.open(sys.argv[1])
r = DyEvalRunner(p, "e2e")
specs = r.create_generation_jobs(size=96, batch_size=1)
print("JOBS", " ".join(s.job_id for s in specs), flush=True)
def show(pr):
    print("PROGRESS", pr.done, pr.total, flush=True)
r.run_jobs(specs, show)
print("FINISHED", flush=True)
'''

LABEL = r'''
import sys, time
from workstation.store import Project
from workstation.methods.dyeval.runner import DyEvalRunner
p = Project.open(sys.argv[1])
r = DyEvalRunner(p, "e2e")
truth = p.samples.truth()
for j in r.tree.judging_queue():
    r.label(j.image_id, truth[j.image_id]["expected"], "alice", source="ui")
    print("ACK", j.image_id, flush=True)
    time.sleep(0.05)
print("FINISHED", flush=True)
time.sleep(60)
'''


def _spawn(code: str, folder: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    e = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.Popen([sys.executable, "-c", code, str(folder)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=e)


def _read_until(proc: subprocess.Popen[str], done: Callable[[str], bool], timeout: float = 120) -> list[str]:
    out = Lines(proc, timeout=timeout)  # each read bounded by the deadline
    out.wait_for(done)
    return out.seen


def _kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def _stop_orphan_workers(folder: Path) -> None:
    """A worker of the killed process may go on alone; stop it (its id is in its progress file)."""
    for prog in (folder / "jobs").glob("*/progress.json"):
        try:
            pid = int(json.loads(prog.read_text()).get("pid") or 0)
        except (OSError, ValueError):
            continue
        if pid > 0:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _generate(r: DyEvalRunner) -> int:
    before = len(r.tree.images)
    specs = r.create_generation_jobs(size=96, batch_size=4)
    for run in r.run_jobs(specs):
        assert run.status == "done", run.message
    return len(r.tree.images) - before


def test_a_tree_grows_from_a_root_topic_to_a_failure_trigger_through_two_kills(
        tmp_path: Path, judge_truth: Callable[..., int]) -> None:
    folder = tmp_path / "proj"
    cfg = DyEvalConfig(n_i=3, n_x=2, d_max=2)
    # --- a root topic, prompts by templates, images through a generation job, labels -------------------
    with Project.create(folder) as p:
        r = DyEvalRunner.create(p, cfg, tree_id="e2e", topics=["Material objects"])
        assert r.run_automatic(("write",)) == ["wrote 3 prompt(s) for 'Material objects'"]
        root = "n1"
        assert all(r.tree.prompts[x].provenance.source == "templates" for x in r.tree.nodes[root].prompt_ids)
        r.confirm_prompts(root)
        assert _generate(r) == 6
        imgs = [r.tree.images[i] for x in r.tree.nodes[root].prompt_ids for i in r.tree.prompts[x].image_ids]
        assert all((folder / im.path).is_file() for im in imgs)
        assert sorted(im.seed for im in imgs) == [0, 0, 0, 1, 1, 1]
        assert p.samples.prompt_methods()["dyeval"] == 3 and len(p.samples.runs()) == 1
        assert judge_truth(r) == 6 and r.tree.node_state(root) == "judged"
        # the root passes: child topics proposed, two accepted (the failing one first), one rejected
        assert r.run_automatic(("propose",)) == ["proposed 3 child topic(s) of 'Material objects'"]
        props = {r.tree.proposals[x].text: x for x in r.tree.nodes[root].proposal_ids}
        assert set(props) == {"Vehicles", "Furniture", "Food"}
        vehicles = r.accept(props["Vehicles"])
        furniture = r.accept(props["Furniture"], "Furniture in a kitchen")
        r.reject(props["Food"])
        assert r.tree.proposals[props["Furniture"]].state == "edited"
        assert r.tree.nodes[furniture].topic == "Furniture in a kitchen"
        r.run_automatic(("write",), confirm=True)
        assert r.pending_images() == 12
        events_before = len(TreeStore(p).events("e2e"))
    # --- killed in the middle of a generation job ------------------------------------------------------
    child = _spawn(GENERATE, folder, {"WORKSTATION_JOB_DELAY": "0.4"})
    try:
        _read_until(child, lambda line: line.startswith("PROGRESS") and int(line.split()[1]) >= 3)
        _kill(child)
    finally:
        if child.poll() is None:
            child.kill()
    time.sleep(0.5)
    with Project.open(folder) as p:
        r = DyEvalRunner(p, "e2e")
        assert len(TreeStore(p).events("e2e")) >= events_before  # nothing acknowledged is gone
        r.sync()
        assert 0 < r.pending_images() < 12  # killed half-way: some images are in, some are not
        _generate(r)  # the orphaned worker is told to stop; what it finished is taken in
        _stop_orphan_workers(folder)
        for nid in (vehicles, furniture):
            for x in r.tree.nodes[nid].prompt_ids:
                seeds = sorted(r.tree.images[i].seed for i in r.tree.prompts[x].image_ids)
                assert seeds == [0, 1], (x, seeds)  # every image once, no seed twice
        assert sum(1 for i in r.tree.images.values() if i.owner in r.tree.prompts
                   and r.tree.prompts[i.owner].node_id in (vehicles, furniture)) == 12
        assert all((folder / im.path).is_file() for im in r.tree.images.values())
        assert r.tree.node_state(vehicles) == "judging"
        superseded = [j for j in p.jobs.all() if j["status"] == "cancelled"]
        assert superseded and all("superseded" in j["message"] for j in superseded)
    # --- killed right after acknowledged labels --------------------------------------------------------
    child = _spawn(LABEL, folder)
    try:
        acked: list[str] = []
        out = Lines(child, timeout=120)  # each read bounded by the deadline
        for line in out:
            if line.startswith("ACK"):
                acked.append(line.split()[1])
                if len(acked) == 5:
                    break
        assert len(acked) == 5, out.tail()
        _kill(child)
    finally:
        if child.poll() is None:
            child.kill()
    with Project.open(folder) as p:
        r = DyEvalRunner(p, "e2e")
        r.sync()
        truth = p.samples.truth()
        for iid in acked:  # every acknowledged judgement is in the label log and in the tree
            assert r.tree.images[iid].label == truth[iid]["expected"] and r.tree.images[iid].annotator == "alice"
            assert [e.value for e in p.labels.events(task=TASK, target_id=iid)] == [truth[iid]["expected"]]
        judge_truth(r, "alice")  # the rest, resumed
        assert not r.tree.judging_queue()
        # a replay of the stored events is the tree the session holds
        assert TreeStore(p).load("e2e", persist=False).to_dict() == r.tree.to_dict()
        # --- failure location on one failing prompt ------------------------------------------------
        assert r.tree.wants_location(vehicles), r.tree.node_summary(vehicles)
        bugs = r.tree.bugs(vehicles)
        weak_objects = {p_: [w for w in DEMO_WEAKNESSES.weak_elements(r.tree.prompts[p_].graph) if w.kind == "object"]
                        for p_ in bugs}
        target = next(b for b in bugs if weak_objects[b])
        lid = r.start_location(vehicles, target)
        rounds = 0
        while not r.tree.locations[lid].machine.done:
            rounds += 1
            assert rounds < 12
            assert _generate(r) > 0
            judge_truth(r, "alice")
        m = r.tree.locations[lid].machine
        assert m.triggers, [s.text for s in m.steps]
        weak = weak_objects[target][0]
        assert any(weak.keys[0] in t.cell for t in m.triggers), ([t.text for t in m.triggers], weak.text)
        assert all(s.verdict is not None for s in m.steps)
        # --- the export ------------------------------------------------------------------------------
        out = tmp_path / "tree.json"
        from workstation.cli import main

        p.close()
    assert main(["dyeval", "export", "--project", str(folder), "--tree", "e2e", "--out", str(out)]) == 0
    d = json.loads(out.read_text())
    topics = {n["topic"] for n in d["nodes"]}
    assert topics == {"Material objects", "Vehicles", "Furniture in a kitchen"}
    assert all(x["graph"]["objects"] for x in d["prompts"])
    assert all((folder / im["path"]).is_file() and im["label"] in ("PASS", "FAIL") for im in d["images"])
    (loc,) = d["locations"]
    assert loc["machine"]["done"] and loc["machine"]["triggers"]
    assert d["derived"]["states"][vehicles] == "locating" and d["project_folder"] == str(folder.resolve())
