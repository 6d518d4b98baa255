"""The write gate: a client made with ``with_write_gate`` refuses mutating requests while its
gate is closed, checked right before each request leaves - after the rate limiter's wait and
before every Retry-After retry - so a request that queued while the gate was open is still
refused once it closes. Reads are never gated, and the client it came from is not gated."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from client_fakes import FakeApiServer, json_response, status_body
from prometheus_client import CollectorRegistry

from kcontrol.client import NAMESPACES, PODS, ApiClient, ClientConfig, PatchType, WriteRefused
from kcontrol.clock import FakeClock
from kcontrol.errors import KcontrolError

POD_PATH = "/api/v1/namespaces/ns/pods"


class Gate:
    """A gate the test opens and closes; counts how often it was asked."""

    def __init__(self, is_open: bool = True) -> None:
        self.is_open = is_open
        self.asked = 0
        self.namespaces: list[str] = []

    def __call__(self, namespace: str) -> bool:
        self.asked += 1
        self.namespaces.append(namespace)
        return self.is_open


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"}}


Write = Callable[[ApiClient], Awaitable[object]]

WRITES: list[Any] = [
    pytest.param(lambda c: c.create(PODS, pod("a")), "POST", POD_PATH, id="create"),
    pytest.param(lambda c: c.update(PODS, pod("a")), "PUT", f"{POD_PATH}/a", id="update"),
    pytest.param(
        lambda c: c.update_status(PODS, pod("a")), "PUT", f"{POD_PATH}/a/status", id="status"
    ),
    pytest.param(
        lambda c: c.patch(PODS, "a", {"x": 1}, namespace="ns"), "PATCH", f"{POD_PATH}/a", id="patch"
    ),
    pytest.param(
        lambda c: c.patch(
            PODS, "a", {"x": 1}, namespace="ns", patch_type=PatchType.APPLY, field_manager="m"
        ),
        "PATCH",
        f"{POD_PATH}/a",
        id="apply",
    ),
    pytest.param(
        lambda c: c.delete(PODS, "a", namespace="ns"), "DELETE", f"{POD_PATH}/a", id="del"
    ),
]


@pytest.mark.parametrize(("write", "method", "path"), WRITES)
async def test_a_closed_gate_refuses_every_mutating_verb_and_sends_nothing(
    api: FakeApiServer, client: ApiClient, write: Write, method: str, path: str
) -> None:
    gate = Gate(is_open=False)
    gated = client.with_write_gate(gate, name="lease ns/kcm")
    with pytest.raises(WriteRefused) as refused:
        await write(gated)
    assert isinstance(refused.value, KcontrolError)
    assert (refused.value.method, refused.value.path) == (method, path)
    assert "lease ns/kcm" in str(refused.value)
    assert api.requests == []
    # The same write through the client it was made from is not gated...
    await write(client)
    assert [(r.method, r.path) for r in api.requests] == [(method, path)]
    # ...and through the gated client once the gate opens again.
    gate.is_open = True
    await write(gated)
    assert len(api.requests) == 2
    # The gate was asked about the namespace written to, every time.
    assert gate.namespaces and set(gate.namespaces) == {"ns"}


async def test_the_gate_is_asked_about_the_written_namespace(
    api: FakeApiServer, client: ApiClient
) -> None:
    """A sharded manager opens the gate per namespace: each write names the namespace of its
    object, whether it comes from the argument or the object, and "" when cluster-scoped."""
    allowed = {"open", ""}

    def gate(namespace: str) -> bool:
        return namespace in allowed

    gated = client.with_write_gate(gate, name="shards")
    await gated.create(PODS, {"metadata": {"name": "a", "namespace": "open"}})
    await gated.patch(PODS, "a", {"x": 1}, namespace="open")
    await gated.delete(NAMESPACES, "gone")  # cluster-scoped: the "" shard
    with pytest.raises(WriteRefused):
        await gated.create(PODS, {"metadata": {"name": "b"}}, namespace="closed")
    with pytest.raises(WriteRefused):
        await gated.update(PODS, {"metadata": {"name": "b", "namespace": "closed"}})
    assert [(r.method, r.path) for r in api.requests] == [
        ("POST", "/api/v1/namespaces/open/pods"),
        ("PATCH", "/api/v1/namespaces/open/pods/a"),
        ("DELETE", "/api/v1/namespaces/gone"),
    ]


async def test_reads_and_watches_are_never_gated(api: FakeApiServer, client: ApiClient) -> None:
    async def empty_watch(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        await response.write_eof()
        return response

    api.respond("GET", "/api/v1/namespaces/a", {"metadata": {"name": "a"}})
    api.route("GET", "/api/v1/namespaces", empty_watch)
    gate = Gate(is_open=False)
    gated = client.with_write_gate(gate, name="closed")
    assert await gated.get(NAMESPACES, "a") == {"metadata": {"name": "a"}}
    async with gated.watch(NAMESPACES) as events:
        assert [event async for event in events] == []
    assert gate.asked == 0
    assert len(api.requests) == 2


async def test_the_gate_is_checked_after_the_rate_limiter_wait(
    api: FakeApiServer, registry: CollectorRegistry
) -> None:
    """A write queued on the client-side rate limiter while the gate was open must not go
    out once the gate has closed during the wait (the lease expired meanwhile)."""
    clock = FakeClock()
    gate = Gate(is_open=True)
    async with ApiClient(
        ClientConfig(host=api.url), qps=1, burst=1, registry=registry, clock=clock
    ) as base:
        client = base.with_write_gate(gate, name="lease")
        await client.create(PODS, pod("first"))  # takes the only token
        second = asyncio.create_task(client.create(PODS, pod("second")))
        for _ in range(100):
            await asyncio.sleep(0.001)
            if clock.has_waiters():
                break
        assert clock.has_waiters(), "the second write waits for a token"
        gate.is_open = False
        clock.step(1.0)
        with pytest.raises(WriteRefused):
            await asyncio.wait_for(second, 5)
    assert [r.json()["metadata"]["name"] for r in api.requests] == ["first"]


class ClosesWhileConnecting(Gate):
    """Open when first asked (before connecting), closed from then on: the lease ran out
    while the connection was being made - say, the process was paused (SIGSTOP) in the TLS
    handshake."""

    def __call__(self, namespace: str) -> bool:
        self.asked += 1
        return self.asked == 1


async def test_the_gate_is_asked_again_once_the_connection_is_ready(
    api: FakeApiServer, client: ApiClient
) -> None:
    gate = ClosesWhileConnecting()
    gated = client.with_write_gate(gate, name="lease")
    with pytest.raises(WriteRefused):
        await gated.create(PODS, pod("late"))
    assert gate.asked == 2
    assert api.requests == []  # nothing was written on the connection
    # The connection was closed, not returned to the pool half-used: the client goes on.
    assert await client.create(PODS, pod("next")) is not None
    assert [r.json()["metadata"]["name"] for r in api.requests] == ["next"]


async def test_the_gate_is_checked_again_before_a_retry(
    api: FakeApiServer, registry: CollectorRegistry
) -> None:
    clock = FakeClock()
    gate = Gate(is_open=True)

    async def busy(_: web.Request) -> web.StreamResponse:
        return json_response(status_body(503, "ServiceUnavailable"), 503, {"Retry-After": "2"})

    api.route("POST", POD_PATH, busy)
    async with ApiClient(ClientConfig(host=api.url), qps=0, registry=registry, clock=clock) as c:
        write = asyncio.create_task(c.with_write_gate(gate, name="lease").create(PODS, pod("a")))
        for _ in range(200):
            await asyncio.sleep(0.001)
            if api.requests and clock.has_waiters():
                break
        assert len(api.requests) == 1
        gate.is_open = False
        clock.step(2.0)
        with pytest.raises(WriteRefused):
            await asyncio.wait_for(write, 5)
    assert len(api.requests) == 1, "the retry must not be sent"


async def test_a_gated_client_shares_the_session_of_its_origin(
    api: FakeApiServer, registry: CollectorRegistry
) -> None:
    base = ApiClient(ClientConfig(host=api.url), qps=0, registry=registry)
    gated = base.with_write_gate(Gate(), name="open")
    assert gated.config is base.config
    assert gated.rate_limiter is base.rate_limiter
    await gated.create(PODS, pod("a"))
    await base.close()
    assert gated.closed, "closing the origin closes the session both use"
