"""ExponentialBackoff (wait.NewExponentialBackoffManager) and the clock-driven InactivityTimeout."""

from __future__ import annotations

import asyncio
import random

import pytest
from informers_fakes import advance, settle

from kcontrol.clock import FakeClock
from kcontrol.informers import ExponentialBackoff
from kcontrol.informers._watchdog import InactivityTimeout, InactivityTimeoutError


class FixedRandom(random.Random):
    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def random(self) -> float:
        return self.value


@pytest.mark.parametrize(
    ("jitter_draw", "expected"),
    [
        pytest.param(0.0, [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0], id="no-jitter"),
        pytest.param(0.5, [1.2, 2.4, 4.8, 9.6, 19.2, 30.0, 30.0, 30.0], id="half-jitter"),
    ],
)
def test_backoff_doubles_from_800ms_and_caps_the_wait_at_30s(
    jitter_draw: float, expected: list[float]
) -> None:
    clock = FakeClock()
    backoff = ExponentialBackoff(clock, rng=FixedRandom(jitter_draw))
    delays = []
    for _ in expected:
        delays.append(round(backoff.next_delay(), 6))
        clock.step(1.0)  # failures keep coming: no reset
    assert delays == expected


def test_backoff_jitter_stays_within_one_base_delay_and_the_cap() -> None:
    clock = FakeClock()
    backoff = ExponentialBackoff(clock, rng=random.Random(7))
    bases = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6] + [30.0] * 20
    for base in bases:
        delay = backoff.next_delay()
        assert min(base, 30.0) <= delay < min(2 * base, 30.0 + 1e-9)
        clock.step(1.0)


def test_backoff_resets_after_two_healthy_minutes() -> None:
    clock = FakeClock()
    backoff = ExponentialBackoff(clock, rng=FixedRandom(0.0))
    for _ in range(5):
        backoff.next_delay()
    clock.step(119.0)
    assert backoff.next_delay() == pytest.approx(25.6), "not healthy long enough"
    clock.step(120.5)
    assert backoff.next_delay() == pytest.approx(0.8)


def test_backoff_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="backoff"):
        ExponentialBackoff(FakeClock(), initial=0)


async def test_inactivity_timeout_fires_without_kicks_and_not_with_them() -> None:
    clock = FakeClock()
    outcome: list[str] = []

    async def guarded(kick_every: float | None) -> None:
        try:
            async with InactivityTimeout(clock, 10.0) as watchdog:
                while True:
                    await clock.sleep(kick_every or 1000.0)
                    watchdog.kick()
        except InactivityTimeoutError:
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
        async with InactivityTimeout(clock, 10.0):
            await asyncio.Event().wait()

    task = asyncio.create_task(guarded())
    await settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await advance(clock, 20.0)  # the timer was cancelled with the scope: nothing fires
    assert not clock.has_waiters()
