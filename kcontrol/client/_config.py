"""Where the API server is and how to authenticate: :class:`ClientConfig`, :func:`load_config`.

Sources, in the order :func:`load_config` considers them (as clientcmd's default loading rules):

1. a kubeconfig (``kubeconfig=``, else ``$KUBECONFIG``, else ``~/.kube/config``), read with
   ``kubernetes_asyncio.config``: contexts, client certificates, static tokens, ``tokenFile``
   (re-read periodically) and ``exec`` credential plugins (re-run when their token expires);
2. the in-cluster service account (``/var/run/secrets/kubernetes.io/serviceaccount``), whose
   projected token rotates: it is re-read once a minute, never cached forever.

Credentials are produced per request by an :class:`AuthProvider`, so rotation needs no restart.
File reads and YAML parsing run in a worker thread; exec plugins run as asyncio subprocesses.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import yaml
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config import incluster_config
from kubernetes_asyncio.config.config_exception import ConfigException
from kubernetes_asyncio.config.kube_config import (
    ENV_KUBECONFIG_PATH_SEPARATOR,
    KubeConfigLoader,
    KubeConfigMerger,
)

from kcontrol.clock import Clock, RealClock
from kcontrol.errors import ConfigError
from kcontrol.logging import get_logger

__all__ = [
    "AuthProvider",
    "ClientConfig",
    "ConfigError",
    "KubeConfigurationAuth",
    "StaticTokenAuth",
    "TokenFileAuth",
    "load_config",
]

_log = get_logger(__name__)

TOKEN_REFRESH_INTERVAL = 60.0
"""Seconds after which a token file is read again (client-go re-reads projected tokens too)."""

EXEC_EXPIRY_SKEW = timedelta(minutes=5)
"""An exec plugin's token is renewed this long before its ``expirationTimestamp``."""


class AuthProvider(Protocol):
    """Produces the ``Authorization`` header value for each request.

    Called before every request, so it must be cheap when nothing needs refreshing; it may
    return ``None`` (no header: client certificates or anonymous access).
    """

    async def authorization(self) -> str | None: ...


class StaticTokenAuth:
    """A fixed bearer token (``token`` may already carry its scheme, e.g. ``Basic ...``)."""

    def __init__(self, token: str) -> None:
        has_scheme = token.startswith(("Bearer ", "Basic "))
        self._header = token if has_scheme else f"Bearer {token}"

    async def authorization(self) -> str | None:
        return self._header

    def __repr__(self) -> str:
        return "StaticTokenAuth(<redacted>)"


class TokenFileAuth:
    """A bearer token read from a file that is rotated underneath us (projected SA tokens).

    The file is read again once the cached token is ``refresh_interval`` seconds old. If a
    re-read fails while a token is cached, the cached token is used and the read retried on
    the next request; the first read's failure propagates as :class:`ConfigError`.
    """

    def __init__(
        self,
        path: str,
        *,
        refresh_interval: float = TOKEN_REFRESH_INTERVAL,
        clock: Clock | None = None,
    ) -> None:
        self._path = path
        self._refresh_interval = refresh_interval
        self._clock: Clock = clock or RealClock()
        self._header: str | None = None
        self._read_at = 0.0
        self._lock = asyncio.Lock()

    @property
    def path(self) -> str:
        return self._path

    def _fresh(self) -> bool:
        age = self._clock.now() - self._read_at
        return self._header is not None and age < self._refresh_interval

    async def authorization(self) -> str | None:
        if self._fresh():
            return self._header
        async with self._lock:  # one reader; the others then find the fresh token
            if not self._fresh():
                await self._reload()
        return self._header

    async def _reload(self) -> None:
        try:
            token = (await asyncio.to_thread(_read_text, self._path)).strip()
            if not token:
                raise ConfigError(f"token file {self._path} is empty")
        except (OSError, ConfigError) as e:
            if self._header is None:
                raise ConfigError(f"cannot read token file {self._path}: {e}") from e
            _log.warning(
                "re-reading the token file failed, using the cached token",
                path=self._path,
                error=str(e),
            )
            return
        self._header = f"Bearer {token}"
        self._read_at = self._clock.now()

    def __repr__(self) -> str:
        return f"TokenFileAuth({self._path!r})"


class KubeConfigurationAuth:
    """Credentials from a ``kubernetes_asyncio.client.Configuration``.

    Asks the configuration for its bearer token each time, which runs its
    ``refresh_api_key_hook`` (set by :func:`load_config` for exec plugins, and by
    kubernetes_asyncio's in-cluster loader); falls back to HTTP basic auth.
    """

    def __init__(self, configuration: Configuration) -> None:
        self._configuration = configuration

    async def authorization(self) -> str | None:
        cfg = self._configuration
        if cfg.api_key or cfg.refresh_api_key_hook is not None:
            value = await cfg.get_api_key_with_prefix("BearerToken", alias="authorization")
            if value:
                return str(value)
        if cfg.username is not None or cfg.password is not None:
            return str(cfg.get_basic_auth_token())
        return None

    def __repr__(self) -> str:
        return "KubeConfigurationAuth(<redacted>)"


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """How to reach one API server.

    ``host`` is the base URL (``https://10.0.0.1:6443``, possibly with a path prefix);
    ``ca_file``/``ca_data`` (PEM) are the CAs to trust instead of the system's;
    ``cert_file``/``key_file`` a client certificate; ``auth`` produces the
    ``Authorization`` header. ``disable_compression`` stops asking the server to gzip
    responses (client-go's ``rest.Config.DisableCompression``): on a fast network gzip costs
    the apiserver and the client more CPU than it saves in transfer time, which is why
    kube-controller-manager and kube-scheduler turn it off. Build one with
    :func:`load_config`, :meth:`from_kube_configuration` or :meth:`in_cluster`, or
    directly (``dataclasses.replace`` changes a field of a loaded one).
    """

    host: str
    auth: AuthProvider | None = None
    ca_file: str | None = None
    ca_data: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    insecure_skip_tls_verify: bool = False
    tls_server_name: str | None = None
    proxy: str | None = None
    disable_compression: bool = False
    # Cache for ssl_context(): built on first use, shared by every client of this config.
    _ssl: list[ssl.SSLContext] = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.host.startswith(("https://", "http://")):
            raise ConfigError(f"host must be an http(s) URL, got {self.host!r}")

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context for ``https`` hosts (built once, then shared); ``None`` for http."""
        if not self.host.startswith("https://"):
            return None
        if not self._ssl:
            self._ssl.append(self._build_ssl_context())
        return self._ssl[0]

    def _build_ssl_context(self) -> ssl.SSLContext:
        """The TLS context; unreadable or malformed CA or client certificate files raise
        :class:`ConfigError` naming them."""
        try:
            if self.ca_file or self.ca_data:
                ctx = ssl.create_default_context(cafile=self.ca_file, cadata=self.ca_data)
            else:
                ctx = ssl.create_default_context()
        except (OSError, ValueError) as e:  # ssl.SSLError is an OSError
            source = self.ca_file or "certificate-authority-data"
            raise ConfigError(f"cannot load the CA certificate {source}: {_reason(e)}") from e
        if self.cert_file:
            try:
                ctx.load_cert_chain(self.cert_file, self.key_file)
            except OSError as e:
                raise ConfigError(
                    f"cannot load the client certificate {self.cert_file} "
                    f"(key {self.key_file or 'in the same file'}): {_reason(e)}"
                ) from e
        if self.insecure_skip_tls_verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        return ctx

    @classmethod
    def from_kube_configuration(cls, configuration: Configuration) -> ClientConfig:
        """Adopt a ready ``kubernetes_asyncio.client.Configuration`` (host, TLS, credentials).

        The configuration is kept and asked for its token on every request, so a refresh
        hook it carries keeps working.
        """
        return cls(
            host=str(configuration.host).rstrip("/"),
            auth=KubeConfigurationAuth(configuration),
            ca_file=configuration.ssl_ca_cert or None,
            cert_file=configuration.cert_file or None,
            key_file=configuration.key_file or None,
            insecure_skip_tls_verify=not configuration.verify_ssl,
            tls_server_name=configuration.tls_server_name or None,
            proxy=configuration.proxy or None,
        )

    @classmethod
    async def in_cluster(
        cls,
        *,
        token_file: str = incluster_config.SERVICE_TOKEN_FILENAME,
        ca_file: str = incluster_config.SERVICE_CERT_FILENAME,
        environ: Mapping[str, str] | None = None,
        clock: Clock | None = None,
    ) -> ClientConfig:
        """The pod's service account: ``KUBERNETES_SERVICE_HOST``/``_PORT``, its CA, and its
        token file (re-read every minute; the kubelet rotates it)."""
        env = os.environ if environ is None else environ
        host = env.get(incluster_config.SERVICE_HOST_ENV_NAME)
        port = env.get(incluster_config.SERVICE_PORT_ENV_NAME)
        if not host or not port:
            raise ConfigError("not running in a cluster: KUBERNETES_SERVICE_HOST/PORT unset")
        if not await asyncio.to_thread(os.path.isfile, ca_file):
            raise ConfigError(f"service account CA file {ca_file} does not exist")
        auth = TokenFileAuth(token_file, clock=clock)
        await auth.authorization()  # fail now, not on the first request
        host_port = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        return cls(host=f"https://{host_port}", auth=auth, ca_file=ca_file)


async def load_config(
    *,
    kubeconfig: str | None = None,
    context: str | None = None,
    host: str | None = None,
    token: str | None = None,
    in_cluster: bool | None = None,
) -> ClientConfig:
    """Load a :class:`ClientConfig` the way kubectl and client-go do.

    ``in_cluster=None`` picks the kubeconfig if one is named (argument or ``$KUBECONFIG``) or
    ``~/.kube/config`` exists, else the in-cluster service account. ``context`` selects a
    kubeconfig context (default: its ``current-context``). ``host`` and ``token`` override
    what was loaded. Raises :class:`ConfigError` when nothing usable is found.
    """
    if in_cluster is None:
        in_cluster = kubeconfig is None and not await asyncio.to_thread(_default_kubeconfig)
    try:
        if in_cluster:
            config = await ClientConfig.in_cluster()
        else:
            config = await _from_kubeconfig(kubeconfig or _default_kubeconfig(), context)
    except ConfigException as e:
        raise ConfigError(str(e)) from e
    if host is not None:
        config = dataclasses.replace(config, host=host.rstrip("/"))
    if token is not None:
        config = dataclasses.replace(config, auth=StaticTokenAuth(token))
    return config


def _default_kubeconfig() -> str:
    """``$KUBECONFIG`` or ``~/.kube/config`` if it exists, else ``""``."""
    env = os.environ.get("KUBECONFIG")
    if env:
        return env
    path = os.path.expanduser("~/.kube/config")
    return path if os.path.exists(path) else ""


async def _from_kubeconfig(paths: str, context: str | None) -> ClientConfig:
    if not paths:
        raise ConfigError("no kubeconfig found and not running in a cluster")
    loader, user, configuration = await asyncio.to_thread(_load_kubeconfig, paths, context)
    if user is not None and "exec" in user:
        configuration.refresh_api_key_hook = _ExecTokenRefresher(loader)
    config = ClientConfig.from_kube_configuration(configuration)
    token_file = _token_file(user)
    if token_file is not None:
        config = dataclasses.replace(config, auth=TokenFileAuth(token_file))
    return config


def _load_kubeconfig(
    paths: str, context: str | None
) -> tuple[KubeConfigLoader, Any, Configuration]:
    """Read, merge and resolve the kubeconfig files into a Configuration.

    Blocking (YAML parsing, certificate files, credential plugins - some auth providers call
    blocking libraries), so it runs in a worker thread, on an event loop of its own there.

    A file that cannot be read, is not YAML or is not a kubeconfig-shaped mapping raises
    :class:`ConfigError` naming it (one line, as kubectl reports it), never the loader's
    own exception.
    """
    listed = [p for p in paths.split(ENV_KUBECONFIG_PATH_SEPARATOR) if p]
    existing = [p for p in listed if os.path.exists(os.path.expanduser(p))]
    if not existing:
        raise ConfigError(f"kubeconfig {paths} does not exist")
    for path in existing:
        _check_kubeconfig_file(path)
    try:
        merger = KubeConfigMerger(paths)
        loader = KubeConfigLoader(
            config_dict=merger.config, active_context=context, config_base_path=None
        )
        configuration = Configuration()
        asyncio.run(loader.load_and_set(configuration))
        return loader, _current_user(merger, context), configuration
    except (AssertionError, AttributeError, KeyError, TypeError, ValueError) as e:
        # The loader asserts and indexes its way through the document: a field of the
        # wrong type, or an empty context, cluster or user entry, ends up here.
        reason = _reason(e)
        if isinstance(e, AssertionError) and not str(e):
            reason = "the current context, its cluster or its user is empty"
        raise ConfigError(f"kubeconfig {paths} is malformed: {reason}") from e


def _check_kubeconfig_file(path: str) -> None:
    """Raise :class:`ConfigError` unless ``path`` reads as a YAML mapping (a kubeconfig)."""
    try:
        text = _read_text(os.path.expanduser(path))
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"kubeconfig {path} cannot be read: {_reason(e)}") from e
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"kubeconfig {path} is not valid YAML: {_yaml_problem(e)}") from e
    if document is None:
        raise ConfigError(f"kubeconfig {path} is empty")
    if not isinstance(document, dict):
        raise ConfigError(
            f"kubeconfig {path} is not a kubeconfig: the document is a "
            f"{type(document).__name__}, not a mapping"
        )


def _yaml_problem(error: Exception) -> str:
    """One line: what the YAML parser found and where (1-based line and column)."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        return f"{error.problem} at line {mark.line + 1}, column {mark.column + 1}"
    return " ".join(str(error).split())


def _reason(error: BaseException) -> str:
    """A one-line description of ``error``: its ``strerror`` for OS errors, else its text,
    else its type."""
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    text = " ".join(str(error).split())
    return text or type(error).__name__


def _current_user(merger: KubeConfigMerger, context: str | None) -> Any:
    """The ``user`` node (a kubernetes_asyncio ConfigNode) of the active context, or ``None``."""
    root = merger.config
    if root is None:
        return None
    context_name = context or root.safe_get("current-context")
    ctx = root["contexts"].get_with_name(context_name)
    user_name = ctx["context"].safe_get("user") if ctx is not None else None
    if not user_name or not root.safe_get("users"):
        return None
    user = root["users"].get_with_name(user_name, safe=True)
    return user["user"] if user is not None else None


def _token_file(user: Any) -> str | None:
    """The user's ``tokenFile`` when it has no inline ``token`` (client-go re-reads it)."""
    if user is None or "tokenFile" not in user or user.safe_get("token"):
        return None
    path = str(user["tokenFile"])
    if not os.path.isabs(path) and user.path:
        path = os.path.join(os.path.dirname(os.path.abspath(user.path)), path)
    return path


class _ExecTokenRefresher:
    """A ``refresh_api_key_hook`` that re-runs the exec plugin when its token expires.

    kubernetes_asyncio runs the plugin once at load time and records
    ``expirationTimestamp``; without an expiry the token is kept (as client-go does).
    Concurrent requests share one plugin run.
    """

    def __init__(self, loader: KubeConfigLoader) -> None:
        self._loader = loader
        self._lock = asyncio.Lock()

    def _expired(self) -> bool:
        expiry: datetime | None = getattr(self._loader, "exec_plugin_expiry", None)
        if expiry is None:
            return False
        if expiry.tzinfo is None:
            expiry = expiry.replace(tzinfo=UTC)
        return expiry - EXEC_EXPIRY_SKEW <= datetime.now(UTC)

    async def __call__(self, configuration: Configuration) -> None:
        if not self._expired():
            return
        async with self._lock:
            if self._expired():
                _log.debug("exec credential plugin token expired; running the plugin")
                await self._loader.load_from_exec_plugin()
            configuration.api_key["BearerToken"] = self._loader.token


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()
