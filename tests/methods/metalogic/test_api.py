"""The MetaLogic package surface: lazy exports, the kernel protocols, the label scheme."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import workstation.methods.metalogic as ml
from workstation.evaluation import LabelScheme, MethodConfig, Results

ROOT = Path(__file__).resolve().parents[3]


def test_every_exported_name_resolves() -> None:
    for name in ml.__all__:
        assert getattr(ml, name) is not None, name
    assert ml.NAME == "metalogic"
    assert ml.parse_form("[cat] & ~[dog]") is not None


def test_importing_the_package_imports_nothing_heavy() -> None:
    code = ("import sys, workstation.methods.metalogic as m; "
            "print(sorted(k for k in sys.modules if k.startswith('workstation.methods.metalogic.') "
            "or k in ('cv2', 'torch', 'PySide6')))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_results_and_config_follow_the_kernel_protocols() -> None:
    suite = ml.build_suite(n_pairs=10, objects="demo")
    data = ml.PairData.from_specs(suite.pairs, [[] for _ in suite.pairs], [[] for _ in suite.pairs])
    res = ml.evaluate(data, ml.default_config())
    assert isinstance(res, Results) and res.item_kind == "pair" and len(res) == 10
    assert res.verdict_names == ("ALIGNED", "MISALIGNED", "UNDECIDABLE")
    cols = res.columns()
    assert all(len(v) == 10 for v in cols.values()) and cols["pair_id"].tolist() == [p.pair_id for p in suite.pairs]
    cfg = ml.config_from_dict({"score_threshold": 0.4})
    assert isinstance(cfg, MethodConfig) and cfg.score_threshold == 0.4


def test_label_scheme() -> None:
    (scheme,) = ml.label_schemes()
    assert scheme is ml.LABEL_SCHEME and isinstance(scheme, LabelScheme)
    assert (scheme.task, scheme.target) == ("metalogic.pair", "pair")
    assert scheme.values == ("ALIGNED", "MISALIGNED", "UNDECIDABLE") and scheme.keys == ("A", "M", "U")
    assert scheme.value_for_key("m") == "MISALIGNED" and scheme.validate("undecidable") == "UNDECIDABLE"
    assert not scheme.ordinal
