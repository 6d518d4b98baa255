"""The health and metrics endpoint: kube's healthz answers, /metrics, readiness flips with the
state it reports, and run() closes cleanly."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest
from prometheus_client import CollectorRegistry, Counter

from kcontrol.serving import HealthServer


class State:
    def __init__(self) -> None:
        self.synced = False
        self.leading_ok = True

    def caches(self) -> None:
        if not self.synced:
            raise RuntimeError("informers not synced: pods")

    def election(self) -> bool:
        return self.leading_ok


@pytest.fixture
def state() -> State:
    return State()


@pytest.fixture
def registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    Counter("kcontrol_test_things", "Things.", ["kind"], registry=registry).labels("a").inc(3)
    return registry


class HealthClient:
    """GETs paths of a running HealthServer."""

    def __init__(self, session: aiohttp.ClientSession, port: int) -> None:
        self._session = session
        self._base = f"http://127.0.0.1:{port}"

    async def get(self, path: str, headers: dict[str, str] | None = None) -> aiohttp.ClientResponse:
        async with self._session.get(self._base + path, headers=headers) as response:
            await response.read()
            return response


@pytest.fixture
async def client(state: State, registry: CollectorRegistry) -> AsyncIterator[HealthClient]:
    server = HealthServer(host="127.0.0.1", port=0, registry=registry)
    server.add_livez_check("leaderElection", state.election)
    server.add_readyz_check("informer-sync", state.caches)
    async with asyncio.TaskGroup() as tasks:
        running = tasks.create_task(server.run())
        await asyncio.wait_for(server.wait_started(), 5)
        async with aiohttp.ClientSession() as session:
            yield HealthClient(session, server.port)
        running.cancel()


async def get(client: HealthClient, path: str) -> tuple[int, str]:
    response = await client.get(path)
    return response.status, await response.text()


async def test_metrics_serves_the_registry(client: HealthClient) -> None:
    response = await client.get("/metrics")
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    body = await response.text()
    assert 'kcontrol_test_things_total{kind="a"} 3.0' in body
    assert "# HELP kcontrol_test_things_total Things." in body


async def test_metrics_negotiates_openmetrics(client: HealthClient) -> None:
    response = await client.get(
        "/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"}
    )
    assert response.headers["Content-Type"].startswith("application/openmetrics-text")
    body = await response.text()
    assert 'kcontrol_test_things_total{kind="a"} 3.0' in body
    assert body.endswith("# EOF\n")


async def test_livez_passes_while_readyz_waits_for_caches(client: HealthClient) -> None:
    assert await get(client, "/livez") == (200, "ok")
    status, body = await get(client, "/readyz")
    assert status == 500
    assert body == (
        "[+]ping ok\n"
        "[+]leaderElection ok\n"
        "[-]informer-sync failed: reason withheld\n"
        "readyz check failed\n"
    )
    assert "pods" not in body, "reasons are logged, never served"


async def test_readyz_flips_when_caches_sync(client: HealthClient, state: State) -> None:
    assert (await get(client, "/readyz"))[0] == 500
    state.synced = True
    assert await get(client, "/readyz") == (200, "ok")
    assert await get(client, "/healthz") == (200, "ok")


async def test_overdue_leader_is_neither_live_nor_ready(client: HealthClient, state: State) -> None:
    state.synced = True
    state.leading_ok = False
    for endpoint in ("livez", "readyz", "healthz"):
        status, body = await get(client, f"/{endpoint}")
        assert status == 500
        assert "[-]leaderElection failed: reason withheld" in body
        assert body.endswith(f"{endpoint} check failed\n")


async def test_verbose_lists_every_check(client: HealthClient, state: State) -> None:
    state.synced = True
    status, body = await get(client, "/readyz?verbose")
    assert status == 200
    assert body == ("[+]ping ok\n[+]leaderElection ok\n[+]informer-sync ok\nreadyz check passed\n")
    status, body = await get(client, "/livez?verbose=1")
    assert body == "[+]ping ok\n[+]leaderElection ok\nlivez check passed\n"


async def test_exclude_skips_a_check(client: HealthClient) -> None:
    status, body = await get(client, "/readyz?exclude=informer-sync&verbose")
    assert status == 200
    assert "[+]informer-sync excluded: ok" in body
    status, body = await get(client, "/readyz?exclude=nope&exclude=informer-sync")
    assert status == 200
    status, body = await get(client, "/readyz?exclude=nope&exclude=informer-sync&verbose")
    assert 'warn: some health checks cannot be excluded: no matches for "nope"' in body


async def test_single_check_path(client: HealthClient, state: State) -> None:
    assert await get(client, "/readyz/ping") == (200, "ok")
    assert (await get(client, "/readyz/informer-sync"))[0] == 500
    state.synced = True
    assert await get(client, "/readyz/informer-sync") == (200, "ok")
    assert (await get(client, "/livez/informer-sync"))[0] == 404, "not a liveness check"


def test_check_names_are_unique_and_valid() -> None:
    server = HealthServer()
    server.add_readyz_check("a", lambda: None)
    with pytest.raises(ValueError, match="duplicate"):
        server.add_livez_check("a", lambda: None)
    with pytest.raises(ValueError, match="duplicate"):
        server.add_readyz_check("ping", lambda: None)
    with pytest.raises(ValueError, match="invalid"):
        server.add_readyz_check("a/b", lambda: None)
    assert [c.name for c in server.checks("livez")] == ["ping"]
    assert [c.name for c in server.checks("healthz")] == ["ping", "a"]


async def test_run_listens_until_cancelled_and_then_closes(registry: CollectorRegistry) -> None:
    server = HealthServer(host="127.0.0.1", port=0, registry=registry)
    task = asyncio.create_task(server.run())
    await asyncio.wait_for(server.wait_started(), 5)
    port = server.port
    assert port > 0
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{port}/healthz") as response:
            assert response.status == 200
            assert await response.text() == "ok"
        async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
            assert "kcontrol_test_things_total" in await response.text()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        with pytest.raises(aiohttp.ClientConnectionError):
            async with session.get(f"http://127.0.0.1:{port}/healthz"):
                pass
    with pytest.raises(RuntimeError, match="not listening"):
        _ = server.port


async def test_run_fails_when_the_port_is_taken(registry: CollectorRegistry) -> None:
    first = HealthServer(host="127.0.0.1", port=0, registry=registry)
    task = asyncio.create_task(first.run())
    try:
        await first.wait_started()
        second = HealthServer(host="127.0.0.1", port=first.port, registry=registry)
        with pytest.raises(OSError):
            await second.run()
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
