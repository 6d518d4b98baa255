"""The event broadcaster against a real kube-apiserver, read back with ``kubectl``."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kcontrol.client import CONFIGMAPS, EVENTS, NAMESPACES, ApiClient, ClientConfig, ListOptions
from kcontrol.envtest import ControlPlane
from kcontrol.events import EventBroadcaster, object_reference

pytestmark = pytest.mark.integration


@pytest.fixture
async def client(control_plane: ControlPlane) -> AsyncIterator[ApiClient]:
    config = ClientConfig.from_kube_configuration(await control_plane.kube_configuration())
    async with ApiClient(config, qps=0, timeout=30) as api:
        yield api


async def create_configmap(client: ApiClient, namespace: str, name: str) -> dict[str, Any]:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    return await client.create(CONFIGMAPS, body, namespace=namespace)


async def events_about(client: ApiClient, namespace: str, name: str) -> list[dict[str, Any]]:
    listed = await client.list(
        EVENTS,
        namespace=namespace,
        options=ListOptions(field_selector=f"involvedObject.name={name}"),
    )
    items: list[dict[str, Any]] = listed["items"]
    return items


async def eventually(check: Callable[[], Awaitable[bool]]) -> None:
    """Poll ``check`` for up to 20 seconds."""
    for _ in range(200):
        if await check():
            return
        await asyncio.sleep(0.1)
    raise AssertionError("condition not reached within 20 s")


async def test_repeated_event_is_one_event_with_count_3_in_kubectl_describe(
    client: ApiClient, namespace: str, control_plane: ControlPlane
) -> None:
    configmap = await create_configmap(client, namespace, "settings")
    registry = CollectorRegistry()
    broadcaster = EventBroadcaster(
        client, component="kcontrol-test-controller", host="node-7", registry=registry
    )
    recorder = broadcaster.new_recorder()

    async def count_is_3() -> bool:
        found = await events_about(client, namespace, "settings")
        return len(found) == 1 and found[0]["count"] == 3

    async with asyncio.TaskGroup() as tasks:
        runner = tasks.create_task(broadcaster.run())
        for _ in range(3):
            recorder.eventf(configmap, "Warning", "ConfigInvalid", "key %s is missing", "port")
            await asyncio.sleep(0.05)
        await eventually(count_is_3)
        runner.cancel()

    (event,) = await events_about(client, namespace, "settings")
    assert event["involvedObject"] == object_reference(configmap)
    assert (event["type"], event["reason"], event["message"]) == (
        "Warning",
        "ConfigInvalid",
        "key port is missing",
    )
    assert event["source"] == {"component": "kcontrol-test-controller", "host": "node-7"}
    assert event["reportingComponent"] == "kcontrol-test-controller"
    assert event["reportingInstance"] == "node-7"
    assert event["metadata"]["name"].startswith("settings.")
    assert event["firstTimestamp"] <= event["lastTimestamp"]
    written = {
        verb: registry.get_sample_value(
            "kcontrol_events_written_total",
            {"component": "kcontrol-test-controller", "verb": verb},
        )
        for verb in ("create", "patch")
    }
    assert written == {"create": 1.0, "patch": 2.0}

    described = await asyncio.to_thread(
        control_plane.kubectl, "describe", "configmap", "settings", "-n", namespace
    )
    line = next(line for line in described.splitlines() if "ConfigInvalid" in line)
    assert re.search(r"Warning\s+ConfigInvalid\s+\S+ \(x3 over \S+\)", line), described
    assert "key port is missing" in line
    assert "kcontrol-test-controller" in line


async def test_events_recorded_before_shutdown_are_flushed(
    client: ApiClient, namespace: str
) -> None:
    configmap = await create_configmap(client, namespace, "flushed")
    broadcaster = EventBroadcaster(client, component="flush-test", registry=CollectorRegistry())
    recorder = broadcaster.new_recorder()
    for reason in ("First", "Second", "Third"):
        recorder.event(configmap, "Normal", reason, f"{reason} thing happened")

    runner = asyncio.create_task(broadcaster.run())
    await asyncio.sleep(0)  # started, but has written nothing yet
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner

    found = await events_about(client, namespace, "flushed")
    assert sorted(e["reason"] for e in found) == ["First", "Second", "Third"]
    assert broadcaster.pending() == 0


async def test_event_about_a_cluster_scoped_object_goes_to_default(client: ApiClient) -> None:
    ns = await client.get(NAMESPACES, "default")
    broadcaster = EventBroadcaster(client, component="scope-test", registry=CollectorRegistry())
    broadcaster.new_recorder().event(ns, "Normal", "Checked", "namespace looks fine")
    runner = asyncio.create_task(broadcaster.run())

    async def written() -> bool:
        found = await events_about(client, "default", "default")
        return any(e["source"]["component"] == "scope-test" for e in found)

    try:
        await eventually(written)
    finally:
        runner.cancel()
        with pytest.raises(asyncio.CancelledError):
            await runner
    (event,) = [
        e
        for e in await events_about(client, "default", "default")
        if e["source"]["component"] == "scope-test"
    ]
    assert event["metadata"]["namespace"] == "default"
    assert event["involvedObject"]["kind"] == "Namespace"
    assert "namespace" not in event["involvedObject"]
