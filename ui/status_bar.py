"""The main window's status bar: the tab's method's counts, the annotator, the labelling progress
of the tab shown, the background open's indicator and the open project (read-only snapshots said
so); the window's title names the project too."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QLabel

TITLE = "T2I Audit Workstation"


def build(window: Any) -> tuple[QLabel, QLabel, QLabel, QLabel]:
    """The status bar's labels, added to `window`'s status bar: (project, counts, annotator, progress)."""
    sb = window.statusBar()
    project_label = QLabel("no project")
    project_label.setObjectName("projectLabel")
    counts_label = QLabel("")
    counts_label.setObjectName("dim")
    annotator_label = QLabel("")
    progress_label = QLabel("")
    progress_label.setObjectName("progressLabel")
    for w in (counts_label, annotator_label, progress_label, window.opener.indicator, project_label):
        sb.addPermanentWidget(w)
    return project_label, counts_label, annotator_label, progress_label


def update(window: Any) -> None:
    """The counts, the annotator and the progress, of the method of the tab shown."""
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


def show_project(window: Any) -> None:
    """The window's title and the project label: the open project, or none."""
    p = window.state.project
    if p is None:
        window.setWindowTitle(TITLE)
        window.project_label.setText("no project — File → Open (Ctrl+O)")
    else:
        ro = "  [read-only snapshot]" if p.read_only else ""
        window.setWindowTitle(f"{p.folder.name}{ro} — {TITLE}")
        window.project_label.setText(f"{p.folder.name}{ro}")
        window.project_label.setToolTip(str(p.folder))
