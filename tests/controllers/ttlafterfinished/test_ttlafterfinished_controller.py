"""The controller on the fake client: the paths of upstream's processJob/processTTL (named
cases), the event handlers, the package surface and registration, and a run through real
informers and the delaying queue on a fake clock."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from ttlafterfinished_fixtures import KEY, NOW, NS, UID, Fixture, ago, new_job, ts

import kcontrol_controllers.ttlafterfinished
from kcontrol.client import JOBS, Object
from kcontrol.clock import FakeClock
from kcontrol.controller import Result
from kcontrol.errors import Conflict, InternalError, NotFound
from kcontrol.informers import SharedInformerFactory
from kcontrol.manager import ControllerContext, ControllerRegistry, ManagerOptions
from kcontrol.testing import Action, FakeClient, FakeRecorder
from kcontrol_controllers.ttlafterfinished import (
    CONCURRENT_SYNCS,
    DEFAULT_WORKERS,
    NAME,
    QUEUE_NAME,
    SPEC,
    TTLAfterFinishedController,
    new_controller,
)
from kcontrol_controllers.ttlafterfinished._ttl import NotCleanable

GET = f"get jobs {KEY}"
DELETE = f"delete jobs {KEY}"


def assert_deleted_with_preconditions(f: Fixture, uid: str = UID) -> None:
    (delete,) = f.deletes()
    assert delete.options == {
        "preconditions": {"uid": uid},
        "propagation_policy": "Foreground",
    }


# -- processJob / processTTL ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "job",
    [
        pytest.param(new_job(ttl=10), id="not finished"),
        pytest.param(new_job(ago(100)), id="no TTL"),
        pytest.param(new_job(failed_time=ago(100)), id="failed, no TTL"),
        pytest.param(
            new_job(ago(100), ttl=10, deletionTimestamp=ts(ago(1)), finalizers=["f"]),
            id="being deleted",
        ),
    ],
)
async def test_jobs_needing_no_cleanup_are_left_alone(job: Object) -> None:
    f = Fixture()
    f.add_job(job)
    assert await f.ttl.sync(KEY) is None
    assert f.verbs() == []


async def test_a_job_gone_from_the_cache_is_done() -> None:
    f = Fixture()
    f.server_job(new_job(ago(100), ttl=10))  # the watch has not delivered it yet
    assert await f.ttl.sync(KEY) is None
    assert f.verbs() == []


@pytest.mark.parametrize(
    ("job", "remaining"),
    [
        pytest.param(new_job(ago(10), ttl=15), 5.0, id="completed 10s ago, 15s TTL"),
        pytest.param(new_job(failed_time=ago(10), ttl=15), 5.0, id="failed 10s ago, 15s TTL"),
        pytest.param(new_job(NOW, ttl=10), 10.0, id="completed now, 10s TTL"),
        pytest.param(
            new_job(NOW + timedelta(seconds=30), ttl=5),
            35.0,
            id="completed in the future (clock skew): deferred",
        ),
    ],
)
async def test_not_expired_requeues_after_the_time_left(job: Object, remaining: float) -> None:
    f = Fixture()
    f.add_job(job)
    assert await f.ttl.sync(KEY) == Result(requeue_after=remaining)
    assert f.verbs() == [], "nothing is read from the API server before the TTL expires"


@pytest.mark.parametrize(
    ("job", "since_expiry"),
    [
        pytest.param(new_job(ago(20), ttl=15), 5.0, id="completed 20s ago, 15s TTL"),
        pytest.param(new_job(failed_time=ago(15), ttl=15), 0.0, id="failed 15s ago, 15s TTL"),
        pytest.param(new_job(NOW, ttl=0), 0.0, id="completed now, 0s TTL"),
    ],
)
async def test_expired_is_read_fresh_then_deleted_in_the_foreground(
    job: Object, since_expiry: float
) -> None:
    f = Fixture()
    f.add_job(job)
    assert await f.ttl.sync(KEY) is None
    assert f.verbs() == [GET, DELETE]
    assert_deleted_with_preconditions(f)
    with pytest.raises(NotFound):
        f.client.tracker.get(JOBS, "foobar", namespace=NS)
    assert f.deletion_durations() == (1.0, since_expiry)


async def test_ttl_lengthened_on_the_server_requeues_after_the_fresh_time_left() -> None:
    f = Fixture()
    f.server_job(new_job(ago(10), ttl=100))
    f.cache_job(new_job(ago(10), ttl=5))  # the cache has the TTL before the change
    assert await f.ttl.sync(KEY) == Result(requeue_after=90.0)
    assert f.verbs() == [GET]
    assert f.deletion_durations() == (0.0, 0.0)


@pytest.mark.parametrize(
    "fresh",
    [
        pytest.param(new_job(ago(10)), id="TTL removed"),
        pytest.param(new_job(ttl=5), id="no longer finished"),
        pytest.param(
            new_job(ago(10), ttl=5, deletionTimestamp=ts(ago(1)), finalizers=["f"]),
            id="being deleted",
        ),
        pytest.param(new_job(ttl=5, uid="other-uid"), id="recreated, not finished"),
    ],
)
async def test_no_longer_cleanable_on_the_server_is_left_alone(fresh: Object) -> None:
    f = Fixture()
    f.server_job(fresh)
    f.cache_job(new_job(ago(10), ttl=5))
    assert await f.ttl.sync(KEY) is None
    assert f.verbs() == [GET]


async def test_deleted_on_the_server_is_done() -> None:
    f = Fixture()
    f.cache_job(new_job(ago(10), ttl=5))
    assert await f.ttl.sync(KEY) is None
    assert f.verbs() == [GET]


async def test_recreated_and_expired_too_is_deleted_by_its_own_uid() -> None:
    """The latest Job may have another UID: the checks hold for it all the same."""
    f = Fixture()
    f.server_job(new_job(ago(60), ttl=5, uid="new-uid"))
    f.cache_job(new_job(ago(10), ttl=5))
    assert await f.ttl.sync(KEY) is None
    assert f.verbs() == [GET, DELETE]
    assert_deleted_with_preconditions(f, uid="new-uid")


async def test_recreated_between_the_read_and_the_delete_is_kept() -> None:
    """The UID precondition: the server refuses to delete a Job of the same name that
    replaced the one read (the fake tracker answers 409 as the API server does)."""
    f = Fixture()
    f.add_job(new_job(ago(10), ttl=5))

    def recreate(action: Action) -> None:
        # Someone deletes and recreates the Job after the fresh read; the tracker then
        # serves the delete (the reactor answers nothing).
        f.client.tracker.delete(JOBS, "foobar", namespace=NS)
        f.client.tracker.add(new_job(ttl=5, uid="new-uid"))

    f.client.prepend_reactor("delete", JOBS, recreate)
    with pytest.raises(Conflict):
        await f.ttl.sync(KEY)
    kept = f.client.tracker.get(JOBS, "foobar", namespace=NS)
    assert kept["metadata"]["uid"] == "new-uid"
    assert f.deletion_durations() == (0.0, 0.0)


@pytest.mark.parametrize(
    ("verb", "error"),
    [
        pytest.param("get", InternalError("boom"), id="the fresh read fails"),
        pytest.param("delete", InternalError("boom"), id="the delete fails"),
    ],
)
async def test_api_errors_propagate_for_a_rate_limited_retry(verb: str, error: Exception) -> None:
    f = Fixture()
    f.add_job(new_job(ago(10), ttl=5))

    def fail(action: Action) -> None:
        raise error

    f.client.prepend_reactor(verb, JOBS, fail)
    with pytest.raises(InternalError):
        await f.ttl.sync(KEY)
    assert f.client.tracker.get(JOBS, "foobar", namespace=NS)
    assert f.deletion_durations() == (0.0, 0.0)


async def test_a_finished_job_without_a_finish_time_is_an_error() -> None:
    f = Fixture()
    job = new_job(ttl=5)
    job["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    f.add_job(job)
    with pytest.raises(NotCleanable, match="unable to find the time"):
        await f.ttl.sync(KEY)
    assert f.verbs() == []


async def test_finished_in_the_future_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    f = Fixture()
    f.add_job(new_job(NOW + timedelta(seconds=30), ttl=5))
    with caplog.at_level(logging.WARNING, logger="kcontrol_controllers.ttlafterfinished"):
        await f.ttl.sync(KEY)
    assert "Found Job finished in the future" in caplog.text


async def test_finished_in_the_past_logs_no_warning(caplog: pytest.LogCaptureFixture) -> None:
    f = Fixture()
    f.add_job(new_job(ago(1), ttl=5))
    with caplog.at_level(logging.WARNING, logger="kcontrol_controllers.ttlafterfinished"):
        await f.ttl.sync(KEY)
    assert "in the future" not in caplog.text


# -- handlers ----------------------------------------------------------------------------------


HANDLER_CASES = [
    pytest.param(new_job(ago(1), ttl=10), [KEY], id="complete with TTL"),
    pytest.param(new_job(failed_time=ago(1), ttl=0), [KEY], id="failed with TTL 0"),
    pytest.param(new_job(ago(1)), [], id="complete without TTL"),
    pytest.param(new_job(ttl=10), [], id="running with TTL"),
    pytest.param(
        new_job(ago(1), ttl=10, deletionTimestamp=ts(NOW), finalizers=["f"]),
        [],
        id="being deleted",
    ),
]


async def queued(f: Fixture) -> list[str]:
    queue = f.ttl.controller.queue
    keys = []
    while len(queue):
        key = await queue.get()
        queue.done(key)
        keys.append(key)
    return keys


@pytest.mark.parametrize(("job", "keys"), HANDLER_CASES)
async def test_add_job(job: Object, keys: list[str]) -> None:
    f = Fixture()
    f.ttl.add_job(job)
    assert await queued(f) == keys


@pytest.mark.parametrize(("job", "keys"), HANDLER_CASES)
async def test_update_job_decides_on_the_new_object(job: Object, keys: list[str]) -> None:
    f = Fixture()
    f.ttl.update_job(new_job(ttl=10), job)
    assert await queued(f) == keys


# -- surface and registration ------------------------------------------------------------------


def test_public_surface() -> None:
    assert kcontrol_controllers.ttlafterfinished.__all__ == [
        "CONCURRENT_SYNCS",
        "DEFAULT_WORKERS",
        "NAME",
        "QUEUE_NAME",
        "SPEC",
        "TTLAfterFinishedController",
        "new_controller",
    ]
    assert (NAME, QUEUE_NAME, DEFAULT_WORKERS) == (
        "ttl-after-finished-controller",
        "ttl_jobs_to_delete",
        5,
    )


def test_registered_as_an_entry_point_with_kcms_flag() -> None:
    registry = ControllerRegistry.from_entry_points()
    assert NAME in registry
    assert SPEC.factory is new_controller and not SPEC.enabled_by_default
    assert SPEC.flags == (CONCURRENT_SYNCS,)
    assert (CONCURRENT_SYNCS.name, CONCURRENT_SYNCS.default, CONCURRENT_SYNCS.minimum) == (
        "concurrent-ttl-after-finished-syncs",
        5,
        1,
    )
    assert CONCURRENT_SYNCS in registry.flags()


def test_factory_wires_the_manager_context() -> None:
    client = FakeClient()
    informers = SharedInformerFactory(client)
    registry = CollectorRegistry()
    components: list[str] = []

    def recorder_factory(component: str) -> FakeRecorder:
        components.append(component)
        return FakeRecorder()

    ctx = ControllerContext(
        client=client,
        informers=informers,
        options=ManagerOptions(),
        registry=registry,
        identity="me",
        recorder_factory=recorder_factory,
        flags={"concurrent-ttl-after-finished-syncs": 7},
    )
    ttl = new_controller(ctx)
    assert isinstance(ttl, TTLAfterFinishedController)
    assert components == [], "upstream records no events"
    assert ttl.controller.queue.name == "ttl_jobs_to_delete"
    assert (
        registry.get_sample_value(
            "controller_runtime_max_concurrent_reconciles", {"controller": "ttl_jobs_to_delete"}
        )
        == 7
    )
    assert {i.resource for i in informers.informers()} == {JOBS}


# -- end to end on a fake clock -------------------------------------------------------------------


async def settle_until(check: Callable[[], bool], rounds: int = 2000) -> None:
    """Let the event loop run (informers, handlers, workers) until ``check()`` holds."""
    for _ in range(rounds):
        if check():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")


async def settle(rounds: int = 200) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


async def test_deletes_at_the_exact_expiry_through_the_delaying_queue() -> None:
    """A Job that finishes with a 10 s TTL is deleted when the fake clock reaches the expiry:
    not a moment before, and without a sync in between (no polling)."""
    clock = FakeClock(wall_start=NOW)
    client = FakeClient(clock=clock)
    informers = SharedInformerFactory(client, clock=clock)
    registry = CollectorRegistry()
    ttl = TTLAfterFinishedController(
        client=client, informers=informers, workers=2, clock=clock, registry=registry
    )

    def syncs(result: str) -> float:
        value = registry.get_sample_value(
            "controller_runtime_reconcile_total",
            {"controller": "ttl_jobs_to_delete", "result": result},
        )
        return value or 0.0

    def exists() -> bool:
        try:
            client.tracker.get(JOBS, "foobar", namespace=NS)
        except NotFound:
            return False
        return True

    async with asyncio.TaskGroup() as tasks:
        running = tasks.create_task(informers.run())
        await informers.wait_for_cache_sync()
        controller = tasks.create_task(ttl.run())
        try:
            await client.create(JOBS, new_job(ttl=10), namespace=NS)
            await settle()
            assert syncs("success") == syncs("requeue_after") == 0, "a running Job is not queued"
            finished: Any = client.tracker.get(JOBS, "foobar", namespace=NS)
            finished["status"] = new_job(NOW, ttl=10)["status"]
            await client.update_status(JOBS, finished)
            await settle_until(lambda: syncs("requeue_after") == 1)
            await settle()
            assert exists()

            clock.step(9.9)
            await settle()
            assert exists(), "nothing happens before the expiry"
            assert (syncs("requeue_after"), syncs("success")) == (1, 0), "no polling"

            clock.step(0.1)
            await settle_until(lambda: not exists())
            await settle_until(lambda: syncs("success") == 1)
            assert syncs("requeue_after") == 1
            (delete,) = client.actions_for("delete", JOBS)
            assert delete.options["propagation_policy"] == "Foreground"
        finally:
            controller.cancel()
            running.cancel()
