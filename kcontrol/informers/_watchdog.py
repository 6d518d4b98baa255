"""An inactivity timeout scope driven by an injectable clock.

HTTP/1.1 watches have no pings: when a connection goes half-open the stream simply stops
delivering and neither side notices. The apiserver sends a bookmark about once a minute on a
healthy watch, so a watch that has been silent for a bit longer than that is dead and must be
abandoned. :class:`InactivityTimeout` is the scope that does it: like :func:`asyncio.timeout`,
but the deadline moves forward each time :meth:`InactivityTimeout.kick` is called, and time
comes from a :class:`~kcontrol.clock.Clock` so tests can drive it.
"""

from __future__ import annotations

import asyncio
from types import TracebackType

from kcontrol.clock import Clock, TimerHandle

__all__ = ["InactivityTimeout", "InactivityTimeoutError"]


class InactivityTimeoutError(TimeoutError):
    """Nothing happened inside an :class:`InactivityTimeout` scope for its whole timeout."""


class InactivityTimeout:
    """``async with InactivityTimeout(clock, 70) as watchdog:`` ... ``watchdog.kick()`` ...

    If ``timeout`` seconds pass without a :meth:`kick` (counting from entry), the task that
    entered the scope is cancelled and the scope raises :class:`InactivityTimeoutError`.
    A cancellation from anywhere else still propagates as :class:`asyncio.CancelledError`.
    Kicking is cheap (one float store): the timer re-arms itself lazily when it fires early.
    """

    def __init__(self, clock: Clock, timeout: float) -> None:
        self._clock = clock
        self._timeout = timeout
        self._deadline = 0.0
        self._task: asyncio.Task[object] | None = None
        self._handle: TimerHandle | None = None
        self._cancelling = 0
        self._expired = False
        self._active = False

    def kick(self) -> None:
        """Record activity: the deadline becomes now + timeout."""
        self._deadline = self._clock.now() + self._timeout

    async def __aenter__(self) -> InactivityTimeout:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("InactivityTimeout must be used inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        self._active = True
        self.kick()
        self._handle = self._clock.call_at(self._deadline, self._on_timer)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._active = False
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if not self._expired or self._task is None:
            return
        # Undo our own cancel request; turn the cancellation into the timeout only if no one
        # else asked to cancel the task meanwhile.
        others_cancelling = self._task.uncancel() > self._cancelling
        if exc_type is asyncio.CancelledError and not others_cancelling:
            raise InactivityTimeoutError(f"no activity for {self._timeout:g} s") from exc

    def _on_timer(self) -> None:
        if not self._active or self._task is None:
            return
        if self._clock.now() < self._deadline:  # kicked since the timer was set: re-arm
            self._handle = self._clock.call_at(self._deadline, self._on_timer)
            return
        self._expired = True
        self._active = False
        self._task.cancel()
