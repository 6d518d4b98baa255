"""The webhook server under the API server's connection pattern: one HTTP/1.1 connection per
call in flight, kept alive and reused. A burst of several hundred calls must not make the
server close a kept-alive connection the API server is about to reuse (it would fail that
call with ``broken pipe``; Go never resends a POST) - found by bench/webhooks at 200
concurrent creates, where the secure port's cap of 256 connections closed idle ones."""

from __future__ import annotations

import asyncio
import resource
import ssl

import orjson
import pytest

from kcontrol.webhook import AdmissionWebhook
from kcontrol.webhook._server import WEBHOOK_MAX_CONNECTIONS, raise_open_file_limit
from tests.webhook.webhook_helpers import serving

CONNECTIONS = 400
"""Above the secure port's cap (256), below the API server's default in-flight ceiling."""

REVIEW = orjson.dumps(
    {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "0f4c6d2e-8c5e-4d9a-9b71-2c1f0b9e6a10",
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "operation": "CREATE",
            "namespace": "default",
            "name": "c",
            "userInfo": {"username": "alice"},
            "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
        },
    }
)
REQUEST = (
    b"POST /validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b"Content-Length: " + str(len(REVIEW)).encode() + b"\r\n\r\n" + REVIEW
)


async def call(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> dict[str, object]:
    """One review on a kept-alive connection; its response."""
    writer.write(REQUEST)
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    answer: dict[str, object] = orjson.loads(await reader.readexactly(length))
    return answer


async def test_a_burst_of_kept_alive_connections_loses_none() -> None:
    raise_open_file_limit(CONNECTIONS)
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < 2 * CONNECTIONS + 100:
        pytest.skip(f"{soft} open files allowed: too few for both ends of {CONNECTIONS}")
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    async with serving(validate=AdmissionWebhook(validate=lambda request: [])) as server:
        connections = []
        try:
            for _ in range(CONNECTIONS):  # opened and used one after another, then left idle
                reader, writer = await asyncio.open_connection(
                    "127.0.0.1", server.port, ssl=context
                )
                connections.append((reader, writer))
                await call(reader, writer)
            # every connection is reused, as the API server's pool reuses its idle ones
            answers = await asyncio.gather(*(call(r, w) for r, w in connections))
            assert all(a["response"]["allowed"] for a in answers)  # type: ignore[index]
        finally:
            for _, writer in connections:
                writer.close()


def test_the_cap_is_above_the_api_servers_requests_in_flight() -> None:
    assert WEBHOOK_MAX_CONNECTIONS > 400 + 200
