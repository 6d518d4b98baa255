"""The figures of the suites' Markdown tables: medians over runs and their ratios, printed.

A figure not measured is ``NaN``: a median skips it (``NaN`` when nothing is left), a ratio
with it (or over zero) is ``NaN``, and a cell prints it as ``-``.
"""

from __future__ import annotations

import math
import statistics

__all__ = ["cell", "median", "ratio", "ratio_value", "ready_label"]


def median(values: list[float]) -> float:
    """The median of the measured ``values``; ``NaN`` when none was."""
    values = [v for v in values if not math.isnan(v)]
    return statistics.median(values) if values else math.nan


def ratio_value(a: float, b: float) -> float:
    """``a / b``; ``NaN`` when either was not measured or ``b`` is zero."""
    return math.nan if math.isnan(a) or math.isnan(b) or not b else a / b


def ratio(a: float, b: float) -> str:
    """:func:`ratio_value` as a cell, two decimals."""
    return cell(ratio_value(a, b))


def ready_label(delay: float) -> str:
    """A pod timing (``--pod-ready-delay``'s seconds) as the tables name it: ``1 s`` (Ready
    1 s after start), ``at once``."""
    return "at once" if delay == 0 else f"{delay:g} s"


def cell(value: float, digits: int = 2) -> str:
    """``value`` with ``digits`` decimals, ``-`` when not measured."""
    return "-" if math.isnan(value) else f"{value:.{digits}f}"
