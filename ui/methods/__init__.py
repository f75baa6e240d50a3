"""Each evaluation method's Qt views, registered by name and imported only when used.

A method's views are a package ``ui.methods.<name>`` whose ``VIEWS`` object satisfies
`ui.method_views.MethodViews` (a subclass of `ui.method_views.ViewsBase`): its pages
(``install(window)`` adds them as tabs, the first time a project with the method's data is open
or the user opens the method from the Methods menu), its judging controller and page, its audit
population and label export. The registry checks the object against the protocol: views given
as an object are checked when they register, views given as an import string when they are
first looked up; views that lack a member are refused with one line naming it
(`ui.method_views.ViewsRefused`).

Views never import another method's views (an import-linter contract), and the main window
knows no method by name: it asks this registry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from workstation.registry import Registry

if TYPE_CHECKING:  # the check imports Qt: only when views are registered or looked up
    from ..method_views import MethodViews


class ViewsRegistry(Registry["MethodViews"]):
    """The views' registry: what it holds or hands out satisfies `MethodViews`."""

    def register(self, name: str, target: str | Callable[..., MethodViews], **options: Any) -> None:
        if not isinstance(target, str):  # the object itself: checked now, before it is registered
            from ..method_views import check_views

            check_views(name.lower(), target)
        super().register(name, target, **options)

    def get(self, name: str) -> Any:
        """The views of method ``name`` (imported now), checked against `MethodViews`."""
        from ..method_views import check_views

        return check_views(self.entry(name).name, super().get(name))


VIEWS = ViewsRegistry("method views")
VIEWS.register("spatial", "ui.methods.spatial.views:VIEWS")
VIEWS.register("protobias", "ui.methods.protobias:VIEWS")
VIEWS.register("dyeval", "ui.methods.dyeval:VIEWS")
VIEWS.register("metalogic", "ui.methods.metalogic:VIEWS")


#: what a method reads of a project off the GUI thread when it opens, before its views take it
#: (``read(project, with_verdicts, progress)`` and ``opened_text(part)``; no Qt: `ui.loading`
#: runs it before Qt is imported); a method without one has its views read on the GUI thread
LOADS: Registry[Any] = Registry("project loads")
LOADS.register("spatial", "ui.methods.spatial.loading:LOAD")


def load_names() -> list[str]:
    return LOADS.names()


def load_of(name: str) -> Any:
    return LOADS.get(name)


def views_for(name: str) -> MethodViews[Any]:
    return VIEWS.get(name)


def view_names() -> list[str]:
    return VIEWS.names()
