"""ApiClient.watch against a local server: parameters, framing, ERROR events, broken streams."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp import web
from client_fakes import FakeApiServer, event_line, status_body
from prometheus_client import CollectorRegistry

from kcontrol.client import PODS, ApiClient, ClientConfig, ListOptions, WatchEvent
from kcontrol.clock import FakeClock
from kcontrol.errors import ApiConnectionError, Gone, InternalError, TooManyRequests

pytestmark = pytest.mark.both_loops  # kcontrol-manager runs on uvloop

POD_PATH = "/api/v1/namespaces/ns/pods"


def pod(name: str, rv: str, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
        **extra,
    }


def stream(chunks: list[bytes], end: str = "close") -> Any:
    """A watch handler writing ``chunks``, then closing cleanly ("close"), dropping the
    connection mid-body ("drop") or hanging until teardown ("hang")."""

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for chunk in chunks:
            await response.write(chunk)
            await asyncio.sleep(0)
        if end == "drop":
            assert request.transport is not None
            request.transport.close()
        elif end == "hang":
            await asyncio.sleep(3600)
        else:
            await response.write_eof()
        return response

    return handler


async def collect(client: ApiClient, options: ListOptions | None = None) -> list[WatchEvent]:
    async with client.watch(PODS, namespace="ns", options=options) as events:
        return [ev async for ev in events]


async def test_watch_parameters(api: FakeApiServer, client: ApiClient) -> None:
    api.route("GET", POD_PATH, stream([]))
    await collect(
        client,
        ListOptions(
            label_selector="app=web",
            field_selector="metadata.name=a",
            resource_version="42",
            resource_version_match="NotOlderThan",
            timeout_seconds=290,
            send_initial_events=True,
        ),
    )
    assert api.requests[-1].query == {
        "watch": "true",
        "labelSelector": "app=web",
        "fieldSelector": "metadata.name=a",
        "resourceVersion": "42",
        "resourceVersionMatch": "NotOlderThan",
        "timeoutSeconds": "290",
        "allowWatchBookmarks": "true",
        "sendInitialEvents": "true",
    }


async def test_watch_parameters_minimal(api: FakeApiServer, client: ApiClient) -> None:
    api.route("GET", "/api/v1/pods", stream([]))
    async with client.watch(
        PODS, options=ListOptions(allow_watch_bookmarks=False, send_initial_events=False)
    ) as ev:
        assert [e async for e in ev] == []
    assert api.requests[-1].query == {"watch": "true", "sendInitialEvents": "false"}


async def test_events_in_order_and_stream_end(api: FakeApiServer, client: ApiClient) -> None:
    bookmark = {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "13"}}
    chunks = [
        event_line("ADDED", pod("a", "10")),
        event_line("MODIFIED", pod("a", "11"))[:7],  # a frame split across chunks
        event_line("MODIFIED", pod("a", "11"))[7:] + event_line("DELETED", pod("a", "12")),
        event_line("BOOKMARK", bookmark),
    ]
    api.route("GET", POD_PATH, stream(chunks))
    events = await collect(client)
    assert [(e.type, e.object["metadata"]["resourceVersion"]) for e in events] == [
        ("ADDED", "10"),
        ("MODIFIED", "11"),
        ("DELETED", "12"),
        ("BOOKMARK", "13"),
    ]
    assert events[0].object == pod("a", "10")


async def test_line_larger_than_aiohttp_limit(api: FakeApiServer, client: ApiClient) -> None:
    huge = pod("big", "20", data={"blob": "x" * (300 * 1024)})
    line = event_line("ADDED", huge)
    chunks = [line[i : i + 8192] for i in range(0, len(line), 8192)]
    api.route("GET", POD_PATH, stream([*chunks, event_line("MODIFIED", pod("small", "21"))]))
    events = await collect(client)
    assert [e.type for e in events] == ["ADDED", "MODIFIED"]
    assert events[0].object == huge


async def test_error_event_gone(api: FakeApiServer, client: ApiClient) -> None:
    error = event_line("ERROR", status_body(410, "Expired", "too old resource version: 5 (90)"))
    api.route("GET", POD_PATH, stream([event_line("ADDED", pod("a", "10")), error]))
    seen: list[str] = []
    with pytest.raises(Gone) as info:
        async with client.watch(
            PODS, namespace="ns", options=ListOptions(resource_version="5")
        ) as events:
            async for ev in events:
                seen.append(ev.type)
    assert seen == ["ADDED"]
    assert info.value.code == 410
    assert "too old" in info.value.message


async def test_error_event_too_many_requests(api: FakeApiServer, client: ApiClient) -> None:
    status = status_body(429, "TooManyRequests", details={"retryAfterSeconds": 1})
    api.route("GET", POD_PATH, stream([event_line("ERROR", status)]))
    with pytest.raises(TooManyRequests) as info:
        await collect(client)
    assert info.value.retry_after == 1.0


async def test_connection_drop_mid_stream(api: FakeApiServer, client: ApiClient) -> None:
    partial = event_line("MODIFIED", pod("a", "11"))[:20]
    api.route("GET", POD_PATH, stream([event_line("ADDED", pod("a", "10")), partial], "drop"))
    seen: list[str] = []
    with pytest.raises(ApiConnectionError):
        async with client.watch(PODS, namespace="ns") as events:
            async for ev in events:
                seen.append(ev.type)
    assert seen == ["ADDED"]


async def test_stream_ending_mid_frame(api: FakeApiServer, client: ApiClient) -> None:
    partial = event_line("MODIFIED", pod("a", "11"))[:20]
    api.route("GET", POD_PATH, stream([partial]))
    with pytest.raises(ApiConnectionError, match="malformed"):
        await collect(client)


async def test_last_frame_without_newline_is_delivered(
    api: FakeApiServer, client: ApiClient
) -> None:
    api.route("GET", POD_PATH, stream([event_line("ADDED", pod("a", "10")).rstrip(b"\n")]))
    assert [e.type for e in await collect(client)] == ["ADDED"]


@pytest.mark.parametrize(
    ("code", "reason", "error"),
    [(410, "Expired", Gone), (429, "TooManyRequests", TooManyRequests)],
)
async def test_watch_refused_on_entry(
    api: FakeApiServer, client: ApiClient, code: int, reason: str, error: type[Exception]
) -> None:
    api.respond(
        "GET", POD_PATH, status_body(code, reason), status=code, headers={"Retry-After": "2"}
    )
    with pytest.raises(error) as info:
        async with client.watch(PODS, namespace="ns"):
            pytest.fail("entered a refused watch")
    assert getattr(info.value, "retry_after", None) == 2.0


async def test_leaving_the_block_closes_a_hanging_watch(
    api: FakeApiServer, client: ApiClient
) -> None:
    api.route("GET", POD_PATH, stream([event_line("ADDED", pod("a", "10"))], "hang"))
    async with client.watch(PODS, namespace="ns") as events:
        first = await anext(events)
    assert first.type == "ADDED"
    # the connection is gone, and the client is still fine for the next request
    api.respond("GET", f"{POD_PATH}/a", pod("a", "10"))
    assert (await client.get(PODS, "a", namespace="ns"))["metadata"]["name"] == "a"


async def test_cancelling_a_reader_propagates(api: FakeApiServer, client: ApiClient) -> None:
    api.route("GET", POD_PATH, stream([event_line("ADDED", pod("a", "10"))], "hang"))
    got_first = asyncio.Event()

    async def reader() -> None:
        async with client.watch(PODS, namespace="ns") as events:
            async for _ in events:
                got_first.set()

    task = asyncio.create_task(reader())
    await got_first.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_caller_inactivity_timeout(api: FakeApiServer, client: ApiClient) -> None:
    api.route("GET", POD_PATH, stream([], "hang"))
    with pytest.raises(TimeoutError):
        async with client.watch(PODS, namespace="ns") as events:
            async with asyncio.timeout(0.2):
                await anext(events)


async def test_watch_takes_a_rate_limiter_token(
    api: FakeApiServer, registry: CollectorRegistry
) -> None:
    api.route("GET", POD_PATH, stream([]))
    clock = FakeClock()
    async with ApiClient(
        ClientConfig(host=api.url), qps=1, burst=1, registry=registry, clock=clock
    ) as c:
        await collect(c)
        second = asyncio.create_task(collect(c))
        await asyncio.sleep(0.05)
        assert not second.done()
        clock.step(1)
        assert await second == []
    host = api.url.removeprefix("http://")
    assert (
        registry.get_sample_value(
            "rest_client_requests_total", {"code": "200", "method": "GET", "host": host}
        )
        == 2
    )


async def test_watch_refused_with_a_non_status_body(api: FakeApiServer, client: ApiClient) -> None:
    api.respond("GET", POD_PATH, {"not": "a status"}, status=500)
    with pytest.raises(InternalError) as info:
        async with client.watch(PODS, namespace="ns"):
            pytest.fail("entered a refused watch")
    assert info.value.code == 500
