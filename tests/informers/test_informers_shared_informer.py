"""SharedIndexInformer: delivery to many handlers, replay, resync, isolation, transform."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from informers_fakes import (
    FakeWatch,
    RecordingHandler,
    ScriptedReader,
    advance,
    page,
    pod,
    running,
    settle,
    until,
)

from kcontrol.client import PODS, ListOptions, Object
from kcontrol.clock import FakeClock
from kcontrol.errors import Gone, InternalError
from kcontrol.informers import (
    DeletedFinalStateUnknown,
    ReflectorOptions,
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
    wait_for_cache_sync,
)


def informer_for(reader: ScriptedReader, clock: FakeClock, **kwargs: Any) -> SharedIndexInformer:
    return SharedIndexInformer(reader, PODS, clock=clock, **kwargs)


INITIAL = [
    ("add", "default/a", "1", True),
    ("add", "default/b", "1", True),
]


async def test_every_handler_gets_every_change_in_order() -> None:
    clock = FakeClock()
    watch = FakeWatch(
        [("ADDED", pod("c", 11)), ("MODIFIED", pod("a", 12)), ("DELETED", pod("b", 13))]
    )
    reader = ScriptedReader([page([pod("a"), pod("b")], 10)], [watch], clock=clock)
    informer = informer_for(reader, clock)
    first, second = RecordingHandler(), RecordingHandler()
    registrations = [informer.add_event_handler(first), informer.add_event_handler(second)]
    assert not informer.has_synced()

    async with running(informer.run()):
        await until(lambda: len(first.events) == 5 and len(second.events) == 5)
        assert informer.has_synced()
        assert all(r.has_synced() for r in registrations)
        assert informer.last_sync_resource_version == "13"

    expected = [
        *INITIAL,
        ("add", "default/c", "11", False),
        ("update", "default/a", "1", "12"),
        ("delete", "default/b", "13"),
    ]
    assert first.events == expected
    assert second.events == expected
    assert sorted(informer.indexer.list_keys()) == ["default/a", "default/c"]
    assert informer.is_stopped()


async def test_notifications_carry_the_cached_object_itself() -> None:
    clock = FakeClock()
    listed = pod("a")
    reader = ScriptedReader([page([listed], 10)], clock=clock)
    informer = informer_for(reader, clock)
    seen: list[Object] = []
    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=seen.append))
    async with running(informer.run()):
        await until(lambda: len(seen) == 1)
    assert seen[0] is listed
    assert informer.indexer.get_by_key("default/a") is listed


async def test_a_late_handler_first_gets_the_cache_replayed() -> None:
    clock = FakeClock()
    watch = FakeWatch()
    reader = ScriptedReader([page([pod("a"), pod("b")], 10)], [watch], clock=clock)
    informer = informer_for(reader, clock)
    async with running(informer.run()):
        assert await informer.wait_for_cache_sync()
        late = RecordingHandler()
        registration = informer.add_event_handler(late)
        assert not registration.has_synced(), "replay not delivered yet"
        watch.send("ADDED", pod("c", 11))
        await until(lambda: len(late.events) == 3)
        assert registration.has_synced()
    assert late.events == [*INITIAL, ("add", "default/c", "11", False)]


async def test_relist_sends_tombstones_for_vanished_objects_and_skips_unchanged() -> None:
    """Tombstones first, then the listed objects: client-go's RealFIFO.Replace (the only FIFO
    since InOrderInformers went GA in 1.36) and processReplacedAllInfo order them so. The
    legacy DeltaFIFO queued the listed objects first."""
    clock = FakeClock()
    expiring = FakeWatch()
    reader = ScriptedReader(
        [page([pod("a"), pod("b"), pod("c")], 10), page([pod("a", 20), pod("c")], 21)],
        [expiring, FakeWatch()],
        clock=clock,
    )
    informer = informer_for(reader, clock)
    handler = RecordingHandler()
    informer.add_event_handler(handler)
    async with running(informer.run()):
        await until(lambda: len(handler.events) == 3)
        expiring.fail(Gone("too old resource version"))
        await until(lambda: expiring.exited)
        await advance(clock, 2.0)  # the reflector's first backoff is under 1.6 s
        await until(lambda: len(handler.events) == 5)
        await settle()
    assert handler.events[3:] == [
        ("tombstone", "default/b", "1"),
        ("update", "default/a", "1", "20"),
    ], "c did not change (same resourceVersion): not announced"
    assert sorted(informer.indexer.list_keys()) == ["default/a", "default/c"]
    assert reader.list_rvs == ["0", "10"]


async def test_tombstone_holds_the_last_cached_state() -> None:
    clock = FakeClock()
    expiring = FakeWatch([("MODIFIED", pod("b", 15))])
    reader = ScriptedReader(
        [page([pod("b")], 10), page([], 21)], [expiring, FakeWatch()], clock=clock
    )
    informer = informer_for(reader, clock)
    tombstones: list[Any] = []
    informer.add_event_handler(ResourceEventHandlerFuncs(delete_func=tombstones.append))
    async with running(informer.run()):
        await until(lambda: informer.last_sync_resource_version == "15")
        expiring.fail(Gone("too old"))
        await until(lambda: expiring.exited)
        await advance(clock, 2.0)
        await until(lambda: len(tombstones) == 1)
    [tombstone] = tombstones
    assert isinstance(tombstone, DeletedFinalStateUnknown)
    assert tombstone.key == "default/b"
    assert tombstone.obj["metadata"]["resourceVersion"] == "15"


async def test_resync_goes_only_to_handlers_that_asked_for_it() -> None:
    clock = FakeClock()
    reader = ScriptedReader([page([pod("a"), pod("b")], 10)], clock=clock)
    informer = informer_for(reader, clock)
    resyncing, quiet = RecordingHandler(), RecordingHandler()
    informer.add_event_handler(resyncing, resync_period=10.0)
    informer.add_event_handler(quiet)
    async with running(informer.run()):
        await until(lambda: len(resyncing.events) == 2 and len(quiet.events) == 2)
        await advance(clock, 9.9)
        assert len(resyncing.events) == 2
        await advance(clock, 0.1)
        await until(lambda: len(resyncing.events) == 4)
        await advance(clock, 10.0)
        await until(lambda: len(resyncing.events) == 6)
        await settle()
    resyncs = resyncing.events[2:]
    assert sorted(resyncs) == sorted(
        [("update", "default/a", "1", "1"), ("update", "default/b", "1", "1")] * 2
    )
    assert quiet.events == INITIAL


async def test_informer_default_resync_and_minimum_period() -> None:
    clock = FakeClock()
    reader = ScriptedReader([page([pod("a")], 10)], clock=clock)
    informer = informer_for(reader, clock, resync_period=30.0)
    by_default, too_fast = RecordingHandler(), RecordingHandler()
    informer.add_event_handler(by_default)
    informer.add_event_handler(too_fast, resync_period=0.2)
    async with running(informer.run()):
        await until(lambda: len(too_fast.events) == 1)
        await advance(clock, 0.5)
        assert len(too_fast.events) == 1, "periods under 1 s are raised to 1 s"
        await advance(clock, 0.5)
        await until(lambda: len(too_fast.events) == 2)
        await advance(clock, 29.0)
        await until(lambda: len(by_default.events) == 2)
    assert by_default.events[1] == ("update", "default/a", "1", "1")


async def test_a_slow_handler_does_not_block_other_handlers_or_the_cache() -> None:
    clock = FakeClock()
    watch = FakeWatch([("ADDED", pod(f"w{i}", 100 + i)) for i in range(50)])
    reader = ScriptedReader([page([pod("a"), pod("b")], 10)], [watch], clock=clock)
    informer = informer_for(reader, clock)
    gate = asyncio.Event()
    slow_seen: list[str] = []

    async def slow_add(obj: Object) -> None:
        await gate.wait()
        slow_seen.append(obj["metadata"]["name"])

    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=slow_add))
    fast = RecordingHandler()
    informer.add_event_handler(fast)
    async with running(informer.run()):
        await until(lambda: len(fast.events) == 52)
        assert len(informer.indexer) == 52, "the watch kept feeding the cache"
        assert slow_seen == []
        gate.set()
        await until(lambda: len(slow_seen) == 52)
    assert slow_seen == ["a", "b"] + [f"w{i}" for i in range(50)], "still in order"


async def test_a_failing_handler_keeps_getting_notifications() -> None:
    clock = FakeClock()
    watch = FakeWatch([("ADDED", pod("c", 11))])
    reader = ScriptedReader([page([pod("a"), pod("b")], 10)], [watch], clock=clock)
    informer = informer_for(reader, clock)
    seen: list[str] = []

    def flaky(obj: Object) -> None:
        seen.append(obj["metadata"]["name"])
        if obj["metadata"]["name"] == "a":
            raise RuntimeError("handler bug")

    async def flaky_async(obj: Object) -> None:
        await asyncio.sleep(0)
        flaky(obj)

    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=flaky))
    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=flaky_async))
    async with running(informer.run()) as task:
        await until(lambda: len(seen) == 6)
        assert not task.done()
    assert sorted(seen) == ["a", "a", "b", "b", "c", "c"]


async def test_transform_runs_before_storing_and_before_handlers() -> None:
    clock = FakeClock()

    def fat(name: str, rv: int) -> Object:
        return pod(name, rv) | {"metadata": {**pod(name, rv)["metadata"], "managedFields": [{}]}}

    watch = FakeWatch([("MODIFIED", fat("a", 11))])
    reader = ScriptedReader([page([fat("a", 1)], 10)], [watch], clock=clock)
    calls: list[str] = []

    def strip(obj: Object) -> Object:
        calls.append(obj["metadata"]["resourceVersion"])
        obj["metadata"].pop("managedFields", None)
        return obj

    informer = informer_for(reader, clock, transform=strip)
    seen: list[Object] = []
    informer.add_event_handler(
        ResourceEventHandlerFuncs(
            add_func=seen.append,
            update_func=lambda old, new: seen.append(new),
            delete_func=seen.append,
        )
    )
    cached: list[Object | None] = []
    async with running(informer.run()):
        await until(lambda: len(seen) == 2)
        cached.append(informer.indexer.get_by_key("default/a"))
        watch.send("DELETED", fat("a", 12))
        await until(lambda: len(seen) == 3)
    assert calls == ["1", "11", "12"]
    assert all("managedFields" not in obj["metadata"] for obj in seen)
    assert cached[0] is not None and "managedFields" not in cached[0]["metadata"]


async def test_removed_handler_gets_nothing_more() -> None:
    clock = FakeClock()
    watch = FakeWatch()
    reader = ScriptedReader([page([pod("a")], 10)], [watch], clock=clock)
    informer = informer_for(reader, clock)
    kept, removed = RecordingHandler(), RecordingHandler()
    informer.add_event_handler(kept)
    registration = informer.add_event_handler(removed)
    async with running(informer.run()):
        await until(lambda: len(removed.events) == 1)
        informer.remove_event_handler(registration)
        informer.remove_event_handler(registration)  # idempotent
        watch.send("ADDED", pod("b", 11))
        await until(lambda: len(kept.events) == 2)
        await settle()
    assert removed.events == [("add", "default/a", "1", True)]


async def test_delete_of_an_unknown_object_is_not_announced() -> None:
    clock = FakeClock()
    watch = FakeWatch([("DELETED", pod("ghost", 11)), ("ADDED", pod("b", 12))])
    reader = ScriptedReader([page([], 10)], [watch], clock=clock)
    informer = informer_for(reader, clock)
    handler = RecordingHandler()
    informer.add_event_handler(handler)
    async with running(informer.run()):
        await until(lambda: len(handler.events) == 1)
        await settle()
    assert handler.events == [("add", "default/b", "12", False)]


async def test_wait_for_cache_sync_reports_false_if_stopped_first() -> None:
    clock = FakeClock()
    reader = ScriptedReader(clock=clock, list_func=lambda params: _raise(Gone("x")))
    informer = informer_for(reader, clock)
    async with asyncio.TaskGroup() as tg:
        waiter = tg.create_task(informer.wait_for_cache_sync())
        async with running(informer.run()):
            await until(lambda: len(reader.list_calls) >= 1)
            assert not waiter.done()
    assert waiter.result() is False


def _raise(error: Exception) -> Object:
    raise error


async def test_run_once_and_no_configuration_after_start() -> None:
    clock = FakeClock()
    reader = ScriptedReader([page([], 1)], clock=clock)
    informer = informer_for(reader, clock)
    async with running(informer.run()):
        await until(informer.has_synced)
        with pytest.raises(RuntimeError, match="already started"):
            await informer.run()
        with pytest.raises(RuntimeError, match="already started"):
            informer.set_transform(None)
        with pytest.raises(RuntimeError, match="already started"):
            informer.set_watch_error_handler(None)
    with pytest.raises(RuntimeError, match="has stopped"):
        informer.add_event_handler(RecordingHandler())


async def test_watch_error_handler_sees_failures() -> None:
    clock = FakeClock()
    errors: list[Exception] = []
    reader = ScriptedReader([InternalError("a"), page([], 1)], clock=clock)
    informer = informer_for(reader, clock)
    informer.set_watch_error_handler(errors.append)
    async with running(informer.run()):
        await until(lambda: len(errors) == 1)
        await advance(clock, 2.0)
        await until(informer.has_synced)
    assert [type(e) for e in errors] == [InternalError]


async def test_wait_for_cache_sync_helper_polls_has_synced_callables() -> None:
    clock = FakeClock()
    flags = [False, False]
    async with running(
        wait_for_cache_sync(lambda: flags[0], lambda: flags[1], clock=clock)
    ) as waiter:
        flags[0] = True
        await advance(clock, 0.1)
        assert not waiter.done()
        flags[1] = True
        await advance(clock, 0.1)
        assert waiter.done()


async def test_indexers_on_the_informer_cache() -> None:
    clock = FakeClock()
    reader = ScriptedReader(
        [page([pod("a", node="n1"), pod("b", node="n2"), pod("c", node="n1")], 10)],
        clock=clock,
    )
    informer = informer_for(
        reader, clock, indexers={"node": lambda obj: [obj["node"]] if "node" in obj else []}
    )
    async with running(informer.run()):
        await until(informer.has_synced)
        with pytest.raises(ValueError, match="conflict"):
            informer.add_indexers({"node": lambda obj: []})
        informer.add_indexers({"name": lambda obj: [obj["metadata"]["name"]]})
        by_node = informer.indexer.by_index("node", "n1")
        by_name = informer.indexer.by_index("name", "b")
    assert sorted(o["metadata"]["name"] for o in by_node) == ["a", "c"]
    assert [o["metadata"]["name"] for o in by_name] == ["b"]


async def test_a_large_relist_yields_to_the_event_loop() -> None:
    clock = FakeClock()
    reader = ScriptedReader([page([pod(f"p{i}") for i in range(2000)], 10)], clock=clock)
    informer = informer_for(reader, clock)
    seen_sizes: list[int] = []

    async def observer() -> None:
        while not informer.has_synced():
            seen_sizes.append(len(informer.indexer))
            await asyncio.sleep(0)

    async with asyncio.TaskGroup() as tg:
        tg.create_task(observer())
        async with running(informer.run()):
            await until(informer.has_synced)
    assert any(0 < size < 2000 for size in seen_sizes), "other tasks ran mid-replace"
    assert all(size % 500 == 0 for size in seen_sizes), "each object applied atomically"


async def test_a_watch_update_with_an_unchanged_resource_version_is_a_resync() -> None:
    """As client-go's sharedIndexInformer.OnUpdate: any update whose resourceVersion equals
    the cached one - from a watch as well as from a relist - is a sync and reaches only the
    handlers whose resync is under way."""
    clock = FakeClock()
    watch = FakeWatch()
    reader = ScriptedReader([page([pod("a", 5)], 10)], [watch], clock=clock)
    informer = informer_for(reader, clock)
    handler = RecordingHandler()
    informer.add_event_handler(handler)
    async with running(informer.run()):
        await until(lambda: len(handler.events) == 1)
        watch.send("MODIFIED", pod("a", 5))
        watch.send("MODIFIED", pod("a", 11))
        await until(lambda: len(handler.events) == 2)
        await settle()
    assert handler.events[1:] == [("update", "default/a", "5", "11")]


async def test_resync_timer_starts_when_the_first_list_is_in() -> None:
    """client-go runs the resync timer only while watching: it starts after each list.
    A LIST that is late (here it fails once and the reflector backs off 12 s) does not
    let a resync fire before the cache is filled, nor right after it."""
    clock = FakeClock()
    reader = ScriptedReader([InternalError("down"), page([pod("a"), pod("b")], 10)], clock=clock)
    backoff_12s = ReflectorOptions(backoff_initial=12.0, backoff_cap=12.0)
    informer = informer_for(reader, clock, reflector_options=backoff_12s)
    handler = RecordingHandler()
    informer.add_event_handler(handler, resync_period=10.0)
    async with running(informer.run()):
        await until(lambda: len(reader.list_calls) == 1)
        await advance(clock, 10.0)  # a resync period has passed, but nothing is listed yet
        await advance(clock, 2.0)
        await until(lambda: len(handler.events) == 2)
        synced_at = clock.now()
        await advance(clock, 9.9)
        assert handler.events == INITIAL, "no resync within a period of the list"
        await advance(clock, 0.1)
        await until(lambda: len(handler.events) == 4)
    assert clock.now() - synced_at == pytest.approx(10.0)
    assert sorted(handler.events[2:]) == [
        ("update", "default/a", "1", "1"),
        ("update", "default/b", "1", "1"),
    ]


async def test_no_resync_while_relisting() -> None:
    clock = FakeClock()
    expiring = FakeWatch()
    reader = GatedListReader(
        [page([pod("a"), pod("b")], 10), page([pod("a"), pod("b", 20)], 21)],
        [expiring, FakeWatch()],
        clock=clock,
    )
    informer = informer_for(reader, clock)
    handler = RecordingHandler()
    informer.add_event_handler(handler, resync_period=10.0)
    async with running(informer.run()):
        await until(lambda: len(handler.events) == 2)
        await advance(clock, 5.0)
        reader.gate.clear()  # the relist's LIST will hang until the test lets it through
        expiring.fail(Gone("too old"))
        await until(lambda: expiring.exited)
        await advance(clock, 2.0)  # past the backoff: the LIST is sent and hangs
        await until(lambda: len(reader.list_calls) == 2)
        await advance(clock, 5.0)  # a resync would be due now (t = 12 s)
        assert handler.events == INITIAL, "no resync while the reflector lists"
        reader.gate.set()
        await until(lambda: len(handler.events) == 3)
        relisted_at = clock.now()
        assert handler.events[2] == ("update", "default/b", "1", "20")
        await advance(clock, 9.9)
        assert len(handler.events) == 3, "the resync period restarts with the new watch"
        await advance(clock, 0.1)
        await until(lambda: len(handler.events) == 5)
    assert clock.now() - relisted_at == pytest.approx(10.0)


async def test_an_async_handler_raising_cancelled_error_keeps_getting_notifications() -> None:
    """A handler's own CancelledError (it awaited something that was cancelled) is a
    handler failure like any other: logged, and the next notification is delivered."""
    clock = FakeClock()
    watch = FakeWatch()
    reader = ScriptedReader([page([pod("a"), pod("b")], 10)], [watch], clock=clock)
    informer = informer_for(reader, clock)
    seen: list[str] = []

    async def on_add(obj: Object) -> None:
        seen.append(obj["metadata"]["name"])
        if obj["metadata"]["name"] == "a":
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            future.cancel()
            await future  # raises CancelledError inside the handler

    registration = informer.add_event_handler(ResourceEventHandlerFuncs(add_func=on_add))
    async with running(informer.run()) as task:
        await until(lambda: len(seen) == 2)
        await until(registration.has_synced)
        watch.send("ADDED", pod("c", 11))
        await until(lambda: len(seen) == 3)
        assert not task.done()
    assert seen == ["a", "b", "c"]


async def test_cancelling_the_informer_still_stops_a_handler_mid_call() -> None:
    clock = FakeClock()
    reader = ScriptedReader([page([pod("a")], 10)], clock=clock)
    informer = informer_for(reader, clock)
    entered = asyncio.Event()
    finished: list[str] = []

    async def on_add(obj: Object) -> None:
        entered.set()
        try:
            await asyncio.Event().wait()
        finally:
            finished.append("cancelled")

    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=on_add))
    async with running(informer.run()) as task:
        await entered.wait()
    assert task.cancelled()
    assert finished == ["cancelled"]


class GatedListReader(ScriptedReader):
    """A ScriptedReader whose LISTs wait while ``gate`` is clear."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gate = asyncio.Event()
        self.gate.set()

    async def list(self, resource: Any, **params: Any) -> Object:
        if not self.gate.is_set():
            self.list_calls.append(params)
            await self.gate.wait()
            self.list_calls.pop()
        return await super().list(resource, **params)


def test_list_options_are_checked_when_the_informer_is_made() -> None:
    with pytest.raises(ValueError, match="select"):
        informer_for(ScriptedReader(), FakeClock(), list_options=ListOptions(limit=5))
