"""Method-independent evaluation: the method protocols, agreement statistics, intervals."""

from .base import TARGET_KINDS, LabelScheme, Method, MethodConfig, ReportSection, Results
from .intervals import bootstrap_interval, wilson_arrays, wilson_interval

__all__ = ["TARGET_KINDS", "LabelScheme", "Method", "MethodConfig", "ReportSection", "Results",
           "bootstrap_interval", "wilson_arrays", "wilson_interval"]
