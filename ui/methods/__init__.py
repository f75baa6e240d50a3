"""Each evaluation method's Qt views, registered by name and imported only when used.

A method's views are a package ``ui.methods.<name>`` whose ``VIEWS`` object has

* ``method`` — the method's registry name (``workstation.methods``);
* ``title`` — the tab / menu title;
* ``install(window)`` — add its pages (``window.add_panel(title, widget, "tab")``), menus and
  actions to the main window; called once, the first time a project with the method's data is
  open (or when the user opens the method from the Methods menu);
* ``on_project(window)`` — the project was opened, reloaded or closed (``window.state.project``).

Views never import another method's views (an import-linter contract), and the main window
knows no method by name: it asks this registry.
"""

from __future__ import annotations

from typing import Any

from workstation.registry import Registry

VIEWS: Registry[Any] = Registry("method views")
VIEWS.register("protobias", "ui.methods.protobias:VIEWS")
VIEWS.register("dyeval", "ui.methods.dyeval:VIEWS")
VIEWS.register("metalogic", "ui.methods.metalogic:VIEWS")


def views_for(name: str) -> Any:
    return VIEWS.get(name)


def view_names() -> list[str]:
    return VIEWS.names()
