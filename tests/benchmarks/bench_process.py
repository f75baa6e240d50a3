"""Benchmark: whole processes, from process start to exit, the project's commands against the
original SpatialBench-UC code on the published run (800 samples).

Set-up (not timed), in a temporary folder: a project made by ``main.py import-sbuc`` from
``../shared/fixtures/spatialbench_uc/sd15_boxdiff``, a SpatialBench-UC label file with 200
labels made as ``tests/core/test_calibration.py`` makes them, imported by ``main.py labels
import``. Then each command runs ``--runs`` times in turn (after one untimed warm-up each), and
the median wall time, CPU time (user + system) and peak resident memory of the process (from
``os.wait4``) are printed:

- ``python main.py evaluate --project P`` (load, check every sample, store the verdict set)
  against ``python bench_process.py original-evaluate``: a small script that runs the original
  ``evaluate_sample`` (``../shared/anchors``, unchanged, recorded detections replayed by its
  harness) over the 800 samples, writes each result as the original's CLI does
  (``per_sample.jsonl``) and its ``compute_metrics`` (``metrics.json``). The original's own CLI
  would also import torch and transformers to stamp their versions and load two detectors.
- ``python main.py calibrate --project P --out F.json`` (the paper's grid) against
  ``python bench_process.py original-calibrate``: the original ``grid_search_calibration``
  (36 combinations) over the same labels, on the run read by the harness, its best parameters
  written to JSON; both JSON files are compared (same best parameters). Its process also imports
  the project's small config / dataset modules (through ``sbuc_original.py``), not the store.

    .venv/bin/python tests/benchmarks/bench_process.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SBUC = ROOT.parent / "shared" / "fixtures" / "spatialbench_uc"
RUN = SBUC / "sd15_boxdiff"
PROMPTS = SBUC / "v1.0.1" / "prompts.jsonl"


# ---------------------------------------------------------------------------------------------
# the small scripts that run the original code (subcommands of this file)
# ---------------------------------------------------------------------------------------------
def original_evaluate(out_dir: Path) -> None:
    from dataclasses import asdict

    sys.path.insert(0, str(ROOT.parent / "shared" / "anchors" / "spatialbench_uc"))
    import harness as H  # type: ignore[import-not-found]

    rows = H.load_run(RUN)
    config = H.E.load_config(RUN / "eval" / "checker_config.yaml")
    det = config.get("detector", {})
    prim = H.Replay("primary", float(det["primary"]["params"]["score_threshold"]))
    sec = H.Replay("secondary", float(det["secondary"]["params"]["box_threshold"]))
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    with open(out_dir / "per_sample.jsonl", "w") as f:
        for sample, image, _ in rows:
            r = H.E.evaluate_sample(sample, image, prim, sec, config)
            results.append(r)
            f.write(json.dumps(asdict(r)) + "\n")
    metrics = H.E.compute_metrics(results)
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2))
    print(f"original: evaluated {len(results)} samples, coverage {metrics['coverage']:.4f}")


def original_calibrate(labels_file: Path, out: Path) -> None:
    sys.path.insert(0, str(HERE))
    import sbuc_original as orig

    H = orig.harness()
    labels = {lab["sample_id"]: lab["human_verdict"] for lab in json.loads(labels_file.read_text())}
    items = [(sample, image) for sample, image, _ in H.load_run(RUN) if sample["sample_id"] in labels]
    best = orig.grid_search_items(items, labels, H.E.load_config(RUN / "eval" / "checker_config.yaml"))
    out.write_text(json.dumps(best))
    print(f"original: best {best}")


# ---------------------------------------------------------------------------------------------
# timing whole processes
# ---------------------------------------------------------------------------------------------
def run_once(cmd: list[str]) -> tuple[float, float, float, int]:
    """(wall s, CPU s, peak RSS MB, exit code) of one process, from its start to its exit."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-2000:]}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, proc.returncode


def compare(label: str, ours: list[str], theirs: list[str], runs: int) -> None:
    for cmd in (ours, theirs):  # warm-up (file cache, bytecode)
        run_once(cmd)
    a: list[tuple[float, float, float, int]] = []
    b: list[tuple[float, float, float, int]] = []
    for _ in range(runs):  # in turn, so that a slower spell of the machine hits both
        a.append(run_once(ours))
        b.append(run_once(theirs))

    def med(xs: list[tuple[float, float, float, int]], k: int) -> float:
        return statistics.median(x[k] for x in xs)

    def line(name: str, xs: list[tuple[float, float, float, int]]) -> str:
        walls = [x[0] for x in xs]
        return (f"  {name:34s} wall {med(xs, 0):6.2f} s median ({min(walls):.2f}-{max(walls):.2f}), "
                f"CPU {med(xs, 1):6.2f} s, peak RSS {med(xs, 2):5.0f} MB")

    print(f"{label} ({runs} runs each, in turn):")
    print(line("project: " + " ".join(ours[2:4]), a))
    print(line("original: " + theirs[2], b))
    ratios = sorted(x[0] / y[0] for x, y in zip(a, b))
    print(f"  wall ratio project / original, run by run: median {statistics.median(ratios):.2f}")


def setup(tmp: Path) -> tuple[Path, Path]:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(HERE))
    import numpy as np
    from bench_calibration import labelled

    from workstation.methods.spatial.sbuc import parse_run
    from workstation.methods.spatial.types import VERDICTS

    project = tmp / "project"
    py = sys.executable
    subprocess.run([py, "main.py", "import-sbuc", str(RUN), "--prompts", str(PROMPTS), "--project", str(project)],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    parsed = parse_run(RUN, PROMPTS)
    assert parsed.config is not None
    rows, human = labelled(parsed.dataset, parsed.config, 200)
    labels = [{"sample_id": str(parsed.dataset.samples.sample_id[i]), "human_verdict": VERDICTS[int(human[i])],
               "notes": "", "timestamp": "2026-01-14T15:39:09.080Z"} for i in np.asarray(rows).tolist()]
    labels_file = tmp / "labels_filled.json"
    labels_file.write_text(json.dumps(labels))
    subprocess.run([py, "main.py", "labels", "import", str(labels_file), "--project", str(project)],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return project, labels_file


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd")
    oe = sub.add_parser("original-evaluate", help="(internal) the original checker over the published run")
    oe.add_argument("out", type=Path)
    oc = sub.add_parser("original-calibrate", help="(internal) the original grid search over a label file")
    oc.add_argument("labels", type=Path)
    oc.add_argument("out", type=Path)
    ap.add_argument("--runs", type=int, default=7, help="timed runs of each command (median reported)")
    args = ap.parse_args(argv)
    if args.cmd == "original-evaluate":
        original_evaluate(args.out)
        return 0
    if args.cmd == "original-calibrate":
        original_calibrate(args.labels, args.out)
        return 0
    if not (RUN / "eval" / "per_sample.jsonl").is_file():
        raise SystemExit(f"published run not found at {RUN} (needs ../shared beside the checkout)")
    py = sys.executable
    me = str(Path(__file__).resolve())
    with tempfile.TemporaryDirectory(prefix="bench_process_") as d:
        tmp = Path(d)
        project, labels_file = setup(tmp)
        print(f"published run: 800 samples, 200 labels; python {sys.version.split()[0]}, {os.cpu_count()} cores")
        compare("evaluate", [py, "main.py", "evaluate", "--project", str(project)],
                [py, me, "original-evaluate", str(tmp / "orig_eval")], args.runs)
        ours_json, theirs_json = tmp / "calibration.json", tmp / "orig_calibration.json"
        compare("calibrate (paper grid, 36 combinations)",
                [py, "main.py", "calibrate", "--project", str(project), "--out", str(ours_json), "--overwrite"],
                [py, me, "original-calibrate", str(labels_file), str(theirs_json)], args.runs)
        ours: dict[str, Any] = json.loads(ours_json.read_text())["best"]["params"]
        theirs: dict[str, Any] = json.loads(theirs_json.read_text())
        same = (ours["margin"] == theirs["margin"] and ours["t_det"] == theirs["detection_score"]
                and ours["tau"] == theirs["confidence_threshold"])
        print(f"  best parameters: project {ours}; original {theirs}; same: {same}")
        if not same:
            raise SystemExit("the project's and the original's calibrations chose different parameters")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
