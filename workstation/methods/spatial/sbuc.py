"""SpatialBench-UC run folders: parse (with validation) into a Dataset.

A run folder holds `manifest.jsonl` (one generated sample per line), `eval/per_sample.jsonl`
(the checker's output with the recorded detections) and `eval/checker_config.yaml`.
The prompt suite is a separate `prompts.jsonl`. Every problem raises InputError naming the
file and line; nothing is written anywhere by this module.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...dataset import Dataset, Detections, Prompts, Samples
from ...io.jsonl import check_box, check_score, number, read_jsonl, require, require_id
from ...types import PRIMARY, SECONDARY, SOURCES, InputError, WorkstationError
from .config import CheckerConfig
from .data import PromptRows, with_stability
from .types import REASON_CODE, RELATION_CODE, RELATIONS, VERDICT_CODE

# Limits on what a manifest may claim (images are checked against the same limits at import).
MAX_IMAGE_SIDE = 16384  # pixels
MAX_SEED = 2**63 - 1  # seeds are stored as signed 64-bit integers
MAX_PROVENANCE_FILE_BYTES = 1 << 20  # eval/provenance.json (it is stored with the run, capped again)


@dataclass
class RecordedVerdicts:
    """The verdicts a run folder recorded (per sample, aligned with Dataset.samples)."""

    verdict: np.ndarray  # int8
    reason: np.ndarray  # int8
    reason_text: np.ndarray  # object
    conf: np.ndarray  # float64
    c_detection: np.ndarray
    c_geometry: np.ndarray
    c_stability: np.ndarray
    c_agreement: np.ndarray
    delta: np.ndarray  # float64, NaN where not computed
    iou_ab: np.ndarray | None = None  # float64, IoU of the selected boxes, NaN where not computed


@dataclass
class ParsedRun:
    run_id: str
    dataset: Dataset
    recorded: RecordedVerdicts | None
    config: CheckerConfig | None
    meta: dict[str, Any] = field(default_factory=dict)
    manifest_path: Path | None = None
    manifest_lines: dict[str, int] = field(default_factory=dict)  # sample id -> its manifest line
    prompts_path: Path | None = None
    prompt_lines: dict[str, int] = field(default_factory=dict)  # prompt id -> its line


def parse_prompts(path: str | Path, suite: str | None = None) -> Prompts:
    return parse_prompts_with_lines(path, suite)[0]


def parse_prompts_with_lines(path: str | Path, suite: str | None = None) -> tuple[Prompts, dict[str, int]]:
    """The prompts of a SpatialBench-UC prompt file and the line of each prompt id."""
    from ...util.ids import check_id

    path = Path(path)
    if not path.is_file():
        raise InputError(path, "prompt file not found")
    rows = PromptRows()
    seen: dict[str, int] = {}
    for line, obj in read_jsonl(path, "prompt file"):
        pid = require_id(obj, "prompt_id", path, line)
        if pid in seen:
            raise InputError(path, f"duplicate prompt_id {pid!r} (first on line {seen[pid]})", line)
        seen[pid] = line
        rel = require(obj, "relation", path, line, str)
        if rel not in RELATION_CODE:
            raise InputError(path, f"unknown relation {rel!r} (expected one of {', '.join(RELATIONS)})", line)
        a = _object_name(require(obj, "object_a", path, line), path, line, "object_a")
        b = _object_name(require(obj, "object_b", path, line), path, line, "object_b")
        text = require(obj, "prompt", path, line, str)
        if "\x00" in text:
            raise InputError(path, "field 'prompt' holds a NUL character", line)
        c = obj.get("counterfactual") or {}
        twin = c.get("prompt_id", "") if isinstance(c, dict) else ""
        pair_id = obj.get("pair_id", "") or ""
        try:
            twin = check_id(twin, "counterfactual.prompt_id") if twin not in ("", None) else ""
            pair_id = check_id(pair_id, "field 'pair_id'") if pair_id != "" else ""
        except ValueError as e:
            raise InputError(path, str(e), line) from None
        rows.add(pid, text, rel, a, b, twin, pair_id)
    if not rows.ids:
        raise InputError(path, "prompt file has no prompts")
    for pid, c in zip(rows.ids, rows.counterfactual_id):
        if c and c not in seen:
            raise InputError(path, f"counterfactual prompt_id {c!r} of {pid!r} is not in the file", seen[pid])
    return rows.prompts(suite or path.parent.name or path.stem), seen


def _object_name(v: Any, path: object, line: int, key: str) -> str:
    from ...util.ids import check_id

    if isinstance(v, dict):
        v = v.get("coco_label") or v.get("name")
    if not isinstance(v, str) or not v.strip():
        raise InputError(path, f"field '{key}' must be an object name", line)
    try:
        return check_id(v, f"field '{key}'").lower()
    except ValueError as e:
        raise InputError(path, str(e), line) from None


def _reason_code(text: str | None, verdict: str) -> int:
    if verdict != "UNDECIDABLE":
        return 0
    if not text:
        return REASON_CODE["missing"]
    head = text.split(":")[0].split(" ")[0].strip()
    return REASON_CODE.get(head, REASON_CODE["missing"])


def parse_run(run_dir: str | Path, prompts_path: str | Path, run_id: str | None = None) -> ParsedRun:
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise InputError(run_dir, "run folder not found")
    prompts, prompt_lines = parse_prompts_with_lines(prompts_path)
    p_index = {p: i for i, p in enumerate(prompts.prompt_id.tolist())}
    manifest_path = run_dir / "manifest.jsonl"
    per_sample_path = run_dir / "eval" / "per_sample.jsonl"
    cfg_path = run_dir / "eval" / "checker_config.yaml"
    config = CheckerConfig.from_sbuc_yaml(cfg_path) if cfg_path.exists() else None

    # ---- manifest: sample ids, seeds, sizes, image paths --------------------------------
    man: dict[str, dict[str, Any]] = {}
    man_line: dict[str, int] = {}
    meta: dict[str, Any] = {}
    for line, obj in read_jsonl(manifest_path, "manifest"):
        sid = require_id(obj, "sample_id", manifest_path, line)
        if sid in man:
            raise InputError(manifest_path, f"duplicate sample_id {sid!r} (first on line {man_line[sid]})", line)
        pid = require_id(obj, "prompt_id", manifest_path, line)
        if pid not in p_index:
            raise InputError(manifest_path, f"prompt_id {pid!r} is not in the prompt file {prompts_path}", line)
        gp = require(obj, "gen_params", manifest_path, line, dict)
        w = _side(gp.get("width"), manifest_path, line, "gen_params.width")
        h = _side(gp.get("height"), manifest_path, line, "gen_params.height")
        seed = gp.get("seed", obj.get("seed"))
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise InputError(manifest_path, f"gen_params.seed must be a whole number, got {seed!r:.40}", line)
        if not 0 <= seed <= MAX_SEED:
            raise InputError(manifest_path, f"gen_params.seed must be from 0 to 2**63-1, got {seed}", line)
        img = obj.get("image_path", "") or ""
        if not isinstance(img, str):
            raise InputError(manifest_path, f"image_path must be text, got {type(img).__name__}", line)
        if img:
            from ...util.paths import check_relative

            try:
                check_relative(img, "image_path")
            except ValueError as e:
                raise InputError(manifest_path, f"{e} (it must stay inside the run folder)", line) from None
        k = p_index[pid]
        rel = obj.get("relation")
        if rel is not None and (not isinstance(rel, str) or rel not in RELATION_CODE):
            raise InputError(manifest_path, f"unknown relation {rel!r:.60} (expected one of {', '.join(RELATIONS)})",
                             line)
        _agrees_with_prompt(obj, prompts, k, manifest_path, line)
        rid_here = obj.get("run_id") or ""
        if not isinstance(rid_here, str):
            raise InputError(manifest_path, f"run_id must be text, got {type(rid_here).__name__}", line)
        man[sid] = {"prompt_id": pid, "seed": seed, "w": w, "h": h, "image": img, "run_id": rid_here}
        man_line[sid] = line
        if not meta:
            meta = {"model": obj.get("model"), "gen_params": {k: v for k, v in gp.items() if k != "seed"},
                    "code_version": obj.get("code_version")}
    if not man:
        raise InputError(manifest_path, "manifest has no samples")

    first = next(iter(man))
    if not run_id and man[first]["run_id"]:  # the run id of the manifest names the run's image folder
        from ...jobs.spec import check_run_id

        try:
            check_run_id(man[first]["run_id"])
        except WorkstationError as e:
            raise InputError(manifest_path, f"{e}; choose one with --run-id", man_line[first]) from None
    rid = run_id or man[first]["run_id"] or run_dir.name

    # ---- per_sample: recorded detections and verdicts -----------------------------------
    s_cols: dict[str, list[Any]] = {k: [] for k in (
        "sid", "pid", "seed", "rel", "a", "b", "w", "h", "img", "stab", "has2")}
    r_cols: dict[str, list[Any]] = {k: [] for k in (
        "verdict", "reason", "text", "conf", "det", "geom", "stab", "agree", "delta", "iou")}
    det_types: dict[str, str] = {}
    d_cols: dict[str, list[Any]] = {k: [] for k in ("si", "src", "label", "score", "box")}
    seen: dict[str, int] = {}
    for line, obj in read_jsonl(per_sample_path, "per-sample results"):
        P = per_sample_path
        sid = require_id(obj, "sample_id", P, line)
        if sid in seen:
            raise InputError(P, f"duplicate sample_id {sid!r} (first on line {seen[sid]})", line)
        if sid not in man:
            raise InputError(P, f"sample_id {sid!r} is not in the manifest {manifest_path}", line)
        seen[sid] = line
        m = man[sid]
        if "prompt_id" in obj and obj["prompt_id"] != m["prompt_id"]:
            raise InputError(P, f"prompt_id {obj['prompt_id']!r:.60} differs from the manifest's "
                                f"{m['prompt_id']!r} (line {man_line[sid]})", line)
        rel = require(obj, "relation", P, line, str)
        if rel not in RELATION_CODE:
            raise InputError(P, f"unknown relation {rel!r} (expected one of {', '.join(RELATIONS)})", line)
        a = _object_name(require(obj, "object_a", P, line), P, line, "object_a")
        b = _object_name(require(obj, "object_b", P, line), P, line, "object_b")
        _agrees_with_prompt(obj, prompts, p_index[m["prompt_id"]], P, line)
        verdict = require(obj, "verdict_raw", P, line, str)
        if verdict not in VERDICT_CODE:
            raise InputError(P, f"unknown verdict {verdict!r} (expected PASS, FAIL or UNDECIDABLE)", line)
        dets = require(obj, "detectors", P, line, dict)
        prim = dets.get("primary")
        if not isinstance(prim, dict) or not isinstance(prim.get("detections"), list):
            raise InputError(P, "missing field 'detectors.primary.detections'", line)
        i = len(s_cols["sid"])
        sec = dets.get("secondary")
        for src, block in ((PRIMARY, prim), (SECONDARY, sec)):
            if block is None:
                continue
            if not isinstance(block, dict) or not isinstance(block.get("detections"), list):
                raise InputError(P, f"detectors.{('primary', 'secondary')[src]}.detections must be a list", line)
            if isinstance(block.get("type"), str):
                det_types.setdefault(SOURCES[src], block["type"])
            for j, d in enumerate(block["detections"]):
                where = f"detectors.{('primary', 'secondary')[src]}.detections[{j}]"
                if not isinstance(d, dict):
                    raise InputError(P, f"{where} must be an object", line)
                lab = d.get("label")
                if not isinstance(lab, str):
                    raise InputError(P, f"{where}: missing field 'label'", line)
                d_cols["si"].append(i)
                d_cols["src"].append(src)
                d_cols["label"].append(lab.strip().lower())
                d_cols["score"].append(check_score(d.get("score"), P, line, where))
                d_cols["box"].append(check_box(d.get("box_xyxy"), P, line, where, m["w"], m["h"]))
        cc = obj.get("conf_components") or {}
        if not isinstance(cc, dict):
            raise InputError(P, "field 'conf_components' must be an object", line)
        conf = number(obj.get("conf"), P, line, "conf", lo=0.0, hi=1.0)
        vcode = VERDICT_CODE[verdict]
        reason_text = obj.get("verdict_reason") or ""
        if not isinstance(reason_text, str):
            raise InputError(P, f"field 'verdict_reason' must be text, got {type(reason_text).__name__}", line)
        rcode = _reason_code(reason_text, verdict)
        stab = _unit(cc.get("stability"), P, line, "conf_components.stability", math.nan)
        if rcode in (REASON_CODE["missing"], REASON_CODE["ambiguous"], REASON_CODE["high_overlap"]):
            stab = math.nan  # never computed for these
        geo = obj.get("geometry") or {}
        if not isinstance(geo, dict):
            raise InputError(P, "field 'geometry' must be an object", line)
        s_cols["sid"].append(sid)
        s_cols["pid"].append(m["prompt_id"])
        s_cols["seed"].append(m["seed"])
        s_cols["rel"].append(RELATION_CODE[rel])
        s_cols["a"].append(a)
        s_cols["b"].append(b)
        s_cols["w"].append(m["w"])
        s_cols["h"].append(m["h"])
        s_cols["img"].append(m["image"])
        s_cols["stab"].append(stab)
        s_cols["has2"].append(sec is not None)
        r_cols["verdict"].append(vcode)
        r_cols["reason"].append(rcode)
        r_cols["text"].append(reason_text)
        r_cols["conf"].append(conf)
        r_cols["det"].append(_unit(cc.get("detection"), P, line, "conf_components.detection", 0.0))
        r_cols["geom"].append(_unit(cc.get("geometry"), P, line, "conf_components.geometry", 0.0))
        r_cols["stab"].append(_unit(cc.get("stability"), P, line, "conf_components.stability", 0.0))
        r_cols["agree"].append(_unit(cc.get("agreement"), P, line, "conf_components.agreement", 0.0))
        r_cols["delta"].append(number(geo.get("delta"), P, line, "geometry.delta", lo=-1e6, hi=1e6,
                                      default=math.nan))
        r_cols["iou"].append(_unit(geo.get("iou_ab"), P, line, "geometry.iou_ab", math.nan))
    missing = [s for s in man if s not in seen]
    if missing:
        raise InputError(per_sample_path, f"{len(missing)} manifest sample(s) have no result, e.g. {missing[0]!r}")

    o = lambda v: np.array(v, dtype=object)  # noqa: E731
    f = lambda v: np.array(v, dtype=np.float64)  # noqa: E731
    n = len(s_cols["sid"])
    samples = Samples(
        sample_id=o(s_cols["sid"]), run_id=o([rid] * n), prompt_id=o(s_cols["pid"]),
        seed=np.array(s_cols["seed"], np.int64), width=f(s_cols["w"]), height=f(s_cols["h"]),
        image_path=o(s_cols["img"]),
        has_secondary=np.array(s_cols["has2"], bool), has_perturbed=np.zeros(n, bool),
    )
    boxes = np.array(d_cols["box"], np.float64).reshape(-1, 4)
    detections = Detections(
        sample_idx=np.array(d_cols["si"], np.int64), source=np.array(d_cols["src"], np.int8),
        variant=np.zeros(len(d_cols["si"]), np.int16), label=o(d_cols["label"]),
        score=f(d_cols["score"]), x1=boxes[:, 0].copy(), y1=boxes[:, 1].copy(),
        x2=boxes[:, 2].copy(), y2=boxes[:, 3].copy(),
    )
    recorded = RecordedVerdicts(
        verdict=np.array(r_cols["verdict"], np.int8), reason=np.array(r_cols["reason"], np.int8),
        reason_text=o(r_cols["text"]), conf=f(r_cols["conf"]), c_detection=f(r_cols["det"]),
        c_geometry=f(r_cols["geom"]), c_stability=f(r_cols["stab"]), c_agreement=f(r_cols["agree"]),
        delta=f(r_cols["delta"]), iou_ab=f(r_cols["iou"]),
    )
    used = sorted({p for p in s_cols["pid"]})
    keep = np.array([p_index[p] for p in used], np.int64)
    # keep counterfactual twins too, so pairs can be formed
    twin = [p_index[c] for c in prompts.twin_id[keep].tolist() if c and c in p_index]
    keep = np.unique(np.concatenate([keep, np.array(twin, np.int64)]))
    meta["detectors"] = {k: det_types.get(k, k) for k in SOURCES}
    meta.update({"source": "spatialbench_uc", "run_dir": str(run_dir.resolve()),
                 "prompts": str(Path(prompts_path).resolve())})
    prov = run_dir / "eval" / "provenance.json"
    if prov.is_file():
        from ...util.textio import read_text

        try:
            meta["provenance"] = json.loads(read_text(prov, MAX_PROVENANCE_FILE_BYTES, "provenance file"))
        except json.JSONDecodeError as e:
            raise InputError(prov, f"malformed JSON ({e.msg})", e.lineno) from None
        except RecursionError:
            raise InputError(prov, "malformed JSON (nested too deeply)") from None
    ds = with_stability(Dataset(samples, detections, prompts.take(keep)), f(s_cols["stab"]))
    return ParsedRun(rid, ds, recorded, config, meta, manifest_path=manifest_path, manifest_lines=man_line,
                     prompts_path=Path(prompts_path), prompt_lines=prompt_lines)


def _unit(v: Any, path: object, line: int, key: str, default: float) -> float:
    """A confidence or component: a number in [0, 1] (`default` when absent)."""
    return number(v, path, line, key, lo=0.0, hi=1.0, default=default)


def _side(v: Any, path: object, line: int, key: str) -> float:
    """An image side in pixels: a whole number from 1 to MAX_IMAGE_SIDE."""
    x = number(v, path, line, key, lo=1.0, hi=float(MAX_IMAGE_SIDE))
    if x != int(x):
        raise InputError(path, f"field '{key}' must be a whole number of pixels, got {v!r}", line)
    return x


def _agrees_with_prompt(obj: dict[str, Any], prompts: Prompts, k: int, path: object, line: int) -> None:
    """A record's own relation / object_a / object_b (where given) must be its prompt's."""
    ents = tuple(prompts.entities[k])
    want = {"relation": str((prompts.attrs[k] or {}).get("relation")), "object_a": str(ents[0]),
            "object_b": str(ents[1])}
    for key, expected in want.items():
        if key not in obj or obj[key] is None:
            continue
        got = obj[key] if key == "relation" else _object_name(obj[key], path, line, key)
        if got != expected:
            raise InputError(path, f"{key} {got!r} contradicts prompt {prompts.prompt_id[k]!r}, whose {key} is "
                                   f"{expected!r}", line)
