"""Faults 8 and 9 of reliability.md and bad input, on the test cluster with both controllers:

- a ResourceQuota denying pod creation: ReplicaFailure on the ReplicaSet and the Deployment,
  then ProgressDeadlineExceeded; lifting the quota converges without restarting anything;
- another writer patching the same Deployment and ReplicaSets every 50 ms during a rollout:
  the rollout completes and the other writer's fields survive (no lossy full-object writes);
- unparsable annotations and a ReplicaSet owned by a kind the controller does not know: the
  controller carries on with the other objects.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from kcontrol.client import DEPLOYMENTS, REPLICASETS, ApiClient, Object, Resource
from kcontrol.envtest.cluster import Cluster
from kcontrol.errors import ApiError
from kcontrol_controllers.deployment import SPEC as DEPLOYMENT_SPEC
from kcontrol_controllers.replicaset import SPEC as REPLICASET_SPEC
from tests.controllers.cluster_helpers import (
    REVISION,
    WITHIN,
    active,
    condition,
    deployment,
    get,
    patch,
    pods_of,
    replicasets,
    running_manager,
    set_image,
    wait_complete,
)
from tests.integration.helpers import poll

RESOURCEQUOTAS = Resource("", "v1", "resourcequotas", "ResourceQuota")


async def test_quota_denying_pods_reports_failure_then_converges_when_lifted(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "pods"},
        "spec": {"hard": {"pods": "1"}},
    }
    await client.create(RESOURCEQUOTAS, quota, namespace=ns)

    async def counted() -> bool:
        got = await client.get(RESOURCEQUOTAS, "pods", namespace=ns)
        return "hard" in (got.get("status") or {})

    await poll(counted, within=WITHIN, message="KCM never computed the quota's status")

    async with running_manager(cluster, DEPLOYMENT_SPEC, REPLICASET_SPEC) as manager:
        await client.create(
            DEPLOYMENTS, deployment("quota", 3, progressDeadlineSeconds=5), namespace=ns
        )

        async def deadline_exceeded() -> bool:
            d = await get(client, ns, "quota")
            progressing = condition(d, "Progressing")
            failure = condition(d, "ReplicaFailure")
            return (
                progressing is not None
                and progressing["reason"] == "ProgressDeadlineExceeded"
                and failure is not None
            )

        await poll(deadline_exceeded, within=WITHIN, message="no failure reported")
        d = await get(client, ns, "quota")
        failure = condition(d, "ReplicaFailure")
        assert failure is not None and failure["status"] == "True"
        assert failure["reason"] == "FailedCreate" and "exceeded quota" in failure["message"]
        (rs,) = await replicasets(client, ns, "quota")
        rs_failure = condition(rs, "ReplicaFailure")
        assert rs_failure is not None and rs_failure["reason"] == "FailedCreate"
        assert len(active(await pods_of(client, ns, "app=quota"))) == 1

        await client.delete(RESOURCEQUOTAS, "pods", namespace=ns)
        d = await wait_complete(client, ns, "quota")
        assert condition(d, "ReplicaFailure") is None
        progressing = condition(d, "Progressing")
        assert progressing is not None and progressing["reason"] == "NewReplicaSetAvailable"
        assert manager.leading(), "the same manager converged: nothing was restarted"


@contextlib.asynccontextmanager
async def other_writer(
    client: ApiClient, namespace: str, name: str, counter: list[int]
) -> AsyncIterator[None]:
    """Patch the Deployment and its ReplicaSets every 50 ms with fields of their own."""

    async def write() -> None:
        while True:
            n = counter[0] = counter[0] + 1
            body = {"metadata": {"labels": {"other-writer": str(n % 2)}}}
            with contextlib.suppress(ApiError):
                await client.patch(
                    DEPLOYMENTS,
                    name,
                    {"metadata": {"annotations": {"other.example/n": str(n)}}},
                    namespace=namespace,
                )
                for rs in await replicasets(client, namespace, name):
                    await client.patch(
                        REPLICASETS,
                        rs["metadata"]["name"],
                        {
                            **body,
                            "metadata": {
                                **body["metadata"],
                                "annotations": {"other.example/n": str(n)},
                            },
                        },
                        namespace=namespace,
                    )
            await asyncio.sleep(0.05)

    task = asyncio.create_task(write())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@pytest.mark.usefixtures("controllers")
async def test_another_writer_patching_every_50ms_keeps_its_fields(
    cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    await client.create(DEPLOYMENTS, deployment("contended", 4), namespace=ns)
    await wait_complete(client, ns, "contended")
    writes = [0]
    async with other_writer(client, ns, "contended", writes):
        await patch(client, ns, "contended", set_image("registry.example/app:2"))
        await wait_complete(client, ns, "contended")
        await patch(client, ns, "contended", {"spec": {"replicas": 6}})
        await wait_complete(client, ns, "contended")
    assert writes[0] > 10, "the other writer barely ran"
    last = str(writes[0])

    d = await get(client, ns, "contended")
    assert d["metadata"]["annotations"]["other.example/n"] in (last, str(writes[0] - 1))
    assert d["metadata"]["annotations"][REVISION] == "2"
    for rs in await replicasets(client, ns, "contended"):
        annotations = rs["metadata"]["annotations"]
        assert "other.example/n" in annotations, f"{rs['metadata']['name']} lost a field"
        assert "other-writer" in rs["metadata"]["labels"]
        if rs["spec"]["replicas"]:  # upstream leaves scaled-down old ReplicaSets as they are
            assert annotations.get("deployment.kubernetes.io/desired-replicas") == "6"


@pytest.mark.usefixtures("controllers")
async def test_bad_annotations_and_unknown_owners_do_not_stop_the_others(
    cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    await client.create(DEPLOYMENTS, deployment("garbled", 2), namespace=ns)
    await wait_complete(client, ns, "garbled")
    (rs,) = await replicasets(client, ns, "garbled")
    await client.patch(
        REPLICASETS,
        rs["metadata"]["name"],
        {
            "metadata": {
                "annotations": {
                    REVISION: "not-a-number",
                    "deployment.kubernetes.io/desired-replicas": "-3",
                }
            }
        },
        namespace=ns,
    )
    # A ReplicaSet whose controller is some other kind, matching nobody's selector.
    foreign: Object = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "foreign",
            "labels": {"app": "foreign"},
            "ownerReferences": [
                {
                    "apiVersion": "example.com/v1",
                    "kind": "Widget",
                    "name": "w",
                    "uid": "00000000-0000-0000-0000-000000000001",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "foreign"}},
            "template": {
                "metadata": {"labels": {"app": "foreign"}},
                "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]},
            },
        },
    }
    with contextlib.suppress(ApiError):  # the GC may remove it soon: it has no real owner
        await client.create(REPLICASETS, foreign, namespace=ns)

    # The garbled Deployment still rolls out and scales; another one works alongside.
    await patch(client, ns, "garbled", set_image("registry.example/app:2"))
    await client.create(DEPLOYMENTS, deployment("neighbour", 2), namespace=ns)
    await wait_complete(client, ns, "neighbour")
    d = await wait_complete(client, ns, "garbled")
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/app:2"
    await patch(client, ns, "garbled", {"spec": {"replicas": 3}})
    await wait_complete(client, ns, "garbled")
