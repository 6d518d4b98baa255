"""The health and metrics endpoint: Prometheus metrics and kube-style health checks.

Paths, as kube components serve them:

- ``/metrics``: the Prometheus text exposition of a registry (OpenMetrics when asked for).
- ``/livez``: liveness checks (``ping``, plus e.g. ``leaderElection``: a leader whose lease
  renewal is overdue is stuck and should be restarted).
- ``/readyz``: the liveness checks plus readiness checks (caches synced, not shutting down).
- ``/healthz``: every check, like ``/readyz`` (kept for tools that only know ``/healthz``).
- ``/<endpoint>/<check>``: one check alone.

Answers follow ``k8s.io/apiserver/pkg/server/healthz``: ``200 ok`` when every check passes;
otherwise ``500`` and one line per check (``[+]name ok`` / ``[-]name failed: reason
withheld``) ending in ``<endpoint> check failed``. ``?verbose`` lists the checks on success too;
``?exclude=name`` (repeatable) skips a check. Why a check failed is logged, never served:
health paths are served to anyone.

:meth:`HealthServer.run` serves the application over plain HTTP, without authentication:
``kcontrol-manager --metrics-port``, an opt-in for local runs, on ``127.0.0.1`` unless
``--metrics-bind-address`` says otherwise. The secure port
(:class:`~kcontrol.serving.SecureServer`) serves the same application over HTTPS,
behind delegated authentication and authorization, as kube-controller-manager does. Both
accept connections under the same limits (:mod:`kcontrol.serving._listener`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.exposition import choose_encoder

from kcontrol.logging import get_logger
from kcontrol.serving._http import App, Filter, Handler, Request, Response, error_response
from kcontrol.serving._listener import ConnectionLimits, serve_app

__all__ = ["HealthCheck", "HealthServer", "NamedCheck"]

_log = get_logger(__name__)

HealthCheck = Callable[[], object]
"""A health check: healthy when it returns anything but ``False``; unhealthy when it returns
``False`` or raises (any :class:`Exception`, whose message is logged, never served)."""


@dataclass(frozen=True, slots=True)
class NamedCheck:
    """A check and the name it is listed under (``[+]name ok``)."""

    name: str
    check: HealthCheck


def _ping() -> None:
    """The check that always passes: the process answers HTTP."""


class HealthServer:
    """Serves ``/metrics``, ``/healthz``, ``/livez`` and ``/readyz``; see the module docstring.

    ``host``/``port``: where to listen (``port=0`` picks a free port; read :attr:`port` once
    :meth:`wait_started` returned). ``registry``: the Prometheus registry served on
    ``/metrics`` (default: the global one). ``limits``: the connections' timeouts and caps
    (default: kube-controller-manager's, see :class:`~kcontrol.serving.ConnectionLimits`).
    Checks can be added before or while running.

    :meth:`run` blocks until cancelled; on the way out it stops listening and closes every
    connection before the cancellation propagates.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 10257,
        registry: CollectorRegistry | None = None,
        shutdown_timeout: float = 2.0,
        limits: ConnectionLimits | None = None,
    ) -> None:
        self._host = host
        self._port = port
        self._registry = registry if registry is not None else REGISTRY
        self._shutdown_timeout = shutdown_timeout
        self._limits = limits
        self._livez: list[NamedCheck] = [NamedCheck("ping", _ping)]
        self._readyz: list[NamedCheck] = []
        self._started = asyncio.Event()
        self._bound_port: int | None = None

    # -- checks ------------------------------------------------------------------------------

    def add_livez_check(self, name: str, check: HealthCheck) -> None:
        """Add a liveness check; it is also part of ``/readyz`` and ``/healthz``."""
        self._add(self._livez, name, check)

    def add_readyz_check(self, name: str, check: HealthCheck) -> None:
        """Add a readiness check (``/readyz`` and ``/healthz`` only)."""
        self._add(self._readyz, name, check)

    def _add(self, checks: list[NamedCheck], name: str, check: HealthCheck) -> None:
        if not name or "/" in name:
            raise ValueError(f"invalid check name {name!r}")
        if any(c.name == name for c in (*self._livez, *self._readyz)):
            raise ValueError(f"duplicate health check {name!r}")
        checks.append(NamedCheck(name, check))

    def checks(self, endpoint: str) -> list[NamedCheck]:
        """The checks of ``livez``, ``readyz`` or ``healthz``, in order."""
        if endpoint == "livez":
            return list(self._livez)
        if endpoint in ("readyz", "healthz"):
            return [*self._livez, *self._readyz]
        raise ValueError(f"unknown endpoint {endpoint!r}")

    # -- serving -----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port listened on (resolves ``port=0``); only valid once started."""
        if self._bound_port is None:
            raise RuntimeError("the health server is not listening")
        return self._bound_port

    async def wait_started(self) -> None:
        """Return once :meth:`run` listens."""
        await self._started.wait()

    def build_app(self, filters: Iterable[Filter] = ()) -> App:
        """The application: an async callable from request to response; ``filters`` see
        every request first (the secure port's authentication and authorization)."""
        app = App(filters)
        app.add("/metrics", self._metrics)
        for endpoint in ("healthz", "livez", "readyz"):
            app.add(f"/{endpoint}", self._health_handler(endpoint), subpath=True)
        return app

    async def run(self) -> None:
        """Listen until cancelled, then stop listening and close connections.

        Raises :class:`OSError` naming the address when it cannot listen (port taken)."""
        try:
            async with serve_app(
                self.build_app(),
                self._host,
                self._port,
                limits=self._limits,
                shutdown_timeout=self._shutdown_timeout,
                what="metrics and health checks over plain HTTP",
            ) as listener:
                self._bound_port = listener.port
                _log.info(
                    "serving metrics and health checks over plain HTTP, without authentication",
                    address=f"{self._host}:{listener.port}",
                )
                self._started.set()
                await listener.serve()  # until cancelled
        finally:
            self._started.clear()
            self._bound_port = None

    async def _metrics(self, request: Request) -> Response:
        # Content negotiation as prometheus_client's own exporters do it: the classic text
        # format (0.0.4) unless the scraper asks for OpenMetrics.
        encoder, content_type = choose_encoder(request.headers.get("accept", ""))
        return Response(200, encoder(self._registry), {"Content-Type": content_type})

    def _health_handler(self, endpoint: str) -> Handler:
        async def handler(request: Request) -> Response:
            checks = self.checks(endpoint)
            only = request.tail
            if only is not None:
                checks = [c for c in checks if c.name == only]
                if not checks:
                    return error_response(404, f"no {endpoint} check named {only!r}")
            status, body = evaluate(
                endpoint,
                checks,
                verbose="verbose" in request.query,
                exclude=request.query.get("exclude", []),
            )
            return Response.text(body, status, {"X-Content-Type-Options": "nosniff"})

        return handler


def evaluate(
    endpoint: str,
    checks: Iterable[NamedCheck],
    *,
    verbose: bool = False,
    exclude: Iterable[str] = (),
) -> tuple[int, str]:
    """Run ``checks`` and render the answer as kube does: ``(http status, body)``."""
    excluded = set(exclude)
    lines: list[str] = []
    failed = False
    for named in checks:
        if named.name in excluded:
            excluded.discard(named.name)
            lines.append(f"[+]{named.name} excluded: ok")
            continue
        try:
            healthy = named.check() is not False
            reason = "returned false"
        except Exception as error:
            healthy = False
            reason = str(error) or type(error).__name__
        if healthy:
            lines.append(f"[+]{named.name} ok")
        else:
            failed = True
            lines.append(f"[-]{named.name} failed: reason withheld")
            _log.info("health check failed", endpoint=endpoint, check=named.name, reason=reason)
    if excluded:
        names = ", ".join(f'"{name}"' for name in sorted(excluded))
        lines.append(f"warn: some health checks cannot be excluded: no matches for {names}")
    if failed:
        return 500, "\n".join([*lines, f"{endpoint} check failed"]) + "\n"
    if verbose:
        return 200, "\n".join([*lines, f"{endpoint} check passed"]) + "\n"
    return 200, "ok"
