"""One contract, run over every registered method: suite → demo → evaluate → metrics → stored
results → report section, the config's round trip, the label schemes and the migrations.

A new method passes this file before it is wired into anything else (the views' half of the
contract is `tests/gui/test_method_views.py`). So does the Lamp method of the tests
(`tests/toy_method`), registered here for this module's tests only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workstation.evaluation.base import TARGET_KINDS, ReportSection
from workstation.evaluation.bundle import write_bundle
from workstation.evaluation.run import evaluate_and_store
from workstation.methods import METHODS, get_method
from workstation.store import Project
from tests import toy_method

NAMES = sorted(set(METHODS.names()) | {toy_method.NAME})


@pytest.fixture(scope="module", autouse=True)
def lamp_method_registered() -> Any:
    with toy_method.registered(views=False):
        yield


@pytest.fixture(scope="module", params=NAMES)
def demo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    """A small demo project of one method (built once per method)."""
    method = get_method(request.param)
    folder = tmp_path_factory.mktemp(f"demo_{method.name}")
    with Project.create(folder / "p") as p:
        summary = method.build_demo(p, small=True, workers=0)
    assert isinstance(summary, dict)
    return method, folder / "p"


def test_every_registered_method_is_importable_and_named_as_registered() -> None:
    assert "spatial" in NAMES
    for name in NAMES:
        m = get_method(name)
        assert m.name == name and m.title
        for attr in ("default_config", "config_from_dict", "migrations", "load", "evaluate", "metrics",
                     "save_results", "report_section", "has_data", "suite", "load_config_file",
                     "summary_lines", "build_demo"):
            assert callable(getattr(m, attr, None)), f"{name} lacks {attr}"


@pytest.mark.parametrize("name", NAMES)
def test_label_schemes_are_well_formed(name: str) -> None:
    m = get_method(name)
    assert m.label_schemes
    for s in m.label_schemes:
        assert s.task.startswith(f"{name}.") and s.target in TARGET_KINDS
        assert len(set(k.upper() for k in s.keys)) == len(s.keys)
        for v, k in zip(s.values, s.keys):
            assert s.value_for_key(k) == v and s.validate(v) == v


@pytest.mark.parametrize("name", NAMES)
def test_config_round_trips_with_its_hash(name: str) -> None:
    m = get_method(name)
    cfg = m.default_config()
    cfg.validate()
    again = m.config_from_dict(cfg.to_dict())
    assert again.content_hash() == cfg.content_hash()


@pytest.mark.parametrize("name", NAMES)
def test_suite_is_of_the_method_and_seeded(name: str) -> None:
    m = get_method(name)
    a, b = m.suite(), m.suite()
    assert len(a) > 0 and set(a.method.tolist()) == {name}
    assert len(set(a.prompt_id.tolist())) == len(a)
    assert a.content_hash() == b.content_hash()


def test_demo_evaluates_reports_and_stores(demo: tuple[Any, Path], tmp_path: Path) -> None:
    method, folder = demo
    with Project.open(folder) as p:
        assert method.has_data(p)
        data = method.load(p)
        cfg = method.default_config()
        results = method.evaluate(data, cfg)
        n = len(results)
        assert n > 0 and results.item_kind in TARGET_KINDS
        ids = np.asarray(results.ids).astype(str)
        assert len(ids) == n and len(set(ids.tolist())) == n
        if results.verdict is not None:
            v = np.asarray(results.verdict)
            assert len(v) == n and v.min() >= 0 and v.max() < len(results.verdict_names)
        if results.conf is not None:
            c = np.asarray(results.conf, np.float64)
            assert len(c) == n and np.all((c >= 0) & (c <= 1))
        cols = results.columns()
        assert all(len(np.asarray(x)) == n for x in cols.values())
        tables = method.metrics(data, results)
        assert tables and all(isinstance(rows, list) for rows in tables.values())
        assert any(rows for rows in tables.values())
        eid, again = evaluate_and_store(p, method, data=data)
        assert p.evaluations.active_id(method.name) == eid and len(again) == n
        assert method.summary_lines(data, again, eid, cfg)
        # the method's tables are at their newest version, and bringing them there again is a no-op
        newest = len(method.migrations())
        assert p.ensure_schema(method.name, method.migrations()) == newest

        def build(out: Path) -> list[ReportSection]:
            return [method.report_section(p, out / method.name)]

        (section,) = write_bundle(tmp_path / "report", build, provenance={"project": str(folder)})
    assert section.method == method.name and section.html
    assert (tmp_path / "report" / "index.html").is_file()
    assert (tmp_path / "report" / method.name).is_dir()


def test_each_method_s_own_commands_are_on_the_command_line(demo: tuple[Any, Path],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from workstation.cli import build_parser, main

    method, folder = demo
    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert all(c.name in commands for c in method.commands())
    if method.name == toy_method.NAME:  # the Lamp method's own command, run through the command line
        capsys.readouterr()
        assert main([toy_method.NAME, "count", "--project", str(folder)]) == 0
        assert capsys.readouterr().out.strip() == "12 lamp prompt(s)"


def test_a_method_s_judges_speak_of_its_targets_in_its_values(demo: tuple[Any, Path]) -> None:
    """Where a method lists judges (its ``judges`` hook), each one's output covers the method's
    targets, in the values the method's judges speak, and the agreement table sets them side by
    side (a method without the hook has none to check)."""
    from workstation.evaluation.judges import JudgeRun, agreement_rows, judge_rows
    from workstation.methods import method_judges

    method, folder = demo
    with Project.open(folder) as p:
        spec = method_judges(p, method.name)
        if getattr(method, "judges", None) is None:
            assert spec is None
            return
        assert spec is not None and spec.method == method.name
        assert spec.task in {s.task for s in method.label_schemes}
        run = JudgeRun(p, spec)
        n = len(run.targets)
        assert n > 0 and len(run.targets.cluster) == n and len(set(run.targets.ids.tolist())) == n
        assert len({j.name for j in spec.judges}) == len(spec.judges) >= 1
        for j in spec.judges:
            out = run.output(j.name)
            assert len(out.outcome) == len(out.score) == n and j.task == spec.task
            assert set(j.values) <= set(spec.values) and (not j.abstain or j.abstain in j.values)
            assert {v for v in out.outcome.tolist() if v is not None} <= set(j.values)
        listed = judge_rows(run)
        assert [r["judge"] for r in listed][:len(spec.judges)] == [j.name for j in spec.judges]
        k = sum(1 for j in spec.judges if j.values)
        assert len(agreement_rows(run, n_boot=0)) == k * (k - 1) // 2 + k
