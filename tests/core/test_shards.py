"""Sharding: every item in exactly one shard, the same split on every machine."""

from __future__ import annotations

import random

import pytest

from workstation.jobs.shards import Shard, select, shard_of, split, stable_hash
from workstation.jobs.spec import DetItem, JobSpec, detection_items, generation_items
from workstation.methods.spatial.suite import spatial_suite
from workstation.types import WorkstationError


def keys(n_prompts: int = 200, n_seeds: int = 4) -> list[str]:
    return [f"builtin-1_{p:06d}|{s}" for p in range(n_prompts) for s in range(n_seeds)]


def test_parse_shard_text() -> None:
    assert Shard.parse("2/4") == Shard(2, 4)
    assert Shard.parse(" 1 / 1 ") == Shard()
    assert Shard.parse(None).whole
    assert str(Shard.parse("3/8")) == "3/8"
    with pytest.raises(WorkstationError, match="1-based"):
        Shard.parse("2-4")
    with pytest.raises(WorkstationError, match="numbered 1/4"):
        Shard.parse("0/4")
    with pytest.raises(WorkstationError, match="does not exist"):
        Shard.parse("5/4")


def test_hash_is_fixed_across_machines() -> None:
    # a changed hash would split the same job differently on an upgraded machine
    assert stable_hash("p|0") == 15252232172987495898
    assert shard_of("builtin-1_000000|0", 4) == 4
    assert shard_of("builtin-1_000001|1", 3) == 2


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
def test_shards_are_disjoint_and_cover_everything(n: int) -> None:
    items = keys()
    parts = [select(items, Shard(i, n), key=str) for i in range(1, n + 1)]
    flat = [k for part in parts for k in part]
    assert sorted(flat) == sorted(items)  # union is the whole, nothing twice
    assert len(set(flat)) == len(flat)
    assert parts == split(items, n, key=str)
    # each shard keeps the job's order
    for part in parts:
        assert part == [k for k in items if k in set(part)]
    # roughly even: 800 items over n shards
    mean = len(items) / n
    assert all(abs(len(p) - mean) < 0.25 * mean + 5 for p in parts)


def test_split_does_not_depend_on_order_or_on_other_items() -> None:
    items = keys()
    shuffled = items[:]
    random.Random(3).shuffle(shuffled)
    a = {k for k in items if Shard(2, 3).owns(k)}
    b = set(select(shuffled, Shard(2, 3), key=str))
    assert a == b
    # a suite that grows keeps the old items in their shards
    grown = items + keys(300, 4)[len(items):]
    assert set(select(grown, Shard(2, 3), key=str)) >= a


def test_generation_items_of_shards_union_to_the_job() -> None:
    prompts = spatial_suite(4)  # 16 prompts

    def spec(shard: list[int]) -> JobSpec:
        return JobSpec(job_id="g", kind="generate", run_id="r", seeds=[0, 1], shard=shard)

    whole = generation_items(spec([1, 1]), prompts)
    assert len(whole) == 32
    p0, p1 = prompts.prompt_id[0], prompts.prompt_id[1]
    assert [(it.prompt_id, it.seed) for it in whole[:3]] == [(p0, 0), (p0, 1), (p1, 0)]
    parts = [generation_items(spec([i, 3]), prompts) for i in (1, 2, 3)]
    assert sorted(it.key for p in parts for it in p) == sorted(it.key for it in whole)
    assert sum(len(p) for p in parts) == 32
    assert all(len(p) > 0 for p in parts)
    # the same on a second call (another machine)
    assert generation_items(spec([2, 3]), prompts) == parts[1]


def test_detection_items_of_shards_union_to_the_job() -> None:
    samples = {"sample_id": [f"s{i}" for i in range(50)], "image_path": [f"images/{i}.png" for i in range(50)],
               "label_a": ["cat"] * 50, "label_b": ["dog"] * 50}
    whole = detection_items(JobSpec(job_id="d", kind="detect"), samples)
    assert whole[0] == DetItem("s0", "images/0.png", ("cat", "dog"))
    parts = [detection_items(JobSpec(job_id="d", kind="detect", shard=[i, 2]), samples) for i in (1, 2)]
    assert {it.key for it in parts[0]}.isdisjoint({it.key for it in parts[1]})
    assert {it.key for p in parts for it in p} == {it.key for it in whole}
