"""The HTTP layer under :class:`~kcontrol.client.ApiClient`: one request in, JSON or an error out.

:class:`Transport` owns the connection pool (:mod:`kcontrol.client._http`). Each request
waits for the client-side rate limiter, carries the user agent and fresh credentials, runs
under a timeout scope, is counted in the ``rest_client_*`` metrics, and has its failures
mapped, once, here:

- a 429 or 5xx answer carrying ``Retry-After: <seconds>`` is retried after that many seconds,
  up to ``max_retries`` times (client-go's rest client: 10), watches included; each retry
  waits for the rate limiter again and is counted in the metrics;
- any other non-2xx answer, or the last of those -> the :class:`~kcontrol.errors.ApiError`
  subclass for its ``Status`` (``Retry-After`` parsed into ``retry_after``);
- no usable answer (refused, reset, TLS failure, timeout, body cut short, not JSON) ->
  :class:`~kcontrol.errors.ApiConnectionError`, chained to the cause;
- cancellation propagates untouched, and the connection of a cancelled request is closed
  rather than returned to the pool.

A request may carry a ``before_send`` check (the write gate of
:meth:`~kcontrol.client.ApiClient.with_write_gate`): it runs before each attempt, after the
rate limiter's wait, and again once the attempt's connection is ready, right before the
request is written; whatever it raises stops the request unsent.
"""

from __future__ import annotations

import asyncio
import copy
import functools
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple, Protocol, TypeVar
from urllib.parse import urlsplit

import orjson
from prometheus_client import CollectorRegistry

from kcontrol.client._config import ClientConfig
from kcontrol.client._decode import decode_json
from kcontrol.client._http import ConnectionPool, HttpProtocolError, Response
from kcontrol.client._interface import Object
from kcontrol.client._metrics import RequestMetrics
from kcontrol.client._proxy_env import proxy_from_environment
from kcontrol.clock import Clock
from kcontrol.errors import ApiConnectionError, ApiError, ConfigError, api_error_from_status
from kcontrol.flowcontrol import TokenBucketRateLimiter
from kcontrol.logging import get_logger

__all__ = ["BeforeSend", "Params", "Transport"]

_log = get_logger(__name__)

_LONG_THROTTLE = 0.05  # client-go logs waits longer than this (longThrottleLatency)
DEFAULT_MAX_RETRIES = 10
"""Retries of a request answered 429/5xx with ``Retry-After`` (client-go's default)."""

Params = dict[str, str]
BeforeSend = Callable[[str, str], None]
"""``check(method, path)``, called right before an attempt is sent; raises to stop it."""
_T = TypeVar("_T")


class BodyDecoder(Protocol):
    """Decodes a body fed piece by piece as it arrives (``ListDecoder``)."""

    @property
    def fed(self) -> int:
        """The number of bytes fed so far."""
        ...

    def feed(self, data: bytes) -> None:
        """Take the next piece; may raise :class:`ValueError`."""
        ...

    def finish(self) -> Object:
        """The decoded body; raises :class:`ValueError` if it cannot be read."""
        ...


class _Refusal(NamedTuple):
    """A non-2xx answer, kept until it is known whether it will be retried."""

    status: int
    data: bytes
    retry_after: str | None


class _Pool:
    """The connection pool of a transport and of every transport derived from it, created
    on first use."""

    def __init__(self, config: ClientConfig) -> None:
        self._config = config
        self._pool: ConnectionPool | None = None
        self.closed = False

    def get(self) -> ConnectionPool:
        if self.closed:
            raise RuntimeError("ApiClient is closed")
        if self._pool is None:
            config = self._config
            proxy, source = config.proxy, "proxy-url"
            if proxy is None:  # as client-go: the environment's, without a proxy-url
                proxy, source = proxy_from_environment(config.host) or (None, "")
            try:
                self._pool = ConnectionPool(
                    config.host,
                    ssl_context=config.ssl_context(),
                    server_name=config.tls_server_name,
                    proxy=proxy,
                )
            except ValueError as e:
                where = f" (the proxy from {source})" if proxy else ""
                raise ConfigError(f"cannot talk to {config.host}{where}: {e}") from e
        return self._pool

    async def close(self) -> None:
        self.closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()


class Transport:
    """Sends requests to one API server; see the module docstring for what each one gets.

    ``rate_limiter`` is shared by every request (``None``: unthrottled); ``timeout`` bounds a
    request from sending it to the end of its body (``None``: unbounded). The pool is
    created on first use; after :meth:`close` every request raises ``RuntimeError``.
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        rate_limiter: TokenBucketRateLimiter | None,
        user_agent: str,
        timeout: float | None,
        registry: CollectorRegistry | None,
        clock: Clock,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        self._config = config
        self._max_retries = max(0, max_retries)
        self._host = urlsplit(config.host).netloc.rpartition("@")[2]  # the metrics label
        self._limiter = rate_limiter
        self._user_agent = user_agent
        self._timeout = timeout
        self._metrics = RequestMetrics.for_registry(registry)
        self._clock = clock
        self._pool = _Pool(config)

    def derive(self, *, rate_limiter: TokenBucketRateLimiter | None, user_agent: str) -> Transport:
        """A transport over the same pool (connections, credentials, metrics, timeout and
        retries) with its own ``rate_limiter`` and ``user_agent``. Closing either closes both."""
        derived = copy.copy(self)
        derived._limiter = rate_limiter
        derived._user_agent = user_agent
        return derived

    @property
    def closed(self) -> bool:
        return self._pool.closed

    def pool(self) -> ConnectionPool:
        """The connection pool (:mod:`kcontrol.client._http`), created on first use."""
        return self._pool.get()

    async def close(self) -> None:
        """Close the connections (open watches break). Idempotent."""
        await self._pool.close()

    async def _prepare(
        self, method: str, content_type: str | None, accept: str | None = None
    ) -> dict[str, str]:
        """Wait for the rate limiter, then build the headers (fresh credentials); ``accept``
        replaces the plain ``application/json`` Accept header."""
        if self._limiter is not None:
            waited = await self._limiter.wait()
            self._metrics.observe_rate_limiter(method, self._host, waited)
            if waited > _LONG_THROTTLE:
                _log.debug("waited due to client-side throttling", seconds=round(waited, 3))
        headers = {"User-Agent": self._user_agent, "Accept": accept or "application/json"}
        # gzip, as Go's transport asks, unless compression is disabled
        headers["Accept-Encoding"] = "identity" if self._config.disable_compression else "gzip"
        if content_type is not None:
            headers["Content-Type"] = content_type
        if self._config.auth is not None:
            authorization = await self._config.auth.authorization()
            if authorization:
                headers["Authorization"] = authorization
        return headers

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        decode: Callable[[bytes], Object] | None = None,
        decoder: Callable[[], BodyDecoder] | None = None,
        before_send: BeforeSend | None = None,
        accept: str | None = None,
    ) -> Object:
        """Send one request and decode its JSON answer; map failures (class docstring).

        ``decode`` replaces the plain JSON decode of a 2xx body; it must return a dict and
        raise :class:`ValueError` (``orjson.JSONDecodeError`` is one) on a body it cannot
        read, which becomes :class:`~kcontrol.errors.ApiConnectionError`. ``before_send``
        (the write gate's check) is called with the method and path right before each
        attempt goes out - after the rate limiter, with no ``await`` in between - and
        whatever it raises propagates with nothing sent. ``accept`` is the Accept header
        (default ``application/json``), e.g. to ask for ``PartialObjectMetadata``.
        ``decoder`` instead of ``decode``: a new :class:`BodyDecoder` per attempt is fed a 2xx
        body piece by piece as it arrives (a large LIST decodes while the server still
        sends it)."""
        if body is not None and content_type is None:
            content_type = "application/json"
        try:
            if decoder is not None:
                result = await self._with_retries(
                    method,
                    path,
                    lambda: self._send_decoding(method, path, params, decoder, accept=accept),
                )
            else:
                data = await self._with_retries(
                    method,
                    path,
                    lambda: self._send(
                        method,
                        path,
                        params,
                        body,
                        content_type,
                        before_send=before_send,
                        accept=accept,
                    ),
                )
                if not data:
                    return {}
                result = decode_json(data) if decode is None else decode(data)
        except ValueError as e:
            raise ApiConnectionError(
                f"{method} {path}: the server's answer is not JSON of the expected shape: {e}"
            ) from e
        if not isinstance(result, dict):
            raise ApiConnectionError(f"{method} {path}: the server's answer is not an object")
        return result

    async def request_raw(
        self, method: str, path: str, *, params: Params | None = None, accept: str | None = None
    ) -> bytes:
        """Send one request without a body and return the 2xx body as sent (not decoded);
        failures are mapped, and retried, as for :meth:`request`; ``accept`` likewise."""
        return await self._with_retries(
            method,
            path,
            lambda: self._send(method, path, params, None, None, before_send=None, accept=accept),
        )

    async def _with_retries(
        self, method: str, path: str, attempt: Callable[[], Awaitable[_T | _Refusal]]
    ) -> _T:
        """Run ``attempt`` until it succeeds; a refusal is retried after its ``Retry-After``
        (module docstring) or raised as its :class:`~kcontrol.errors.ApiError`."""
        retries = 0
        while True:
            outcome = await attempt()
            if not isinstance(outcome, _Refusal):
                return outcome
            seconds = _retry_after_seconds(outcome.status, outcome.retry_after)
            if seconds is None or retries >= self._max_retries:
                raise _api_error(outcome.status, outcome.data, outcome.retry_after)
            retries += 1
            _log.info(
                "retrying after the server's Retry-After",
                method=method,
                path=path,
                code=outcome.status,
                retry_after=seconds,
                retry=retries,
                max_retries=self._max_retries,
            )
            await self._clock.sleep(seconds)

    async def _send(
        self,
        method: str,
        path: str,
        params: Params | None,
        body: bytes | None,
        content_type: str | None,
        *,
        before_send: BeforeSend | None,
        accept: str | None = None,
    ) -> bytes | _Refusal:
        """One attempt: the body of a 2xx answer, else the refusal; connection failures
        raise."""
        pool = self.pool()
        headers = await self._prepare(method, content_type, accept)
        check = None
        if before_send is not None:
            before_send(method, path)  # refuse before connecting, when it is known already
            # ... and ask again once the connection is ready, right before the request is
            # written: connecting awaits (TCP, TLS), and a process paused meanwhile
            # (SIGSTOP) must not send, once resumed, what its gate closed on since.
            check = functools.partial(before_send, method, path)
        start = self._clock.now()
        code: int | None = None
        try:
            async with asyncio.timeout(self._timeout):
                response = await pool.request(
                    method, path, params=params, headers=headers, body=body, check=check
                )
                status = code = response.status
                data = await response.read()  # already whole: the answer was not streamed
        except (HttpProtocolError, OSError, TimeoutError) as e:
            code = None
            raise _connection_error(method, path, e) from e
        finally:
            self._metrics.observe_request(method, self._host, code, self._clock.now() - start)
        if 200 <= status < 300:
            return data
        return self._refusal(status, data, response, headers)

    def _refusal(
        self, status: int, data: bytes, response: Response, headers: dict[str, str]
    ) -> _Refusal:
        """The refusal of a request sent with ``headers``. A 401 tells the credentials' source
        that they were refused, when it can renew them (an exec plugin's token: the next
        request runs the plugin again, as client-go's exec authenticator does)."""
        if status == 401:
            unauthorized = getattr(self._config.auth, "unauthorized", None)
            if unauthorized is not None:
                unauthorized(headers.get("Authorization"))
        return _Refusal(status, data, response.headers.get("retry-after"))

    async def _send_decoding(
        self,
        method: str,
        path: str,
        params: Params | None,
        decoder: Callable[[], BodyDecoder],
        *,
        accept: str | None,
    ) -> Object | _Refusal:
        """One attempt of a request without a body whose 2xx answer ``decoder`` decodes as
        it arrives (:meth:`request`); connection failures raise."""
        pool = self.pool()
        headers = await self._prepare(method, None, accept)
        start = self._clock.now()
        code: int | None = None
        try:
            async with asyncio.timeout(self._timeout):
                response = await pool.request(
                    method, path, params=params, headers=headers, stream=True
                )
                try:
                    status = code = response.status
                    if not 200 <= status < 300:
                        return self._refusal(status, await response.read(), response, headers)
                    body = decoder()
                    while chunk := await response.read_chunk():
                        body.feed(chunk)
                finally:
                    response.close()
        except (HttpProtocolError, OSError, TimeoutError) as e:
            code = None
            raise _connection_error(method, path, e) from e
        finally:
            self._metrics.observe_request(method, self._host, code, self._clock.now() - start)
        return body.finish() if body.fed else {}

    async def open_stream(
        self, path: str, params: Params, *, accept: str | None = None
    ) -> Response:
        """Open a watch: a 200 response whose body is left to stream (close it when done),
        or the mapped error (after the same retries as :meth:`request`); ``accept`` as for
        :meth:`request`."""
        return await self._with_retries("GET", path, lambda: self._open_once(path, params, accept))

    async def _open_once(
        self, path: str, params: Params, accept: str | None
    ) -> Response | _Refusal:
        pool = self.pool()
        headers = await self._prepare("GET", None, accept)
        start = self._clock.now()
        code: int | None = None
        response: Response | None = None
        try:
            async with asyncio.timeout(self._timeout):
                response = await pool.request(
                    "GET", path, params=params, headers=headers, stream=True
                )
                status = code = response.status
                if status == 200:
                    return response
                data = await response.read()
                response.close()
        except BaseException as e:
            if response is not None:
                response.close()
            if isinstance(e, (HttpProtocolError, OSError, TimeoutError)):
                code = None
                raise _connection_error("GET", path, e) from e
            raise
        finally:
            self._metrics.observe_request("GET", self._host, code, self._clock.now() - start)
        return self._refusal(status, data, response, headers)


def _retry_after_seconds(status: int, value: str | None) -> int | None:
    """The wait a 429/5xx answer asks for, as client-go reads it: whole seconds only."""
    if status != 429 and status < 500:
        return None
    seconds = _parse_retry_after(value, int)
    return None if seconds is None else int(seconds)


def _parse_retry_after(value: str | None, parse: Callable[[str], float] = float) -> float | None:
    """``Retry-After`` in seconds (client-go reads only the delay-seconds form); ``parse``
    decides which numbers are accepted."""
    if not value:
        return None
    try:
        seconds = parse(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def _api_error(code: int, data: bytes, retry_after: str | None) -> ApiError:
    status: Any = None
    if data:
        try:
            status = orjson.loads(data)
        except orjson.JSONDecodeError:
            status = None
    return api_error_from_status(
        code, status if isinstance(status, dict) else None, _parse_retry_after(retry_after)
    )


def _connection_error(method: str, path: str, cause: BaseException) -> ApiConnectionError:
    if isinstance(cause, TimeoutError):
        return ApiConnectionError(f"{method} {path}: timed out")
    return ApiConnectionError(f"{method} {path}: {type(cause).__name__}: {cause}")
