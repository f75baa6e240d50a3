"""Colours and words the DyEval views share: pass rates, judgements, node states."""

from __future__ import annotations

import math

from PySide6.QtGui import QColor

PASS_COLOR = "#2e9d4f"
FAIL_COLOR = "#d64541"
PREMARK_COLOR = "#e0a020"
PENDING_COLOR = "#7d8590"
DISPUTED_COLOR = "#b58ad6"  # annotators disagree: no label counts
TRIGGER_COLOR = "#ff8c1a"

STATE_WORDS = {
    "new": "new — write prompts",
    "prompts_written": "prompts written — review, confirm",
    "generating": "generating images",
    "judging": "judging images",
    "judged": "judged — next: locate or expand",
    "locating": "locating failures",
    "expanding": "expanding — proposals",
    "done": "done",
}


STATE_SHORT = {"new": "new", "prompts_written": "prompts to confirm", "generating": "generating",
               "judging": "judging", "judged": "judged", "locating": "locating", "expanding": "expanding",
               "done": "done"}


def apr_color(apr: float | None, alpha: int = 255) -> QColor:
    """Red (0) → amber → green (1) by pass rate; grey when nothing is judged."""
    if apr is None or (isinstance(apr, float) and math.isnan(apr)):
        c = QColor(PENDING_COLOR)
    else:
        c = QColor.fromHsvF(max(0.0, min(1.0, apr)) * 0.33, 0.62, 0.78)
    c.setAlpha(alpha)
    return c


def verdict_color(value: str | None) -> QColor:
    return QColor(PASS_COLOR if value == "PASS" else FAIL_COLOR if value == "FAIL" else PENDING_COLOR)


def fmt_rate(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def fmt_rate_ci(summary: object, key: str = "apr") -> str:
    """APR or AFR of a `Summary` with its 95 % interval (the bootstrap over prompts), e.g.
    "0.62 [0.48, 0.75]"; "(fewer than 10 prompts)" after it when so few stand behind it."""
    value = getattr(summary, key)
    if value is None:
        return "–"
    e = getattr(summary, f"{key}_estimate")()
    text = f"{value:.2f}"
    if e.has_interval:
        text += f" [{e.lo:.2f}, {e.hi:.2f}]"
    note = e.small_note("judged images", "prompts")
    return text + (f" ({note})" if note else "")
