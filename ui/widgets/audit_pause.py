"""The question a route out of a blind audit asks first: "Pause the blind audit to show this?"

Pause records a pause of the audit (`workstation.store.audit.AuditRepo.pause`) and shows what was
asked for, unblinded; Stay in audit (the default, and Esc) shows nothing and keeps the audit's
blind view. `ask` is the one place that asks, so that a test can answer it.
"""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox, QWidget

PAUSE, STAY = "Pause", "Stay in audit"


def pause_dialog(parent: QWidget | None, what: str, audit_set_id: int, annotator: str) -> QMessageBox:
    """The dialog (not shown): `what` would be shown with what the audit hides."""
    box = QMessageBox(parent)
    box.setObjectName("auditPauseDialog")
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle("Blind audit")
    box.setText("Pause the blind audit to show this?")
    box.setInformativeText(
        f"{what} shows what audit set #{audit_set_id} hides (the automated outcome, other annotators' "
        f"labels). If you pause, the pause is recorded, and every item shown to {annotator or 'you'} "
        "until the audit is opened again is marked “seen unblinded” in the audit's record; its label "
        "is flagged in the audit's figures and the report.")
    box.addButton(PAUSE, QMessageBox.ButtonRole.AcceptRole).setObjectName("pauseAudit")
    stay = box.addButton(STAY, QMessageBox.ButtonRole.RejectRole)
    stay.setObjectName("stayInAudit")
    box.setDefaultButton(stay)
    box.setEscapeButton(stay)
    return box


def ask(parent: QWidget | None, what: str, audit_set_id: int, annotator: str) -> bool:
    """True when the auditor chose to pause the audit."""
    box = pause_dialog(parent, what, audit_set_id, annotator)
    box.exec()
    clicked = box.clickedButton()
    return clicked is not None and clicked.objectName() == "pauseAudit"
