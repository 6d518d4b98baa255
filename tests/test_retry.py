"""kcontrol.retry, mirroring client-go's util/retry tests (TestRetryOnConflict) plus the
backoff's pauses, slept on a fake clock."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from kcontrol.clock import FakeClock
from kcontrol.errors import Conflict, NotFound
from kcontrol.retry import DEFAULT_BACKOFF, DEFAULT_RETRY, Backoff, on_error, retry_on_conflict

NO_PAUSE = Backoff(duration=0.0, factor=1.0, steps=3)


class Recorder:
    """An fn that raises the scripted errors in turn, then returns ``"done"``; records the
    clock time of each call."""

    def __init__(self, clock: FakeClock, *errors: Exception) -> None:
        self.clock = clock
        self.errors = list(errors)
        self.calls: list[float] = []

    async def __call__(self) -> str:
        self.calls.append(self.clock.now() - 1000.0)
        if self.errors:
            raise self.errors.pop(0)
        return "done"


async def run_with_fake_time(clock: FakeClock, awaitable: Awaitable[Any]) -> Any:
    """Run ``awaitable``, moving the fake clock to each sleeper's deadline until it ends."""
    task = asyncio.ensure_future(awaitable)
    while not task.done():
        await asyncio.sleep(0)
        deadline = clock.next_deadline()
        if deadline is not None:
            clock.set_time(deadline)
    return await task


# -- TestRetryOnConflict -------------------------------------------------------------------------


async def test_never_returns_raises_the_last_conflict() -> None:
    clock = FakeClock()
    conflicts = [Conflict("first"), Conflict("second"), Conflict("last")]
    fn = Recorder(clock, *conflicts)
    with pytest.raises(Conflict) as raised:
        await run_with_fake_time(clock, retry_on_conflict(NO_PAUSE, fn, clock=clock))
    assert raised.value is conflicts[-1]
    assert len(fn.calls) == 3  # steps is the number of attempts


async def test_returns_immediately() -> None:
    clock = FakeClock()
    fn = Recorder(clock)
    assert await retry_on_conflict(NO_PAUSE, fn, clock=clock) == "done"
    assert len(fn.calls) == 1


async def test_returns_immediately_on_another_error() -> None:
    clock = FakeClock()
    error = NotFound("gone")
    fn = Recorder(clock, error)
    with pytest.raises(NotFound) as raised:
        await retry_on_conflict(NO_PAUSE, fn, clock=clock)
    assert raised.value is error
    assert len(fn.calls) == 1


async def test_keeps_retrying_until_it_succeeds() -> None:
    clock = FakeClock()
    fn = Recorder(clock, Conflict(), Conflict())
    result = await run_with_fake_time(clock, retry_on_conflict(NO_PAUSE, fn, clock=clock))
    assert result == "done"
    assert len(fn.calls) == 3


async def test_cancellation_propagates_and_is_not_retried() -> None:
    clock = FakeClock()
    calls = 0

    async def cancelled() -> None:
        nonlocal calls
        calls += 1
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await retry_on_conflict(DEFAULT_BACKOFF, cancelled, clock=clock)
    with pytest.raises(asyncio.CancelledError):
        await run_with_fake_time(
            clock, on_error(DEFAULT_BACKOFF, lambda e: True, cancelled, clock=clock)
        )
    assert calls == 2


# -- the pauses ------------------------------------------------------------------------------------


async def test_pauses_follow_the_backoff_on_the_clock() -> None:
    clock = FakeClock()
    backoff = Backoff(duration=0.01, factor=5.0, steps=4)
    fn = Recorder(clock, Conflict(), Conflict(), Conflict(), Conflict())
    with pytest.raises(Conflict):
        await run_with_fake_time(clock, retry_on_conflict(backoff, fn, clock=clock))
    assert fn.calls == pytest.approx([0.0, 0.01, 0.06, 0.31])


async def test_on_error_retries_what_the_predicate_accepts() -> None:
    clock = FakeClock()
    fn = Recorder(clock, NotFound(), NotFound())
    retriable: Callable[[Exception], bool] = lambda e: isinstance(e, NotFound)  # noqa: E731
    result = await run_with_fake_time(clock, on_error(NO_PAUSE, retriable, fn, clock=clock))
    assert result == "done"
    assert len(fn.calls) == 3


async def test_on_error_does_not_retry_what_the_predicate_refuses() -> None:
    clock = FakeClock()
    fn = Recorder(clock, Conflict())
    with pytest.raises(Conflict):
        await on_error(NO_PAUSE, lambda e: isinstance(e, NotFound), fn, clock=clock)
    assert len(fn.calls) == 1


async def test_a_single_step_tries_once() -> None:
    clock = FakeClock()
    fn = Recorder(clock, Conflict())
    with pytest.raises(Conflict):
        await retry_on_conflict(Backoff(duration=1.0, steps=1), fn, clock=clock)
    assert len(fn.calls) == 1
    assert not clock.has_waiters()


DELAY_CASES = [
    ("constant", Backoff(duration=0.01, steps=5), [0.01, 0.01, 0.01, 0.01]),
    ("exponential", Backoff(duration=0.01, factor=5.0, steps=4), [0.01, 0.05, 0.25]),
    # apimachinery's Backoff.Step sets Steps to 0 once the next pause would pass the cap:
    # attempts at 0 and 1 s, then the one after the 3 s pause is never made.
    ("capped-stops", Backoff(duration=1.0, factor=3.0, steps=5, cap=5.0), [1.0]),
    ("cap-reached-exactly", Backoff(duration=1.0, factor=2.0, steps=5, cap=4.0), [1.0, 2.0]),
    ("first-pause-past-cap", Backoff(duration=3.0, factor=2.0, steps=5, cap=1.0), []),
    ("zero-factor-is-constant", Backoff(duration=2.0, factor=0.0, steps=3), [2.0, 2.0]),
    ("one-step-no-pause", Backoff(duration=1.0, steps=1), []),
]


@pytest.mark.parametrize(
    ("backoff", "expected"), [c[1:] for c in DELAY_CASES], ids=[c[0] for c in DELAY_CASES]
)
def test_delays(backoff: Backoff, expected: list[float]) -> None:
    assert list(backoff.delays()) == pytest.approx(expected)


async def test_a_capped_backoff_gives_up_when_the_cap_is_reached() -> None:
    """retry.OnError over wait.ExponentialBackoff: a conflict keeps failing; with a cap the
    attempts end where apimachinery's Backoff.Step stops, not after ``steps`` attempts."""
    clock = FakeClock()
    attempts: list[float] = []

    async def fn() -> None:
        attempts.append(clock.now())
        raise Conflict("the object has been modified")

    task = asyncio.create_task(
        retry_on_conflict(Backoff(duration=1.0, factor=3.0, steps=5, cap=5.0), fn, clock=clock)
    )
    for _ in range(10):
        await asyncio.sleep(0)
        clock.step(1.0)
    with pytest.raises(Conflict):
        await task
    assert [moment - attempts[0] for moment in attempts] == [0.0, 1.0]


def test_jitter_adds_up_to_its_fraction_and_does_not_compound() -> None:
    backoff = Backoff(duration=1.0, factor=2.0, jitter=0.5, steps=6)
    for seed in range(20):
        delays = list(backoff.delays(random.Random(seed)))
        bases = [1.0, 2.0, 4.0, 8.0, 16.0]
        assert all(b <= d < b * 1.5 for d, b in zip(delays, bases, strict=True)), delays
    assert list(backoff.delays(random.Random(7))) == list(backoff.delays(random.Random(7)))
    assert len(set(backoff.delays(random.Random(1)))) == 5


def test_defaults_are_client_gos() -> None:
    assert (DEFAULT_RETRY.steps, DEFAULT_RETRY.duration) == (5, 0.010)
    assert (DEFAULT_RETRY.factor, DEFAULT_RETRY.jitter, DEFAULT_RETRY.cap) == (1.0, 0.1, None)
    assert (DEFAULT_BACKOFF.steps, DEFAULT_BACKOFF.duration) == (4, 0.010)
    assert (DEFAULT_BACKOFF.factor, DEFAULT_BACKOFF.jitter, DEFAULT_BACKOFF.cap) == (5.0, 0.1, None)


@pytest.mark.parametrize(
    "kwargs",
    [{"steps": 0}, {"duration": -1.0}, {"factor": -1.0}, {"jitter": -0.1}, {"cap": 0.0}],
    ids=["no-steps", "negative-duration", "negative-factor", "negative-jitter", "zero-cap"],
)
def test_invalid_backoffs_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Backoff(**({"duration": 0.01, "steps": 2} | kwargs))
