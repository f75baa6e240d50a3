"""DyEval in a project: helpers shared by the store, runner, command and end-to-end tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def judge_truth() -> Callable[..., int]:
    """Label every image waiting for a judgement with its truth (the scripted model's verdict),
    one committed label event per image; returns how many."""

    def judge(runner: Any, annotator: str = "oracle", limit: int | None = None) -> int:
        truth = runner.project.samples.truth()
        n = 0
        for j in runner.tree.judging_queue():
            if limit is not None and n >= limit:
                break
            runner.label(j.image_id, truth[j.image_id]["expected"], annotator)
            n += 1
        return n

    return judge
