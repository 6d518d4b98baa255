"""A small HTTP/1.1 client for one server: what :class:`~kcontrol.client._transport.Transport`
sends its requests through.

A controller's traffic is thousands of small keep-alive exchanges with one API server, so
this client carries none of a general-purpose client's per-request machinery (what that
saves, measured: docs/benchmarks.md). It does what talking to a kube-apiserver, or an HTTP
proxy in front of one, needs:

- HTTP/1.1 over TCP or TLS; one exchange at a time per connection (no pipelining);
  persistent connections are reused newest first, and there is no limit on how many are
  open (each watch holds one for its lifetime; the rate limiters bound the request rate);
- answers framed by ``Content-Length``, the chunked transfer coding, or the end of the
  connection; a ``gzip`` or ``deflate`` content coding is decoded; ``1xx`` answers skipped;
- an ``http://`` proxy: a ``CONNECT`` tunnel to an ``https`` server, absolute-form requests
  to an ``http`` one, ``Proxy-Authorization: Basic`` from the proxy URL's user info;
- a connection idle longer than :data:`IDLE_TIMEOUT` (Go's ``http.Transport`` default) is
  closed instead of reused; a request that is safe to repeat (GET, HEAD) whose reused
  connection turns out closed by the server before any byte of an answer is sent once
  more on a new connection, as Go's transport does;
- a streamed answer (:meth:`Response.read_chunk`) stops reading from the socket while more
  than :data:`HIGH_WATER` bytes of it wait unread, and resumes below a quarter of that.

Failures raise :class:`OSError` (refused, reset, TLS) or :class:`HttpProtocolError` (an
answer that is not HTTP/1.x, too large a head, cut short); the caller maps them. Cancelling
a request, or closing a response before its end, closes the connection.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import time
import zlib
from collections import deque
from collections.abc import Callable, Mapping
from typing import Final, cast
from urllib.parse import quote, unquote, urlencode, urlsplit

__all__ = [
    "HIGH_WATER",
    "IDLE_TIMEOUT",
    "ConnectionPool",
    "HttpProtocolError",
    "Response",
]

IDLE_TIMEOUT: Final = 90.0
"""Seconds a kept-alive connection may sit unused before it is closed instead of reused."""
HIGH_WATER: Final = 4 * 1024 * 1024
"""Unread bytes of a streamed answer at which reading from its socket pauses."""
_MAX_HEAD: Final = 1024 * 1024  # longest response head (status line and headers) accepted
_MAX_CHUNK_LINE: Final = 4096  # longest chunk-size line (with extensions) accepted
_REPLAYABLE: Final = frozenset({"GET", "HEAD"})
_PATH_SAFE: Final = "/%:@!$&'()*+,;=-._~"

# Where a connection's parser is (the module docstring's framings).
_IDLE, _HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_END, _TRAILER, _UNTIL_CLOSE = range(8)


class HttpProtocolError(Exception):
    """The server's answer is not well-formed HTTP/1.x, or it ended before it was whole."""


class _ClosedBeforeAnswer(HttpProtocolError):
    """The connection closed before any byte of the answer arrived (a stale keep-alive
    connection the server had closed meanwhile, when the connection was reused)."""


class Response:
    """One answer: ``status``, ``headers`` (names lower-cased, repeats joined by ``, ``) and
    a body, read whole (:meth:`read`) or piece by piece (:meth:`read_chunk`).

    Close it when done (:meth:`close`; idempotent): a body read to its end gives the
    connection back for reuse, anything else closes the connection.
    """

    __slots__ = ("_conn", "_done", "_error", "_pieces", "_unread", "_waiter", "headers", "status")

    def __init__(self, conn: _Connection, status: int, headers: dict[str, str]) -> None:
        self.status = status
        self.headers = headers
        self._conn: _Connection | None = conn
        self._pieces: deque[bytes] = deque()
        self._unread = 0
        self._done = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None

    async def read(self) -> bytes:
        """The rest of the body, once it has all arrived."""
        while not self._done and self._error is None:
            await self._wait()
        if self._error is not None:
            raise self._error
        data = self._pieces[0] if len(self._pieces) == 1 else b"".join(self._pieces)
        self._pieces.clear()
        self._unread = 0
        return data

    async def read_chunk(self) -> bytes:
        """The next piece of the body as it arrives; ``b""`` once the body has ended."""
        while not self._pieces:
            if self._error is not None:
                raise self._error
            if self._done:
                return b""
            await self._wait()
        piece = self._pieces.popleft()
        self._unread -= len(piece)
        conn = self._conn
        if conn is not None and conn.paused and self._unread < HIGH_WATER // 4:
            conn.resume()
        return piece

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.release(self)

    async def _wait(self) -> None:
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _feed(self, data: bytes) -> None:
        self._pieces.append(data)
        self._unread += len(data)
        self._wake()

    def _end(self, error: BaseException | None) -> None:
        if error is None:
            self._done = True
        elif not self._done:
            self._error = error
        self._wake()


class _Connection(asyncio.Protocol):
    """One connection and the parser of the answers arriving on it."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.paused = False
        self.reused = False
        self.idle_since = 0.0
        self._buf = bytearray()
        self._state = _IDLE
        self._remaining = 0
        self._head_only = False  # the request was HEAD: its answer has no body
        self._stream = False  # hand over the response at its head, not at its end
        self._pooled = True  # back to the pool once a buffered answer is read whole
        self._got_bytes = False  # any byte of the current answer arrived
        self._keep_alive = True
        self._decoder: zlib._Decompress | None = None
        self._answer: asyncio.Future[Response] | None = None
        self._response: Response | None = None

    # -- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's do not derive from asyncio.Transport: no isinstance).
        self.transport = cast("asyncio.Transport", transport)

    def data_received(self, data: bytes) -> None:
        self._got_bytes = True
        try:
            state = self._state
            if (state in (_LENGTH, _CHUNK_DATA)) and not self._buf and len(data) < self._remaining:
                self._remaining -= len(data)  # the middle of a large body: no copy
                self._body(data)
                return
            self._buf += data
            self._parse()
        except HttpProtocolError as e:
            self._fail(e)
            self.abort()

    def eof_received(self) -> bool | None:
        return None  # close the transport; connection_lost does the rest

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._state == _UNTIL_CLOSE and exc is None:
            try:
                self._finish()  # the end of the connection is the end of this body
            except HttpProtocolError as e:
                self._fail(e)
        elif self._state != _IDLE:
            error: BaseException
            if not self._got_bytes:
                why = "" if exc is None else f" ({type(exc).__name__}: {exc})"
                error = _ClosedBeforeAnswer(f"the connection closed without an answer{why}")
            elif exc is not None:
                error = exc
            else:
                error = HttpProtocolError("the server closed the connection mid-answer")
            self._fail(error)
        self._pool.forget(self)

    # -- the exchange

    def send(
        self,
        data: bytes,
        body: bytes | None,
        *,
        head_only: bool,
        stream: bool,
        pooled: bool = True,
    ) -> None:
        """Write one request and get ready for its answer (:attr:`answer`). ``pooled``:
        a buffered answer read whole puts the connection back in the pool. A connection
        lost before it (a new one can be, between connecting and sending) raises
        :class:`_ClosedBeforeAnswer` with nothing sent, as a stale connection would."""
        assert self.transport is not None and self._state == _IDLE
        if self.closed:
            raise _ClosedBeforeAnswer("the connection closed before the request was sent")
        self._state = _HEAD
        self._pooled = pooled
        self._head_only = head_only
        self._stream = stream
        self._got_bytes = False
        self._keep_alive = True
        self._decoder = None
        self._response = None
        self._answer = asyncio.get_running_loop().create_future()
        if body is None:
            self.transport.write(data)
        elif len(body) < 65536:
            self.transport.write(data + body)
        else:
            self.transport.writelines((data, body))

    @property
    def answer(self) -> asyncio.Future[Response]:
        assert self._answer is not None
        return self._answer

    def release(self, response: Response) -> None:
        """The caller is done with ``response`` (a streamed one, still this connection's):
        keep the connection if the answer was read whole, else close it."""
        if self._response is response and self._state == _IDLE and not self.closed:
            self._response = None
            self._pool.put_back(self)
        else:
            self.abort()

    def resume(self) -> None:
        self.paused = False
        if self.transport is not None and not self.closed:
            self.transport.resume_reading()

    def abort(self) -> None:
        """Close at once, dropping whatever is unread or unsent."""
        if self.transport is not None and not self.closed:
            self.closed = True
            self.transport.abort()
        self.closed = True

    # -- parsing

    def _parse(self) -> None:
        buf = self._buf
        while True:
            state = self._state
            if state in (_LENGTH, _CHUNK_DATA):
                if not buf:
                    return
                n = self._remaining
                if len(buf) <= n:
                    data = bytes(buf)
                    buf.clear()
                else:
                    data = bytes(buf[:n])
                    del buf[:n]
                self._remaining -= len(data)
                self._body(data)
                if self._remaining == 0:
                    if state == _LENGTH:
                        self._finish()
                    else:
                        self._state = _CHUNK_END
            elif state == _HEAD:
                head = _take(buf, b"\r\n\r\n", _MAX_HEAD, "the answer's head is larger than 1 MiB")
                if head is None:
                    return
                self._on_head(head)
            elif state == _CHUNK_SIZE:
                line = _take(
                    buf, b"\r\n", _MAX_CHUNK_LINE, "malformed chunked body: size line too long"
                )
                if line is None:
                    return
                line = line.partition(b";")[0].strip()
                try:
                    size = int(line, 16)
                except ValueError:
                    size = -1
                if size < 0 or not line:
                    raise HttpProtocolError(f"malformed chunked body: chunk size {line[:20]!r}")
                if size == 0:
                    self._state = _TRAILER
                else:
                    self._remaining = size
                    self._state = _CHUNK_DATA
            elif state == _CHUNK_END:
                if len(buf) < 2:
                    return
                if buf[0] != 13 or buf[1] != 10:
                    raise HttpProtocolError("malformed chunked body: no CRLF after a chunk")
                del buf[:2]
                self._state = _CHUNK_SIZE
            elif state == _TRAILER:  # trailer fields, ignored, up to an empty line
                line = _take(buf, b"\r\n", _MAX_HEAD, "the answer's trailer is larger than 1 MiB")
                if line is None:
                    return
                if not line:
                    self._finish()
            elif state == _UNTIL_CLOSE:
                if buf:
                    data = bytes(buf)
                    buf.clear()
                    self._body(data)
                return
            else:  # _IDLE: nothing was asked
                if buf:
                    raise HttpProtocolError("the server sent data no request asked for")
                return

    def _on_head(self, head: bytes) -> None:
        lines = head.decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
            raise HttpProtocolError(f"the answer is not HTTP/1.x: {lines[0][:60]!r}")
        status = int(code)
        if 100 <= status < 200:
            return  # an interim answer (100 Continue, 103 Early Hints): the real one follows
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon or not name or name[-1] in " \t":
                raise HttpProtocolError(f"malformed header line {line[:60]!r}")
            name = name.lower()
            value = value.strip()
            previous = headers.get(name)
            headers[name] = value if previous is None else f"{previous}, {value}"
        connection = headers.get("connection", "").lower()
        self._keep_alive = "close" not in connection and (
            version == "HTTP/1.1" or "keep-alive" in connection
        )
        self._response = response = Response(self, status, headers)
        encoding = headers.get("content-encoding", "").strip().lower()
        if encoding in {"gzip", "x-gzip"}:
            self._decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._decoder = zlib.decompressobj()
        elif encoding not in ("", "identity"):
            raise HttpProtocolError(f"unsupported content coding {encoding!r}")
        transfer = headers.get("transfer-encoding")
        length = headers.get("content-length")
        if self._head_only or status in {204, 304}:
            self._finish()
        elif transfer is not None:
            if transfer.rpartition(",")[2].strip().lower() == "chunked":
                self._state = _CHUNK_SIZE
            else:
                self._state = _UNTIL_CLOSE
                self._keep_alive = False
        elif length is not None:
            try:
                size = int(length)
            except ValueError:
                size = -1
            if size < 0:
                raise HttpProtocolError(f"malformed Content-Length {length[:20]!r}")
            if size == 0:
                self._finish()
            else:
                self._remaining = size
                self._state = _LENGTH
        else:
            self._state = _UNTIL_CLOSE
            self._keep_alive = False
        if self._stream:
            answer = self._answer
            if answer is not None and not answer.done():
                answer.set_result(response)

    def _body(self, data: bytes) -> None:
        if self._decoder is not None:
            try:
                data = self._decoder.decompress(data)
            except zlib.error as e:
                raise HttpProtocolError(f"the answer's compressed body is corrupt: {e}") from e
            if not data:
                return
        response = self._response
        assert response is not None
        response._feed(data)
        if self._stream and not self.paused and response._unread > HIGH_WATER:
            self.paused = True
            assert self.transport is not None
            self.transport.pause_reading()

    def _finish(self) -> None:
        response = self._response
        assert response is not None
        decoder, self._decoder = self._decoder, None
        if decoder is not None:
            tail = decoder.flush()
            if tail:
                response._feed(tail)
            if not decoder.eof:
                raise HttpProtocolError("the answer's compressed body ended early")
        self._state = _IDLE
        reusable = self._keep_alive and not self._buf
        if not reusable:
            self.abort()
        response._end(None)
        answer = self._answer
        if answer is not None and not answer.done():
            answer.set_result(response)  # buffered: the whole body is in
        if not self._stream and reusable and self._pooled:
            self._response = None
            response._conn = None
            self._pool.put_back(self)

    def _fail(self, error: BaseException) -> None:
        self._state = _IDLE
        answer = self._answer
        if answer is not None and not answer.done():
            answer.set_exception(error)
        if self._response is not None:
            self._response._end(error)


def _take(buf: bytearray, separator: bytes, limit: int, too_long: str) -> bytes | None:
    """What ``buf`` holds before ``separator``, removed from it with the separator; ``None``
    while the separator has not arrived, :class:`HttpProtocolError` (``too_long``) once more
    than ``limit`` bytes wait without it."""
    end = buf.find(separator)
    if end < 0:
        if len(buf) > limit:
            raise HttpProtocolError(too_long)
        return None
    taken = bytes(buf[:end])
    del buf[: end + len(separator)]
    return taken


class ConnectionPool:
    """Kept-alive connections to the server at ``url`` (scheme, host, port, and a path
    prefix every request's path is appended to); see the module docstring.

    ``ssl_context`` is required for an ``https`` URL; ``server_name`` replaces the URL's
    host as the name the server's certificate is checked against (SNI too); ``proxy`` is an
    ``http://`` URL. After :meth:`close` every request raises ``RuntimeError``.
    """

    def __init__(
        self,
        url: str,
        *,
        ssl_context: ssl.SSLContext | None = None,
        server_name: str | None = None,
        proxy: str | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self._tls = parts.scheme == "https"
        if self._tls and ssl_context is None:
            raise ValueError("an https URL needs an SSL context")
        self._ssl = ssl_context
        self._host = parts.hostname
        self._port = parts.port or (443 if self._tls else 80)
        self._server_name = server_name or self._host
        self._authority = parts.netloc.rpartition("@")[2]
        self._prefix = parts.path.rstrip("/")
        self._proxy: tuple[str, int] | None = None
        self._proxy_auth: str | None = None
        if proxy:
            proxy_parts = urlsplit(proxy)
            if proxy_parts.scheme != "http" or not proxy_parts.hostname:
                raise ValueError(f"only http:// proxies are supported, got {proxy!r}")
            self._proxy = (proxy_parts.hostname, proxy_parts.port or 80)
            if proxy_parts.username is not None:
                user = unquote(proxy_parts.username)
                password = unquote(proxy_parts.password or "")
                token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
                self._proxy_auth = f"Basic {token}"
        # http through a proxy: absolute-form targets (RFC 9112 3.2.2)
        self._origin = f"{parts.scheme}://{self._authority}" if proxy and not self._tls else ""
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()
        self.closed = False

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str],
        body: bytes | None = None,
        check: Callable[[], None] | None = None,
        stream: bool = False,
    ) -> Response:
        """Send one request and return its answer: read whole (``stream=False``: the
        connection is already back in the pool) or at its head (``stream=True``: the body
        arrives through :meth:`Response.read_chunk`; close the response when done).

        ``path`` is percent-encoded where it must be, ``params`` form-encoded into the
        query. ``check``, if given, runs once a connection is ready and right before the
        request is written; whatever it raises propagates with nothing sent.
        """
        if self.closed:
            raise RuntimeError("ApiClient is closed")
        target = self._origin + self._prefix + quote(path, safe=_PATH_SAFE)
        if params:
            target = f"{target}?{urlencode(params)}"
        data = self._head(method, target, headers, body)
        head_only = method == "HEAD"
        for attempt in (1, 2):
            conn = await self._acquire()
            if check is not None:
                try:
                    check()
                except BaseException:
                    self.put_back(conn)
                    raise
            try:
                conn.send(data, body, head_only=head_only, stream=stream)
            except _ClosedBeforeAnswer:
                conn.abort()
                if attempt == 1:  # nothing was sent: safe to send again, whatever it is
                    continue
                raise
            try:
                return await conn.answer
            except _ClosedBeforeAnswer:
                conn.abort()
                if attempt == 1 and conn.reused and method in _REPLAYABLE:
                    continue
                raise
            except BaseException:
                conn.abort()
                raise
        raise AssertionError("unreachable")

    def _head(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes | None
    ) -> bytes:
        lines = [f"{method} {target} HTTP/1.1\r\nHost: {self._authority}\r\n"]
        for name, value in headers.items():
            if "\n" in value or "\r" in value:
                raise ValueError(f"header {name} holds a line break")
            lines.append(f"{name}: {value}\r\n")
        if self._origin and self._proxy_auth is not None:
            lines.append(f"Proxy-Authorization: {self._proxy_auth}\r\n")
        if body is not None:
            lines.append(f"Content-Length: {len(body)}\r\n")
        elif method in ("POST", "PUT", "PATCH"):
            lines.append("Content-Length: 0\r\n")
        lines.append("\r\n")
        try:
            return "".join(lines).encode("latin-1")
        except UnicodeEncodeError as e:
            raise ValueError(f"a request header holds characters HTTP cannot carry: {e}") from e

    async def _acquire(self) -> _Connection:
        now = time.monotonic()
        idle = self._idle
        while idle:
            conn = idle.pop()
            if conn.closed:
                continue
            if now - conn.idle_since > IDLE_TIMEOUT:
                conn.abort()
                continue
            conn.reused = True
            return conn
        return await self._connect()

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        server_name = self._server_name if self._tls else None
        if self._proxy is None:
            _, conn = await loop.create_connection(
                lambda: _Connection(self),
                self._host,
                self._port,
                ssl=self._ssl,
                server_hostname=server_name,
            )
        else:
            _, conn = await loop.create_connection(lambda: _Connection(self), *self._proxy)
            if self._tls:
                try:
                    await self._tunnel(conn, server_name)
                except BaseException:
                    conn.abort()
                    raise
        self._open.add(conn)
        if self.closed:  # closed while connecting
            conn.abort()
            raise RuntimeError("ApiClient is closed")
        return conn

    async def _tunnel(self, conn: _Connection, server_name: str | None) -> None:
        """Ask the proxy for a tunnel to the server, then start TLS inside it."""
        authority = f"{self._host}:{self._port}"
        if ":" in self._host:
            authority = f"[{self._host}]:{self._port}"
        lines = [f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n"]
        if self._proxy_auth is not None:
            lines.append(f"Proxy-Authorization: {self._proxy_auth}\r\n")
        lines.append("\r\n")
        # A 2xx answer to CONNECT has no body (RFC 9110 9.3.6): parse only its head.
        conn.send(
            "".join(lines).encode("latin-1"), None, head_only=True, stream=False, pooled=False
        )
        answer = await conn.answer
        if not 200 <= answer.status < 300:
            raise HttpProtocolError(f"the proxy refused the tunnel: {answer.status}")
        assert conn.transport is not None
        assert self._ssl is not None
        tls = await asyncio.get_running_loop().start_tls(
            conn.transport, conn, self._ssl, server_hostname=server_name
        )
        assert tls is not None
        conn.transport = tls

    def put_back(self, conn: _Connection) -> None:
        """Keep ``conn`` for the next request (the current one's answer was read whole), and
        close the connections that have been idle longer than :data:`IDLE_TIMEOUT`."""
        if self.closed or conn.closed:
            conn.abort()
            return
        now = conn.idle_since = time.monotonic()
        idle = self._idle
        while idle and now - idle[0].idle_since > IDLE_TIMEOUT:  # the oldest come first
            idle.pop(0).abort()
        idle.append(conn)

    def forget(self, conn: _Connection) -> None:
        self._open.discard(conn)

    async def close(self) -> None:
        """Close every connection, idle or in use (open streams end with an error)."""
        self.closed = True
        self._idle.clear()
        for conn in list(self._open):
            conn.abort()
        self._open.clear()
        await asyncio.sleep(0)  # let the transports' connection_lost run
