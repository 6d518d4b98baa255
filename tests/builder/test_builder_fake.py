"""A whole operator on the fake client: Manager(client=FakeClient()) runs the builder's
controllers, informers and event recorders on the fake, as an operator's unit tests do."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from builder_helpers import eventually
from prometheus_client import CollectorRegistry

from kcontrol.builder import Request, controller_managed_by, generation_changed
from kcontrol.client import CONFIGMAPS, DEPLOYMENTS, SECRETS
from kcontrol.controllerutil import set_controller_reference
from kcontrol.errors import AlreadyExists, NotFound
from kcontrol.manager import Manager
from kcontrol.testing import FakeClient, running

FINALIZER = "test.kcontrol.io/cleanup"


def configmap(name: str, namespace: str = "ns") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"k": "v"},
    }


def fake_manager(fake: FakeClient) -> Manager:
    return Manager(name="fake-test", registry=CollectorRegistry())


async def get_or_none(fake: FakeClient, resource: Any, name: str) -> dict[str, Any] | None:
    try:
        return await fake.get(resource, name, namespace="ns")
    except NotFound:
        return None


async def test_operator_on_the_fake_creates_and_recreates_owned_objects() -> None:
    fake = FakeClient(resources=[CONFIGMAPS, SECRETS])
    manager = fake_manager(fake)

    @controller_managed_by(manager).for_(CONFIGMAPS).owns(SECRETS).complete
    async def reconcile(request: Request) -> None:
        try:
            parent = await manager.cache.get(CONFIGMAPS, request.name, namespace=request.namespace)
        except NotFound:
            return
        child = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"{request.name}-child", "namespace": request.namespace},
        }
        set_controller_reference(parent, child)
        with contextlib.suppress(AlreadyExists):
            await manager.client.create(SECRETS, child)

    async with running(manager, client=fake):
        await fake.create(CONFIGMAPS, configmap("parent"))
        first = await eventually(lambda: get_or_none(fake, SECRETS, "parent-child"))
        await fake.delete(SECRETS, "parent-child", namespace="ns")

        async def recreated() -> dict[str, Any] | None:
            secret = await get_or_none(fake, SECRETS, "parent-child")
            return (
                secret if secret and secret["metadata"]["uid"] != first["metadata"]["uid"] else None
            )

        await eventually(recreated, message="the deleted Secret was not re-created")
    # Every write went through the fake: the manager used the client it was given.
    assert {a.verb for a in fake.actions if a.resource == SECRETS} >= {"create", "delete"}


async def test_finalize_hook_on_the_fake() -> None:
    fake = FakeClient(resources=[CONFIGMAPS])
    manager = fake_manager(fake)
    finalized: list[Request] = []
    reconciled: list[Request] = []

    async def finalize(request: Request) -> None:
        finalized.append(request)

    @(
        controller_managed_by(manager)
        .for_(CONFIGMAPS)
        .finalize(finalize, finalizer=FINALIZER)
        .complete
    )
    async def reconcile(request: Request) -> None:
        reconciled.append(request)

    async with running(manager, client=fake):
        await fake.create(CONFIGMAPS, configmap("held"))

        async def held() -> bool:
            obj = await get_or_none(fake, CONFIGMAPS, "held")
            return bool(obj and FINALIZER in (obj["metadata"].get("finalizers") or []))

        await eventually(held, message="the finalizer was never added")
        await eventually(lambda: asyncio.sleep(0, bool(reconciled)), message="no reconcile")
        await fake.delete(CONFIGMAPS, "held", namespace="ns")

        async def gone() -> bool:
            return await get_or_none(fake, CONFIGMAPS, "held") is None

        await eventually(gone, message="the finalizer was never removed")
    assert finalized == [Request("ns", "held")]
    # While it was being deleted only finalize ran; the reconcile never saw it terminating.
    assert set(reconciled) == {Request("ns", "held")}


async def test_finalize_hook_fires_behind_a_generation_predicate_on_the_fake() -> None:
    """Marking an object for deletion gives it the next generation (the apiserver's
    BeforeDelete), so behind generation_changed() the deletion still reaches the finalize
    hook - on the fake as on a real server."""
    fake = FakeClient(resources=[DEPLOYMENTS])
    manager = fake_manager(fake)
    finalized: list[Request] = []

    async def finalize(request: Request) -> None:
        finalized.append(request)

    @(
        controller_managed_by(manager)
        .for_(DEPLOYMENTS, predicates=[generation_changed()])
        .finalize(finalize, finalizer=FINALIZER)
        .complete
    )
    async def reconcile(request: Request) -> None:
        return None

    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {}},
    }
    async with running(manager, client=fake):
        await fake.create(DEPLOYMENTS, deployment)

        async def held() -> bool:
            obj = await get_or_none(fake, DEPLOYMENTS, "web")
            return bool(obj and FINALIZER in (obj["metadata"].get("finalizers") or []))

        await eventually(held, message="the finalizer was never added")
        await fake.delete(DEPLOYMENTS, "web", namespace="ns")

        async def gone() -> bool:
            return await get_or_none(fake, DEPLOYMENTS, "web") is None

        await eventually(gone, message="the deletion never reached the finalize hook")
    assert finalized == [Request("ns", "web")]
