"""Exponential backoff with jitter and a reset after a healthy spell.

A port of apimachinery's ``wait.NewExponentialBackoffManager``, which the reflector uses with
``(800ms, 30s, 2m, 2.0, 1.0)``: the base delay starts at ``initial``, is multiplied by
``factor`` after every step; each returned delay adds a random ``[0, jitter)`` fraction of
the base on top and is then capped at ``cap``. Unlike apimachinery (whose jitter may take a
wait to twice the cap) the cap bounds the wait itself, so a recovered server is noticed within
``cap`` seconds; with the reflector's settings waits settle at 30 s. When no backoff was asked for
during ``reset_after`` seconds the component is considered healthy again and the base delay
starts over at ``initial``.
"""

from __future__ import annotations

import random
from typing import Protocol

from kcontrol.clock import Clock

__all__ = ["BackoffManager", "ExponentialBackoff"]


class BackoffManager(Protocol):
    """Hands out the next delay to wait before retrying a failed operation."""

    def next_delay(self) -> float: ...


class ExponentialBackoff:
    """See the module docstring. ``rng`` makes the jitter reproducible in tests."""

    def __init__(
        self,
        clock: Clock,
        *,
        initial: float = 0.8,
        cap: float = 30.0,
        reset_after: float = 120.0,
        factor: float = 2.0,
        jitter: float = 1.0,
        rng: random.Random | None = None,
    ) -> None:
        if initial <= 0 or cap < initial or factor < 1 or jitter < 0:
            raise ValueError("backoff needs 0 < initial <= cap, factor >= 1, jitter >= 0")
        self._clock = clock
        self._initial = initial
        self._cap = cap
        self._reset_after = reset_after
        self._factor = factor
        self._jitter = jitter
        self._rng = rng or random.Random()
        # Invariant: initial <= _base <= cap; _base is the un-jittered delay of the next step.
        self._base = initial
        self._last_step: float | None = None

    def next_delay(self) -> float:
        now = self._clock.now()
        if self._last_step is None or now - self._last_step > self._reset_after:
            self._base = self._initial
        self._last_step = now
        delay = self._base
        self._base = min(self._base * self._factor, self._cap)
        if self._jitter > 0:
            delay += self._rng.random() * self._jitter * delay
        return min(delay, self._cap)
