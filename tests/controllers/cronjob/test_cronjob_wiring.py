"""The controller as it runs: real informers on the fake client, the runner and the delaying
queue on a fake clock. A CronJob is synced again exactly at its next activation and not in
between (no polling); an invalid one is reported once and never again until it changes (no
hot loop). Plus the factory's wiring and the package's surface."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry

import kcontrol_controllers.cronjob as cronjob_package
from kcontrol.client import CRONJOBS, JOBS, Object
from kcontrol.clock import FakeClock
from kcontrol.informers import SharedInformerFactory
from kcontrol.testing import FakeClient, FakeRecorder
from kcontrol_controllers.cronjob import (
    CONCURRENT_SYNCS,
    DEFAULT_WORKERS,
    NAME,
    QUEUE_NAME,
    SPEC,
    CronJobController,
)

NS = "default"
START = datetime(2026, 1, 1, 12, 0, 30, tzinfo=UTC)


async def settle_until(check: Callable[[], bool], rounds: int = 3000) -> None:
    for _ in range(rounds):
        if check():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")


async def settle(rounds: int = 300) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


def new_cron_job(name: str, schedule: str, **spec: Any) -> Object:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "busybox"}],
                        }
                    }
                }
            },
            **spec,
        },
    }


class Running:
    def __init__(self) -> None:
        self.clock = FakeClock(wall_start=START)
        self.client = FakeClient(clock=self.clock)
        self.informers = SharedInformerFactory(self.client, clock=self.clock)
        self.recorder = FakeRecorder()
        self.registry = CollectorRegistry()
        self.controller = CronJobController(
            client=self.client,
            informers=self.informers,
            recorder=self.recorder,
            workers=2,
            clock=self.clock,
            registry=self.registry,
        )

    def syncs(self) -> float:
        total = 0.0
        for result in ("success", "error", "requeue", "requeue_after"):
            value = self.registry.get_sample_value(
                "controller_runtime_reconcile_total",
                {"controller": QUEUE_NAME, "result": result},
            )
            total += value or 0.0
        return total

    def jobs(self) -> list[Object]:
        items: list[Object] = self.client.tracker.list(JOBS, namespace=NS)["items"]
        return sorted(items, key=lambda j: j["metadata"]["name"])

    def cron_job(self, name: str) -> Object:
        return self.client.tracker.get(CRONJOBS, name, namespace=NS)

    async def quiet(self) -> float:
        """Let every event-driven sync finish; the number of syncs then."""
        previous = -1.0
        while previous != self.syncs():
            previous = self.syncs()
            await settle()
        return previous


@asynccontextmanager
async def running() -> AsyncIterator[Running]:
    state = Running()
    async with asyncio.TaskGroup() as tasks:
        informers = tasks.create_task(state.informers.run())
        await state.informers.wait_for_cache_sync()
        controller = tasks.create_task(state.controller.run())
        try:
            yield state
        finally:
            controller.cancel()
            informers.cancel()


async def test_each_activation_is_synced_exactly_when_due_and_not_in_between() -> None:
    async with running() as state:
        await state.client.create(CRONJOBS, new_cron_job("every-minute", "*/1 * * * *"))
        await settle_until(lambda: state.syncs() >= 1)
        syncs = await state.quiet()
        assert state.jobs() == []

        state.clock.step(30.0)  # 12:01:00.0: the activation, not yet the requeue (+100 ms)
        await settle()
        assert state.jobs() == []
        assert state.syncs() == syncs, "no sync before the requeue"

        state.clock.step(0.1)  # 12:01:00.1
        await settle_until(lambda: len(state.jobs()) == 1)
        (first,) = state.jobs()
        minutes = int(datetime(2026, 1, 1, 12, 1, tzinfo=UTC).timestamp()) // 60
        assert first["metadata"]["name"] == f"every-minute-{minutes}"
        await settle_until(
            lambda: bool(state.cron_job("every-minute").get("status", {}).get("active"))
        )
        syncs = await state.quiet()

        state.clock.step(59.5)  # 12:01:59.6: nothing polls in between
        await settle()
        assert state.syncs() == syncs
        assert len(state.jobs()) == 1

        # the Job completes: its event syncs the CronJob at once
        done = state.client.tracker.get(JOBS, first["metadata"]["name"], namespace=NS)
        done["status"] = {
            "completionTime": "2026-01-01T12:01:30Z",
            "conditions": [{"type": "Complete", "status": "True"}],
        }
        state.client.tracker.update(JOBS, done, subresource="status")
        await settle_until(
            lambda: (
                state.cron_job("every-minute").get("status", {}).get("lastSuccessfulTime")
                == "2026-01-01T12:01:30Z"
            )
        )
        assert state.cron_job("every-minute").get("status", {})["active"] == []

        assert len(state.jobs()) == 1
        state.clock.step(0.5)  # 12:02:00.1
        await settle_until(lambda: len(state.jobs()) == 2)
        await settle_until(
            lambda: (
                state.cron_job("every-minute").get("status", {}).get("lastScheduleTime")
                == "2026-01-01T12:02:00Z"
            )
        )


async def test_invalid_cron_jobs_are_reported_once_and_never_loop() -> None:
    async with running() as state:
        await state.client.create(CRONJOBS, new_cron_job("bad-schedule", "obvious error"))
        await state.client.create(
            CRONJOBS, new_cron_job("bad-zone", "*/1 * * * *", timeZone="Mars/Olympus_Mons")
        )
        await state.client.create(CRONJOBS, new_cron_job("suspended", "*/1 * * * *", suspend=True))
        await settle_until(lambda: state.syncs() >= 3)
        syncs = await state.quiet()
        assert syncs == 3
        events = list(state.recorder.events)
        assert sorted(e.split()[1] for e in events) == ["UnknownTimeZone", "UnparseableSchedule"]

        for _ in range(10):
            state.clock.step(600)
            await settle()
        assert state.syncs() == syncs, "nothing requeued: no hot loop, no polling"
        assert state.recorder.events == events
        assert state.jobs() == []
        assert state.controller.controller.queue.waiting_len() == 0

        # fixed by the user: scheduled again
        fixed = state.cron_job("bad-schedule")
        fixed["spec"]["schedule"] = "*/1 * * * *"
        state.client.tracker.update(CRONJOBS, fixed)
        await settle_until(lambda: state.controller.controller.queue.waiting_len() == 1)
        state.clock.step(60)
        await settle_until(lambda: len(state.jobs()) == 1)


def test_factory_builds_from_the_manager_context() -> None:
    assert SPEC.name == NAME == "cronjob-controller"
    assert not SPEC.enabled_by_default
    assert SPEC.flags == (CONCURRENT_SYNCS,)
    assert CONCURRENT_SYNCS.name == "concurrent-cron-job-syncs"
    assert CONCURRENT_SYNCS.default == DEFAULT_WORKERS == 5
    assert QUEUE_NAME == "cronjob"


def test_the_package_surface() -> None:
    assert cronjob_package.__all__ == [
        "CONCURRENT_SYNCS",
        "DEFAULT_WORKERS",
        "NAME",
        "QUEUE_NAME",
        "SCHEDULED_TIMESTAMP_ANNOTATION",
        "SPEC",
        "CronJobController",
        "new_controller",
    ]
