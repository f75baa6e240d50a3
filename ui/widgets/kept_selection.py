"""A method's label selection in the window: read from the project when first asked for, kept
with a writable project when chosen (`workstation.evaluation.selection.load_selection` /
`save_selection`, the setting ``label_selection.<task>``), the same for every method's views.
A kept value that cannot be read is said once in the status line and the default is used until
another selection is chosen."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workstation.evaluation.selection import LabelSelection, default_selection, load_selection, save_selection
from workstation.types import WorkstationError


class KeptSelection:
    """One task's label selection for the window (module doc). ``default`` gives the selection
    where the project keeps none (the task's `default_selection` when not given)."""

    def __init__(self, task: str, project: Callable[[], Any], message: Callable[[str], Any] | None = None,
                 default: Callable[[], LabelSelection] | None = None) -> None:
        self.task = task
        self._project, self._message = project, message
        self._default = default or (lambda: default_selection(task))
        self._selection: LabelSelection | None = None
        self._read = False

    def _load(self) -> None:
        from workstation.evaluation.selection import SETTING

        p = self._project()
        self._read = True
        self._selection = None
        if p is None or not p.get_setting(SETTING + self.task):
            return
        try:
            self._selection = load_selection(p, self.task)
        except WorkstationError as e:
            if self._message is not None:
                rule = self._default().describe()[len("labels: "):]
                self._message(f"{e} — the default ({rule}) counts until another selection is chosen")

    @property
    def selection(self) -> LabelSelection:
        """The kept selection, or the default where none is kept (or it cannot be read)."""
        if not self._read:
            self._load()
        return self._selection if self._selection is not None else self._default()

    @property
    def kept(self) -> bool:
        """The project keeps a selection of the task (the default is not in use)."""
        if not self._read:
            self._load()
        return self._selection is not None

    def set(self, selection: LabelSelection) -> None:
        """Use ``selection`` and keep it with the project when it can be written."""
        p = self._project()
        if p is not None and not p.read_only:
            save_selection(p, self.task, selection)
        self._selection, self._read = selection, True

    def forget(self) -> None:
        """Another project (or none): read its selection when next asked for."""
        self._selection, self._read = None, False
