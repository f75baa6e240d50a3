"""What every method's views give the window: pages, a judging controller, audit sets.

A method's views object (``ui.methods.<name>:VIEWS``, registered in `ui.methods`) satisfies the
`MethodViews` protocol: every member the window (`main_window`, `menus`, `place`, the audit
dialogs) reads of a views object. The registry checks it when the views register (or, registered
by an import string, when they are first looked up): views that lack a member are refused with
one line naming it (`ViewsRefused`). `ViewsBase` gives every member but `install` a default, so
a method's views subclass it and fill in what they have.

The window knows no method by name: it installs the views of the methods whose data the open
project holds, shows only their tabs, and asks the views of the tab shown for its judging
controller (keys, notes, undo), its audit population (Audit → New audit set…) and its label
export. Blindness is not the views' to decide: they show what their controller's policy allows
(`JudgeController.visibility` for the target under review, `view_visibility` for views of more
than one target), and they re-ask when it says so (`policy_changed`).

Members the window asks for only where a views object has them (``getattr``): ``eager`` (built
with the window), ``allowed(window, page)`` (whether a page's tab may be shown now),
``tab_shown(window, page)``, ``status_counts(window)`` (the status bar's counts), ``expect(window,
loaded)`` (a project read ahead off the GUI thread), ``audit_params(window)``,
``leave_audit(window)`` and ``import_labels(window, path)`` (File → Import labels… of a file in
the method's own layouts; ``label_file_filter`` the file dialog's filter for them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from PySide6.QtWidgets import QTabWidget, QWidget

from workstation.types import WorkstationError

if TYPE_CHECKING:
    from ui.main_window import MainWindow
    from ui.session import MethodSession
    from ui.widgets.audit_page import AuditPage, TargetView
    from ui.widgets.judge import JudgeBar, JudgeController
    from workstation.evaluation.audit_sets import AuditPopulation

#: the window as a method's views see it: `ui.main_window.MainWindow`, or a subclass of it that
#: declares what the views' `install` adds to it (a views class is ``ViewsBase["Window"]`` then)
W_contra = TypeVar("W_contra", bound="MainWindow", contravariant=True)
W = TypeVar("W", bound="MainWindow")


class ViewsRefused(WorkstationError):
    """A views object that does not satisfy `MethodViews` (one line naming what it lacks)."""


def close_while_blind(tabs: QTabWidget, page: QWidget, closed: bool, shows: str) -> None:
    """Close `page`'s tab while a blind audit is open (`closed`), with a tooltip saying why:
    the page `shows` what the audit hides."""
    i = tabs.indexOf(page)
    tabs.setTabEnabled(i, not closed)
    tabs.setTabToolTip(i, f"closed during a blind audit: {shows}" if closed else "")


class MethodViews(Protocol[W_contra]):
    """What the window reads of a method's views object (each member is checked when the views
    register: `check_views`). ``window`` is the `ui.main_window.MainWindow`; views that keep their
    pages on it declare them in a subclass of it (``ViewsBase["Window"]``, named for mypy only)."""

    method: str  # the method's registry name
    title: str  # its (first) tab's title
    noun: str  # what one target of its label task is called

    def install(self, window: W_contra) -> None:
        """Add the method's pages (`window.add_panel(title, page, "tab")`), menus and actions."""
        ...

    def on_project(self, window: W_contra) -> None:
        """The project was opened, reloaded or closed."""
        ...

    def has_data(self, window: W_contra) -> bool:
        """Whether the open project holds data of this method (its tabs are shown then)."""
        ...

    def pages(self, window: W_contra) -> list[QWidget]:
        """The method's top-level tab pages."""
        ...

    def controller(self, window: W_contra) -> JudgeController | None:
        """The method's `ui.widgets.judge.JudgeController` (its label task's queue), or None."""
        ...

    def bar(self, window: W_contra) -> JudgeBar | None:
        """The judgement bar of the judging page (notes, export), or None."""
        ...

    def judging_page(self, window: W_contra) -> QWidget | None:
        """The page where the method's queue is judged (audit sets open there)."""
        ...

    def show_judging(self, window: W_contra) -> None:
        """Show the judging page (its tab, and its inner page)."""
        ...

    def audit_population(self, window: W_contra) -> AuditPopulation | None:
        """What Audit → New audit set… may sample (`workstation.evaluation.audit_sets.AuditPopulation`)."""
        ...

    def open_audit(self, window: W_contra, audit_set_id: int) -> int:
        """Make a stored audit set the judging queue and show the judging page; its length."""
        ...

    def agreement_unit(self, window: W_contra) -> Callable[[str], Any] | None:
        """What an agreement's bootstrap resamples for a target id (a callable; None: the targets)."""
        ...

    def outcome_texts(self, window: W_contra, index: int) -> list[str]:
        """Text that would tell a target's automated outcome (the blind-audit contract looks for it)."""
        ...

    def focus_target(self, window: W_contra) -> QWidget | None:
        """Where the keys should go when the method's tab is shown."""
        ...

    def review_disagreements(self, window: W_contra, judge_a: str, judge_b: str) -> bool:
        """Make the items two of the method's judges (`workstation.evaluation.judges` names) decide
        differently the review queue and show them (the Judges window's "Review where they
        disagree"); False where the views have no such queue."""
        ...


#: the data members of `MethodViews` (text) and its methods, in the order the protocol lists them
_DATA = tuple(MethodViews.__annotations__)
_CALLS = tuple(n for n, v in vars(MethodViews).items() if callable(v) and not n.startswith("_"))
MEMBERS = _DATA + _CALLS


def check_views(name: str, views: Any) -> MethodViews[Any]:
    """``views`` if it satisfies `MethodViews` as the views of method ``name``; otherwise one
    `ViewsRefused` line naming each member it lacks (or has in a form the window cannot use)."""
    what = f"the {str(name)[:40]!r} views ({type(views).__module__}.{type(views).__qualname__})"
    if isinstance(views, type):
        raise ViewsRefused(f"{what} are a class: register an instance of it (VIEWS = {views.__qualname__}())")
    missing = [m for m in MEMBERS if not hasattr(views, m)]
    if missing:
        raise ViewsRefused(f"{what} lack {', '.join(missing)}: every method's views give what "
                           "ui.method_views.MethodViews lists (subclass ui.method_views.ViewsBase)")
    wrong = [m for m in _CALLS if not callable(getattr(views, m))]
    wrong += [m for m in _DATA if not isinstance(getattr(views, m), str) or not getattr(views, m)]
    if wrong:
        raise ViewsRefused(f"{what}: {', '.join(wrong)} not as ui.method_views.MethodViews says "
                           f"({', '.join(_DATA)}: non-empty text; the others: methods)")
    if views.method != name:
        raise ViewsRefused(f"{what} say they are the views of {str(views.method)[:40]!r}, registered as {name!r}")
    return views


class ViewsBase(MethodViews[W]):
    """The base of every method's views: a default for every member of `MethodViews` but
    `install`; subclasses fill in `install` and the getters they have."""

    method = ""  # the method's registry name
    title = ""  # its (first) tab's title
    noun = "item"  # what one target of its label task is called
    #: the key of each of its tab pages (`ui.shortcuts.bind_tabs`; none: the next free Ctrl+digit)
    tab_keys: tuple[str, ...] = ()

    # ---- for the views' `install` ---------------------------------------------------------------
    def new_session(self, window: W) -> MethodSession:
        """A `ui.session.MethodSession` of the method: its data, live config and results in the
        window's project."""
        from ui.session import MethodSession
        from workstation.methods import get_method

        return MethodSession(get_method(self.method), window.state, window)

    def audit_tabs(self, page: QWidget, title: str, controller: JudgeController,
                   target: TargetView) -> tuple[QTabWidget, AuditPage]:
        """The method's tab as two pages: `page` (titled `title`) and "Audit set", an audit page
        that judges `controller`'s audit set one target at a time, shown by `target`
        (`ui.widgets.audit_page.TargetView`). Returns the tab widget and the audit page, named
        `<method>Tabs` and `<method>Audit`; the caller adds the tab to the window."""
        from ui.widgets.audit_page import AuditPage

        audit = AuditPage(controller, target, noun=self.noun)
        audit.setObjectName(f"{self.method}Audit")
        tabs = QTabWidget()
        tabs.setObjectName(f"{self.method}Tabs")
        tabs.setDocumentMode(True)
        tabs.addTab(page, title)
        tabs.addTab(audit, "Audit set")
        return tabs, audit

    # ---- the window asks -------------------------------------------------------------------------
    def install(self, window: W) -> None:
        """Add the method's pages (`window.add_panel(title, page, "tab")`), menus and actions."""
        raise NotImplementedError

    def on_project(self, window: W) -> None:
        """The project was opened, reloaded or closed (each session follows it by itself)."""

    def has_data(self, window: W) -> bool:
        """Whether the open project holds data of this method (its tabs are shown then)."""
        from workstation.methods import get_method

        p = window.state.project
        return bool(p is not None and get_method(self.method).has_data(p))

    def pages(self, window: W) -> list[QWidget]:
        """The method's top-level tab pages."""
        page = window.panels.get(self.title)
        return [page] if page is not None else []

    def controller(self, window: W) -> JudgeController | None:
        """The method's `JudgeController` (its label task's queue), or None."""
        return None

    def bar(self, window: W) -> JudgeBar | None:
        """The judgement bar of the judging page (notes, export), or None."""
        return None

    def judging_page(self, window: W) -> QWidget | None:
        """The page where the method's queue is judged (audit sets open there)."""
        return None

    def show_judging(self, window: W) -> None:
        """Show the judging page (its tab, and its inner page)."""
        page = self.judging_page(window)
        if page is None:
            return
        for tab in self.pages(window):
            if tab is page or tab.isAncestorOf(page):
                window.tabs.setCurrentWidget(tab)
                break
        self._raise_inner(page)

    @staticmethod
    def _raise_inner(page: QWidget) -> None:
        """Make ``page`` the current page of the stacks / tab widgets it sits in."""
        from PySide6.QtWidgets import QStackedWidget, QTabWidget

        child: QWidget | None = page
        while child is not None and child.parentWidget() is not None:
            parent = child.parentWidget()
            if isinstance(parent, QStackedWidget):
                parent.setCurrentWidget(child)
                owner = parent.parentWidget()
                if isinstance(owner, QTabWidget):
                    owner.setCurrentWidget(child)
            child = parent

    def audit_population(self, window: W) -> AuditPopulation | None:
        """What Audit → New audit set… may sample (`workstation.evaluation.audit_sets.AuditPopulation`)."""
        return None

    def open_audit(self, window: W, audit_set_id: int) -> int:
        """Make a stored audit set the judging queue and show the judging page."""
        c = self.controller(window)
        if c is None:
            return 0
        n = c.open_audit(audit_set_id)
        self.show_judging(window)
        return int(n)

    def agreement_unit(self, window: W) -> Callable[[str], Any] | None:
        """What an agreement's bootstrap resamples for a target id (a callable; None: the targets
        themselves). Targets judged alike because they share a prompt resample together."""
        return None

    def outcome_texts(self, window: W, index: int) -> list[str]:
        """Text that would tell a target's automated outcome (its verdict word, reason, score or
        confidence as the views write them): the blind-audit contract test looks for it on every
        visible widget. A method without an automated outcome gives none."""
        return []

    def focus_target(self, window: W) -> QWidget | None:
        """Where the keys should go when the method's tab is shown."""
        return self.judging_page(window)

    def review_disagreements(self, window: W, judge_a: str, judge_b: str) -> bool:
        """No queue over two judges' disagreements (the method's views may give one)."""
        return False
