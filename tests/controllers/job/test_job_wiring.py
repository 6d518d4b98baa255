"""The package's public surface, its registration with kcontrol-manager, and the runner it
builds (workers, queues, retry pacing)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from importlib.metadata import entry_points

from job_fixtures import INDEX, NS, WALL, Fixture, new_job, new_pod, ts
from prometheus_client import CollectorRegistry

import kcontrol_controllers.job as package
from kcontrol.client import JOBS, PODS
from kcontrol.clock import FakeClock
from kcontrol.informers import SharedInformerFactory
from kcontrol.manager import ControllerContext, ControllerRegistry, ManagerOptions
from kcontrol.testing import Action, FakeClient, FakeRecorder
from kcontrol_controllers.job import NAME, SPEC, JobController, new_controller

EXPECTED_SURFACE = {
    "CONCURRENT_SYNCS",
    "DEFAULT_WORKERS",
    "JOB_TRACKING_FINALIZER",
    "NAME",
    "ORPHAN_QUEUE_NAME",
    "QUEUE_NAME",
    "SPEC",
    "JobController",
    "new_controller",
}


def test_public_surface() -> None:
    assert set(package.__all__) == EXPECTED_SURFACE
    for name in package.__all__:
        assert hasattr(package, name)


def test_spec_and_entry_point() -> None:
    assert SPEC.name == NAME == "job-controller"
    assert not SPEC.enabled_by_default, "not beside KCM's own until deploy/ disables that one"
    assert [flag.name for flag in SPEC.flags] == ["concurrent-job-syncs"]
    assert SPEC.flags[0].default == 5
    (entry,) = [e for e in entry_points(group="kcontrol.controllers") if e.name == NAME]
    assert entry.value == "kcontrol_controllers.job:SPEC"
    assert entry.load() is SPEC
    assert NAME in ControllerRegistry.from_entry_points()


def _context(workers: int) -> tuple[ControllerContext, list[str]]:
    client = FakeClient()
    components: list[str] = []

    def recorder(component: str) -> FakeRecorder:
        components.append(component)
        return FakeRecorder()

    ctx = ControllerContext(
        client=client,
        informers=SharedInformerFactory(client),
        options=ManagerOptions(),
        registry=CollectorRegistry(),
        identity="test",
        recorder_factory=recorder,
        flags={"concurrent-job-syncs": workers},
    )
    return ctx, components


def test_new_controller_wires_workers_queues_and_event_source() -> None:
    ctx, components = _context(7)
    controller = new_controller(ctx)
    assert isinstance(controller, JobController)
    assert components == ["job-controller"]
    for queue in ("job", "job_orphan_pod"):
        workers = ctx.registry.get_sample_value(
            "controller_runtime_max_concurrent_reconciles", {"controller": queue}
        )
        assert workers == 7
    assert sorted(i.resource.plural for i in ctx.informers.informers()) == ["jobs", "pods"]
    assert controller.controller.queue.name == "job"
    assert controller.orphan_controller.queue.name == "job_orphan_pod"


async def test_failed_syncs_are_retried_after_1s_doubling_to_a_minute_forever() -> None:
    f = Fixture()
    f.add_job(new_job())

    def fail(action: Action) -> None:
        raise RuntimeError("boom")

    f.client.prepend_reactor("create", "pods", fail)
    queue = f.jc.controller.queue
    limiter = queue.rate_limiter
    for failures in range(1, 20):
        await f.jc.controller._process("default/foobar")
        assert queue.num_requeues("default/foobar") == failures, "never dropped"
    assert limiter.when("probe") == 1.0
    assert limiter.when("probe") == 2.0
    for _ in range(10):
        delay = limiter.when("probe")
    assert delay == 60.0


async def run_until(clock: FakeClock, check: Callable[[], Awaitable[bool]]) -> None:
    """Let the event loop run (informers, handlers, workers), a quarter second of fake time
    every 20 rounds (the controller batches pod events for a second), until ``check()``."""
    for round_ in range(20000):
        if await check():
            return
        await asyncio.sleep(0)
        if round_ % 20 == 19:
            clock.step(0.25)
    raise AssertionError("condition not reached")


async def test_runs_end_to_end_counting_every_pod_once() -> None:
    """Through real informers on the fake client, with the test playing kubelet (the first
    pod fails, every other succeeds): an Indexed Job of 4 completions, 2 at a time, ends
    Complete with exact counts, every pod released, one success per index, and the orphan
    pod left with a finalizer released by the orphan worker."""
    clock = FakeClock(wall_start=WALL)
    client = FakeClient(clock=clock)
    informers = SharedInformerFactory(client, clock=clock)
    jc = JobController(
        client=client,
        informers=informers,
        recorder=FakeRecorder(),
        workers=2,
        clock=clock,
        registry=CollectorRegistry(),
    )
    job = new_job(2, 4, 6, "Indexed")
    job["metadata"].pop("uid")
    orphan = new_pod("orphan", job, owned=False, labels={"other": "x"})
    failures = 0

    async def kubelet() -> bool:
        nonlocal failures
        for pod in client.tracker.list(PODS, namespace=NS)["items"]:
            if pod["metadata"]["name"] == "orphan" or pod.get("status", {}).get("phase"):
                continue
            phase = "Failed" if failures == 0 else "Succeeded"
            failures += phase == "Failed"
            pod["status"] = {
                "phase": phase,
                "containerStatuses": [
                    {"name": "c", "state": {"terminated": {"finishedAt": ts(WALL)}}}
                ],
            }
            await client.update_status(PODS, pod)
        got = client.tracker.get(JOBS, "foobar", namespace=NS)
        return any(
            c["type"] == "Complete" for c in (got.get("status") or {}).get("conditions") or []
        )

    async with asyncio.TaskGroup() as tasks:
        running = tasks.create_task(informers.run())
        await informers.wait_for_cache_sync()
        controller = tasks.create_task(jc.run())
        try:
            await client.create(PODS, orphan, namespace=NS)
            await client.create(JOBS, job, namespace=NS)
            await run_until(clock, kubelet)
            status = client.tracker.get(JOBS, "foobar", namespace=NS)["status"]
            assert (status["succeeded"], status["failed"]) == (4, 1)
            assert status["completedIndexes"] == "0-3"
            assert not any(status["uncountedTerminatedPods"].values())
            pods = client.tracker.list(PODS, namespace=NS)["items"]
            assert len(pods) == 6, "4 successes, 1 failure, the orphan"
            assert all(not p["metadata"].get("finalizers") for p in pods)
            succeeded = [
                p["metadata"]["annotations"][INDEX]
                for p in pods
                if (p.get("status") or {}).get("phase") == "Succeeded"
            ]
            assert sorted(succeeded) == ["0", "1", "2", "3"]
        finally:
            controller.cancel()
            running.cancel()
