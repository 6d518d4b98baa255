"""Rate limiters: how long an item should wait before it is retried.

A limiter is anything with the three methods of :class:`RateLimiter`. Limiters compose:
:class:`MaxOfRateLimiter` takes the worst case of several, :class:`WithMaxWaitRateLimiter` caps
one. All durations are seconds (``float``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

from kcontrol.clock import Clock
from kcontrol.flowcontrol import TokenBucketRateLimiter
from kcontrol.workqueue._queue import T

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "WithMaxWaitRateLimiter",
    "default_controller_rate_limiter",
]

T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)


class RateLimiter(Protocol[T_contra]):
    """Decides how long an item waits before it is retried."""

    def when(self, item: T_contra) -> float:
        """Seconds ``item`` should wait now; counts as one more failure of ``item``."""
        ...

    def forget(self, item: T_contra) -> None:
        """Stop tracking ``item`` (it succeeded, or was given up on)."""
        ...

    def num_requeues(self, item: T_contra) -> int:
        """How many failures of ``item`` are being tracked."""
        ...


class ItemExponentialFailureRateLimiter(Generic[T]):
    """Per item, waits ``base * 2**failures`` seconds, capped at ``max_delay``.

    The first failure waits ``base``. Failures are counted until :meth:`forget`; giving up
    after some number of retries is the caller's decision (see :meth:`num_requeues`).
    """

    __slots__ = ("_base", "_failures", "_max")

    def __init__(self, base: float, max_delay: float) -> None:
        self._base = base
        self._max = max_delay
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        exponent = self._failures.get(item, 0)
        self._failures[item] = exponent + 1
        try:
            backoff = math.ldexp(self._base, exponent)
        except OverflowError:
            return self._max
        return min(backoff, self._max)

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)


class ItemFastSlowRateLimiter(Generic[T]):
    """Per item, waits ``fast`` seconds for the first ``max_fast_attempts`` failures, then ``slow``.

    Failures are counted until :meth:`forget`.
    """

    __slots__ = ("_failures", "_fast", "_max_fast_attempts", "_slow")

    def __init__(self, fast: float, slow: float, max_fast_attempts: int) -> None:
        self._fast = fast
        self._slow = slow
        self._max_fast_attempts = max_fast_attempts
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        failures = self._failures.get(item, 0) + 1
        self._failures[item] = failures
        return self._fast if failures <= self._max_fast_attempts else self._slow

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)


class BucketRateLimiter(Generic[T]):
    """One token bucket shared by all items: an overall retry rate, not a per-item one.

    The bucket (:class:`~kcontrol.flowcontrol.TokenBucketRateLimiter`) holds up to ``burst``
    tokens (it starts full) and refills at ``qps`` tokens per second. :meth:`when` reserves
    a token and returns how long until it is available, so ``burst`` retries pass at once and
    the rest are spread at ``qps`` - the semantics of ``golang.org/x/time/rate``'s
    ``Limiter.Reserve().Delay()``. ``qps`` may be ``math.inf`` (no limit). Items are not
    tracked: :meth:`num_requeues` is always 0.
    """

    __slots__ = ("_bucket",)

    def __init__(self, qps: float, burst: int, *, clock: Clock | None = None) -> None:
        self._bucket = TokenBucketRateLimiter(qps, burst, clock=clock)

    def when(self, item: T) -> float:
        return self._bucket.reserve()

    def num_requeues(self, item: T) -> int:
        return 0

    def forget(self, item: T) -> None:
        return None


class MaxOfRateLimiter(Generic[T]):
    """Asks every limiter and returns the longest wait (and the most requeues).

    Every child is asked on every :meth:`when`, so each counts the failure. Combined with a
    token bucket, the burst can seem exceeded when some items were held back longer by another
    limiter.
    """

    __slots__ = ("_limiters",)

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        self._limiters = limiters

    def when(self, item: T) -> float:
        longest = 0.0
        for limiter in self._limiters:
            longest = max(longest, limiter.when(item))
        return longest

    def num_requeues(self, item: T) -> int:
        return max((limiter.num_requeues(item) for limiter in self._limiters), default=0)

    def forget(self, item: T) -> None:
        for limiter in self._limiters:
            limiter.forget(item)


class WithMaxWaitRateLimiter(Generic[T]):
    """Caps the wait of another limiter at ``max_delay`` seconds."""

    __slots__ = ("_limiter", "_max")

    def __init__(self, limiter: RateLimiter[T], max_delay: float) -> None:
        self._limiter = limiter
        self._max = max_delay

    def when(self, item: T) -> float:
        return min(self._limiter.when(item), self._max)

    def num_requeues(self, item: T) -> int:
        return self._limiter.num_requeues(item)

    def forget(self, item: T) -> None:
        self._limiter.forget(item)


def default_controller_rate_limiter(*, clock: Clock | None = None) -> MaxOfRateLimiter[Hashable]:
    """The limiter of upstream controllers: per-item exponential backoff, overall token bucket.

    ``MaxOf(ItemExponentialFailure(5 ms, 1000 s), Bucket(10 qps, burst 100))``: an item's n-th
    consecutive failure waits 5 ms * 2**(n-1) up to 1000 s, and retries of all items together
    are limited to 10 per second after a burst of 100.
    """
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(10, 100, clock=clock),
    )
