"""Building Events, and the broadcaster's recorder (never blocks, never raises)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kcontrol.client import NAMESPACES, REPLICASETS
from kcontrol.clock import FakeClock
from kcontrol.events import EventBroadcaster, object_reference
from kcontrol.events._event import EventNamer, make_event
from kcontrol.events._recorder import format_message

RS: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {
        "name": "web-6d4f",
        "namespace": "shop",
        "uid": "3c1e",
        "resourceVersion": "42",
        "labels": {"app": "web"},
    },
    "spec": {"replicas": 3},
}


class NoWrites:
    """A client that must not be used: these tests never run the broadcaster."""

    async def create(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("unexpected create")

    async def patch(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("unexpected patch")

    update = update_status = delete = create


def dropped(registry: CollectorRegistry, reason: str, component: str = "test") -> float:
    value = registry.get_sample_value(
        "kcontrol_events_dropped_total", {"component": component, "reason": reason}
    )
    return value or 0.0


# -- object references and Event bodies -----------------------------------------------------


def test_object_reference_of_an_object() -> None:
    assert object_reference(RS) == {
        "kind": "ReplicaSet",
        "namespace": "shop",
        "name": "web-6d4f",
        "uid": "3c1e",
        "apiVersion": "apps/v1",
        "resourceVersion": "42",
    }


def test_object_reference_takes_kind_from_resource_when_missing() -> None:
    item = {"metadata": {"name": "web-6d4f", "namespace": "shop", "uid": "3c1e"}}
    assert object_reference(item, REPLICASETS) == {
        "kind": "ReplicaSet",
        "namespace": "shop",
        "name": "web-6d4f",
        "uid": "3c1e",
        "apiVersion": "apps/v1",
    }


def test_object_reference_of_a_reference_is_a_copy() -> None:
    ref = {"kind": "Node", "name": "n1", "uid": "9", "fieldPath": "spec"}
    copied = object_reference(ref)
    assert copied == ref and copied is not ref


@pytest.mark.parametrize(
    "obj",
    [{"kind": "Pod", "metadata": {"namespace": "ns"}}, {"metadata": {"name": "no-kind"}}, {}],
    ids=["no name", "no kind", "empty"],
)
def test_object_reference_refuses_incomplete_objects(obj: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        object_reference(obj)


def test_make_event_shape() -> None:
    event = make_event(
        object_reference(RS),
        "Normal",
        "SuccessfulCreate",
        "Created pod: web-6d4f-x",
        name="web-6d4f.1",
        timestamp="2026-01-01T00:00:00Z",
        component="replicaset-controller",
        host="node-a",
    )
    assert event == {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "web-6d4f.1", "namespace": "shop"},
        "involvedObject": object_reference(RS),
        "reason": "SuccessfulCreate",
        "message": "Created pod: web-6d4f-x",
        "type": "Normal",
        "source": {"component": "replicaset-controller", "host": "node-a"},
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:00:00Z",
        "count": 1,
        "reportingComponent": "replicaset-controller",
        "reportingInstance": "node-a",
    }


def test_events_about_cluster_scoped_objects_go_to_default() -> None:
    ref = object_reference({"metadata": {"name": "kube-system", "uid": "1"}}, NAMESPACES)
    event = make_event(ref, "Warning", "R", "m", name="n", timestamp="t", component="c", host=None)
    assert event["metadata"]["namespace"] == "default"
    assert event["source"] == {"component": "c"}
    assert event["reportingInstance"] == ""


def test_namer_uses_wall_nanoseconds_in_hex_and_never_repeats() -> None:
    clock = FakeClock(wall_start=datetime(2026, 1, 1, tzinfo=UTC))
    namer = EventNamer(clock)
    base = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp()) * 10**9
    assert namer.name("web") == f"web.{base:x}"
    assert namer.name("web") == f"web.{base + 1:x}"  # the clock stood still
    clock.step(1.5)
    assert namer.name("db") == f"db.{base + 1_500_000_000:x}"


@pytest.mark.parametrize(
    ("fmt", "args", "message"),
    [
        ("Created pod: %s", ("web-1",), "Created pod: web-1"),
        ("Scaled up to %d", (3,), "Scaled up to 3"),
        ("100% done", (), "100% done"),
        ("%s and %s", ("one",), "%s and %s (args: 'one')"),
        ("%d", ("x",), "%d (args: 'x')"),
    ],
)
def test_format_message(fmt: str, args: tuple[object, ...], message: str) -> None:
    assert format_message(fmt, args) == message


# -- the broadcaster's recorder -------------------------------------------------------------


def new_broadcaster(**kwargs: Any) -> tuple[EventBroadcaster, CollectorRegistry]:
    registry = CollectorRegistry()
    options: dict[str, Any] = {"component": "test", "clock": FakeClock(), "registry": registry}
    options.update(kwargs)
    return EventBroadcaster(NoWrites(), **options), registry


def test_recorder_queues_the_event_before_run() -> None:
    broadcaster, _ = new_broadcaster(host="node-a")
    recorder = broadcaster.new_recorder()
    recorder.eventf(RS, "Normal", "ScalingReplicaSet", "Scaled up to %d", 3)
    assert broadcaster.pending() == 1
    event = broadcaster._queue.get_nowait()
    assert event["message"] == "Scaled up to 3"
    assert event["source"] == {"component": "test", "host": "node-a"}
    assert event["involvedObject"]["uid"] == "3c1e"
    assert event["firstTimestamp"] == "2026-01-01T00:00:00Z"


def test_recorder_component_override() -> None:
    broadcaster, _ = new_broadcaster()
    broadcaster.new_recorder(component="other").event(RS, "Normal", "R", "m")
    event = broadcaster._queue.get_nowait()
    assert event["source"]["component"] == event["reportingComponent"] == "other"


def test_full_queue_drops_and_counts_without_blocking() -> None:
    broadcaster, registry = new_broadcaster(queue_size=3)
    recorder = broadcaster.new_recorder()
    for i in range(5):
        recorder.event(RS, "Normal", "R", f"m{i}")  # synchronous: cannot block
    assert broadcaster.pending() == 3
    assert dropped(registry, "queue_full") == 2
    assert [broadcaster._queue.get_nowait()["message"] for _ in range(3)] == ["m0", "m1", "m2"]


@pytest.mark.parametrize(
    ("obj", "event_type"),
    [
        (RS, "Info"),
        ({"metadata": {"name": "no-kind"}}, "Normal"),
        ({"kind": "Pod"}, "Normal"),
        ("not a mapping", "Normal"),
    ],
    ids=["bad type", "no kind", "no name", "garbage"],
)
def test_invalid_events_are_dropped_not_raised(obj: Any, event_type: str) -> None:
    broadcaster, registry = new_broadcaster()
    broadcaster.new_recorder().event(obj, event_type, "R", "m")
    assert broadcaster.pending() == 0
    assert dropped(registry, "invalid") == 1


def test_broadcasters_share_metric_families_on_one_registry() -> None:
    registry = CollectorRegistry()
    for component in ("a", "b"):
        b = EventBroadcaster(NoWrites(), component=component, registry=registry, queue_size=1)
        b.new_recorder().event(RS, "Normal", "R", "1")
        b.new_recorder().event(RS, "Normal", "R", "2")
    assert dropped(registry, "queue_full", "a") == dropped(registry, "queue_full", "b") == 1
