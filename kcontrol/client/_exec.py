"""Exec credential plugins: client-go's ``plugin/pkg/client/auth/exec``, on asyncio.

A kubeconfig user's ``exec`` section names a command that prints an ``ExecCredential``
(``client.authentication.k8s.io/v1`` or ``v1beta1``) on its standard output. The command runs
as an asyncio subprocess with:

- the process's environment plus the section's ``env`` (which wins);
- ``KUBERNETES_EXEC_INFO``: an ExecCredential of the section's ``apiVersion`` whose ``spec``
  says ``interactive: false`` and, with ``provideClusterInfo: true``, holds the cluster
  (``spec.cluster``: server, TLS settings, the CA's PEM as base64, the cluster's
  ``client.authentication.k8s.io/exec`` extension as ``config``);
- standard input closed (``/dev/null``): a controller has no terminal to prompt on.

Its answer must be an ExecCredential of the same ``apiVersion`` whose ``status`` holds a
``token``, or a ``clientCertificateData``/``clientKeyData`` pair (PEM), or both, and
optionally an ``expirationTimestamp`` (RFC 3339). :class:`ExecCredentialAuth` keeps the
answer and runs the plugin again when the token is within :data:`EXEC_EXPIRY_SKEW` of expiring;
without an expiry it is kept for good, as client-go does.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kcontrol.client._config import _reason
from kcontrol.client._kubeconfig import Cluster, ExecConfig
from kcontrol.clock import Clock, RealClock
from kcontrol.errors import ConfigError
from kcontrol.logging import get_logger
from kcontrol.metatime import parse_time_strict

__all__ = [
    "EXEC_EXPIRY_SKEW",
    "EXEC_INFO_ENV",
    "EXEC_RETRY_INTERVAL",
    "ExecCredential",
    "ExecCredentialAuth",
    "ExecPlugin",
    "exec_cluster_info",
]

_log = get_logger(__name__)

EXEC_EXPIRY_SKEW = timedelta(minutes=5)
"""An exec plugin's token is renewed this long before its ``expirationTimestamp``."""

EXEC_RETRY_INTERVAL = 10.0
"""Seconds before a failed renewal is tried again while the kept token is still valid."""

EXEC_INFO_ENV = "KUBERNETES_EXEC_INFO"
"""The environment variable holding the ExecCredential request (``spec``) for the plugin."""

_KIND = "ExecCredential"


@dataclass(frozen=True, slots=True)
class ExecCredential:
    """A plugin's answer: a bearer ``token`` and/or a client certificate and key (PEM), and
    when they expire (``None``: never). Secrets are kept out of ``repr``."""

    token: str | None = field(default=None, repr=False)
    client_certificate_data: str | None = None
    client_key_data: str | None = field(default=None, repr=False)
    expiration: datetime | None = None


def exec_cluster_info(cluster: Cluster) -> dict[str, Any]:
    """``spec.cluster`` of the ExecCredential request for ``cluster`` (client-go's
    ``ConfigToExecCluster``). Blocking: reads the ``certificate-authority`` file, raising
    :class:`ConfigError` naming it when it cannot be read."""
    info: dict[str, Any] = {"server": cluster.server or ""}
    if cluster.tls_server_name:
        info["tls-server-name"] = cluster.tls_server_name
    if cluster.insecure_skip_tls_verify:
        info["insecure-skip-tls-verify"] = True
    ca = cluster.certificate_authority_data
    if ca is None and cluster.certificate_authority:
        try:
            with open(cluster.certificate_authority, "rb") as f:
                ca = f.read()
        except OSError as e:
            raise ConfigError(
                f"cannot read the certificate-authority {cluster.certificate_authority} of "
                f'cluster "{cluster.name}" for its exec plugin: {_reason(e)}'
            ) from e
    if ca:
        info["certificate-authority-data"] = base64.b64encode(ca).decode("ascii")
    if cluster.proxy_url:
        info["proxy-url"] = cluster.proxy_url
    if cluster.disable_compression:
        info["disable-compression"] = True
    if cluster.exec_extension is not None:
        info["config"] = cluster.exec_extension
    return info


class ExecPlugin:
    """One user's exec credential plugin: :meth:`run` runs it once.

    ``user`` and ``source`` (the kubeconfig that defined it) name it in errors;
    ``cluster_info`` (from :func:`exec_cluster_info`) is handed to it when the section asks
    for it (``provideClusterInfo``).
    """

    def __init__(
        self,
        config: ExecConfig,
        *,
        user: str,
        source: str,
        cluster_info: Mapping[str, Any] | None = None,
    ) -> None:
        self._config = config
        self._name = f'exec plugin {config.command} of user "{user}" (kubeconfig {source})'
        spec: dict[str, Any] = {"interactive": False}
        if config.provide_cluster_info and cluster_info is not None:
            spec["cluster"] = dict(cluster_info)
        request = {"apiVersion": config.api_version, "kind": _KIND, "spec": spec}
        self._request = json.dumps(request)

    def __repr__(self) -> str:
        return f"ExecPlugin({self._config.command!r})"

    async def run(self) -> ExecCredential:
        """Run the plugin and return its credential. Raises :class:`ConfigError` (one line,
        naming the plugin) when it cannot be started (with the section's ``installHint``),
        exits non-zero (with the last line it wrote to stderr) or answers something that is
        not a usable ExecCredential. Cancelling kills the plugin."""
        try:
            process = await asyncio.create_subprocess_exec(
                self._config.command,
                *self._config.args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env={**os.environ, **dict(self._config.env), EXEC_INFO_ENV: self._request},
            )
        except FileNotFoundError as e:
            hint = " ".join(self._config.install_hint.split())
            raise ConfigError(f"{self._name} was not found" + (f": {hint}" if hint else "")) from e
        except OSError as e:
            raise ConfigError(f"{self._name} cannot be run: {_reason(e)}") from e
        try:
            stdout, stderr = await process.communicate()
        except BaseException:
            if process.returncode is None:
                process.kill()
                await process.wait()
            raise
        if process.returncode != 0:
            lines = stderr.decode(errors="replace").strip().splitlines()
            said = lines[-1].strip() if lines else "nothing on stderr"
            raise ConfigError(f"{self._name} failed with exit code {process.returncode}: {said}")
        return self._parse(stdout)

    def _parse(self, stdout: bytes) -> ExecCredential:
        try:
            answer = json.loads(stdout)
        except ValueError as e:
            raise ConfigError(f"{self._name} printed no ExecCredential JSON: {_reason(e)}") from e
        if not isinstance(answer, dict):
            raise ConfigError(f"{self._name} printed a {type(answer).__name__}, not an object")
        version, kind = answer.get("apiVersion"), answer.get("kind")
        if version != self._config.api_version:
            raise ConfigError(
                f"{self._name} answered with apiVersion {version}, "
                f"not {self._config.api_version} as configured"
            )
        if kind != _KIND:
            raise ConfigError(f"{self._name} answered with kind {kind}, not {_KIND}")
        status = answer.get("status")
        if not isinstance(status, dict):
            raise ConfigError(f"{self._name} answered without a status")
        token = _optional_string(status, "token")
        cert = _optional_string(status, "clientCertificateData")
        key = _optional_string(status, "clientKeyData")
        if bool(cert) != bool(key):
            raise ConfigError(f"{self._name} answered with a client certificate or a key, not both")
        if not token and not cert:
            raise ConfigError(f"{self._name} answered with neither a token nor a certificate")
        expiration = None
        raw_expiration = status.get("expirationTimestamp")
        if raw_expiration:
            try:
                expiration = parse_time_strict(str(raw_expiration))
            except ValueError as e:
                raise ConfigError(
                    f"{self._name} answered with an expirationTimestamp that is not RFC 3339: "
                    f"{raw_expiration!r}"
                ) from e
        return ExecCredential(token or None, cert or None, key or None, expiration)


def _optional_string(status: Mapping[str, Any], key: str) -> str:
    value = status.get(key)
    return value if isinstance(value, str) else ""


class ExecCredentialAuth:
    """An :class:`~kcontrol.client.AuthProvider` whose bearer token comes from an
    :class:`ExecPlugin`.

    The credential is kept until it is within ``skew`` of its expiration (on ``clock``'s wall
    time), then the plugin runs again; concurrent requests share one run. If a re-run fails
    while the kept token has not expired yet, that token is used and the run retried
    :data:`EXEC_RETRY_INTERVAL` seconds later; otherwise the failure propagates as
    :class:`ConfigError`. A credential without a token (a client certificate only) gives no
    ``Authorization`` header.
    """

    def __init__(
        self,
        plugin: ExecPlugin,
        *,
        clock: Clock | None = None,
        skew: timedelta = EXEC_EXPIRY_SKEW,
    ) -> None:
        self._plugin = plugin
        self._clock: Clock = clock or RealClock()
        self._skew = skew
        self._credential: ExecCredential | None = None
        self._retry_at = 0.0  # after a failed renewal: when to run the plugin again
        self._lock = asyncio.Lock()

    def _fresh(self) -> bool:
        credential = self._credential
        if credential is None:
            return False
        if credential.expiration is None:
            return True
        now = self._clock.wall()
        if credential.expiration - self._skew > now:
            return True
        # Inside the skew: renew, unless a renewal failed a moment ago and the token still works.
        return credential.expiration > now and self._clock.now() < self._retry_at

    async def credential(self) -> ExecCredential:
        """The current credential, running the plugin first when there is none yet or it
        is about to expire. Raises :class:`ConfigError` as described on the class."""
        if not self._fresh():
            async with self._lock:  # one run; the others then find the fresh credential
                if not self._fresh():
                    await self._refresh()
        assert self._credential is not None
        return self._credential

    async def authorization(self) -> str | None:
        token = (await self.credential()).token
        return f"Bearer {token}" if token else None

    def unauthorized(self, authorization: str | None) -> None:
        """The server answered 401 to a request sent with ``authorization``: if that is the
        current credential's, drop it, so the next request runs the plugin again (a token
        revoked or rotated before its expiration; client-go does the same)."""
        credential = self._credential
        if credential is None or not credential.token:
            return
        if authorization == f"Bearer {credential.token}":
            _log.info("the API server refused the exec plugin's token; it runs again next time")
            self._credential = None

    async def _refresh(self) -> None:
        kept = self._credential
        _log.debug("running the exec credential plugin", plugin=repr(self._plugin))
        try:
            self._credential = await self._plugin.run()
        except ConfigError as e:
            usable = kept is not None and (
                kept.expiration is None or kept.expiration > self._clock.wall()
            )
            if not usable:
                raise
            self._retry_at = self._clock.now() + EXEC_RETRY_INTERVAL
            _log.warning(
                "the exec credential plugin failed, using the token it gave before",
                error=str(e),
            )

    def __repr__(self) -> str:
        return f"ExecCredentialAuth({self._plugin!r})"
