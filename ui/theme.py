"""Dark and light themes, and the colours every view uses for verdicts and overlays.

One place decides what PASS / FAIL / UNDECIDABLE look like, so the table, the thumbnail
badges and the pair viewer read alike. `apply_theme(app, "dark" | "light")` sets the palette
and the style sheet from `resources/theme.qss` (with the palette's colours substituted).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

RESOURCES = Path(__file__).resolve().parent.parent / "resources"

# verdict code -> (name, colour). Saturated enough to read on both backgrounds.
VERDICT_COLORS = {0: "#2e9d4f", 1: "#d64541", 2: "#d99a16"}
VERDICT_NAMES = {0: "PASS", 1: "FAIL", 2: "UNDECIDABLE"}
VERDICT_SHORT = {0: "P", 1: "F", 2: "U"}
NEUTRAL_COLOR = "#7d8590"  # blind mode / no verdict

# overlay colours: a box takes its OBJECT's colour (by entity name, alphabetical order), not its
# role A / B, so an object keeps its colour in a sample and its twin, where A and B swap
BOX_A = "#ff3b30"
BOX_B = "#1e88ff"
OBJECT_COLORS = (BOX_A, BOX_B, "#19d36b", "#ff8c1a")
BOX_OTHER = "#e8e8e8"
BOX_SECONDARY = "#ffd400"
BOX_PERTURBED = "#c86bff"
BOX_NEUTRAL = "#19d3b5"  # blind mode: a detection of one of the prompt's objects
MARGIN_BAND = "#ffb000"


@dataclass(frozen=True)
class Theme:
    name: str
    window: str
    base: str
    alt_base: str
    text: str
    dim_text: str
    button: str
    highlight: str
    highlight_text: str
    border: str
    canvas: str  # behind images in the pair viewer
    missing_canvas: str  # the neutral canvas of a missing image


DARK = Theme("dark", window="#1f2227", base="#17191d", alt_base="#1c1f24", text="#e6e6e6",
             dim_text="#9aa0a8", button="#2b2f36", highlight="#3d6fb6", highlight_text="#ffffff",
             border="#3a3f47", canvas="#101114", missing_canvas="#3b3f46")
LIGHT = Theme("light", window="#f3f4f6", base="#ffffff", alt_base="#f6f7f9", text="#1d1f23",
              dim_text="#5f6670", button="#e6e8ec", highlight="#2f6bd0", highlight_text="#ffffff",
              border="#c5cad2", canvas="#d9dce1", missing_canvas="#b9bec6")
THEMES = {"dark": DARK, "light": LIGHT}


class _ThemeSignals(QObject):
    changed = Signal(str)


_signals: _ThemeSignals | None = None
_current: Theme = DARK


def signals() -> _ThemeSignals:
    """`signals().changed(name)` fires after a theme switch (views that paint by hand repaint)."""
    global _signals
    if _signals is None:
        _signals = _ThemeSignals()
    return _signals


def current() -> Theme:
    return _current


def verdict_color(code: int | None) -> QColor:
    if code is None or code < 0:
        return QColor(NEUTRAL_COLOR)
    return QColor(VERDICT_COLORS.get(int(code), NEUTRAL_COLOR))


def _palette(t: Theme) -> QPalette:
    p = QPalette()
    c = QColor
    p.setColor(QPalette.ColorRole.Window, c(t.window))
    p.setColor(QPalette.ColorRole.WindowText, c(t.text))
    p.setColor(QPalette.ColorRole.Base, c(t.base))
    p.setColor(QPalette.ColorRole.AlternateBase, c(t.alt_base))
    p.setColor(QPalette.ColorRole.ToolTipBase, c(t.base))
    p.setColor(QPalette.ColorRole.ToolTipText, c(t.text))
    p.setColor(QPalette.ColorRole.Text, c(t.text))
    p.setColor(QPalette.ColorRole.PlaceholderText, c(t.dim_text))
    p.setColor(QPalette.ColorRole.Button, c(t.button))
    p.setColor(QPalette.ColorRole.ButtonText, c(t.text))
    p.setColor(QPalette.ColorRole.BrightText, c("#ff5555"))
    p.setColor(QPalette.ColorRole.Highlight, c(t.highlight))
    p.setColor(QPalette.ColorRole.HighlightedText, c(t.highlight_text))
    p.setColor(QPalette.ColorRole.Link, c(t.highlight))
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.WindowText, QPalette.ColorRole.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, role, c(t.dim_text))
    return p


def style_sheet(t: Theme) -> str:
    path = RESOURCES / "theme.qss"
    try:
        qss = path.read_text(encoding="utf-8")
    except OSError:
        return ""
    fields = ("window", "base", "alt_base", "text", "dim_text", "button", "highlight", "highlight_text",
              "border", "canvas")
    qss = qss.replace("@icons", (RESOURCES / "icons").as_posix())
    for field in sorted(fields, key=len, reverse=True):  # "@highlight_text" before "@highlight"
        qss = qss.replace("@" + field, getattr(t, field))
    return qss


def apply_theme(app: QApplication, name: str = "dark") -> Theme:
    global _current
    t = THEMES.get(name, DARK)
    _current = t
    app.setStyle("Fusion")
    app.setPalette(_palette(t))
    app.setStyleSheet(style_sheet(t))
    signals().changed.emit(t.name)
    return t
