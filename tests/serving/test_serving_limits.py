"""The secure port (and the plain-HTTP port) under slow and idle clients: a request header
must be complete within the header timeout (and a TLS handshake too), a kept-alive connection
is closed once idle, a header over the size cap is answered 431, and at the connection cap
the connection waiting longest without a request makes room - unless every connection has a
request in progress, then the new one is refused. The timeouts are shortened here; the
defaults are kube-controller-manager's (32 s, 90 s, 1 MiB)."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Callable

import pytest

from kcontrol.serving._http import App, Request, Response
from kcontrol.serving._listener import (
    IDLE_TIMEOUT,
    MAX_HEADER_BYTES,
    READ_HEADER_TIMEOUT,
    ConnectionLimits,
    Listener,
)
from kcontrol.serving._tls import ServingTLS, ensure_self_signed
from tests.serving.secure_helpers import (
    closed_by_server,
    insecure_client,
    listening,
    read_response,
    request_bytes,
    whoami_app,
)

SCHEMES = pytest.mark.parametrize("scheme", ["http", "https"])
# kcontrol-manager runs on uvloop when installed, whose transports are not asyncio's classes.
pytestmark = pytest.mark.both_loops

HALF_A_HEADER = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: "
WITHIN = 20.0  # seconds a closing may take here, timeouts being well under a second


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> ServingTLS:
    cert, key = ensure_self_signed(tmp_path_factory.mktemp("limits"), ["127.0.0.1"])
    serving = ServingTLS(cert, key)
    serving.load()
    return serving


Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class Served:
    """An application served by the listener; :meth:`connect` opens connections to it."""

    def __init__(self, listener: Listener, scheme: str) -> None:
        self.listener = listener
        self._scheme = scheme
        self._writers: list[asyncio.StreamWriter] = []

    async def connect(self) -> Connection:
        context = insecure_client() if self._scheme == "https" else None
        reader, writer = await asyncio.open_connection("127.0.0.1", self.listener.port, ssl=context)
        self._writers.append(writer)
        return reader, writer

    def close(self) -> None:
        for writer in self._writers:
            writer.close()


@contextlib.asynccontextmanager
async def served(
    scheme: str, tls: ServingTLS, limits: ConnectionLimits, app: App | None = None
) -> AsyncIterator[Served]:
    """``app`` (default: :func:`whoami_app`) served over ``scheme`` under ``limits``."""
    async with listening(
        app or whoami_app(), tls=tls if scheme == "https" else None, limits=limits
    ) as listener:
        server = Served(listener, scheme)
        try:
            yield server
        finally:
            server.close()


async def eventually(condition: Callable[[], bool], within: float = WITHIN) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not condition():
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


async def get(connection: Connection, path: str = "/healthz") -> tuple[int, bytes]:
    reader, writer = connection
    writer.write(request_bytes(path))
    await writer.drain()
    return await read_response(reader)


def test_the_defaults_are_kube_controller_managers() -> None:
    limits = ConnectionLimits()
    assert (READ_HEADER_TIMEOUT, IDLE_TIMEOUT, MAX_HEADER_BYTES) == (32.0, 90.0, 1 << 20)
    assert limits.header_timeout == READ_HEADER_TIMEOUT
    assert limits.idle_timeout == IDLE_TIMEOUT
    assert limits.max_header_bytes == MAX_HEADER_BYTES
    assert limits.max_connections == 256


@SCHEMES
async def test_half_sent_headers_are_closed_after_the_header_timeout(
    scheme: str, tls: ServingTLS
) -> None:
    limits = ConnectionLimits(header_timeout=1.0)
    async with served(scheme, tls, limits) as server:
        connections = []
        for _ in range(50):
            reader, writer = await server.connect()
            writer.write(HALF_A_HEADER)
            with contextlib.suppress(ConnectionError):  # already closed: as good
                await writer.drain()
            connections.append((reader, writer))
        closed = await asyncio.gather(*(closed_by_server(r, WITHIN) for r, _ in connections))
        assert all(closed), f"{closed.count(False)} of 50 still open"
        assert await eventually(lambda: len(server.listener) == 0)
        assert await get(await server.connect()) == (200, b"ok"), "and the port still serves"


@SCHEMES
async def test_a_header_sent_a_byte_at_a_time_is_closed_all_the_same(
    scheme: str, tls: ServingTLS
) -> None:
    # The header timeout runs from the first byte: bytes arriving do not extend it.
    limits = ConnectionLimits(header_timeout=0.5)
    async with served(scheme, tls, limits) as server:
        reader, writer = await server.connect()

        async def dribble() -> None:
            with contextlib.suppress(ConnectionError, ssl.SSLError):
                for byte in HALF_A_HEADER + b"x" * 1000:
                    writer.write(bytes([byte]))
                    await writer.drain()
                    await asyncio.sleep(0.05)

        dribbling = asyncio.create_task(dribble())
        try:
            assert await closed_by_server(reader, WITHIN)
        finally:
            dribbling.cancel()


@SCHEMES
async def test_a_connection_that_sends_nothing_is_closed(scheme: str, tls: ServingTLS) -> None:
    limits = ConnectionLimits(header_timeout=0.5)
    async with listening(
        whoami_app(), tls=tls if scheme == "https" else None, limits=limits
    ) as listener:
        # A bare TCP connection: on the TLS port, a handshake that never starts.
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
        try:
            assert await closed_by_server(reader, WITHIN)
            assert await eventually(lambda: len(listener) == 0)
        finally:
            writer.close()


@SCHEMES
async def test_a_kept_alive_connection_is_closed_once_idle(scheme: str, tls: ServingTLS) -> None:
    limits = ConnectionLimits(header_timeout=30.0, idle_timeout=0.5)
    async with served(scheme, tls, limits) as server:
        busy = await server.connect()
        for _ in range(8):  # a request every 0.2 s keeps it open past the idle timeout
            assert await get(busy) == (200, b"ok")
            await asyncio.sleep(0.2)
        idle = await server.connect()
        assert await get(idle) == (200, b"ok")
        assert await closed_by_server(idle[0], WITHIN), "closed by the idle timeout"


@SCHEMES
async def test_a_header_over_the_cap_is_431_and_closes_the_connection(
    scheme: str, tls: ServingTLS
) -> None:
    limits = ConnectionLimits(max_header_bytes=4096)
    async with served(scheme, tls, limits) as server:
        assert await get(await server.connect(), "/whoami") == (200, b"anonymous")
        reader, writer = await server.connect()
        writer.write(request_bytes("/healthz", "X-Big: " + "a" * 5000))
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
        assert await closed_by_server(reader, WITHIN)


@SCHEMES
async def test_the_header_cap_is_the_only_limit_on_header_lines(
    scheme: str, tls: ServingTLS
) -> None:
    # As in Go: a 64 KiB header line is fine under the 1 MiB cap (aiohttp alone: 8 KiB).
    async with served(scheme, tls, ConnectionLimits()) as server:
        connection = await server.connect()
        reader, writer = connection
        writer.write(request_bytes("/healthz", "X-Long: " + "a" * (64 << 10)))
        await writer.drain()
        assert await read_response(reader) == (200, b"ok")


@SCHEMES
async def test_at_the_cap_the_longest_waiting_connection_makes_room(
    scheme: str, tls: ServingTLS
) -> None:
    limits = ConnectionLimits(header_timeout=60.0, max_connections=4)
    async with served(scheme, tls, limits) as server:
        listener = server.listener
        held = []
        for _ in range(4):
            connection = await server.connect()
            connection[1].write(HALF_A_HEADER)
            await connection[1].drain()
            held.append(connection)
        assert await eventually(lambda: len(listener) == 4)

        # A scrape at the cap is served: the oldest half-sent header made room.
        assert await get(await server.connect()) == (200, b"ok")
        assert await closed_by_server(held[0][0], WITHIN)
        assert len(listener) <= 4
        # The other three are still open: their headers complete and are answered.
        for reader, writer in held[1:]:
            writer.write(b"1\r\n\r\n")
            await writer.drain()
            assert await read_response(reader) == (200, b"ok")


@SCHEMES
async def test_when_every_connection_has_a_request_in_progress_new_ones_are_refused(
    scheme: str, tls: ServingTLS
) -> None:
    release = asyncio.Event()
    entered = 0

    async def slow(request: Request) -> Response:
        nonlocal entered
        entered += 1
        await release.wait()
        return Response.text("done")

    app = whoami_app()
    app.add("/slow", slow)
    limits = ConnectionLimits(header_timeout=60.0, max_connections=3)
    async with served(scheme, tls, limits, app) as server:
        busy = []
        for _ in range(3):
            connection = await server.connect()
            connection[1].write(request_bytes("/slow"))
            await connection[1].drain()
            busy.append(connection)
        assert await eventually(lambda: entered == 3)

        try:
            reader, writer = await server.connect()
        except (ConnectionError, ssl.SSLError):
            pass  # refused during the TLS handshake
        else:
            writer.write(request_bytes("/healthz"))
            with contextlib.suppress(ConnectionError, ssl.SSLError):
                await writer.drain()
            assert await closed_by_server(reader, WITHIN)
            assert reader.at_eof()
        assert entered == 3

        release.set()
        for connection in busy:
            assert await read_response(connection[0]) == (200, b"done")
        assert await get(await server.connect()) == (200, b"ok"), "room again once they are done"


def test_limits_must_be_positive() -> None:
    for bad in (
        {"header_timeout": 0.0},
        {"idle_timeout": -1.0},
        {"max_header_bytes": 0},
        {"max_connections": 0},
    ):
        with pytest.raises(ValueError):
            ConnectionLimits(**bad)  # type: ignore[arg-type]
