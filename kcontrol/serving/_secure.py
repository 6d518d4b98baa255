"""The secure port: ``/metrics`` and the health checks over HTTPS, behind delegated
authentication and authorization, as kube-controller-manager serves them.

:class:`SecureServer` serves :class:`~kcontrol.serving.HealthServer`'s application on
``--bind-address:--secure-port`` with TLS (:mod:`kcontrol.serving._tls`), and puts a filter in
front of every handler - the ``WithAuthentication`` / ``WithAuthorization`` filters of
``k8s.io/apiserver``, or controller-runtime's ``WithAuthenticationAndAuthorization``:

1. a path in ``--authorization-always-allow-paths`` is served at once (probes need nothing);
2. authentication (:mod:`kcontrol.serving._authn`): a verified client certificate or a
   bearer token the API server accepts in a TokenReview, else ``401 Unauthorized``;
3. authorization (:mod:`kcontrol.serving._authz`): a SubjectAccessReview for the path and
   the lower-cased method (``get /metrics``), else ``403 Forbidden`` naming the user, verb
   and path;
4. a review that got no answer: ``401`` (authentication, as the apiserver answers) or
   ``500`` (authorization).

Connections are accepted under kube-controller-manager's timeouts and header cap, and a cap
on their number (:mod:`kcontrol.serving._listener`); TLS as ``--tls-min-version`` and
``--tls-cipher-suites`` say (:mod:`kcontrol.serving._tls`).

Refusals are the API server's ``Status`` objects (JSON), so ``kubectl get --raw`` and
Prometheus report them as they report the API server's. Why a request was refused is logged
at debug level (``-v=4``) with the path and the client address, never with its credentials.

The reviews go through their own clients, built from ``--authentication-kubeconfig`` and
``--authorization-kubeconfig``, or from the manager's connection when those are not given;
their requests are counted in ``rest_client_*`` and ``apiserver_delegated_auth{n,z}_*``.

Client CA: ``--client-ca-file``, or - unless ``--authentication-skip-lookup`` - the bundle in
``kube-system/extension-apiserver-authentication``, looked up once the server listens and
refreshed every :data:`CLIENT_CA_REFRESH_INTERVAL`. An API server that does not answer yet is
asked again for :data:`CLIENT_CA_LOOKUP_WAIT` seconds; a lookup that still fails, or is
forbidden, ends the run with :class:`~kcontrol.errors.ServingError` unless
``--authentication-tolerate-lookup-failure`` is set (then client certificates are refused
until a refresh succeeds). A cluster that publishes no client CA is not a failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from prometheus_client import CollectorRegistry

from kcontrol.client import ApiClient, ClientConfig, ConfigError, load_config
from kcontrol.clock import Clock, RealClock
from kcontrol.errors import (
    AuthenticationFailed,
    Forbidden,
    KcontrolError,
    ReviewFailed,
    ServingError,
)
from kcontrol.logging import get_logger
from kcontrol.serving._authn import (
    AUTHENTICATION_CONFIGMAP,
    DelegatingAuthenticator,
    TokenReviewAuthenticator,
    lookup_client_ca,
)
from kcontrol.serving._authz import AlwaysAllowPaths, SubjectAccessReviewAuthorizer
from kcontrol.serving._health import HealthServer
from kcontrol.serving._http import Handler, Request, Response
from kcontrol.serving._listener import ConnectionLimits, serve_app
from kcontrol.serving._options import ServingOptions
from kcontrol.serving._review import REVIEW_TIMEOUT
from kcontrol.serving._tls import CERT_RELOAD_INTERVAL, ServingTLS, ensure_self_signed

__all__ = ["CLIENT_CA_LOOKUP_WAIT", "CLIENT_CA_REFRESH_INTERVAL", "SecureServer"]

_log = get_logger(__name__)

CLIENT_CA_LOOKUP_WAIT = 10.0
"""Seconds the first client CA lookup keeps asking an API server that does not answer yet."""

CLIENT_CA_REFRESH_INTERVAL = 60.0
"""Seconds between two lookups of the cluster's client CA once the first one is done."""

_LOOKUP_RETRY = 1.0


class SecureServer:
    """Serves ``health``'s application over HTTPS with delegated authentication and
    authorization, configured by ``options`` (module docstring).

    ``registry`` receives the review metrics; ``clock`` drives the caches and the file and
    lookup polls; ``cert_reload_interval`` is how often the certificate files are checked;
    ``limits`` bounds the connections (default: kube-controller-manager's timeouts, see
    :class:`~kcontrol.serving.ConnectionLimits`). :meth:`run` blocks until
    cancelled.
    """

    def __init__(
        self,
        health: HealthServer,
        options: ServingOptions,
        *,
        registry: CollectorRegistry | None = None,
        clock: Clock | None = None,
        user_agent: str = "kcontrol-manager",
        cert_reload_interval: float = CERT_RELOAD_INTERVAL,
        limits: ConnectionLimits | None = None,
        shutdown_timeout: float = 2.0,
    ) -> None:
        self._health = health
        self._options = options
        self._registry = registry
        self._clock: Clock = clock if clock is not None else RealClock()
        self._user_agent = user_agent
        self._cert_reload_interval = cert_reload_interval
        self._limits = limits
        self._shutdown_timeout = shutdown_timeout
        self._always_allow = AlwaysAllowPaths(options.authorization_always_allow_paths)
        self._authenticator: DelegatingAuthenticator | None = None
        self._authorizer: SubjectAccessReviewAuthorizer | None = None
        self._started = asyncio.Event()
        self._bound_port: int | None = None

    @property
    def port(self) -> int:
        """The port listened on (resolves ``--secure-port=0`` in tests); valid once
        :meth:`wait_started` returned."""
        if self._bound_port is None:
            raise RuntimeError("the secure server is not listening")
        return self._bound_port

    async def wait_started(self) -> None:
        """Return once :meth:`run` listens."""
        await self._started.wait()

    async def run(self, client_config: ClientConfig, *, port: int | None = None) -> None:
        """Listen until cancelled; ``client_config`` is the manager's connection, used for
        reviews unless ``--authentication-kubeconfig`` / ``--authorization-kubeconfig`` name
        another; ``port`` overrides ``--secure-port`` (``0``: a free port, for tests).

        Raises :class:`~kcontrol.errors.ServingError` for unusable certificate files or
        kubeconfigs and :class:`OSError` when it cannot listen; a client CA lookup that fails
        (module docstring) ends it with the ServingError in an :class:`ExceptionGroup`, as it
        happens while serving.
        """
        options = self._options
        authn_config = await _review_config(
            options.authentication_kubeconfig, client_config, "--authentication-kubeconfig"
        )
        authz_config = await _review_config(
            options.authorization_kubeconfig, client_config, "--authorization-kubeconfig"
        )
        lookup = options.client_ca_file is None and not options.authentication_skip_lookup
        async with (
            self._serving_pair() as (cert_file, key_file),
            self._review_client(authn_config) as authn_client,
            self._review_client(authz_config) as authz_client,
        ):
            tls = ServingTLS(
                cert_file,
                key_file,
                client_ca_file=Path(options.client_ca_file) if options.client_ca_file else None,
                request_client_certificates=lookup,
                reload_interval=self._cert_reload_interval,
                clock=self._clock,
                min_version=options.tls_min_version,
                cipher_suites=options.tls_cipher_suites,
            )
            tls.load()
            self._authenticator = DelegatingAuthenticator(
                TokenReviewAuthenticator(
                    authn_client,
                    cache_ttl=options.authentication_token_webhook_cache_ttl,
                    clock=self._clock,
                    registry=self._registry,
                )
            )
            self._authorizer = SubjectAccessReviewAuthorizer(
                authz_client,
                authorized_ttl=options.authorization_webhook_cache_authorized_ttl,
                unauthorized_ttl=options.authorization_webhook_cache_unauthorized_ttl,
                clock=self._clock,
                registry=self._registry,
            )
            host = options.bind_address
            async with serve_app(
                self._health.build_app(filters=[self._filter]),
                host,
                options.secure_port if port is None else port,
                ssl_context=lambda: tls.context,
                limits=self._limits,
                shutdown_timeout=self._shutdown_timeout,
                what="metrics and health checks over HTTPS",
            ) as listener:
                self._bound_port = listener.port
                _log.info(
                    "serving metrics and health checks over HTTPS",
                    address=f"{host}:{listener.port}",
                    cert=str(cert_file),
                )
                self._started.set()
                try:
                    async with asyncio.TaskGroup() as tasks:
                        tasks.create_task(listener.serve(), name="accept connections")
                        tasks.create_task(tls.run(), name="serving certificate reload")
                        if lookup:
                            tasks.create_task(
                                self._look_up_client_ca(authn_client, tls),
                                name="client CA lookup",
                            )
                finally:
                    self._started.clear()
                    self._bound_port = None

    # -- set-up ------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _serving_pair(self) -> AsyncIterator[tuple[Path, Path]]:
        """The serving certificate and key files (module docstring of ``_tls``)."""
        options = self._options
        if options.tls_cert_file and options.tls_private_key_file:
            yield Path(options.tls_cert_file), Path(options.tls_private_key_file)
            return
        hosts = ["localhost", "127.0.0.1", socket.gethostname()]
        if options.bind_address not in ("0.0.0.0", "::"):
            hosts.append(options.bind_address)
        if options.cert_dir:
            yield await asyncio.to_thread(ensure_self_signed, Path(options.cert_dir), hosts)
            return
        with tempfile.TemporaryDirectory(prefix="kcontrol-manager-certs-") as directory:
            yield await asyncio.to_thread(ensure_self_signed, Path(directory), hosts)

    @contextlib.asynccontextmanager
    async def _review_client(self, config: ClientConfig) -> AsyncIterator[ApiClient]:
        # Its own client: reviews neither wait behind the controllers' rate limit nor spend
        # it (the API server's priority and fairness bounds them). No retries: a review is
        # not worth waiting for.
        async with ApiClient(
            config,
            qps=0,
            user_agent=self._user_agent,
            timeout=REVIEW_TIMEOUT,
            registry=self._registry,
            clock=self._clock,
            max_retries=0,
        ) as client:
            yield client

    async def _look_up_client_ca(self, client: ApiClient, tls: ServingTLS) -> None:
        """Look the cluster's client CA up, then refresh it until cancelled (module
        docstring); raises :class:`~kcontrol.errors.ServingError` when the first lookup fails
        and failures are not tolerated."""
        namespace, name = AUTHENTICATION_CONFIGMAP
        where = f"configmap/{name} in {namespace}"
        deadline = self._clock.now() + CLIENT_CA_LOOKUP_WAIT
        while True:
            try:
                bundle = await lookup_client_ca(client)
                tls.set_client_ca(bundle)
            except Forbidden as error:
                failure = (
                    f"unable to get {where}: {error}. Usually fixed by 'kubectl create "
                    f"rolebinding -n {namespace} ROLEBINDING_NAME "
                    "--role=extension-apiserver-authentication-reader "
                    "--serviceaccount=YOUR_NS:YOUR_SA'"
                )
            except (KcontrolError, TimeoutError) as error:
                if not isinstance(error, ServingError) and self._clock.now() < deadline:
                    await self._clock.sleep(_LOOKUP_RETRY)
                    continue
                failure = f"unable to look up the client CA in {where}: {error}"
            else:
                if bundle is None:
                    _log.info(f"no client-ca-file in {where}: client certificates are refused")
                break
            if not self._options.authentication_tolerate_lookup_failure:
                raise ServingError(
                    failure + " (or set --client-ca-file, --authentication-skip-lookup or "
                    "--authentication-tolerate-lookup-failure)"
                )
            _log.warning(
                f"{failure}; continuing without client certificate authentication "
                "(--authentication-tolerate-lookup-failure)"
            )
            break
        while True:
            await self._clock.sleep(CLIENT_CA_REFRESH_INTERVAL)
            try:
                tls.set_client_ca(await lookup_client_ca(client))
            except (KcontrolError, TimeoutError) as error:
                _log.warning(f"client CA refresh from {where} failed", error=str(error))

    # -- the filter --------------------------------------------------------------------------

    async def _filter(self, request: Request, handler: Handler) -> Response:
        path = request.path
        if self._always_allow.allows(path):
            return await handler(request)
        authenticator, authorizer = self._authenticator, self._authorizer
        if authenticator is None or authorizer is None:  # not listening yet
            return _status(503, "ServiceUnavailable", "starting")
        log = _log.bind(path=path, remote=request.remote)
        try:
            user = await authenticator.authenticate(
                peer_certificate=request.peer_certificate,
                authorization=request.headers.get("authorization"),
            )
        except AuthenticationFailed as failure:
            log.debug("request not authenticated", reason=str(failure))
            return _status(401, "Unauthorized", "Unauthorized")
        except ReviewFailed as failure:
            log.warning("unable to authenticate the request", reason=str(failure))
            return _status(401, "Unauthorized", "Unauthorized")
        verb = request.method.lower()
        try:
            decision = await authorizer.authorize(user, verb, path)
        except ReviewFailed as failure:
            log.warning("unable to authorize the request", user=user.username, reason=str(failure))
            return _status(500, "InternalError", "Internal error occurred: authorization failed")
        if not decision.allowed:
            message = (
                f"forbidden: User {json.dumps(user.username)} cannot {verb} path {json.dumps(path)}"
            )
            if decision.reason:
                message += f": {decision.reason}"
            log.debug("request forbidden", user=user.username, reason=decision.reason)
            return _status(403, "Forbidden", message)
        return await handler(request)


async def _review_config(kubeconfig: str | None, default: ClientConfig, flag: str) -> ClientConfig:
    if not kubeconfig:
        return default
    try:
        return await load_config(kubeconfig=kubeconfig)
    except ConfigError as error:
        raise ServingError(f"{flag}: {error}") from None


def _status(code: int, reason: str, message: str) -> Response:
    """A ``metav1.Status`` failure, as the API server writes refusals."""
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    headers = {"X-Content-Type-Options": "nosniff"}
    return Response.json(body, code, headers)
