"""A kubeconfig context as a :class:`~kcontrol.client.ClientConfig`: client-go's
``clientcmd.DirectClientConfig``.

:mod:`kcontrol.client._kubeconfig` reads and merges the files and selects the context; this
module turns the selected cluster and user into a client configuration:

- the server URL (without a scheme, ``https://`` when TLS is configured, as client-go);
- the CA (``certificate-authority-data`` wins over ``certificate-authority``; neither is used
  when ``insecure-skip-tls-verify`` is set), ``tls-server-name``, ``proxy-url``,
  ``disable-compression``;
- the client certificate and key (data wins over file; data stays in memory);
- the credentials, in clientcmd's order: ``token``, else ``tokenFile`` (re-read by
  :class:`~kcontrol.client.TokenFileAuth`), else ``username``/``password`` (basic), else - if
  there is no client certificate either - the ``exec`` plugin, run once now and again when
  its token expires (:class:`~kcontrol.client._exec.ExecCredentialAuth`). A client
  certificate returned by the plugin is used from its first run for the life of the
  configuration (its TLS context is built once).

:mod:`kcontrol.client._config` imports this module only when a kubeconfig is to be read.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Mapping, Sequence
from typing import Any

from kcontrol.client._config import AuthProvider, ClientConfig, StaticTokenAuth, TokenFileAuth
from kcontrol.client._exec import (
    ExecCredential,
    ExecCredentialAuth,
    ExecPlugin,
    exec_cluster_info,
)
from kcontrol.client._kubeconfig import Selection, User, kubeconfig_paths, read_kubeconfig
from kcontrol.errors import ConfigError

__all__ = ["from_kubeconfig", "kubeconfig_paths"]


async def from_kubeconfig(
    paths: Sequence[str], context: str | None, *, host: str | None, token: str | None
) -> ClientConfig:
    """The :class:`ClientConfig` of ``context`` (default: ``current-context``) in the
    kubeconfig files ``paths`` (from :func:`kubeconfig_paths`).

    ``host`` stands in for a cluster without a server (the caller then overrides it), and
    ``token`` for the user's credentials, which are not loaded then. Otherwise they are loaded
    now - a token file read, an exec plugin run once - so a broken one fails here, not on
    the first request. Raises :class:`ConfigError` (one line naming the file) when ``paths``
    is empty, for what :func:`~kcontrol.client._kubeconfig.read_kubeconfig` and
    :meth:`~kcontrol.client._kubeconfig.KubeConfig.select` refuse, for a cluster without a
    server, ``*-data`` that is not PEM text, an unreadable token file or a failing exec
    plugin.
    """
    if not paths:
        raise ConfigError("no kubeconfig found and not running in a cluster")
    selection, cluster_info = await asyncio.to_thread(_load_kubeconfig, paths, context)
    cluster, user = selection.cluster, selection.user
    server = cluster.server or host
    if not server:
        raise ConfigError(
            f'kubeconfig {cluster.source} is malformed: cluster "{cluster.name}" has no server'
        )
    ca_file, ca_data = None, None
    if not cluster.insecure_skip_tls_verify:  # clientcmd drops the CA of an insecure cluster
        ca_data = _pem_text(
            cluster.certificate_authority_data, cluster.source, "certificate-authority-data"
        )
        ca_file = None if ca_data else cluster.certificate_authority
    cert_file = key_file = cert_data = key_data = None
    if user is not None:
        cert_data = _pem_text(user.client_certificate_data, user.source, "client-certificate-data")
        key_data = _pem_text(user.client_key_data, user.source, "client-key-data")
        cert_file = None if cert_data else user.client_certificate
        key_file = None if key_data else user.client_key
    auth: AuthProvider | None = None
    if token is None and user is not None:
        auth, credential = await _user_auth(user, cluster_info)
        if credential is not None and credential.client_certificate_data:
            cert_file, key_file = None, None
            cert_data = credential.client_certificate_data
            key_data = credential.client_key_data
    has_tls = bool(ca_file or ca_data or cert_file or cert_data)
    return ClientConfig(
        host=_server_url(server, has_tls or cluster.insecure_skip_tls_verify),
        auth=auth,
        ca_file=ca_file,
        ca_data=ca_data,
        cert_file=cert_file,
        key_file=key_file,
        cert_data=cert_data,
        key_data=key_data,
        insecure_skip_tls_verify=cluster.insecure_skip_tls_verify,
        tls_server_name=cluster.tls_server_name,
        proxy=cluster.proxy_url,
        disable_compression=cluster.disable_compression,
    )


def _load_kubeconfig(
    paths: Sequence[str], context: str | None
) -> tuple[Selection, dict[str, Any] | None]:
    """Read and merge the kubeconfig files, select ``context``, and - when its user's exec
    plugin is to be told about the cluster - build that cluster information.

    Blocking (file reads, YAML parsing), so it runs in a worker thread. Raises
    :class:`ConfigError` as :func:`~kcontrol.client._kubeconfig.read_kubeconfig` and
    :meth:`~kcontrol.client._kubeconfig.KubeConfig.select` do.
    """
    selection = read_kubeconfig(paths).select(context)
    user = selection.user
    wants_cluster = user is not None and user.exec is not None and user.exec.provide_cluster_info
    return selection, exec_cluster_info(selection.cluster) if wants_cluster else None


async def _user_auth(
    user: User, cluster_info: Mapping[str, Any] | None
) -> tuple[AuthProvider | None, ExecCredential | None]:
    """The user's :class:`AuthProvider` (``None``: anonymous, or a client certificate only),
    with the exec plugin's first credential when it was run.

    clientcmd's order: ``token``, else ``tokenFile`` (read now, then re-read), else
    ``username``/``password``; the exec plugin only when none of those nor a client
    certificate is given.
    """
    if user.token:
        return StaticTokenAuth(user.token), None
    if user.token_file:
        file_auth = TokenFileAuth(user.token_file)
        await file_auth.authorization()  # fail now, not on the first request
        return file_auth, None
    if user.username or user.password:
        pair = f"{user.username or ''}:{user.password or ''}".encode()
        return StaticTokenAuth(f"Basic {base64.b64encode(pair).decode('ascii')}"), None
    if user.exec is not None and not user.has_client_certificate:
        plugin = ExecPlugin(
            user.exec, user=user.name, source=user.source, cluster_info=cluster_info
        )
        exec_auth = ExecCredentialAuth(plugin)
        return exec_auth, await exec_auth.credential()
    return None, None


def _server_url(server: str, default_tls: bool) -> str:
    """``server`` without a trailing slash; without a scheme, ``https://`` when TLS is
    configured (a CA, a client certificate or insecure-skip-tls-verify), else ``http://``,
    as client-go's ``DefaultServerURL``."""
    if "://" not in server:
        server = ("https://" if default_tls else "http://") + server
    return server.rstrip("/")


def _pem_text(data: bytes | None, source: str, what: str) -> str | None:
    """Decoded ``*-data`` as the PEM text :mod:`ssl` wants; :class:`ConfigError` if not text."""
    if data is None:
        return None
    try:
        return data.decode("ascii")
    except UnicodeDecodeError as e:
        raise ConfigError(f"kubeconfig {source} is malformed: {what} is not PEM text") from e
