"""The ``score`` job kind: score images against texts with a scorer backend (CLIPScore, PickScore,
VQA, ...); one item is one sample, scored against its prompt's ``attrs["score_text"]`` when the
method set one (ProtoBias scores both images of a triplet against T), else the prompt's text.

Spec options: ``{"scorer": {"name", "model", "options"}, "runs": [...], "method": NAME}`` — the
samples of those runs (every run when empty) whose prompt belongs to that method (any when
empty). Scores land in the project's ``scores`` table under the scorer's id: its name and the
content hash of its weights (``clipscore@3f2a…``), so two models never mix.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..types import WorkstationError
from .kinds import JobKind, LogFn
from .spec import write_table

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Project
    from .ingest import IngestResult
    from .progress import Progress
    from .spec import JobPaths, JobSpec

INPUT_COLUMNS = ("sample_id", "image_path", "text", "entities")


def scorer_id(name: str, provenance: dict[str, Any]) -> str:
    """How a scorer is named in every table: its registry name and the first 12 hex digits of the
    sha256 of its weights (no hash for a scorer without weights)."""
    h = str(provenance.get("weights_sha256") or "")
    return f"{name}@{h[:12]}" if h and h != "none" else name


class ScoreKind(JobKind):
    name = "score"
    unit = "image"

    def describe(self, spec: "JobSpec") -> str:
        s = spec.options.get("scorer", {})
        what = f"score {s.get('name', '?')}" + (f" {Path(str(s['model'])).name}" if s.get("model") else "")
        if spec.options.get("method"):
            what += f" · {spec.options['method']} samples"
        if spec.options.get("runs"):
            what += f" · runs {', '.join(spec.options['runs'])}"
        return what

    def check(self, spec: "JobSpec") -> None:
        from ..scoring.registry import SCORERS

        s = spec.options.get("scorer") or {}
        name = str(s.get("name") or "")
        if not name:
            raise WorkstationError("a score job needs a scorer name (e.g. clipscore)")
        entry = SCORERS.entry(name)  # a clear error listing the scorers
        model = s.get("model")
        if name != "fake" and not model:
            raise WorkstationError(f"scorer {entry.name!r} needs a model: a local folder or a model id in the local "
                                   "Hugging Face cache")
        if model and ("/" in str(model) or "\\" in str(model) or Path(str(model)).exists()):
            folder = Path(str(model)).expanduser()
            if folder.exists() and not folder.is_dir():
                raise WorkstationError(f"scorer model {folder} is a file; give the folder that holds the model")
            if not folder.is_dir() and (folder.is_absolute() or str(model).startswith((".", "~"))):
                raise WorkstationError(f"scorer model folder not found: {folder}")
        if model and name != "fake":
            # the model folder is checked now (config.json, safetensors weights, tokenizer and image
            # processor: the scorer's constructor reads no weights and imports no model library), so
            # that a folder that cannot serve is refused before a job and its folder exist
            from ..scoring.registry import create_scorer

            kwargs = {k: v for k, v in dict(s.get("options") or {}).items() if k in ("processor", "dtype")}
            try:
                create_scorer(entry.name, model=str(model), **kwargs)
            except (TypeError, ValueError) as e:
                raise WorkstationError(f"scorer {entry.name!r}: {' '.join(str(e).split())[:200]}") from None

    @staticmethod
    def _where(spec: "JobSpec") -> tuple[str, list[Any]]:
        """The condition on samples ``s`` joined with prompts ``p`` that picks the job's samples
        with an image path (of its runs and its method when given), and its parameters."""
        conds = ["coalesce(s.image_path, '') <> ''"]
        params: list[Any] = []
        runs = spec.options.get("runs") or []
        if runs:
            conds.append("s.run_id IN (SELECT unnest(?))")
            params.append(list(runs))
        method = spec.options.get("method") or ""
        if method:
            conds.append("p.method = ?")
            params.append(method)
        return " AND ".join(conds), params

    @staticmethod
    def candidates(project: "Project", spec: "JobSpec") -> list[Any]:
        """(sample id, image path, text, attrs, entities) of the samples the job scores whose image
        file is in the project; a WorkstationError when there is none (checked before a job exists
        too: `create_score_job`)."""
        where, params = ScoreKind._where(spec)
        runs, method = spec.options.get("runs") or [], spec.options.get("method") or ""
        rows = project.con.execute(
            "SELECT s.sample_id, s.image_path, p.text, p.attrs, p.entities FROM samples s JOIN prompts p "
            f"USING (prompt_id) WHERE {where} ORDER BY s.ord", params).fetchall()
        rows = [r for r in rows if (project.folder / r[1]).is_file()]
        if not rows:
            raise WorkstationError("no samples with images to score" + (f" of method {method}" if method else "")
                                   + (f" in run(s) {', '.join(runs)}" if runs else "") + "; generate or import images first")
        return rows

    def prepare(self, project: "Project", paths: "JobPaths", spec: "JobSpec") -> str:
        where, params = self._where(spec)
        n_all = project.con.execute(
            f"SELECT count(*) FROM samples s JOIN prompts p USING (prompt_id) WHERE {where}", params).fetchone()
        rows = self.candidates(project, spec)
        note = ""
        missing = int(n_all[0] if n_all else 0) - len(rows)
        if missing:
            note = f"{missing} sample(s) have no image file in the project; they are left out"
        texts = []
        for _sid, _path, text, attrs, _ents in rows:
            a = json.loads(attrs) if attrs else {}
            texts.append(str(a.get("score_text") or text or ""))
        write_table(paths.inputs, {"sample_id": [r[0] for r in rows], "image_path": [r[1] for r in rows],
                                   "text": texts, "entities": [list(r[4] or []) for r in rows]})
        paths.skip.write_text("", encoding="utf-8")
        return note

    def run(self, paths: "JobPaths", spec: "JobSpec", say: LogFn, delay: float) -> Iterator["Progress"]:
        import time

        from ..scoring.registry import create_scorer
        from ..scoring.run import ScoreItem, iter_score_batches
        from .chunks import finished_keys, read_image, write_chunk
        from .progress import STARTING, RateMeter
        from .spec import read_table
        from .work import write_provenance

        inputs = read_table(paths.inputs)
        items = [ScoreItem(str(k), str(p), str(t), tuple(e or ())) for k, p, t, e in
                 zip(inputs["sample_id"], inputs["image_path"], inputs["text"], inputs["entities"])]
        shard = spec.shard_obj
        items = [it for it in items if shard.owns(it.key)]
        done = finished_keys(paths)
        meter = RateMeter(len(items), sum(1 for it in items if it.key in done))
        if meter.done == len(items):
            say(f"nothing to score: all {len(items)} image(s) are done")
            yield meter.progress("all items already done")
            return
        s = dict(spec.options.get("scorer") or {})
        yield meter.progress(f"loading scorer {s.get('name')}", state=STARTING)
        kwargs = dict(s.get("options") or {})
        if s.get("model"):
            kwargs["model"] = s["model"]
        kwargs.setdefault("batch_size", int(spec.batch_size))
        scorer = create_scorer(str(s.get("name")), **kwargs)
        load = getattr(scorer, "load", None)
        if callable(load):
            load()
        prov = scorer.provenance()
        sid = scorer_id(str(s.get("name")), prov)
        write_provenance(paths, spec, dict(prov, scorer_id=sid), include_torch=True)
        say(f"scoring {len(items) - meter.done} image(s) with {sid}")
        meter.start()
        for batch in iter_score_batches(scorer, items, spec.batch_size,
                                        load_image=lambda p: read_image(paths.project / str(p)), skip_keys=done,
                                        image_errors="record"):
            cols = batch.columns()
            texts = {it.key: it.text for it in items}
            write_chunk(paths, "score", {"sample_id": list(cols["key"]), "scorer": [sid] * len(batch),
                                         "text": [texts[k] for k in cols["key"]], "score": list(cols["score"]),
                                         "detail": list(cols["detail"])}, list(cols["key"]))
            for n in batch.notes:
                say(n)
            meter.add(len(batch))
            yield meter.progress(batch.notes[-1] if batch.notes else f"batch of {len(batch)}",
                                 batch_size=batch.batch_size)
            if delay:
                time.sleep(delay)

    def ingest(self, project: "Project", paths: "JobPaths", spec: "JobSpec", cols: dict[str, list[Any]],
               items: list[str], src_root: Path | None) -> "IngestResult":
        from .ingest import IngestResult

        res = IngestResult(chunks=1, items=len(items))
        if not cols.get("sample_id"):
            return res
        present = {r[0] for r in project.con.execute(
            "SELECT sample_id FROM samples WHERE sample_id IN (SELECT unnest(?))", [list(cols["sample_id"])]).fetchall()}
        keep = [i for i, s in enumerate(cols["sample_id"]) if s in present]
        res.skipped = len(cols["sample_id"]) - len(keep)
        if keep:
            project.scores.add({k: [cols[k][i] for i in keep] for k in ("sample_id", "scorer", "text", "score", "detail")})
            res.scores = len(keep)
        return res


KIND = ScoreKind()
