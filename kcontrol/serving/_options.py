"""What the serving package serves, and how: :class:`ServingOptions`.

One options object for the three groups of flags kube-controller-manager takes from
``k8s.io/apiserver`` (``SecureServingOptions``, ``DelegatingAuthenticationOptions``,
``DelegatingAuthorizationOptions``), plus kcontrol's plain-HTTP opt-in. Field names are the
flags' names in snake_case; durations are seconds. A program reads them from its command line
(``kcontrol-manager`` does, :mod:`kcontrol.manager`); an operator builds one in code.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from kcontrol.errors import OptionsError
from kcontrol.serving._authz import DEFAULT_ALWAYS_ALLOW_PATHS, AlwaysAllowPaths
from kcontrol.serving._tls import CIPHER_SUITES, DEFAULT_TLS_MIN_VERSION, TLS_VERSIONS

__all__ = ["ServingOptions"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ServingOptions:
    """The secure port, its delegated authentication and authorization, and the plain-HTTP
    port. The defaults are kube-controller-manager's, except the ports: both are off (``0``)
    until a program sets them.

    ``secure_port`` (``--secure-port``): ``/metrics`` and the health checks over HTTPS on
    ``bind_address``, behind authentication and authorization
    (:class:`~kcontrol.serving.SecureServer`); ``0``: not served. The TLS pair is
    ``tls_cert_file`` / ``tls_private_key_file`` when given, else a self-signed pair kept in
    ``cert_dir`` (a private temporary directory when empty). Client certificates are checked
    against ``client_ca_file``, else - unless ``authentication_skip_lookup`` - against the
    cluster's bundle (a failed lookup ends the run unless
    ``authentication_tolerate_lookup_failure``). Token and access reviews go to the API server
    of ``authentication_kubeconfig`` / ``authorization_kubeconfig`` (default: the caller's own
    connection), answers cached for the ``*_ttl`` seconds; ``authorization_always_allow_paths``
    are served to anyone.

    ``metrics_port`` (``--metrics-port``): the same endpoints over plain HTTP without
    authentication, on ``metrics_bind_address`` (loopback by default); ``0``: not served.
    """

    bind_address: str = "0.0.0.0"
    secure_port: int = 0
    cert_dir: str = ""
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    tls_cipher_suites: tuple[str, ...] = ()
    tls_min_version: str = DEFAULT_TLS_MIN_VERSION
    client_ca_file: str | None = None
    authentication_kubeconfig: str | None = None
    authentication_skip_lookup: bool = False
    authentication_tolerate_lookup_failure: bool = False
    authentication_token_webhook_cache_ttl: float = 10.0
    authorization_kubeconfig: str | None = None
    authorization_always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    authorization_webhook_cache_authorized_ttl: float = 10.0
    authorization_webhook_cache_unauthorized_ttl: float = 10.0
    metrics_port: int = 0
    metrics_bind_address: str = "127.0.0.1"

    def validate(self) -> None:
        """Raise :class:`~kcontrol.errors.OptionsError` (naming the flag) for a value that
        cannot work, alone or with another."""
        for flag, port in (
            ("--secure-port", self.secure_port),
            ("--metrics-port", self.metrics_port),
        ):
            if not 0 <= port <= 65535:
                raise OptionsError(f"{flag} {port} is not a port number")
        if self.secure_port and self.secure_port == self.metrics_port:
            raise OptionsError("--secure-port and --metrics-port must differ")
        if bool(self.tls_cert_file) != bool(self.tls_private_key_file):
            raise OptionsError("--tls-cert-file and --tls-private-key-file go together")
        if self.tls_min_version not in TLS_VERSIONS:
            raise OptionsError(
                f"--tls-min-version: unknown TLS version {self.tls_min_version!r} "
                f"(possible values: {', '.join(TLS_VERSIONS)})"
            )
        for suite in self.tls_cipher_suites:
            if suite not in CIPHER_SUITES:
                raise OptionsError(
                    f"--tls-cipher-suites: cipher suite {suite} not supported or doesn't exist"
                )
        for flag, ttl in (
            (
                "--authentication-token-webhook-cache-ttl",
                self.authentication_token_webhook_cache_ttl,
            ),
            (
                "--authorization-webhook-cache-authorized-ttl",
                self.authorization_webhook_cache_authorized_ttl,
            ),
            (
                "--authorization-webhook-cache-unauthorized-ttl",
                self.authorization_webhook_cache_unauthorized_ttl,
            ),
        ):
            if ttl < 0:
                raise OptionsError(f"{flag} must not be negative")
        try:
            AlwaysAllowPaths(self.authorization_always_allow_paths)
        except ValueError as error:
            raise OptionsError(f"--authorization-always-allow-paths: {error}") from None
        for flag, address in (
            ("--bind-address", self.bind_address),
            ("--metrics-bind-address", self.metrics_bind_address),
        ):
            try:
                ipaddress.ip_address(address)
            except ValueError:
                raise OptionsError(f"{flag} {address!r} is not an IP address") from None
