"""A perturbed image on which the detector found nothing is 'ran, found nothing', not 'never ran'."""

from __future__ import annotations

import numpy as np

from workstation.methods.spatial.checker import evaluate
from workstation.methods.spatial.config import CheckerConfig
from workstation.dataset import Dataset, Detections, Samples
from workstation.store import Project
from workstation.methods.spatial.types import UNDECIDABLE, UNSTABLE
from workstation.methods.spatial.data import spatial_prompts


def _dataset() -> Dataset:
    o = lambda v: np.array(v, dtype=object)  # noqa: E731
    samples = Samples(o(["s1"]), o(["r"]), o(["p1"]), np.array([0]), np.array([100.0]), np.array([100.0]), o([""]),
                      np.array([False]), np.array([True]))
    # cat clearly left of dog on the original image; nothing at all on the four perturbed copies
    dets = Detections(np.array([0, 0]), np.array([0, 0], np.int8), np.array([0, 0], np.int16), o(["cat", "dog"]),
                      np.array([0.9, 0.9]), np.array([5.0, 70.0]), np.array([40.0, 40.0]),
                      np.array([25.0, 90.0]), np.array([60.0, 60.0]))
    prompts = spatial_prompts(["p1"], ["a cat to the left of a dog"], ["left_of"], ["cat"], ["dog"], suite="test")
    names = ("original",) + tuple(p.name for p in CheckerConfig().perturbations)
    return Dataset(samples, dets, prompts, names)


def test_perturbations_without_detections_make_the_sample_unstable(tmp_path) -> None:
    with Project.create(tmp_path / "p") as p:
        p.samples.add_run("r")
        p.samples.add_dataset(_dataset())
        ds = p.samples.load_dataset()
    assert ds.variant_names[0] == "original"
    assert set(ds.variant_names[1:]) == {x.name for x in CheckerConfig().perturbations}
    v = evaluate(ds, CheckerConfig(use_secondary=False))
    assert v.verdict[0] == UNDECIDABLE and v.reason[0] == UNSTABLE
    assert v.c_stability[0] == 0.0
