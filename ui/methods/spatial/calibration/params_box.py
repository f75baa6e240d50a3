"""The Calibration tab's "Checker parameters" box: the sliders, Reset and Grid search…, a note
and Apply for a new checker-config version, and a line that says whether the live parameters are
the stored active version's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QGroupBox, QHBoxLayout, QLineEdit, QVBoxLayout

from workstation.methods.spatial.config import CheckerConfig
from workstation.methods.spatial.store import SpatialStore

from ....widgets.forms import push_button, wrapped_label
from .sliders import PARAMS, ParamSliders

APPLY_TIP = "save these parameters as a new checker-config version with its verdicts"


class ParamsBox(QGroupBox):
    """Reset, Grid search… and Apply (its button, or Enter in the note) call `reset`,
    `grid_search` and `apply`; `is_applied` and `show_version` read the state
    (`SpatialSession`) they are given."""

    def __init__(self, state: Any, reset: Callable[[], object], grid_search: Callable[[], object],
                 apply: Callable[[], object]) -> None:
        super().__init__("Checker parameters")
        self.state = state
        self._stored_hash: dict[int, str] = {}  # config version → content hash
        self._live_hash: tuple[CheckerConfig, str] | None = None
        pl = QVBoxLayout(self)
        self.sliders = ParamSliders(PARAMS)
        pl.addWidget(self.sliders)
        btns = QHBoxLayout()
        self.reset_button = push_button("Reset", reset, "back to the stored active version", name="calib_reset")
        self.grid_button = push_button("Grid search…", grid_search, name="calib_grid")
        btns.addWidget(self.reset_button)
        btns.addWidget(self.grid_button)
        btns.addStretch(1)
        pl.addLayout(btns)
        apply_row = QHBoxLayout()
        self.note_edit = QLineEdit()
        self.note_edit.setObjectName("calib_note")
        self.note_edit.setPlaceholderText("note for the new version (optional)")
        self.note_edit.returnPressed.connect(apply)
        self.apply_button = push_button("Apply", apply, APPLY_TIP, name="calib_apply")
        apply_row.addWidget(self.note_edit, 1)
        apply_row.addWidget(self.apply_button)
        pl.addLayout(apply_row)
        self.version_label = wrapped_label(name="calib_version")
        pl.addWidget(self.version_label)

    def forget_versions(self) -> None:
        """Another project: the stored versions' hashes read are not its."""
        self._stored_hash.clear()

    def is_applied(self) -> bool:
        """The live parameters are those of the stored active version."""
        st = self.state
        if st.config_id is None or st.project is None:
            return False
        h = self._stored_hash.get(st.config_id)
        if h is None:
            try:
                h = SpatialStore(st.project).get_config(st.config_id).content_hash()
            except Exception:  # noqa: BLE001 - a version that cannot be read is not applied
                return False
            self._stored_hash[st.config_id] = h
        if self._live_hash is None or self._live_hash[0] is not st.config:
            self._live_hash = (st.config, st.config.content_hash())
        return h == self._live_hash[1]

    def show_version(self) -> None:
        """Say whether the live parameters are applied; Apply only when they are not (and the
        project can be written)."""
        st = self.state
        if st.project is None:
            return
        applied = self.is_applied()
        cid = st.config_id
        if cid is None:
            txt = "No stored checker config: defaults are live. Apply saves them as v1."
        elif applied:
            txt = f"Live parameters are the stored active version v{cid} ({st.config.content_hash()})."
        else:
            txt = f"<b>Not applied:</b> live parameters differ from the active version v{cid}."
            if getattr(st, "draft_restored", False):
                txt += " (kept from the last session; kept again if you quit without applying)"
            else:
                txt += " Quitting keeps them as a draft for next time."
            txt += f" Audit plans use the stored verdicts of v{cid}, not these."
        self.version_label.setText(txt)
        ro = bool(getattr(st.project, "read_only", False))
        self.apply_button.setEnabled(not applied and not ro)
        self.apply_button.setToolTip("the project is open read-only" if ro else APPLY_TIP)
