"""A method's audit page: one target at a time from an audit set's queue, judged with the keys.

For methods whose pages are tables, trees or grids (MetaLogic's pairs, DyEval's test images),
an audit set is judged here: a header naming the set and what is hidden, the method's view of
one target (`TargetView`), and the shared judgement bar over the method's `JudgeController`.
The target view is told what the policy lets it show (`Visibility`); nothing else is on the page.

No label key acts where no target is shown: with no audit set open (on a page that judges only
audit sets) the keys record nothing, and where the view cannot show the target (its image is not
found: `TargetView.missing`) they record only the scheme's abstaining value (`LabelScheme.abstain`,
e.g. UNDECIDABLE), pressed explicitly; the bar says what is missing.
"""

from __future__ import annotations

import html
from typing import Protocol

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from workstation.evaluation.judging import Visibility

from .judge import JudgeBar, JudgeController, install_shortcuts


class TargetView(Protocol):
    """A method's view of one target of its label task."""

    @property
    def widget(self) -> QWidget: ...

    def show_target(self, index: int, vis: Visibility) -> None: ...

    def clear(self) -> None: ...

    # optional: ``missing() -> str`` says what of the target shown is missing ("" when nothing is,
    # e.g. "image not found: images/x.png")


class AuditPage(QWidget):
    def __init__(self, controller: JudgeController, view: TargetView, noun: str = "item",
                 colors: dict[str, str] | None = None, parent: QWidget | None = None, *,
                 plain: bool = False) -> None:
        """``plain``: the page judges the method's queue outside audit sets too (it shows the
        current target then); else it shows, and records, only an open audit set's targets."""
        super().__init__(parent)
        self.setObjectName("auditPage")
        self.c = controller
        self.view = view
        self.plain = plain
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 6, 8, 6)
        self.header = QLabel("")
        self.header.setObjectName("auditHeader")
        self.header.setWordWrap(True)
        self.header.setTextFormat(Qt.TextFormat.RichText)
        lay.addWidget(self.header)
        lay.addWidget(view.widget, 1)
        self.bar = JudgeBar(controller, self, colors=colors, noun=noun)
        self.bar.focus_target = self
        lay.addWidget(self.bar)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        install_shortcuts(self, controller, self.bar)
        controller.moved.connect(lambda _i: self.refresh())
        controller.queue_changed.connect(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        c = self.c
        a = c.audit
        vis = c.visibility()
        if a is None and not self.plain:
            self.header.setText("No audit set is open here. <b>Audit → New audit set…</b> draws one; "
                                "<b>Audit → Open audit set</b> opens a stored one.")
            self.view.clear()
            self.bar.set_unshown("no audit set is open here", queue=False)
            return
        if a is None:
            self.header.setText(f"Every {html.escape(self.bar.noun)} in order (no audit set open) · "
                                f"{html.escape(vis.describe())}")
        else:
            what = "blind" if a.blind else "not blind"
            self.header.setText(f"<b>Audit set #{a.audit_set_id} {html.escape(a.name)}</b> ({what}) · "
                                f"{html.escape(vis.describe())}")
        if c.current_index < 0:
            self.view.clear()
            self.bar.set_unshown("")
            return
        self.view.show_target(c.current_index, vis)
        missing = getattr(self.view, "missing", None)
        gone = missing() if callable(missing) else ""
        abstain = c.scheme.abstain
        self.bar.set_unshown(gone, (abstain,) if gone and abstain else ())
