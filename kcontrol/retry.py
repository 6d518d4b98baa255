"""Retrying a read-modify-write: client-go's ``util/retry``.

A write built from a read fails with :class:`~kcontrol.errors.Conflict` when somebody else
wrote the object in between. :func:`retry_on_conflict` runs the whole read-modify-write again,
a few times, with short pauses::

    async def bump() -> Object:
        deployment = await client.get(DEPLOYMENTS, "web", namespace="default")  # re-read
        deployment["spec"]["replicas"] += 1
        return await client.update(DEPLOYMENTS, deployment)

    deployment = await retry_on_conflict(DEFAULT_RETRY, bump)

The function must re-read on every call: retrying a write of the same stale copy conflicts
again. Any other error ends the retries at once; when the attempts run out the last Conflict
is raised (upstream returns the last error too, not a timeout). :func:`on_error` is the same
loop for any error a predicate accepts.

:class:`Backoff` is apimachinery's ``wait.Backoff`` with durations in seconds. It is a value
(frozen), not the stateful backoff of a reconnecting component
(:class:`kcontrol.informers.ExponentialBackoff`, which resets after a healthy spell); the
pauses of one retry loop come from :meth:`Backoff.delays`.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from kcontrol.clock import Clock, RealClock
from kcontrol.errors import Conflict
from kcontrol.logging import get_logger

__all__ = ["DEFAULT_BACKOFF", "DEFAULT_RETRY", "Backoff", "on_error", "retry_on_conflict"]

_log = get_logger(__name__)

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Backoff:
    """How often to try and how long to pause in between (``wait.Backoff``).

    ``steps`` is the number of attempts (at least 1), so there are ``steps - 1`` pauses.
    The first pause is ``duration`` seconds; each next one is the previous times ``factor``
    (0 counts as 1). Each pause then gets a
    random extra of up to ``jitter`` times itself; the jitter never feeds into the next
    pause. As upstream's ``Backoff.Step`` (which sets ``Steps`` to 0 then), the attempts end
    once the pause would grow past ``cap``: the attempt after the pause that reached it is
    not made (upstream still sleeps that pause before giving up; here the failure is raised
    at once).
    """

    duration: float
    factor: float = 1.0
    jitter: float = 0.0
    steps: int = 1
    cap: float | None = None

    def __post_init__(self) -> None:
        if self.duration < 0 or self.factor < 0 or self.jitter < 0:
            raise ValueError("a backoff needs duration, factor and jitter >= 0")
        if self.steps < 1:
            raise ValueError("a backoff needs steps >= 1: the number of attempts")
        if self.cap is not None and self.cap <= 0:
            raise ValueError("a backoff's cap must be > 0 (or None for no cap)")

    def delays(self, rng: random.Random | None = None) -> Iterator[float]:
        """The pauses between attempts, in seconds: ``steps - 1`` of them. ``rng`` makes
        the jitter reproducible."""
        rng = rng or random.Random()
        duration = self.duration
        for _ in range(self.steps - 1):
            pause = duration
            if self.factor:
                duration *= self.factor
                if self.cap is not None and duration > self.cap:
                    return  # no attempt after this pause (upstream: Steps = 0)
            if self.jitter > 0:
                pause += rng.random() * self.jitter * pause
            yield pause


DEFAULT_RETRY = Backoff(duration=0.010, factor=1.0, jitter=0.1, steps=5)
"""For a conflict between clients that change the same object: 5 attempts, 10 ms apart."""

DEFAULT_BACKOFF = Backoff(duration=0.010, factor=5.0, jitter=0.1, steps=4)
"""For a conflict with controllers that actively manage the object: 4 attempts, pauses of
10 ms, 50 ms and 250 ms."""


async def on_error(
    backoff: Backoff,
    retriable: Callable[[Exception], bool],
    fn: Callable[[], Awaitable[_T]],
    *,
    clock: Clock | None = None,
) -> _T:
    """Await ``fn()`` until it returns, at most ``backoff.steps`` times; returns its result.

    An exception ``retriable`` accepts is retried after the backoff's next pause (slept on
    ``clock``); once the attempts run out it propagates. Any other exception propagates at
    once, as does cancellation.
    """
    clock = clock or RealClock()
    pauses = backoff.delays()
    attempt = 1
    while True:
        try:
            return await fn()
        except Exception as error:
            pause = next(pauses, None)
            if pause is None or not retriable(error):
                raise
            _log.debug("retrying", attempt=attempt, after=round(pause, 3), error=str(error))
        attempt += 1
        await clock.sleep(pause)


async def retry_on_conflict(
    backoff: Backoff, fn: Callable[[], Awaitable[_T]], *, clock: Clock | None = None
) -> _T:
    """:func:`on_error` for :class:`~kcontrol.errors.Conflict`: run the read-modify-write
    ``fn`` again while its write conflicts; see the module docstring."""
    return await on_error(backoff, _is_conflict, fn, clock=clock)


def _is_conflict(error: Exception) -> bool:
    return isinstance(error, Conflict)
