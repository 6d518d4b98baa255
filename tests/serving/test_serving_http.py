"""The manager's own HTTP/1.1 server (kcontrol.serving._http and the listener's
connections): request parsing, the answers to malformed and unusual requests, keep-alive,
pipelining, HEAD, bodies that are never read, and clients that read no answers."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import AsyncIterator, Callable

import pytest

from kcontrol.serving._http import (
    App,
    BadRequest,
    Request,
    Response,
    parse_request,
    render_response,
)
from kcontrol.serving._listener import ConnectionLimits, Listener
from tests.serving.secure_helpers import closed_by_server, listening, read_response

pytestmark = pytest.mark.both_loops

WITHIN = 10.0


async def eventually(condition: Callable[[], bool]) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WITHIN
    while not condition():
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


# -- parsing ------------------------------------------------------------------------------------


def test_a_request_is_parsed_from_its_header() -> None:
    request = parse_request(
        b"GET /readyz/informer-sync?verbose&exclude=a&exclude=b%20c HTTP/1.1\r\n"
        b"Host: localhost\r\n"
        b"Authorization:   Bearer abc  \r\n"
        b"authorization: Bearer second\r\n"
        b"Accept: text/plain"
    )
    assert (request.method, request.path, request.version) == (
        "GET",
        "/readyz/informer-sync",
        (1, 1),
    )
    assert request.query == {"verbose": [""], "exclude": ["a", "b c"]}
    assert request.headers["authorization"] == "Bearer abc", "the first value, trimmed"
    assert request.headers["accept"] == "text/plain"
    assert request.keep_alive and not request.has_body


def test_bare_line_feeds_and_absolute_targets_are_accepted() -> None:
    request = parse_request(b"GET http://localhost:10257/metrics%2Fx?a=1 HTTP/1.0\nHost: x")
    assert (request.path, request.query, request.version) == ("/metrics/x", {"a": ["1"]}, (1, 0))
    assert not request.keep_alive, "HTTP/1.0 closes unless asked to keep alive"
    assert parse_request(b"GET / HTTP/1.0\r\nConnection: Keep-Alive").keep_alive
    assert not parse_request(b"GET / HTTP/1.1\r\nConnection: close").keep_alive


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (b"GET /", 400),
        (b"GET  / HTTP/1.1", 400),
        (b"GET / HTTP/1.1 extra", 400),
        (b"G(T / HTTP/1.1", 400),
        (b"GET / FTP/1.1", 400),
        (b"GET / HTTP/2.0", 505),
        (b"GET / HTTP/1.1\r\nNo-Colon", 400),
        (b"GET / HTTP/1.1\r\nSpace : before colon", 400),
        (b"GET / HTTP/1.1\r\n folded: line", 400),
        (b"GET relative HTTP/1.1", 400),
        (b"GET /\xff HTTP/1.1", 400),
    ],
)
def test_malformed_requests_are_refused(head: bytes, status: int) -> None:
    with pytest.raises(BadRequest) as raised:
        parse_request(head)
    assert raised.value.status == status


def test_a_body_is_announced_by_a_length_or_a_transfer_encoding() -> None:
    assert parse_request(b"GET / HTTP/1.1\r\nContent-Length: 5").has_body
    assert parse_request(b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked").has_body
    assert not parse_request(b"GET / HTTP/1.1\r\nContent-Length: 0").has_body


def test_a_response_has_its_length_and_date_and_head_drops_the_body() -> None:
    response = Response.text("hello", 200, {"X-A": "b"})
    full = render_response(response, head_only=False, close=False)
    head, _, body = full.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 200 OK"
    assert "Content-Length: 5" in lines and "X-A: b" in lines
    assert any(line.startswith("Date: ") for line in lines)
    assert "Connection: close" not in lines
    assert body == b"hello"
    only_head = render_response(response, head_only=True, close=True)
    assert only_head.endswith(b"Connection: close\r\n\r\n")
    assert b"Content-Length: 5" in only_head


# -- serving ------------------------------------------------------------------------------------


def app_of(**handlers: Response) -> App:
    app = App()
    for name, response in handlers.items():

        async def handler(request: Request, response: Response = response) -> Response:
            return response

        app.add(f"/{name}", handler)
    return app


@contextlib.asynccontextmanager
async def connected(
    app: App, limits: ConnectionLimits | None = None
) -> AsyncIterator[tuple[Listener, asyncio.StreamReader, asyncio.StreamWriter]]:
    async with listening(app, limits=limits) as listener:
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
        try:
            yield listener, reader, writer
        finally:
            writer.close()


async def head_and_body(reader: asyncio.StreamReader) -> tuple[str, bytes]:
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    length = next(
        int(line.split(":")[1]) for line in head.split("\r\n") if line.startswith("Content-Length")
    )
    return head, await reader.readexactly(length)


async def test_pipelined_requests_are_answered_in_order_on_one_connection() -> None:
    async with connected(app_of(a=Response.text("A"), b=Response.text("B"))) as (_, reader, writer):
        writer.write(
            b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
            b"\r\n"  # a stray blank line between requests is ignored
            b"GET /b HTTP/1.1\nHost: x\n\n"
            b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        assert [await read_response(reader) for _ in range(3)] == [
            (200, b"A"),
            (200, b"B"),
            (200, b"A"),
        ]


async def test_unknown_paths_methods_and_head() -> None:
    async with connected(app_of(a=Response.text("A"))) as (_, reader, writer):
        writer.write(b"GET /nope HTTP/1.1\r\n\r\n")
        assert await read_response(reader) == (404, b"404 page not found\n")
        writer.write(b"DELETE /a HTTP/1.1\r\n\r\n")
        head, _body = await head_and_body(reader)
        assert head.startswith("HTTP/1.1 405 ") and "Allow: GET, HEAD" in head
        writer.write(b"HEAD /a HTTP/1.1\r\n\r\n")
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        assert head.startswith("HTTP/1.1 200 ") and "Content-Length: 1" in head
        writer.write(b"GET /a HTTP/1.1\r\n\r\n")
        assert await read_response(reader) == (200, b"A"), "no body followed the HEAD answer"


async def test_a_request_with_a_body_is_answered_and_its_connection_closed() -> None:
    async with connected(app_of(a=Response.text("A"))) as (_, reader, writer):
        # Were the body read as the next request, /nope would be answered too.
        writer.write(b"GET /a HTTP/1.1\r\nContent-Length: 28\r\n\r\nGET /nope HTTP/1.1\r\n\r\n")
        head, body = await head_and_body(reader)
        assert body == b"A" and "Connection: close" in head
        assert await closed_by_server(reader, WITHIN)
        assert await reader.read() == b""


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET / HTTP/3.0\r\n\r\n", 505),
        (b"GET /a\r\n\r\n", 400),
        (b"GET /a HTTP/1.1\r\nBad Header: x\r\n\r\n", 400),
    ],
)
async def test_a_malformed_request_is_refused_and_its_connection_closed(
    request_bytes: bytes, status: int
) -> None:
    async with connected(app_of(a=Response.text("A"))) as (_, reader, writer):
        writer.write(request_bytes + b"GET /a HTTP/1.1\r\n\r\n")
        head, _ = await head_and_body(reader)
        assert head.startswith(f"HTTP/1.1 {status} ") and "Connection: close" in head
        assert await closed_by_server(reader, WITHIN)


async def test_http_1_0_closes_after_its_answer() -> None:
    async with connected(app_of(a=Response.text("A"))) as (_, reader, writer):
        writer.write(b"GET /a HTTP/1.0\r\n\r\n")
        assert await read_response(reader) == (200, b"A")
        assert await closed_by_server(reader, WITHIN)


async def test_a_failing_handler_is_a_500_and_the_connection_goes_on() -> None:
    app = app_of(a=Response.text("A"))

    async def broken(request: Request) -> Response:
        raise RuntimeError("bug")

    app.add("/broken", broken)
    async with connected(app) as (_, reader, writer):
        writer.write(b"GET /broken HTTP/1.1\r\n\r\nGET /a HTTP/1.1\r\n\r\n")
        assert await read_response(reader) == (500, b"500 internal server error\n")
        assert await read_response(reader) == (200, b"A")


async def test_a_client_that_hangs_up_cancels_its_request() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def slow(request: Request) -> Response:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return Response.text("never")

    app = App()
    app.add("/slow", slow)
    async with connected(app) as (listener, _reader, writer):
        writer.write(b"GET /slow HTTP/1.1\r\n\r\n")
        await asyncio.wait_for(started.wait(), WITHIN)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()  # a reset: the connection is gone
        await asyncio.wait_for(cancelled.wait(), WITHIN)
        assert await eventually(lambda: len(listener) == 0)


async def test_a_client_that_stops_sending_still_gets_its_answer() -> None:
    release = asyncio.Event()

    async def slow(request: Request) -> Response:
        await release.wait()
        return Response.text("done")

    app = App()
    app.add("/slow", slow)
    async with connected(app) as (_listener, reader, writer):
        writer.write(b"GET /slow HTTP/1.1\r\n\r\n")
        writer.write_eof()  # half-closed, as `nc -N` does
        await asyncio.sleep(0.2)
        release.set()
        head, body = await head_and_body(reader)
        assert body == b"done" and "Connection: close" in head
        assert await closed_by_server(reader, WITHIN)


async def test_a_client_that_reads_no_answers_gets_no_more_and_is_closed() -> None:
    big = Response(200, b"x" * (4 << 20))
    limits = ConnectionLimits(idle_timeout=1.0)
    async with connected(app_of(big=big), limits) as (listener, _reader, writer):
        # Keep the client's receive window small, so the server's send buffer fills.
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        for _ in range(50):
            writer.write(b"GET /big HTTP/1.1\r\n\r\n")
        await writer.drain()
        assert await eventually(lambda: len(listener) == 0), (
            "the connection is closed once its send buffer stayed full"
        )


async def test_stopping_waits_for_a_request_in_progress() -> None:
    started, release = asyncio.Event(), asyncio.Event()

    async def slow(request: Request) -> Response:
        started.set()
        await release.wait()
        return Response.text("done")

    app = App()
    app.add("/slow", slow)
    async with listening(app) as listener:
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
        writer.write(b"GET /slow HTTP/1.1\r\n\r\n")
        await writer.drain()
        await asyncio.wait_for(started.wait(), WITHIN)
        closing = asyncio.create_task(listener.close(5.0))
        await asyncio.sleep(0.1)
        release.set()
        await asyncio.wait_for(closing, WITHIN)
        assert await read_response(reader) == (200, b"done")
        assert await closed_by_server(reader, WITHIN)
        writer.close()
