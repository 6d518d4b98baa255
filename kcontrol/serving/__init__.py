"""Serving ``/metrics`` and the health checks, securely: what kube-controller-manager's secure
port does, as a piece any :class:`~kcontrol.manager.Manager` (and any program) can use.

:class:`HealthServer` is the application - Prometheus metrics and kube-style ``/healthz``,
``/livez``, ``/readyz`` with named checks - and serves it over plain HTTP.
:class:`SecureServer` serves the same application over HTTPS behind delegated authentication
(client certificates, TokenReviews) and authorization (SubjectAccessReviews), with the
certificates reloaded when their files change. :class:`ServingOptions` configures both: the
fields are kube-controller-manager's flags (``--secure-port``, ``--tls-cert-file``,
``--client-ca-file``, ``--authorization-always-allow-paths``, ...) in snake_case.
:class:`ConnectionLimits` bounds the connections either server accepts.

This package knows nothing of the manager: it takes an options object, a Prometheus registry
and a client configuration for its reviews.
"""

from kcontrol.serving._health import HealthCheck, HealthServer, NamedCheck
from kcontrol.serving._listener import ConnectionLimits
from kcontrol.serving._options import ServingOptions
from kcontrol.serving._secure import SecureServer
from kcontrol.serving._tls import (
    CIPHER_SUITES,
    DEFAULT_TLS_MIN_VERSION,
    INSECURE_CIPHER_SUITES,
    TLS_VERSIONS,
)

__all__ = [
    "CIPHER_SUITES",
    "DEFAULT_TLS_MIN_VERSION",
    "INSECURE_CIPHER_SUITES",
    "TLS_VERSIONS",
    "ConnectionLimits",
    "HealthCheck",
    "HealthServer",
    "NamedCheck",
    "SecureServer",
    "ServingOptions",
]
