"""Property-based tests (hypothesis): importers never fail with anything but one clear error, and
the checker's symmetries hold.

Importers — for any bytes / JSON / YAML / CSV a user might hand over, the readers either return
or raise `InputError` (a message naming the file); never another exception. Checker — mirroring
an image left–right while swapping left_of / right_of (or top–bottom while swapping above /
below), and swapping objects A and B while inverting the relation, give the same verdicts,
reasons and confidences; on the published SpatialBench-UC run and on random scenes.

Needs `hypothesis` (the dev extras); skipped without it.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from workstation.methods.spatial.config import CheckerConfig
from workstation.perturb import Perturbation
from workstation.dataset import Dataset, Detections, Prompts, Samples  # noqa: E402
from workstation.methods.spatial.data import prompt_columns, spatial_columns, spatial_dataset, spatial_prompts
from workstation.methods.spatial.types import INVERSE_RELATION, RELATION_CODE, RELATIONS
from workstation.types import InputError

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                       HealthCheck.too_slow])

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80),
                         st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20))
json_values = st.recursive(json_scalars, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                                 st.dictionaries(st.text(max_size=10), kids,
                                                                                 max_size=4)), max_leaves=12)


# ---------------------------------------------------------------------------------------------
# importers
# ---------------------------------------------------------------------------------------------


@FAST
@given(data=st.lists(st.binary(max_size=200), max_size=6))
def test_read_jsonl_gives_objects_or_one_input_error(tmp_path_factory: pytest.TempPathFactory,
                                                     data: list[bytes]) -> None:
    from workstation.io.jsonl import read_jsonl

    f = tmp_path_factory.mktemp("j") / "m.jsonl"
    f.write_bytes(b"\n".join(data))
    try:
        for line, obj in read_jsonl(f):
            assert isinstance(obj, dict) and line >= 1
    except InputError as e:
        assert "m.jsonl" in str(e) and "\n" not in str(e)


@pytest.fixture(scope="module")
def mini_run(tmp_path_factory: pytest.TempPathFactory, sbuc_run_dir: Path, sbuc_prompts: Path) -> Path:
    """The fixture run cut to its first 4 samples (fast to parse)."""
    dst = tmp_path_factory.mktemp("mini") / "run"
    (dst / "eval").mkdir(parents=True)
    for rel in ("manifest.jsonl", "eval/per_sample.jsonl"):
        lines = (sbuc_run_dir / rel).read_text().splitlines()[:4]
        (dst / rel).write_text("\n".join(lines) + "\n")
    shutil.copy(sbuc_run_dir / "eval" / "checker_config.yaml", dst / "eval" / "checker_config.yaml")
    shutil.copy(sbuc_prompts, dst.parent / "prompts.jsonl")
    return dst


@FAST
@given(which=st.sampled_from(["manifest.jsonl", "eval/per_sample.jsonl"]), line=st.integers(1, 4),
       key=st.sampled_from(["sample_id", "prompt_id", "gen_params", "seed", "image_path", "relation", "object_a",
                            "conf", "conf_components", "detectors", "verdict_raw", "geometry", "verdict_reason"]),
       value=json_values)
def test_parse_run_with_any_field_value_returns_or_names_file_and_line(
        tmp_path_factory: pytest.TempPathFactory, mini_run: Path, which: str, line: int, key: str, value: Any) -> None:
    from workstation.methods.spatial.sbuc import parse_run

    run = tmp_path_factory.mktemp("r") / "run"
    shutil.copytree(mini_run, run)
    p = run / which
    lines = p.read_text().splitlines()
    obj = json.loads(lines[line - 1])
    obj[key] = value
    lines[line - 1] = json.dumps(obj)
    p.write_text("\n".join(lines) + "\n")
    try:
        parsed = parse_run(run, mini_run.parent / "prompts.jsonl")
    except InputError as e:
        assert "\n" not in str(e)
        return
    # accepted: then every number the project stores is finite and in range
    r = parsed.recorded
    assert r is not None
    assert np.all((r.conf >= 0) & (r.conf <= 1))
    assert np.all((parsed.dataset.samples.width >= 1) & (parsed.dataset.samples.width <= 16384))
    assert all(0 <= int(s) < 2**63 for s in parsed.dataset.samples.seed)


@FAST
@given(records=st.lists(st.one_of(json_values, st.fixed_dictionaries(
    {"sample_id": json_values, "human_verdict": st.one_of(st.sampled_from(["PASS", "FAIL", "", "pass"]), json_values)},
    optional={"notes": json_values, "rating": json_values, "timestamp": json_values, "annotator": json_values})),
    max_size=5))
def test_label_json_files_read_or_one_input_error(tmp_path_factory: pytest.TempPathFactory, records: list[Any]) -> None:
    from workstation.methods.spatial.labels_io import read_labels

    f = tmp_path_factory.mktemp("l") / "labels.json"
    f.write_text(json.dumps(records))
    try:
        t = read_labels(f)
    except InputError as e:
        assert "labels.json" in str(e) and "\n" not in str(e)
        return
    assert all(isinstance(s, str) and s and "\x00" not in s for s in t.sample_id)
    assert all(v in ("PASS", "FAIL", "UNDECIDABLE") for v in t.verdict)
    assert all(r is None or 1 <= r <= 4 for r in t.rating)


@FAST
@given(text=st.text(max_size=300))
def test_label_csv_files_read_or_one_input_error(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    from workstation.methods.spatial.labels_io import read_labels

    f = tmp_path_factory.mktemp("c") / "labels.csv"
    f.write_text("sample_id,annotator,verdict,rating,notes,created_at\n" + text, encoding="utf-8")
    try:
        read_labels(f)
    except InputError as e:
        assert "labels.csv" in str(e)


@FAST
@given(text=st.text(max_size=400))
def test_yaml_text_loads_or_one_input_error(text: str) -> None:
    from workstation.util.safeyaml import loads_yaml

    try:
        loads_yaml(text, "c.yaml")
    except InputError as e:
        assert "\n" not in str(e) and str(e).startswith("c.yaml")


# ---------------------------------------------------------------------------------------------
# the method surfaces: MetaLogic forms and pair files, ProtoBias indexes, DyEval judgement files,
# prompt files, strict JSON — any input ends in a result or an input error, never another exception
# ---------------------------------------------------------------------------------------------

FORM_TOKENS = ["~", "&", "|", "(", ")", "[cat]", "[dog]", "[cat<dog]", "[dog<cat]", "[cat:red]", "[", "]", "<", ":",
               " ", "cat", "[]", "[a<b<c]", "[x:]"]
forms = st.one_of(
    st.lists(st.sampled_from(FORM_TOKENS), max_size=40).map("".join),
    st.text(max_size=60),
    st.builds(lambda n, k, a: k * n + a + (")" * n if k == "(" else ""), st.integers(0, 5000),
              st.sampled_from(["~", "(", "~(", "(~"]), st.sampled_from(["[cat]", "[cat] & [dog]", ""])),
)


@FAST
@given(text=forms)
def test_the_form_parser_parses_or_refuses_any_text(text: str) -> None:
    from workstation.methods.metalogic.forms import FormError, parse, to_text

    try:
        e = parse(text)
    except FormError as err:
        assert len(str(err)) < 300
        return
    assert parse(to_text(e)) == e  # what it accepts, it writes back the same


JSON_PIECES = ["[", "]", "{", "}", '"', ",", ":", "NaN", "Infinity", "-Infinity", "-", "1e400", "1e-400", "9" * 60,
               "0.5", "true", "null", "\\", " ", "\n", "a", '"k"', "1", "[" * 100, "]" * 100, "\u00e9", "\x00",
               "[" * 3000, "9" * 5000, '{"a":' * 200]
json_texts = st.one_of(st.lists(st.sampled_from(JSON_PIECES), max_size=30).map("".join),
                       json_values.map(lambda v: json.dumps(v, allow_nan=True)), st.text(max_size=80))


@FAST
@given(text=json_texts)
def test_strict_json_gives_a_value_or_one_input_error(text: str) -> None:
    from workstation.util.jsonsafe import JSONInputError, loads_strict

    try:
        v = loads_strict(text)
    except JSONInputError as e:
        assert len(str(e)) < 200 and (e.line is None or e.line >= 1)
        return
    assert json.loads(json.dumps(v, allow_nan=False)) == v  # only finite, plain JSON comes back


pair_records = st.fixed_dictionaries(
    {"pair_id": st.one_of(st.text(max_size=8), json_values), "law": st.sampled_from(["DeMorgan", "Commutative", "x"]),
     "modifier": st.sampled_from(["AND", "OR", 3]), "dimension": st.sampled_from(["none", "x", "y", "attributes"]),
     "prompt_a": st.text(max_size=10), "prompt_b": st.text(max_size=10),
     "entities": st.one_of(st.lists(st.sampled_from(["cat", "dog", "cup", "", "a|b"]), max_size=4), json_values)},
    optional={"form_a": forms, "form_b": forms, "expected_counts": json_values, "expected_order": json_values,
              "attributes": json_values, "seed": json_values})


@FAST
@given(lines=st.lists(st.one_of(pair_records.map(lambda r: json.dumps(r, allow_nan=True)), json_texts), max_size=4))
def test_metalogic_pair_jsonl_reads_or_one_input_error(tmp_path_factory: pytest.TempPathFactory,
                                                       lines: list[str]) -> None:
    from workstation.methods.metalogic.io import load_pairs

    f = tmp_path_factory.mktemp("ml") / "pairs.jsonl"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        suite = load_pairs(f)
    except InputError as e:
        assert str(e).startswith(str(f)) and "\n" not in str(e) and len(e.detail) < 300
        return
    assert all(0 <= p.seed < 2**63 and all(0 <= c <= 100 for c in p.expected_count) for p in suite.pairs)


CSV_PIECES = ['"', ",", "\n", "\r\n", "p1", "DeMorgan", "AND", "none", "cat;dog", "a cat", '""', " ", "x", "\x00", "é"]


@FAST
@given(body=st.one_of(st.lists(st.sampled_from(CSV_PIECES), max_size=40).map("".join), st.text(max_size=200)))
def test_metalogic_pair_csv_reads_or_one_input_error(tmp_path_factory: pytest.TempPathFactory, body: str) -> None:
    from workstation.methods.metalogic.io import load_pairs

    f = tmp_path_factory.mktemp("mc") / "pairs.csv"
    f.write_text("pair_id,law,modifier,dimension,prompt_a,prompt_b,entities\n" + body, encoding="utf-8")
    try:
        load_pairs(f)
    except InputError as e:
        assert str(e).startswith(str(f)) and "\n" not in str(e) and len(e.detail) < 300


@pytest.fixture(scope="module")
def triplet_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with two small images that an index may name."""
    from PIL import Image

    d = tmp_path_factory.mktemp("pbf")
    (d / "img").mkdir()
    for name, colour in (("a.png", (200, 0, 0)), ("b.png", (0, 0, 200))):
        Image.fromarray(np.full((16, 16, 3), colour, np.uint8)).save(d / "img" / name)
    return d


triplet_rows = st.fixed_dictionaries(
    {"triplet_id": st.one_of(st.sampled_from(["t1", "t2", "../x"]), json_values), "text": st.text(max_size=10),
     "domain": st.sampled_from(["animals", "objects", "nope"]), "knob": st.sampled_from(["count", "color", 1]),
     "image_corr": st.sampled_from(["img/a.png", "img/b.png", "../a.png", "/etc/passwd", ""]),
     "image_adv": st.sampled_from(["img/a.png", "img/b.png", "img"])},
    optional={"seed": json_values, "extra": json_values})


@FAST
@given(lines=st.lists(st.one_of(triplet_rows.map(lambda r: json.dumps(r, allow_nan=True)), json_texts), max_size=3),
       fmt=st.sampled_from(["jsonl", "csv"]), csv_body=st.text(max_size=120))
def test_protobias_indexes_read_or_one_input_error(tmp_path_factory: pytest.TempPathFactory, triplet_folder: Path,
                                                   lines: list[str], fmt: str, csv_body: str) -> None:
    from workstation.methods.protobias.importer import plan_import
    from workstation.methods.protobias.io import read_triplet_index

    index = tmp_path_factory.mktemp("pbi") / f"index.{fmt}"
    if fmt == "jsonl":
        index.write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        index.write_text("triplet_id,text,domain,knob,image_corr,image_adv,seed\n" + csv_body, encoding="utf-8")
    try:
        imp = read_triplet_index(triplet_folder, index)
        _rid, seeds = plan_import(imp)
    except InputError as e:
        assert str(e).startswith(str(index)) and "\n" not in str(e) and len(e.detail) < 300
        return
    assert all(0 <= s < 2**63 for s in seeds)


@FAST
@given(body=st.one_of(st.lists(st.sampled_from(CSV_PIECES + ["PASS", "FAIL", "i1"]), max_size=40).map("".join),
                      st.text(max_size=200)))
def test_dyeval_judgement_csv_reads_or_one_input_error(tmp_path_factory: pytest.TempPathFactory, body: str) -> None:
    from workstation.methods.dyeval.commands import read_label_csv

    f = tmp_path_factory.mktemp("dj") / "judged.csv"
    f.write_text("image_id,value,notes\n" + body, encoding="utf-8")
    try:
        rows = read_label_csv(f, "ann")
    except InputError as e:
        assert str(e).startswith(str(f)) and "\n" not in str(e) and len(e.detail) < 300
        return
    assert all(v in ("PASS", "FAIL") and iid and line >= 2 for iid, v, _a, _n, line in rows)


@FAST
@given(lines=st.lists(json_texts, max_size=4))
def test_prompt_files_read_or_one_input_error(tmp_path_factory: pytest.TempPathFactory, lines: list[str]) -> None:
    from workstation.io.prompts import read_prompts_jsonl

    f = tmp_path_factory.mktemp("pf") / "prompts.jsonl"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        read_prompts_jsonl(f, methods=("spatial", "metalogic"))
    except InputError as e:
        assert str(e).startswith(str(f)) and "\n" not in str(e) and len(e.detail) < 300


@FAST
@given(raw=st.dictionaries(st.sampled_from(["t_det", "margin", "tau", "use_secondary", "w_detection",
                                             "perturbations", "name", "geom_slope", "extra", "nosuch"]),
                           json_values, max_size=4))
def test_checker_configs_load_only_valid_values(tmp_path_factory: pytest.TempPathFactory, raw: dict[str, Any]) -> None:
    import yaml

    from workstation.methods.spatial.config import load_config

    f = tmp_path_factory.mktemp("y") / "c.yaml"
    f.write_text(yaml.safe_dump(raw))
    try:
        cfg = load_config(f)
    except InputError as e:
        assert "c.yaml" in str(e) and "\n" not in str(e)
        return
    cfg.validate()
    assert isinstance(cfg.use_secondary, bool) and 0 <= cfg.t_det <= 1 and 0 <= cfg.tau <= 1


@FAST
@given(cells=st.lists(st.text(max_size=30), min_size=1, max_size=6))
def test_csv_escaping_round_trips_and_never_starts_a_formula(cells: list[str]) -> None:
    from workstation.util.csvsafe import FORMULA_START, escape_row, unescape_cell

    buf = io.StringIO()
    csv.writer(buf).writerow(escape_row(cells))
    (row,) = list(csv.reader(io.StringIO(buf.getvalue(), newline="")))
    assert not any(c.startswith(FORMULA_START) for c in row)
    assert [unescape_cell(c) for c in row] == cells


@FAST
@given(value=json_values)
def test_ids_are_clean_text_or_refused(value: Any) -> None:
    from workstation.util.ids import check_id

    try:
        s = check_id(value)
    except ValueError as e:
        assert "\n" not in str(e)
        return
    assert isinstance(s, str) and s == s.strip() and s and not any(ord(ch) < 32 for ch in s)


@FAST
@given(rel=st.text(max_size=40))
def test_relative_paths_never_leave_their_folder(rel: str) -> None:
    from workstation.util.paths import UnsafePath, check_relative

    try:
        p = check_relative(rel)
    except UnsafePath:
        return
    assert not p.is_absolute() and ".." not in p.parts


# ---------------------------------------------------------------------------------------------
# the checker's symmetries
# ---------------------------------------------------------------------------------------------

SWAP_H = {RELATION_CODE["left_of"]: RELATION_CODE["right_of"], RELATION_CODE["right_of"]: RELATION_CODE["left_of"]}
SWAP_V = {RELATION_CODE["above"]: RELATION_CODE["below"], RELATION_CODE["below"]: RELATION_CODE["above"]}
INVERSE = {RELATION_CODE[a]: RELATION_CODE[b] for a, b in INVERSE_RELATION.items()}


def _map_relation(rel: np.ndarray, m: dict[int, int]) -> np.ndarray:
    out = rel.copy()
    for a, b in m.items():
        out[rel == a] = b
    return out


def _reprompted(ds: Dataset, rel_map: dict[int, int], swap: bool) -> Prompts:
    """The dataset's prompts with their relation mapped (and objects A, B swapped)."""
    pc = prompt_columns(ds.prompts)
    a, b = (pc.label_b, pc.label_a) if swap else (pc.label_a, pc.label_b)
    return spatial_prompts(ds.prompts.prompt_id, ds.prompts.text, _map_relation(pc.relation, rel_map), a, b,
                           counterfactual_id=ds.prompts.twin_id, pair_id=ds.prompts.group_id)


def mirrored(ds: Dataset, axis: str) -> Dataset:
    """The same scenes mirrored left–right (axis 'x') or top–bottom ('y'), relations swapped."""
    d, s = ds.detections, ds.samples
    if axis == "x":
        w = s.width[d.sample_idx]
        d2 = dataclasses.replace(d, x1=w - d.x2, x2=w - d.x1)
        p2 = _reprompted(ds, SWAP_H, swap=False)
    else:
        h = s.height[d.sample_idx]
        d2 = dataclasses.replace(d, y1=h - d.y2, y2=h - d.y1)
        p2 = _reprompted(ds, SWAP_V, swap=False)
    return Dataset(dataclasses.replace(s), d2, p2, ds.variant_names, dict(ds.sample_columns))


def swapped(ds: Dataset) -> Dataset:
    """Objects A and B swapped and the relation inverted: 'A left of B' → 'B right of A'."""
    return Dataset(dataclasses.replace(ds.samples), ds.detections, _reprompted(ds, INVERSE, swap=True),
                   ds.variant_names, dict(ds.sample_columns))


def assert_same_verdicts(a: Any, b: Any, cfg: CheckerConfig) -> None:
    # a float tie exactly at a threshold could round either way after mirroring: none in practice
    at_edge = (np.abs(np.abs(np.nan_to_num(a.delta, nan=9)) - cfg.margin) < 1e-9) | \
              (np.abs(np.nan_to_num(a.iou_ab, nan=9) - cfg.max_overlap_iou) < 1e-9)
    ok = ~at_edge
    assert at_edge.sum() <= 1
    np.testing.assert_array_equal(a.verdict[ok], b.verdict[ok])
    np.testing.assert_array_equal(a.reason[ok], b.reason[ok])
    np.testing.assert_allclose(a.conf[ok], b.conf[ok], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.abs(a.delta[ok]), np.abs(b.delta[ok]), rtol=1e-9, atol=1e-12)


configs = st.builds(
    lambda margin, t_det, amb, iou, sec, stab: CheckerConfig(
        margin=margin, t_det=t_det, ambiguity_delta=amb, max_overlap_iou=iou, use_secondary=sec,
        stability_enabled=stab),
    st.sampled_from([0.0, 0.03, 0.05, 0.1, 0.2]), st.sampled_from([0.1, 0.2, 0.3, 0.5]),
    st.sampled_from([0.05, 0.1, 0.2]), st.sampled_from([0.3, 0.5, 0.8]), st.booleans(), st.booleans())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cfg=configs, axis=st.sampled_from(["x", "y"]))
def test_mirroring_the_published_run_gives_the_same_verdicts(sbuc_parsed: Any, cfg: CheckerConfig, axis: str) -> None:
    from workstation.methods.spatial.checker import evaluate

    ds = sbuc_parsed.dataset
    cfg = dataclasses.replace(cfg, perturbations=sbuc_parsed.config.perturbations)
    assert_same_verdicts(evaluate(ds, cfg), evaluate(mirrored(ds, axis), cfg), cfg)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cfg=configs)
def test_swapping_a_and_b_on_the_published_run_gives_the_same_verdicts(sbuc_parsed: Any, cfg: CheckerConfig) -> None:
    from workstation.methods.spatial.checker import evaluate

    ds = sbuc_parsed.dataset
    cfg = dataclasses.replace(cfg, perturbations=sbuc_parsed.config.perturbations)
    assert_same_verdicts(evaluate(ds, cfg), evaluate(swapped(ds), cfg), cfg)


PERTS = (Perturbation("brightness", 1.1), Perturbation("gaussian_blur", 1.0))


@st.composite
def scenes(draw: Any) -> Dataset:
    """1–12 random scenes: boxes of A, B and a distractor per detector and image variant."""
    n = draw(st.integers(1, 12))
    w = float(draw(st.sampled_from([256, 512, 640])))
    h = float(draw(st.sampled_from([256, 512, 480])))
    rel = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), np.int8)
    rows: list[tuple[int, int, int, str, float, float, float, float, float]] = []
    coord = st.floats(0, 1, allow_nan=False)
    for i in range(n):
        for src in (0, 1):
            for variant in ((0, 1, 2) if src == 0 else (0,)):
                for lab in draw(st.lists(st.sampled_from(["cat", "dog", "cup"]), max_size=4)):
                    x1, x2 = sorted((draw(coord) * w, draw(coord) * w))
                    y1, y2 = sorted((draw(coord) * h, draw(coord) * h))
                    score = draw(st.floats(0.05, 1.0))
                    rows.append((i, src, variant, lab, score, x1, y1, x2 + 1.0, y2 + 1.0))
    o = lambda v: np.array(v, dtype=object)  # noqa: E731
    samples = Samples(o([f"s{i}" for i in range(n)]), o(["r"] * n), o([f"p{i}" for i in range(n)]),
                      np.arange(n, dtype=np.int64), np.full(n, w), np.full(n, h),
                      o([""] * n), np.ones(n, bool), np.ones(n, bool))
    cols = list(zip(*rows)) if rows else [[]] * 9
    dets = Detections(np.array(cols[0], np.int64), np.array(cols[1], np.int8), np.array(cols[2], np.int16),
                      o(list(cols[3])), *(np.array(c, np.float64) for c in cols[4:]))
    return spatial_dataset(samples, rel, ["cat"] * n, ["dog"] * n, dets, ("original",) + tuple(p.name for p in PERTS))


@settings(max_examples=80, deadline=None)
@given(ds=scenes(), cfg=configs, axis=st.sampled_from(["x", "y"]))
def test_checker_symmetries_on_random_scenes(ds: Dataset, cfg: CheckerConfig, axis: str) -> None:
    from workstation.methods.spatial.checker import evaluate

    cfg = dataclasses.replace(cfg, perturbations=PERTS)
    v = evaluate(ds, cfg)
    assert_same_verdicts(v, evaluate(mirrored(ds, axis), cfg), cfg)
    assert_same_verdicts(v, evaluate(swapped(ds), cfg), cfg)
    # METHODS.md §9: conf = Π (c + ε)^w with ε = 1e-10 and weights summing to 1, so a sample whose
    # four components are all 1 has conf (1 + ε), a hair above 1, exactly as the rule gives it
    assert np.all((v.conf >= 0) & (v.conf <= 1 + 1e-9)) and not np.isnan(v.conf).any()
    assert math.isfinite(float(np.nansum(v.delta)))
    assert set(np.unique(v.verdict).tolist()) <= {0, 1, 2}
    assert [RELATIONS[int(r)] for r in spatial_columns(swapped(swapped(ds))).relation] == \
        [RELATIONS[int(r)] for r in spatial_columns(ds).relation]
