"""The controller of a test tree in a project: what to do next, and doing the automatic part.

`DyEvalRunner(project, tree_id)` opens a stored tree (`store.TreeStore`), brings in what the
project holds that the tree has not recorded (`link.sync_tree`: images, judgements, pre-marks),
and takes the next steps of DyEval's loop, every change stored as a tree event before the next
one is taken, so the loop can stop anywhere and be resumed days later:

* **write** prompts for nodes without them (the tree's language model: the template writer, or
  a local causal LM folder; `lm.py`), de-duplicated;
* **generate** the images the tree asks for: generation jobs over the project's job system
  (`create_generation_jobs`, run by `run_jobs` or the window's job queue), one run per job, the
  procedural demo generator by default; `render_inline` draws them in this process (the demo);
* **score** them with the pre-mark scorer (a score job with the configured local CLIP folder);
* **locate** the failures of low-pass nodes (Algorithm 1 on each bug prompt), then **reflect**;
* **propose** child topics for high-pass nodes up to d_max.

The auditor's part goes through the same object (each one event): confirm a node's prompts, add
or drop a prompt, correct a scene graph, judge images (`label`: a label event first, then the
tree's), accept / edit / reorder / reject proposals, close a node. `next_actions()` says, in
words, what the tree waits for and who does it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...types import WorkstationError
from .config import DyEvalConfig
from .engine import add_perspective_roots, propose_topics, reflect, start_locations, write_prompts
from .link import SyncReport, prompt_prefix, request_prompts, seeds_of, sync_tree
from .lm import LanguageModel
from .scene_graph import SceneGraph
from .store import TASK, TreeStore
from .tree import ACCEPTED, EDITED, REJECTED, TestTree

STEP_KINDS = ("write", "generate", "score", "locate", "reflect", "propose")
_ENGINE_KIND = {"write_prompts": "write", "start_locations": "locate", "reflect": "reflect",
                "propose_topics": "propose"}


def make_lm(spec: str = "templates", seed: int = 0) -> LanguageModel:
    """"templates" (the built-in writer) or a local causal LM folder (loaded on first use)."""
    from .templates import TemplateLM

    if not spec or spec.strip().lower() == "templates":
        return TemplateLM(seed)
    folder = Path(spec).expanduser()
    if not folder.is_dir():
        raise WorkstationError(f"language model {spec!r}: neither 'templates' nor a model folder")
    from .lm_hf import TransformersLM

    return TransformersLM(folder, seed=seed)


@dataclass(frozen=True)
class NextAction:
    """Something the tree waits for: ``by`` is "engine" (automatic), "jobs", "judge" or "auditor"."""

    kind: str
    node_id: str
    by: str
    text: str
    count: int = 0
    detail: tuple[str, ...] = ()


@dataclass
class StepReport:
    done: list[str] = field(default_factory=list)  # what was done, in words
    jobs: list[str] = field(default_factory=list)  # job ids created or resumed
    sync: SyncReport = field(default_factory=SyncReport)
    next: list[NextAction] = field(default_factory=list)


class DyEvalRunner:
    """One tree of an open project (see the module docstring)."""

    def __init__(self, project: Any, tree_id: str | None = None, *, lm: LanguageModel | None = None,
                 tree: TestTree | None = None) -> None:
        self.project = project
        self.store = TreeStore(project)
        if tree is None:
            self.tree_id = self.store.resolve(tree_id)
            self.tree = self.store.load(self.tree_id)
        else:
            self.tree_id, self.tree = tree.tree_id, tree
        self._lm = lm

    # --- opening --------------------------------------------------------------------------------------
    @classmethod
    def create(cls, project: Any, config: DyEvalConfig | None = None, *, tree_id: str | None = None,
               topics: Sequence[str] = (), perspectives: Sequence[str] | None = None,
               lm: LanguageModel | None = None) -> DyEvalRunner:
        """A new tree with root topics (``topics``) and / or the paper's initial topics
        (``perspectives``: [] for all nine, or the sub-topics named)."""
        if not topics and perspectives is None:
            raise WorkstationError("a new tree needs a root topic or the paper's perspectives")
        for t in topics:
            if not " ".join(str(t).split()):
                raise WorkstationError("a root topic cannot be empty")
        store = TreeStore(project)
        with project.transaction():  # the tree and its roots land together
            tree = store.create(config, tree_id)
            for t in topics:
                tree.add_root(t)
            if perspectives is not None:
                add_perspective_roots(tree, list(perspectives) or None)
        return cls(project, tree=tree, lm=lm)

    def reload(self) -> None:
        """Replay the stored tree again (after a failed write, or another process's changes)."""
        self.tree = self.store.load(self.tree_id)

    @property
    def lm(self) -> LanguageModel:
        if self._lm is None:
            self._lm = make_lm(self.tree.config.lm, self.tree.config.lm_seed)
        return self._lm

    def set_lm(self, spec: str) -> None:
        self._lm = make_lm(spec, self.tree.config.lm_seed)

    def sync(self) -> SyncReport:
        """Bring in the project's images, judgements and pre-marks for this tree (stored as tree
        events; in memory only on a read-only project)."""
        return sync_tree(self.project, self.tree)

    # --- the auditor's decisions ---------------------------------------------------------------------
    def add_root(self, topic: str, perspective: str = "") -> str:
        return self.tree.add_root(topic, perspective)

    def confirm_prompts(self, node_id: str) -> None:
        self.tree.confirm_prompts(node_id)

    def add_prompt(self, node_id: str, text: str, graph: SceneGraph | None = None) -> str:
        """A prompt typed by the auditor; its graph is parsed by the tree's LM when not given."""
        from .provenance import HUMAN_PROVENANCE

        if graph is None:
            g = self.lm.parse_scene_graph(text)
            return self.tree.add_prompt(node_id, text, g.value, HUMAN_PROVENANCE, g.provenance)
        return self.tree.add_prompt(node_id, text, graph, HUMAN_PROVENANCE, HUMAN_PROVENANCE)

    def remove_prompt(self, prompt_id: str) -> None:
        self.tree.remove_prompt(prompt_id)

    def set_graph(self, prompt_id: str, graph: SceneGraph) -> None:
        """The auditor's correction of a prompt's scene graph (before its failure location)."""
        if any(loc.prompt_id == prompt_id for loc in self.tree.locations.values()):
            raise WorkstationError(f"prompt {prompt_id} is being located already; its graph is fixed")
        self.tree.set_prompt_graph(prompt_id, graph)

    def accept(self, proposal_id: str, text: str | None = None) -> str | None:
        """Accept a proposed topic (with a new text: edited); returns the new child node."""
        p = self._proposal(proposal_id)
        if text is not None and " ".join(text.split()) and " ".join(text.split()) != p.text:
            return self.tree.decide_proposal(proposal_id, EDITED, text)
        return self.tree.decide_proposal(proposal_id, ACCEPTED)

    def reject(self, proposal_id: str) -> None:
        self._proposal(proposal_id)
        self.tree.decide_proposal(proposal_id, REJECTED)

    def reorder(self, node_id: str, proposal_ids: Sequence[str]) -> None:
        self.tree.reorder_proposals(node_id, proposal_ids)

    def close_node(self, node_id: str) -> None:
        self.tree.close_node(node_id)

    def _proposal(self, proposal_id: str) -> Any:
        p = self.tree.proposals.get(proposal_id)
        if p is None:
            open_ = [x for x, q in self.tree.proposals.items() if q.state == "proposed"]
            raise WorkstationError(f"no proposal {proposal_id!r} in tree {self.tree_id}"
                                   + (f"; open proposals: {', '.join(open_)}" if open_ else ""))
        return p

    def label(self, image_id: str, value: str | None, annotator: str, *, notes: str | None = None,
              source: str = "cli") -> None:
        """A human judgement: a label event (committed) and then the tree's label event."""
        if image_id not in self.tree.images:
            raise WorkstationError(f"no image {image_id!r} in tree {self.tree_id}")
        v = None if value is None else self._scheme().validate(value)
        self.project.labels.add(TASK, "image", image_id, annotator, v, notes=notes, source=source)
        from .link import sync_labels

        sync_labels(self.project, self.tree)  # what counts is the label selection's (several annotators)

    def import_labels(self, rows: Iterable[tuple[str, str, str, str | None]], *, source: str = "import") -> int:
        """Many judgements (image id, value, annotator, notes) in one transaction of label events,
        then applied to the tree."""
        ids, vals, anns, notes = [], [], [], []
        scheme = self._scheme()
        for iid, value, annotator, note in rows:
            if iid not in self.tree.images:
                raise WorkstationError(f"no image {iid!r} in tree {self.tree_id}")
            ids.append(iid)
            vals.append(scheme.validate(value))
            anns.append(annotator)
            notes.append(note)
        if not ids:
            return 0
        self.project.labels.add_bulk(TASK, "image", {"target_id": ids, "value": vals, "annotator": anns,
                                                     "notes": notes}, source=source)
        self.sync()
        return len(ids)

    @staticmethod
    def _scheme() -> Any:
        from .tree import LABEL_SCHEME

        return LABEL_SCHEME

    # --- the automatic steps ---------------------------------------------------------------------------
    def run_automatic(self, kinds: Collection[str] = ("write", "locate", "reflect", "propose"), *,
                      confirm: bool = False, max_rounds: int = 200) -> list[str]:
        """Do the language model's pending actions of these kinds (and confirm written prompts when
        ``confirm``) until none is left; returns what was done, in words."""
        done: list[str] = []
        t = self.tree
        for _ in range(max_rounds):
            for a in t.pending_actions():
                wanted = confirm if a.kind == "confirm_prompts" else _ENGINE_KIND.get(a.kind) in kinds
                said = self._take(a.kind, a.node_id) if wanted else None
                if said is not None:
                    done.append(said)
                    break
            else:
                break
        return done

    def _take(self, kind: str, node_id: str) -> str | None:
        """Do one pending action on a node; what was done, in words (None: nothing came of it)."""
        t = self.tree
        topic = t.nodes[node_id].topic
        if kind == "write_prompts":
            rep = write_prompts(t, node_id, self.lm)
            if not rep.prompt_ids:
                return None
            return (f"wrote {len(rep.prompt_ids)} prompt(s) for '{topic}'"
                    + (f" ({len(rep.dropped)} near-duplicate(s) dropped)" if rep.dropped else ""))
        if kind == "confirm_prompts":
            t.confirm_prompts(node_id)
            return f"confirmed the prompts of '{topic}'"
        if kind == "start_locations":
            started = start_locations(t, node_id, self.lm)
            if started:
                return f"started failure location of {len(started)} bug prompt(s) of '{topic}'"
            reflect(t, node_id, self.lm)
            return f"no bug of '{topic}' could be located; reflected on its records"
        if kind == "reflect":
            reflect(t, node_id, self.lm)
            return f"reflected on the failures of '{topic}'"
        if kind == "propose_topics":
            ids = propose_topics(t, node_id, self.lm)
            return f"proposed {len(ids)} child topic(s) of '{topic}'" if ids else None
        return None

    def start_location(self, node_id: str, prompt_id: str) -> str:
        """Start failure location of one bug prompt (parsing its graph first when it has none)."""
        p = self.tree.prompts.get(prompt_id)
        if p is None or p.node_id != node_id:
            raise WorkstationError(f"prompt {prompt_id!r} is not a prompt of node {node_id!r}")
        if p.graph is None:
            g = self.lm.parse_scene_graph(p.text)
            self.tree.set_prompt_graph(prompt_id, g.value, g.provenance)
        return self.tree.start_location(node_id, prompt_id)

    # --- images ----------------------------------------------------------------------------------------
    def pending_images(self) -> int:
        return sum(r.count for r in self.tree.generation_requests())

    def generation_job_ids(self) -> list[str]:
        """The project's generation jobs made for this tree (oldest first)."""
        prefix = prompt_prefix(self.tree_id)
        return [j["job_id"] for j in self.project.jobs.all()
                if j["kind"] == "generate" and isinstance(j.get("spec"), dict)
                and str(j["spec"].get("run_id", "")).startswith(prefix)]

    def _collect_unfinished(self, live: Collection[str]) -> int:
        """Ingest what earlier, unfinished generation jobs of this tree left (the worker of a killed
        process may have gone on), and mark them superseded; returns the samples ingested."""
        from ...jobs.ingest import ingest_pending
        from ...jobs.progress import CANCELLED, DONE
        from ...jobs.runner import request_cancel
        from ...jobs.spec import JobPaths, load_spec

        n = 0
        mine = set(self.generation_job_ids())
        for j in self.project.jobs.all():
            if j["job_id"] not in mine or j["job_id"] in live or j["status"] in (DONE, CANCELLED):
                continue
            try:
                paths = JobPaths(self.project.folder, j["job_id"])
            except WorkstationError:  # a row whose id names no job folder (from an old merge)
                continue
            if not paths.spec.is_file():
                continue
            request_cancel(self.project.folder, j["job_id"])
            n += ingest_pending(self.project, paths, load_spec(paths)).samples
            self.project.jobs.record(j["job_id"], "generate", j["spec"], status=CANCELLED, done=j["done"],
                                     total=j["total"], message="superseded: the tree asked for its remaining images "
                                                              "in a new job")
        return n

    def create_generation_jobs(self, *, generator: str | None = None, model: str | None = None,
                               params: dict[str, Any] | None = None, size: int = 256, batch_size: int = 8,
                               live: Collection[str] = ()) -> list[Any]:
        """Generation jobs for the images the tree asks for (one per set of seeds); a job already
        stored for the same request is returned to be resumed. ``live``: jobs this process
        has queued or running (left alone)."""
        from ...jobs.spec import PROCEDURAL, create_generate_job

        self._collect_unfinished(live)
        self.sync()
        reqs = self.tree.generation_requests()
        if not reqs:
            return []
        gen = generator or PROCEDURAL
        prm = dict(params or {})
        if gen == PROCEDURAL:
            prm.setdefault("width", size)
            prm.setdefault("height", size)
        groups: dict[tuple[int, ...], list[str]] = {}
        for r in reqs:
            groups.setdefault(seeds_of(r), []).append(r.owner)
        specs = []
        for seeds, owner_ids in sorted(groups.items()):
            prompts = request_prompts(self.tree, owner_ids)
            blob = json.dumps({"g": gen, "m": model, "p": prm, "s": list(seeds), "c": prompts.content_hash()},
                              sort_keys=True, default=str)
            run_id = f"{prompt_prefix(self.tree_id)}{hashlib.sha256(blob.encode()).hexdigest()[:10]}"
            specs.append(create_generate_job(self.project, prompts, generator=gen, model=model, params=prm,
                                             seeds=list(seeds), run_id=run_id, batch_size=batch_size,
                                             suite=f"dyeval:{self.tree_id}"))
        return specs

    def _discard_failed(self, job_ids: Sequence[str], first: str, message: str) -> str:
        """Generation jobs of this tree that failed (a full disk): their folders (inputs, logs,
        chunks) and their records go, and a run folder no sample names. The images a finished
        batch made are samples of the project already and stay; the next step asks for the rest
        in a new job. Returns the step's one-line error."""
        from ...jobs.spec import JobPaths
        from ...util.paths import remove_tree_inside

        folder = Path(self.project.folder)
        run_of = {j["job_id"]: str((j.get("spec") or {}).get("run_id") or "") for j in self.project.jobs.all()
                  if isinstance(j.get("spec"), dict)}
        left: list[str] = []
        for job_id in job_ids:
            try:  # the folder first: it frees the space the record's removal may need
                remove_tree_inside(folder / "jobs", JobPaths(folder, job_id).dir)
            except (OSError, WorkstationError):
                left.append(f"jobs/{job_id}")
            try:
                with self.project.transaction():
                    self.project.jobs.remove(job_id)
            except Exception:  # noqa: BLE001 - the database cannot be written either: said below
                left.append(f"the record of {job_id}")
            rid = run_of.get(job_id, "")
            run_dir = folder / "images" / rid
            if rid and rid not in self.project.samples.run_ids() and run_dir.is_dir() and not run_dir.is_symlink():
                try:
                    run_dir.rmdir()  # empty: a failed batch leaves no image behind
                except OSError:
                    pass
        jobs_dir = folder / "jobs"
        try:
            if jobs_dir.is_dir() and not jobs_dir.is_symlink() and not any(jobs_dir.iterdir()):
                jobs_dir.rmdir()
        except OSError:
            pass
        cause = " ".join(str(message).split(";")[0].replace(f"{folder}{os.sep}", "").split())
        cause = cause if len(cause) <= 120 else cause[:119] + "…"
        if left:
            return f"generation job {first} failed ({cause}); could not remove {left[0]}: remove it, then step again"
        return f"generation job {first} failed ({cause}); the job was removed: run the step again (made images are kept)"

    def render_inline(self, *, size: int = 256, source: str = "demo") -> int:
        """Draw the images the tree asks for with the procedural renderer in this process (no
        worker: the demo), store them as samples of one new run and add them to the tree."""
        from ...dataset import Dataset, Detections, Samples
        from ...jobs.chunks import write_png
        from ...jobs.spec import image_path_for, sample_id_for
        from ...jobs.spec import prompt_row as row_of
        from .render import render_demo_row

        reqs = self.tree.generation_requests()
        if not reqs:
            return 0
        owner_ids = [r.owner for r in reqs]
        prompts = request_prompts(self.tree, owner_ids)
        k = sum(1 for r in self.project.samples.run_ids() if r.startswith(prompt_prefix(self.tree_id)))
        run_id = f"{prompt_prefix(self.tree_id)}inline{k + 1}"
        rows: dict[str, list[Any]] = {c: [] for c in ("sid", "pid", "seed", "path")}
        truths = []
        try:
            for i, r in enumerate(reqs):
                row = row_of(prompts, i)
                for seed in seeds_of(r):
                    img, truth = render_demo_row(row, seed, size=size)
                    path = image_path_for(run_id, row["prompt_id"], seed)
                    write_png(self.project.folder, path, img)
                    rows["sid"].append(sample_id_for(run_id, row["prompt_id"], seed))
                    rows["pid"].append(row["prompt_id"])
                    rows["seed"].append(seed)
                    rows["path"].append(path)
                    truths.append(json.dumps(truth, sort_keys=True))
            samples = Samples.build(rows["sid"], run_id, rows["pid"], rows["seed"], float(size), float(size),
                                    rows["path"])
            with self.project.transaction():
                self.project.samples.add_prompts(prompts)
                self.project.samples.add_run(run_id, method="demo_procedural", model={"generator": "procedural"},
                                             params={"width": size, "height": size, "renderer": "dyeval.render_demo_row"},
                                             source=source)
                self.project.samples.add_dataset(Dataset(samples, Detections.empty(), prompts), truth=truths)
        except BaseException:  # images of a run that was not stored are not left behind
            for rel in rows["path"]:
                (self.project.folder / rel).unlink(missing_ok=True)
            try:
                (self.project.folder / "images" / run_id).rmdir()
            except OSError:  # not made, or not empty
                pass
            raise
        self.sync()
        return len(truths)

    def score_job(self, *, batch_size: int = 16) -> Any:
        """A score job of the pre-mark scorer over this tree's images that have no score yet (None
        when pre-marks are off, no model folder is configured, or nothing lacks a score)."""
        from ...jobs.spec import create_score_job

        cfg = self.tree.config
        if cfg.premark_threshold is None or not cfg.premark_model or not self.tree.images:
            return None
        from .link import premark_scores

        _scorer, have = premark_scores(self.project, self.tree)
        missing = [i for i in self.tree.images if i not in have]
        if not missing:
            return None
        runs = sorted({r[0] for r in self.project.con.execute(
            "SELECT DISTINCT run_id FROM samples WHERE sample_id IN (SELECT unnest(?))", [missing]).fetchall()})
        return create_score_job(self.project, scorer=cfg.premark_scorer, model=cfg.premark_model, method="dyeval",
                                runs=runs, batch_size=batch_size)

    def run_jobs(self, specs: Sequence[Any], on_progress: Callable[[Any], None] | None = None) -> list[Any]:
        """Run stored jobs to their end in worker processes (the command line's way), then bring
        their images / scores into the tree."""
        from ...jobs.runner import run_job

        runs = [run_job(self.project, s.job_id, on_progress) for s in specs]
        self.sync()
        return runs

    # --- one step --------------------------------------------------------------------------------------
    def step(self, kinds: Collection[str] = STEP_KINDS, *, confirm: bool = False, run: bool = True,
             generator: str | None = None, model: str | None = None, params: dict[str, Any] | None = None,
             size: int = 256, on_progress: Callable[[Any], None] | None = None,
             max_rounds: int = 50) -> StepReport:
        """Take every automatic step of these kinds the tree allows now, in order, until it waits
        for the auditor or the judges; jobs are run to their end when ``run``."""
        unknown = sorted(set(kinds) - set(STEP_KINDS))
        if unknown:
            raise WorkstationError(f"unknown step {unknown[0]!r}; steps: {', '.join(STEP_KINDS)}")
        rep = StepReport()
        rep.sync += self.sync()
        for _ in range(max_rounds):
            progressed = False
            done = self.run_automatic(kinds, confirm=confirm)
            rep.done.extend(done)
            progressed |= bool(done)
            if "generate" in kinds and self.tree.generation_requests():
                specs = self.create_generation_jobs(generator=generator, model=model, params=params, size=size)
                rep.jobs.extend(s.job_id for s in specs)
                if specs and run:
                    before = len(self.tree.images)
                    runs = self.run_jobs(specs, on_progress)
                    for r in runs:
                        if r.status == "failed":
                            raise WorkstationError(self._discard_failed(
                                [x.job_id for x in runs if x.status == "failed"], r.job_id, r.message))
                        if r.status != "done":
                            raise WorkstationError(f"generation job {r.job_id} {r.status}: {r.message}")
                    rep.done.append(f"generated {len(self.tree.images) - before} image(s)")
                    progressed |= len(self.tree.images) > before
            if "score" in kinds and run:
                sj = self.score_job()
                if sj is not None:
                    rep.jobs.append(sj.job_id)
                    r = self.run_jobs([sj], on_progress)[0]
                    if r.status != "done":
                        raise WorkstationError(f"score job {r.job_id} {r.status}: {r.message}")
                    rep.done.append("scored the new images for pre-marks")
            s = self.sync()
            rep.sync += s
            progressed |= bool(s.changed)
            if not progressed or not run:
                break
        rep.next = self.next_actions()
        return rep

    # --- what next ------------------------------------------------------------------------------------
    def next_actions(self) -> list[NextAction]:
        """What the tree waits for, breadth-first, in words (generation and judging summed)."""
        t = self.tree
        out: list[NextAction] = []
        gen: dict[str, int] = {}
        for r in t.generation_requests():
            gen[r.node_id] = gen.get(r.node_id, 0) + r.count
        judge: dict[str, tuple[int, int]] = {}
        for j in t.judging_queue():
            k0, pm = judge.get(j.node_id, (0, 0))
            judge[j.node_id] = (k0 + 1, pm + int(j.premark_fail))
        seen: set[tuple[str, str]] = set()
        for a in t.pending_actions():
            if (a.kind, a.node_id) in seen:
                continue
            seen.add((a.kind, a.node_id))
            topic = f"'{t.nodes[a.node_id].topic}'"
            n = t.nodes[a.node_id]
            if a.kind == "write_prompts":
                out.append(NextAction("write", a.node_id, "engine", f"write {n.n_i} prompts for {topic}", n.n_i))
            elif a.kind == "confirm_prompts":
                k = len(n.prompt_ids)
                out.append(NextAction("confirm", a.node_id, "auditor",
                                      f"review the {k} prompt(s) of {topic} (edit, drop, add), then confirm them "
                                      "for generation", k))
            elif a.kind == "generate":
                k = gen.get(a.node_id, 0)
                if k:
                    out.append(NextAction("generate", a.node_id, "jobs", f"generate {k} image(s) for {topic}", k))
            elif a.kind == "judge":
                k, pm = judge.get(a.node_id, (0, 0))
                if k:
                    extra = f", {pm} pre-marked FAIL by CLIPScore" if pm else ""
                    out.append(NextAction("judge", a.node_id, "judge",
                                          f"judge {k} image(s) of {topic} PASS / FAIL{extra}", k))
            elif a.kind == "start_locations":
                out.append(NextAction("locate", a.node_id, "engine",
                                      f"locate the failures of {len(a.detail)} bug prompt(s) of {topic} (check "
                                      "their scene graphs first)", len(a.detail), a.detail))
            elif a.kind == "reflect":
                out.append(NextAction("reflect", a.node_id, "engine", f"reflect on the failures of {topic}"))
            elif a.kind == "propose_topics":
                out.append(NextAction("propose", a.node_id, "engine", f"propose {t.config.n_t} child topics of {topic}",
                                      t.config.n_t))
            elif a.kind == "decide_proposals":
                names = ", ".join(f"{p} '{t.proposals[p].text}'" for p in a.detail)
                out.append(NextAction("decide", a.node_id, "auditor",
                                      f"accept, edit, reorder or reject the proposed topics of {topic}: {names}",
                                      len(a.detail), a.detail))
        return out
