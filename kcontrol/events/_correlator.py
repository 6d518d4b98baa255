"""Event correlation: de-duplication, aggregation and spam filtering, as client-go's
``tools/record/events_cache.go``.

Every event passes three stages before it is written:

1. The **aggregator** groups events that differ only in their message (same source, involved
   object, type, reason, reporting component and instance). Once ``max_events`` (10) distinct
   messages were seen in a group with no gap longer than ``max_interval`` (10 minutes), further
   ones become a single aggregate event whose message is ``"(combined from similar events): "``
   followed by the latest message.
2. The **logger** de-duplicates: an event identical to one already written (same source,
   involved object, type, reason and message; or the same aggregate group) is not written again
   but becomes a patch of the existing Event that raises its ``count`` and ``lastTimestamp``.
3. The **spam filter** is a token bucket per source and involved object (burst 25, one new
   token every 5 minutes; client-go's passive ``TokenBucketRateLimiter`` and ``TryAccept``,
   here :meth:`kcontrol.flowcontrol.TokenBucketRateLimiter.try_accept`); an event finding
   the bucket empty is skipped.

All caches are LRUs of ``lru_size`` (4096) entries, so memory is bounded however many objects
a controller reports on. Time is read from the injectable clock: intervals and token refills
from ``now()``, timestamps written into Events from ``wall()``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kcontrol.client import Object, deep_copy
from kcontrol.clock import Clock
from kcontrol.events._event import EventNamer
from kcontrol.flowcontrol import TokenBucketRateLimiter
from kcontrol.metatime import format_time

__all__ = ["CorrelatorOptions", "EventCorrelation", "EventCorrelator"]

_K = TypeVar("_K")
_V = TypeVar("_V")

AGGREGATE_MESSAGE_PREFIX = "(combined from similar events): "


@dataclass(frozen=True, slots=True)
class CorrelatorOptions:
    """Tunables of :class:`EventCorrelator`; the defaults are client-go's.

    ``spam_qps`` (> 0) and ``spam_burst`` (>= 1) shape each object's token bucket; invalid
    values are refused here, so that recording never fails later.
    """

    lru_size: int = 4096
    spam_burst: int = 25
    spam_qps: float = 1.0 / 300.0
    max_events: int = 10
    max_interval: float = 600.0

    def __post_init__(self) -> None:
        if not self.spam_qps > 0:
            raise ValueError(f"spam_qps must be positive, got {self.spam_qps!r}")
        if self.spam_burst < 1:
            raise ValueError(f"spam_burst must be at least 1, got {self.spam_burst!r}")


class _LRU(Generic[_K, _V]):
    """A mapping that forgets its least recently used entry beyond ``size`` entries."""

    __slots__ = ("_data", "_size")

    def __init__(self, size: int) -> None:
        self._size = size
        self._data: OrderedDict[_K, _V] = OrderedDict()

    def get(self, key: _K) -> _V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: _K, value: _V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self._size:
            self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


def _source(event: Mapping[str, Any]) -> tuple[str, str]:
    source = event.get("source") or {}
    return (source.get("component", ""), source.get("host", ""))


def _object(event: Mapping[str, Any]) -> tuple[str, str, str, str, str]:
    ref = event.get("involvedObject") or {}
    return (
        ref.get("kind", ""),
        ref.get("namespace", ""),
        ref.get("name", ""),
        ref.get("uid", ""),
        ref.get("apiVersion", ""),
    )


def event_key(event: Mapping[str, Any]) -> tuple[str, ...]:
    """What makes two events the same event: they are counted as one."""
    field_path = (event.get("involvedObject") or {}).get("fieldPath", "")
    return (
        *_source(event),
        *_object(event),
        field_path,
        event.get("type", ""),
        event.get("reason", ""),
        event.get("message", ""),
    )


def spam_key(event: Mapping[str, Any]) -> tuple[str, ...]:
    """The token bucket an event draws from: its source and involved object."""
    return (*_source(event), *_object(event))


def aggregate_key(event: Mapping[str, Any]) -> tuple[str, ...]:
    """The group of similar events: everything but the message."""
    return (
        *_source(event),
        *_object(event),
        event.get("type", ""),
        event.get("reason", ""),
        event.get("reportingComponent", ""),
        event.get("reportingInstance", ""),
    )


class _SpamFilter:
    __slots__ = ("_buckets", "_burst", "_clock", "_qps")

    def __init__(self, options: CorrelatorOptions, clock: Clock) -> None:
        self._buckets: _LRU[tuple[str, ...], TokenBucketRateLimiter] = _LRU(options.lru_size)
        self._burst = options.spam_burst
        self._qps = options.spam_qps
        self._clock = clock

    def should_skip(self, event: Mapping[str, Any]) -> bool:
        key = spam_key(event)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = TokenBucketRateLimiter(self._qps, self._burst, clock=self._clock)
        self._buckets.put(key, bucket)
        return not bucket.try_accept()


@dataclass(slots=True)
class _AggregateRecord:
    messages: set[str]
    last_seen: float


class _Aggregator:
    __slots__ = ("_clock", "_max_events", "_max_interval", "_namer", "_records")

    def __init__(self, options: CorrelatorOptions, clock: Clock, namer: EventNamer) -> None:
        self._records: _LRU[tuple[str, ...], _AggregateRecord] = _LRU(options.lru_size)
        self._max_events = options.max_events
        self._max_interval = options.max_interval
        self._clock = clock
        self._namer = namer

    def aggregate(self, event: Object) -> tuple[Object, tuple[str, ...]]:
        """The event to go on with, and its de-duplication key.

        Below the threshold that is the event itself under its :func:`event_key`; at or above
        it, a fresh aggregate event under the group's key, so the logger folds every later
        member of the group into that one Event.
        """
        now = self._clock.now()
        group = aggregate_key(event)
        record = self._records.get(group)
        if record is None or now - record.last_seen > self._max_interval:
            record = _AggregateRecord(set(), now)
        record.messages.add(event.get("message", ""))
        record.last_seen = now
        self._records.put(group, record)
        if len(record.messages) < self._max_events:
            return event, event_key(event)
        # Keep the set from growing past the threshold.
        record.messages.pop()
        involved = event["involvedObject"]
        timestamp = format_time(self._clock.wall())
        aggregate: Object = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": self._namer.name(involved.get("name", "")),
                "namespace": event["metadata"].get("namespace"),
            },
            "involvedObject": deep_copy(involved),
            "reason": event.get("reason"),
            "message": AGGREGATE_MESSAGE_PREFIX + event.get("message", ""),
            "type": event.get("type"),
            "source": dict(event.get("source") or {}),
            "firstTimestamp": timestamp,
            "lastTimestamp": timestamp,
            "count": 1,
            "reportingComponent": event.get("reportingComponent", ""),
            "reportingInstance": event.get("reportingInstance", ""),
        }
        return aggregate, group


@dataclass(frozen=True, slots=True)
class _Observation:
    """What was last written for one de-duplication key."""

    count: int
    first_timestamp: str
    name: str
    resource_version: str


class _Logger:
    """Counts repeated events; a repeat becomes a patch of the Event already written."""

    __slots__ = ("_observations",)

    def __init__(self, options: CorrelatorOptions) -> None:
        self._observations: _LRU[tuple[str, ...], _Observation] = _LRU(options.lru_size)

    def observe(self, event: Object, key: tuple[str, ...]) -> tuple[Object, dict[str, Any] | None]:
        event = deep_copy(event)
        patch: dict[str, Any] | None = None
        last = self._observations.get(key)
        if last is not None and last.count > 0:
            event["metadata"]["name"] = last.name
            if last.resource_version:
                event["metadata"]["resourceVersion"] = last.resource_version
            event["firstTimestamp"] = last.first_timestamp
            event["count"] = last.count + 1
            # What client-go's two-way strategic merge patch between the event with count,
            # lastTimestamp and message blanked and the updated event comes down to.
            patch = {
                "count": event["count"],
                "lastTimestamp": event["lastTimestamp"],
                "message": event["message"],
            }
        self._remember(key, event)
        return event, patch

    def update_state(self, event: Mapping[str, Any]) -> None:
        self._remember(event_key(event), event)

    def _remember(self, key: tuple[str, ...], event: Mapping[str, Any]) -> None:
        meta = event.get("metadata") or {}
        self._observations.put(
            key,
            _Observation(
                count=int(event.get("count") or 0),
                first_timestamp=event.get("firstTimestamp") or "",
                name=meta.get("name", ""),
                resource_version=meta.get("resourceVersion", ""),
            ),
        )


@dataclass(frozen=True, slots=True)
class EventCorrelation:
    """The outcome of :meth:`EventCorrelator.correlate`.

    ``skip``: drop the event (spam). Otherwise write ``event``: create it when ``patch`` is
    ``None``, else apply ``patch`` (a strategic-merge patch) to the Event named in
    ``event["metadata"]``, falling back to creating ``event`` if that Event is gone.
    """

    event: Object
    patch: dict[str, Any] | None
    skip: bool = False


class EventCorrelator:
    """Filters, aggregates and de-duplicates events before they are written (see the module
    docstring). Feed it every event in the order they are written and report each successful
    write with :meth:`update_state`. Not thread-safe; one writer task owns it.

    ``namer`` names aggregate events; share the recorders' namer so names never clash."""

    __slots__ = ("_aggregator", "_logger", "_spam")

    def __init__(
        self,
        clock: Clock,
        options: CorrelatorOptions | None = None,
        *,
        namer: EventNamer | None = None,
    ) -> None:
        options = options or CorrelatorOptions()
        namer = namer if namer is not None else EventNamer(clock)
        self._aggregator = _Aggregator(options, clock, namer)
        self._logger = _Logger(options)
        self._spam = _SpamFilter(options, clock)

    def correlate(self, event: Object) -> EventCorrelation:
        """Decide what to write for ``event``; the argument is not modified."""
        aggregated, key = self._aggregator.aggregate(event)
        observed, patch = self._logger.observe(aggregated, key)
        if self._spam.should_skip(observed):
            return EventCorrelation(observed, None, skip=True)
        return EventCorrelation(observed, patch)

    def update_state(self, written: Mapping[str, Any]) -> None:
        """Remember the Event as the server returned it (its name, count, resourceVersion)."""
        self._logger.update_state(written)
