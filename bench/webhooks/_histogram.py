"""Prometheus histograms from the API server's ``/metrics`` text: the buckets of one
histogram summed by a label, their growth between two scrapes, and the quantile
``histogram_quantile`` would compute from that growth.

Pure functions over the exposition text (no client): :func:`parse_histogram` reads one
histogram's cumulative buckets, ``_sum`` and ``_count`` per value of a label;
:func:`delta` subtracts an earlier scrape; :func:`quantile` interpolates linearly inside the
bucket the rank falls in, as Prometheus does - the first bucket's lower bound is 0, a rank
in the ``+Inf`` bucket answers the highest finite bound, no observations answer NaN.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

__all__ = ["Histogram", "counter_by", "delta", "parse_histogram", "quantile"]

_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


@dataclass
class Histogram:
    """Cumulative bucket counts by upper bound (``+Inf`` included), with sum and count."""

    buckets: dict[float, float] = field(default_factory=dict)
    sum: float = 0.0
    count: float = 0.0

    @property
    def mean(self) -> float:
        return self.sum / self.count if self.count else math.nan


def _samples(text: str, name: str) -> list[tuple[str, dict[str, str], float]]:
    out = []
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        match = _SAMPLE.match(line)
        if match is None:
            continue
        labels = dict(_LABEL.findall(match["labels"] or ""))
        out.append((match["name"], labels, float(match["value"])))
    return out


def parse_histogram(text: str, name: str, by: str) -> dict[str, Histogram]:
    """The histogram ``name`` in the exposition ``text``, its series summed by the value of
    the label ``by`` (every other label summed away)."""
    out: dict[str, Histogram] = {}
    for sample, labels, value in _samples(text, name):
        key = labels.get(by, "")
        histogram = out.setdefault(key, Histogram())
        if sample == f"{name}_bucket":
            bound = float(labels["le"])  # "+Inf" parses as inf
            histogram.buckets[bound] = histogram.buckets.get(bound, 0.0) + value
        elif sample == f"{name}_sum":
            histogram.sum += value
        elif sample == f"{name}_count":
            histogram.count += value
    return out


def counter_by(text: str, name: str, *labels: str, **match: str) -> dict[tuple[str, ...], float]:
    """The counter ``name`` summed by the values of ``labels``, over the series whose labels
    equal ``match``."""
    out: dict[tuple[str, ...], float] = {}
    for sample, found, value in _samples(text, name):
        if sample != name or any(found.get(k) != v for k, v in match.items()):
            continue
        key = tuple(found.get(label, "") for label in labels)
        out[key] = out.get(key, 0.0) + value
    return out


def delta(after: Histogram, before: Histogram | None) -> Histogram:
    """What was observed between the scrape ``before`` (None: nothing yet) and ``after``."""
    if before is None:
        return Histogram(dict(after.buckets), after.sum, after.count)
    return Histogram(
        {b: n - before.buckets.get(b, 0.0) for b, n in after.buckets.items()},
        after.sum - before.sum,
        after.count - before.count,
    )


def quantile(q: float, histogram: Histogram) -> float:
    """The ``q``-quantile (0 <= q <= 1) of ``histogram``, as Prometheus's
    ``histogram_quantile`` computes it (module docstring)."""
    bounds = sorted(histogram.buckets)
    if not bounds or not math.isinf(bounds[-1]):
        return math.nan
    total = histogram.buckets[bounds[-1]]
    if total <= 0:
        return math.nan
    rank = q * total
    lower, below = 0.0, 0.0
    for bound in bounds:
        count = histogram.buckets[bound]
        if count >= rank:
            if math.isinf(bound):
                return lower  # the highest finite bound
            if count == below:
                return bound
            return lower + (bound - lower) * (rank - below) / (count - below)
        lower, below = bound, count
    return lower
