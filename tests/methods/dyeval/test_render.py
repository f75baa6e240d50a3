"""The procedural images of DyEval prompts and the scripted model of known weaknesses."""

from __future__ import annotations

import colorsys

import numpy as np

from workstation.jobs.backends import ProceduralGenerator
from workstation.generation import GenerationParams
from workstation.methods.dyeval.locate import run_location
from workstation.methods.dyeval.parse import parse_text
from workstation.methods.dyeval.render import render_demo_row, render_graph
from workstation.methods.dyeval.scene_graph import SceneGraph
from workstation.methods.dyeval.weakness import DEMO_WEAKNESSES, KnownWeaknesses

SEEDS = range(60)


def _fail_rate(text: str) -> float:
    g = parse_text(text)
    return float(np.mean([not DEMO_WEAKNESSES.judge(g, text, s).passed for s in SEEDS]))


def test_weak_elements_fail_most_images_and_the_rest_rarely() -> None:
    assert _fail_rate("A silk kimono.") > 0.75  # an object the model cannot draw
    assert _fail_rate("A glass vase.") > 0.75  # an attribute it ignores
    assert _fail_rate("A dog under a chair.") > 0.75  # a relation it cannot lay out
    assert _fail_rate("A red dog next to a big chair.") < 0.1
    # the paper's second example: moon and cloud pass alone and fail together
    assert _fail_rate("A tiny black crescent moon.") < 0.1 and _fail_rate("A big white cloud.") < 0.1
    assert _fail_rate("A tiny black crescent moon within a big white cloud.") > 0.75


def test_an_image_and_its_truth_are_the_same_for_the_same_text_and_seed() -> None:
    row = {"prompt_id": "x", "text": "A striped glass vase next to a shiny blue car.", "method": "dyeval",
           "attrs": {}}
    a, ta = render_demo_row(row, 3, size=128)
    b, tb = render_demo_row({**row, "prompt_id": "y"}, 3, size=128)
    assert a.shape == (128, 128, 3) and a.dtype == np.uint8
    assert np.array_equal(a, b) and ta["expected"] == tb["expected"] and ta["failed"] == tb["failed"]
    c, _ = render_demo_row(row, 4, size=128)
    assert not np.array_equal(a, c)


def test_what_is_drawn_follows_the_truth() -> None:
    g = parse_text("A red car.")
    img, truth = render_graph(g, "A red car.", 0, 256)
    assert truth["expected"] == "PASS"
    (obj,) = truth["objects"]
    x1, y1, x2, y2 = (int(v) for v in obj["boxes"][0])
    patch = img[y1:y2, x1:x2].reshape(-1, 3) / 255.0
    hsv = np.array([colorsys.rgb_to_hsv(*px) for px in patch[::7]])
    vivid = hsv[hsv[:, 1] > 0.5]
    assert len(vivid) and np.median(np.minimum(vivid[:, 0], 1 - vivid[:, 0])) < 0.05  # the car is red
    # an object the model cannot draw: another class, or nothing, in every failing image
    text = "A silk kimono."
    for s in SEEDS[:20]:
        _, t = render_graph(parse_text(text), text, s, 96)
        (o,) = t["objects"]
        if t["expected"] == "FAIL" and "object kimono" in t["failed"]:
            assert o["omitted"] or o["drawn_as"] != "kimono"
        else:
            assert o["drawn_as"] == "kimono" and not o["omitted"]


def test_the_procedural_generator_draws_dyeval_rows_through_the_method() -> None:
    g = parse_text("Two cats on a sofa.")
    row = {"prompt_id": "dyeval-t-p1", "text": "Two cats on a sofa.", "method": "dyeval", "entities": ("cats", "sofa"),
           "attrs": {"graph": g.to_dict(), "owner": "p1"}, "twin_id": "", "group_id": "t/n1"}
    images, truths = ProceduralGenerator().generate_rows([row, row], [0, 1], GenerationParams(width=96, height=96))
    assert [im.shape for im in images] == [(96, 96, 3)] * 2
    assert truths[0]["method"] == "dyeval" and truths[0]["prompt_id"] == "dyeval-t-p1"
    cats = next(o for o in truths[0]["objects"] if o["name"] == "cats")
    assert cats["count"] == 2 and len(cats["boxes"]) == 2


def test_failure_location_judged_by_the_images_truth_finds_the_weak_element() -> None:
    """Each step judged as the auditor would judge its 4 images: a bug when fewer than 3 pass."""
    def judge(sub: SceneGraph) -> str:
        text = sub.render()
        passes = sum(DEMO_WEAKNESSES.judge(sub, text, s).passed for s in range(4))
        return "PASS" if passes / 4 >= 0.75 else "FAIL"

    g = parse_text("A luxurious silk kimono with elegant floral embroidery in vibrant hues.")
    loc = run_location(g, judge)
    assert [t.text for t in loc.triggers] == ["A kimono."]
    g2 = parse_text("A tiny black crescent moon within a big white cloud.")
    loc2 = run_location(g2, judge)
    assert loc2.triggers and all("moon" in t.text and "cloud" in t.text for t in loc2.triggers)
    assert {t.kind for t in loc2.triggers} == {"element"} and all(t.context_text for t in loc2.triggers)


def test_a_profile_without_weaknesses_passes_everything_but_noise() -> None:
    none = KnownWeaknesses("none", noise=0.0)
    g = parse_text("A silk kimono under a glass table.")
    assert all(none.judge(g, "x", s).passed for s in SEEDS)


def test_the_demo_object_finder_scores_what_the_pixels_show_of_the_asked_objects() -> None:
    """The demo's pre-mark score: high where every asked object is drawn as asked, below the
    threshold where one was drawn as another class (of another look) or left out; an object whose
    colour does not tell its look is not scored."""
    from workstation.methods.dyeval.demo import DEMO_THRESHOLD, asked_looks, demo_object_score
    from workstation.methods.dyeval.render import _style

    always = KnownWeaknesses(name="always", objects=frozenset({"drum"}), fail_rate=1.0, noise=0.0)
    never = KnownWeaknesses(name="never", noise=0.0)
    shown, failed = [], []
    for text, seed in ((t, k) for t in ("A ceramic drum.", "A red drum.") for k in range(6)):
        g = parse_text(text)
        assert len(asked_looks(g)) == 1 and asked_looks(g)[0] is not None
        img, truth = render_graph(g, text, seed, size=128, weaknesses=never)
        assert truth["passed"]
        shown.append(demo_object_score(g, img))
        img, truth = render_graph(g, text, seed, size=128, weaknesses=always)
        drum = next(o for o in truth["objects"] if o["name"] == "drum")
        other_look = drum["omitted"] or _style(drum["drawn_as"])[0] != _style("drum")[0]
        if other_look:
            failed.append(demo_object_score(g, img))
    assert all(s is not None and s >= DEMO_THRESHOLD for s in shown), shown
    assert failed and all(s is not None and s < DEMO_THRESHOLD for s in failed), failed
    white = parse_text("A white drum.")
    assert asked_looks(white) == [None]
    assert demo_object_score(white, render_graph(white, "A white drum.", 0, size=128)[0]) is None
