"""The garbage collector on a real kube-apiserver (no kube-controller-manager, so no other
collector): upstream's ``test/integration/garbagecollector`` cases - cascading (background)
deletion, orphaning, foreground deletion held by ``blockOwnerDeletion``, dangling references,
an owner in another namespace, owners and dependents of a custom resource whose CRD is created
and deleted while the collector runs, and a dependency cycle deleted in the foreground; and
the factory kcontrol-manager calls, wired to the real server's discovery."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kcontrol.client import (
    CONFIGMAPS,
    CUSTOMRESOURCEDEFINITIONS,
    REPLICATIONCONTROLLERS,
    ApiClient,
    Object,
    Resource,
)
from kcontrol.discovery import DiscoveryClient, DynamicRESTMapper
from kcontrol.envtest import ControlPlane
from kcontrol.errors import KcontrolError, NotFound
from kcontrol.informers import SharedInformerFactory
from kcontrol.manager import ControllerContext, ManagerOptions
from kcontrol.testing.fake import FakeRecorder
from kcontrol_controllers.garbagecollector import (
    GarbageCollectorController,
    deletable_resources,
    new_controller,
)
from tests.integration.helpers import new_client, poll

pytestmark = [pytest.mark.integration, pytest.mark.slow]

WITHIN = 30.0


class Running:
    def __init__(self, gc: GarbageCollectorController, recorder: FakeRecorder) -> None:
        self.gc = gc
        self.recorder = recorder


@contextlib.asynccontextmanager
async def collector(client: ApiClient, resync_period: float = 30.0) -> AsyncIterator[Running]:
    discovery = DiscoveryClient(client)
    recorder = FakeRecorder(include_object=True)
    gc = GarbageCollectorController(
        client=client,
        mapper=DynamicRESTMapper(discovery, min_refresh_interval=0.5),
        discover=partial(deletable_resources, discovery),
        recorder=recorder,
        workers=5,
        resync_period=resync_period,
    )
    task = asyncio.create_task(gc.run())
    try:
        await poll(gc.monitors.has_synced, within=WITHIN, message="monitors never synced")
        yield Running(gc, recorder)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@pytest.fixture
async def client(control_plane: ControlPlane) -> AsyncIterator[ApiClient]:
    api = new_client(control_plane)
    try:
        yield api
    finally:
        await api.close()


def ref(owner: Object, *, block: bool | None = None) -> dict[str, Any]:
    r = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }
    if block is not None:
        r["blockOwnerDeletion"] = block
    return r


def configmap(name: str, namespace: str, owners: list[dict[str, Any]] = ()) -> Object:  # type: ignore[assignment]
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if owners:
        metadata["ownerReferences"] = list(owners)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}


def replication_controller(name: str, namespace: str) -> Object:
    labels = {"app": name}
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 0,
            "selector": labels,
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }


async def exists(client: ApiClient, resource: Resource, name: str, namespace: str | None) -> bool:
    try:
        await client.get(resource, name, namespace=namespace)
    except NotFound:
        return False
    return True


async def wait_gone(client: ApiClient, resource: Resource, name: str, ns: str | None) -> None:
    async def gone() -> bool:
        return not await exists(client, resource, name, ns)

    await poll(gone, within=WITHIN, interval=0.1, message=f"{resource.plural}/{name} not deleted")


async def test_cascading_deletion(client: ApiClient, namespace: str) -> None:
    async with collector(client):
        owner = await client.create(
            REPLICATIONCONTROLLERS, replication_controller("owner", namespace)
        )
        for name in ("dep-1", "dep-2"):
            await client.create(CONFIGMAPS, configmap(name, namespace, [ref(owner)]))
        await client.create(CONFIGMAPS, configmap("independent", namespace))
        await client.delete(
            REPLICATIONCONTROLLERS, "owner", namespace=namespace, propagation_policy="Background"
        )
        await wait_gone(client, CONFIGMAPS, "dep-1", namespace)
        await wait_gone(client, CONFIGMAPS, "dep-2", namespace)
        await asyncio.sleep(1)
        assert await exists(client, CONFIGMAPS, "independent", namespace)


async def test_orphaning(client: ApiClient, namespace: str) -> None:
    async with collector(client):
        owner = await client.create(
            REPLICATIONCONTROLLERS, replication_controller("owner", namespace)
        )
        other = await client.create(CONFIGMAPS, configmap("other-owner", namespace))
        await client.create(CONFIGMAPS, configmap("dep", namespace, [ref(owner), ref(other)]))
        await client.create(CONFIGMAPS, configmap("sole-dep", namespace, [ref(owner)]))
        await client.delete(
            REPLICATIONCONTROLLERS, "owner", namespace=namespace, propagation_policy="Orphan"
        )
        await wait_gone(client, REPLICATIONCONTROLLERS, "owner", namespace)
        await asyncio.sleep(2)  # a dependent left with a dangling reference would go now
        dep = await client.get(CONFIGMAPS, "dep", namespace=namespace)
        assert [r["name"] for r in dep["metadata"]["ownerReferences"]] == ["other-owner"]
        sole = await client.get(CONFIGMAPS, "sole-dep", namespace=namespace)
        assert "ownerReferences" not in sole["metadata"]


async def test_foreground_deletion_waits_for_blocking_dependents(
    client: ApiClient, namespace: str
) -> None:
    async with collector(client):
        owner = await client.create(
            REPLICATIONCONTROLLERS, replication_controller("owner", namespace)
        )
        held = configmap("held", namespace, [ref(owner, block=True)])
        held["metadata"]["finalizers"] = ["example.com/hold"]
        await client.create(CONFIGMAPS, held)
        await client.create(CONFIGMAPS, configmap("plain", namespace, [ref(owner, block=True)]))
        await client.delete(
            REPLICATIONCONTROLLERS, "owner", namespace=namespace, propagation_policy="Foreground"
        )
        await wait_gone(client, CONFIGMAPS, "plain", namespace)

        async def held_terminating() -> bool:
            obj = await client.get(CONFIGMAPS, "held", namespace=namespace)
            return bool(obj["metadata"].get("deletionTimestamp"))

        await poll(held_terminating, within=WITHIN, message="held dependent not deleted")
        await asyncio.sleep(1)
        waiting = await client.get(REPLICATIONCONTROLLERS, "owner", namespace=namespace)
        assert waiting["metadata"]["finalizers"] == ["foregroundDeletion"]
        await client.patch(
            CONFIGMAPS, "held", {"metadata": {"finalizers": None}}, namespace=namespace
        )
        await wait_gone(client, REPLICATIONCONTROLLERS, "owner", namespace)


async def test_dangling_references(client: ApiClient, namespace: str) -> None:
    async with collector(client):
        alive = await client.create(CONFIGMAPS, configmap("alive", namespace))
        missing = {
            "apiVersion": "v1",
            "kind": "ReplicationController",
            "name": "missing",
            "uid": str(uuid.uuid4()),
        }
        await client.create(CONFIGMAPS, configmap("only-dangling", namespace, [missing]))
        await client.create(CONFIGMAPS, configmap("mixed", namespace, [missing, ref(alive)]))
        await wait_gone(client, CONFIGMAPS, "only-dangling", namespace)

        async def cleaned() -> bool:
            obj = await client.get(CONFIGMAPS, "mixed", namespace=namespace)
            return [r["name"] for r in obj["metadata"]["ownerReferences"]] == ["alive"]

        await poll(cleaned, within=WITHIN, message="dangling reference not removed")


async def test_owner_in_another_namespace(client: ApiClient, namespace: str) -> None:
    other_ns = f"t-{uuid.uuid4().hex[:10]}"
    await client.create(
        Resource("", "v1", "namespaces", "Namespace", namespaced=False),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other_ns}},
    )
    async with collector(client) as running:
        owner = await client.create(CONFIGMAPS, configmap("owner", other_ns))
        await client.create(CONFIGMAPS, configmap("dep", namespace, [ref(owner)]))
        await wait_gone(client, CONFIGMAPS, "dep", namespace)
        assert await exists(client, CONFIGMAPS, "owner", other_ns)

        def reported() -> bool:
            return any("OwnerRefInvalidNamespace" in e for e in running.recorder.events)

        await poll(reported, within=WITHIN, message="no OwnerRefInvalidNamespace event")


def widget_crd(group: str) -> Object:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


async def test_custom_resources_of_a_crd_created_and_deleted_while_running(
    client: ApiClient, namespace: str
) -> None:
    group = f"gc{uuid.uuid4().hex[:8]}.example.com"
    widgets = Resource(group, "v1", "widgets", "Widget")
    async with collector(client, resync_period=1.0) as running:
        crd = widget_crd(group)
        await client.create(CUSTOMRESOURCEDEFINITIONS, crd)
        try:

            def monitored() -> bool:
                return widgets in running.gc.monitors.resources()

            await poll(monitored, within=WITHIN, message="no monitor for the new CRD")

            async def create_owner() -> Object:
                while True:
                    with contextlib.suppress(NotFound):
                        return await client.create(
                            widgets,
                            {
                                "apiVersion": f"{group}/v1",
                                "kind": "Widget",
                                "metadata": {"name": "owner", "namespace": namespace},
                            },
                        )
                    await asyncio.sleep(0.1)

            owner = await asyncio.wait_for(create_owner(), WITHIN)
            dependent = {
                "apiVersion": f"{group}/v1",
                "kind": "Widget",
                "metadata": {
                    "name": "dependent",
                    "namespace": namespace,
                    "ownerReferences": [ref(owner)],
                },
            }
            await client.create(widgets, dependent)
            await client.create(CONFIGMAPS, configmap("cm-dependent", namespace, [ref(owner)]))
            await client.delete(widgets, "owner", namespace=namespace)
            await wait_gone(client, widgets, "dependent", namespace)
            await wait_gone(client, CONFIGMAPS, "cm-dependent", namespace)
        finally:
            with contextlib.suppress(KcontrolError):
                await client.delete(CUSTOMRESOURCEDEFINITIONS, crd["metadata"]["name"])

        def unmonitored() -> bool:
            return widgets not in running.gc.monitors.resources()

        await poll(unmonitored, within=WITHIN, message="monitor of the deleted CRD kept")
        # The collector still works for the others.
        owner = await client.create(CONFIGMAPS, configmap("after", namespace))
        await client.create(CONFIGMAPS, configmap("after-dep", namespace, [ref(owner)]))
        await client.delete(CONFIGMAPS, "after", namespace=namespace)
        await wait_gone(client, CONFIGMAPS, "after-dep", namespace)


async def test_a_dependency_cycle_deleted_in_the_foreground(
    client: ApiClient, namespace: str
) -> None:
    async with collector(client):
        a = await client.create(CONFIGMAPS, configmap("a", namespace))
        b = await client.create(CONFIGMAPS, configmap("b", namespace, [ref(a, block=True)]))
        await client.patch(
            CONFIGMAPS,
            "a",
            {"metadata": {"ownerReferences": [ref(b, block=True)]}},
            namespace=namespace,
        )
        await client.delete(CONFIGMAPS, "a", namespace=namespace, propagation_policy="Foreground")
        await wait_gone(client, CONFIGMAPS, "a", namespace)
        await wait_gone(client, CONFIGMAPS, "b", namespace)


async def test_the_factory_wires_discovery_and_the_mapper(
    client: ApiClient, namespace: str
) -> None:
    context = ControllerContext(
        client=client,
        informers=SharedInformerFactory(client),
        options=ManagerOptions(),
        registry=CollectorRegistry(),
        identity="test",
        recorder_factory=lambda _: FakeRecorder(),
        flags={"concurrent-gc-syncs": 2, "enable-garbage-collector": True},
    )
    gc = new_controller(context)
    assert gc is not None
    task = asyncio.create_task(gc.run())
    try:
        await poll(gc.monitors.has_synced, within=WITHIN, message="monitors never synced")
        assert CONFIGMAPS in gc.monitors.resources()
        assert not any(r.plural == "events" for r in gc.monitors.resources())
        # One monitor per resource, in its preferred version: HPAs as autoscaling/v2 only.
        monitored = [(r.group, r.plural) for r in gc.monitors.resources()]
        assert len(monitored) == len(set(monitored)), sorted(monitored)
        hpas = [r for r in gc.monitors.resources() if r.plural == "horizontalpodautoscalers"]
        assert [r.version for r in hpas] == ["v2"]
        owner = await client.create(CONFIGMAPS, configmap("owner", namespace))
        await client.create(CONFIGMAPS, configmap("dep", namespace, [ref(owner)]))
        await client.delete(CONFIGMAPS, "owner", namespace=namespace)
        await wait_gone(client, CONFIGMAPS, "dep", namespace)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
