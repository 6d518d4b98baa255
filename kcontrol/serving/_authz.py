"""Delegated authorization for the secure port: may this user do this?

As kube-controller-manager's authorizer (``k8s.io/apiserver``), a union of two:

1. :class:`AlwaysAllowPaths` (``--authorization-always-allow-paths``, default ``/healthz``,
   ``/readyz``, ``/livez``): those paths are served to anyone, so kubelet's probes need no
   credentials. A pattern is a path, or a prefix ending in ``*`` (``/healthz/*``); anything
   else must be asked about. kcontrol serves them before authentication too (see
   :mod:`kcontrol.serving._authn`), where kube-controller-manager authenticates them as
   ``system:anonymous`` first.
2. :class:`SubjectAccessReviewAuthorizer`: a ``SubjectAccessReview`` sent to the API server
   for the non-resource URL and the lower-cased HTTP method as verb (``get`` on
   ``/metrics``), which RBAC answers with rules such as ``nonResourceURLs: ["/metrics"]``.

Answers are cached per (user, verb, path): allowed for ``authorized_ttl``
(``--authorization-webhook-cache-authorized-ttl``), denied for ``unauthorized_ttl``
(``--authorization-webhook-cache-unauthorized-ttl``), 10 s each by default as in
kube-controller-manager; concurrent requests share one review, and failures are never cached.
As for TokenReviews, no rate limit of the process's own: one user asking about many paths
never refuses another user (:mod:`kcontrol.serving._review`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from kcontrol.client import Resource, Writer
from kcontrol.clock import Clock, RealClock
from kcontrol.serving._authn import UserInfo
from kcontrol.serving._cache import ReviewCache
from kcontrol.serving._review import REVIEW_TIMEOUT, ReviewSender

__all__ = [
    "DEFAULT_ALWAYS_ALLOW_PATHS",
    "SUBJECTACCESSREVIEWS",
    "AlwaysAllowPaths",
    "Decision",
    "SubjectAccessReviewAuthorizer",
]

SUBJECTACCESSREVIEWS = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False
)

DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
"""kube-controller-manager's default ``--authorization-always-allow-paths``."""


class AlwaysAllowPaths:
    """``k8s.io/apiserver/pkg/authorization/path``: paths served without asking.

    Each pattern is an exact path or a prefix followed by ``*``; a ``*`` anywhere else is
    refused with :class:`ValueError`. Leading slashes are ignored on both sides (``/`` alone
    matches the root).
    """

    def __init__(self, patterns: Iterable[str]) -> None:
        self._paths: set[str] = set()
        self._prefixes: list[str] = []
        for pattern in patterns:
            trimmed = pattern.removeprefix("/")
            if "*" in trimmed[:-1]:
                raise ValueError(f"only a trailing * is allowed in {pattern!r}")
            if trimmed.endswith("*"):
                self._prefixes.append(trimmed[:-1])
            else:
                self._paths.add(trimmed)

    def allows(self, path: str) -> bool:
        trimmed = path.removeprefix("/")
        return trimmed in self._paths or any(trimmed.startswith(p) for p in self._prefixes)


@dataclass(frozen=True, slots=True)
class Decision:
    """A SubjectAccessReview's verdict; ``reason`` is the authorizer's, possibly empty."""

    allowed: bool
    reason: str = ""


_Key = tuple[str, str, tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...], str, str]


class SubjectAccessReviewAuthorizer:
    """Asks the API server, through ``client``, whether a user may use a non-resource URL
    (module docstring). ``client`` needs ``create`` on ``subjectaccessreviews`` (the
    ``system:auth-delegator`` ClusterRole grants it)."""

    def __init__(
        self,
        client: Writer,
        *,
        authorized_ttl: float,
        unauthorized_ttl: float,
        review_timeout: float = REVIEW_TIMEOUT,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        clock = clock if clock is not None else RealClock()
        self._sender = ReviewSender(
            client,
            SUBJECTACCESSREVIEWS,
            review_timeout=review_timeout,
            clock=clock,
            registry=registry,
        )
        self._cache: ReviewCache[_Key, Decision] = ReviewCache(
            ttl=lambda d: authorized_ttl if d.allowed else unauthorized_ttl, clock=clock
        )

    async def authorize(self, user: UserInfo, verb: str, path: str) -> Decision:
        """Whether ``user`` may ``verb`` the non-resource URL ``path``.

        Raises :class:`~kcontrol.errors.ReviewFailed` when no answer could be had.
        """
        extra = tuple(sorted(user.extra.items()))
        key: _Key = (user.username, user.uid, user.groups, extra, verb, path)
        return await self._cache.get(key, lambda: self._review(user, verb, path))

    async def _review(self, user: UserInfo, verb: str, path: str) -> Decision:
        spec: dict[str, object] = {
            "user": user.username,
            "groups": list(user.groups),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {key: list(values) for key, values in user.extra.items()}
        status = await self._sender.send(spec)
        return Decision(allowed=bool(status.get("allowed")), reason=str(status.get("reason") or ""))
