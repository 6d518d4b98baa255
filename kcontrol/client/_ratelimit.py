"""Client-side request throttling: a token bucket, as client-go's ``flowcontrol`` limiter.

client-go throttles every request a ``rest.Config`` makes with
``flowcontrol.NewTokenBucketRateLimiter(qps, burst)`` (golang.org/x/time/rate underneath): the
bucket holds at most ``burst`` tokens, refills at ``qps`` tokens per second, starts full, and
each request takes one token, waiting for it if the bucket is empty.
"""

from __future__ import annotations

from kcontrol.clock import Clock, RealClock

__all__ = ["TokenBucketRateLimiter"]


class TokenBucketRateLimiter:
    """A token bucket of ``burst`` tokens refilled at ``qps`` tokens per second.

    :meth:`wait` is fair: callers are served in the order they called it. Each call reserves
    the next token at once - the balance may go negative, which records the reservations
    not yet due - and sleeps until that token has been refilled, so a later caller always
    wakes at or after an earlier one and a newcomer cannot overtake anyone already waiting.
    A caller cancelled while waiting hands its reservation back.
    """

    def __init__(self, qps: float, burst: int, *, clock: Clock | None = None) -> None:
        if qps <= 0:
            raise ValueError(f"qps must be positive, got {qps}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, got {burst}")
        self._qps = float(qps)
        self._burst = float(burst)
        self._clock: Clock = clock or RealClock()
        # Invariant: _tokens <= _burst, as of time _last. Negative means reservations are
        # outstanding: -_tokens callers are sleeping until their token is refilled.
        self._tokens = self._burst
        self._last: float | None = None

    @property
    def qps(self) -> float:
        return self._qps

    @property
    def burst(self) -> int:
        return int(self._burst)

    def _advance(self) -> float:
        now = self._clock.now()
        if self._last is None:
            self._last = now
        elif now > self._last:
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
            self._last = now
        return now

    def tokens(self) -> float:
        """The current balance (negative while callers wait); informational."""
        self._advance()
        return self._tokens

    def try_accept(self) -> bool:
        """Take a token if one is available now, without waiting."""
        self._advance()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    async def wait(self) -> float:
        """Take a token, sleeping until one is available; returns the seconds waited."""
        self._advance()
        self._tokens -= 1.0
        if self._tokens >= 0.0:
            return 0.0
        delay = -self._tokens / self._qps
        try:
            await self._clock.sleep(delay)
        except BaseException:
            self._advance()
            self._tokens = min(self._burst, self._tokens + 1.0)
            raise
        return delay
