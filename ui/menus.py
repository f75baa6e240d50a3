"""The window's menus: File, Label, View, Methods, Audit, Help; and label files in and out.

Every method's judging goes through its views' `JudgeController`, so these menus are the same
for all four: the scheme's keys (the Label menu shows them; the pages bind them), audit sets
(drawn from the method's `AuditPopulation`, opened on its judging page), self-agreement on
re-checks, agreement between annotators and adjudication, the annotator's name. What would
show another annotator's labels (agreement, adjudication, a full label export) is refused while
the method's queue hides them (a blind audit).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from collections.abc import Callable

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox

from workstation.types import WorkstationError

from . import project_dialogs
from .shortcuts import make_action

if TYPE_CHECKING:
    from .main_window import MainWindow


def _views(window: MainWindow, what: str) -> Any:
    """The views of the method shown, with a controller; None (and a message) otherwise."""
    views = window.current_views()
    if views is None or views.controller(window) is None or window.state.project is None:
        window.statusBar().showMessage(f"{what}: show a method's page first (Browse, Review, MetaLogic, ...)", 6000)
        return None
    return views


def _hidden_now(window: MainWindow, views: Any, what: str) -> bool:
    vis = views.controller(window).view_visibility()
    if vis.others and vis.own_earlier:
        return False
    QMessageBox.information(window, what, f"{what} shows other annotators' labels: not during a blind audit. "
                            "Leave the audit first (Audit → Leave audit set).")
    return True


def _add(window: MainWindow, menu: QMenu, text: str, slot: Callable[[], Any]) -> QAction:
    act = QAction(text, window)
    act.triggered.connect(lambda _=False: slot())
    menu.addAction(act)
    return act


def build_menus(window: MainWindow) -> None:
    """The menu bar. The Label menu shows the keys of the page shown (each page binds its own);
    the View menu has an anchor before which the methods' views put their entries."""
    w = window
    a = w.actions_by_id
    a["open"] = make_action(w, "open", w.open_dialog)
    a["new"] = make_action(w, "new", w.new_dialog)
    a["theme"] = make_action(w, "theme", w.toggle_theme)
    a["help"] = make_action(w, "help", w.show_shortcuts)
    a["quit"] = make_action(w, "quit", w.close)
    a["audit_new"] = make_action(w, "audit_new", lambda: new_audit_set(w))
    mb = w.menuBar()
    f = mb.addMenu("&File")
    f.addAction(a["new"])
    f.addAction(a["open"])
    _add(w, f, "Open read-only snapshot…", lambda: w.open_dialog(snapshot=True))
    w.recent_menu = QMenu("Open &recent", w)
    w.recent_menu.aboutToShow.connect(lambda: _fill_recent(w))
    f.addMenu(w.recent_menu)
    _add(w, f, "Close project", w.close_project)
    f.addSeparator()
    _add(w, f, "Import a SpatialBench-UC run…", lambda: _doors().import_run(w))
    _add(w, f, "Write report…", lambda: _doors().write_report(w))
    f.addSeparator()
    _add(w, f, "Import labels…", lambda: import_labels(w))
    _add(w, f, "Export labels…", lambda: export_labels(w))
    f.addSeparator()
    f.addAction(a["quit"])
    w.label_menu = mb.addMenu("&Label")
    w.label_menu.aboutToShow.connect(lambda: fill_label_menu(w))
    w.label_menu_anchor = w.label_menu.addSeparator()
    w.view_menu = mb.addMenu("&View")
    w.view_menu_anchor = w.view_menu.addSeparator()
    w.view_menu.addAction(a["theme"])
    w.panels_menu = w.view_menu.addMenu("Panels")
    w.methods_menu = mb.addMenu("&Methods")
    w.methods_menu.aboutToShow.connect(lambda: _fill_methods_menu(w))
    w.audit_menu = mb.addMenu("&Audit")
    build(w, w.audit_menu)
    mb.addMenu("&Help").addAction(a["help"])


def _doors() -> Any:
    from . import import_report

    return import_report


def _past_blind(window: MainWindow, what: str, show: Callable[[], Any]) -> None:
    """Open a window whose figures set the labels against what a blind audit hides: at once
    outside a blind audit; during one only after a recorded pause (`ui.blind_routes`)."""
    from .blind_routes import hides, leave_blind

    blind = [views for views in window.method_views.values() if hides(views.controller(window))]
    if not blind:
        show()
        return

    def go() -> None:
        _leave(window, blind)
        show()

    leave_blind(window, blind[0].controller(window), what, [], go)


def open_audit_plans(window: MainWindow) -> None:
    """Audit → Audit plans…: the plans' estimates set the labels against the automated outcome."""
    from .audit_plans_window import open_audit_plans as show

    _past_blind(window, "Audit → Audit plans…", lambda: show(window, start_audit_set))


def open_judges(window: MainWindow) -> None:
    """Audit → Judges…: the judge × human rows set the labels against the automatic outcomes."""
    from .judges_window import open_judges as show

    _past_blind(window, "Audit → Judges…", lambda: show(window))


def open_raters(window: MainWindow) -> None:
    """Audit → Raters…: the rater monitor sets each rater's labels against the others', the
    judge's and gold."""
    from .raters_window import open_raters as show

    _past_blind(window, "Audit → Raters…", lambda: show(window))


def _fill_methods_menu(window: MainWindow) -> None:
    from workstation.methods import METHODS

    from .methods import view_names

    window.methods_menu.clear()
    for name in view_names():
        desc = METHODS.entry(name).description if name in METHODS else ""
        act = window.methods_menu.addAction(f"{name}: {desc}" if desc else name)
        act.triggered.connect(lambda _=False, n=name: window.open_method(n))


def _fill_recent(window: MainWindow) -> None:
    window.recent_menu.clear()
    items = project_dialogs.recent_projects()
    if not items:
        window.recent_menu.addAction("(none)").setEnabled(False)
    for f in items:
        act = window.recent_menu.addAction(f)
        act.triggered.connect(lambda _=False, ff=f: window.open_project_in_background(ff))


def build(window: MainWindow, menu: QMenu) -> None:
    menu.addAction(window.actions_by_id["audit_new"])
    window.audit_sets_menu = QMenu("Open audit set", window)
    window.audit_sets_menu.aboutToShow.connect(lambda: _fill_audit_sets(window))
    menu.addMenu(window.audit_sets_menu)
    for text, fn in (("Audit plans…", open_audit_plans), ("Judges…", open_judges), ("Raters…", open_raters),
                     ("Leave audit set", leave_audit), ("Self-agreement on re-checks", show_self_agreement),
                     ("Agreement between annotators…", show_agreement), ("Review disagreements in the judging queue", adjudicate)):
        act = QAction(text, window)
        act.triggered.connect(lambda _=False, f=fn: f(window))
        menu.addAction(act)
    adj = window.adjudicate_action = QAction("Adjudicate…", window)
    adj.setObjectName("adjudicateAction")
    adj.triggered.connect(lambda: open_adjudication(window))
    menu.addAction(adj)
    menu.aboutToShow.connect(lambda: _sync_adjudicate_action(window))
    menu.addSeparator()
    an = QAction("Annotator…", window)
    an.triggered.connect(lambda: change_annotator(window))
    menu.addAction(an)


def fill_label_menu(window: MainWindow) -> None:
    """The Label menu's first part: the label and navigation keys that act on the page shown
    (`ui.shortcuts.active_bindings`); each entry does what its key does."""
    from .shortcuts import active_bindings

    menu = window.label_menu
    for act in list(menu.actions()):
        if act is window.label_menu_anchor:
            break
        menu.removeAction(act)
    rows = [b for b in active_bindings(window) if b.group in ("Label", "Navigate")]
    native = QKeySequence.SequenceFormat.NativeText
    items: list[tuple[str, Any]] = [(f"{b.text}\t{QKeySequence(b.keys[0]).toString(native)}",
                                     lambda _=False, f=b.fn: f()) for b in rows]
    if not any(b.group == "Label" for b in rows):
        items.insert(0, ("(show a method's judging page to label)", None))
    for text, fn in items:
        act = QAction(text, menu)
        if fn is None:
            act.setEnabled(False)
        else:
            act.triggered.connect(fn)
        menu.insertAction(window.label_menu_anchor, act)


def new_audit_set(window: MainWindow) -> None:
    from .widgets.audit_dialog import AuditSetDialog

    views = _views(window, "New audit set")
    if views is None:
        return
    p = window.state.project
    assert p is not None  # `_views` says so
    if p.read_only:
        QMessageBox.information(window, "New audit set", "This project is open read-only.")
        return
    try:
        pop = views.audit_population(window)
    except WorkstationError as e:
        QMessageBox.information(window, "New audit set", str(e))
        return
    if pop is None or not len(pop):
        QMessageBox.information(window, "New audit set", "This method has nothing to audit in this project yet.")
        return
    c = views.controller(window)
    params: dict[str, Any] = getattr(views, "audit_params", lambda _w: {})(window)
    dlg = AuditSetDialog(p, c.scheme, pop, params, title=window.tabs.tabText(window.tabs.currentIndex()), parent=window)
    if dlg.exec() and dlg.audit_set_id is not None:
        start_audit_set(window, dlg.audit_set_id)


def start_audit_set(window: MainWindow, audit_set_id: int) -> int:
    """Open a stored audit set on the judging page of the method whose task it is."""
    from workstation.evaluation.audit_sets import audit_task

    p = window.state.project
    task = audit_task(p, audit_set_id)
    for name, views in list(window.method_views.items()) + [(n, None) for n in _methods_with_task(task)]:
        if views is None:
            views = window.install_method_views(name)
        c = views.controller(window)
        if c is not None and c.scheme.task == task:
            if _leaves_blind(window, c, audit_set_id):
                return 0
            n = views.open_audit(window, audit_set_id)
            a = c.audit
            window.statusBar().showMessage(
                f"audit set #{audit_set_id}: {_items_text(c, n)}" + (" (blind)" if a is not None and a.blind else ""),
                6000)
            return n
    window.statusBar().showMessage(f"no page judges the task {task!r} of audit set #{audit_set_id}", 6000)
    return 0


def _items_text(c: Any, n: int) -> str:
    """How many items a queue just opened holds: of an overlap set, the annotator's part of it."""
    a = c.audit
    if a is None or not a.overlap:
        return f"{n} items"
    who = c.state.annotator
    if not who:
        return f"no annotator named: Audit → Annotator… shows your part of the set's {c.core.whole_size} items"
    labelled, _total = c.progress()
    return f"{n} items for {who} ({labelled} labelled) of the set's {c.core.whole_size}"


def _leaves_blind(window: MainWindow, c: Any, audit_set_id: int) -> bool:
    """Another audit set that is not blind, opened from a blind audit, shows what the blind one
    hides: it asks to pause first (`ui.blind_routes`); True when the auditor stays."""
    from .blind_routes import hides, leave_blind
    from workstation.evaluation.audit_sets import audit_info

    if not hides(c) or c.audit.audit_set_id == audit_set_id or audit_info(window.state.project, audit_set_id).blind:
        return False
    assert window.state.project is not None  # an audit set is opened in the open project
    items = window.state.project.audit.items(audit_set_id)
    first = c.index_of(items[0][0]) if items else -1
    return not leave_blind(window, c, f"Audit → Open audit set #{audit_set_id} (not blind)",
                           [first] if first >= 0 else [], lambda: None)


def _methods_with_task(task: str) -> list[str]:
    from workstation.methods import METHODS, get_method

    return [n for n in METHODS.names() if any(s.task == task for s in get_method(n).label_schemes)]


def _fill_audit_sets(window: MainWindow) -> None:
    menu = window.audit_sets_menu
    menu.clear()
    p = window.state.project
    sets = p.audit.sets() if p is not None else []
    if not sets:
        menu.addAction("(none)").setEnabled(False)
    for s in sets:
        blind = ", blind" if s["blind"] else ""
        act = menu.addAction(f"#{s['audit_set_id']} {s['name']} — {s['task']} ({s['size']} items{blind})")
        act.triggered.connect(lambda _=False, aid=s["audit_set_id"]: start_audit_set(window, aid))


def leave_audit(window: MainWindow) -> None:
    from .blind_routes import pause_on_leave

    for views in window.method_views.values():
        c = views.controller(window)
        if c is not None and c.audit is not None:
            pause_on_leave(window, c)  # an unfinished blind pass: the leave is a recorded pause
    if _leave(window, list(window.method_views.values())):
        window.statusBar().showMessage("left the audit set: everything is shown again", 6000)


def _leave(window: MainWindow, views_list: list[Any]) -> bool:
    """Each of these views leaves its audit set (its own way, if it has one)."""
    left = False
    for views in views_list:
        c = views.controller(window)
        if c is not None and c.audit is not None:
            leave = getattr(views, "leave_audit", None)
            leave(window) if leave is not None else c.leave_audit()
            left = True
    return left


def show_self_agreement(window: MainWindow) -> None:
    from workstation.evaluation.audit_sets import self_agreement_report

    views = _views(window, "Self-agreement")
    if views is None:
        return
    c = views.controller(window)
    r = self_agreement_report(window.state.project, c.scheme, c.audit.audit_set_id if c.audit else None,
                              views.agreement_unit(window))
    lines = [r.text()] + [f"  {ann}: {x.text()}" for ann, x in r.by_annotator.items()]
    QMessageBox.information(window, "Self-agreement on re-checks", "\n".join(lines))


def show_agreement(window: MainWindow) -> None:
    from .widgets.agreement import AgreementDialog

    views = _views(window, "Agreement between annotators")
    if views is None or _hidden_now(window, views, "Agreement between annotators"):
        return
    dlg = AgreementDialog(window.state.project, views.controller(window).scheme, noun=views.noun, parent=window)
    dlg.adjudicate.connect(lambda targets: _queue(window, views, targets))
    dlg.exec()


def adjudicate(window: MainWindow) -> None:
    from workstation.evaluation.audit_sets import task_agreement

    views = _views(window, "Review disagreements in the judging queue")
    if views is None or _hidden_now(window, views, "Adjudication"):
        return
    _rows, targets = task_agreement(window.state.project, views.controller(window).scheme)
    if not targets:
        window.statusBar().showMessage("no disagreement between annotators", 6000)
        return
    _queue(window, views, targets)


def _adjudicators_line(window: Any) -> str:
    """Who may adjudicate here ("" when the annotator is one of them)."""
    from workstation.evaluation.raters import adjudicators

    p = window.state.project
    if p is None:
        return "open a project first"
    names = adjudicators(p)
    if (window.state.annotator or "") in names:
        return ""
    if not names:
        return "this project has no adjudicators (python main.py audit adjudicators --set NAME)"
    return f"only an adjudicator records final labels; this project's: {', '.join(names)}"


def _sync_adjudicate_action(window: Any) -> None:
    """Audit → Adjudicate… acts for an adjudicator; for anyone else it says who they are."""
    line = _adjudicators_line(window)
    act = window.adjudicate_action
    act.setEnabled(not line)
    act.setText("Adjudicate…" if not line else f"Adjudicate… ({line})")


def open_adjudication(window: Any) -> Any:
    """The adjudication queue's window (`ui.widgets.adjudication`); None when it cannot open
    (the status bar says why). From a blind audit it asks to pause first: it shows the other
    raters' labels and the gold answers."""
    from workstation.evaluation.raters import adjudication_queue
    from workstation.methods import METHODS, get_method
    from .blind_routes import hides, leave_blind
    from .methods import view_names

    line = _adjudicators_line(window)
    if line:
        window.statusBar().showMessage(f"Adjudicate: {line}", 8000)
        return None
    p = window.state.project
    for views in list(window.method_views.values()):
        c = views.controller(window)
        if hides(c):
            if not leave_blind(window, c, "Audit → Adjudicate…", [], c.leave_audit):
                return None
    tasks = []
    for name in view_names():
        if name not in METHODS:
            continue
        for scheme in get_method(name).label_schemes:
            if name not in window.method_views and not adjudication_queue(p, scheme.task):
                continue
            views = window.method_views.get(name) or window.install_method_views(name)
            if views is not None and views.controller(window) is not None \
                    and views.controller(window).scheme.task == scheme.task:
                tasks.append((scheme.task, scheme, views))
    if not tasks:
        window.statusBar().showMessage("Adjudicate: no method page judges a label task here", 6000)
        return None
    from .widgets.adjudication import AdjudicationWindow

    old = getattr(window, "adjudication_window", None)
    if old is not None:
        old.close()
        old.deleteLater()
    w = window.adjudication_window = AdjudicationWindow(window, tasks, hides)
    shown = window.current_views()  # the task of the page shown first, when it has items open
    order = sorted(range(len(tasks)), key=lambda k: tasks[k][2] is not shown)
    first = next((k for k in order if adjudication_queue(p, tasks[k][0])), 0)
    w.task_box.setCurrentIndex(first)
    w.setWindowTitle(f"Adjudication — {p.folder.name}")
    w.show()
    w.raise_()
    w.activateWindow()
    w.table.setFocus()
    return w


def _queue(window: MainWindow, views: Any, targets: list[str]) -> None:
    c = views.controller(window)
    idx = sorted(i for i in (c.index_of(t) for t in targets) if i >= 0)  # in the method's own order
    c.set_queue(idx)
    views.show_judging(window)
    window.statusBar().showMessage(f"{len(idx)} disagreement(s) to adjudicate", 6000)


def change_annotator(window: MainWindow) -> None:
    st = window.state
    if st.project is None or st.project.read_only:
        return
    name = project_dialogs.ask_annotator(window, st.project.folder.name, st.annotator)
    if name:
        for views in window.method_views.values():
            c = views.controller(window)
            if c is not None:
                c._leave()  # the notes typed so far are the old annotator's
        st.set_annotator(name)


def _label_importer(window: Any) -> Any:
    """The installed views that import label files of their method's own layouts
    (``import_labels``): those of the tab shown where they do, else the one views that do."""
    able = [v for v in window.method_views.values() if callable(getattr(v, "import_labels", None))]
    shown = window.current_views()
    if any(v is shown for v in able):
        return shown
    return able[0] if len(able) == 1 else None


def import_labels(window: Any, path: str | None = None) -> None:
    views = _label_importer(window)
    if views is None or window.state.project is None:
        return
    if not path:
        path, _ = QFileDialog.getOpenFileName(window, "Import labels", str(project_dialogs.exports_folder(window)),
                                              getattr(views, "label_file_filter", "Label files (*.*)"))
    if not path:
        return
    try:
        msg = views.import_labels(window, path)
    except (WorkstationError, ValueError) as e:
        QMessageBox.critical(window, "Cannot import labels", str(e))
        return
    window.statusBar().showMessage(msg, 6000)


def export_labels(window: MainWindow, path: str | None = None) -> None:
    views = _views(window, "Export labels")
    if views is None:
        return
    bar = getattr(views, "bar", lambda _w: None)(window)
    if bar is not None:
        bar.export(path)
