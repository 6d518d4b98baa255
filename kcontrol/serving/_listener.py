"""Accepting HTTP connections under limits: kube-controller-manager's server timeouts, its
header size cap, and a cap on the number of connections.

kube-controller-manager's HTTPS server (``k8s.io/apiserver``'s ``SecureServingInfo``) closes
a connection whose request header is not complete 32 s after it began (``ReadHeaderTimeout``,
which also bounds the TLS handshake), closes a kept-alive connection idle for 90 s
(``IdleTimeout``) and answers ``431`` to a header over 1 MiB (``MaxHeaderBytes``).
:class:`Listener` accepts the connections and reads their requests
(:mod:`kcontrol.serving._http`) under the same limits, :class:`ConnectionLimits`:

- the TLS handshake must complete within ``header_timeout``, and so must each request header,
  counted from the moment the connection is ready (the first request) or from the first byte
  of the next request (a kept-alive connection); past that the connection is closed;
- a kept-alive connection with no request for ``idle_timeout`` is closed;
- a header of more than ``max_header_bytes`` is answered ``431 Request Header Fields Too
  Large`` and the connection closed. That is the only limit on a header, as in Go: no line
  length limit of its own;
- bodies are read only where ``max_body_bytes`` is above 0 (the webhook server; the secure
  port serves ``GET`` only and closes a connection whose request has a body): a body of
  ``Content-Length`` bytes, complete within ``header_timeout`` of the header's end; a larger
  one is answered ``413 Request Entity Too Large``, a chunked one (no length)
  ``411 Length Required``, and the connection closed;
- at most ``max_connections`` connections are open, handshakes included: kcontrol's own
  limit (kube-controller-manager has none; in this process the file descriptors are also
  the informers' and the Lease's). A connection accepted at the limit closes the open
  connection that has waited longest without a request in progress (in its handshake,
  sending a header, or idle), so connections that never send a request cannot lock out a
  scrape; when every connection has a request in progress, the new one is closed at once.
  A request in progress is bounded too: its reviews time out (:mod:`kcontrol.serving._review`)
  and its answers are small unless the caller was authorized.

A request is "in progress" from the moment its header is complete until its response is
written. Requests sent ahead (pipelining) are answered one at a time, and are read ahead up
to ``max_header_bytes`` only; a client that hangs up cancels its request in progress; one that
reads no answers gets no further one (past ``idle_timeout`` of a full send buffer, its
connection is closed).

TLS: each connection is handshaken with the context ``ssl_context()`` returns when it is
accepted, so a reloaded certificate or client CA applies from the next connection on, and a
TLS session established under an older context is never resumed under a newer one
(:mod:`kcontrol.serving._tls`).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import errno
import re
import socket
import ssl
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from typing import cast

from kcontrol.logging import get_logger
from kcontrol.serving._http import (
    BadRequest,
    Handler,
    Request,
    error_response,
    parse_request,
    render_response,
)

__all__ = [
    "IDLE_TIMEOUT",
    "MAX_CONNECTIONS",
    "MAX_HEADER_BYTES",
    "READ_HEADER_TIMEOUT",
    "ConnectionLimits",
    "Listener",
    "serve_app",
]

_log = get_logger(__name__)

READ_HEADER_TIMEOUT = 32.0
"""Seconds a TLS handshake, and then a request header, may take (kube-controller-manager's
``ReadHeaderTimeout``)."""

IDLE_TIMEOUT = 90.0
"""Seconds a kept-alive connection may wait for its next request (``IdleTimeout``)."""

MAX_HEADER_BYTES = 1 << 20
"""The largest request header accepted, 1 MiB (``MaxHeaderBytes``)."""

MAX_CONNECTIONS = 256
"""Connections open at once on one port (kcontrol's limit). Scrapers keep one or two each and
probes one at a time; 256 is far above that, and far below the 1,024 file descriptors a
container may be limited to."""

TLS_SHUTDOWN_TIMEOUT = 5.0
"""Seconds a closing TLS connection waits for the peer's ``close_notify`` (Go waits 5 s to
send its own, and never for the peer's; Python's default would be 30 s)."""

_ACCEPT_BACKOFF_MAX = 1.0
_TEMPORARY_ACCEPT_ERRORS = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.ECONNABORTED}
)
_CAP_WARNING_INTERVAL = 60.0

_HEADER_END = re.compile(rb"\r?\n\r?\n")

_HEADER_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"Connection: close\r\n\r\n"
    b"431 Request Header Fields Too Large"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionLimits:
    """The limits of a :class:`Listener` (module docstring); the defaults are
    kube-controller-manager's, and :data:`MAX_CONNECTIONS`."""

    header_timeout: float = READ_HEADER_TIMEOUT
    idle_timeout: float = IDLE_TIMEOUT
    max_header_bytes: int = MAX_HEADER_BYTES
    max_connections: int = MAX_CONNECTIONS
    max_body_bytes: int = 0

    def __post_init__(self) -> None:
        if not (self.header_timeout > 0 and self.idle_timeout > 0):
            raise ValueError("connection timeouts must be positive")
        if self.max_header_bytes < 1 or self.max_connections < 1:
            raise ValueError("max_header_bytes and max_connections must be at least 1")
        if self.max_body_bytes < 0:
            raise ValueError("max_body_bytes must not be negative")


class _State(enum.Enum):
    HANDSHAKE = "handshake"  # accepted; TLS handshake under way
    HEADER = "header"  # waiting for, or reading, a request header: header_timeout runs
    BODY = "body"  # reading a request body: header_timeout runs again
    BUSY = "busy"  # a request in progress: no deadline of ours
    IDLE = "idle"  # kept alive between requests: idle_timeout runs


class _Connection(asyncio.Protocol):
    """One accepted connection: reads request headers, has the listener's application answer
    them one at a time (reading is paused while a request is in progress), and keeps the
    deadline of the state it is in. ``since`` is when it entered that state (the oldest
    connection without a request in progress is closed first at the limit)."""

    def __init__(self, listener: Listener, accepted_at: float) -> None:
        self._listener = listener
        self.state = _State.HANDSHAKE
        self.since = accepted_at
        self.socket: socket.socket | None = None  # while in the handshake
        self.handshake: asyncio.Task[None] | None = None
        self.transport: asyncio.Transport | None = None  # once past the handshake
        self._deadline: asyncio.TimerHandle | None = None
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer known to hold no header end
        self._request: asyncio.Task[None] | None = None
        self._reading: tuple[Request, int] | None = None  # a request whose body is read
        self._writable: asyncio.Future[None] | None = None  # while writing is paused
        self._eof = False
        self._refused = False
        self._closed = False

    # -- asyncio.Protocol: the transport's side ---------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport, though not necessarily a subclass of asyncio.Transport
        # (uvloop's are not).
        self.transport = cast(asyncio.Transport, transport)
        self.socket = None
        self._enter(_State.HEADER)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._cancel_deadline()
        self._listener.forget(self)
        if self._request is not None:  # nobody to answer: as Go cancels the request's context
            self._request.cancel()
        self.resume_writing()

    def data_received(self, data: bytes) -> None:
        if self._refused or self._closed:
            return
        if self.state is _State.IDLE:
            self._enter(_State.HEADER)
        self._buffer += data
        if self.state is _State.HEADER:
            self._read_header()
        elif self.state is _State.BODY:
            self._read_body()
        elif len(self._buffer) > self._listener.limits.max_header_bytes:
            # Requests sent ahead of an answer: no more until it is written. (Reading goes
            # on otherwise, so a client that hangs up is seen and its request cancelled.)
            assert self.transport is not None
            self.transport.pause_reading()

    def eof_received(self) -> bool | None:
        self._eof = True
        # A request in progress is still answered (over plain TCP; a TLS transport closes
        # on EOF whatever is returned); otherwise the transport closes itself.
        return True if self.state is _State.BUSY else None

    def pause_writing(self) -> None:
        if self._writable is None:
            self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        writable, self._writable = self._writable, None
        if writable is not None and not writable.done():
            writable.set_result(None)

    # -- requests ----------------------------------------------------------------------------

    def _read_header(self) -> None:
        buffer = self._buffer
        while buffer.startswith((b"\r\n", b"\n")):  # blank lines before a request: ignored
            del buffer[: 2 if buffer[0] == 13 else 1]
        limit = self._listener.limits.max_header_bytes
        end = _HEADER_END.search(buffer, max(0, self._scanned - 3))
        if end is None or end.end() > limit:
            self._scanned = len(buffer)
            if len(buffer) > limit or end is not None:
                self._refuse_header()
            return
        head = bytes(buffer[: end.start()])
        del buffer[: end.end()]
        self._scanned = 0
        assert self.transport is not None
        try:
            request = parse_request(head)
        except BadRequest as error:
            _log.debug("malformed request; closing the connection", error=str(error))
            self._refused = True
            self._cancel_deadline()
            response = error_response(error.status, str(error))
            self.transport.write(render_response(response, head_only=False, close=True))
            self.transport.close()
            return
        request.transport = self.transport
        if request.has_body and self._listener.limits.max_body_bytes > 0:
            self._start_body(request)
            return
        self._enter(_State.BUSY)
        self._request = self._listener.start(self._serve(request))

    def _start_body(self, request: Request) -> None:
        if "transfer-encoding" in request.headers:
            self._refuse(411, "a request body needs a Content-Length")
            return
        length_text = request.headers.get("content-length", "").strip()
        if not length_text.isdigit():
            self._refuse(400, "malformed Content-Length")
            return
        length = int(length_text)
        if length > self._listener.limits.max_body_bytes:
            self._refuse(413, f"request body over {self._listener.limits.max_body_bytes} bytes")
            return
        self._reading = (request, length)
        self._enter(_State.BODY)
        self._read_body()

    def _read_body(self) -> None:
        assert self._reading is not None
        request, length = self._reading
        if len(self._buffer) < length:
            return
        request.body = bytes(self._buffer[:length])
        request.body_read = True
        del self._buffer[:length]
        self._reading = None
        self._enter(_State.BUSY)
        self._request = self._listener.start(self._serve(request))

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``status`` and close: the rest of the request is never read."""
        _log.debug("refusing a request body; closing the connection", status=status)
        self._refused = True
        self._cancel_deadline()
        assert self.transport is not None
        response = error_response(status, message)
        self.transport.write(render_response(response, head_only=False, close=True))
        self.transport.close()

    async def _serve(self, request: Request) -> None:
        try:
            response = await self._listener.app(request)
        except Exception:  # one request's failure, answered 500; the connection goes on
            _log.exception("serving a request failed", method=request.method, path=request.path)
            response = error_response(500, "internal server error")
        transport = self.transport
        if self._closed or transport is None:
            return
        close = (request.has_body and not request.body_read) or not request.keep_alive or self._eof
        head_only = request.method == "HEAD"
        transport.write(render_response(response, head_only=head_only, close=close))
        if close:  # a body is never read: it must not be taken for the next request
            self._request = None
            transport.close()
            return
        writable = self._writable
        if writable is not None:  # a client that does not read gets no further answers
            try:
                async with asyncio.timeout(self._listener.limits.idle_timeout):
                    await writable
            except TimeoutError:
                self.abort("the client reads no answer")
                return
        self._request = None
        if self._closed:
            return
        self._enter(_State.IDLE)
        if not transport.is_reading():
            transport.resume_reading()
        if self._buffer:  # the next request began while this one was served
            self._enter(_State.HEADER)
            self._read_header()

    # -- closing -----------------------------------------------------------------------------

    def abort(self, reason: str) -> None:
        """Close now, whatever the state (a deadline passed, or room is needed)."""
        _log.debug("closing a connection", reason=reason, state=self.state.value)
        self._cancel_deadline()
        if self.transport is not None:
            self.transport.abort()
            return
        self._end_handshake()

    def shut_down(self) -> None:
        """Close once what was written is sent (the server stops)."""
        self._cancel_deadline()
        if self.transport is not None:
            self.transport.close()
            return
        self._end_handshake()

    def _end_handshake(self) -> None:
        if self.socket is not None:  # in the handshake: wake its transport up with an EOF
            with contextlib.suppress(OSError):
                self.socket.shutdown(socket.SHUT_RDWR)
        if self.handshake is not None:
            self.handshake.cancel()

    def _refuse_header(self) -> None:
        self._refused = True
        self._cancel_deadline()
        _log.debug("request header too large; closing the connection")
        assert self.transport is not None
        self.transport.write(_HEADER_TOO_LARGE)
        self.transport.close()

    def _enter(self, state: _State) -> None:
        loop = asyncio.get_running_loop()
        self.state = state
        self.since = loop.time()
        self._cancel_deadline()
        if self._closed:
            return
        limits = self._listener.limits
        if state is _State.HEADER:
            self._deadline = loop.call_later(
                limits.header_timeout, self.abort, "no complete request header in time"
            )
        elif state is _State.BODY:
            self._deadline = loop.call_later(
                limits.header_timeout, self.abort, "no complete request body in time"
            )
        elif state is _State.IDLE:
            self._deadline = loop.call_later(limits.idle_timeout, self.abort, "idle for too long")

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None


class Listener:
    """Accepts connections on the listening ``sock`` and has ``app`` answer their requests,
    under ``limits`` (module docstring); over TLS with the context ``ssl_context()`` returns,
    when given.

    Run :meth:`serve`, which blocks until cancelled, and :meth:`close` once it is. ``len()``
    is the number of connections open (informational). The listening socket is the
    caller's to close.
    """

    def __init__(
        self,
        sock: socket.socket,
        app: Handler,
        *,
        limits: ConnectionLimits,
        ssl_context: Callable[[], ssl.SSLContext] | None = None,
    ) -> None:
        self.limits = limits
        self.app = app
        self._socket = sock
        self._ssl_context = ssl_context
        # Every open connection, handshakes included, oldest first; the limit bounds it.
        self._connections: dict[_Connection, None] = {}
        self._requests: set[asyncio.Task[None]] = set()
        self._warned_at: float | None = None

    @property
    def port(self) -> int:
        return int(self._socket.getsockname()[1])

    def __len__(self) -> int:
        return len(self._connections)

    async def serve(self) -> None:
        """Accept connections until cancelled; cancelling also ends the handshakes under way
        (connections past theirs are :meth:`close`'s). Temporary accept failures (out of
        file descriptors) are logged and retried with a backoff, as Go's server does; others
        raise :class:`OSError`."""
        loop = asyncio.get_running_loop()
        self._socket.setblocking(False)
        delay = 0.0
        async with asyncio.TaskGroup() as handshakes:
            while True:
                try:
                    sock, _ = await loop.sock_accept(self._socket)
                except OSError as error:
                    if error.errno not in _TEMPORARY_ACCEPT_ERRORS:
                        raise
                    delay = min(max(2 * delay, 0.005), _ACCEPT_BACKOFF_MAX)
                    _log.warning(
                        "cannot accept a connection; retrying",
                        error=str(error),
                        retry_in=delay,
                    )
                    await asyncio.sleep(delay)
                    continue
                delay = 0.0
                self._admit(sock, loop, handshakes)

    async def close(self, grace: float) -> None:
        """Close every connection: those without a request in progress at once, the others
        once their answer is written, or after ``grace`` seconds (their requests are
        cancelled then)."""
        for connection in list(self._connections):
            if connection.state is not _State.BUSY:
                self.forget(connection)
                connection.shut_down()
        if self._requests:
            await asyncio.wait(set(self._requests), timeout=grace)
        for connection in list(self._connections):
            self.forget(connection)
            connection.shut_down()
        requests = set(self._requests)
        for task in requests:
            task.cancel()
        if requests:
            await asyncio.wait(requests)

    # -- the connections' bookkeeping --------------------------------------------------------

    def start(self, request: Coroutine[None, None, None]) -> asyncio.Task[None]:
        """Run ``request`` (a connection's, which never raises) as a task of this listener."""
        task = asyncio.get_running_loop().create_task(request, name="serve a request")
        self._requests.add(task)
        task.add_done_callback(self._requests.discard)
        return task

    def forget(self, connection: _Connection) -> None:
        """``connection`` is closed, or is being closed; idempotent."""
        self._connections.pop(connection, None)

    def _admit(
        self,
        sock: socket.socket,
        loop: asyncio.AbstractEventLoop,
        handshakes: asyncio.TaskGroup,
    ) -> None:
        if len(self._connections) >= self.limits.max_connections and not self._make_room(loop):
            _log.debug("connection refused: every connection has a request in progress")
            sock.close()
            return
        connection = _Connection(self, loop.time())
        connection.socket = sock
        self._connections[connection] = None
        connection.handshake = handshakes.create_task(
            self._connect(connection, sock, loop), name="accept a connection"
        )

    def _make_room(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Close the connection that waited longest without a request in progress; False
        when every connection has one."""
        now = loop.time()
        if self._warned_at is None or now - self._warned_at >= _CAP_WARNING_INTERVAL:
            self._warned_at = now
            _log.warning(
                "too many connections; closing the longest idle ones to accept new ones",
                max_connections=self.limits.max_connections,
            )
        waiting = [c for c in self._connections if c.state is not _State.BUSY]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: c.since)
        self.forget(oldest)
        oldest.abort("too many connections")
        return True

    async def _connect(
        self, connection: _Connection, sock: socket.socket, loop: asyncio.AbstractEventLoop
    ) -> None:
        context = self._ssl_context() if self._ssl_context is not None else None
        try:
            await loop.connect_accepted_socket(
                lambda: connection,
                sock,
                ssl=context,
                ssl_handshake_timeout=self.limits.header_timeout if context else None,
                ssl_shutdown_timeout=TLS_SHUTDOWN_TIMEOUT if context else None,
            )
        except asyncio.CancelledError:
            self.forget(connection)
            raise
        except Exception as error:  # one client's failed handshake is no failure of ours
            # (its transport closed the socket)
            self.forget(connection)
            _log.debug("connection failed before its first request", error=str(error))
        finally:
            connection.handshake = None


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (an IP address; ``::`` takes IPv4 too, as Go
    does, where the system allows it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    dual = host == "::" and socket.has_dualstack_ipv6()
    return socket.create_server((host, port), family=family, dualstack_ipv6=dual)


@contextlib.asynccontextmanager
async def serve_app(
    app: Handler,
    host: str,
    port: int,
    *,
    ssl_context: Callable[[], ssl.SSLContext] | None = None,
    limits: ConnectionLimits | None = None,
    shutdown_timeout: float = 2.0,
    what: str = "metrics and health checks",
) -> AsyncIterator[Listener]:
    """Listen on ``host:port`` (``port=0``: a free one) for ``app`` (an
    :class:`~kcontrol.serving._http.App`, or any handler) - over TLS with the context
    ``ssl_context()`` returns per connection - under ``limits`` (default
    :class:`ConnectionLimits`), for the duration of the block, which receives the
    :class:`Listener` and must run its :meth:`~Listener.serve` to accept connections.

    Raises :class:`OSError` naming ``what`` and the address when it cannot listen (port
    taken). On the way out, stops listening and closes every connection, waiting up to
    ``shutdown_timeout`` seconds for the requests in progress."""
    limits = limits if limits is not None else ConnectionLimits()
    try:
        sock = _listen(host, port)
    except OSError as error:  # the port is taken, the address is not ours, ...
        raise OSError(
            error.errno, f"cannot serve {what} on {host}:{port}: {error.strerror or error}"
        ) from error
    listener = Listener(sock, app, limits=limits, ssl_context=ssl_context)
    try:
        yield listener
    finally:
        sock.close()  # no new connection from here on
        await listener.close(shutdown_timeout)
