"""RolloutView on the fake client: it follows the informers, redraws on their events, and
wait_for sees what was drawn."""

from __future__ import annotations

import asyncio
import io
from typing import Any

from rich.console import Console

from kcontrol.client import DEPLOYMENTS, EVENTS, REPLICASETS
from kcontrol.rollout import RolloutView, Snapshot
from kcontrol.testing import FakeClient
from tests.rollout.rollout_fixtures import deployment, event, replicaset

WITHIN = 10.0


def console() -> Console:
    return Console(file=io.StringIO(), width=120, record=True)


def ready(count: int) -> Any:
    def check(snapshot: Snapshot) -> bool:
        return any(
            (rs.get("status") or {}).get("readyReplicas") == count
            and rs["metadata"]["name"] == "web-new"
            for rs in snapshot.replicasets
        )

    return check


async def seeded() -> tuple[FakeClient, dict[str, Any]]:
    client = FakeClient()
    wanted = deployment()
    created = await client.create(DEPLOYMENTS, wanted, namespace="demo")
    created = await client.update_status(
        DEPLOYMENTS, {**created, "status": wanted["status"]}, namespace="demo"
    )
    uid = created["metadata"]["uid"]
    new = replicaset("web-new", "registry.k8s.io/pause:3.10", revision=2, desired=4, ready=3)
    new["metadata"]["ownerReferences"][0]["uid"] = uid
    made = await client.create(REPLICASETS, new, namespace="demo")
    await client.update_status(REPLICASETS, {**made, "status": new["status"]}, namespace="demo")
    await client.create(
        EVENTS,
        event("ScalingReplicaSet", "Scaled up replica set web-new", uid=uid),
        namespace="demo",
    )
    return client, created


async def test_once_prints_one_frame_after_sync() -> None:
    client, _ = await seeded()
    out = console()
    await asyncio.wait_for(RolloutView(client, "demo", "web", console=out).run(once=True), WITHIN)
    text = out.export_text()
    assert "3/4" in text
    assert "Scaled up replica set web-new" in text
    assert "MinimumReplicasAvailable" in text


async def test_redraws_as_the_replicasets_change() -> None:
    client, _ = await seeded()
    out = console()
    view = RolloutView(client, "demo", "web", console=out, header=("hello",))
    async with asyncio.TaskGroup() as tasks:
        running = tasks.create_task(view.run())
        await asyncio.wait_for(view.wait_for(ready(3)), WITHIN)
        current = await client.get(REPLICASETS, "web-new", namespace="demo")
        current["status"]["readyReplicas"] = 4
        await client.update_status(REPLICASETS, current, namespace="demo")
        view.notice = "all four"
        drawn = await asyncio.wait_for(
            view.wait_for(lambda s: ready(4)(s) and s.notice == "all four"), WITHIN
        )
        running.cancel()
    assert drawn.header == ("hello",)
    assert "4/4" in out.export_text()


async def test_waits_for_a_missing_deployment_then_shows_it() -> None:
    client = FakeClient()
    out = console()
    view = RolloutView(client, "demo", "web", console=out)
    async with asyncio.TaskGroup() as tasks:
        running = tasks.create_task(view.run())
        await asyncio.wait_for(view.wait_for(lambda s: s.synced and s.deployment is None), WITHIN)
        await client.create(DEPLOYMENTS, deployment(), namespace="demo")
        await asyncio.wait_for(view.wait_for(lambda s: s.deployment is not None), WITHIN)
        running.cancel()
