"""A fault-injecting HTTPS proxy in front of a test apiserver.

Fault tests point a client at :attr:`FaultProxy.host` instead of the apiserver. The proxy
forwards every request and streams every response (watches included) until told otherwise:

- :meth:`FaultProxy.inject` answers the next matching requests itself with an error ``Status``
  (410, 429 with ``Retry-After``, 500, ...) without contacting the apiserver;
- :meth:`FaultProxy.blackhole` makes the proxy go silent without closing anything: open
  streams stop relaying bytes and new requests are never answered - a half-open connection as
  far as the client can tell; :meth:`FaultProxy.restore` ends that;
- :meth:`FaultProxy.freeze_existing_streams` leaves every response already streaming hung for
  good (open, nothing relayed, not even its end) while new requests go through: the client's
  old connections went half-open, its new ones work;
- :meth:`FaultProxy.drop_connections` closes every open stream at once.

Every request is recorded in :attr:`FaultProxy.requests` so tests can bound the request rate.

Needs aiohttp (the ``testing`` extra).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Self

import aiohttp
import orjson
from aiohttp import web

__all__ = ["FaultProxy", "ProxiedRequest"]

_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "content-encoding",
    "host",
    "upgrade",
}


@dataclass(frozen=True)
class ProxiedRequest:
    """One request the proxy saw: when (monotonic), method, path, query and what it did."""

    at: float
    method: str
    path: str
    query: dict[str, str]
    answered_by: str  # "upstream", "injected:<code>" or "blackhole"

    @property
    def is_watch(self) -> bool:
        return self.query.get("watch") in ("1", "true")


@dataclass
class _Injection:
    code: int
    match: Callable[[web.Request], bool]
    times: int
    retry_after: int | None
    reason: str
    message: str


@dataclass
class _State:
    injections: list[_Injection] = field(default_factory=list)
    silent: asyncio.Event = field(default_factory=asyncio.Event)
    resume: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class _Frozen:
    """Whether a streaming response is frozen, and the event that lets it finish then."""

    frozen: bool = False
    release: asyncio.Event = field(default_factory=asyncio.Event)


_REASONS = {
    410: "Expired",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    403: "Forbidden",
}


class FaultProxy:
    """HTTPS proxy to ``upstream`` presenting ``cert_pair`` (use the apiserver's own serving
    certificate so clients trust the proxy with the same CA). An async context manager; the
    server runs in the loop that entered it."""

    def __init__(
        self, upstream: str, upstream_ssl: ssl.SSLContext, cert_pair: tuple[Path, Path]
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self._upstream_ssl = upstream_ssl
        self._server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._server_ssl.load_cert_chain(str(cert_pair[0]), str(cert_pair[1]))
        self.requests: list[ProxiedRequest] = []
        self._state = _State()
        self._state.resume.set()
        # Each streaming response, with the event that releases it once frozen.
        self._streams: dict[web.StreamResponse, _Frozen] = {}
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.port = 0

    @property
    def host(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    # -- controls -------------------------------------------------------------------------

    def inject(
        self,
        code: int,
        *,
        match: Callable[[web.Request], bool] = lambda _: True,
        times: int = 1,
        retry_after: int | None = None,
        message: str = "injected by FaultProxy",
        reason: str | None = None,
    ) -> None:
        """Answer the next ``times`` requests for which ``match(request)`` is true with an
        error ``Status`` of HTTP ``code`` (and ``Retry-After`` when given)."""
        self._state.injections.append(
            _Injection(code, match, times, retry_after, reason or _REASONS.get(code, ""), message)
        )

    def clear_injections(self) -> None:
        self._state.injections.clear()

    def blackhole(self) -> None:
        """Go silent: stop relaying on open streams and never answer new requests."""
        self._state.resume.clear()

    def restore(self) -> None:
        """End :meth:`blackhole`; held requests proceed."""
        self._state.resume.set()

    def freeze_existing_streams(self) -> int:
        """Hang every response streaming now, for good: it stays open but relays nothing more
        (bytes held by :meth:`blackhole` included) and never ends, while requests arriving
        later are served normally (unless blackholed). Returns how many were frozen.
        :meth:`drop_connections` and leaving the proxy release them."""
        for frozen in self._streams.values():
            frozen.frozen = True
        return len(self._streams)

    async def drop_connections(self) -> None:
        """Close every open response stream abruptly (frozen ones included)."""
        for stream, frozen in list(self._streams.items()):
            transport = stream._req.transport if stream._req is not None else None
            if transport is not None:
                transport.abort()
            frozen.release.set()
        self._streams.clear()

    def count(self, predicate: Callable[[ProxiedRequest], bool] = lambda _: True) -> int:
        return sum(1 for request in self.requests if predicate(request))

    # -- lifecycle ------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=self._upstream_ssl),
            timeout=aiohttp.ClientTimeout(total=None),
            auto_decompress=False,
        )
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self._server_ssl)
        await site.start()
        sockets = getattr(site._server, "sockets", None)
        assert sockets, "proxy did not bind"
        self.port = sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.restore()
        await self.drop_connections()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    # -- the handler ----------------------------------------------------------------------

    def _record(self, request: web.Request, answered_by: str) -> None:
        self.requests.append(
            ProxiedRequest(
                time.monotonic(), request.method, request.path, dict(request.query), answered_by
            )
        )

    def _take_injection(self, request: web.Request) -> _Injection | None:
        for injection in self._state.injections:
            if injection.times > 0 and injection.match(request):
                injection.times -= 1
                if injection.times == 0:
                    self._state.injections.remove(injection)
                return injection
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if not self._state.resume.is_set():
            self._record(request, "blackhole")
            await self._state.resume.wait()
        injection = self._take_injection(request)
        if injection is not None:
            self._record(request, f"injected:{injection.code}")
            status: dict[str, object] = {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "message": injection.message,
                "reason": injection.reason,
                "code": injection.code,
            }
            headers = {"Content-Type": "application/json"}
            if injection.retry_after is not None:
                headers["Retry-After"] = str(injection.retry_after)
                status["details"] = {"retryAfterSeconds": injection.retry_after}
            return web.Response(status=injection.code, body=orjson.dumps(status), headers=headers)

        self._record(request, "upstream")
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        body = await request.read()
        async with self._session.request(
            request.method,
            self.upstream + request.rel_url.raw_path_qs,
            headers=headers,
            data=body or None,
            allow_redirects=False,
        ) as upstream:
            response = web.StreamResponse(status=upstream.status)
            for key, value in upstream.headers.items():
                if key.lower() not in _HOP_BY_HOP:
                    response.headers[key] = value
            if upstream.headers.get("Content-Encoding"):
                response.headers["Content-Encoding"] = upstream.headers["Content-Encoding"]
            await response.prepare(request)
            frozen = self._streams[response] = _Frozen()
            try:
                async for chunk in upstream.content.iter_any():
                    await self._state.resume.wait()
                    if frozen.frozen:
                        break
                    await response.write(chunk)
                if frozen.frozen:
                    await frozen.release.wait()  # hung until dropped or the proxy exits
                    return response
                await response.write_eof()
            except (ConnectionResetError, aiohttp.ClientError):
                pass
            finally:
                self._streams.pop(response, None)
            return response
