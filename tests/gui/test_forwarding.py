"""An attribute forwarded from the object a wrapper holds (`ui/forwarding.py`): the judging
controller shows its core queue's state, a session the application's."""

from __future__ import annotations

from typing import Any

import pytest

from ui.forwarding import Forwarded


class _Core:
    def __init__(self) -> None:
        self.pos = 3
        self.current = 7


class _Wrapper:
    pos = Forwarded[int]("core")
    current_index = Forwarded[int]("core", "current")

    def __init__(self) -> None:
        self.core = _Core()


def test_a_forwarded_attribute_reads_the_held_object_now() -> None:
    w = _Wrapper()
    assert (w.pos, w.current_index) == (3, 7)
    w.core.pos, w.core.current = 4, 9  # the held object moved on: the wrapper says so
    assert (w.pos, w.current_index) == (4, 9)
    w.core = _Core()  # and another object held is read from then on
    assert w.pos == 3


def test_a_forwarded_attribute_cannot_be_set_on_the_wrapper() -> None:
    w = _Wrapper()
    with pytest.raises(AttributeError, match="core"):
        w.pos = 5
    assert w.pos == 3 and w.core.pos == 3


def test_the_judging_controller_shows_its_queues_position(qtbot: Any, labelled_state: Any) -> None:
    controller = labelled_state.controller
    assert controller.pos == controller.core.pos
    assert controller.current_index == controller.core.current
    assert labelled_state.project is labelled_state.app.project
