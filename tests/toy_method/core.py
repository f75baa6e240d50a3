"""A fifth evaluation method that lives only in the tests: "Lamp" — is each lamp prompt lit?

Each prompt of the method names a lamp and a brightness level (0-100) in its ``attrs``, and its
one image (a sample) is drawn at that grey level; the automated outcome says LIT when the level reaches the config's threshold, DARK below it, with a
confidence that grows with the distance from the threshold; the annotator labels each prompt
LIT or DARK. It has its own table (``lamp_outcomes``), its own label scheme, a report section and
one command of its own (``lamp count``). Nothing outside ``tests/`` names it: it is registered at
test time (`tests.toy_method.registered`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from workstation.command_base import Command, add_project_arg, reading_project
from workstation.dataset import Prompts
from workstation.evaluation.base import AuditSource, LabelScheme, Method, ReportSection
from workstation.types import InputError, WorkstationError

NAME = "lamp"
VERDICTS = ("LIT", "DARK")
LABEL_SCHEME = LabelScheme(task=f"{NAME}.sample", target="sample", values=("LIT", "DARK"), keys=("L", "D"),
                           titles=("lit", "dark"), title="Is the lamp lit?")
MIGRATIONS = [[f"""CREATE TABLE IF NOT EXISTS {NAME}_outcomes (
    eval_id INTEGER, sample_id VARCHAR, verdict TINYINT, conf DOUBLE, PRIMARY KEY (eval_id, sample_id))"""]]


@dataclass(frozen=True)
class LampConfig:
    threshold: float = 50.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def content_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]

    def validate(self) -> None:
        if not 0.0 <= float(self.threshold) <= 100.0:
            raise WorkstationError(f"lamp config: threshold must be from 0 to 100, got {self.threshold}")


@dataclass
class LampData:
    ids: np.ndarray  # object (str): sample ids, one image per prompt
    texts: np.ndarray  # object (str)
    level: np.ndarray  # float64

    def __len__(self) -> int:
        return len(self.ids)


@dataclass
class LampResults:
    ids: np.ndarray
    verdict: np.ndarray  # int8 codes into VERDICTS
    conf: np.ndarray  # float64 in [0, 1]
    item_kind: str = "sample"
    verdict_names: tuple[str, ...] = VERDICTS

    def __len__(self) -> int:
        return len(self.ids)

    def columns(self) -> dict[str, np.ndarray]:
        return {"sample_id": self.ids, "verdict": self.verdict, "conf": self.conf}


def lamp_suite(n: int = 12, seed: int = 0) -> Prompts:
    rng = np.random.default_rng(seed)
    levels = rng.integers(0, 101, n)
    colours = ("red", "blue", "green", "white")
    ids = [f"{NAME}-{i:03d}" for i in range(n)]
    texts = [f"a {colours[i % 4]} lamp at {int(v)} percent" for i, v in enumerate(levels.tolist())]
    return Prompts.build(ids, texts, method=NAME, suite=f"{NAME}@{seed}", entities=[("lamp",)] * n,
                         attrs=[{"level": int(v)} for v in levels.tolist()])


class LampMethod:
    name = NAME
    title = "Lamp (a method of the tests)"
    label_schemes = (LABEL_SCHEME,)
    audit_source = AuditSource("tests.toy_method.audit_source", title="Lamp: the threshold's outcomes",
                               description="the threshold's LIT / DARK against human LIT / DARK")

    def default_config(self) -> LampConfig:
        return LampConfig()

    def config_from_dict(self, d: Mapping[str, Any]) -> LampConfig:
        cfg = LampConfig(**{k: float(v) for k, v in d.items()})
        cfg.validate()
        return cfg

    def migrations(self) -> list[list[str]]:
        return MIGRATIONS

    def load(self, project: Any) -> LampData:
        ds = project.samples.load_dataset(method=NAME)
        p = ds.prompts
        row = {pid: i for i, pid in enumerate(p.prompt_id.tolist())}
        at = np.asarray([row[pid] for pid in ds.samples.prompt_id.tolist()], np.int64)
        return LampData(np.asarray(ds.samples.sample_id, dtype=object), np.asarray(p.text, dtype=object)[at],
                        np.asarray([float(p.attrs[i]["level"]) for i in at.tolist()], np.float64))

    def evaluate(self, data: LampData, cfg: LampConfig) -> LampResults:
        lit = data.level >= cfg.threshold
        conf = np.clip(np.abs(data.level - cfg.threshold) / 50.0, 0.0, 1.0)
        return LampResults(data.ids, np.where(lit, 0, 1).astype(np.int8), conf)

    def metrics(self, data: LampData, results: LampResults) -> dict[str, list[dict[str, Any]]]:
        return {"outcomes": [{"outcome": v, "n": int((results.verdict == i).sum())} for i, v in enumerate(VERDICTS)]}

    def save_results(self, project: Any, eval_id: int, data: LampData, results: LampResults) -> None:
        project.ensure_schema(NAME, MIGRATIONS)
        project.con.execute(f"DELETE FROM {NAME}_outcomes WHERE eval_id = ?", [eval_id])
        project.con.executemany(f"INSERT INTO {NAME}_outcomes VALUES (?, ?, ?, ?)",
                                [[eval_id, str(i), int(v), float(c)]
                                 for i, v, c in zip(results.ids.tolist(), results.verdict.tolist(),
                                                    results.conf.tolist())])

    def report_section(self, project: Any, out_dir: Path, **options: Any) -> ReportSection:
        from workstation.evaluation.run import config_of

        data = self.load(project)
        _eid, cfg = config_of(project, self, None)
        tables = self.metrics(data, self.evaluate(data, cfg))
        out = Path(out_dir)
        (out / "tables").mkdir(parents=True, exist_ok=True)
        rows = tables["outcomes"]
        (out / "tables" / "outcomes.csv").write_text(
            "outcome,n\n" + "".join(f"{r['outcome']},{r['n']}\n" for r in rows), encoding="utf-8")
        html = "<p>" + ", ".join(f"{r['outcome']}: {r['n']}" for r in rows) + "</p>"
        return ReportSection(NAME, self.title, html=html, tables=tables, meta={"config_hash": cfg.content_hash()})

    def has_data(self, project: Any) -> bool:
        return bool(project.samples.prompt_methods().get(NAME))

    def suite(self, **options: Any) -> Prompts:
        return lamp_suite(**options)

    def load_config_file(self, path: Path) -> LampConfig:
        from workstation.util.safeyaml import load_yaml

        raw = load_yaml(Path(path), what="lamp config")
        if not isinstance(raw, dict):
            raise InputError(Path(path), "expected a mapping of lamp settings", 1)
        try:
            return self.config_from_dict(raw)
        except (TypeError, ValueError, WorkstationError) as e:
            raise InputError(Path(path), str(e)) from None

    def summary_lines(self, data: LampData, results: LampResults, eval_id: int, cfg: LampConfig) -> list[str]:
        lit = int((results.verdict == 0).sum())
        return [f"{len(results)} lamp prompt(s) evaluated with config v{eval_id}: {lit} lit"]

    def commands(self) -> Sequence[Command]:
        return (Command(NAME, register_command),)

    def build_demo(self, project: Any, *, small: bool = False, progress: Any = None,
                   workers: int | None = None) -> dict[str, Any]:
        from workstation.dataset import Dataset, Detections, Samples
        from workstation.evaluation.run import evaluate_and_store
        from workstation.jobs.chunks import encode_png, write_bytes_atomic
        from workstation.jobs.spec import image_path_for, sample_id_for

        prompts = lamp_suite(12 if small else 40)
        run_id, size = f"{NAME}-demo", 32
        ids = prompts.prompt_id.tolist()
        paths = [image_path_for(run_id, pid, 0) for pid in ids]
        for rel, attrs in zip(paths, prompts.attrs):
            grey = np.full((size, size, 3), int(round(attrs["level"] * 2.55)), np.uint8)
            write_bytes_atomic(project.folder / rel, encode_png(grey))
        samples = Samples.build([sample_id_for(run_id, pid, 0) for pid in ids], run_id, ids, seed=0,
                                width=float(size), height=float(size), image_path=paths)
        with project.transaction():
            project.samples.add_run(run_id, method="lamp_grey", model={"generator": "grey"}, params={"size": size},
                            source="demo")
            project.samples.add_dataset(Dataset(samples, Detections.empty(), prompts))
        eid, results = evaluate_and_store(project, self, note="demo")
        return {"prompts": len(prompts), "eval_id": eid, "lit": int((results.verdict == 0).sum())}


def register_command(sub: Any) -> None:
    p = sub.add_parser(NAME, help="Lamp: count the lamp prompts of a project")
    psub = p.add_subparsers(dest="lamp_command", metavar="ACTION", required=True)
    count = psub.add_parser("count", help="how many lamp prompts the project holds")
    add_project_arg(count)
    count.set_defaults(func=run_count)


def run_count(args: argparse.Namespace) -> int:
    with reading_project(args.project) as project:
        print(f"{project.samples.prompt_methods().get(NAME, 0)} lamp prompt(s)")
    return 0


METHOD: Method = LampMethod()
