"""The builder on the real apiserver, run by an operator's Manager in this process: owned
objects of another kind and of a cluster-scoped owner map back to their owner, a deleted owned
object is re-created at once, predicates filter what they should, and a finalizer holds an
object until its finalize hook has run."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from typing import Any

import pytest
from builder_helpers import eventually, new_manager

from kcontrol.builder import Request, controller_managed_by, labels_changed
from kcontrol.client import CONFIGMAPS, NAMESPACES, SECRETS, ApiClient, Resource, load_config
from kcontrol.controllerutil import set_controller_reference
from kcontrol.envtest import ControlPlane
from kcontrol.errors import AlreadyExists, NotFound
from kcontrol.testing import capture_logs, running

pytestmark = pytest.mark.integration


async def admin(plane: ControlPlane) -> ApiClient:
    return ApiClient(await load_config(kubeconfig=str(plane.kubeconfig_path)), qps=0)


def configmap(namespace: str, name: str, **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, **metadata},
        "data": {"k": "v"},
    }


async def test_owned_object_of_another_kind_maps_back_and_is_recreated(
    control_plane: ControlPlane, namespace: str
) -> None:
    """ConfigMap parents own a Secret each; deleting the Secret wakes the parent, whose
    reconcile creates it again within a second."""
    manager = new_manager(control_plane, namespace=namespace)
    reconciled: list[Request] = []

    @controller_managed_by(manager).for_(CONFIGMAPS).owns(SECRETS).complete
    async def reconcile(request: Request) -> None:
        reconciled.append(request)
        try:
            parent = await manager.cache.get(CONFIGMAPS, request.name, namespace=request.namespace)
        except NotFound:
            return
        child = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"{request.name}-child", "namespace": request.namespace},
            "stringData": {"owner": request.name},
        }
        set_controller_reference(parent, child)
        with contextlib.suppress(AlreadyExists):
            await manager.client.create(SECRETS, child)

    async with await admin(control_plane) as client, running(manager):
        await client.create(CONFIGMAPS, configmap(namespace, "parent"))

        async def child_exists() -> dict[str, Any] | None:
            try:
                return await client.get(SECRETS, "parent-child", namespace=namespace)
            except NotFound:
                return None

        first = await eventually(child_exists, message="the owned Secret was never created")
        ref = first["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["name"], ref["controller"]) == ("ConfigMap", "parent", True)

        await client.delete(SECRETS, "parent-child", namespace=namespace)
        deleted_at = time.monotonic()

        async def recreated() -> dict[str, Any] | None:
            secret = await child_exists()
            if secret and secret["metadata"]["uid"] != first["metadata"]["uid"]:
                return secret
            return None

        await eventually(recreated, within=10, message="the deleted Secret was not re-created")
        # Woken by the Secret's deletion (no resync, no other event): well within a second
        # on an idle machine; bounded generously for a loaded CI machine.
        assert time.monotonic() - deleted_at < 5.0
        assert Request(namespace, "parent") in reconciled
        assert all(r.namespace == namespace for r in reconciled)


async def test_cluster_scoped_owner_maps_back(control_plane: ControlPlane, namespace: str) -> None:
    """A Namespace (cluster-scoped) owns a ConfigMap in it; a change to the ConfigMap wakes
    the Namespace's reconcile with a request without namespace."""
    manager = new_manager(control_plane)
    label = f"builder-test={uuid.uuid4().hex[:8]}"
    reconciled: list[Request] = []

    @(
        controller_managed_by(manager)
        .for_(NAMESPACES, label_selector=label)
        .owns(CONFIGMAPS)
        .complete
    )
    async def reconcile(request: Request) -> None:
        reconciled.append(request)

    async with await admin(control_plane) as client:
        ns = await client.get(NAMESPACES, namespace)
        key, value = label.split("=")
        await client.patch(NAMESPACES, namespace, {"metadata": {"labels": {key: value}}})
        async with running(manager):
            await eventually(
                lambda: asyncio.sleep(0, Request("", namespace) in reconciled),
                message="the labelled Namespace was never reconciled",
            )
            reconciled.clear()
            owned = configmap(namespace, "owned-by-namespace")
            set_controller_reference(ns, owned)
            await client.create(CONFIGMAPS, owned)
            await eventually(
                lambda: asyncio.sleep(0, Request("", namespace) in reconciled),
                message="the owned ConfigMap did not wake its Namespace",
            )
            # Nothing else was reconciled: the other namespaces are not labelled.
            assert set(reconciled) == {Request("", namespace)}


async def test_predicates_filter_events(control_plane: ControlPlane, namespace: str) -> None:
    manager = new_manager(control_plane, namespace=namespace)
    reconciled: list[Request] = []

    @controller_managed_by(manager).for_(CONFIGMAPS, predicates=[labels_changed()]).complete
    async def reconcile(request: Request) -> None:
        reconciled.append(request)

    async with await admin(control_plane) as client, running(manager):
        await client.create(CONFIGMAPS, configmap(namespace, "filtered"))
        await eventually(lambda: asyncio.sleep(0, len(reconciled) == 1), message="create")
        # An annotation and a data change: filtered out.
        await client.patch(
            CONFIGMAPS,
            "filtered",
            {"metadata": {"annotations": {"a": "1"}}, "data": {"k": "changed"}},
            namespace=namespace,
        )
        # A label change: passes. Once it is reconciled, the earlier update must have been
        # delivered and filtered (the informer delivers one object's events in order).
        await client.patch(
            CONFIGMAPS, "filtered", {"metadata": {"labels": {"l": "1"}}}, namespace=namespace
        )
        await eventually(lambda: asyncio.sleep(0, len(reconciled) == 2), message="label change")
        await asyncio.sleep(0.5)
        assert reconciled == [Request(namespace, "filtered")] * 2


async def test_finalizer_holds_the_object_until_finalize_ran(
    control_plane: ControlPlane, namespace: str
) -> None:
    manager = new_manager(control_plane, namespace=namespace)
    finalizer = "builder-test.kcontrol.io/cleanup"
    finalized: list[Request] = []
    release = asyncio.Event()

    async def finalize(request: Request) -> None:
        finalized.append(request)
        await release.wait()

    @(
        controller_managed_by(manager)
        .for_(CONFIGMAPS)
        .finalize(finalize, finalizer=finalizer)
        .complete
    )
    async def reconcile(request: Request) -> None:
        return None

    async with await admin(control_plane) as client, running(manager):
        await client.create(CONFIGMAPS, configmap(namespace, "held"))

        async def has_finalizer() -> bool:
            obj = await client.get(CONFIGMAPS, "held", namespace=namespace)
            return finalizer in (obj["metadata"].get("finalizers") or [])

        await eventually(has_finalizer, message="the finalizer was never added")
        await client.delete(CONFIGMAPS, "held", namespace=namespace)
        await eventually(lambda: asyncio.sleep(0, bool(finalized)), message="finalize never ran")
        held = await client.get(CONFIGMAPS, "held", namespace=namespace)
        assert held["metadata"].get("deletionTimestamp")
        release.set()

        async def gone() -> bool:
            try:
                await client.get(CONFIGMAPS, "held", namespace=namespace)
            except NotFound:
                return True
            return False

        await eventually(gone, message="the object was not deleted after finalize")
        assert set(finalized) == {Request(namespace, "held")}


def late_crd(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
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


async def test_controller_started_before_its_crd_reconciles_soon_after_it_is_established(
    control_plane: ControlPlane, namespace: str
) -> None:
    """The operator starts first (its informer finds no such resource and says so), the CRD is
    installed later: the first object is reconciled within 5 s of the CRD being established
    (the reflector re-checks every 2 s instead of backing off)."""
    group = f"late-{uuid.uuid4().hex[:8]}.example.com"
    gadgets = Resource(group, "v1", "gadgets", "Gadget")
    manager = new_manager(control_plane, namespace=namespace)
    reconciled: list[tuple[Request, float]] = []

    @controller_managed_by(manager).for_(gadgets).complete
    async def reconcile(request: Request) -> None:
        reconciled.append((request, time.monotonic()))

    task = asyncio.create_task(manager.run())
    try:
        with capture_logs() as logs:
            await eventually(
                lambda: asyncio.sleep(0, any("not served yet" in e["event"] for e in logs)),
                message="the informer never said its resource is not served",
            )
        await asyncio.sleep(3.0)  # a few checks fail first: a growing backoff would show
        await control_plane.install_crds([late_crd(group)])  # returns once established
        established = time.monotonic()
        async with await admin(control_plane) as client:
            await client.create(
                gadgets,
                {
                    "apiVersion": f"{group}/v1",
                    "kind": "Gadget",
                    "metadata": {"name": "g1", "namespace": namespace},
                },
            )
        await eventually(lambda: asyncio.sleep(0, bool(reconciled)), within=10)
        request, at = reconciled[0]
        assert request == Request(namespace, "g1")
        assert at - established < 5.0
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await control_plane.uninstall_crds([late_crd(group)])
