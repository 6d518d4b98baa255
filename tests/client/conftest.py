"""Fixtures for the client's unit tests: a fake API server and a client talking to it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from client_fakes import FakeApiServer
from prometheus_client import CollectorRegistry

from kcontrol.client import ApiClient, ClientConfig, StaticTokenAuth


@pytest.fixture
async def api() -> AsyncIterator[FakeApiServer]:
    server = FakeApiServer()
    runner = web.AppRunner(server.app, shutdown_timeout=0.5, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    server.url = f"http://{host}:{port}"
    try:
        yield server
    finally:
        server.release.set()
        await runner.cleanup()


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
async def client(api: FakeApiServer, registry: CollectorRegistry) -> AsyncIterator[ApiClient]:
    config = ClientConfig(host=api.url, auth=StaticTokenAuth("s3cret"))
    # One request per call: the Retry-After retries have tests of their own.
    async with ApiClient(config, qps=0, registry=registry, timeout=5, max_retries=0) as c:
        yield c
