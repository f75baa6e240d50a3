"""The main window's status bar: the verdict counts of the tab shown, the annotator, the
progress of the method's queue, the background open's indicator and the project's name (which
the window's title repeats)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QLabel

if TYPE_CHECKING:
    from .main_window import MainWindow

TITLE = "T2I Audit Workstation"


def build(window: MainWindow) -> None:
    """The permanent labels, as `window.counts_label`, `annotator_label`, `progress_label` and
    `project_label`."""
    sb = window.statusBar()
    window.project_label = QLabel("no project")
    window.project_label.setObjectName("projectLabel")
    window.counts_label = QLabel("")
    window.counts_label.setObjectName("dim")
    window.annotator_label = QLabel("")
    window.progress_label = QLabel("")
    window.progress_label.setObjectName("progressLabel")
    for w in (window.counts_label, window.annotator_label, window.progress_label, window.opener.indicator,
              window.project_label):
        sb.addPermanentWidget(w)


def update(window: MainWindow) -> None:
    """The counts, the annotator and the progress of the method whose tab is shown."""
    st = window.state
    views = window.current_views()
    counts = getattr(views, "status_counts", None) if views is not None else None
    window.counts_label.setText(counts(window) if counts is not None else "")
    window.annotator_label.setText(f"annotator: {st.annotator or '—'}" if st.project is not None else "")
    c = views.controller(window) if views is not None else None
    if c is None or st.project is None:
        window.progress_label.setText("")
        return
    done, total = c.progress()
    what = f"in audit set #{c.audit.audit_set_id}" if c.audit is not None else \
        "in the queue" if not c.core.plain else "in all"
    window.progress_label.setText(f"labelled {done:,} / {total:,} {what}")


def show_project(window: MainWindow) -> None:
    """The window's title and the project label: the open project, or none."""
    p = window.state.project
    if p is None:
        window.setWindowTitle(TITLE)
        window.project_label.setText("no project — File → Open (Ctrl+O)")
    else:
        ro = "  [read-only snapshot]" if p.read_only else ""
        window.setWindowTitle(f"{Path(p.folder).name}{ro} — {TITLE}")
        window.project_label.setText(f"{Path(p.folder).name}{ro}")
        window.project_label.setToolTip(str(p.folder))
