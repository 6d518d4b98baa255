"""Request bodies, read only by a listener that allows them (the webhook server): a POST's
body of Content-Length bytes reaches the handler and the connection stays alive; a body over
the cap is 413, one without a length 411, one that never completes is closed after the
timeout; a listener without ``max_body_bytes`` answers and closes, the body unread."""

from __future__ import annotations

import asyncio

import pytest

from kcontrol.serving._http import App, Request, Response
from kcontrol.serving._listener import ConnectionLimits, Listener
from kcontrol.serving._tls import ServingTLS, ensure_self_signed
from tests.serving.secure_helpers import closed_by_server, insecure_client, listening, read_response

pytestmark = pytest.mark.both_loops

WITHIN = 20.0


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> ServingTLS:
    cert, key = ensure_self_signed(tmp_path_factory.mktemp("bodies"), ["127.0.0.1"])
    serving = ServingTLS(cert, key)
    serving.load()
    return serving


def echo_app() -> App:
    app = App()

    async def echo(request: Request) -> Response:
        return Response(200, request.body, {"Content-Type": "application/octet-stream"})

    app.add("/echo", echo, methods=("POST",))
    return app


def post(path: str, body: bytes, *headers: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: localhost", *headers]
    if not any(h.lower().startswith(("content-length", "transfer-encoding")) for h in headers):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def connect(listener: Listener) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", listener.port, ssl=insecure_client())


async def test_a_body_reaches_the_handler_and_the_connection_stays(tls: ServingTLS) -> None:
    limits = ConnectionLimits(max_body_bytes=1 << 20)
    async with listening(echo_app(), tls=tls, limits=limits) as listener:
        reader, writer = await connect(listener)
        big = b"x" * 200_000  # many TLS records
        writer.write(post("/echo", b'{"a": 1}') + post("/echo", big))  # pipelined
        await writer.drain()
        assert await read_response(reader) == (200, b'{"a": 1}')
        assert await read_response(reader) == (200, big)
        writer.write(post("/echo", b"again"))
        await writer.drain()
        assert await read_response(reader) == (200, b"again"), "kept alive after bodies"
        writer.close()


@pytest.mark.parametrize(
    ("request_", "status"),
    [
        pytest.param(post("/echo", b"x" * 2000), 413, id="over the cap"),
        pytest.param(post("/echo", b"", "Transfer-Encoding: chunked"), 411, id="chunked"),
        pytest.param(post("/echo", b"", "Content-Length: ten"), 400, id="bad length"),
    ],
)
async def test_bodies_it_will_not_read_are_refused_and_closed(
    tls: ServingTLS, request_: bytes, status: int
) -> None:
    limits = ConnectionLimits(max_body_bytes=1000)
    async with listening(echo_app(), tls=tls, limits=limits) as listener:
        reader, writer = await connect(listener)
        writer.write(request_)
        await writer.drain()
        assert (await read_response(reader))[0] == status
        assert await closed_by_server(reader, WITHIN)
        writer.close()


async def test_a_body_that_never_completes_is_closed_after_the_timeout(tls: ServingTLS) -> None:
    limits = ConnectionLimits(max_body_bytes=1000, header_timeout=0.5)
    async with listening(echo_app(), tls=tls, limits=limits) as listener:
        reader, writer = await connect(listener)
        writer.write(post("/echo", b"", "Content-Length: 100") + b"only part")
        await writer.drain()
        assert await closed_by_server(reader, WITHIN)
        writer.close()


async def test_a_listener_without_bodies_answers_and_closes(tls: ServingTLS) -> None:
    async with listening(echo_app(), tls=tls, limits=ConnectionLimits()) as listener:
        reader, writer = await connect(listener)
        writer.write(post("/echo", b"body"))
        await writer.drain()
        assert await read_response(reader) == (200, b""), "the body is never read"
        assert await closed_by_server(reader, WITHIN)
        writer.close()


async def test_a_get_only_route_refuses_post(tls: ServingTLS) -> None:
    app = App()

    async def ok(request: Request) -> Response:
        return Response.text("ok")

    app.add("/healthz", ok)
    limits = ConnectionLimits(max_body_bytes=1000)
    async with listening(app, tls=tls, limits=limits) as listener:
        reader, writer = await connect(listener)
        writer.write(post("/healthz", b"x"))
        await writer.drain()
        assert (await read_response(reader))[0] == 405
        writer.close()
