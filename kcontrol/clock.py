"""Injectable time for everything in kcontrol that waits or measures.

Every time-based component (delaying queue, rate limiters, reflector backoff, leader election)
takes a :class:`Clock`. Production code uses :class:`RealClock`, which reads the event loop's
monotonic clock; tests pass a :class:`FakeClock` and move time forward with
:meth:`FakeClock.step` instead of sleeping.

Contract of a clock:

- ``now()`` is monotonic seconds (float); only differences between two readings mean anything.
- ``call_at(when, callback)`` runs ``callback()`` on the event loop once ``now() >= when`` and
  returns a handle whose ``cancel()`` prevents that. Callbacks run in order of ``when``.
- ``sleep(seconds)`` suspends the caller until ``now()`` has advanced by ``seconds``; it is
  cancellable like :func:`asyncio.sleep`.
- ``wall()`` is the wall-clock time (UTC), for values written to the API (timestamps in Events
  and Leases); never use it to measure durations.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = ["Clock", "FakeClock", "RealClock", "TimerHandle"]


class TimerHandle(Protocol):
    """What :meth:`Clock.call_at` returns."""

    def cancel(self) -> None: ...


class Clock(Protocol):
    """Monotonic time, timers and sleeping; see the module docstring for the contract."""

    def now(self) -> float: ...

    def wall(self) -> datetime: ...

    def call_at(self, when: float, callback: Callable[[], object]) -> TimerHandle: ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    """The running event loop's monotonic clock (``loop.time()``) and real UTC wall time."""

    def now(self) -> float:
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:  # outside a loop: the loop's clock is time.monotonic
            return time.monotonic()

    def wall(self) -> datetime:
        return datetime.now(UTC)

    def call_at(self, when: float, callback: Callable[[], object]) -> TimerHandle:
        return asyncio.get_running_loop().call_at(when, callback)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class _FakeTimer:
    __slots__ = ("callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[[], object]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A clock that only moves when told to; for tests.

    ``step(d)`` advances time by ``d`` seconds and synchronously runs every timer that became
    due, in order. Sleepers are woken through their futures, so a test usually follows
    ``step`` with ``await asyncio.sleep(0)`` (or a few) to let woken tasks run.
    """

    def __init__(self, start: float = 1000.0, wall_start: datetime | None = None) -> None:
        self._now = start
        self._start = start
        self._wall_start = wall_start or datetime(2026, 1, 1, tzinfo=UTC)
        # Invariant: a heap of (when, sequence, timer); the sequence keeps equal deadlines FIFO.
        self._timers: list[tuple[float, int, _FakeTimer]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def wall(self) -> datetime:
        return self._wall_start + timedelta(seconds=self._now - self._start)

    def call_at(self, when: float, callback: Callable[[], object]) -> TimerHandle:
        timer = _FakeTimer(when, callback)
        heapq.heappush(self._timers, (when, next(self._seq), timer))
        return timer

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not future.done():
                future.set_result(None)

        handle = self.call_at(self._now + seconds, wake)
        try:
            await future
        finally:
            handle.cancel()

    def step(self, seconds: float) -> None:
        """Advance time by ``seconds`` and run the timers that are now due."""
        self.set_time(self._now + seconds)

    def set_time(self, now: float) -> None:
        """Move time to ``now`` (never backwards) and run the timers that are now due."""
        self._now = max(self._now, now)
        while self._timers and self._timers[0][0] <= self._now:
            _, _, timer = heapq.heappop(self._timers)
            if not timer.cancelled:
                timer.callback()

    def has_waiters(self) -> bool:
        """True while any timer or sleeper is pending."""
        return any(not t.cancelled for _, _, t in self._timers)

    def next_deadline(self) -> float | None:
        """The earliest pending deadline, or ``None``."""
        live = [when for when, _, t in self._timers if not t.cancelled]
        return min(live) if live else None
