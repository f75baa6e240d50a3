"""One sample's judges (`workstation.methods.spatial.judges.item_judges`, the pair view's lines)
are what the judges give that sample over all the samples, on the demo."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from workstation.evaluation.judges import JudgeRun
from workstation.methods import get_method
from workstation.methods.spatial.judges import item_judges, spatial_judges, twin_rows
from workstation.store import Project


def test_one_samples_judges_are_the_whole_runs(tmp_path: Path) -> None:
    with Project.create(tmp_path / "p") as p:
        get_method("spatial").build_demo(p, small=True, workers=0)
        spec = spatial_judges(p)
        run = JudgeRun(p, spec)
        ds = run.targets.cache.get("dataset") or p.samples.load_dataset(method="spatial")
        ids = [str(x) for x in run.targets.ids.tolist()]
        rows = {str(x): i for i, x in enumerate(ds.samples.sample_id.tolist())}
        tw = twin_rows(ds)
        names = [j.name for j in spec.judges]
        seen = {n: set() for n in names}
        for k, sid in enumerate(ids):
            r = rows[sid]
            for twin in (None, int(tw[r])):
                got = {d["judge"]: d for d in item_judges(p, ds, r, twin)}
                assert list(got) == names
                for n in names:
                    o = run.output(n)
                    assert got[n]["outcome"] == o.outcome[k], (n, sid)
                    want = float(o.score[k])
                    assert (math.isnan(want) and math.isnan(got[n]["score"])) or np.isclose(got[n]["score"], want)
                    seen[n].add(got[n]["outcome"])
        # the demo's second judges say something on its samples: PASS and FAIL both occur
        assert {"PASS", "FAIL"} <= seen["spatial.geneval"]
        assert len(seen["spatial.twin"] - {None}) >= 2
        assert item_judges(p, ds, -1) == []
