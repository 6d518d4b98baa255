"""Prometheus metrics of work queues, with the names, labels and buckets of client-go.

The families are those that ``k8s.io/component-base/metrics/prometheus/workqueue`` registers,
so dashboards and alerts written for Kubernetes controllers work unchanged:

==============================================  =========  =====================================
``workqueue_depth``                             gauge      dirty items not yet handed out again
``workqueue_adds_total``                        counter    adds that were not collapsed
``workqueue_retries_total``                     counter    ``add_after`` calls (retries)
``workqueue_queue_duration_seconds``            histogram  time from add to get
``workqueue_work_duration_seconds``             histogram  time from get to done
``workqueue_unfinished_work_seconds``           gauge      summed age of the items in processing
``workqueue_longest_running_processor_seconds`` gauge      age of the oldest item in processing
==============================================  =========  =====================================

Every family has the single label ``name`` (the queue's name); a queue without a name records
nothing and pays nothing. The histograms use component-base's buckets,
``ExponentialBuckets(10e-9, 10, 10)`` (10 ns ... 10 s).

How they are kept: each named queue counts into plain numbers of its own (no locks, no
``prometheus_client`` calls on the hot path), and one collector per
:class:`~prometheus_client.CollectorRegistry` turns them into the families when the registry is
scraped, summing the queues that share a name. When a queue is garbage-collected its counters
and histograms are folded into the name's totals (they stay monotonic) and its gauges drop out.
Any number of queues may be created on one registry.

The two "unfinished" gauges are computed at scrape time, from the items in processing at that
moment (ages summed, oldest age maxed across queues of the name); client-go instead refreshes
them every 500 ms from a ticker goroutine and stops at shutdown. Here a queue keeps reporting
while items are in processing, also during a drain after shutdown.
"""

from __future__ import annotations

import threading
import time
import weakref
from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterator
from typing import Any, cast

from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.utils import floatToGoString

from kcontrol._registry import PerRegistry
from kcontrol.clock import Clock, RealClock

__all__ = [
    "DURATION_BUCKETS",
    "QueueMetrics",
    "RetryMetrics",
    "new_queue_metrics",
    "new_retry_metrics",
]


def _exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    # Repeated multiplication, as Go's prometheus.ExponentialBuckets does, so that the bucket
    # bounds (and their ``le`` labels) are bit-for-bit those of a Go controller.
    bounds = []
    for _ in range(count):
        bounds.append(start)
        start *= factor
    return tuple(bounds)


DURATION_BUCKETS = _exponential_buckets(10e-9, 10, 10)
"""Upper bounds of both workqueue histograms: 1e-08 ... 10.0 seconds (plus ``+Inf``), as
client-go's, so KCM's dashboards read them unchanged."""
# ``le`` label values, formatted as prometheus_client formats its own bucket bounds.
_format_bound = cast("Callable[[float], str]", floatToGoString)
_BUCKET_LABELS = [_format_bound(b) for b in DURATION_BUCKETS] + ["+Inf"]

_DEPTH = ("workqueue_depth", "Current depth of workqueue")
_ADDS = ("workqueue_adds_total", "Total number of adds handled by workqueue")
_RETRIES = ("workqueue_retries_total", "Total number of retries handled by workqueue")
_LATENCY = (
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested.",
)
_WORK = (
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes.",
)
_UNFINISHED = (
    "workqueue_unfinished_work_seconds",
    "How many seconds of work has done that is in progress and hasn't been observed by "
    "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
    "threads by observing the rate at which this increases.",
)
_LONGEST = (
    "workqueue_longest_running_processor_seconds",
    "How many seconds has the longest running processor for workqueue been running.",
)
_LABELS = ("name",)


class _Series:
    """The raw numbers of one queue. Written only by the queue's event loop; scrapes read them."""

    __slots__ = (
        "adds",
        "depth",
        "latency_buckets",
        "latency_sum",
        "processing_since",
        "retries",
        "work_buckets",
        "work_sum",
    )

    def __init__(self) -> None:
        self.adds = 0
        self.retries = 0
        self.depth = 0
        # Per-bucket (not cumulative) counts; the last slot is +Inf.
        self.latency_buckets = [0] * (len(DURATION_BUCKETS) + 1)
        self.latency_sum = 0.0
        self.work_buckets = [0] * (len(DURATION_BUCKETS) + 1)
        self.work_sum = 0.0
        # Item -> when it was handed out (a reading of the queue's timer), for items in processing.
        self.processing_since: dict[Any, float] = {}

    def fold_into(self, total: _Series) -> None:
        """Add this queue's counters and histograms to ``total`` (gauges are not carried)."""
        total.adds += self.adds
        total.retries += self.retries
        total.latency_sum += self.latency_sum
        total.work_sum += self.work_sum
        for i, count in enumerate(self.latency_buckets):
            total.latency_buckets[i] += count
        for i, count in enumerate(self.work_buckets):
            total.work_buckets[i] += count


def _timer(clock: Clock) -> Callable[[], float]:
    """A fast reading of ``clock`` for measuring durations (only differences are used).

    The real clock reads the event loop's time, which is ``time.monotonic``; reading that
    directly skips a loop lookup on every add, get and done of a named queue.
    """
    return time.monotonic if type(clock) is RealClock else clock.now


class _Name:
    """Everything known about one ``name`` label value on one registry."""

    __slots__ = ("live", "now", "retired")

    def __init__(self) -> None:
        # Totals of the queues of this name that were garbage-collected.
        self.retired = _Series()
        # Series of live queues (strong refs; removed by a finalizer on their owner).
        self.live: dict[int, _Series] = {}
        # The timer of each live series, to age the items in processing at scrape time.
        self.now: dict[int, Callable[[], float]] = {}


class _WorkqueueCollector:
    """Turns the series of every queue on one registry into the seven workqueue families.

    Scrapes may come from another thread (``prometheus_client.start_http_server``): the table
    of series is only changed under ``_lock``, and live numbers are read with single C-level
    copies, which the GIL makes atomic.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._names: dict[str, _Name] = {}

    def track(self, name: str, series: _Series, now: Callable[[], float], owner: object) -> None:
        """Report ``series`` under ``name`` until ``owner`` is garbage-collected."""
        key = id(series)
        with self._lock:
            entry = self._names.get(name)
            if entry is None:
                entry = self._names[name] = _Name()
            entry.live[key] = series
            entry.now[key] = now
        finalizer = weakref.finalize(owner, self._retire, name, key)
        finalizer.atexit = False

    def _retire(self, name: str, key: int) -> None:
        with self._lock:
            entry = self._names[name]
            entry.live.pop(key).fold_into(entry.retired)
            del entry.now[key]

    def describe(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(*_DEPTH, labels=_LABELS)
        yield CounterMetricFamily(*_ADDS, labels=_LABELS)
        yield CounterMetricFamily(*_RETRIES, labels=_LABELS)
        yield HistogramMetricFamily(*_LATENCY, labels=_LABELS)
        yield HistogramMetricFamily(*_WORK, labels=_LABELS)
        yield GaugeMetricFamily(*_UNFINISHED, labels=_LABELS)
        yield GaugeMetricFamily(*_LONGEST, labels=_LABELS)

    def collect(self) -> Iterator[Metric]:
        depth = GaugeMetricFamily(*_DEPTH, labels=_LABELS)
        adds = CounterMetricFamily(*_ADDS, labels=_LABELS)
        retries = CounterMetricFamily(*_RETRIES, labels=_LABELS)
        latency = HistogramMetricFamily(*_LATENCY, labels=_LABELS)
        work = HistogramMetricFamily(*_WORK, labels=_LABELS)
        unfinished = GaugeMetricFamily(*_UNFINISHED, labels=_LABELS)
        longest = GaugeMetricFamily(*_LONGEST, labels=_LABELS)
        with self._lock:
            snapshot = [
                (name, entry.retired, list(entry.live.items()), dict(entry.now))
                for name, entry in sorted(self._names.items())
            ]
        for name, retired, live, timers in snapshot:
            total = _Series()
            retired.fold_into(total)
            depth_total = 0
            unfinished_total = oldest = 0.0
            for key, series in live:
                series.fold_into(total)
                depth_total += series.depth
                starts = tuple(series.processing_since.values())
                if starts:
                    now = timers[key]()
                    unfinished_total += sum(now - start for start in starts)
                    oldest = max(oldest, now - min(starts))
            labels = [name]
            depth.add_metric(labels, depth_total)
            adds.add_metric(labels, total.adds)
            retries.add_metric(labels, total.retries)
            latency.add_metric(labels, _cumulative(total.latency_buckets), total.latency_sum)
            work.add_metric(labels, _cumulative(total.work_buckets), total.work_sum)
            unfinished.add_metric(labels, unfinished_total)
            longest.add_metric(labels, oldest)
        yield from (depth, adds, retries, latency, work, unfinished, longest)


def _cumulative(counts: list[int]) -> list[tuple[str, float]]:
    running = 0
    buckets = []
    for label, count in zip(_BUCKET_LABELS, counts, strict=True):
        running += count
        buckets.append((label, float(running)))
    return buckets


def _register_collector(registry: CollectorRegistry) -> _WorkqueueCollector:
    collector = _WorkqueueCollector()
    registry.register(collector)
    return collector


_collector = PerRegistry(_register_collector).get
"""The workqueue collector of a registry (default: the global one), registered once."""


class QueueMetrics:
    """The metric hooks of one named queue, mirroring client-go's ``queueMetrics``.

    ``add`` is called for adds that were not collapsed, ``get`` when an item is handed out and
    ``done`` when a handed-out item is finished.
    """

    __slots__ = ("__weakref__", "_add_times", "_now", "_series")

    def __init__(self, name: str, clock: Clock, registry: CollectorRegistry | None) -> None:
        self._now = _timer(clock)
        self._series = _Series()
        # First add time of each item that is waiting to be handed out.
        self._add_times: dict[Any, float] = {}
        _collector(registry).track(name, self._series, self._now, self)

    def add(self, item: Hashable) -> None:
        series = self._series
        series.adds += 1
        series.depth += 1
        if item not in self._add_times:
            self._add_times[item] = self._now()

    def get(self, item: Hashable) -> None:
        now = self._now()
        series = self._series
        series.depth -= 1
        series.processing_since[item] = now
        added = self._add_times.pop(item, None)
        if added is not None:
            waited = now - added
            series.latency_buckets[bisect_left(DURATION_BUCKETS, waited)] += 1
            series.latency_sum += waited

    def done(self, item: Hashable) -> None:
        series = self._series
        started = series.processing_since.pop(item, None)
        if started is not None:
            took = self._now() - started
            series.work_buckets[bisect_left(DURATION_BUCKETS, took)] += 1
            series.work_sum += took


class RetryMetrics:
    """Counts the ``add_after`` calls of one named delaying queue."""

    __slots__ = ("__weakref__", "_series")

    def __init__(self, name: str, clock: Clock, registry: CollectorRegistry | None) -> None:
        self._series = _Series()
        _collector(registry).track(name, self._series, _timer(clock), self)

    def retry(self) -> None:
        self._series.retries += 1


def new_queue_metrics(
    name: str | None, clock: Clock, registry: CollectorRegistry | None
) -> QueueMetrics | None:
    """Metrics for a queue called ``name``, or ``None`` (record nothing) when it has no name."""
    return QueueMetrics(name, clock, registry) if name else None


def new_retry_metrics(
    name: str | None, clock: Clock, registry: CollectorRegistry | None
) -> RetryMetrics | None:
    """Retry metrics for a delaying queue called ``name``, or ``None`` when it has no name."""
    return RetryMetrics(name, clock, registry) if name else None
