"""kcontrol.clock: the fake clock's timers, and timeout scopes measured on a clock (the
controller runner's sync timeout, the elector's renew deadline, the reflector's watch
inactivity timeout are all this one scope)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

import kcontrol.clock
from kcontrol.clock import FakeClock, timeout, timeout_at


async def settle(rounds: int = 20) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


async def advance(clock: FakeClock, seconds: float) -> None:
    clock.step(seconds)
    await settle()


def test_public_surface() -> None:
    assert sorted(kcontrol.clock.__all__) == [
        "Clock",
        "FakeClock",
        "RealClock",
        "Timeout",
        "TimerHandle",
        "timeout",
        "timeout_at",
    ]


async def test_deadline_cancels_the_body_and_raises_timeout_error() -> None:
    clock = FakeClock()
    cancelled: list[bool] = []

    async def body() -> None:
        async with timeout(clock, 5.0) as scope:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(scope.expired())
                raise

    task = asyncio.create_task(body())
    await settle()
    await advance(clock, 4.9)
    assert not task.done()
    await advance(clock, 0.1)
    assert task.done()
    with pytest.raises(TimeoutError):
        await task
    assert cancelled == [True]
    assert not clock.has_waiters()


async def test_a_body_that_finishes_in_time_is_left_alone() -> None:
    clock = FakeClock()
    async with timeout_at(clock, clock.now() + 1.0) as scope:
        await clock.sleep(0)
    assert not scope.expired()
    assert not clock.has_waiters(), "leaving the scope cancels its timer"


async def test_none_means_no_deadline() -> None:
    clock = FakeClock()
    async with timeout(clock, None) as scope:
        assert scope.when() is None
        assert not clock.has_waiters()
    assert not scope.expired()


async def test_a_past_deadline_fires_at_the_next_loop_iteration() -> None:
    clock = FakeClock()
    with pytest.raises(TimeoutError):
        async with timeout_at(clock, clock.now() - 1.0):
            await asyncio.sleep(0)  # no fake time passes: the loop alone ends it


async def test_inactivity_timeout_fires_without_kicks_and_not_with_them() -> None:
    """A deadline pushed back on every activity: the reflector's watch watchdog."""
    clock = FakeClock()
    outcome: list[str] = []

    async def guarded(kick_every: float | None) -> None:
        try:
            async with timeout(clock, 10.0) as watchdog:
                while True:
                    await clock.sleep(kick_every or 1000.0)
                    watchdog.reschedule(clock.now() + 10.0)
        except TimeoutError:
            outcome.append("timeout")

    kicked = asyncio.create_task(guarded(5.0))
    silent = asyncio.create_task(guarded(None))
    await settle()
    for _ in range(6):
        await advance(clock, 5.0)
    assert silent.done() and outcome == ["timeout"]
    assert not kicked.done()
    kicked.cancel()
    with pytest.raises(asyncio.CancelledError):
        await kicked


async def test_outside_cancellation_is_not_turned_into_a_timeout() -> None:
    clock = FakeClock()

    async def guarded() -> None:
        async with timeout(clock, 10.0):
            await asyncio.Event().wait()

    task = asyncio.create_task(guarded())
    await settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await advance(clock, 20.0)  # the timer was cancelled with the scope: nothing fires
    assert not clock.has_waiters()


async def test_a_cancellation_racing_the_deadline_propagates_as_cancellation() -> None:
    clock = FakeClock()

    async def guarded() -> None:
        async with timeout(clock, 1.0):
            await asyncio.Event().wait()

    task = asyncio.create_task(guarded())
    await settle()
    clock.step(1.0)  # the scope cancels the task ...
    task.cancel()  # ... and so does somebody else, before the task runs again
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_reschedule_earlier_and_later_and_away() -> None:
    clock = FakeClock()
    start = clock.now()

    async def guarded(scope_when: list[float | None]) -> None:
        async with timeout(clock, 10.0) as scope:
            scope.reschedule(start + 2.0)  # earlier: re-armed
            scope_when.append(scope.when())
            await asyncio.Event().wait()

    seen: list[float | None] = []
    task = asyncio.create_task(guarded(seen))
    await settle()
    assert seen == [start + 2.0]
    await advance(clock, 2.0)
    with pytest.raises(TimeoutError):
        await task

    async def unbounded() -> None:
        async with timeout(clock, 1.0) as scope:
            scope.reschedule(None)
            await clock.sleep(5.0)

    await asyncio.wait_for(asyncio.gather(unbounded(), _step_soon(clock, 5.0)), 5)


async def _step_soon(clock: FakeClock, seconds: float) -> None:
    await settle()
    await advance(clock, seconds)


async def test_a_swallowed_cancellation_is_withdrawn() -> None:
    """A body that swallows the deadline's cancellation ends normally, and its task is not
    left with a pending cancel request."""
    clock = FakeClock()
    async with timeout(clock, 1.0) as scope:
        with contextlib.suppress(asyncio.CancelledError):
            await _step_then_wait(clock, 1.0)
    assert scope.expired()
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def _step_then_wait(clock: FakeClock, seconds: float) -> None:
    clock.step(seconds)
    await asyncio.Event().wait()


async def test_misuse_is_refused() -> None:
    clock = FakeClock()
    scope = timeout(clock, 1.0)
    with pytest.raises(RuntimeError, match="reschedule"):
        scope.reschedule(5.0)
    async with scope:
        pass
    with pytest.raises(RuntimeError, match="once"):
        async with scope:
            pass
    with pytest.raises(RuntimeError, match="reschedule"):
        scope.reschedule(5.0)
