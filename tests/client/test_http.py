"""kcontrol.client._http against scripted servers: framing, reuse, failures, proxies.

Each server here writes the exact bytes a test scripts, so every framing and failure the
client must handle (byte-at-a-time chunks, a stale keep-alive connection, a body cut short)
is produced on purpose rather than hoped for.
"""

from __future__ import annotations

import asyncio
import gzip
import ssl
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kcontrol.client import _http
from kcontrol.client._http import ConnectionPool, HttpProtocolError
from kcontrol.serving._tls import _self_signed_pair

pytestmark = pytest.mark.both_loops  # kcontrol-manager runs on uvloop

Reply = bytes | Callable[[asyncio.StreamWriter], Awaitable[None]] | None
"""Bytes to write; a coroutine that writes what it likes; None: close without answering."""


@dataclass
class Request:
    connection: int
    head: str
    body: bytes

    @property
    def line(self) -> str:
        return self.head.split("\r\n", 1)[0]

    def header(self, name: str) -> str | None:
        for line in self.head.split("\r\n")[1:]:
            key, _, value = line.partition(":")
            if key.lower() == name.lower():
                return value.strip()
        return None


@dataclass
class ScriptedServer:
    """Answers each request it reads with the next scripted reply, in order."""

    replies: deque[Reply] = field(default_factory=deque)
    requests: list[Request] = field(default_factory=list)
    connections: int = 0
    url: str = ""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        number = self.connections
        self.connections += 1
        try:
            while True:
                try:
                    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                request = Request(number, head, b"")
                length = request.header("Content-Length")
                request.body = await reader.readexactly(int(length)) if length else b""
                self.requests.append(request)
                reply = self.replies.popleft() if self.replies else None
                if reply is None:
                    return
                if isinstance(reply, bytes):
                    writer.write(reply)
                    await writer.drain()
                else:
                    await reply(writer)
        finally:
            writer.close()


@pytest.fixture
async def server() -> AsyncIterator[ScriptedServer]:
    scripted = ScriptedServer()
    tcp = await asyncio.start_server(scripted.handle, "127.0.0.1", 0)
    port = tcp.sockets[0].getsockname()[1]
    scripted.url = f"http://127.0.0.1:{port}"
    async with tcp:
        yield scripted
        tcp.close()


@pytest.fixture
async def pool(server: ScriptedServer) -> AsyncIterator[ConnectionPool]:
    connections = ConnectionPool(server.url)
    yield connections
    await connections.close()


def answer(body: bytes = b"{}", *, status: str = "200 OK", headers: str = "") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{headers}"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def chunked(*pieces: bytes, trailer: bytes = b"") -> bytes:
    body = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in pieces)
    return (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + body
        + b"0\r\n"
        + trailer
        + b"\r\n"
    )


def byte_by_byte(data: bytes) -> Callable[[asyncio.StreamWriter], Awaitable[None]]:
    async def write(writer: asyncio.StreamWriter) -> None:
        for i in range(len(data)):
            writer.write(data[i : i + 1])
            await writer.drain()
            await asyncio.sleep(0)

    return write


def then_close(data: bytes) -> Callable[[asyncio.StreamWriter], Awaitable[None]]:
    async def write(writer: asyncio.StreamWriter) -> None:
        writer.write(data)
        await writer.drain()
        writer.close()

    return write


async def get(pool: ConnectionPool, path: str = "/x", **kwargs: object) -> tuple[int, bytes]:
    response = await pool.request("GET", path, headers={"Accept": "application/json"}, **kwargs)  # type: ignore[arg-type]
    return response.status, await response.read()


# ---------------------------------------------------------------------- framing


async def test_content_length_answers_reuse_one_connection(
    server: ScriptedServer, pool: ConnectionPool
) -> None:
    server.replies.extend([answer(b'{"a":1}', headers="X-Two: a\r\nx-two: b\r\n"), answer(b"[]")])
    response = await pool.request("PUT", "/apis/x", headers={"User-Agent": "t"}, body=b'{"b":2}')
    assert (response.status, await response.read()) == (200, b'{"a":1}')
    assert response.headers["x-two"] == "a, b"
    assert await get(pool, "/y", params={"labelSelector": "app in (a,b)"}) == (200, b"[]")
    first, second = server.requests
    assert first.line == "PUT /apis/x HTTP/1.1"
    assert first.body == b'{"b":2}' and first.header("Content-Length") == "7"
    assert first.header("Host") == server.url.removeprefix("http://")
    assert second.line == "GET /y?labelSelector=app+in+%28a%2Cb%29 HTTP/1.1"
    assert server.connections == 1 and second.connection == 0


async def test_chunked_body_split_at_every_byte(
    server: ScriptedServer, pool: ConnectionPool
) -> None:
    data = chunked(b'{"kind":', b'"Pod"}', trailer=b"X-Trailer: 1\r\n")
    server.replies.extend([byte_by_byte(data), answer(b"next")])
    assert await get(pool) == (200, b'{"kind":"Pod"}')
    assert await get(pool) == (200, b"next")  # the trailer was consumed: the framing held
    assert server.connections == 1


async def test_gzip_body_is_decoded(server: ScriptedServer, pool: ConnectionPool) -> None:
    server.replies.append(
        answer(gzip.compress(b'{"big":true}'), headers="Content-Encoding: gzip\r\n")
    )
    assert await get(pool) == (200, b'{"big":true}')


@pytest.mark.parametrize(
    ("reply", "match"),
    [
        pytest.param(b"SSH-2.0-OpenSSH\r\n\r\n", "not HTTP/1.x", id="not-http"),
        pytest.param(b"HTTP/1.1 200 OK\r\nbroken\r\n\r\n", "malformed header", id="header"),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size", id="chunk"
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n", "Content-Length", id="length"
        ),
        pytest.param(
            answer(b"not gzip at all", headers="Content-Encoding: gzip\r\n"), "corrupt", id="gzip"
        ),
        pytest.param(answer(headers="Content-Encoding: br\r\n"), "content coding", id="coding"),
        pytest.param(
            then_close(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}"), "mid-answer", id="short"
        ),
        pytest.param(b"HTTP/1.1 200 OK\r\nX: " + b"a" * (1 << 20) + b"\r\n", "1 MiB", id="head"),
    ],
)
async def test_malformed_or_cut_answers_raise(
    server: ScriptedServer, pool: ConnectionPool, reply: Reply, match: str
) -> None:
    server.replies.append(reply)
    with pytest.raises(HttpProtocolError, match=match):
        await get(pool)


async def test_body_until_close_and_connection_close_are_not_reused(
    server: ScriptedServer, pool: ConnectionPool
) -> None:
    server.replies.append(then_close(b"HTTP/1.1 200 OK\r\n\r\nuntil the end"))
    assert await get(pool) == (200, b"until the end")
    server.replies.append(answer(b"1", headers="Connection: close\r\n"))
    assert await get(pool) == (200, b"1")
    server.replies.append(answer(b"2"))
    assert await get(pool) == (200, b"2")
    assert [r.connection for r in server.requests] == [0, 1, 2]


async def test_interim_answers_and_bodiless_answers(
    server: ScriptedServer, pool: ConnectionPool
) -> None:
    server.replies.extend(
        [
            b"HTTP/1.1 100 Continue\r\n\r\n" + answer(b"after"),
            b"HTTP/1.1 204 No Content\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",  # a HEAD answer: no body follows
            answer(b"last"),
        ]
    )
    assert await get(pool) == (200, b"after")
    assert await get(pool) == (204, b"")
    head = await pool.request("HEAD", "/x", headers={})
    assert (head.status, await head.read()) == (200, b"")
    assert await get(pool) == (200, b"last")
    assert server.connections == 1


# ---------------------------------------------------------------------- reuse and failures


async def test_a_stale_connection_is_retried_for_a_get_only(
    server: ScriptedServer, pool: ConnectionPool
) -> None:
    """The server closes a kept-alive connection as a request arrives on it: a GET goes
    again on a new connection; a POST may have been acted on, so it raises."""
    server.replies.extend([answer(b"1"), None, answer(b"2")])
    assert await get(pool) == (200, b"1")
    assert await get(pool) == (200, b"2")
    assert [r.connection for r in server.requests] == [0, 0, 1]
    server.replies.extend([None])
    with pytest.raises(HttpProtocolError, match="without an answer"):
        await pool.request("POST", "/x", headers={}, body=b"{}")
    assert [r.line.split()[0] for r in server.requests] == ["GET", "GET", "GET", "POST"]


async def test_a_connection_lost_before_sending_sends_nothing(
    server: ScriptedServer, pool: ConnectionPool
) -> None:
    """A connection can be lost between connecting and sending (no await between them for
    a reused one, but one for a new one): the request must fail at once, not wait for an
    answer that cannot come."""
    server.replies.append(answer())
    await get(pool)
    (conn,) = pool._idle
    conn.abort()
    with pytest.raises(HttpProtocolError, match="before the request was sent"):
        conn.send(b"GET / HTTP/1.1\r\n\r\n", None, head_only=False, stream=False)
    assert len(server.requests) == 1
    # Through the pool, such a request goes once more, on a new connection, even a write.
    server.replies.append(answer(b"sent once"))
    original = pool._acquire
    calls = 0

    async def acquire_lost_first() -> _http._Connection:
        nonlocal calls
        calls += 1
        conn = await original()
        if calls == 1:
            conn.abort()
        return conn

    pool._acquire = acquire_lost_first  # type: ignore[method-assign]
    response = await pool.request("POST", "/x", headers={}, body=b"{}")
    assert (response.status, await response.read()) == (200, b"sent once")
    assert [r.line.split()[0] for r in server.requests] == ["GET", "POST"]


async def test_cancelled_request_closes_its_connection(
    server: ScriptedServer, pool: ConnectionPool
) -> None:
    parked = asyncio.Event()

    async def park(writer: asyncio.StreamWriter) -> None:
        parked.set()
        await asyncio.sleep(3600)

    server.replies.extend([park, answer(b"fresh")])
    task = asyncio.create_task(get(pool))
    await parked.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await get(pool) == (200, b"fresh")
    assert [r.connection for r in server.requests] == [0, 1]


async def test_idle_connections_expire(
    server: ScriptedServer, pool: ConnectionPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.replies.extend([answer(b"1"), answer(b"2"), answer(b"3")])
    await get(pool)
    await get(pool)
    monkeypatch.setattr(_http, "IDLE_TIMEOUT", -1.0)
    await get(pool)
    assert [r.connection for r in server.requests] == [0, 0, 1]


async def test_connections_left_idle_after_a_burst_are_closed(
    server: ScriptedServer, pool: ConnectionPool
) -> None:
    """Reuse takes the newest idle connection, so the burst's others would never be looked
    at again: each return to the pool closes those idle past the timeout."""
    server.replies.extend([answer(b"1"), answer(b"2"), answer(b"3"), answer(b"4")])
    await asyncio.gather(get(pool), get(pool), get(pool))
    assert server.connections == 3
    oldest, middle, newest = pool._idle
    oldest.idle_since -= _http.IDLE_TIMEOUT + 1
    assert await get(pool) == (200, b"4")
    assert server.connections == 3  # the newest was reused
    assert oldest.closed and not middle.closed and not newest.closed
    assert pool._idle == [middle, newest]


async def test_check_runs_before_writing_and_stops_the_request(
    server: ScriptedServer, pool: ConnectionPool
) -> None:
    def refuse() -> None:
        raise PermissionError("gate closed")

    with pytest.raises(PermissionError):
        await pool.request("PUT", "/x", headers={}, body=b"{}", check=refuse)
    assert server.requests == []
    server.replies.append(answer())
    assert await get(pool) == (200, b"{}")  # the unused connection stayed good
    assert server.connections == 1


async def test_headers_cannot_smuggle_lines(pool: ConnectionPool) -> None:
    with pytest.raises(ValueError, match="line break"):
        await pool.request("GET", "/x", headers={"Authorization": "Bearer a\r\nX-Evil: 1"})


async def test_closed_pool_refuses_and_breaks_open_streams(
    server: ScriptedServer, pool: ConnectionPool
) -> None:
    server.replies.append(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")
    stream = await pool.request("GET", "/watch", headers={}, stream=True)
    assert await stream.read_chunk() == b"abc"
    await pool.close()
    with pytest.raises((HttpProtocolError, OSError)):
        await stream.read_chunk()
    with pytest.raises(RuntimeError, match="closed"):
        await get(pool)


# ---------------------------------------------------------------------- streams


async def test_stream_pieces_and_reuse_after_its_end(
    server: ScriptedServer, pool: ConnectionPool
) -> None:
    server.replies.extend([chunked(b"one\n", b"two\n"), answer(b"after")])
    stream = await pool.request("GET", "/watch", headers={}, stream=True)
    pieces = []
    while piece := await stream.read_chunk():
        pieces.append(piece)
    assert b"".join(pieces) == b"one\ntwo\n"
    stream.close()
    assert await get(pool) == (200, b"after")
    assert server.connections == 1


async def test_a_stream_closed_midway_drops_its_connection(
    server: ScriptedServer, pool: ConnectionPool
) -> None:
    server.replies.extend(
        [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\none\n\r\n", answer(b"x")]
    )
    stream = await pool.request("GET", "/watch", headers={}, stream=True)
    assert await stream.read_chunk() == b"one\n"
    stream.close()
    assert await get(pool) == (200, b"x")
    assert server.connections == 2


async def test_an_unread_stream_pauses_the_socket(
    server: ScriptedServer, pool: ConnectionPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_http, "HIGH_WATER", 64 * 1024)
    piece = b"x" * 16384
    sent = asyncio.Event()

    async def flood(writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in range(256):  # 4 MiB: far more than the socket buffers hold
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        sent.set()

    server.replies.append(flood)
    stream = await pool.request("GET", "/watch", headers={}, stream=True)
    await asyncio.sleep(0.3)
    assert not sent.is_set()  # the client stopped reading, so the server's writes wait
    assert stream._unread <= 64 * 1024 + 256 * 1024  # one socket read past the mark at most
    received = 0
    while chunk := await stream.read_chunk():
        assert chunk == piece[: len(chunk)]
        received += len(chunk)
    assert received == 256 * len(piece) and sent.is_set()


# ---------------------------------------------------------------------- proxies


async def test_http_through_a_proxy_uses_absolute_form(server: ScriptedServer) -> None:
    server.replies.append(answer(b"via proxy"))
    proxy = server.url.replace("http://", "http://user:p%40ss@")
    pool = ConnectionPool("http://api.example:8080/prefix/", proxy=proxy)
    try:
        assert await get(pool, "/api/v1") == (200, b"via proxy")
    finally:
        await pool.close()
    (request,) = server.requests
    assert request.line == "GET http://api.example:8080/prefix/api/v1 HTTP/1.1"
    assert request.header("Host") == "api.example:8080"
    assert request.header("Proxy-Authorization") == "Basic dXNlcjpwQHNz"  # user:p@ss


@pytest.fixture
def tls(tmp_path: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server context, client context trusting it) for the name api.example."""
    cert_pem, key_pem = _self_signed_pair(["api.example"])
    (tmp_path / "tls.crt").write_bytes(cert_pem)
    (tmp_path / "tls.key").write_bytes(key_pem)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    return server_ctx, ssl.create_default_context(cafile=str(tmp_path / "tls.crt"))


async def test_https_through_a_connect_tunnel(
    server: ScriptedServer, tls: tuple[ssl.SSLContext, ssl.SSLContext]
) -> None:
    server_ctx, client_ctx = tls
    server.replies.append(answer(b"secret"))
    api = await asyncio.start_server(server.handle, "127.0.0.1", 0, ssl=server_ctx)
    api_port = api.sockets[0].getsockname()[1]
    connects: list[str] = []

    async def tunnel(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        connects.append(head)
        upstream_r, upstream_w = await asyncio.open_connection("127.0.0.1", api_port)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, upstream_w), pipe(upstream_r, writer))

    proxy = await asyncio.start_server(tunnel, "127.0.0.1", 0)
    proxy_port = proxy.sockets[0].getsockname()[1]
    # The URL names the proxy's side of the tunnel; the certificate is checked for the
    # server name, as tls-server-name asks.
    pool = ConnectionPool(
        f"https://127.0.0.1:{api_port}",
        ssl_context=client_ctx,
        server_name="api.example",
        proxy=f"http://127.0.0.1:{proxy_port}",
    )
    async with api, proxy:
        try:
            assert await get(pool) == (200, b"secret")
        finally:
            await pool.close()
    assert connects[0].startswith(f"CONNECT 127.0.0.1:{api_port} HTTP/1.1\r\n")
    assert server.requests[0].line == "GET /x HTTP/1.1"  # origin-form inside the tunnel


async def test_a_proxy_refusing_the_tunnel_is_an_error(server: ScriptedServer) -> None:
    server.replies.append(
        b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n"
    )
    pool = ConnectionPool(
        "https://api.example", ssl_context=ssl.create_default_context(), proxy=server.url
    )
    try:
        with pytest.raises(HttpProtocolError, match="refused the tunnel: 407"):
            await get(pool)
    finally:
        await pool.close()


def test_unsupported_proxies_and_urls_are_refused() -> None:
    with pytest.raises(ValueError, match="only http://"):
        ConnectionPool("http://api", proxy="socks5://proxy:1080")
    with pytest.raises(ValueError, match="SSL context"):
        ConnectionPool("https://api")
    with pytest.raises(ValueError, match="not an http"):
        ConnectionPool("ftp://api")
