"""Request metrics with client-go's names (component-base/metrics/prometheus/restclient).

- ``rest_client_requests_total{code, method, host}``: one per HTTP request; ``code`` is the
  HTTP status, or ``<error>`` when no response arrived.
- ``rest_client_request_duration_seconds{verb, host}``: time from sending the request to the
  end of the response (to the response headers for a watch).
- ``rest_client_rate_limiter_duration_seconds{verb, host}``: time spent waiting for the
  client-side rate limiter.

``verb`` and ``method`` are the HTTP method, as in client-go; ``host`` is the API server's
``host:port``. No path, object name or body ever becomes a label.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from kcontrol._registry import PerRegistry

__all__ = ["RequestMetrics"]

# The buckets client-go uses for both latency histograms.
LATENCY_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)

ERROR_CODE = "<error>"


@dataclass(frozen=True, slots=True)
class RequestMetrics:
    """The REST client's metric families on one registry; get them with :meth:`for_registry`."""

    requests_total: Counter
    request_duration: Histogram
    rate_limiter_duration: Histogram
    # The children already looked up, by label values: ``labels()`` validates and sorts its
    # arguments and takes a lock on every call, a dict lookup does not (a child, once made,
    # lives as long as its family: nothing here removes one).
    _children: dict[tuple[Any, ...], Any] = field(default_factory=dict, compare=False)

    @classmethod
    def for_registry(cls, registry: CollectorRegistry | None = None) -> RequestMetrics:
        """The families on ``registry`` (default: the global one), created on first use.

        A registry refuses a second family of the same name, and many clients share one
        registry, so the families are created once per registry and cached.
        """
        return _by_registry.get(registry)

    @classmethod
    def _create(cls, registry: CollectorRegistry) -> RequestMetrics:
        return cls(
            requests_total=Counter(
                "rest_client_requests_total",
                "Number of HTTP requests, partitioned by status code, method, and host.",
                ["code", "method", "host"],
                registry=registry,
            ),
            request_duration=Histogram(
                "rest_client_request_duration_seconds",
                "Request latency in seconds. Broken down by verb, and host.",
                ["verb", "host"],
                buckets=LATENCY_BUCKETS,
                registry=registry,
            ),
            rate_limiter_duration=Histogram(
                "rest_client_rate_limiter_duration_seconds",
                "Client side rate limiter latency in seconds. Broken down by verb, and host.",
                ["verb", "host"],
                buckets=LATENCY_BUCKETS,
                registry=registry,
            ),
        )

    def observe_request(self, method: str, host: str, code: int | None, seconds: float) -> None:
        """Count one request and record its latency; ``code`` is ``None`` if it failed."""
        children = self._children
        key = ("request", code, method, host)
        found = children.get(key)
        if found is None:
            found = children[key] = (
                self.requests_total.labels(
                    code=ERROR_CODE if code is None else str(code), method=method, host=host
                ),
                self.request_duration.labels(verb=method, host=host),
            )
        found[0].inc()
        found[1].observe(seconds)

    def observe_rate_limiter(self, method: str, host: str, seconds: float) -> None:
        key = ("limiter", method, host)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self.rate_limiter_duration.labels(verb=method, host=host)
        child.observe(seconds)


_by_registry = PerRegistry(RequestMetrics._create)
