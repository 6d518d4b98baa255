"""The controller running for real over informers on the fake server: events flow from the
watches through the handlers and the queue to syncs, and a rollout proceeds as the
ReplicaSets' statuses change (the test plays the ReplicaSet controller)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from deployment_fixtures import WALL_START, new_deployment
from prometheus_client import CollectorRegistry

from kcontrol.client import DEPLOYMENTS, REPLICASETS, Object
from kcontrol.clock import FakeClock
from kcontrol.informers import SharedInformerFactory
from kcontrol.testing import FakeClient, FakeRecorder
from kcontrol_controllers.deployment import DeploymentController


async def eventually(check: Callable[[], bool], what: str, rounds: int = 2000) -> None:
    """Let the event loop run until ``check()`` holds (no timers involved: only yields)."""
    for _ in range(rounds):
        if check():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"never happened: {what}")


@contextlib.asynccontextmanager
async def running() -> AsyncIterator[tuple[FakeClient, FakeRecorder]]:
    clock = FakeClock(wall_start=WALL_START)
    client = FakeClient(clock=clock)
    informers = SharedInformerFactory(client, clock=clock)
    recorder = FakeRecorder()
    dc = DeploymentController(
        client=client,
        informers=informers,
        recorder=recorder,
        clock=clock,
        registry=CollectorRegistry(),
    )
    async with asyncio.TaskGroup() as tasks:
        factory_task = tasks.create_task(informers.run())
        await informers.wait_for_cache_sync()
        controller_task = tasks.create_task(dc.run())
        await eventually(dc.controller.synced, "the controller started")
        try:
            yield client, recorder
        finally:
            controller_task.cancel()
            factory_task.cancel()


def replica_sets(client: FakeClient) -> list[Object]:
    items: list[Object] = client.tracker.list(REPLICASETS)["items"]
    return sorted(
        items, key=lambda rs: rs["metadata"]["creationTimestamp"] + rs["metadata"]["name"]
    )


def deployment_status(client: FakeClient, name: str) -> dict[str, Any]:
    status: dict[str, Any] = (
        client.tracker.get(DEPLOYMENTS, name, namespace="default").get("status") or {}
    )
    return status


def report_ready(client: FakeClient, rs: Object) -> None:
    """What the ReplicaSet controller would write once all its pods are available."""
    replicas = rs["spec"]["replicas"]
    fresh = client.tracker.get(REPLICASETS, rs["metadata"]["name"], namespace="default")
    fresh["status"] = {
        "replicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
        "fullyLabeledReplicas": replicas,
        "terminatingReplicas": 0,
        "observedGeneration": fresh["metadata"]["generation"],
    }
    client.tracker.update(REPLICASETS, fresh, namespace="default", subresource="status")


async def test_rollout_runs_through_informers_and_queue() -> None:
    async with running() as (client, recorder):
        d = new_deployment("web", 2, max_surge="25%", max_unavailable="25%")
        d["spec"]["progressDeadlineSeconds"] = 600
        await client.create(DEPLOYMENTS, d, namespace="default")

        await eventually(lambda: len(replica_sets(client)) == 1, "the first ReplicaSet")
        (first,) = replica_sets(client)
        assert first["spec"]["replicas"] == 2
        assert first["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"

        report_ready(client, first)

        def complete() -> bool:
            status = deployment_status(client, "web")
            conditions = {c["type"]: c.get("reason") for c in status.get("conditions") or ()}
            return (
                status.get("availableReplicas") == 2
                and conditions.get("Progressing") == "NewReplicaSetAvailable"
                and conditions.get("Available") == "MinimumReplicasAvailable"
            )

        await eventually(complete, "the first rollout completes")

        # a new template: one surge pod of revision 2 first
        live = client.tracker.get(DEPLOYMENTS, "web", namespace="default")
        live["spec"]["template"]["spec"]["containers"][0]["image"] = "foo/bar:2"
        await client.update(DEPLOYMENTS, live, namespace="default")

        await eventually(lambda: len(replica_sets(client)) == 2, "the second ReplicaSet")
        second = replica_sets(client)[1]
        assert second["spec"]["replicas"] == 1  # 2 + surge 1 - 2 existing
        assert second["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"

        # once it is available, the old one goes down by one
        report_ready(client, second)
        await eventually(
            lambda: replica_sets(client)[0]["spec"]["replicas"] == 1, "the old ReplicaSet shrinks"
        )
        assert any("Scaled down replica set" in e for e in recorder.events)
