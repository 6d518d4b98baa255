"""EventBroadcaster with the fake client: what it writes, retries, drops and flushes (upstream:
event_test.go TestEventf, TestWriteEventError, TestUpdateExpiredEvent, TestEventfNoNamespace,
TestMultiSinkCache)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kcontrol.client import EVENTS, PatchType
from kcontrol.clock import FakeClock
from kcontrol.errors import (
    AlreadyExists,
    ApiConnectionError,
    Forbidden,
    ServiceUnavailable,
    TooManyRequests,
)
from kcontrol.events import EventBroadcaster
from kcontrol.testing import Action, FakeClient

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web-1", "namespace": "shop", "uid": "u-1", "resourceVersion": "7"},
}


class HalfRandom(random.Random):
    """Makes the randomised first retry delay exactly half the initial delay."""

    def random(self) -> float:
        return 0.5


class Harness:
    def __init__(self, **options: Any) -> None:
        self.clock = FakeClock()
        self.client = FakeClient(clock=self.clock)
        self.registry = CollectorRegistry()
        settings: dict[str, Any] = {
            "component": "replicaset-controller",
            "host": "node-a",
            "clock": self.clock,
            "registry": self.registry,
            "rng": HalfRandom(),
        }
        settings.update(options)
        self.broadcaster = EventBroadcaster(self.client, **settings)
        self.recorder = self.broadcaster.new_recorder()

    def writes(self) -> list[Action]:
        return [a for a in self.client.actions if a.resource == EVENTS]

    def dropped(self, reason: str) -> float:
        value = self.registry.get_sample_value(
            "kcontrol_events_dropped_total",
            {"component": "replicaset-controller", "reason": reason},
        )
        return value or 0.0

    def stored(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.client.tracker.objects(EVENTS, "shop")
        return items

    async def settle(self, until: Callable[[], bool] | None = None, rounds: int = 200) -> None:
        """Let the sender run until ``until()`` holds (or it goes idle)."""
        for _ in range(rounds):
            await asyncio.sleep(0)
            if until is not None and until():
                return
        assert until is None, "condition not reached"

    @asynccontextmanager
    async def running(self) -> AsyncIterator[asyncio.Task[None]]:
        task = asyncio.create_task(self.broadcaster.run())
        try:
            yield task
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task


def fail_times(times: int, error: Callable[[], Exception]) -> Callable[[Action], None]:
    left = [times]

    def reactor(_: Action) -> None:
        if left[0] > 0:
            left[0] -= 1
            raise error()

    return reactor


async def test_repeated_event_is_created_then_patched_with_rising_count() -> None:
    h = Harness()
    async with h.running():
        h.recorder.eventf(POD, "Normal", "SuccessfulCreate", "Created pod: %s", "web-1-x")
        await h.settle(lambda: len(h.writes()) == 1)
        h.clock.step(10)
        h.recorder.eventf(POD, "Normal", "SuccessfulCreate", "Created pod: %s", "web-1-x")
        await h.settle(lambda: len(h.writes()) == 2)
        h.clock.step(5)
        h.recorder.eventf(POD, "Normal", "SuccessfulCreate", "Created pod: %s", "web-1-x")
        await h.settle(lambda: len(h.writes()) == 3)

    create, patch2, patch3 = h.writes()
    assert (create.verb, create.namespace) == ("create", "shop")
    name = create.name
    assert name.startswith("web-1.")
    assert create.object is not None
    assert create.object["involvedObject"] == {
        "kind": "Pod",
        "namespace": "shop",
        "name": "web-1",
        "uid": "u-1",
        "apiVersion": "v1",
        "resourceVersion": "7",
    }
    assert create.object["count"] == 1
    assert create.object["firstTimestamp"] == "2026-01-01T00:00:00Z"
    assert (patch2.verb, patch2.name, patch2.patch_type) == ("patch", name, PatchType.STRATEGIC)
    assert patch2.patch == {
        "count": 2,
        "lastTimestamp": "2026-01-01T00:00:10Z",
        "message": "Created pod: web-1-x",
    }
    assert (patch3.verb, patch3.name) == ("patch", name)
    assert patch3.patch == {
        "count": 3,
        "lastTimestamp": "2026-01-01T00:00:15Z",
        "message": "Created pod: web-1-x",
    }
    (stored,) = h.stored()
    assert stored["count"] == 3
    assert stored["firstTimestamp"] == "2026-01-01T00:00:00Z"
    assert stored["lastTimestamp"] == "2026-01-01T00:00:15Z"


async def test_expired_event_is_created_anew() -> None:
    h = Harness()
    async with h.running():
        h.recorder.event(POD, "Warning", "FailedCreate", "quota exceeded")
        await h.settle(lambda: len(h.stored()) == 1)
        h.client.tracker.delete(EVENTS, h.stored()[0]["metadata"]["name"], namespace="shop")
        h.recorder.event(POD, "Warning", "FailedCreate", "quota exceeded")
        await h.settle(lambda: len(h.writes()) == 3)
    create, patch, recreate = h.writes()
    assert [a.verb for a in (create, patch, recreate)] == ["create", "patch", "create"]
    assert recreate.name == create.name
    assert recreate.object is not None
    assert recreate.object["count"] == 2
    assert "resourceVersion" not in recreate.object["metadata"]
    (stored,) = h.stored()
    assert stored["count"] == 2


async def test_transient_errors_are_retried_with_backoff_on_the_clock() -> None:
    h = Harness()
    h.client.prepend_reactor("create", EVENTS, fail_times(3, ServiceUnavailable))
    async with h.running():
        h.recorder.event(POD, "Normal", "Scaled", "up")
        await h.settle(lambda: len(h.writes()) == 1 and h.clock.has_waiters())
        await h.settle()
        assert len(h.writes()) == 1  # waiting on the clock, not spinning
        h.clock.step(0.49)
        await h.settle()
        assert len(h.writes()) == 1
        h.clock.step(0.01)  # the first delay: half (jitter) of 1 s
        await h.settle(lambda: len(h.writes()) == 2 and h.clock.has_waiters())
        h.clock.step(2)  # then 2 s
        await h.settle(lambda: len(h.writes()) == 3 and h.clock.has_waiters())
        h.clock.step(3.99)
        await h.settle()
        assert len(h.writes()) == 3
        h.clock.step(0.01)  # then 4 s
        await h.settle(lambda: len(h.stored()) == 1)
    assert len(h.writes()) == 4
    assert h.dropped("retries_exhausted") == 0


@pytest.mark.parametrize(
    "error",
    [ApiConnectionError, TooManyRequests, ServiceUnavailable, TimeoutError],
    ids=lambda e: e.__name__,
)
async def test_retries_give_up_after_max_tries(error: Callable[[], Exception]) -> None:
    h = Harness(max_tries=3)
    h.client.prepend_reactor("create", EVENTS, fail_times(3, error))
    async with h.running():
        h.recorder.event(POD, "Normal", "First", "lost")
        h.recorder.event(POD, "Normal", "Second", "written")
        await h.settle(lambda: len(h.writes()) == 1 and h.clock.has_waiters())
        h.clock.step(0.5)
        await h.settle(lambda: len(h.writes()) == 2 and h.clock.has_waiters())
        h.clock.step(2)
        await h.settle(lambda: len(h.stored()) == 1)
    assert [a.object["reason"] for a in h.writes() if a.object] == [
        "First",
        "First",
        "First",
        "Second",
    ]
    assert h.dropped("retries_exhausted") == 1


async def test_rejected_events_are_dropped_without_retry() -> None:
    h = Harness()
    h.client.prepend_reactor("create", EVENTS, fail_times(1, Forbidden))
    async with h.running():
        h.recorder.event(POD, "Normal", "First", "forbidden")
        h.recorder.event(POD, "Normal", "Second", "fine")
        await h.settle(lambda: len(h.stored()) == 1)
    assert [a.object["reason"] for a in h.writes() if a.object] == ["First", "Second"]
    assert h.dropped("rejected") == 1


async def test_already_existing_event_is_not_a_loss() -> None:
    h = Harness()
    h.client.prepend_reactor("create", EVENTS, fail_times(1, AlreadyExists))
    async with h.running():
        h.recorder.event(POD, "Normal", "Reason", "message")
        await h.settle(lambda: len(h.writes()) == 1)
        await h.settle()
    assert len(h.writes()) == 1
    assert h.dropped("rejected") == 0


async def test_spam_filter_drops_beyond_the_burst() -> None:
    h = Harness()
    async with h.running():
        for _ in range(30):
            h.recorder.event(POD, "Normal", "Probe", "same again")
        await h.settle(lambda: h.broadcaster.pending() == 0 and len(h.writes()) == 25)
        await h.settle()
    assert [a.verb for a in h.writes()] == ["create"] + ["patch"] * 24
    assert h.stored()[0]["count"] == 25
    assert h.dropped("spam") == 5


async def test_similar_events_are_aggregated_into_one() -> None:
    h = Harness()
    async with h.running():
        for i in range(12):
            h.recorder.eventf(POD, "Warning", "FailedMount", "volume %d not ready", i)
        await h.settle(lambda: len(h.writes()) == 12)
    writes = h.writes()
    assert [a.verb for a in writes] == ["create"] * 10 + ["patch"] * 2
    aggregate = writes[9].object
    assert aggregate is not None
    assert aggregate["message"] == "(combined from similar events): volume 9 not ready"
    assert writes[11].name == aggregate["metadata"]["name"]
    assert writes[11].patch == {
        "count": 3,
        "lastTimestamp": "2026-01-01T00:00:00Z",
        "message": "(combined from similar events): volume 11 not ready",
    }
    assert len(h.stored()) == 10


async def test_flush_on_cancel_writes_the_inflight_and_queued_events() -> None:
    h = Harness()
    h.client.prepend_reactor("create", EVENTS, fail_times(1, ServiceUnavailable))
    task = asyncio.create_task(h.broadcaster.run())
    h.recorder.event(POD, "Normal", "InFlight", "being retried")
    await h.settle(
        lambda: len(h.writes()) == 1 and h.clock.has_waiters()
    )  # failed once, now sleeping on the clock
    h.recorder.event(POD, "Normal", "Queued1", "waiting")
    h.recorder.event(POD, "Normal", "Queued2", "waiting")
    assert h.broadcaster.pending() == 2
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(e["reason"] for e in h.stored()) == ["InFlight", "Queued1", "Queued2"]
    assert h.broadcaster.pending() == 0
    assert h.dropped("shutdown") == 0


async def test_flush_gives_up_after_its_timeout() -> None:
    h = Harness(flush_timeout=0.05)
    hang = asyncio.Event()

    async def hanging(_: Action) -> None:
        await hang.wait()

    task = asyncio.create_task(h.broadcaster.run())
    await h.settle()
    h.client.prepend_reactor("create", EVENTS, hanging)
    for i in range(3):
        h.recorder.event(POD, "Normal", f"R{i}", "never written")
    await h.settle(lambda: len(h.writes()) == 1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert h.dropped("shutdown") == 3  # the one in flight and the two queued
    assert h.broadcaster.pending() == 0
    assert h.stored() == []


async def test_failure_during_flush_is_counted() -> None:
    h = Harness()
    h.client.prepend_reactor("create", EVENTS, fail_times(5, ServiceUnavailable))
    h.recorder.event(POD, "Normal", "R", "m")
    task = asyncio.create_task(h.broadcaster.run())
    await h.settle(lambda: len(h.writes()) == 1 and h.clock.has_waiters())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(h.writes()) == 2  # one more attempt while flushing, no retries
    assert h.dropped("shutdown") == 1


async def test_recording_never_blocks_while_the_sender_is_stuck() -> None:
    h = Harness(queue_size=5)
    h.client.prepend_reactor("create", EVENTS, fail_times(100, ServiceUnavailable))
    async with h.running():
        h.recorder.event(POD, "Normal", "Stuck", "retrying forever")
        await h.settle(lambda: len(h.writes()) == 1)
        for i in range(10):
            h.recorder.event(POD, "Normal", f"R{i}", "m")
        assert h.broadcaster.pending() == 5
        assert h.dropped("queue_full") == 5


async def test_the_default_queue_holds_a_burst_as_client_go_buffers_it() -> None:
    """client-go's broadcaster buffers up to 2,000 events between a recorder and its sink
    (1,000 in the incoming channel, 1,000 in the sink watcher's): a burst that size - a
    1,000-Deployment rollout records about that many at once - is written whole. The
    1,000 this queue held before dropped 3-7 % of a 200x5 rollout's events (bench/rollout)."""
    h = Harness()
    for i in range(2000):  # one object each: no spam filter or aggregation in the way
        pod = {**POD, "metadata": {**POD["metadata"], "name": f"web-{i}", "uid": f"u-{i}"}}
        h.recorder.event(pod, "Normal", "Burst", "m")
    assert h.broadcaster.pending() == 2000
    assert h.dropped("queue_full") == 0
    h.recorder.event(POD, "Normal", "OneTooMany", "m")
    assert h.dropped("queue_full") == 1


async def test_run_twice_at_once_is_refused() -> None:
    h = Harness()
    async with h.running():
        await h.settle()
        with pytest.raises(RuntimeError, match="already running"):
            await h.broadcaster.run()


async def test_event_about_object_without_namespace_goes_to_default() -> None:
    h = Harness()
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "n"}}
    async with h.running():
        h.recorder.event(node, "Normal", "NodeReady", "ready")
        await h.settle(lambda: len(h.writes()) == 1)
    (create,) = h.writes()
    assert create.namespace == "default"
    assert create.object is not None
    assert create.object["involvedObject"] == {
        "kind": "Node",
        "name": "n1",
        "uid": "n",
        "apiVersion": "v1",
    }
