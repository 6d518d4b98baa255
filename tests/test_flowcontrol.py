"""kcontrol.flowcontrol.TokenBucketRateLimiter: the one token bucket, with each way its users
take tokens (the client's wait, the workqueue's reserve, the event spam filter's try_accept)."""

from __future__ import annotations

import asyncio

import pytest

import kcontrol.flowcontrol
from kcontrol.clock import FakeClock
from kcontrol.flowcontrol import TokenBucketRateLimiter


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.mark.parametrize(
    ("qps", "burst"),
    [
        pytest.param(0, 1, id="zero-qps"),
        pytest.param(-1, 1, id="negative-qps"),
        pytest.param(float("nan"), 1, id="nan-qps"),
        (1, 0),
    ],
)
def test_rejects_invalid_parameters(qps: float, burst: int) -> None:
    with pytest.raises(ValueError):
        TokenBucketRateLimiter(qps, burst, clock=FakeClock())


async def test_burst_is_free_then_one_token_per_interval() -> None:
    clock = FakeClock()
    limiter = TokenBucketRateLimiter(qps=2, burst=3, clock=clock)
    for _ in range(3):
        assert await limiter.wait() == 0.0

    waiter = asyncio.create_task(limiter.wait())
    await settle()
    assert not waiter.done()
    clock.step(0.49)
    await settle()
    assert not waiter.done()
    clock.step(0.01)
    await settle()
    assert waiter.done()
    assert waiter.result() == pytest.approx(0.5)


async def test_waiters_are_served_in_fifo_order() -> None:
    clock = FakeClock()
    limiter = TokenBucketRateLimiter(qps=10, burst=1, clock=clock)
    await limiter.wait()
    order: list[int] = []

    async def take(i: int) -> None:
        await limiter.wait()
        order.append(i)

    async with asyncio.TaskGroup() as tg:
        for i in range(5):
            tg.create_task(take(i))
            await settle()
        for _ in range(5):
            clock.step(0.1)
            await settle()
            assert order == list(range(len(order)))
    assert order == [0, 1, 2, 3, 4]


async def test_refill_is_capped_at_burst() -> None:
    clock = FakeClock()
    limiter = TokenBucketRateLimiter(qps=5, burst=2, clock=clock)
    assert limiter.try_accept()
    assert limiter.try_accept()
    assert not limiter.try_accept()
    clock.step(60)
    assert limiter.tokens() == pytest.approx(2)
    assert limiter.try_accept()
    assert limiter.try_accept()
    assert not limiter.try_accept()


async def test_cancelled_waiter_returns_its_reservation() -> None:
    clock = FakeClock()
    limiter = TokenBucketRateLimiter(qps=1, burst=1, clock=clock)
    await limiter.wait()
    waiter = asyncio.create_task(limiter.wait())
    await settle()
    assert limiter.tokens() == pytest.approx(-1)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert limiter.tokens() == pytest.approx(0)
    clock.step(1)
    assert limiter.try_accept()


async def test_sustained_rate_matches_qps() -> None:
    clock = FakeClock()
    limiter = TokenBucketRateLimiter(qps=4, burst=1, clock=clock)
    start = clock.now()
    done = 0

    async def worker() -> None:
        nonlocal done
        while done < 9:
            await limiter.wait()
            done += 1

    task = asyncio.create_task(worker())
    while not task.done():
        await settle()
        clock.step(0.125)
    await task
    # one token at once, then 8 more at 4/s
    assert clock.now() - start == pytest.approx(2.0, abs=0.25)


def test_public_surface() -> None:
    assert kcontrol.flowcontrol.__all__ == ["TokenBucketRateLimiter"]


def test_reserve_takes_the_next_token_and_says_when_it_is_due() -> None:
    clock = FakeClock()
    limiter = TokenBucketRateLimiter(qps=10, burst=2, clock=clock)
    assert [limiter.reserve() for _ in range(4)] == pytest.approx([0, 0, 0.1, 0.2])
    assert limiter.tokens() == pytest.approx(-2)
    assert not limiter.try_accept(), "reserved tokens are not there to take"
    clock.step(0.2)
    assert limiter.tokens() == pytest.approx(0, abs=1e-9)
    assert limiter.reserve() == pytest.approx(0.1)


def test_try_accept_refills_continuously_and_never_reserves() -> None:
    clock = FakeClock()
    limiter = TokenBucketRateLimiter(qps=1 / 300, burst=2, clock=clock)
    assert limiter.try_accept()
    assert limiter.try_accept()
    assert not limiter.try_accept()
    assert limiter.tokens() == pytest.approx(0)
    clock.step(299)
    assert not limiter.try_accept()
    clock.step(1)
    assert limiter.try_accept()
    assert not limiter.try_accept()


async def test_infinite_qps_never_limits() -> None:
    clock = FakeClock()
    limiter = TokenBucketRateLimiter(qps=float("inf"), burst=1, clock=clock)
    assert all(limiter.try_accept() for _ in range(100))
    assert [limiter.reserve() for _ in range(100)] == [0.0] * 100
    assert await limiter.wait() == 0.0
    assert limiter.qps == float("inf")
    assert limiter.burst == 1
