"""The token bucket: client-go's ``util/flowcontrol`` rate limiter, one for all of kcontrol.

client-go builds every token bucket on ``golang.org/x/time/rate``: a bucket holds at most
``burst`` tokens, starts full, and refills continuously at ``qps`` tokens per second. Its three
users take tokens in three ways, and :class:`TokenBucketRateLimiter` offers each of them:

- the REST client's flow control (``flowcontrol.NewTokenBucketRateLimiter``, ``Wait``): every
  request waits for a token - :meth:`TokenBucketRateLimiter.wait`;
- the workqueue's ``BucketRateLimiter`` (``Limiter.Reserve().Delay()``): a retry takes the
  next token at once and is told how long until it is due - :meth:`~TokenBucketRateLimiter.reserve`;
- the event correlator's spam filter (``flowcontrol.NewTokenBucketPassiveRateLimiter``,
  ``TryAccept``): an event takes a token if one is there, else it is dropped -
  :meth:`~TokenBucketRateLimiter.try_accept`.

Time comes from an injectable :class:`~kcontrol.clock.Clock`.
"""

from __future__ import annotations

import math

from kcontrol.clock import Clock, RealClock

__all__ = ["TokenBucketRateLimiter"]


class TokenBucketRateLimiter:
    """A bucket of ``burst`` tokens, full at first, refilled at ``qps`` tokens per second.

    ``qps`` must be positive and may be ``math.inf`` (no limit: every operation succeeds at
    once); ``burst`` must be at least 1.

    Reservations: :meth:`reserve` and :meth:`wait` take the next token even when the bucket
    is empty - the balance goes negative, counting the tokens promised but not yet refilled -
    so a later taker is always due at or after an earlier one, and nobody overtakes a taker
    already waiting. :meth:`try_accept` never takes a token that is not there (so it fails
    while reservations are outstanding). Single event loop, no locking: every operation is
    synchronous apart from :meth:`wait`'s sleep.
    """

    __slots__ = ("_burst", "_clock", "_last", "_qps", "_tokens")

    def __init__(self, qps: float, burst: int, *, clock: Clock | None = None) -> None:
        if not qps > 0:
            raise ValueError(f"qps must be positive, got {qps!r}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, got {burst!r}")
        self._qps = float(qps)
        self._burst = float(burst)
        self._clock: Clock = clock if clock is not None else RealClock()
        # Invariant: _tokens <= _burst, as of clock time _last (None before the first use:
        # the bucket is full whenever that is). Negative: -_tokens tokens are reserved.
        self._tokens = self._burst
        self._last: float | None = None

    @property
    def qps(self) -> float:
        return self._qps

    @property
    def burst(self) -> int:
        return int(self._burst)

    def tokens(self) -> float:
        """The balance now (negative while reservations are outstanding); informational."""
        self._advance()
        return self._tokens

    def try_accept(self) -> bool:
        """Take a token if one is available now; never waits, never reserves."""
        if self._qps == math.inf:
            return True
        self._advance()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def reserve(self) -> float:
        """Take the next token now and return the seconds until it is due (0 if it is
        there); x/time/rate's ``Reserve().Delay()``. The caller is expected to wait that
        long; the token is spent either way."""
        if self._qps == math.inf:
            return 0.0
        self._advance()
        self._tokens -= 1.0
        return -self._tokens / self._qps if self._tokens < 0.0 else 0.0

    async def wait(self) -> float:
        """Take a token, sleeping until it is due; returns the seconds waited.

        Fair: callers are served in the order they called. A caller cancelled while it
        sleeps hands its reservation back.
        """
        delay = self.reserve()
        if delay <= 0.0:
            return 0.0
        try:
            await self._clock.sleep(delay)
        except BaseException:
            self._advance()
            self._tokens = min(self._burst, self._tokens + 1.0)
            raise
        return delay

    def _advance(self) -> None:
        """Refill for the time passed since the last operation."""
        now = self._clock.now()
        if self._last is None:
            self._last = now
        elif now > self._last:
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
            self._last = now
