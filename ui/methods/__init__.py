"""Each evaluation method's Qt views, registered by name and imported only when used.

A method's views are a package ``ui.methods.<name>`` whose ``VIEWS`` object is a
`ui.method_views.MethodViews`: its pages (``install(window)`` adds them as tabs, the first time
a project with the method's data is open or the user opens the method from the Methods menu),
its judging controller and page, its audit population and label export.

Views never import another method's views (an import-linter contract), and the main window
knows no method by name: it asks this registry.
"""

from __future__ import annotations

from typing import Any

from workstation.registry import Registry

VIEWS: Registry[Any] = Registry("method views")
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


def views_for(name: str) -> Any:
    return VIEWS.get(name)


def view_names() -> list[str]:
    return VIEWS.names()
