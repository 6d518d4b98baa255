"""The webhook server: admission (and later conversion) webhooks over HTTPS, on the listener
the secure port uses (:mod:`kcontrol.serving._listener`), with its limits and timeouts, plus
request bodies - controller-runtime's ``webhook.Server``.

- Certificates: ``cert_file``/``key_file`` (a pair a cert-manager ``Certificate`` or the
  operator's chart provides), reloaded when the files change (checked every 10 s:
  controller-runtime's ``certwatcher``); or, without them, a self-signed pair generated into
  ``cert_dir`` for ``hosts`` (kept across restarts while it loads) - for development: the
  webhook configurations must then carry :attr:`WebhookServer.ca_bundle`.
- Requests: ``POST`` only, bodies up to :data:`MAX_BODY_BYTES` (an ``AdmissionReview``
  holds the object and the old one; the API server's own limit on an object is 3 MiB);
  the connection limits are the secure port's (:class:`~kcontrol.serving.ConnectionLimits`)
  but for the number of connections, :data:`WEBHOOK_MAX_CONNECTIONS`: the API server calls
  over HTTP/1.1 here, one connection per call in flight, and a connection closed to make
  room may be the one it is about to reuse - a ``broken pipe`` that fails the user's write
  (Go never resends a POST). The process's soft limit on open files is raised to its hard
  limit when the server starts, as every Go program does, so the cap is reachable.
- No authentication of the caller, as controller-runtime's default: the API server calls
  webhooks without credentials unless configured to; restrict who reaches the port with a
  NetworkPolicy (``deploy/`` shows one).
- :meth:`WebhookServer.run` serves until cancelled; :meth:`WebhookServer.wait_ready` returns
  once it listens (the manager's ``/readyz`` waits for it). Served by every replica: webhooks
  are stateless, so a Service spreads the calls over all of them, leaders or not.
"""

from __future__ import annotations

import asyncio
import resource
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from kcontrol.logging import get_logger
from kcontrol.serving import ConnectionLimits
from kcontrol.serving._http import App, Handler
from kcontrol.serving._listener import serve_app
from kcontrol.serving._tls import CERT_RELOAD_INTERVAL, ServingTLS, ensure_self_signed

__all__ = [
    "DEFAULT_WEBHOOK_PORT",
    "MAX_BODY_BYTES",
    "WEBHOOK_MAX_CONNECTIONS",
    "WebhookOptions",
    "WebhookServer",
]

_log = get_logger(__name__)

_SPARE_DESCRIPTORS = 256
"""Descriptors left for the rest of the process (informers' watches, the Lease, logs)."""

DEFAULT_WEBHOOK_PORT: Final = 9443
"""controller-runtime's default webhook port."""

MAX_BODY_BYTES: Final = 8 << 20
"""The largest request body read, 8 MiB: an AdmissionReview of an object and its old version
at the API server's 3 MiB limit each, plus their encoding."""

WEBHOOK_MAX_CONNECTIONS: Final = 2048
"""Connections the webhook server keeps open at once (the secure port's default is 256):
above kube-apiserver's default ceiling of requests in flight (400 reads + 200 writes), each
of which may hold one connection to a webhook, so that under a burst of writes no
connection the API server is about to reuse is closed to make room for another."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookOptions:
    """Where and how the webhook server listens (module docstring): ``port`` (0: a free
    one), ``bind_address``, a certificate pair (``cert_file``/``key_file``, checked for
    changes every ``cert_reload_interval`` seconds) or a directory for a generated one
    (``cert_dir``; default: a new temporary directory) valid for ``hosts``.

    ``install_url``: managed mode (:func:`~kcontrol.webhook.install_webhooks`) - once the
    server listens, the manager applies webhook configurations (named ``install_name``, by
    default the manager's name) and the CRDs' conversion settings pointing the API server at
    this URL (``https://127.0.0.1:9443`` for a local cluster; ``{port}`` in it stands for the
    port the server listens on), with the serving certificate as their bundle. ``None``: the
    configurations are the operator's manifests'."""

    port: int = DEFAULT_WEBHOOK_PORT
    bind_address: str = "0.0.0.0"
    cert_file: Path | None = None
    key_file: Path | None = None
    cert_dir: Path | None = None
    hosts: Sequence[str] = field(default=("localhost", "127.0.0.1"))
    cert_reload_interval: float = CERT_RELOAD_INTERVAL
    install_url: str | None = None
    install_name: str = ""

    def __post_init__(self) -> None:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("a webhook certificate needs both cert_file and key_file")


def raise_open_file_limit(wanted: int) -> None:
    """Raise this process's soft limit on open files to its hard limit, as the Go runtime does
    at every start (Python does not); warn when even the hard limit leaves fewer than
    ``wanted`` descriptors for connections beside the ones the process already uses."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (OSError, ValueError) as error:
            _log.warning(
                "could not raise the open file limit", soft=soft, hard=hard, error=str(error)
            )
    if soft != resource.RLIM_INFINITY and soft < wanted + _SPARE_DESCRIPTORS:
        _log.warning(
            "the open file limit is below the webhook server's connection cap; "
            "calls beyond it will fail to connect",
            open_files=soft,
            max_connections=wanted,
        )


class WebhookServer:
    """Serves the handlers :meth:`register`\\ ed at their paths (module docstring)."""

    def __init__(
        self, options: WebhookOptions | None = None, *, limits: ConnectionLimits | None = None
    ) -> None:
        self.options = options or WebhookOptions()
        base = limits or ConnectionLimits(max_connections=WEBHOOK_MAX_CONNECTIONS)
        self._limits = ConnectionLimits(
            header_timeout=base.header_timeout,
            idle_timeout=base.idle_timeout,
            max_header_bytes=base.max_header_bytes,
            max_connections=base.max_connections,
            max_body_bytes=MAX_BODY_BYTES,
        )
        self._app = App()
        self._paths: list[str] = []
        self._tls: ServingTLS | None = None
        self._ready = asyncio.Event()
        self._port = 0
        self._tls_cert_file: Path | None = None

    def register(self, path: str, handler: Handler) -> None:
        """Serve ``handler`` for ``POST path``; before :meth:`run`."""
        if not path.startswith("/"):
            raise ValueError(f"a webhook path starts with '/': {path!r}")
        if path in self._paths:
            raise ValueError(f"a webhook is registered at {path} already")
        self._app.add(path, handler, methods=("POST",))
        self._paths.append(path)

    @property
    def paths(self) -> list[str]:
        """The registered paths, in order."""
        return list(self._paths)

    @property
    def port(self) -> int:
        """The port it listens on (once ready)."""
        return self._port

    @property
    def ca_bundle(self) -> bytes:
        """The serving certificate (PEM), once ready: the ``caBundle`` of the webhook
        configurations when the certificate is self-signed."""
        if self._tls_cert_file is None:
            raise RuntimeError("the webhook server has not loaded its certificate yet")
        return self._tls_cert_file.read_bytes()

    def ready(self) -> bool:
        return self._ready.is_set()

    async def wait_ready(self) -> None:
        await self._ready.wait()

    async def run(self) -> None:
        """Load the certificate, listen, and serve until cancelled."""
        options = self.options
        if options.cert_file is not None and options.key_file is not None:
            cert_file, key_file = options.cert_file, options.key_file
        else:
            directory = options.cert_dir or Path(tempfile.mkdtemp(prefix="kcontrol-webhook-"))
            cert_file, key_file = ensure_self_signed(directory, list(options.hosts))
        self._tls_cert_file = cert_file
        raise_open_file_limit(self._limits.max_connections)
        tls = ServingTLS(cert_file, key_file, reload_interval=options.cert_reload_interval)
        tls.load()
        self._tls = tls

        async with serve_app(
            self._app,
            options.bind_address,
            options.port,
            ssl_context=lambda: tls.context,
            limits=self._limits,
            what="webhooks",
        ) as listener:
            self._port = listener.port
            self._ready.set()
            _log.info("serving webhooks", port=listener.port, paths=self._paths)
            try:
                async with asyncio.TaskGroup() as tasks:
                    tasks.create_task(listener.serve(), name="accept webhook connections")
                    tasks.create_task(tls.run(), name="webhook certificate reload")
            finally:
                self._ready.clear()
