"""Running kcontrol's controllers in this process against the test cluster, and reading what
they did: the manager as kcontrol-manager runs it (no leader election, no HTTP server), an
admin client, and small readers for pods, conditions and events."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import EVENTS, PODS, ApiClient, Object
from kcontrol.manager import ControllerRegistry, ControllerSpec, Manager, ManagerOptions
from kcontrol.testing.cluster import Cluster

WITHIN = 90.0
"""Seconds a convergence gets: generous, the machine is shared and noisy."""


@contextlib.asynccontextmanager
async def running_manager(
    cluster: Cluster, *specs: ControllerSpec, **overrides: Any
) -> AsyncIterator[Manager]:
    """A :class:`Manager` running ``specs`` against ``cluster`` until the block ends.

    Unthrottled by default (``kube_api_qps=0``); ``overrides`` are :class:`ManagerOptions`
    fields. On exit the manager is shut down and awaited, so nothing it started outlives
    the block.
    """
    values: dict[str, Any] = {
        "kubeconfig": str(cluster.kubeconfig_path),
        "leader_elect": False,
        "leader_elect_identity": f"test-{uuid.uuid4().hex[:6]}",
        "metrics_port": 0,
        "kube_api_qps": 0.0,
        **overrides,
    }
    manager = Manager(
        ManagerOptions(**values),
        ControllerRegistry(specs),
        registry=CollectorRegistry(),
        freeze_gc_after_sync=False,
    )
    task = asyncio.create_task(manager.run())
    try:
        yield manager
    finally:
        manager.shutdown()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def pods_of(client: ApiClient, namespace: str, selector: str) -> list[Object]:
    """Pods matching ``selector``, terminating ones included."""
    listed = await client.list(PODS, namespace=namespace, label_selector=selector)
    items: list[Object] = listed["items"]
    return items


def active(pods: list[Object]) -> list[Object]:
    """Pods that are neither terminating nor finished."""
    return [
        pod
        for pod in pods
        if not pod["metadata"].get("deletionTimestamp")
        and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    ]


def condition(obj: Object, kind: str) -> dict[str, Any] | None:
    """The status condition of type ``kind``, or None."""
    for item in (obj.get("status") or {}).get("conditions") or []:
        if item.get("type") == kind:
            return item  # type: ignore[no-any-return]
    return None


def is_ready(pod: Object) -> bool:
    ready = condition(pod, "Ready")
    return ready is not None and ready.get("status") == "True"


def uids(pods: list[Object]) -> set[str]:
    return {pod["metadata"]["uid"] for pod in pods}


async def events_for(client: ApiClient, namespace: str, name: str) -> list[tuple[str, str]]:
    """(reason, message) of the core/v1 events about the object ``name``."""
    listed = await client.list(
        EVENTS, namespace=namespace, field_selector=f"involvedObject.name={name}"
    )
    return [(event.get("reason", ""), event.get("message", "")) for event in listed["items"]]
