"""Shared fixtures: one real control plane per session, a fresh namespace per test, and loop
hygiene checks (no leaked tasks, no unclosed sessions, no unretrieved task exceptions) around
every async test."""

from __future__ import annotations

import asyncio
import gc
import inspect
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest

from kcontrol.testing.envtest import ControlPlane


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
        if "control_plane" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.integration)
