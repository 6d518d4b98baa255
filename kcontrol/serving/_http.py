"""The HTTP/1.1 the manager's ports speak: requests parsed from a header, responses written
whole, and an application of routes behind filters.

The manager serves a handful of ``GET`` paths (``/metrics``, the health checks) to scrapers
and probes, so this is a server for exactly that, in the spirit of Go's ``net/http`` as
kube-controller-manager runs it, and no more:

- a request is its header: the request line and the header fields, lines ending in CRLF or a
  bare LF (as Go reads them), and - on a listener that reads bodies
  (``ConnectionLimits.max_body_bytes``, the webhook server's) - a body of ``Content-Length``
  bytes. Otherwise no body is read: a request that announces one (``Content-Length`` above 0,
  or any ``Transfer-Encoding``) is answered, and then the connection is closed, so the body
  is never taken for the next request;
- ``HTTP/1.0`` and ``HTTP/1.1`` (keep-alive unless ``Connection: close``; ``HTTP/1.0`` only
  with ``Connection: keep-alive``); any other version is ``505``. A malformed request line or
  header field is ``400`` and closes the connection;
- ``GET`` and ``HEAD`` (the same answer without its body) on a route, or the methods the route
  was added with (``POST`` for a webhook); any other method is ``405`` with ``Allow``; a path
  without a route is ``404``;
- every response has a ``Content-Length`` and a ``Date``.

Connections, their limits and TLS are :mod:`kcontrol.serving._listener`'s.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

__all__ = [
    "App",
    "BadRequest",
    "Filter",
    "Handler",
    "Request",
    "Response",
    "error_response",
    "parse_request",
    "render_response",
]

_LINE_END = re.compile(rb"\r?\n")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VERSIONS = {"HTTP/1.1": (1, 1), "HTTP/1.0": (1, 0)}


class BadRequest(Exception):
    """A request that cannot be served; ``status`` is the answer (400 or 505)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(slots=True, kw_only=True)
class Request:
    """One request: its line and header. ``headers`` maps lower-cased names to the first
    value sent (as Go's ``Header.Get``); ``query`` maps each parameter to its values
    (``?verbose`` is ``{"verbose": [""]}``); ``path`` is percent-decoded. ``tail`` is the
    segment after a route's prefix (:meth:`App.add` with ``subpath``). ``transport`` is the
    connection's, for its peer address and TLS details. ``body`` is the request's body when
    the listener reads bodies (``body_read``), else empty."""

    method: str
    target: str
    path: str
    query: dict[str, list[str]]
    version: tuple[int, int]
    headers: dict[str, str]
    transport: asyncio.BaseTransport | None = None
    tail: str | None = None
    body: bytes = b""
    body_read: bool = False

    @property
    def has_body(self) -> bool:
        """Whether a body follows the header (unless :attr:`body_read`, the connection closes
        after the answer, the body unread)."""
        length = self.headers.get("content-length", "0").strip()
        return "transfer-encoding" in self.headers or length not in ("", "0")

    @property
    def keep_alive(self) -> bool:
        """Whether the client wants the connection kept for another request."""
        tokens = {t.strip().lower() for t in self.headers.get("connection", "").split(",")}
        if self.version >= (1, 1):
            return "close" not in tokens
        return "keep-alive" in tokens

    @property
    def remote(self) -> str | None:
        """The client's address, when the transport knows it."""
        peer = self.transport.get_extra_info("peername") if self.transport else None
        return str(peer[0]) if isinstance(peer, tuple) and peer else None

    @property
    def peer_certificate(self) -> dict[str, Any] | None:
        """The client certificate TLS verified for this connection (``getpeercert()``), if
        any."""
        cert = self.transport.get_extra_info("peercert") if self.transport else None
        return cert or None


@dataclass(slots=True)
class Response:
    """A whole response; ``headers`` are sent as given (``Content-Length``, ``Date`` and
    ``Connection`` are added when written)."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def text(
        cls, text: str, status: int = 200, headers: Mapping[str, str] | None = None
    ) -> Response:
        """A ``text/plain; charset=utf-8`` response."""
        return cls(
            status,
            text.encode(),
            {"Content-Type": "text/plain; charset=utf-8", **(headers or {})},
        )

    @classmethod
    def json(
        cls, value: object, status: int = 200, headers: Mapping[str, str] | None = None
    ) -> Response:
        """An ``application/json`` response of ``value``."""
        return cls(
            status,
            json.dumps(value).encode(),
            {"Content-Type": "application/json", **(headers or {})},
        )


Handler = Callable[[Request], Awaitable[Response]]
"""Answers a request; an exception it raises is answered ``500`` (and logged by the caller)."""

Filter = Callable[[Request, Handler], Awaitable[Response]]
"""Runs before routing: answers the request itself, or passes it on to the handler given."""


def parse_request(head: bytes) -> Request:
    """The request whose header is ``head`` (without its ending blank line); raises
    :class:`BadRequest`."""
    lines = _LINE_END.split(head)
    try:
        method, target, version_text = lines[0].decode("ascii").split(" ")
    except (UnicodeDecodeError, ValueError):
        raise BadRequest(400, "malformed request line") from None
    if not _TOKEN.fullmatch(method):
        raise BadRequest(400, "malformed method")
    if not version_text.startswith("HTTP/"):
        raise BadRequest(400, "malformed HTTP version")
    version = _VERSIONS.get(version_text)
    if version is None:
        raise BadRequest(505, f"unsupported HTTP version {version_text}")
    headers: dict[str, str] = {}
    for raw in lines[1:]:
        line = raw.decode("latin-1")
        name, colon, value = line.partition(":")
        if not colon or not _TOKEN.fullmatch(name):  # no space before the colon either
            raise BadRequest(400, "malformed header field")
        headers.setdefault(name.lower(), value.strip(" \t"))
    if target.startswith("/"):
        raw_path, _, raw_query = target.partition("?")
    elif target.startswith(("http://", "https://")):
        parts = urlsplit(target)
        raw_path, raw_query = parts.path or "/", parts.query
    else:
        raise BadRequest(400, "malformed request target")
    return Request(
        method=method,
        target=target,
        path=unquote(raw_path.partition("#")[0]),
        query=parse_qs(raw_query, keep_blank_values=True),
        version=version,
        headers=headers,
    )


def render_response(response: Response, *, head_only: bool, close: bool) -> bytes:
    """``response`` as bytes on the wire, without its body for a ``HEAD`` request, announcing
    ``Connection: close`` when the connection closes after it."""
    status = response.status
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Status"
    lines = [f"HTTP/1.1 {status} {reason}"]
    lines.extend(f"{name}: {value}" for name, value in response.headers.items())
    lines.append(f"Content-Length: {len(response.body)}")
    lines.append(f"Date: {email.utils.formatdate(usegmt=True)}")
    if close:
        lines.append("Connection: close")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head if head_only else head + response.body


def error_response(status: int, message: str = "") -> Response:
    """A plain-text error, as Go's ``http.Error`` writes them."""
    text = message or HTTPStatus(status).phrase.lower()
    return Response.text(f"{status} {text}\n", status, {"X-Content-Type-Options": "nosniff"})


_READ_METHODS = ("GET", "HEAD")


class App:
    """Routes paths to handlers behind ``filters`` (outermost first), which see every
    request before it is routed (an unknown path is refused by authentication all the
    same, as the API server refuses it)."""

    def __init__(self, filters: Iterable[Filter] = ()) -> None:
        self._filters = list(filters)
        self._routes: dict[str, tuple[Handler, tuple[str, ...]]] = {}
        self._subpaths: dict[str, tuple[Handler, tuple[str, ...]]] = {}

    def add(
        self,
        path: str,
        handler: Handler,
        *,
        subpath: bool = False,
        methods: tuple[str, ...] = _READ_METHODS,
    ) -> None:
        """Serve ``path`` with ``handler`` for ``methods`` (``GET`` and ``HEAD`` by default);
        with ``subpath``, also ``path/<segment>``, the segment in :attr:`Request.tail`."""
        self._routes[path] = (handler, methods)
        if subpath:
            self._subpaths[path.rstrip("/") + "/"] = (handler, methods)

    async def __call__(self, request: Request) -> Response:
        """The answer to ``request``, through the filters and the routes."""
        handler: Handler = self._route
        for outer in reversed(self._filters):
            handler = _bind(outer, handler)
        return await handler(request)

    async def _route(self, request: Request) -> Response:
        path = request.path
        route = self._routes.get(path)
        if route is None:
            prefix, _, tail = path.rpartition("/")
            route = self._subpaths.get(prefix + "/") if tail else None
            if route is None:
                return error_response(404, "page not found")
            request.tail = tail
        handler, methods = route
        if request.method not in methods:
            response = error_response(405, "method not allowed")
            response.headers["Allow"] = ", ".join(methods)
            return response
        return await handler(request)


def _bind(outer: Filter, inner: Handler) -> Handler:
    async def handler(request: Request) -> Response:
        return await outer(request, inner)

    return handler
