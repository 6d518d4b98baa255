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

Timeouts are scopes on a clock: :func:`timeout` and :func:`timeout_at` are
:func:`asyncio.timeout` and :func:`asyncio.timeout_at` measured on a :class:`Clock`, so a test
moves a fake clock past a deadline instead of waiting for it. They serve the controller
runner's sync timeout, the leader elector's renew deadline and the reflector's watch
inactivity timeout (a deadline pushed back on every event).
"""

from __future__ import annotations

import asyncio
import enum
import heapq
import itertools
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Protocol

__all__ = ["Clock", "FakeClock", "RealClock", "Timeout", "TimerHandle", "timeout", "timeout_at"]


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


class _State(enum.Enum):
    CREATED = "created"
    ENTERED = "active"
    EXPIRING = "expiring"
    EXPIRED = "expired"
    EXITED = "finished"


class Timeout:
    """:class:`asyncio.Timeout` with its deadline on a :class:`Clock`; made by :func:`timeout`
    and :func:`timeout_at`.

    Contract, as asyncio's: at the deadline the task that entered the scope is cancelled, and
    on the way out the scope turns that cancellation into :class:`TimeoutError` - unless
    somebody else asked to cancel the task meanwhile, then ``CancelledError`` propagates. The
    cancel request is withdrawn either way, even if the body swallowed it. A deadline that has
    already passed when the scope is entered (or rescheduled) fires at the next loop
    iteration. Enter a scope once; use it inside a task.

    :meth:`reschedule` moves the deadline (``None``: no deadline). Moving it later is one
    float store - the timer notices when it fires and re-arms - so an inactivity timeout can
    be pushed back on every event it sees. :meth:`expired` tells this scope's timeout from
    any other :class:`TimeoutError` raised in the body.
    """

    __slots__ = ("_armed", "_cancelling", "_clock", "_handle", "_state", "_task", "_when")

    def __init__(self, clock: Clock, when: float | None) -> None:
        self._clock = clock
        self._when = when
        self._state = _State.CREATED
        # Invariant: _handle is not None exactly while a timer is pending; it fires at
        # _armed, which is never later than _when.
        self._handle: TimerHandle | None = None
        self._armed = 0.0
        self._task: asyncio.Task[object] | None = None
        self._cancelling = 0

    def when(self) -> float | None:
        """The deadline (clock time), or ``None``."""
        return self._when

    def expired(self) -> bool:
        """True once the deadline has cancelled the task."""
        return self._state in (_State.EXPIRING, _State.EXPIRED)

    def reschedule(self, when: float | None) -> None:
        """Move the deadline to ``when`` (clock time); ``None`` removes it.

        Only while the scope is active (entered, not yet expired or left).
        """
        if self._state is not _State.ENTERED:
            raise RuntimeError(f"cannot reschedule a timeout that is {self._state.value}")
        self._when = when
        if when is None:
            self._disarm()
        elif self._handle is None or when < self._armed:
            self._arm(when)
        # else: later than the pending timer, which re-arms when it fires.

    async def __aenter__(self) -> Timeout:
        if self._state is not _State.CREATED:
            raise RuntimeError("a timeout scope can be entered only once")
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a timeout scope must be used inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        self._state = _State.ENTERED
        self.reschedule(self._when)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._disarm()
        if self._state is _State.EXPIRING:
            self._state = _State.EXPIRED
            assert self._task is not None
            others_cancelling = self._task.uncancel() > self._cancelling
            if (
                not others_cancelling
                and exc_type is not None
                and issubclass(exc_type, asyncio.CancelledError)
            ):
                raise TimeoutError from exc
        elif self._state is _State.ENTERED:
            self._state = _State.EXITED

    def __repr__(self) -> str:
        return f"<Timeout [{self._state.value}] when={self._when}>"

    def _arm(self, when: float) -> None:
        self._disarm()
        self._armed = when
        if when <= self._clock.now():
            self._handle = asyncio.get_running_loop().call_soon(self._on_timer)
        else:
            self._handle = self._clock.call_at(when, self._on_timer)

    def _disarm(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _on_timer(self) -> None:
        self._handle = None
        if self._state is not _State.ENTERED or self._when is None:
            return
        if self._when > self._armed:  # pushed back since the timer was set
            self._arm(self._when)
            return
        assert self._task is not None
        self._state = _State.EXPIRING
        self._task.cancel()


def timeout(clock: Clock, delay: float | None) -> Timeout:
    """A scope that times out ``delay`` seconds from now on ``clock`` (``None``: never);
    :func:`asyncio.timeout` on an injectable clock. See :class:`Timeout`."""
    return Timeout(clock, None if delay is None else clock.now() + delay)


def timeout_at(clock: Clock, when: float | None) -> Timeout:
    """A scope that times out when ``clock`` reaches ``when`` (``None``: never);
    :func:`asyncio.timeout_at` on an injectable clock. See :class:`Timeout`."""
    return Timeout(clock, when)
