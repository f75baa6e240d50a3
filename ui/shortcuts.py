"""Every keyboard shortcut is made through this module, and the F1 sheet lists those that act.

A binding (`bind` for a page's own keys, `make_action` for the window's actions, `bind_tabs`
for the tab keys) records its keys, what it does, its group and the method whose page it
serves. The F1 sheet and the Label menu are generated from the bindings that are *active* on
the page shown — enabled, on a page that is shown, of the window's own or of the method of the
page shown — so the sheet lists MetaLogic's A / M / U on MetaLogic's page and ProtoBias's 1–4
on its rating page, and nothing that no key does. `SHORTCUTS` holds the text of the window's
actions (the `make_action` ids).
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

if TYPE_CHECKING:
    from .main_window import MainWindow
    from .method_views import MethodViews


@dataclass(frozen=True)
class Shortcut:
    id: str
    keys: str  # QKeySequence text; several separated by ";"
    text: str  # menu text
    help: str  # one line for the sheet
    group: str


#: the window's actions (`make_action`); the pages' keys are bound with `bind`
SHORTCUTS: tuple[Shortcut, ...] = (
    Shortcut("goto", "Ctrl+G", "Go to sample…", "Jump to a sample id", "Navigate"),
    Shortcut("jobs", "Ctrl+J", "Jobs panel", "Show / hide the jobs panel (generation, detection)", "Navigate"),
    # view (the pair viewer's)
    Shortcut("layer_others", "1", "Other detections", "Show / hide the other primary detections", "View"),
    Shortcut("layer_secondary", "2", "Secondary detector", "Show / hide the secondary detector's boxes",
             "View"),
    Shortcut("layer_perturbed", "3", "Perturbed images' boxes",
             "Show / hide the boxes found on the perturbed images", "View"),
    Shortcut("layer_geometry", "4", "Centres and margin", "Show / hide box centres and the margin band",
             "View"),
    Shortcut("layer_labels", "5", "Box labels", "Show / hide the label and score tags", "View"),
    Shortcut("thicker", "]", "Thicker lines", "Draw boxes with thicker lines", "View"),
    Shortcut("thinner", "[", "Thinner lines", "Draw boxes with thinner lines", "View"),
    Shortcut("fit", "0", "Fit to window", "Fit both images to the window", "View"),
    Shortcut("zoom_in", "Ctrl+=;Ctrl++", "Zoom in", "Zoom in (both images; the wheel does too)", "View"),
    Shortcut("zoom_out", "Ctrl+-", "Zoom out", "Zoom out", "View"),
    Shortcut("theme", "Ctrl+Shift+T", "Dark / light theme", "Switch between the dark and light theme",
             "View"),
    # project
    Shortcut("open", "Ctrl+O", "Open project…", "Open a project folder", "Project"),
    Shortcut("new", "Ctrl+N", "New project…", "Create a project folder", "Project"),
    Shortcut("audit_new", "Ctrl+Shift+A", "New audit set…", "Draw a stratified audit sample", "Project"),
    Shortcut("find", "Ctrl+F", "Find in prompts", "Put the cursor in the prompt search field", "Project"),
    Shortcut("help", "F1", "Keyboard shortcuts", "This sheet: the keys of the page shown", "Help"),
    Shortcut("quit", "Ctrl+Q", "Quit", "Close the workstation", "Project"),
)

BY_ID = {s.id: s for s in SHORTCUTS}
GROUPS = ("Label", "Navigate", "Tabs", "View", "Project", "Help")


_COUNTER = itertools.count()


@dataclass(eq=False)
class Binding:
    """One key binding: its keys, what it does (`help`, `text` for a menu), its group, the method
    whose page it serves ("" for the window's own), and the QShortcut or QAction that acts."""

    keys: tuple[str, ...]
    help: str
    group: str
    method: str
    text: str
    fn: Callable[[], Any]
    obj: Any = field(repr=False)  # weakref.ref to the QShortcut / QAction
    page: Any = field(repr=False)  # weakref.ref to the page it acts on, or None (the window)
    seq: int = field(default_factory=lambda: next(_COUNTER))  # the order bound in

    def target(self) -> Any:
        return self.obj()

    def active(self, window: QWidget) -> bool:
        """Whether its keys act now in `window`: alive, enabled, its page shown in that window."""
        from shiboken6 import isValid

        o = self.obj()
        if o is None or not isValid(o) or not o.isEnabled():
            return False
        if self.page is None:
            owner = o.parent()
            return owner is window or (isinstance(owner, QWidget) and QWidget.window(owner) is window)
        page = self.page()
        return page is not None and isValid(page) and page.isVisible() and QWidget.window(page) is window

    def keys_text(self) -> str:
        native = QKeySequence.SequenceFormat.NativeText
        return " or ".join(QKeySequence(k).toString(native) for k in self.keys)


_ALL: weakref.WeakSet[Binding] = weakref.WeakSet()


def _keep(obj: QObject, b: Binding) -> Binding:
    """The binding lives as long as its shortcut's wrapper (its parent keeps that alive)."""
    kept = getattr(obj, "_bindings", None)
    if kept is None:
        kept = []
        obj._bindings = kept  # type: ignore[attr-defined]
    kept.append(b)
    _ALL.add(b)
    return b


def bind(page: QWidget, keys: str | Sequence[str], fn: Callable[[], Any], help: str, group: str,
         method: str = "", text: str = "", unless: Callable[[], bool] | None = None) -> QShortcut:
    """Bind `keys` on `page` (acting while the page is shown, whatever has the focus in its
    window, except while `unless()` holds) to `fn`, recorded for the sheet and the Label menu
    (whose entry calls `fn`)."""
    seqs = tuple(keys.split(";")) if isinstance(keys, str) else tuple(keys)
    sc = QShortcut(QKeySequence(seqs[0]), page)
    if len(seqs) > 1:
        sc.setKeys([QKeySequence(k) for k in seqs])
    sc.setContext(Qt.ShortcutContext.WindowShortcut)
    sc.activated.connect(fn if unless is None else (lambda: None if unless() else fn()))
    _keep(sc, Binding(seqs, help, group, method, text or help, fn, weakref.ref(sc), weakref.ref(page)))
    return sc


def key_sequences(sid: str) -> list[QKeySequence]:
    return [QKeySequence(k) for k in BY_ID[sid].keys.split(";")]


def register_action(action: QAction, help: str, group: str, method: str = "") -> QAction:
    """Record a window action made elsewhere (its shortcuts already set) for the sheet."""
    keys = tuple(k.toString() for k in action.shortcuts())
    _keep(action, Binding(keys, help, group, method, action.text(), action.trigger, weakref.ref(action), None))
    return action


def make_action(parent: QWidget, sid: str, slot: Callable[..., object] | None = None,
                checkable: bool = False,
                context: Qt.ShortcutContext = Qt.ShortcutContext.WindowShortcut, method: str = "") -> QAction:
    """A window action from `SHORTCUTS` (its text, keys and help), recorded for the sheet."""
    s = BY_ID[sid]
    a = QAction(s.text, parent)
    a.setObjectName("action_" + sid)
    a.setShortcuts(key_sequences(sid))
    a.setShortcutContext(context)
    a.setToolTip(f"{s.help} ({s.keys.split(';')[0]})")
    a.setCheckable(checkable)
    if slot is not None:
        (a.toggled if checkable else a.triggered).connect(slot)
    parent.addAction(a)
    _keep(a, Binding(tuple(s.keys.split(";")), s.help, s.group, method, s.text, a.trigger, weakref.ref(a), None))
    return a


def bindings(window: QWidget) -> list[Binding]:
    """Every binding of `window` that exists now (whether it acts or not)."""
    from shiboken6 import isValid

    out = []
    for b in list(_ALL):
        o = b.obj()
        if o is None or not isValid(o):
            continue
        owner = b.page() if b.page is not None else o.parent()
        if owner is not None and isValid(owner) and (owner is window or (isinstance(owner, QWidget) and QWidget.window(owner) is window)):
            out.append(b)
    return out


def active_bindings(window: MainWindow) -> list[Binding]:
    """The bindings that act on the page shown: the window's own, and the current method's on
    pages that are shown; in the order of `GROUPS`, each group in the order bound."""
    views = window.current_views() if hasattr(window, "current_views") else None
    method = getattr(views, "method", "") if views is not None else ""
    # a page's keys act only while their page is shown; the window's actions of a method only
    # on that method's pages
    out = [b for b in bindings(window) if b.active(window) and (b.page is not None or b.method in ("", method))]
    seen: set[tuple[str, ...]] = set()
    uniq = []
    def order(b: Binding) -> tuple[int, str, int]:
        g = GROUPS.index(b.group) if b.group in GROUPS else len(GROUPS)
        return g, b.keys[0] if b.group == "Tabs" else "", b.seq

    for b in sorted(out, key=order):
        if b.keys in seen:  # one key acts once (two pages shown at once bind the same)
            continue
        seen.add(b.keys)
        uniq.append(b)
    return uniq


def bind_tabs(window: MainWindow, views: MethodViews[Any]) -> None:
    """One key per tab page of a method (`MethodViews.tab_keys`, else the next free Ctrl+digit),
    in `window.tab_actions[(method, index)]`; a tab the policy closes says why (`show_page`)."""
    actions = window.tab_actions
    used = {a.shortcut().toString() for a in actions.values()}
    declared = list(getattr(views, "tab_keys", ()) or ())
    for i, page in enumerate(views.pages(window)):
        if (views.method, i) in actions:
            continue
        key = declared[i] if i < len(declared) else next(
            (f"Ctrl+{d}" for d in range(1, 10) if f"Ctrl+{d}" not in used), "")
        title = window.tabs.tabText(window.tabs.indexOf(page)) or views.title
        a = QAction(title, window)
        a.setObjectName(f"tab_{views.method}_{i}")
        if key:
            a.setShortcut(QKeySequence(key))
            used.add(key)
        a.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        a.triggered.connect(lambda _=False, p=page: window.show_page(p))
        window.addAction(a)
        actions[(views.method, i)] = a
        register_action(a, f"Show the {title} tab", "Tabs")
        window.view_menu.insertAction(window.view_menu_anchor, a)
    sync_tabs(window)


def sync_tabs(window: MainWindow) -> None:
    """A tab key acts while its tab is shown in the tab bar (its method has data)."""
    for (name, i), a in window.tab_actions.items():
        views = window.method_views.get(name)
        pages = views.pages(window) if views is not None else []
        idx = window.tabs.indexOf(pages[i]) if i < len(pages) else -1
        a.setEnabled(idx >= 0 and window.tabs.isTabVisible(idx))


class ShortcutSheet(QDialog):
    """The F1 sheet: the keys that act on the page shown, grouped (`active_bindings`)."""

    def __init__(self, parent: MainWindow | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.setObjectName("shortcutSheet")
        lay = QVBoxLayout(self)
        rows = active_bindings(parent) if parent is not None else []
        where = ""
        if parent is not None and hasattr(parent, "tabs"):
            where = parent.tabs.tabText(parent.tabs.currentIndex())
        self.heading = QLabel(f"The keys of the page shown: <b>{where}</b>" if where else "The window's keys")
        self.heading.setWordWrap(True)
        lay.addWidget(self.heading)
        t = QTableWidget(len(rows), 3, self)
        t.setHorizontalHeaderLabels(["Group", "Keys", "What it does"])
        t.verticalHeader().hide()
        t.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        t.setSelectionMode(QTableWidget.SelectionMode.NoSelection)
        t.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # a sheet to read: no cell framed as if it were chosen
        t.setWordWrap(True)
        for i, b in enumerate(rows):
            for j, text in enumerate((b.group, b.keys_text(), b.help)):
                t.setItem(i, j, QTableWidgetItem(text))
        t.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        t.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        t.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.table = t
        self.rows = rows
        lay.addWidget(t)
        bb = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        bb.rejected.connect(self.reject)
        lay.addWidget(bb)
        self.resize(680, min(640, 120 + 30 * len(rows)))

    def listed(self) -> list[tuple[str, str]]:
        """(keys, what it does) of each row, as shown."""
        # all filled
        return [(self.table.item(r, 1).text(), self.table.item(r, 2).text())  # type: ignore[union-attr]
                for r in range(self.table.rowCount())]
