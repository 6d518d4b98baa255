"""kubectl against kcontrol's controllers, as a user would drive a cluster run by KCM:
``rollout status``, ``rollout history`` (``--revision``), ``rollout undo`` (``--to-revision``),
``rollout pause`` / ``resume``, ``rollout restart``, ``scale`` and ``describe``.

Every command is the kubectl the suite built, run in a thread so the controllers in this
process keep running while it blocks.
"""

from __future__ import annotations

import asyncio

import pytest

from kcontrol.client import DEPLOYMENTS, ApiClient
from kcontrol.envtest.cluster import Cluster
from tests.controllers.cluster_helpers import (
    REVISION,
    WITHIN,
    active,
    deployment,
    get,
    pods_of,
    replicasets,
    wait_complete,
)
from tests.integration.helpers import poll


async def kubectl(cluster: Cluster, namespace: str, *args: str) -> str:
    return await asyncio.to_thread(cluster.kubectl, *args, "-n", namespace)


def image_of(d: dict[str, object]) -> str:
    return d["spec"]["template"]["spec"]["containers"][0]["image"]  # type: ignore[index,no-any-return]


@pytest.mark.usefixtures("controllers")
async def test_rollout_status_history_and_undo(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    await client.create(DEPLOYMENTS, deployment("app", 2), namespace=ns)
    out = await kubectl(cluster, ns, "rollout", "status", "deployment/app", "--timeout=90s")
    assert 'deployment "app" successfully rolled out' in out

    for image in ("registry.example/app:2", "registry.example/app:3"):
        await kubectl(cluster, ns, "set", "image", "deployment/app", f"app={image}")
        out = await kubectl(cluster, ns, "rollout", "status", "deployment/app", "--timeout=90s")
        assert "successfully rolled out" in out

    history = await kubectl(cluster, ns, "rollout", "history", "deployment/app")
    revisions = [line.split()[0] for line in history.splitlines()[2:] if line.strip()]
    assert revisions == ["1", "2", "3"], history
    second = await kubectl(cluster, ns, "rollout", "history", "deployment/app", "--revision=2")
    assert "registry.example/app:2" in second

    await kubectl(cluster, ns, "rollout", "undo", "deployment/app")  # back to revision 2
    d = await wait_complete(client, ns, "app")
    assert image_of(d) == "registry.example/app:2"
    assert d["metadata"]["annotations"][REVISION] == "4"  # revision 2 becomes 4, as upstream

    await kubectl(cluster, ns, "rollout", "undo", "deployment/app", "--to-revision=1")
    d = await wait_complete(client, ns, "app")
    assert image_of(d) == "registry.example/app:1"
    pods = active(await pods_of(client, ns, "app=app"))
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"registry.example/app:1"}
    # An undo re-uses the old ReplicaSet: no new one per undo.
    assert len(await replicasets(client, ns, "app")) == 3


@pytest.mark.usefixtures("controllers")
async def test_rollout_pause_resume_and_restart(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    await client.create(DEPLOYMENTS, deployment("pr", 2), namespace=ns)
    await wait_complete(client, ns, "pr")
    await kubectl(cluster, ns, "rollout", "pause", "deployment/pr")
    await kubectl(cluster, ns, "set", "image", "deployment/pr", "app=registry.example/app:2")

    async def paused_condition() -> bool:
        d = await get(client, ns, "pr")
        return d.get("status", {}).get("observedGeneration") == d["metadata"]["generation"]

    await poll(paused_condition, within=WITHIN, message="the paused Deployment was not observed")
    assert len(await replicasets(client, ns, "pr")) == 1, "a paused Deployment must not roll"

    await kubectl(cluster, ns, "rollout", "resume", "deployment/pr")
    out = await kubectl(cluster, ns, "rollout", "status", "deployment/pr", "--timeout=90s")
    assert "successfully rolled out" in out
    before = {p["metadata"]["uid"] for p in active(await pods_of(client, ns, "app=pr"))}

    await kubectl(cluster, ns, "rollout", "restart", "deployment/pr")
    out = await kubectl(cluster, ns, "rollout", "status", "deployment/pr", "--timeout=90s")
    assert "successfully rolled out" in out

    async def replaced() -> bool:
        pods = active(await pods_of(client, ns, "app=pr"))
        return len(pods) == 2 and not ({p["metadata"]["uid"] for p in pods} & before)

    await poll(replaced, within=WITHIN, message="rollout restart did not replace the pods")
    d = await get(client, ns, "pr")
    assert d["metadata"]["annotations"][REVISION] == "3"


@pytest.mark.usefixtures("controllers")
async def test_scale_and_describe_show_the_controllers_work(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    await client.create(DEPLOYMENTS, deployment("described", 1), namespace=ns)
    await wait_complete(client, ns, "described")
    await kubectl(cluster, ns, "scale", "deployment/described", "--replicas=3")
    d = await wait_complete(client, ns, "described")
    assert d["status"]["availableReplicas"] == 3

    (rs,) = await replicasets(client, ns, "described")
    out = await kubectl(cluster, ns, "describe", "deployment/described")
    assert "3 desired | 3 updated | 3 total | 3 available | 0 unavailable" in out
    assert f"NewReplicaSet:   {rs['metadata']['name']} (3/3 replicas created)" in out
    assert "ScalingReplicaSet" in out and "deployment-controller" in out
    rs_out = await kubectl(cluster, ns, "describe", f"replicaset/{rs['metadata']['name']}")
    assert "SuccessfulCreate" in rs_out and "replicaset-controller" in rs_out
