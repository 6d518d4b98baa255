"""The basic queue, after client-go's queue_test.go (Basic, AddWhileProcessing, Len, Reinsert,
Collapse, CollapseWhileProcessing and the four drain/shutdown tests), plus asyncio specifics."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kcontrol.errors import KcontrolError
from kcontrol.workqueue import Queue, ShutDown


async def _yield(times: int = 1) -> None:
    for _ in range(times):
        await asyncio.sleep(0)


def _shutdown(q: Queue[Any]) -> Awaitable[None]:
    q.shutdown()
    return _yield()


def _shutdown_with_drain(q: Queue[Any]) -> Awaitable[None]:
    return q.shutdown_with_drain()


SHUTDOWNS = pytest.mark.parametrize(
    "shut_down", [_shutdown, _shutdown_with_drain], ids=["shutdown", "shutdown_with_drain"]
)


@SHUTDOWNS
async def test_basic(shut_down: Callable[[Queue[Any]], Awaitable[None]]) -> None:
    q: Queue[Any] = Queue()
    producers, adds_each, consumers = 50, 50, 10
    processed: list[list[Any]] = [[] for _ in range(consumers)]

    async def produce(i: int) -> None:
        for _ in range(adds_each):
            q.add(i)
            await _yield()

    async def consume(i: int) -> None:
        while True:
            try:
                item = await q.get()
            except ShutDown:
                return
            processed[i].append(item)
            await _yield(3)
            q.done(item)

    async with asyncio.timeout(10):
        async with asyncio.TaskGroup() as consumers_group:
            for i in range(consumers):
                consumers_group.create_task(consume(i))
            async with asyncio.TaskGroup() as producers_group:
                for i in range(producers):
                    producers_group.create_task(produce(i))
            await shut_down(q)
            q.add("added after shutdown!")

    handed_out = [item for items in processed for item in items]
    assert "added after shutdown!" not in handed_out
    assert set(handed_out) == set(range(producers))
    # Adds collapse: far fewer hand-outs than the 2500 adds.
    assert len(handed_out) < producers * adds_each
    assert len(q) == 0


@SHUTDOWNS
async def test_add_while_processing(shut_down: Callable[[Queue[Any]], Awaitable[None]]) -> None:
    q: Queue[int] = Queue()
    producers, consumers = 50, 10
    counts: dict[int, int] = {}

    async def consume() -> None:
        # Every worker re-adds each item it sees until it has seen it twice: the dirty-while-
        # processing path.
        seen: dict[int, int] = {}
        while True:
            try:
                item = await q.get()
            except ShutDown:
                return
            seen[item] = seen.get(item, 0) + 1
            counts[item] = counts.get(item, 0) + 1
            if seen[item] < 2:
                q.add(item)
            await _yield()
            q.done(item)

    async with asyncio.timeout(10):
        async with asyncio.TaskGroup() as group:
            for _ in range(consumers):
                group.create_task(consume())
            for i in range(producers):
                q.add(i)
            # Let the re-adds settle before shutting down (adds after shutdown are dropped).
            while len(q) or any(counts.get(i, 0) < 2 for i in range(producers)):
                await _yield()
            await shut_down(q)

    assert len(q) == 0
    assert set(counts) == set(range(producers))
    assert all(n >= 2 for n in counts.values())


def test_len() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    assert q.len() == 1
    q.add("bar")
    assert q.len() == 2
    q.add("foo")  # already queued: no growth
    assert q.len() == 2
    assert len(q) == q.len()


async def test_reinsert() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    item = await q.get()
    assert item == "foo"
    q.add(item)  # re-added while processing: only marked dirty
    assert len(q) == 0
    q.done(item)  # back on the queue
    assert len(q) == 1
    item = await q.get()
    assert item == "foo"
    q.done(item)
    assert len(q) == 0


async def test_collapse() -> None:
    q: Queue[str] = Queue()
    q.add("bar")
    q.add("bar")
    assert len(q) == 1
    item = await q.get()
    assert item == "bar"
    q.done(item)
    assert len(q) == 0


async def test_collapse_while_processing() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    first = await q.get()
    assert first == "foo"
    q.add("foo")
    q.add("foo")
    assert len(q) == 0

    # Another worker must be held back until the first one is done.
    other = asyncio.create_task(q.get())
    await _yield(5)
    assert not other.done()

    q.done("foo")
    async with asyncio.timeout(1):
        second = await other
    assert second == "foo"
    q.done(second)
    assert len(q) == 0


async def test_queue_drainage_using_shutdown_with_drain() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    q.add("bar")
    first = await q.get()
    second = await q.get()

    async with asyncio.timeout(1), asyncio.TaskGroup() as group:
        drain = group.create_task(q.shutdown_with_drain())
        await _yield()
        # Shut down and empty: get reports shutdown although two items are still processing.
        with pytest.raises(ShutDown):
            await q.get()
        assert not drain.done()
        q.done(first)
        await _yield(3)
        assert not drain.done(), "drain returned while an item was still processing"
        q.done(second)
    assert drain.done()


async def test_no_queue_drainage_using_shutdown() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    q.add("bar")
    await q.get()
    await q.get()
    q.shutdown()  # returns at once although nothing was marked done
    assert q.shutting_down()
    with pytest.raises(ShutDown):
        await q.get()


async def test_force_queue_shutdown_using_shutdown() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    q.add("bar")
    await q.get()
    await q.get()

    async with asyncio.timeout(1), asyncio.TaskGroup() as group:
        drain = group.create_task(q.shutdown_with_drain())
        with pytest.raises(ShutDown):
            await q.get()
        await _yield(3)
        assert not drain.done()
        # A second signal forces the shutdown although no item was marked done.
        q.shutdown()
    assert drain.done()


async def test_queue_drainage_using_shutdown_with_drain_with_dirty_item() -> None:
    q: Queue[str] = Queue()
    q.add("foo")
    gotten = await q.get()
    q.add("foo")  # dirty while processing

    async with asyncio.timeout(1), asyncio.TaskGroup() as group:
        group.create_task(q.shutdown_with_drain())
        with pytest.raises(ShutDown):
            await q.get()
        q.done(gotten)
        # done() put the dirty item back, so get hands it out again despite the shutdown.
        again = await q.get()
        assert again == "foo"
        q.done(again)
        with pytest.raises(ShutDown):
            await q.get()


async def test_get_after_shutdown_hands_out_queued_items() -> None:
    q: Queue[str] = Queue()
    for item in ("a", "b", "c"):
        q.add(item)
    q.shutdown()
    q.add("d")  # ignored
    got = []
    for _ in range(3):
        item = await q.get()
        got.append(item)
        q.done(item)
    assert got == ["a", "b", "c"]
    with pytest.raises(ShutDown):
        await q.get()


async def test_shutdown_wakes_every_waiting_getter() -> None:
    q: Queue[str] = Queue()
    getters = [asyncio.create_task(q.get()) for _ in range(5)]
    await _yield()
    assert not any(g.done() for g in getters)
    q.shutdown()
    results = await asyncio.gather(*getters, return_exceptions=True)
    assert all(isinstance(r, ShutDown) for r in results)


def test_shutdown_is_a_kcontrol_error() -> None:
    assert issubclass(ShutDown, KcontrolError)


async def test_items_are_handed_out_in_fifo_order() -> None:
    q: Queue[int] = Queue()
    for i in (3, 1, 2, 1, 3):
        q.add(i)
    got = [await q.get() for _ in range(3)]
    assert got == [3, 1, 2]


async def test_waiting_getter_is_woken_by_add() -> None:
    q: Queue[str] = Queue()
    getter = asyncio.create_task(q.get())
    await _yield()
    assert not getter.done()
    q.add("x")
    async with asyncio.timeout(1):
        assert await getter == "x"


async def test_cancelled_get_loses_no_item() -> None:
    q: Queue[str] = Queue()
    first = asyncio.create_task(q.get())
    second = asyncio.create_task(q.get())
    await _yield()
    q.add("x")  # wakes `first` ...
    first.cancel()  # ... which leaves before taking it
    async with asyncio.timeout(1):
        assert await second == "x"
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_done_of_an_item_not_processing_is_ignored() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    q.done("a")  # queued, not processing: must not queue a second copy
    q.done("never-added")
    assert len(q) == 1
    assert await q.get() == "a"
    q.done("a")
    assert len(q) == 0


async def test_shutdown_with_drain_returns_at_once_when_nothing_processes() -> None:
    q: Queue[str] = Queue()
    q.add("queued")
    async with asyncio.timeout(1):
        await q.shutdown_with_drain()
    assert q.shutting_down()
    assert await q.get() == "queued"


async def test_queue_drops_references_to_finished_items() -> None:
    class Big:
        pass

    for name in (None, "gc-test"):
        q: Queue[Big] = Queue(name=name, registry=None if name is None else CollectorRegistry())
        obj = Big()
        ref = weakref.ref(obj)
        q.add(obj)
        got = await q.get()
        q.done(got)
        del obj, got
        gc.collect()
        assert ref() is None, f"queue {name!r} kept a finished item alive"


def test_queue_is_truthy_even_when_empty() -> None:
    q: Queue[str] = Queue()
    assert len(q) == 0
    assert bool(q) is True


def test_repr_shows_state() -> None:
    q: Queue[str] = Queue(name="r", registry=CollectorRegistry())
    q.add("a")
    assert repr(q) == "<Queue name='r' queued=1 processing=0 shutting_down=False>"


async def test_is_dirty_tells_an_item_queued_again_while_it_is_processed() -> None:
    q: Queue[str] = Queue()
    assert not q.is_dirty("a")
    q.add("a")
    assert q.is_dirty("a"), "waiting to be handed out"
    assert await q.get() == "a"
    assert not q.is_dirty("a"), "handed out, not added since"
    q.add("a")
    assert q.is_dirty("a"), "added again while processed"
    q.done("a")
    assert q.is_dirty("a") and await q.get() == "a"
    q.done("a")
    assert not q.is_dirty("a")
