"""Shared fixtures: one real control plane per session, a fresh namespace per test, and loop
hygiene checks (no leaked tasks, no unclosed sessions, no unretrieved task exceptions) around
every async test."""

from __future__ import annotations

import asyncio
import gc
import inspect
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

import aiohttp
import pytest
import uvloop
from hypothesis import HealthCheck, settings

from kcontrol.envtest import ControlPlane
from kcontrol.envtest.cluster import Cluster

# Property tests run on shared, noisy CI machines: nothing may fail because the machine is slow
# (no per-example deadline, no "input generation too slow" health checks), and a failure must
# reproduce on the next run (derandomized: the examples come from a fixed seed; a failing
# example is printed as a blob for @reproduce_failure). HYPOTHESIS_PROFILE=dev explores with
# random seeds instead, for local bug hunting.
settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    """Async tests run on asyncio's own loop; those marked ``both_loops`` also on uvloop's,
    which kcontrol-manager runs on when it is installed (``--event-loop``)."""
    if item.get_closest_marker("both_loops") is not None:
        return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
    return {"asyncio": asyncio.new_event_loop}


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """A running etcd + kube-apiserver shared by the whole session.

    ControlPlane manages its processes without an event loop, so it is started here with a
    private loop and used from each test's own loop.
    """
    plane = ControlPlane()
    asyncio.run(plane.start())
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def sharding_plane() -> Iterator[ControlPlane]:
    """A second etcd + kube-apiserver for the session, with the ShardedListAndWatch feature
    gate (v1.36, alpha) on: lists and watches honour shard selectors. Started on first use."""
    plane = ControlPlane(feature_gates={"ShardedListAndWatch": True})
    asyncio.run(plane.start())
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    """A whole cluster shared by the session's controller tests: control plane,
    kube-scheduler, kube-controller-manager without its deployment and replicaset controllers,
    and three kwok nodes whose pods become Ready after a second.

    Started on first use only. Tests that stop a component or change kube-controller-manager's
    controllers must put them back before they end.
    """
    plane = Cluster(nodes=3, pod_ready_delay=1.0)
    asyncio.run(plane.start())
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture
async def cluster_namespace(cluster: Cluster) -> AsyncIterator[str]:
    """A fresh namespace in :func:`cluster`, with its default ServiceAccount (pods can be
    created at once); deleted afterwards, and kube-controller-manager empties it."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    status = await _api(cluster, "POST", "/api/v1/namespaces", body)
    assert status == 201, f"creating namespace {name}: HTTP {status}"
    await cluster.wait_for_service_account(name)
    yield name
    await _api(cluster, "DELETE", f"/api/v1/namespaces/{name}")


async def _api(plane: ControlPlane, method: str, path: str, body: Any = None) -> int:
    connector = aiohttp.TCPConnector(ssl=plane.ssl_context())
    headers = {"Authorization": f"Bearer {plane.token()}"}
    async with (
        aiohttp.ClientSession(connector=connector, headers=headers) as session,
        session.request(method, plane.host + path, json=body) as response,
    ):
        await response.read()
        return response.status


@pytest.fixture
async def namespace(control_plane: ControlPlane) -> AsyncIterator[str]:
    """A fresh namespace for one test, deleted afterwards (it stays Terminating: no namespace
    controller runs here, but nothing else looks at it)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    status = await _api(control_plane, "POST", "/api/v1/namespaces", body)
    assert status == 201, f"creating namespace {name}: HTTP {status}"
    yield name
    await _api(control_plane, "DELETE", f"/api/v1/namespaces/{name}")


@pytest.fixture
async def _loop_hygiene() -> AsyncIterator[None]:
    loop = asyncio.get_running_loop()
    problems: list[str] = []
    previous = loop.get_exception_handler()

    def handler(_: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        problems.append(str(context.get("message")) + ": " + repr(context.get("exception")))

    loop.set_exception_handler(handler)
    try:
        yield
        current = asyncio.current_task()
        leaked = [t for t in asyncio.all_tasks(loop) if t is not current and not t.done()]
        gc.collect()
        await asyncio.sleep(0)
        assert not leaked, f"tasks still running after the test: {leaked}"
        assert not problems, f"event loop reported: {problems}"
    finally:
        loop.set_exception_handler(previous)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        function = getattr(item, "function", None)
        if function is not None and inspect.iscoroutinefunction(function):
            item.add_marker(pytest.mark.usefixtures("_loop_hygiene"))
        fixtures = getattr(item, "fixturenames", ())
        if {"control_plane", "cluster", "sharding_plane"} & set(fixtures):
            item.add_marker(pytest.mark.integration)
