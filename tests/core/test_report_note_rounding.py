"""The report: values are rounded where people read them (the operating
point, the bundle's provenance), and the note typed at Apply (the version's note) is shown in
the spatial section, the bundle's index and the spatial index.html."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

LONG_FLOAT = re.compile(r"\d\.\d{7,}")  # e.g. 0.5777777777777777


@pytest.fixture
def project(tmp_path: Path, sbuc_parsed):
    from workstation.methods.spatial.store import SpatialStore
    from workstation.methods.spatial.types import VERDICTS
    from workstation.store import Project

    p = Project.create(tmp_path / "proj")
    p.samples.add_run(sbuc_parsed.run_id, method="sd15_boxdiff")
    p.samples.add_dataset(sbuc_parsed.dataset)
    store = SpatialStore(p)
    store.save_config(sbuc_parsed.config, note="imported")
    rng = np.random.default_rng(3)
    rows = rng.choice(sbuc_parsed.dataset.n, 90, replace=False)
    store.add_labels_bulk({"sample_id": sbuc_parsed.dataset.samples.sample_id[rows].tolist(),
                           "annotator": ["alice"] * len(rows),
                           "verdict": [VERDICTS[int(h)] for h in rng.integers(0, 3, len(rows))]})
    yield p
    p.close()


def _apply(project, cfg, note: str) -> int:
    from workstation.methods.spatial.checker import evaluate
    from workstation.methods.spatial.store import SpatialStore

    ds = project.samples.load_dataset(method="spatial")
    store = SpatialStore(project)
    with project.transaction():
        cid = store.save_config(cfg, note=note)
        store.save_verdicts(cid, ds, evaluate(ds, cfg))
    return cid


def test_report_shows_the_apply_note_and_rounds_what_people_read(project, sbuc_parsed, tmp_path):
    from workstation.evaluation.bundle import write_bundle
    from workstation.methods.spatial.report import report_section

    cfg = sbuc_parsed.config.replace(margin=0.12, tau=0.3)
    _apply(project, cfg, "after the audit: margin 0.12")
    out = tmp_path / "bundle"
    write_bundle(out, lambda folder: [report_section(project, folder / "spatial")],
                 provenance={"project": "p", "share": 52 / 90})
    index = (out / "index.html").read_text(encoding="utf-8")
    spatial = (out / "spatial" / "index.html").read_text(encoding="utf-8")
    assert "after the audit: margin 0.12" in index
    assert "Version note: after the audit: margin 0.12" in spatial
    assert "0.5778" in index  # 52 / 90 rounded to 4 decimals
    for text in (index, spatial):
        shown = re.sub(r'title="[^"]*"', "", text)  # exact values stay in hover titles
        assert not LONG_FLOAT.search(shown), LONG_FLOAT.search(shown).group(0)
    # the operating point is still exact in the meta file
    import json
    meta = json.loads((out / "spatial" / "report_meta.json").read_text(encoding="utf-8"))
    assert meta["provenance"]["config_note"] == "after the audit: margin 0.12"


def test_a_note_given_when_reapplying_an_identical_config_is_kept(project, sbuc_parsed, tmp_path):
    from workstation.methods.spatial.report import report_section

    cfg = sbuc_parsed.config.replace(margin=0.12)
    first = _apply(project, cfg, "first try")
    again = _apply(project, cfg, "checked again after 90 labels")
    assert again == first  # the same version (same content hash) ...
    note = project.evaluations.get(first)["note"]
    assert note == "first try; checked again after 90 labels"  # ... keeps both notes
    section = report_section(project, tmp_path / "spatial")
    assert "checked again after 90 labels" in section.html
