"""A CRD installed after start, on a real apiserver: an informer started before it syncs
within 5 s of the CRD being established (it checks again every 2 s), and a
DynamicRESTMapper that read discovery before it finds it.

The 5 s is an upper bound on a behaviour (the reflector's 2 s period plus a LIST), not a
speed target; it holds on a loaded machine, since it does not count the CRD's creation."""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kcontrol.client import CUSTOMRESOURCEDEFINITIONS, ApiClient, Object, Resource
from kcontrol.discovery import DynamicRESTMapper, NoKindMatch
from kcontrol.envtest import ControlPlane
from kcontrol.errors import KcontrolError, NotFound
from kcontrol.informers import SharedIndexInformer
from kcontrol.testing import capture_logs

from .helpers import new_client, poll, running

SYNC_BOUND = 5.0
"""Seconds from the CRD's Established condition to the informer's first sync (the issue's
bound)."""
NOT_SERVED_LINE = "resource not served yet, checking again"


def widget_crd(group: str, *, namespaced: bool = True) -> Object:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "scope": "Namespaced" if namespaced else "Cluster",
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


def is_established(crd: Object) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


@contextlib.asynccontextmanager
async def installed(client: ApiClient, crd: Object) -> AsyncIterator[float]:
    """Create ``crd``, wait until it is established, yield that moment (``time.monotonic``),
    delete it afterwards."""
    name = crd["metadata"]["name"]
    await client.create(CUSTOMRESOURCEDEFINITIONS, crd)
    try:

        async def established() -> bool:
            return is_established(await client.get(CUSTOMRESOURCEDEFINITIONS, name))

        await poll(established, within=30, interval=0.05, message=f"CRD {name} not established")
        yield time.monotonic()
    finally:
        with contextlib.suppress(KcontrolError):
            await client.delete(CUSTOMRESOURCEDEFINITIONS, name)


def unique_group() -> str:
    return f"t{uuid.uuid4().hex[:10]}.example.com"


async def test_an_informer_started_before_its_crd_syncs_soon_after_it_is_established(
    control_plane: ControlPlane, namespace: str
) -> None:
    group = unique_group()
    widgets = Resource(group, "v1", "widgets", "Widget")
    widget: dict[str, Any] = {
        "apiVersion": f"{group}/v1",
        "kind": "Widget",
        "metadata": {"name": "w1", "namespace": namespace},
        "spec": {"size": 3},
    }
    async with new_client(control_plane) as client:
        informer = SharedIndexInformer(client, widgets, namespace=namespace)
        failed_lists: list[Exception] = []
        informer.set_watch_error_handler(failed_lists.append)
        with capture_logs(logging.INFO) as logs:
            async with running(informer, sync=False):
                # Long enough for a growing backoff to have grown past the bound (0.8 s
                # doubling with jitter: its next wait would be 6.4-12.8 s).
                await poll(
                    lambda: len(failed_lists) >= 4,
                    within=60,
                    message=lambda: f"the informer's LISTs failed {failed_lists}",
                )
                assert all(isinstance(e, NotFound) for e in failed_lists), failed_lists
                async with installed(client, widget_crd(group)) as established_at:
                    await _create_when_served(client, widgets, widget)
                    await poll(
                        lambda: informer.indexer.get_by_key(f"{namespace}/w1") is not None,
                        within=30,
                        interval=0.05,
                        message="the informer never listed the widget",
                    )
                    elapsed = time.monotonic() - established_at
                    assert informer.has_synced()

    assert elapsed <= SYNC_BOUND, f"synced {elapsed:.1f} s after the CRD was established"
    not_served = [e for e in logs if e["event"] == NOT_SERVED_LINE]
    assert len(not_served) == 1, not_served
    assert (not_served[0]["group"], not_served[0]["resource"]) == (group, "widgets")
    assert [e for e in logs if e["event"] == "resource served now, synced"]
    reflector_warnings = [
        e
        for e in logs
        if e["logger"].startswith("kcontrol.informers") and e["log_level"] in ("warning", "error")
    ]
    assert not reflector_warnings, reflector_warnings


async def _create_when_served(client: ApiClient, resource: Resource, obj: Object) -> None:
    """Create ``obj``; an apiserver may answer 404 for a moment after Established."""

    async def created() -> bool:
        try:
            await client.create(resource, obj)
        except NotFound:
            return False
        return True

    await poll(created, within=10, interval=0.05, message="the CRD's resource never served")


async def test_dynamic_rest_mapper_finds_a_crd_created_after_its_first_read(
    control_plane: ControlPlane,
) -> None:
    group = unique_group()
    async with new_client(control_plane) as client:
        mapper = DynamicRESTMapper(client)
        pods = await mapper.resource_for("v1", "Pod")  # the first discovery read
        assert (pods.plural, pods.namespaced) == ("pods", True)
        with pytest.raises(NoKindMatch, match="Widget"):
            await mapper.resource_for(f"{group}/v1", "Widget")

        async with installed(client, widget_crd(group, namespaced=False)):
            found: list[Resource] = []

            async def mapped() -> bool:
                try:
                    found.append(await mapper.resource_for(f"{group}/v1", "Widget"))
                except NoKindMatch:
                    return False
                return True

            await poll(mapped, within=15, interval=0.2, message="the mapper never found Widget")

    assert found == [Resource(group, "v1", "widgets", "Widget", namespaced=False)]
