"""The form helpers every dialog builds its fields and buttons with, and the layout helpers its
rows and columns: what a user sees and does."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from ui.widgets.forms import browse_row, check_box, double_spin_box, ok_cancel, spin_box
from ui.widgets.layout import column, row


def test_number_fields_show_their_value_within_their_bounds(qtbot: Any) -> None:
    width = double_spin_box(0.5, 25.0, 3.0, decimals=1, step=0.5, prefix="± ", suffix=" %", name="w")
    qtbot.addWidget(width)
    assert width.text() == "± 3.0 %"
    width.stepUp()
    assert width.value() == 3.5  # the arrows move it by its step
    width.setValue(99.0)
    assert width.value() == 25.0
    alpha = double_spin_box(0.001, 0.5, 0.1, decimals=3)
    qtbot.addWidget(alpha)
    assert alpha.text() == "0.100" and alpha.minimum() == 0.001  # the bound keeps its three places
    seed = spin_box(0, 2_000_000_000, name="seed")
    qtbot.addWidget(seed)
    assert (seed.value(), seed.objectName()) == (0, "seed")
    size = spin_box(64, 2048, 256, step=64)
    qtbot.addWidget(size)
    size.stepUp()
    assert size.value() == 320


def test_ok_runs_the_dialog_action_and_cancel_closes_it(qtbot: Any) -> None:
    dialog = QDialog()
    qtbot.addWidget(dialog)
    started: list[bool] = []
    buttons = ok_cancel(dialog, "Create and start", "create", lambda: started.append(True))
    QVBoxLayout(dialog).addWidget(buttons)
    ok = dialog.findChild(QPushButton, "create")
    assert ok is not None and ok.text() == "Create and start"
    qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)
    assert started == [True]
    dialog.show()
    qtbot.mouseClick(buttons.button(QDialogButtonBox.StandardButton.Cancel), Qt.MouseButton.LeftButton)
    assert dialog.result() == QDialog.DialogCode.Rejected and not dialog.isVisible()


def test_browse_fills_the_field_beside_it(qtbot: Any) -> None:
    edit = QLineEdit()
    row = browse_row(edit, lambda: edit.setText("/data/run"))
    qtbot.addWidget(row)
    browse = row.findChild(QPushButton)
    assert browse is not None and browse.text() == "Browse…"
    qtbot.mouseClick(browse, Qt.MouseButton.LeftButton)
    assert edit.text() == "/data/run"


def test_a_check_box_reports_each_click_with_its_state(qtbot: Any) -> None:
    seen: list[bool] = []
    box = check_box("blind", seen.append, name="blindBox", checked=True)
    qtbot.addWidget(box)
    box.show()
    assert box.isChecked() and box.objectName() == "blindBox" and box.text() == "blind"
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton)
    assert seen == [False, True]


def test_a_row_gives_its_stretching_widget_the_width_left_and_a_column_keeps_its_boxes_on_top(qtbot: Any) -> None:
    page = QWidget()
    qtbot.addWidget(page)
    summary, button = QLabel("3 of 10 labelled"), QPushButton("Store")
    page.setLayout(row(summary, button, stretch=(1,)))
    page.resize(600, 40)
    page.show()
    qtbot.waitExposed(page)
    assert summary.width() > 600 - button.width() - 40  # the summary takes what the button leaves
    assert button.width() == button.sizeHint().width()
    first, second = QLabel("goal"), QLabel("plan")
    col = column(first, second, margin=4)
    qtbot.addWidget(col)
    col.resize(200, 400)
    col.show()
    qtbot.waitExposed(col)
    assert first.geometry().top() == 4  # inside its margin, at the top
    assert second.geometry().bottom() < 100  # the space left stays below the boxes
