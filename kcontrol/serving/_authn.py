"""Delegated authentication for the secure port: who is calling?

kube-controller-manager asks the API server, as ``k8s.io/apiserver``'s delegating
authenticator does; so does :class:`DelegatingAuthenticator`, in this order:

1. a client certificate, verified during the TLS handshake against the client CA
   (``--client-ca-file``, else the cluster's, see :func:`lookup_client_ca`): the user is the
   certificate's common name, the groups its organizations (``CommonNameUserConversion``);
2. a bearer token (``Authorization: Bearer ...``): a ``TokenReview`` sent to the API server
   (:class:`TokenReviewAuthenticator`);
3. nothing else: a request with neither is not authenticated. Unlike kube-controller-manager,
   which lets such a request through as ``system:anonymous`` for the authorizer to refuse,
   it is answered 401, as controller-runtime's authentication filter does. Paths always
   allowed (health checks) are served before authentication is asked for.

Cost: TokenReview answers, "authenticated" and "not authenticated" alike, are cached for
``cache_ttl`` (``--authentication-token-webhook-cache-ttl``, 10 s as kube-controller-manager),
keyed by a SHA-256 digest of the token, and requests with one new token share one review.
Failures to get an answer are not cached. There is no rate limit of the process's own (see
:mod:`kcontrol.serving._review`): a flood of garbage tokens never refuses another caller.

Secrets: a token never appears in a log line, an exception message or a cache key; what the
API server says about a token is logged with the token cut out of it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import CONFIGMAPS, Reader, Resource, Writer
from kcontrol.clock import Clock, RealClock
from kcontrol.errors import (
    AuthenticationFailed,
    NotFound,
)
from kcontrol.logging import get_logger
from kcontrol.serving._cache import ReviewCache
from kcontrol.serving._review import REVIEW_TIMEOUT, ReviewSender

__all__ = [
    "AUTHENTICATION_CONFIGMAP",
    "TOKENREVIEWS",
    "DelegatingAuthenticator",
    "TokenReviewAuthenticator",
    "UserInfo",
    "bearer_token",
    "lookup_client_ca",
    "user_from_certificate",
]

_log = get_logger(__name__)

TOKENREVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False)

AUTHENTICATION_CONFIGMAP = ("kube-system", "extension-apiserver-authentication")
"""Where kube-apiserver publishes its client CA (key ``client-ca-file``) for delegated
authentication; readable with the ``extension-apiserver-authentication-reader`` Role."""


@dataclass(frozen=True, slots=True)
class UserInfo:
    """An authenticated user, as the API server describes one (``authentication/v1``
    ``UserInfo``); passed on as is in SubjectAccessReviews."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _TokenAnswer:
    """A TokenReview's verdict: the user, or why the token was not authenticated."""

    user: UserInfo | None
    reason: str = ""


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None when the header is
    missing or not a bearer token (the apiserver's ``bearertoken`` authenticator's rules:
    the scheme is case-insensitive, the token is the second space-separated word)."""
    if not authorization:
        return None
    parts = authorization.strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


def user_from_certificate(peer_certificate: Mapping[str, Any]) -> UserInfo:
    """The user of a verified client certificate (:meth:`ssl.SSLSocket.getpeercert`'s
    dict): the common name, with the organizations as groups. Raises
    :class:`~kcontrol.errors.AuthenticationFailed` without a common name."""
    common_name = ""
    organizations: list[str] = []
    for rdn in peer_certificate.get("subject") or ():
        for key, value in rdn:
            if key == "commonName" and not common_name:
                common_name = value
            elif key == "organizationName":
                organizations.append(value)
    if not common_name:
        raise AuthenticationFailed("the client certificate has no common name")
    return UserInfo(username=common_name, groups=tuple(organizations))


def _printable(token: str) -> bool:
    return all("\x21" <= char <= "\x7e" for char in token)


def _redact(text: str, token: str) -> str:
    return text.replace(token, "<token>") if token else text


class TokenReviewAuthenticator:
    """Authenticates bearer tokens with ``TokenReview``s sent through ``client``, cached
    (module docstring). ``client`` needs ``create`` on ``tokenreviews`` (the
    ``system:auth-delegator`` ClusterRole grants it)."""

    def __init__(
        self,
        client: Writer,
        *,
        cache_ttl: float,
        review_timeout: float = REVIEW_TIMEOUT,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        clock = clock if clock is not None else RealClock()
        self._sender = ReviewSender(
            client,
            TOKENREVIEWS,
            review_timeout=review_timeout,
            clock=clock,
            registry=registry,
        )
        self._cache: ReviewCache[bytes, _TokenAnswer] = ReviewCache(
            ttl=lambda _answer: cache_ttl, clock=clock
        )

    async def authenticate(self, token: str) -> UserInfo:
        """The user ``token`` belongs to.

        Raises :class:`~kcontrol.errors.AuthenticationFailed` when the API server did not
        authenticate it (or it cannot be a token at all), :class:`ReviewFailed` when no
        answer could be had.
        """
        if not _printable(token):
            raise AuthenticationFailed("malformed bearer token")
        key = hashlib.sha256(token.encode("ascii")).digest()
        answer = await self._cache.get(key, lambda: self._review(token))
        if answer.user is None:
            raise AuthenticationFailed(answer.reason)
        return answer.user

    async def _review(self, token: str) -> _TokenAnswer:
        status = await self._sender.send({"token": token}, redact=lambda text: _redact(text, token))
        user = status.get("user") or {}
        if not status.get("authenticated") or not user.get("username"):
            reason = _redact(str(status.get("error") or "token not authenticated"), token)
            return _TokenAnswer(None, reason)
        extra = user.get("extra") or {}
        return _TokenAnswer(
            UserInfo(
                username=str(user["username"]),
                uid=str(user.get("uid") or ""),
                groups=tuple(str(group) for group in user.get("groups") or ()),
                extra={str(k): tuple(str(v) for v in values or ()) for k, values in extra.items()},
            )
        )


class DelegatingAuthenticator:
    """Client certificate first, then bearer token (module docstring)."""

    def __init__(self, tokens: TokenReviewAuthenticator) -> None:
        self._tokens = tokens

    async def authenticate(
        self, *, peer_certificate: Mapping[str, Any] | None, authorization: str | None
    ) -> UserInfo:
        """The user of a request: ``peer_certificate`` is the TLS layer's verified client
        certificate (None or empty without one), ``authorization`` the header's value.

        Raises :class:`~kcontrol.errors.AuthenticationFailed` (401) or
        :class:`~kcontrol.errors.ReviewFailed` (no answer; 401, as the apiserver does).
        """
        if peer_certificate:
            return user_from_certificate(peer_certificate)
        token = bearer_token(authorization)
        if token is None:
            raise AuthenticationFailed("no client certificate and no bearer token")
        return await self._tokens.authenticate(token)


async def lookup_client_ca(client: Reader) -> bytes | None:
    """The client CA bundle (PEM) the API server publishes in
    ``kube-system/extension-apiserver-authentication``, or None when it publishes none (no
    ConfigMap, or no ``client-ca-file`` in it). API errors propagate."""
    namespace, name = AUTHENTICATION_CONFIGMAP
    try:
        configmap = await client.get(CONFIGMAPS, name, namespace=namespace)
    except NotFound:
        return None
    bundle = (configmap.get("data") or {}).get("client-ca-file")
    return bundle.encode() if bundle and bundle.strip() else None
