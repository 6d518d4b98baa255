"""EventCorrelator: de-duplication, aggregation and the spam filter (upstream:
events_cache_test.go TestEventCorrelator, TestEventAggregate*, TestEventSpamFilter)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kcontrol.clock import FakeClock
from kcontrol.events import CorrelatorOptions, EventCorrelator
from kcontrol.events._correlator import _LRU
from kcontrol.events._event import EventNamer, make_event
from kcontrol.metatime import format_time

POD = {"kind": "Pod", "apiVersion": "v1", "namespace": "ns", "name": "web-1", "uid": "u-1"}


class Events:
    """Builds events as a recorder would, stamped from the fake clock."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.namer = EventNamer(clock)

    def __call__(
        self,
        message: str = "Created pod: web-1",
        *,
        reason: str = "SuccessfulCreate",
        event_type: str = "Normal",
        ref: dict[str, Any] | None = None,
        component: str = "replicaset-controller",
    ) -> dict[str, Any]:
        ref = ref or POD
        return make_event(
            ref,
            event_type,
            reason,
            message,
            name=self.namer.name(ref["name"]),
            timestamp=format_time(self.clock.wall()),
            component=component,
            host="node-a",
        )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def events(clock: FakeClock) -> Events:
    return Events(clock)


def written(event: dict[str, Any], resource_version: str) -> dict[str, Any]:
    """The event as the server would answer a write: with a resourceVersion."""
    answer = copy.deepcopy(event)
    answer["metadata"]["resourceVersion"] = resource_version
    return answer


def test_first_event_is_created_as_is(clock: FakeClock, events: Events) -> None:
    correlator = EventCorrelator(clock)
    event = events()
    result = correlator.correlate(event)
    assert not result.skip
    assert result.patch is None
    assert result.event == event
    assert result.event is not event


def test_repeats_become_patches_with_rising_count(clock: FakeClock, events: Events) -> None:
    correlator = EventCorrelator(clock)
    first = correlator.correlate(events()).event
    correlator.update_state(written(first, "11"))
    clock.step(30)
    second = correlator.correlate(events())
    assert second.patch == {
        "count": 2,
        "lastTimestamp": "2026-01-01T00:00:30Z",
        "message": "Created pod: web-1",
    }
    assert second.event["metadata"]["name"] == first["metadata"]["name"]
    assert second.event["metadata"]["resourceVersion"] == "11"
    assert second.event["firstTimestamp"] == first["firstTimestamp"] == "2026-01-01T00:00:00Z"
    assert second.event["count"] == 2
    correlator.update_state(written(second.event, "12"))
    clock.step(30)
    third = correlator.correlate(events())
    assert third.patch is not None and third.patch["count"] == 3
    assert third.patch["lastTimestamp"] == "2026-01-01T00:01:00Z"
    assert third.event["metadata"]["name"] == first["metadata"]["name"]
    assert third.event["metadata"]["resourceVersion"] == "12"


def test_count_rises_even_before_the_write_is_confirmed(clock: FakeClock, events: Events) -> None:
    correlator = EventCorrelator(clock)
    correlator.correlate(events())
    assert correlator.correlate(events()).event["count"] == 2
    assert correlator.correlate(events()).event["count"] == 3


@pytest.mark.parametrize(
    ("change", "kwargs"),
    [
        ("message", {"message": "Created pod: web-2"}),
        ("reason", {"reason": "FailedCreate"}),
        ("type", {"event_type": "Warning"}),
        ("object", {"ref": {**POD, "name": "web-2", "uid": "u-2"}}),
        ("source", {"component": "deployment-controller"}),
    ],
)
def test_events_differing_in_anything_are_distinct(
    clock: FakeClock, events: Events, change: str, kwargs: dict[str, Any]
) -> None:
    correlator = EventCorrelator(clock)
    correlator.correlate(events())
    result = correlator.correlate(events(**kwargs))
    assert result.patch is None, change
    assert result.event["count"] == 1


def test_correlate_does_not_modify_its_argument(clock: FakeClock, events: Events) -> None:
    correlator = EventCorrelator(clock)
    correlator.correlate(events())
    event = events()
    before = copy.deepcopy(event)
    correlator.correlate(event)
    assert event == before


def test_ten_similar_events_are_aggregated(clock: FakeClock, events: Events) -> None:
    correlator = EventCorrelator(clock)
    for i in range(9):
        result = correlator.correlate(events(f"Created pod: web-{i}"))
        assert result.patch is None
        assert not result.event["message"].startswith("(combined")
    tenth = correlator.correlate(events("Created pod: web-9"))
    assert tenth.patch is None  # a new, aggregate Event
    assert tenth.event["message"] == "(combined from similar events): Created pod: web-9"
    assert tenth.event["count"] == 1
    assert tenth.event["reason"] == "SuccessfulCreate"
    assert tenth.event["involvedObject"] == POD
    assert tenth.event["metadata"]["name"].startswith("web-1.")
    correlator.update_state(written(tenth.event, "20"))
    eleventh = correlator.correlate(events("Created pod: web-10"))
    assert eleventh.patch == {
        "count": 2,
        "lastTimestamp": "2026-01-01T00:00:00Z",
        "message": "(combined from similar events): Created pod: web-10",
    }
    assert eleventh.event["metadata"]["name"] == tenth.event["metadata"]["name"]


def test_aggregate_names_never_clash_with_recorded_names(clock: FakeClock) -> None:
    namer = EventNamer(clock)
    events = Events(clock)
    events.namer = namer
    correlator = EventCorrelator(clock, namer=namer)
    names = set()
    for i in range(12):
        event = events(f"m{i}")
        names.add(event["metadata"]["name"])
        names.add(correlator.correlate(event).event["metadata"]["name"])
    assert len(names) == 12 + 1  # one aggregate Event besides the twelve recorded names


def test_aggregation_window_restarts_after_a_quiet_interval(
    clock: FakeClock, events: Events
) -> None:
    correlator = EventCorrelator(clock)
    for i in range(9):
        correlator.correlate(events(f"m{i}"))
        clock.step(60)  # 9 minutes in all, never more than 10 between two
    clock.step(601 - 60)  # a gap of more than 10 minutes: the group starts over
    result = correlator.correlate(events("m9"))
    assert result.event["message"] == "m9"


def test_events_within_the_window_keep_the_group_alive(clock: FakeClock, events: Events) -> None:
    correlator = EventCorrelator(clock)
    for i in range(9):
        correlator.correlate(events(f"m{i}"))
        clock.step(599)  # over an hour in all, but never a 10-minute gap
    assert correlator.correlate(events("m9")).event["message"].startswith("(combined")


def test_aggregation_threshold_is_configurable(clock: FakeClock, events: Events) -> None:
    correlator = EventCorrelator(clock, CorrelatorOptions(max_events=3, spam_burst=100))
    correlator.correlate(events("a"))
    correlator.correlate(events("b"))
    assert correlator.correlate(events("c")).event["message"].startswith("(combined")


def test_spam_filter_allows_a_burst_of_25_then_one_per_5_minutes(
    clock: FakeClock, events: Events
) -> None:
    correlator = EventCorrelator(clock)
    results = [correlator.correlate(events()) for _ in range(26)]
    assert [r.skip for r in results] == [False] * 25 + [True]
    assert results[24].event["count"] == 25
    clock.step(299)
    assert correlator.correlate(events()).skip
    clock.step(1)
    assert not correlator.correlate(events()).skip
    assert correlator.correlate(events()).skip


def test_spam_filter_is_per_object_and_source(clock: FakeClock, events: Events) -> None:
    correlator = EventCorrelator(clock)
    for _ in range(25):
        correlator.correlate(events())
    assert correlator.correlate(events()).skip
    other_object = {**POD, "name": "web-2", "uid": "u-2"}
    assert not correlator.correlate(events(ref=other_object)).skip
    assert not correlator.correlate(events(component="deployment-controller")).skip
    # Any reason or message about the same object draws from the same bucket.
    assert correlator.correlate(events("other message", reason="Other")).skip


def test_caches_are_bounded(clock: FakeClock, events: Events) -> None:
    correlator = EventCorrelator(clock, CorrelatorOptions(lru_size=2))
    first = correlator.correlate(events()).event
    for i in range(2):
        correlator.correlate(events(ref={**POD, "name": f"other-{i}", "uid": f"o-{i}"}))
    again = correlator.correlate(events())  # the first observation was evicted
    assert again.patch is None
    assert again.event["metadata"]["name"] != first["metadata"]["name"]


def test_lru_evicts_least_recently_used() -> None:
    lru: _LRU[str, int] = _LRU(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # "b" is now the least recently used
    lru.put("c", 3)
    assert lru.get("b") is None
    assert (lru.get("a"), lru.get("c"), len(lru)) == (1, 3, 2)
