"""The ``generate`` job kind: images for (prompt, seed) items from a generator backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .kinds import JobKind, LogFn

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Project
    from .ingest import IngestResult
    from .progress import Progress
    from .spec import JobPaths, JobSpec


class GenerateKind(JobKind):
    name = "generate"
    unit = "image"

    def describe(self, spec: "JobSpec") -> str:
        g = spec.generator
        what = f"generate {g.get('name')}" + (f" {g.get('model')}" if g.get("model") else "")
        return what + f" → run {spec.run_id} · {len(spec.seeds)} seed(s)"

    def prepare(self, project: "Project", paths: "JobPaths", spec: "JobSpec") -> str:
        """The skip list: samples of the run the project already holds."""
        rows = project.con.execute("SELECT sample_id FROM samples WHERE run_id = ?", [spec.run_id]).fetchall()
        text = "\n".join(r[0] for r in rows)
        paths.skip.write_text(text + ("\n" if text else ""), encoding="utf-8")
        return ""

    def run(self, paths: "JobPaths", spec: "JobSpec", say: LogFn, delay: float) -> Iterator["Progress"]:
        from .work import iter_generate

        return iter_generate(paths, spec, say, delay)

    def ingest(self, project: "Project", paths: "JobPaths", spec: "JobSpec", cols: dict[str, list[Any]],
               items: list[str], src_root: Path | None) -> "IngestResult":
        from .ingest import ingest_generate

        return ingest_generate(project, paths, spec, cols, src_root)


KIND = GenerateKind()
