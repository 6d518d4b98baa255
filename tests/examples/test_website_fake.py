"""The Website operator's unit tests, as an operator author writes them: the module's own
manager run on a FakeClient that serves the CRD (kcontrol.testing.running), objects created in
the fake, and assertions on what the operator wrote - no cluster, a second or so each."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from website_helpers import (
    CRD,
    deployment_matches,
    get_or_none,
    service_matches,
    status_is,
    website,
)

from examples.website import WEBSITES, manager
from kcontrol.client import DEPLOYMENTS, SERVICES
from kcontrol.testing import FakeClient, running

T = TypeVar("T")
WRITES = ("create", "update", "patch", "delete")


async def eventually(probe: Callable[[], Awaitable[T | None]], *, within: float = 10.0) -> T:
    deadline = time.monotonic() + within
    while True:
        value = await probe()
        if value:
            return value
        assert time.monotonic() < deadline, "the operator did not converge"
        await asyncio.sleep(0.01)


def writes(fake: FakeClient, resource: Any = None) -> list[Any]:
    return [
        a for a in fake.actions if a.verb in WRITES and (resource is None or a.resource == resource)
    ]


async def converged(fake: FakeClient, name: str = "site") -> dict[str, Any] | None:
    site = await get_or_none(fake, WEBSITES, name, "ns")
    deployment = await get_or_none(fake, DEPLOYMENTS, name, "ns")
    service = await get_or_none(fake, SERVICES, name, "ns")
    if not (site and deployment and service):
        return None
    ok = (
        deployment_matches(deployment, site)
        and service_matches(service, site)
        and status_is(site, ready=0, phase="Progressing")
    )
    return site if ok else None


async def test_a_website_gets_its_objects_then_nothing_more_is_written() -> None:
    fake = FakeClient(crds=[CRD])
    async with running(manager, client=fake):
        await fake.create(WEBSITES, website("site", "ns", replicas=3))
        await eventually(lambda: converged(fake))
        await asyncio.sleep(0.2)  # the events the writes caused are reconciled by now
        settled = len(writes(fake))
        await asyncio.sleep(0.5)
        assert len(writes(fake)) == settled, "a converged operator kept writing"
    operator_writes = [a for a in writes(fake) if a.resource != WEBSITES or a.subresource]
    kinds = [(a.verb, a.resource.plural, a.subresource or "") for a in operator_writes]
    # An apply each for the Deployment and the Service and a status patch; a reconcile woken
    # by the operator's own writes before its cache saw them may send one of them once more
    # (an unchanged apply or patch), never more.
    assert set(kinds) == {
        ("patch", "deployments", ""),
        ("patch", "services", ""),
        ("patch", "websites", "status"),
    }
    assert all(kinds.count(kind) <= 2 for kind in kinds), kinds


async def test_deployment_status_and_spec_changes_flow_through() -> None:
    fake = FakeClient(crds=[CRD])
    async with running(manager, client=fake):
        await fake.create(WEBSITES, website("site", "ns", replicas=2))
        await eventually(lambda: converged(fake))
        await fake.patch(
            DEPLOYMENTS,
            "site",
            {"status": {"readyReplicas": 2}},
            namespace="ns",
            subresource="status",
        )

        async def ready() -> dict[str, Any] | None:
            site = await get_or_none(fake, WEBSITES, "site", "ns")
            return site if site and status_is(site, ready=2, phase="Ready") else None

        await eventually(ready)
        await fake.patch(WEBSITES, "site", {"spec": {"image": "nginx:2"}}, namespace="ns")

        async def rolled() -> dict[str, Any] | None:
            site = await get_or_none(fake, WEBSITES, "site", "ns")
            deployment = await get_or_none(fake, DEPLOYMENTS, "site", "ns")
            if site and deployment and deployment_matches(deployment, site):
                status = site.get("status") or {}
                return site if status.get("observedGeneration") == 2 else None
            return None

        await eventually(rolled)


async def test_replicas_default_to_one_and_deleted_objects_come_back() -> None:
    fake = FakeClient(crds=[CRD])
    async with running(manager, client=fake):
        await fake.create(WEBSITES, website("site", "ns", replicas=None))
        await eventually(lambda: converged(fake))
        deployment = await fake.get(DEPLOYMENTS, "site", namespace="ns")
        assert deployment["spec"]["replicas"] == 1
        await fake.delete(DEPLOYMENTS, "site", namespace="ns")
        await eventually(lambda: get_or_none(fake, DEPLOYMENTS, "site", "ns"))


async def test_a_deleted_website_is_left_to_the_garbage_collector() -> None:
    fake = FakeClient(crds=[CRD])
    async with running(manager, client=fake):
        await fake.create(WEBSITES, website("site", "ns"))
        await eventually(lambda: converged(fake))
        before = len(writes(fake))
        await fake.delete(WEBSITES, "site", namespace="ns")
        await asyncio.sleep(0.2)
        # Nothing written for a gone Website (the fake has no garbage collector: the owned
        # objects stay, owned by a uid that no longer exists).
        assert len(writes(fake)) == before + 1  # the test's own delete
