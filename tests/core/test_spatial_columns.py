"""`prompt_columns` reads each distinct attrs dict and entity tuple once; it must give exactly
what a plain pass over every prompt gives, whether the prompts share those objects (as the
loader's do) or each has its own, and whatever odd values their fields hold."""

from __future__ import annotations

import numpy as np
import pytest

from workstation.dataset import Prompts
from workstation.methods.spatial.data import prompt_columns
from workstation.methods.spatial.types import RELATION_CODE


def _reference(p: Prompts) -> tuple[np.ndarray, list[str], list[str], list[str]]:
    """Relation codes, A, B and the names' order: one prompt at a time."""
    rel, a, b, names = [], [], [], {"": 0}
    for at, ents in zip(p.attrs.tolist(), p.entities.tolist()):
        r = at.get("relation") if isinstance(at, dict) else None
        if isinstance(r, str) and r in RELATION_CODE and ents is not None and len(ents) >= 2:
            rel.append(RELATION_CODE[r])
            names.setdefault(ents[0], len(names))
            names.setdefault(ents[1], len(names))
            a.append(ents[0])
            b.append(ents[1])
        else:
            rel.append(-1)
            a.append("")
            b.append("")
    return np.array(rel, np.int8), a, b, list(names)


ATTRS = [{"relation": "left_of"}, {"relation": "right_of"}, {"relation": "above"}, {"relation": "below"},
         {"relation": "beside"}, {"relation": ["left_of"]}, {"relation": None}, {}, None, {"x": 1}]
ENTS = [("cat", "dog"), ("dog", "cat"), ("car", "tree"), ("tree", "bench"), ("cat",), (), None,
        ("bird", "cat", "dog"), ("dog", "bird")]


def _prompts(rng: np.random.Generator, n: int, shared: bool) -> Prompts:
    at = rng.integers(0, len(ATTRS), n)
    en = rng.integers(0, len(ENTS), n)
    # shared: one object per distinct value (as the loader gives them); else a copy per prompt
    attrs = [ATTRS[i] if shared else (dict(ATTRS[i]) if ATTRS[i] is not None else None) for i in at]
    ents = [ENTS[i] if shared or ENTS[i] is None else tuple(list(ENTS[i])) for i in en]
    ids = [f"p{i}" for i in range(n)]
    return Prompts.build(ids, ids, method="spatial", entities=ents, attrs=attrs)


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_prompt_columns_match_a_prompt_by_prompt_reading(seed: int, shared: bool) -> None:
    rng = np.random.default_rng(seed)
    p = _prompts(rng, int(rng.integers(1, 400)), shared)
    rel, a, b, names = _reference(p)
    pc = prompt_columns(p)
    assert pc.relation.dtype == np.int8 and pc.relation.tolist() == rel.tolist()
    assert pc.label_a.tolist() == a and pc.label_b.tolist() == b
    assert pc.names == names  # the same order: codes and names as before
    assert [pc.names[c] for c in pc.code_a.tolist()] == a and [pc.names[c] for c in pc.code_b.tolist()] == b


def test_prompt_columns_of_no_prompts_and_of_prompts_of_other_methods() -> None:
    pc = prompt_columns(Prompts.empty())
    assert len(pc.relation) == 0 and pc.names == [""]
    p = Prompts.build(["q1", "q2"], ["x", "y"], method="metalogic", entities=[("a", "b"), ("c", "d")],
                      attrs=[{"kind": "twin"}, {"kind": "twin"}])
    pc = prompt_columns(p)
    assert pc.relation.tolist() == [-1, -1] and pc.label_a.tolist() == ["", ""] and pc.names == [""]


def test_two_threads_asking_at_once_get_the_same_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """The window's views and its background check ask for a freshly loaded dataset's columns
    at the same time; the checker keys its preparation on their identity, so both must get the
    one computed set (a second set would make the next evaluation prepare everything again)."""
    import threading
    import time

    from workstation.methods.spatial import data
    from workstation.methods.spatial.data import spatial_columns, spatial_dataset

    from workstation.dataset import Samples

    ds = spatial_dataset(Samples.build(["s1", "s2"], "run", ["p1", "p2"]), ["left_of", "above"], ["cat", "car"],
                         ["dog", "tree"])
    real = data.prompt_columns

    def slow(p):  # long enough for the second thread to ask meanwhile
        time.sleep(0.3)
        return real(p)

    monkeypatch.setattr(data, "prompt_columns", slow)
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(spatial_columns(ds))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 2 and got[0] is got[1] is spatial_columns(ds)
    assert got[0].label_a.tolist() == ["cat", "car"]
