"""The Qt binding in use keeps Python's reference counts intact.

PySide6 6.12.0 on Python 3.11 drops a reference to None on every call that returns nothing
(and to True/False on every signal emit); after a few thousand calls the interpreter aborts
with "deallocating None". pyproject.toml excludes that release; this test catches a binding
that brings the fault back.
"""

from __future__ import annotations

import sys

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QLabel


class _Emitter(QObject):
    fired = Signal(bool)


def test_void_calls_and_emits_keep_none_and_bool_refcounts(qtbot) -> None:
    label = QLabel()
    qtbot.addWidget(label)
    em = _Emitter()
    got: list[bool] = []
    em.fired.connect(got.append)
    before_none, before_true = sys.getrefcount(None), sys.getrefcount(True)
    for _ in range(2000):
        label.setText("x")
        em.fired.emit(True)
    # Other code may create references meanwhile; a leak would be ~ -2000.
    assert sys.getrefcount(None) - before_none > -100
    assert sys.getrefcount(True) - before_true > -100
    assert len(got) == 2000
