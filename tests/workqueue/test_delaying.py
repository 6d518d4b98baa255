"""The delaying queue, after client-go's delaying_queue_test.go (SimpleQueue, Deduping,
AddTwoFireEarly, CopyShifting), driven by a fake clock instead of sleeping."""

from __future__ import annotations

import asyncio

import pytest

from kcontrol.clock import FakeClock
from kcontrol.workqueue import DelayingQueue, Queue, ShutDown


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def q(clock: FakeClock) -> DelayingQueue[str]:
    return DelayingQueue(clock=clock)


async def _get_done(q: DelayingQueue[str]) -> str:
    item = await q.get()
    q.done(item)
    return item


async def test_simple_queue(clock: FakeClock, q: DelayingQueue[str]) -> None:
    q.add_after("foo", 0.050)
    assert len(q) == 0
    assert q.waiting_len() == 1
    assert clock.has_waiters()

    clock.step(0.060)
    assert len(q) == 1
    assert await _get_done(q) == "foo"

    # Nothing else fires, however far time moves on.
    clock.step(10)
    assert len(q) == 0
    assert not clock.has_waiters()


async def test_deduping(clock: FakeClock, q: DelayingQueue[str]) -> None:
    q.add_after("foo", 0.050)
    q.add_after("foo", 0.070)  # later than the pending add: ignored
    assert len(q) == 0
    assert q.waiting_len() == 1

    clock.step(0.060)  # past the first ready time
    assert len(q) == 1
    assert await _get_done(q) == "foo"

    clock.step(0.020)  # past the second: it was dropped, not merely postponed
    assert len(q) == 0

    # This time the earlier add overrides.
    q.add_after("foo", 0.050)
    q.add_after("foo", 0.030)
    assert len(q) == 0
    clock.step(0.040)
    assert len(q) == 1
    assert await _get_done(q) == "foo"

    clock.step(0.020)
    assert len(q) == 0
    assert not clock.has_waiters()


async def test_add_two_fire_early(clock: FakeClock, q: DelayingQueue[str]) -> None:
    q.add_after("foo", 1)
    q.add_after("bar", 0.050)
    assert len(q) == 0

    clock.step(0.060)
    assert len(q) == 1
    assert await q.get() == "bar"

    q.add_after("baz", 2)
    clock.step(1)
    assert len(q) == 1
    assert await q.get() == "foo"

    clock.step(2)
    assert len(q) == 1
    assert await q.get() == "baz"


async def test_copy_shifting(clock: FakeClock, q: DelayingQueue[str]) -> None:
    q.add_after("foo", 1)
    q.add_after("bar", 0.5)
    q.add_after("baz", 0.25)
    assert len(q) == 0

    clock.step(2)
    assert len(q) == 3
    # Handed out in order of readiness, not of add_after calls.
    assert [await q.get() for _ in range(3)] == ["baz", "bar", "foo"]


async def test_non_positive_delay_adds_now(clock: FakeClock, q: DelayingQueue[str]) -> None:
    q.add_after("zero", 0)
    q.add_after("negative", -5)
    assert len(q) == 2
    assert q.waiting_len() == 0
    assert not clock.has_waiters()


async def test_add_after_is_ignored_while_shutting_down(
    clock: FakeClock, q: DelayingQueue[str]
) -> None:
    q.shutdown()
    q.add_after("late", 1)
    q.add_after("now", 0)
    assert q.waiting_len() == 0
    assert not clock.has_waiters()
    clock.step(2)
    assert len(q) == 0
    with pytest.raises(ShutDown):
        await q.get()


async def test_shutdown_cancels_waiting_items(clock: FakeClock, q: DelayingQueue[str]) -> None:
    q.add_after("a", 1)
    q.add_after("b", 2)
    q.add("c")
    q.shutdown()
    assert q.waiting_len() == 0
    assert not clock.has_waiters()
    clock.step(5)
    assert await _get_done(q) == "c"
    with pytest.raises(ShutDown):
        await q.get()


async def test_shutdown_with_drain_cancels_waiting_items(
    clock: FakeClock, q: DelayingQueue[str]
) -> None:
    q.add("busy")
    busy = await q.get()
    q.add_after("later", 1)
    async with asyncio.timeout(1), asyncio.TaskGroup() as group:
        drain = group.create_task(q.shutdown_with_drain())
        await asyncio.sleep(0)
        assert not clock.has_waiters()
        assert not drain.done()
        q.done(busy)
    clock.step(2)
    assert len(q) == 0


async def test_plain_add_of_a_waiting_item_queues_it_now(
    clock: FakeClock, q: DelayingQueue[str]
) -> None:
    q.add_after("x", 1)
    q.add("x")
    assert len(q) == 1
    clock.step(1)  # the delayed add collapses with the queued copy
    assert len(q) == 1
    assert await _get_done(q) == "x"
    assert len(q) == 0


async def test_waiting_item_fires_while_processing(clock: FakeClock, q: DelayingQueue[str]) -> None:
    q.add("x")
    item = await q.get()
    q.add_after("x", 1)
    clock.step(1)
    assert len(q) == 0  # dirty, held back until done
    q.done(item)
    assert len(q) == 1


async def test_wraps_a_given_queue(clock: FakeClock) -> None:
    inner: Queue[str] = Queue(clock=clock)
    q = DelayingQueue(clock=clock, queue=inner)
    q.add_after("x", 1)
    clock.step(1)
    assert inner.len() == 1
    q.shutdown()
    assert inner.shutting_down()


async def test_real_clock_delay_fires() -> None:
    q: DelayingQueue[str] = DelayingQueue()
    q.add_after("soon", 0.01)
    async with asyncio.timeout(1):
        assert await q.get() == "soon"
    q.done("soon")
    q.shutdown()


async def test_cancel_add_after_drops_only_the_pending_delayed_add(
    clock: FakeClock, q: DelayingQueue[str]
) -> None:
    assert not q.cancel_add_after("foo")  # nothing pending
    q.add_after("foo", 0.050)
    q.add_after("bar", 0.050)
    q.add("foo")  # queued now as well; the cancel leaves this place in line alone
    assert q.cancel_add_after("foo")
    assert not q.cancel_add_after("foo")
    assert q.waiting_len() == 1

    clock.step(0.060)
    assert [await _get_done(q), await _get_done(q)] == ["foo", "bar"]
    clock.step(10)
    assert len(q) == 0  # the cancelled add never fired
    assert not clock.has_waiters()
