"""Short-lived caches of review results: what the API server said about a token or a request.

The delegating authenticator and authorizer of ``k8s.io/apiserver`` put a cache in front of
every TokenReview and SubjectAccessReview, so a client that comes back every few seconds (a
Prometheus scrape every 15 s) costs one review per TTL, not one per request. :class:`ReviewCache`
is that cache:

- an answer is kept for a TTL chosen per answer (an allowed request and a denied one can be
  kept for different times), measured on an injectable :class:`~kcontrol.clock.Clock`;
- failures to get an answer (the API server unreachable, too slow, or refusing) are never kept:
  the next request asks again;
- concurrent lookups of one key share one review (the API server's cache does this with
  ``singleflight``): a thousand requests arriving with the same new token cost one review;
- at most ``max_size`` answers are kept; past that, the oldest is dropped first, so a flood of
  distinct garbage tokens cannot grow the process.

Keys must not be secrets: the authenticator keys by a SHA-256 digest of the token.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

from kcontrol.clock import Clock, RealClock
from kcontrol.errors import ReviewFailed

__all__ = ["DEFAULT_MAX_ENTRIES", "ReviewCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

DEFAULT_MAX_ENTRIES = 4096
"""Answers a cache keeps at most (the API server's token cache holds a few thousand too)."""


class ReviewCache(Generic[K, V]):
    """Review answers by key, each kept for the TTL ``ttl(answer)`` returns (module docstring).

    Single event loop, no locking. ``len()`` is informational (expired answers are dropped
    lazily, when looked up or when room is needed).
    """

    def __init__(
        self,
        *,
        ttl: Callable[[V], float],
        max_size: int = DEFAULT_MAX_ENTRIES,
        clock: Clock | None = None,
    ) -> None:
        if max_size < 1:
            raise ValueError(f"max_size must be at least 1, got {max_size}")
        self._ttl = ttl
        self._max_size = max_size
        self._clock: Clock = clock if clock is not None else RealClock()
        # Invariant: len(_answers) <= _max_size; dict order is insertion order, oldest first.
        self._answers: dict[K, tuple[V, float]] = {}
        # Reviews in flight, one per key; removed when the review ends, however it ends.
        self._pending: dict[K, asyncio.Future[V]] = {}

    def __len__(self) -> int:
        return len(self._answers)

    def cached(self, key: K) -> V | None:
        """The unexpired answer for ``key``, or None; never reviews."""
        entry = self._answers.get(key)
        if entry is None:
            return None
        answer, expires = entry
        if self._clock.now() >= expires:
            del self._answers[key]
            return None
        return answer

    async def get(self, key: K, review: Callable[[], Awaitable[V]]) -> V:
        """The answer for ``key``: cached, else the answer of a review already in flight for
        it, else ``await review()`` (whose answer is then kept for its TTL).

        Whatever ``review`` raises propagates to every request waiting on it and is not
        kept. A waiter whose review was cancelled gets :class:`~kcontrol.errors.ReviewFailed`;
        cancelling a waiter never cancels the review it waits for.
        """
        answer = self.cached(key)
        if answer is not None:
            return answer
        pending = self._pending.get(key)
        if pending is not None:
            await asyncio.wait([pending])  # unlike awaiting it, leaves it alone if we go
            if pending.cancelled():
                raise ReviewFailed("the review this request waited for was cancelled")
            return pending.result()
        future: asyncio.Future[V] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            answer = await review()
        except Exception as error:
            future.set_exception(error)
            future.exception()  # retrieved: nobody else may be waiting for it
            raise
        except BaseException:
            future.cancel()
            raise
        finally:
            del self._pending[key]
        self._keep(key, answer)
        future.set_result(answer)
        return answer

    def _keep(self, key: K, answer: V) -> None:
        ttl = self._ttl(answer)
        if ttl <= 0:
            return
        self._answers.pop(key, None)
        while len(self._answers) >= self._max_size:
            del self._answers[next(iter(self._answers))]
        self._answers[key] = (answer, self._clock.now() + ttl)
