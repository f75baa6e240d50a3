"""What the shell's builders add to the main window (`ui.menus`, `ui.status_bar`, `ui.jobs_menu`,
`ui.place`, `ui.audit_plans_window`): declared here, so that mypy knows the window's parts.

`ui.main_window.MainWindow` takes these declarations as a base; they hold nothing until the
builders set them (`build_menus`, `status_bar.build`, `install_jobs_menu`, ...).
"""

from __future__ import annotations

from PySide6.QtCore import QByteArray
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDialog, QLabel, QMenu


class WindowParts:
    """The menus, status bar labels and kept layout the shell's builders add to the window."""

    recent_menu: QMenu  # File → Open recent
    label_menu: QMenu
    label_menu_anchor: QAction  # where the Label menu's method items go
    view_menu: QMenu
    view_menu_anchor: QAction  # where the View menu's method items go
    panels_menu: QMenu  # View → Panels: the docks
    methods_menu: QMenu
    audit_menu: QMenu
    audit_sets_menu: QMenu  # Audit → Open audit set
    jobs_menu: QMenu
    jobs_actions: dict[str, QAction]  # the Jobs menu's actions by what they do
    adjudicate_action: QAction  # Audit → Adjudicate… (enabled for an adjudicator)
    project_label: QLabel  # the status bar's parts
    counts_label: QLabel
    annotator_label: QLabel
    progress_label: QLabel
    kept_layout: QByteArray  # the dock layout a project kept (docks installed later take it too)
    audit_plans_window: QDialog  # Audit → Audit plans…, once opened
