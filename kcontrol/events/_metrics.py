"""Prometheus metrics of the event broadcaster.

``kcontrol_events_dropped_total{component, reason}`` counts events that were never written,
by why:

=====================  ==========================================================================
``queue_full``         the broadcaster's queue was full when the event was recorded
``invalid``            the object could not be referenced (no name or kind) or the type is unknown
``spam``               the spam filter's token bucket for the source and object was empty
``rejected``           the API server refused the write (403, 422, namespace terminating, ...)
``retries_exhausted``  transient failures (connection, 429, 5xx, timeouts) outlasted every retry
``shutdown``           still queued, or failed once, while flushing after the broadcaster stopped
=====================  ==========================================================================

``kcontrol_events_written_total{component, verb}`` counts successful writes: ``create`` for a
new Event, ``patch`` for a repeat that raised the ``count`` of an existing one.

The families are created once per registry and shared by every broadcaster registered on it.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from kcontrol._registry import PerRegistry

__all__ = ["EventMetrics"]


class _Families:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.dropped = Counter(
            "kcontrol_events_dropped_total",
            "Events that were recorded but never written to the API server, by reason.",
            ("component", "reason"),
            registry=registry,
        )
        self.written = Counter(
            "kcontrol_events_written_total",
            "Events written to the API server: created anew or patched to raise their count.",
            ("component", "verb"),
            registry=registry,
        )


_families = PerRegistry(_Families).get


class EventMetrics:
    """The counters of one broadcaster, labelled with its component."""

    __slots__ = ("_component", "_families")

    def __init__(self, component: str, registry: CollectorRegistry | None) -> None:
        self._component = component
        self._families = _families(registry)

    def dropped(self, reason: str, count: int = 1) -> None:
        if count:
            self._families.dropped.labels(self._component, reason).inc(count)

    def written(self, verb: str) -> None:
        self._families.written.labels(self._component, verb).inc()
