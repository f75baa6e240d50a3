"""The ``detect`` job kind: primary detector on each image and its perturbed copies, secondary
detectors on the originals; one item is one sample."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..types import WorkstationError
from .kinds import JobKind, LogFn
from .spec import SAMPLE_COLUMNS, write_table

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Project
    from .ingest import IngestResult
    from .progress import Progress
    from .spec import JobPaths, JobSpec


class DetectKind(JobKind):
    name = "detect"
    unit = "sample"

    def describe(self, spec: "JobSpec") -> str:
        names = [spec.detector.get("name", "?")] + [s.get("name", "?") for s in spec.secondary]
        what = f"detect {' + '.join(names)} · {len(spec.perturbations)} perturbation(s)"
        if spec.runs:
            what += f" · runs {', '.join(spec.runs)}"
        return what

    def prepare(self, project: "Project", paths: "JobPaths", spec: "JobSpec") -> str:
        """The samples to look at (with images on disk), listed into the job's inputs."""
        note = ""
        where = "WHERE coalesce(s.image_path, '') <> ''"
        params: list[Any] = []
        if spec.runs:
            where += " AND s.run_id IN (SELECT unnest(?))"
            params.append(list(spec.runs))
        rows = project.con.execute(
            "SELECT s.sample_id, s.run_id, s.image_path, p.entities, s.width, s.height "
            f"FROM samples s JOIN prompts p USING (prompt_id) {where} ORDER BY s.ord", params).fetchall()
        missing = [r for r in rows if not (project.folder / r[2]).is_file()]
        if missing:
            note = (f"{len(missing)} sample(s) have no image file in the project (e.g. {missing[0][2]}); "
                    "they are left out")
            rows = [r for r in rows if (project.folder / r[2]).is_file()]
        if not rows:
            raise WorkstationError("no samples with images to run the detectors on"
                                   + (f" in run(s) {', '.join(spec.runs)}" if spec.runs else "")
                                   + "; generate or import images first")
        write_table(paths.inputs, {c: [r[i] for r in rows] for i, c in enumerate(SAMPLE_COLUMNS)})
        paths.skip.write_text("", encoding="utf-8")
        return note

    def run(self, paths: "JobPaths", spec: "JobSpec", say: LogFn, delay: float) -> Iterator["Progress"]:
        from .work import iter_detect

        return iter_detect(paths, spec, say, delay)

    def ingest(self, project: "Project", paths: "JobPaths", spec: "JobSpec", cols: dict[str, list[Any]],
               items: list[str], src_root: Path | None) -> "IngestResult":
        from .ingest import ingest_detect

        return ingest_detect(project, spec, cols, items)


KIND = DetectKind()
