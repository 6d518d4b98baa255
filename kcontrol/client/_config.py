"""Where the API server is and how to authenticate: :class:`ClientConfig`, :func:`load_config`.

Sources, in the order :func:`load_config` considers them (as clientcmd's default loading rules):

1. a kubeconfig (``kubeconfig=``, else ``$KUBECONFIG``, else ``~/.kube/config``), read and
   merged by :mod:`kcontrol.client._kubeconfig` with clientcmd's rules, and turned into a
   :class:`ClientConfig` by :mod:`kcontrol.client._clientcmd` (imported when first needed):
   contexts, CAs, client certificates, static tokens, basic auth, ``tokenFile`` (re-read
   periodically) and ``exec`` credential plugins (:mod:`kcontrol.client._exec`, re-run when
   their token expires);
2. the in-cluster service account (:data:`SERVICE_ACCOUNT_DIR`), whose projected token
   rotates: it is re-read once a minute, never cached forever.

Credentials are produced per request by an :class:`AuthProvider`, so rotation needs no restart.
File reads and YAML parsing run in a worker thread; exec plugins run as asyncio subprocesses.
Key material given inline (``client-key-data``, an exec plugin's key) never touches the disk
where the platform allows it (see :meth:`ClientConfig.ssl_context`).

kubernetes_asyncio is not needed: :meth:`ClientConfig.from_kube_configuration` adopts a
``kubernetes_asyncio.client.Configuration`` an application already has, without importing the
library itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import ssl
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from kcontrol.clock import Clock, RealClock
from kcontrol.errors import ConfigError
from kcontrol.logging import get_logger

if TYPE_CHECKING:
    from kubernetes_asyncio.client import Configuration

__all__ = [
    "SERVICE_ACCOUNT_DIR",
    "SERVICE_CA_FILE",
    "SERVICE_HOST_ENV",
    "SERVICE_PORT_ENV",
    "SERVICE_TOKEN_FILE",
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

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
"""Where the kubelet mounts a pod's service account credentials."""

SERVICE_TOKEN_FILE = f"{SERVICE_ACCOUNT_DIR}/token"
"""The pod's (projected, rotated) service account token."""

SERVICE_CA_FILE = f"{SERVICE_ACCOUNT_DIR}/ca.crt"
"""The CA bundle that signed the API server's serving certificate, as the pod sees it."""

SERVICE_HOST_ENV = "KUBERNETES_SERVICE_HOST"
SERVICE_PORT_ENV = "KUBERNETES_SERVICE_PORT"
"""The environment variables naming the API server's service inside a pod."""


class AuthProvider(Protocol):
    """Produces the ``Authorization`` header value for each request.

    Called before every request, so it must be cheap when nothing needs refreshing; it may
    return ``None`` (no header: client certificates or anonymous access). A provider that can
    renew its credentials may also define ``unauthorized(authorization: str | None) -> None``:
    the client calls it with the header a request was sent with when the server answered
    401 (an exec credential plugin then runs again, as in client-go).
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
    """Credentials from a ``kubernetes_asyncio.client.Configuration`` an application made.

    Asks the configuration for its bearer token each time, which runs its
    ``refresh_api_key_hook`` (kubernetes_asyncio's exec and in-cluster loaders set one);
    falls back to HTTP basic auth. kcontrol itself never imports kubernetes_asyncio: only
    the configuration's own methods are called.
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
    ``cert_file``/``key_file`` a client certificate and its key (the key may be in the
    certificate's file), or ``cert_data``/``key_data`` the same as PEM text (each pair
    member given as a file or as data, the data winning); ``auth`` produces the
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
    cert_data: str | None = None
    key_data: str | None = field(default=None, repr=False)
    # Cache for ssl_context(): built on first use, shared by every client of this config.
    _ssl: list[ssl.SSLContext] = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.host.startswith(("https://", "http://")):
            raise ConfigError(f"host must be an http(s) URL, got {self.host!r}")

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context for ``https`` hosts (built once, then shared); ``None`` for http.

        Raises :class:`ConfigError` naming the CA or client certificate that does not load.
        ``cert_data``/``key_data`` reach :mod:`ssl` (which reads only files) through an
        anonymous in-memory file on Linux, elsewhere through a temporary file only the
        process's user can read, removed as soon as it is loaded.
        """
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
            source = "certificate-authority-data" if self.ca_data else self.ca_file
            raise ConfigError(f"cannot load the CA certificate {source}: {_reason(e)}") from e
        if self.cert_file or self.cert_data:
            cert = "client-certificate-data" if self.cert_data else self.cert_file
            key = "client-key-data" if self.key_data else self.key_file or "in the same file"
            try:
                with (
                    _readable_file(self.cert_file, self.cert_data) as cert_path,
                    _readable_file(self.key_file, self.key_data) as key_path,
                ):
                    assert cert_path is not None
                    ctx.load_cert_chain(cert_path, key_path)
            except OSError as e:
                raise ConfigError(
                    f"cannot load the client certificate {cert} (key {key}): {_reason(e)}"
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
        token_file: str = SERVICE_TOKEN_FILE,
        ca_file: str = SERVICE_CA_FILE,
        environ: Mapping[str, str] | None = None,
        clock: Clock | None = None,
    ) -> ClientConfig:
        """The pod's service account: ``KUBERNETES_SERVICE_HOST``/``_PORT``, its CA, and its
        token file (re-read every minute; the kubelet rotates it)."""
        env = os.environ if environ is None else environ
        host = env.get(SERVICE_HOST_ENV)
        port = env.get(SERVICE_PORT_ENV)
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
    ``~/.kube/config`` exists, else the in-cluster service account. ``kubeconfig`` is one
    file; ``$KUBECONFIG`` may list several, merged with clientcmd's rules. ``context``
    selects a kubeconfig context (default: its ``current-context``). ``host`` and ``token``
    override what was loaded (a kubeconfig cluster may then lack a server, and its user's
    credentials are not loaded). Raises :class:`ConfigError` when nothing usable is found:
    a missing, unreadable or malformed kubeconfig (the message names the file), an unknown
    context, a failing exec plugin or token file.
    """
    if in_cluster:
        config = await ClientConfig.in_cluster()
    else:
        # The kubeconfig loader is imported when first needed: in-cluster processes never are.
        from kcontrol.client import _clientcmd  # noqa: PLC0415

        paths = await asyncio.to_thread(_clientcmd.kubeconfig_paths, kubeconfig)
        if in_cluster is None and kubeconfig is None and not paths:
            config = await ClientConfig.in_cluster()
        else:
            config = await _clientcmd.from_kubeconfig(paths, context, host=host, token=token)
    if host is not None:
        config = dataclasses.replace(config, host=host.rstrip("/"))
    if token is not None:
        config = dataclasses.replace(config, auth=StaticTokenAuth(token))
    return config


@contextlib.contextmanager
def _readable_file(path: str | None, data: str | None) -> Iterator[str | None]:
    """A file name :mod:`ssl` can read ``data`` from while the block runs (``path`` when
    there is no ``data``; ``None`` when neither is given).

    On Linux an anonymous memory file (``memfd_create``) opened through ``/proc/self/fd``:
    the bytes never reach a disk. Elsewhere a temporary file created with mode 0600,
    removed when the block ends.
    """
    if data is None:
        yield path
        return
    content = data.encode()
    fd = _memory_fd()
    if fd is not None:
        try:
            with open(fd, "wb", closefd=False) as f:
                f.write(content)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    fd, name = tempfile.mkstemp(prefix="kcontrol-tls-")  # mode 0600
    try:
        with open(fd, "wb") as f:
            f.write(content)
        yield name
    finally:
        os.unlink(name)


def _memory_fd() -> int | None:
    """A new anonymous memory file's descriptor, or ``None`` where there is none to have."""
    if not hasattr(os, "memfd_create") or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.memfd_create("kcontrol-tls", os.MFD_CLOEXEC)
    except OSError:  # e.g. forbidden by a seccomp profile
        return None


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _reason(error: BaseException) -> str:
    """A one-line description of ``error``: its ``strerror`` for OS errors, else its text,
    else its type."""
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    text = " ".join(str(error).split())
    return text or type(error).__name__
