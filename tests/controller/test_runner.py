"""The controller runner: retry policy, timeouts, worker concurrency, draining, metrics.

Every test uses a real RateLimitingQueue on a FakeClock and a fake sync function; time moves only
when the test steps the clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kcontrol.client import PODS
from kcontrol.clock import FakeClock
from kcontrol.controller import (
    Controller,
    ControllerOptions,
    Result,
    SupersededWrites,
    guarded_by,
    key_func,
    superseded,
)
from kcontrol.errors import Conflict, StaleCache
from kcontrol.informers._keys import DeletedFinalStateUnknown
from kcontrol.testing import capture_logs


async def settle(rounds: int = 30) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


class Recorder:
    """A sync function whose behaviour per call is scripted, recording every call."""

    def __init__(self, behaviour: Callable[[str, int], Any] | None = None) -> None:
        self.calls: list[str] = []
        self.finished: list[str] = []
        self.behaviour = behaviour
        self.active: set[str] = set()
        self.max_active = 0
        self.overlaps: list[str] = []

    async def __call__(self, key: str) -> Result | None:
        if key in self.active:
            self.overlaps.append(key)
        self.active.add(key)
        self.max_active = max(self.max_active, len(self.active))
        self.calls.append(key)
        try:
            outcome = self.behaviour(key, self.calls.count(key)) if self.behaviour else None
            if asyncio.iscoroutine(outcome):
                outcome = await outcome
            if isinstance(outcome, Exception):
                raise outcome
            self.finished.append(key)
            return outcome  # type: ignore[no-any-return]
        finally:
            self.active.discard(key)


@asynccontextmanager
async def running(controller: Controller) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(controller.run())
    await settle()
    try:
        yield task
    finally:
        if not task.done():
            task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


def make(
    sync: Any,
    clock: FakeClock,
    registry: CollectorRegistry | None = None,
    **options: Any,
) -> Controller:
    return Controller(
        ControllerOptions(
            name=options.pop("name", "test"),
            sync=sync,
            clock=clock,
            registry=registry if registry is not None else CollectorRegistry(),
            **options,
        )
    )


async def test_success_forgets_the_backoff() -> None:
    clock = FakeClock()
    sync = Recorder(lambda key, n: RuntimeError("first fails") if n == 1 else None)
    controller = make(sync, clock)
    async with running(controller):
        controller.enqueue("ns/a")
        await settle()
        assert sync.calls == ["ns/a"]
        assert controller.queue.num_requeues("ns/a") == 1
        clock.step(0.005)  # the first retry of the default limiter waits 5 ms
        await settle()
        assert sync.calls == ["ns/a", "ns/a"]
        assert sync.finished == ["ns/a"]
        assert controller.queue.num_requeues("ns/a") == 0


async def test_error_requeues_rate_limited_with_growing_delay() -> None:
    clock = FakeClock()
    sync = Recorder(lambda key, n: RuntimeError("boom"))
    controller = make(sync, clock)
    async with running(controller):
        controller.enqueue("ns/a")
        await settle()
        assert sync.calls == ["ns/a"]
        assert controller.queue.waiting_len() == 1
        assert controller.queue.len() == 0
        clock.step(0.004)
        await settle()
        assert len(sync.calls) == 1, "retried before its 5 ms backoff"
        clock.step(0.001)
        await settle()
        assert len(sync.calls) == 2
        clock.step(0.009)  # the second retry waits 10 ms
        await settle()
        assert len(sync.calls) == 2
        clock.step(0.001)
        await settle()
        assert len(sync.calls) == 3
        assert controller.queue.num_requeues("ns/a") == 3


async def test_max_retries_drops_the_key_and_logs_it() -> None:
    clock = FakeClock()
    sync = Recorder(lambda key, n: RuntimeError("boom"))
    controller = make(sync, clock, max_retries=2)
    with capture_logs() as logs:
        async with running(controller):
            controller.enqueue("ns/a")
            for _ in range(5):
                await settle()
                clock.step(1.0)
            await settle()
    assert sync.calls == ["ns/a"] * 3  # the first try and two retries
    assert controller.queue.num_requeues("ns/a") == 0
    assert controller.queue.waiting_len() == 0
    dropped = [e for e in logs if "dropping" in e["event"]]
    assert len(dropped) == 1
    assert dropped[0]["key"] == "ns/a"
    assert dropped[0]["controller"] == "test"
    failures = [e for e in logs if e["event"] == "sync failed"]
    assert [e["retries"] for e in failures] == [0, 1]
    assert all(e["log_level"] == "error" and e["key"] == "ns/a" for e in failures)


async def test_a_conflict_counts_as_an_error_but_is_logged_without_a_traceback() -> None:
    clock = FakeClock()
    sync = Recorder(lambda key, n: Conflict("the object has been modified"))
    controller = make(sync, clock, max_retries=1)
    with capture_logs() as logs:
        async with running(controller):
            controller.enqueue("ns/a")
            for _ in range(5):
                await settle()
                clock.step(1.0)
            await settle()
    assert sync.calls == ["ns/a"] * 2  # retried once, then dropped as any error
    assert controller.queue.num_requeues("ns/a") == 0
    (failure,) = [e for e in logs if e["event"] == "sync failed"]
    assert failure["log_level"] == "info" and failure["retries"] == 0
    assert "exc_info" not in failure
    assert failure["error"] == "409 Conflict: the object has been modified"
    assert len([e for e in logs if "dropping" in e["event"]]) == 1


async def test_max_retries_zero_never_retries() -> None:
    clock = FakeClock()
    sync = Recorder(lambda key, n: RuntimeError("boom"))
    controller = make(sync, clock, max_retries=0)
    async with running(controller):
        controller.enqueue("a")
        await settle()
        clock.step(10)
        await settle()
    assert sync.calls == ["a"]


async def test_key_added_again_after_a_drop_is_synced_again() -> None:
    clock = FakeClock()
    sync = Recorder(lambda key, n: RuntimeError("boom") if n == 1 else None)
    controller = make(sync, clock, max_retries=0)
    async with running(controller):
        controller.enqueue("a")
        await settle()
        controller.enqueue("a")
        await settle()
    assert sync.calls == ["a", "a"]
    assert sync.finished == ["a"]


async def test_requeue_after_forgets_and_adds_after_the_delay() -> None:
    clock = FakeClock()
    sync = Recorder(
        lambda key, n: RuntimeError("x") if n == 1 else Result(requeue_after=30) if n == 2 else None
    )
    controller = make(sync, clock)
    async with running(controller):
        controller.enqueue("a")
        await settle()
        clock.step(0.005)
        await settle()
        assert len(sync.calls) == 2
        assert controller.queue.num_requeues("a") == 0, "requeue_after must reset the backoff"
        clock.step(29.9)
        await settle()
        assert len(sync.calls) == 2
        clock.step(0.2)
        await settle()
        assert len(sync.calls) == 3


async def test_requeue_goes_through_the_rate_limiter() -> None:
    clock = FakeClock()
    registry = CollectorRegistry()
    sync = Recorder(lambda key, n: Result(requeue=True) if n < 3 else None)
    controller = make(sync, clock, registry)
    async with running(controller):
        controller.enqueue("a")
        await settle()
        assert controller.queue.num_requeues("a") == 1
        clock.step(0.005)
        await settle()
        assert controller.queue.num_requeues("a") == 2
        clock.step(0.010)
        await settle()
        assert sync.calls == ["a"] * 3
        assert controller.queue.num_requeues("a") == 0

    def total(result: str) -> float | None:
        return registry.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": "test", "result": result}
        )

    assert total("requeue") == 2
    assert total("success") == 1
    assert total("error") == 0


async def test_timeout_counts_as_an_error() -> None:
    clock = FakeClock()
    registry = CollectorRegistry()
    cancelled: list[str] = []

    async def hang(key: str, n: int) -> None:
        if n == 1:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(key)
                raise

    sync = Recorder(hang)
    controller = make(sync, clock, registry, sync_timeout=5.0)
    with capture_logs() as logs:
        async with running(controller):
            controller.enqueue("a")
            await settle()
            clock.step(4.9)
            await settle()
            assert cancelled == []
            clock.step(0.1)
            await settle()
            assert cancelled == ["a"]
            assert controller.queue.num_requeues("a") == 1
            clock.step(0.005)
            await settle()
            assert sync.finished == ["a"]
    assert (
        registry.get_sample_value(
            "controller_runtime_reconcile_errors_total", {"controller": "test"}
        )
        == 1
    )
    assert any("timed out" in e["event"] and e["key"] == "a" for e in logs)


async def test_exception_in_one_item_does_not_stop_the_worker() -> None:
    clock = FakeClock()
    sync = Recorder(lambda key, n: ValueError("bad") if key == "bad" else None)
    controller = make(sync, clock, workers=1)
    async with running(controller) as task:
        for key in ("bad", "good-1", "bad-too", "good-2"):
            controller.enqueue(key)
        controller.enqueue("bad")
        await settle()
        assert sync.calls == ["bad", "good-1", "bad-too", "good-2"]
        assert sync.finished == ["good-1", "bad-too", "good-2"]
        assert not task.done()
        controller.enqueue("good-3")
        await settle()
        assert sync.finished[-1] == "good-3"


async def test_workers_run_concurrently_but_never_the_same_key() -> None:
    clock = FakeClock()
    gates: dict[str, asyncio.Event] = {}

    async def wait_for_gate(key: str, n: int) -> None:
        gate = gates.setdefault(f"{key}#{n}", asyncio.Event())
        await gate.wait()

    sync = Recorder(wait_for_gate)
    controller = make(sync, clock, workers=3)
    async with running(controller):
        for key in ("a", "b", "c", "d"):
            controller.enqueue(key)
        await settle()
        assert sorted(sync.active) == ["a", "b", "c"], "three workers, three keys in flight"
        controller.enqueue("a")  # a is in flight: queued again only once it is done
        await settle()
        assert sync.calls.count("a") == 1
        gates["a#1"].set()
        await settle()
        # the freed worker takes d (queued first), then a's second sync waits for a worker
        assert sorted(sync.active) == ["b", "c", "d"]
        gates["b#1"].set()
        await settle()
        assert sorted(sync.active) == ["a", "c", "d"]
        for gate in ("c#1", "d#1", "a#2"):
            gates[gate].set()
        await settle()
        assert sync.active == set()
    assert sync.max_active == 3
    assert sync.overlaps == []
    assert sorted(sync.finished) == ["a", "a", "b", "c", "d"]


async def test_cancel_drains_in_flight_syncs_and_takes_no_new_work() -> None:
    clock = FakeClock()
    release = asyncio.Event()

    async def slow(key: str, n: int) -> None:
        if key == "slow":
            await release.wait()

    sync = Recorder(slow)
    controller = make(sync, clock, workers=1)
    task = asyncio.create_task(controller.run())
    await settle()
    controller.enqueue("slow")
    controller.enqueue("queued")
    await settle()
    assert sync.active == {"slow"}
    task.cancel()
    await settle()
    assert not task.done(), "run() returned while a sync was in flight"
    assert controller.queue.shutting_down()
    controller.enqueue("late")  # ignored: shutting down
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sync.finished == ["slow"], "the in-flight sync must finish, nothing new may start"


async def test_second_cancel_while_draining_cancels_in_flight_syncs() -> None:
    clock = FakeClock()
    cancelled: list[str] = []

    async def stuck(key: str, n: int) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(key)
            raise

    controller = make(Recorder(stuck), clock, workers=2)
    task = asyncio.create_task(controller.run())
    await settle()
    controller.enqueue("a")
    controller.enqueue("b")
    await settle()
    task.cancel()
    await settle()
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(cancelled) == ["a", "b"]


def cancellable_stuck_sync(cancelled: list[str]) -> Recorder:
    """A sync that waits forever and records the keys whose sync was cancelled."""

    async def stuck(key: str, n: int) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(key)
            raise

    return Recorder(stuck)


async def test_cancel_with_a_failed_guard_cancels_syncs_in_flight_instead_of_draining() -> None:
    """Leadership lost: the guard (the elector's lease check) is false when run() is
    cancelled, so nothing that started under the lease may go on - no drain."""
    clock = FakeClock()
    leading = True
    cancelled: list[str] = []
    sync = cancellable_stuck_sync(cancelled)
    controller = make(sync, clock, workers=2)
    with guarded_by(lambda: leading):
        task = asyncio.create_task(controller.run())
    try:
        controller.enqueue("a")
        controller.enqueue("b")
        await settle()
        assert sync.active == {"a", "b"}
        leading = False
        with capture_logs() as logs:
            task.cancel()
            await settle()
            assert task.done(), "run() must not wait for syncs started under a lost lease"
        assert sorted(cancelled) == ["a", "b"]
        assert sync.finished == []
        assert any("cancelling syncs in flight" in entry["event"] for entry in logs), logs
    finally:
        if not task.done():
            task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_keys_the_guard_does_not_own_are_dropped_before_their_sync() -> None:
    """guarded_by(owns=...): a sharded replica syncs only its shards' keys; another
    replica's key is forgotten unsynced (not requeued: its owner has it)."""
    clock = FakeClock()
    sync = Recorder()
    controller = make(sync, clock)
    with guarded_by(lambda: True, owns=lambda key: key.startswith("mine/")):
        task = asyncio.create_task(controller.run())
    try:
        controller.queue.add_rate_limited("theirs/b")  # a failure history to forget
        clock.step(10.0)
        for key in ("mine/a", "theirs/b", "cluster-scoped", "mine/c"):
            controller.enqueue(key)
        await settle()
        assert sorted(sync.calls) == ["mine/a", "mine/c"]
        assert len(controller.queue) == 0, "a dropped key must not come back"
        assert controller.queue.num_requeues("theirs/b") == 0
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_cancel_with_a_passing_guard_still_drains() -> None:
    """SIGTERM while leading: the guard passes, syncs in flight finish."""
    clock = FakeClock()
    release = asyncio.Event()

    async def slow(key: str, n: int) -> None:
        await release.wait()

    sync = Recorder(slow)
    controller = make(sync, clock)
    with guarded_by(lambda: True):
        task = asyncio.create_task(controller.run())
    controller.enqueue("a")
    await settle()
    task.cancel()
    await settle()
    clock.step(1.0)
    await settle()
    assert not task.done(), "a passing guard must not cut the drain short"
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sync.finished == ["a"]


async def test_guard_failing_while_draining_cancels_syncs_in_flight() -> None:
    """SIGTERM started a drain, then the lease was lost before the syncs finished: they are
    cancelled once the guard is next checked (every cache_sync_period)."""
    clock = FakeClock()
    leading = True
    cancelled: list[str] = []
    controller = make(cancellable_stuck_sync(cancelled), clock, cache_sync_period=0.5)
    with guarded_by(lambda: leading):
        task = asyncio.create_task(controller.run())
    try:
        controller.enqueue("a")
        await settle()
        task.cancel()
        await settle()
        clock.step(0.5)
        await settle()
        assert not task.done(), "draining while the guard passes"
        leading = False
        clock.step(0.5)
        await settle()
        assert task.done()
        assert cancelled == ["a"]
    finally:
        if not task.done():
            task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_waits_for_caches_before_the_first_sync() -> None:
    clock = FakeClock()
    synced = {"pods": False, "rs": False}
    sync = Recorder()
    controller = make(
        sync, clock, has_synced=[lambda: synced["pods"], lambda: synced["rs"]], workers=2
    )
    async with running(controller):
        controller.enqueue("a")
        await settle()
        synced["pods"] = True
        clock.step(0.1)
        await settle()
        assert sync.calls == []
        assert not controller.synced()
        synced["rs"] = True
        clock.step(0.1)
        await settle()
        assert controller.synced()
        assert sync.calls == ["a"]


async def test_cancel_while_waiting_for_caches_shuts_the_queue_down() -> None:
    clock = FakeClock()
    controller = make(Recorder(), clock, has_synced=[lambda: False])
    task = asyncio.create_task(controller.run())
    await settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert controller.queue.shutting_down()


async def test_guard_holds_syncs_back_until_it_passes() -> None:
    clock = FakeClock()
    leading = False
    sync = Recorder()
    controller = make(sync, clock, workers=2)
    with guarded_by(lambda: leading):
        task = asyncio.create_task(controller.run())
    try:
        controller.enqueue("a")
        await settle()
        clock.step(0.1)
        await settle()
        assert sync.calls == []
        leading = True
        clock.step(0.1)
        await settle()
        assert sync.calls == ["a"]
        leading = False
        controller.enqueue("b")
        clock.step(0.1)
        await settle()
        assert sync.calls == ["a"], "a failing guard must stop new syncs at once"
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_guard_that_fails_after_get_puts_the_key_back() -> None:
    clock = FakeClock()
    # passes before get(), fails right after it and once more before the next get()
    checks = iter([True, False, False])
    sync = Recorder()
    controller = make(sync, clock)
    controller.enqueue("a")
    with guarded_by(lambda: next(checks, True)):
        task = asyncio.create_task(controller.run())
    try:
        await settle()
        assert sync.calls == []
        assert controller.queue.len() == 1, "the key must be back in line"
        clock.step(0.1)
        await settle()
        assert sync.calls == ["a"]
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_metrics_count_outcomes_durations_and_workers() -> None:
    clock = FakeClock()
    registry = CollectorRegistry()

    async def behaviour(key: str, n: int) -> Any:
        clock.step(0.25)  # each sync "takes" 250 ms
        if key == "err":
            return RuntimeError("x")
        if key == "later":
            return Result(requeue_after=60)
        return None

    controller = make(
        Recorder(behaviour), clock, registry, name="widgets", workers=4, max_retries=0
    )
    labels = {"controller": "widgets"}

    def value(name: str, **extra: str) -> float | None:
        return registry.get_sample_value(name, {**labels, **extra})

    assert value("controller_runtime_reconcile_total", result="success") == 0
    assert value("controller_runtime_max_concurrent_reconciles") == 4
    async with running(controller):
        for key in ("ok-1", "ok-2", "err", "later"):
            controller.enqueue(key)
        await settle()
    assert value("controller_runtime_reconcile_total", result="success") == 2
    assert value("controller_runtime_reconcile_total", result="error") == 1
    assert value("controller_runtime_reconcile_total", result="requeue_after") == 1
    assert value("controller_runtime_reconcile_total", result="requeue") == 0
    assert value("controller_runtime_reconcile_errors_total") == 1
    assert value("controller_runtime_reconcile_time_seconds_count") == 4
    assert value("controller_runtime_reconcile_time_seconds_sum") == pytest.approx(1.0)
    assert value("controller_runtime_reconcile_time_seconds_bucket", le="0.25") == 4
    assert value("controller_runtime_reconcile_time_seconds_bucket", le="0.2") == 0
    assert value("controller_runtime_active_workers") == 0
    # the default queue is named after the controller and reports on the same registry
    assert registry.get_sample_value("workqueue_adds_total", {"name": "widgets"}) == 4
    assert registry.get_sample_value("workqueue_retries_total", {"name": "widgets"}) == 1


async def test_active_workers_gauge_counts_syncs_in_flight() -> None:
    clock = FakeClock()
    registry = CollectorRegistry()
    release = asyncio.Event()

    async def wait(key: str, n: int) -> None:
        await release.wait()

    controller = make(Recorder(wait), clock, registry, workers=3)
    async with running(controller):
        controller.enqueue("a")
        controller.enqueue("b")
        await settle()
        gauge = registry.get_sample_value(
            "controller_runtime_active_workers", {"controller": "test"}
        )
        assert gauge == 2
        release.set()
        await settle()
        assert (
            registry.get_sample_value("controller_runtime_active_workers", {"controller": "test"})
            == 0
        )


async def test_controllers_share_one_registry() -> None:
    registry = CollectorRegistry()
    clock = FakeClock()
    first = make(Recorder(), clock, registry, name="one")
    second = make(Recorder(), clock, registry, name="two")
    assert first.queue.name == "one"
    assert second.queue.name == "two"
    assert (
        registry.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": "two", "result": "error"}
        )
        == 0
    )


async def test_run_twice_is_refused() -> None:
    controller = make(Recorder(), FakeClock())
    async with running(controller):
        with pytest.raises(RuntimeError, match="already running"):
            await controller.run()


async def test_enqueue_object_and_enqueue_after() -> None:
    clock = FakeClock()
    sync = Recorder()
    controller = make(sync, clock)
    async with running(controller):
        controller.enqueue_object({"metadata": {"namespace": "ns", "name": "x"}})
        controller.enqueue_object(DeletedFinalStateUnknown("ns/gone", {}))
        controller.enqueue_after("ns/later", 2.0)
        await settle()
        assert sync.calls == ["ns/x", "ns/gone"]
        clock.step(2.0)
        await settle()
        assert sync.calls == ["ns/x", "ns/gone", "ns/later"]


@pytest.mark.parametrize(
    ("obj", "key"),
    [
        pytest.param({"metadata": {"namespace": "ns", "name": "a"}}, "ns/a", id="namespaced"),
        pytest.param({"metadata": {"name": "node-1"}}, "node-1", id="cluster-scoped"),
        pytest.param(DeletedFinalStateUnknown("ns/b", {}), "ns/b", id="tombstone"),
    ],
)
def test_key_func(obj: Any, key: str) -> None:
    assert key_func(obj) == key


def test_key_func_rejects_objects_without_a_name() -> None:
    with pytest.raises(ValueError, match=r"metadata\.name"):
        key_func({"metadata": {}})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param({"name": ""}, "needs a name", id="empty-name"),
        pytest.param({"workers": 0}, "workers", id="no-workers"),
        pytest.param({"sync_timeout": 0}, "sync_timeout", id="zero-timeout"),
        pytest.param({"max_retries": -1}, "max_retries", id="negative-retries"),
    ],
)
def test_options_are_validated(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ControllerOptions(**{"name": "x", "sync": Recorder(), **options})


async def test_a_stale_cache_requeues_rate_limited_without_an_error() -> None:
    """A sync that finds the cache behind the controller's own write (StaleCache, from a
    ConsistencyStore) is synced again through the rate limiter, as upstream's controllers
    do, but is neither counted nor logged as an error, and never dropped by max_retries."""
    clock = FakeClock()
    registry = CollectorRegistry()
    stale = StaleCache(PODS, "9", "10")
    sync = Recorder(lambda key, n: stale if n < 3 else None)
    controller = make(sync, clock, registry, max_retries=0)
    with capture_logs() as logs:
        async with running(controller):
            controller.enqueue("ns/a")
            await settle()
            assert controller.queue.num_requeues("ns/a") == 1
            clock.step(0.005)
            await settle()
            clock.step(0.010)
            await settle()
    assert sync.calls == ["ns/a"] * 3
    assert sync.finished == ["ns/a"]
    assert (
        registry.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": "test", "result": "requeue"}
        )
        == 2
    )
    assert (
        registry.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": "test", "result": "error"}
        )
        == 0
    )
    assert [e for e in logs if e["log_level"] in ("error", "warning")] == []


async def test_a_stale_caches_retry_is_dropped_when_the_key_is_synced_before_it() -> None:
    """The usual case: the watch event of the write the cache lacked queues the key before
    the rate-limited retry is due. The sync that event starts is the retry; the retry does
    not sync the key a third time, and the queue holds no timer for it."""
    clock = FakeClock()
    stale = StaleCache(PODS, "9", "10")
    sync = Recorder(lambda key, n: stale if n == 1 else None)
    controller = make(sync, clock)
    async with running(controller):
        controller.enqueue("ns/a")
        await settle()
        assert controller.queue.waiting_len() == 1  # the retry, 5 ms away
        controller.enqueue("ns/a")  # the event arrives first
        await settle()
        assert sync.calls == ["ns/a"] * 2
        assert controller.queue.waiting_len() == 0
        clock.step(1.0)
        await settle()
    assert sync.calls == ["ns/a"] * 2
    assert sync.finished == ["ns/a"]


async def test_an_errors_retry_is_kept_when_the_key_is_synced_before_it() -> None:
    """Only a stale cache's retry is dropped: a failed sync's retry stays due (as in
    client-go), even if an event synced the key in between."""
    clock = FakeClock()
    sync = Recorder(lambda key, n: RuntimeError("boom") if n == 1 else None)
    controller = make(sync, clock)
    async with running(controller):
        controller.enqueue("ns/a")
        await settle()
        controller.enqueue("ns/a")
        await settle()
        clock.step(0.005)
        await settle()
    assert sync.calls == ["ns/a"] * 3


async def test_superseded_tells_a_sync_its_key_was_queued_again() -> None:
    """superseded() is false outside a sync and at the start of one; once the key is added
    again while its sync runs it is true, and the runner syncs the key once more after."""
    clock = FakeClock()
    seen: list[tuple[int, bool, bool]] = []
    controller: Controller

    async def behaviour(key: str, n: int) -> None:
        before = superseded()
        if n == 1:
            controller.enqueue(key)  # an event arrives while the first sync runs
        seen.append((n, before, superseded()))

    controller = make(Recorder(behaviour), clock)
    assert superseded() is False
    async with running(controller):
        controller.enqueue("ns/a")
        await settle()
    assert seen == [(1, False, True), (2, False, False)]


async def test_superseded_writes_leave_out_never_two_in_a_row() -> None:
    """A write is left out only while the key is queued again, and never twice in a row:
    under a steady stream of events every other one is written, and the last sync (nothing
    queued after it) always writes."""
    clock = FakeClock()
    writes = SupersededWrites()
    written: list[int] = []
    controller: Controller

    async def behaviour(key: str, n: int) -> None:
        if n <= 4:
            controller.enqueue(key)  # an event arrives during each of the first four syncs
        if not writes.leave_out(key):
            written.append(n)

    controller = make(Recorder(behaviour), clock)
    assert writes.leave_out("ns/a") is False, "outside a sync nothing is left out"
    async with running(controller):
        controller.enqueue("ns/a")
        await settle(60)
    assert written == [2, 4, 5]
    assert "ns/a" not in writes
    writes.forget("ns/a")  # forgetting a key with nothing remembered is harmless
