"""ControllerRefManager against a real kube-apiserver: Deployments claiming ReplicaSets, as in
upstream's GeneralReplicaSetAdoption, ReplicaSetOrphaningAndAdoptionWhenLabelsChange and
OverlappingDeployments integration tests. No controller runs: only the claims patch."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kcontrol.client import DEPLOYMENTS, REPLICASETS, ApiClient, ClientConfig
from kcontrol.controller._refmanager import (
    CannotAdopt,
    ClaimError,
    ControllerRefManager,
    get_controller_of,
    recheck_owner,
)
from kcontrol.envtest import ControlPlane
from kcontrol.errors import Invalid
from kcontrol.labels import selector_from_label_selector

pytestmark = pytest.mark.integration

DEPLOYMENT_KIND = ("apps/v1", "Deployment")
TEMPLATE = {"spec": {"containers": [{"name": "app", "image": "registry.invalid/app:1"}]}}


@pytest.fixture
async def client(control_plane: ControlPlane) -> AsyncIterator[ApiClient]:
    config = ClientConfig.from_kube_configuration(await control_plane.kube_configuration())
    async with ApiClient(config, qps=0, timeout=30) as api:
        yield api


async def create_deployment(
    client: ApiClient, namespace: str, name: str, match: dict[str, str], **meta: Any
) -> dict[str, Any]:
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, **meta},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": match},
            "template": {"metadata": {"labels": match}, **TEMPLATE},
        },
    }
    return await client.create(DEPLOYMENTS, body, namespace=namespace)


async def create_replicaset(
    client: ApiClient, namespace: str, name: str, labels: dict[str, str]
) -> dict[str, Any]:
    body = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, **TEMPLATE},
        },
    }
    return await client.create(REPLICASETS, body, namespace=namespace)


def manager(client: ApiClient, deployment: dict[str, Any]) -> ControllerRefManager:
    return ControllerRefManager(
        client,
        deployment,
        selector_from_label_selector(deployment["spec"]["selector"]),
        DEPLOYMENT_KIND,
        REPLICASETS,
        can_adopt=recheck_owner(client, DEPLOYMENTS, deployment),
    )


async def replicasets(client: ApiClient, namespace: str) -> list[dict[str, Any]]:
    listed = await client.list(REPLICASETS, namespace=namespace)
    items: list[dict[str, Any]] = listed["items"]
    return items


async def test_adopts_an_orphan_and_releases_it_when_labels_stop_matching(
    client: ApiClient, namespace: str
) -> None:
    deployment = await create_deployment(client, namespace, "web", {"app": "web"})
    await create_replicaset(client, namespace, "web-rs", {"app": "web"})
    await create_replicaset(client, namespace, "db-rs", {"app": "db"})

    claimed = await manager(client, deployment).claim(await replicasets(client, namespace))

    assert [rs["metadata"]["name"] for rs in claimed] == ["web-rs"]
    live = await client.get(REPLICASETS, "web-rs", namespace=namespace)
    assert live["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "web",
            "uid": deployment["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert claimed[0]["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]
    db = await client.get(REPLICASETS, "db-rs", namespace=namespace)
    assert "ownerReferences" not in db["metadata"]

    # Already owned and matching: a second pass keeps it without writing.
    claimed = await manager(client, deployment).claim(await replicasets(client, namespace))
    assert [rs["metadata"]["name"] for rs in claimed] == ["web-rs"]
    again = await client.get(REPLICASETS, "web-rs", namespace=namespace)
    assert again["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]

    # The labels change: the deployment lets it go.
    await client.patch(
        REPLICASETS, "web-rs", {"metadata": {"labels": {"app": "other"}}}, namespace=namespace
    )
    claimed = await manager(client, deployment).claim(await replicasets(client, namespace))
    assert claimed == []
    released = await client.get(REPLICASETS, "web-rs", namespace=namespace)
    assert get_controller_of(released) is None
    assert not released["metadata"].get("ownerReferences")


async def test_overlapping_owners_the_first_to_adopt_keeps_it(
    client: ApiClient, namespace: str
) -> None:
    first = await create_deployment(client, namespace, "first", {"app": "web"})
    second = await create_deployment(client, namespace, "second", {"tier": "front"})
    await create_replicaset(client, namespace, "shared", {"app": "web", "tier": "front"})
    stale = await replicasets(client, namespace)  # both controllers see the orphan

    claimed_by_first = await manager(client, first).claim(stale)
    assert [rs["metadata"]["name"] for rs in claimed_by_first] == ["shared"]

    # With a stale cache the second tries to adopt too; the server refuses a second
    # controller reference, and the first keeps it.
    with pytest.raises(ClaimError) as failure:
        await manager(client, second).claim(stale)
    assert len(failure.value.errors) == 1
    assert isinstance(failure.value.errors[0], Invalid)

    # With a fresh view the second leaves it alone without trying.
    assert await manager(client, second).claim(await replicasets(client, namespace)) == []
    live = await client.get(REPLICASETS, "shared", namespace=namespace)
    owner = get_controller_of(live)
    assert owner is not None and owner["uid"] == first["metadata"]["uid"]
    assert len(live["metadata"]["ownerReferences"]) == 1


async def test_live_recheck_refuses_adoption_by_a_deployment_being_deleted(
    client: ApiClient, namespace: str
) -> None:
    cached = await create_deployment(
        client, namespace, "doomed", {"app": "web"}, finalizers=["example.com/hold"]
    )
    await create_replicaset(client, namespace, "orphan", {"app": "web"})
    await client.delete(DEPLOYMENTS, "doomed", namespace=namespace)  # held by the finalizer
    try:
        with pytest.raises(ClaimError) as failure:
            # The cached copy predates the deletion; only the live GET notices it.
            await manager(client, cached).claim(await replicasets(client, namespace))
        (error,) = failure.value.errors
        assert isinstance(error, CannotAdopt)
        assert "has just been deleted" in str(error)
        orphan = await client.get(REPLICASETS, "orphan", namespace=namespace)
        assert "ownerReferences" not in orphan["metadata"]
    finally:
        await client.patch(
            DEPLOYMENTS, "doomed", {"metadata": {"finalizers": None}}, namespace=namespace
        )


async def test_live_recheck_refuses_adoption_by_a_recreated_deployment(
    client: ApiClient, namespace: str
) -> None:
    cached = await create_deployment(client, namespace, "web", {"app": "web"})
    await client.delete(DEPLOYMENTS, "web", namespace=namespace)
    await create_deployment(client, namespace, "web", {"app": "web"})  # new UID
    await create_replicaset(client, namespace, "orphan", {"app": "web"})
    with pytest.raises(ClaimError) as failure:
        await manager(client, cached).claim(await replicasets(client, namespace))
    assert "is gone: got uid" in str(failure.value)
    orphan = await client.get(REPLICASETS, "orphan", namespace=namespace)
    assert "ownerReferences" not in orphan["metadata"]
