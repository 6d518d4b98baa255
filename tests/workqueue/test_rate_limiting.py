"""The rate-limiting queue, after client-go's rate_limiting_queue_test.go."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from kcontrol.clock import FakeClock
from kcontrol.workqueue import (
    DelayingQueue,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimitingQueue,
    ShutDown,
)


def _delay_until_next_fire(clock: FakeClock) -> float | None:
    deadline = clock.next_deadline()
    return None if deadline is None else deadline - clock.now()


async def test_rate_limiting_queue() -> None:
    clock = FakeClock(start=0.0)
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(0.001, 1.0)
    q = RateLimitingQueue(rate_limiter=limiter, clock=clock)

    q.add_rate_limited("one")
    assert _delay_until_next_fire(clock) == pytest.approx(0.001)
    clock.step(0.001)
    assert await q.get() == "one"
    q.done("one")

    q.add_rate_limited("one")
    assert _delay_until_next_fire(clock) == pytest.approx(0.002)
    assert q.num_requeues("one") == 2
    clock.step(0.002)

    q.add_rate_limited("two")
    assert _delay_until_next_fire(clock) == pytest.approx(0.001)
    clock.step(0.001)
    q.add_rate_limited("two")
    assert _delay_until_next_fire(clock) == pytest.approx(0.002)
    clock.step(0.002)

    q.forget("one")
    assert q.num_requeues("one") == 0
    q.add_rate_limited("one")
    assert _delay_until_next_fire(clock) == pytest.approx(0.001)
    clock.step(0.001)
    assert q.num_requeues("two") == 2


async def test_worker_loop_retries_with_backoff_then_forgets() -> None:
    clock = FakeClock(start=0.0)
    q: RateLimitingQueue[str] = RateLimitingQueue(
        rate_limiter=ItemExponentialFailureRateLimiter(0.01, 10.0), clock=clock
    )
    attempts: list[float] = []

    async def worker() -> None:
        while True:
            try:
                key = await q.get()
            except ShutDown:
                return
            try:
                attempts.append(clock.now())
                if len(attempts) < 4:
                    raise RuntimeError("transient")
            except RuntimeError:
                q.add_rate_limited(key)
            else:
                q.forget(key)
            finally:
                q.done(key)

    async with asyncio.timeout(2), asyncio.TaskGroup() as group:
        group.create_task(worker())
        q.add("ns/name")
        while len(attempts) < 4:
            await asyncio.sleep(0)
            if q.waiting_len():
                clock.step(_delay_until_next_fire(clock) or 0.0)
        q.shutdown()

    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    assert gaps == pytest.approx([0.01, 0.02, 0.04])
    assert q.num_requeues("ns/name") == 0


async def test_default_limiter_runs_on_the_queue_clock() -> None:
    clock = FakeClock(start=0.0)
    q: RateLimitingQueue[int] = RateLimitingQueue(clock=clock)
    assert isinstance(q.rate_limiter, MaxOfRateLimiter)
    for i in range(100):  # the bucket's burst
        q.add_rate_limited(i)
    q.add_rate_limited(100)
    # 100 items wait the per-item 5 ms; the 101st waits for a token: 0.1 s on the fake clock.
    assert q.waiting_len() == 101
    clock.step(0.005)
    assert len(q) == 100
    clock.step(0.094)
    assert len(q) == 100
    clock.step(0.001)
    assert len(q) == 101


async def test_wraps_a_given_delaying_queue_and_delegates() -> None:
    clock = FakeClock()
    inner: DelayingQueue[str] = DelayingQueue(clock=clock)
    q = RateLimitingQueue(
        rate_limiter=ItemExponentialFailureRateLimiter(1.0, 1.0), clock=clock, queue=inner
    )
    q.add("now")
    q.add_after("later", 5)
    assert len(q) == q.len() == inner.len() == 1
    assert q.waiting_len() == 1
    assert bool(q)
    item = await q.get()
    q.done(item)
    clock.step(5)
    assert len(q) == 1
    async with asyncio.timeout(1):
        await q.shutdown_with_drain()
    assert q.shutting_down() and inner.shutting_down()
    q.add_rate_limited("ignored")
    assert q.waiting_len() == 0
    assert await q.get() == "later"


async def test_an_item_waiting_for_its_delay_is_not_dirty_until_it_passes() -> None:
    clock = FakeClock(start=0.0)
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(0.5, 1.0)
    q = RateLimitingQueue(rate_limiter=limiter, clock=clock)
    q.add_rate_limited("a")
    assert not q.is_dirty("a"), "a retry later is no newer event"
    clock.step(0.5)
    await asyncio.sleep(0)
    assert q.is_dirty("a")
    assert await q.get() == "a"
    q.add("a")
    assert q.is_dirty("a")
