"""Sending one review (TokenReview, SubjectAccessReview) to the API server for the secure
port: under a timeout, counted in kube-controller-manager's metrics.

Both delegating checks (:mod:`kcontrol.serving._authn`, :mod:`kcontrol.serving._authz`) use
a :class:`ReviewSender`; what differs is only the review's body and how its answer is read.

There is no rate limit of the process's own, as kube-controller-manager has none: one budget
for every caller would let one caller's garbage tokens, or one user's distinct paths, refuse
another caller's scrape. The API server's priority and fairness limits the reviews; the
caches in front of them share one review between concurrent requests alike and keep every
answer for a while; and the connection limit (:mod:`kcontrol.serving._listener`) bounds the
reviews in flight, one per connection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram

from kcontrol._registry import PerRegistry
from kcontrol.client import Object, Resource, Writer
from kcontrol.clock import Clock, timeout
from kcontrol.errors import ApiError, KcontrolError, ReviewFailed

__all__ = ["REVIEW_TIMEOUT", "ReviewSender"]

REVIEW_TIMEOUT = 10.0
"""Seconds a TokenReview or SubjectAccessReview may take (the apiserver's delegating
authenticator and authorizer use 10 s)."""

_DURATION_BUCKETS = (0.25, 0.5, 0.7, 1.0, 1.5, 3.0, 5.0, 10.0)  # the apiserver's buckets
_ERROR_CODE = "<error>"


@dataclass(frozen=True, slots=True)
class _Metrics:
    requests: Counter
    duration: Histogram


def _metrics_for(kind: str) -> PerRegistry[_Metrics]:
    # kube-controller-manager's names (k8s.io/apiserver {authenticator,authorizer}factory).
    def create(registry: CollectorRegistry) -> _Metrics:
        return _Metrics(
            requests=Counter(
                f"apiserver_delegated_{kind}_request_total",
                "Number of HTTP requests partitioned by status code.",
                ["code"],
                registry=registry,
            ),
            duration=Histogram(
                f"apiserver_delegated_{kind}_request_duration_seconds",
                "Request latency in seconds. Broken down by status code.",
                ["code"],
                buckets=_DURATION_BUCKETS,
                registry=registry,
            ),
        )

    return PerRegistry(create)


_METRICS = {
    "TokenReview": _metrics_for("authn"),
    "SubjectAccessReview": _metrics_for("authz"),
}


class ReviewSender:
    """Creates reviews of ``resource`` (kind ``TokenReview`` or ``SubjectAccessReview``)
    through ``client``, each within ``review_timeout``.

    :meth:`send` raises :class:`~kcontrol.errors.ReviewFailed` when no answer came;
    ``redact`` cleans what goes into that message (a token must never appear there).
    """

    def __init__(
        self,
        client: Writer,
        resource: Resource,
        *,
        review_timeout: float,
        clock: Clock,
        registry: CollectorRegistry | None,
    ) -> None:
        self._client = client
        self._resource = resource
        self._kind = resource.kind
        self._clock = clock
        self._timeout = review_timeout
        self._metrics = _METRICS[resource.kind].get(registry)

    async def send(self, spec: Object, redact: Callable[[str], str] = str) -> Object:
        """Create the review with ``spec``; its ``status`` as the API server answered."""
        review = {"apiVersion": self._resource.api_version, "kind": self._kind, "spec": spec}
        code = _ERROR_CODE
        start = self._clock.now()
        try:
            async with timeout(self._clock, self._timeout):
                answer = await self._client.create(self._resource, review)
            code = "201"
        except (KcontrolError, TimeoutError) as error:
            if isinstance(error, ApiError):
                code = str(error.code)
            reason = redact(str(error)) or type(error).__name__
            raise ReviewFailed(f"{self._kind} failed: {reason}") from None
        finally:
            elapsed = self._clock.now() - start
            self._metrics.requests.labels(code=code).inc()
            self._metrics.duration.labels(code=code).observe(elapsed)
        status: Object = answer.get("status") or {}
        return status
