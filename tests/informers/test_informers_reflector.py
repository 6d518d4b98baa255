"""Reflector: list/watch resourceVersion rules, paging, error handling, backoff, watchdog.

Mirrors client-go's reflector_test.go scenarios (FullListIfExpired, ExpiredExactResourceVersion,
ResyncWithResourceVersion, FullListIfTooLarge, NoRelistOnTooManyRequests, backoff) against a
scripted Reader and a FakeClock.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import random
from collections.abc import Iterator
from typing import Any

import pytest
from informers_fakes import (
    FakeWatch,
    FixedBackoff,
    RecordingStore,
    ScriptedReader,
    advance,
    bookmark,
    page,
    pod,
    running,
    settle,
    until,
)

from kcontrol.client import PODS, ListOptions, Object
from kcontrol.clock import FakeClock
from kcontrol.errors import (
    ApiConnectionError,
    BadRequest,
    Forbidden,
    Gone,
    InternalError,
    ServerTimeout,
    TooManyRequests,
)
from kcontrol.informers import (
    ExponentialBackoff,
    Reflector,
    ReflectorOptions,
    set_gc_freeze_after_sync,
)


def make(
    reader: ScriptedReader,
    clock: FakeClock,
    *,
    backoff: Any = None,
    errors: list[Exception] | None = None,
    **options: Any,
) -> tuple[Reflector, RecordingStore]:
    store = RecordingStore()
    reflector = Reflector(
        reader,
        PODS,
        store,
        clock=clock,
        backoff=backoff or FixedBackoff(1.0),
        options=ReflectorOptions(**options),
        watch_error_handler=None if errors is None else errors.append,
    )
    return reflector, store


def pods(n: int, start: int = 0) -> list[Object]:
    return [pod(f"pod-{i}", i) for i in range(start, start + n)]


# -- happy path --------------------------------------------------------------------------------


async def test_lists_at_rv0_then_watches_from_the_list_rv() -> None:
    clock = FakeClock()
    watch = FakeWatch([("ADDED", pod("c", 11)), ("MODIFIED", pod("a", 12))])
    watch.send("DELETED", pod("b", 13))
    reader = ScriptedReader([page([pod("a", 5), pod("b", 6)], 10)], [watch], clock=clock)
    reflector, store = make(reader, clock)

    async with running(reflector.run()):
        await until(lambda: reflector.last_sync_resource_version == "13")

    [first] = reader.list_calls
    assert (first["resource_version"], first["limit"], first["continue_"]) == ("0", 500, None)
    assert watch.params["resource_version"] == "10"
    assert watch.params["allow_watch_bookmarks"] is True
    assert 300 <= watch.params["timeout_seconds"] < 600
    assert store.ops == [
        ("replace", ["default/a", "default/b"], "10"),
        ("add", "default/c", "11"),
        ("update", "default/a", "12"),
        ("delete", "default/b", "13"),
    ]
    assert sorted(store.store.list_keys()) == ["default/a", "default/c"]
    assert watch.exited, "cancelling the reflector closes its watch"


async def test_every_request_carries_the_selectors() -> None:
    clock = FakeClock()
    reader = ScriptedReader(
        [page([pod("a", 5)], 10, continue_="c1"), page([], 10)],
        [FakeWatch([("BOOKMARK", bookmark(11))], close=True)],
        clock=clock,
    )
    selection = ListOptions(label_selector="app=web", field_selector="spec.nodeName=n1")
    reflector = Reflector(
        reader, PODS, RecordingStore(), namespace="team", list_options=selection, clock=clock
    )
    async with running(reflector.run()):
        await until(lambda: len(reader.watch_calls) >= 2)
    for call in [*reader.list_calls, *reader.watch_calls]:
        assert (call["namespace"], call["label_selector"], call["field_selector"]) == (
            "team",
            "app=web",
            "spec.nodeName=n1",
        )
    assert [c["continue_"] for c in reader.list_calls] == [None, "c1"]


@pytest.mark.parametrize(
    "options",
    [
        ListOptions(resource_version="5"),
        ListOptions(label_selector="a=b", limit=10),
        ListOptions(timeout_seconds=30),
        ListOptions(allow_watch_bookmarks=False),
        ListOptions(send_initial_events=True),
    ],
)
def test_list_options_hold_only_the_selectors(options: ListOptions) -> None:
    with pytest.raises(ValueError, match="select the collection"):
        Reflector(ScriptedReader(), PODS, RecordingStore(), list_options=options)


async def test_watch_timeouts_are_spread_over_min_to_twice_min() -> None:
    clock = FakeClock()
    reader = ScriptedReader(
        [page([], 1)],
        [FakeWatch([("BOOKMARK", bookmark(i))], close=True) for i in range(2, 40)],
        clock=clock,
    )
    reflector, _ = make(reader, clock, min_watch_timeout=300)
    async with running(reflector.run()):
        await until(lambda: len(reader.watch_calls) >= 39)
    timeouts = [call["timeout_seconds"] for call in reader.watch_calls]
    assert all(300 <= t < 600 for t in timeouts)
    assert len(set(timeouts)) > 5, "timeouts are randomised"


async def test_list_items_get_kind_and_api_version() -> None:
    clock = FakeClock()
    reader = ScriptedReader([page([pod("a", 1)], 1)], clock=clock)
    reflector, store = make(reader, clock)
    async with running(reflector.run()):
        await until(lambda: len(store.store) == 1)
    obj = store.store.get_by_key("default/a")
    assert obj is not None
    assert (obj["kind"], obj["apiVersion"]) == ("Pod", "v1")


async def test_bookmarks_only_advance_the_resource_version() -> None:
    clock = FakeClock()
    first = FakeWatch([("BOOKMARK", bookmark(20))], close=True)
    second = FakeWatch()
    reader = ScriptedReader([page([pod("a", 5)], 10)], [first, second], clock=clock)
    reflector, store = make(reader, clock)

    async with running(reflector.run()):
        await until(lambda: second.opened)
        assert reflector.last_sync_resource_version == "20"

    assert store.ops == [("replace", ["default/a"], "10")], "a bookmark touches no object"
    assert reader.watch_rvs == ["10", "20"], "the next watch resumes from the bookmark"
    assert len(reader.list_calls) == 1


async def test_watch_closed_by_server_after_events_rewatches_at_once() -> None:
    clock = FakeClock()
    first = FakeWatch([("ADDED", pod("a", 11))], close=True)
    reader = ScriptedReader([page([], 10)], [first], clock=clock)
    reflector, _ = make(reader, clock, backoff=(backoff := FixedBackoff()))
    async with running(reflector.run()):
        await until(lambda: len(reader.watch_calls) == 2)
    assert reader.watch_rvs == ["10", "11"]
    assert backoff.calls == 0
    assert len(reader.list_calls) == 1


# -- relists: resourceVersion rules -----------------------------------------------------------


async def test_relist_after_watch_expiry_uses_last_synced_rv() -> None:
    """ResyncWithResourceVersion: a relist never travels back in time."""
    clock = FakeClock()
    expiring = FakeWatch([("ADDED", pod("x", 12))])
    expiring.fail(Gone("too old resource version"))
    reader = ScriptedReader(
        [page(pods(4), 10), page(pods(8), 20)], [expiring, FakeWatch()], clock=clock
    )
    reflector, store = make(reader, clock)
    async with running(reflector.run()):
        await until(lambda: expiring.exited)
        await advance(clock, 1.0)  # the backoff before relisting
        await until(lambda: len(store.replaces) == 2)
    assert reader.list_rvs == ["0", "12"]
    assert len(store.store) == 8


async def test_consistent_first_list_reads_at_empty_rv_then_relists_from_the_last() -> None:
    """consistent_first_list: the first list is a consistent read (a sharded replica's
    informers, started while a controller is at work, must not miss a completed write);
    later lists still never travel back in time."""
    clock = FakeClock()
    expiring = FakeWatch([("ADDED", pod("x", 12))])
    expiring.fail(Gone("too old resource version"))
    reader = ScriptedReader(
        [page(pods(4), 10), page(pods(8), 20)], [expiring, FakeWatch()], clock=clock
    )
    reflector, store = make(reader, clock, consistent_first_list=True)
    async with running(reflector.run()):
        await until(lambda: expiring.exited)
        await advance(clock, 1.0)
        await until(lambda: len(store.replaces) == 2)
    assert reader.list_rvs == ["", "12"]
    assert reader.list_calls[0]["limit"] == 500, "a consistent list is paged, as client-go's"


async def test_expired_exact_resource_version_relists_with_empty_rv() -> None:
    """ExpiredExactResourceVersion: a LIST refused at an RV is retried at once with ""."""
    clock = FakeClock()
    expiring = FakeWatch()
    expiring.fail(Gone("too old"))
    reader = ScriptedReader(
        [page(pods(4), 10), Gone("expired"), page(pods(8), 11)],
        [expiring, (after := FakeWatch())],
        clock=clock,
    )
    reflector, store = make(reader, clock)
    async with running(reflector.run()):
        await until(lambda: expiring.exited)
        await advance(clock, 1.0)
        await until(lambda: after.opened)
    assert reader.list_rvs == ["0", "10", ""]
    assert len(store.store) == 8
    assert after.params["resource_version"] == "11"
    assert reflector.last_sync_resource_version == "11"


async def test_full_list_if_continuation_expired() -> None:
    """FullListIfExpired: a continue token that expires makes the pager list in one piece."""
    clock = FakeClock()
    eight = pods(8)

    def answer(params: dict[str, Any]) -> Object:
        rv, cont, limit = (params.get(k) for k in ("resource_version", "continue_", "limit"))
        if (rv, cont, limit) == ("0", None, 4):
            return page(eight[:4], 10)
        if (rv, cont, limit) == ("10", None, 4):
            return page(eight[:4], 11, continue_="C1")
        if (rv, cont, limit) == (None, "C1", 4):
            raise Gone("continue token expired")
        if (rv, cont, limit) == ("10", None, None):
            return page(eight, 11)
        raise AssertionError(f"unexpected list {params}")

    expiring = FakeWatch()
    expiring.fail(Gone("too old"))
    reader = ScriptedReader(watches=[expiring], clock=clock, list_func=answer)
    reflector, store = make(reader, clock, page_size=4)
    async with running(reflector.run()):
        await until(lambda: len(store.replaces) == 1)
        assert len(store.store) == 4
        await until(lambda: expiring.exited)
        await advance(clock, 1.0)
        await until(lambda: len(store.replaces) == 2)
    assert reader.list_rvs == ["0", "10", None, "10"]
    assert len(store.store) == 8


async def test_too_large_resource_version_relists_with_empty_rv() -> None:
    """FullListIfTooLarge: the server's cache is behind our RV; list from etcd instead."""
    clock = FakeClock()
    too_large = ServerTimeout(
        "Too large resource version",
        details={"causes": [{"reason": "ResourceVersionTooLarge"}]},
    )
    expiring = FakeWatch()
    expiring.fail(Gone("too old"))
    reader = ScriptedReader(
        [page([], 20), too_large, page([], 30)], [expiring, FakeWatch()], clock=clock
    )
    reflector, store = make(reader, clock)
    async with running(reflector.run()):
        await until(lambda: expiring.exited)
        await advance(clock, 1.0)
        await until(lambda: len(store.replaces) == 2)
    assert reader.list_rvs == ["0", "20", ""]


async def test_paginated_initial_list_collects_every_page() -> None:
    clock = FakeClock()
    everything = pods(1200)
    reader = ScriptedReader(
        [
            page(everything[:500], 10, continue_="c1"),
            page(everything[500:1000], 10, continue_="c2"),
            page(everything[1000:], 10),
        ],
        clock=clock,
    )
    reflector, store = make(reader, clock)
    async with running(reflector.run()):
        await until(lambda: len(store.replaces) == 1)
    calls = [(c["resource_version"], c["continue_"], c["limit"]) for c in reader.list_calls]
    assert calls == [("0", None, 500), (None, "c1", 500), (None, "c2", 500)]
    assert len(store.store) == 1200
    assert store.store.get_by_key("default/pod-0") is everything[0], "objects are not copied"


async def test_pinned_relist_is_not_paged_unless_the_rv0_list_was() -> None:
    async def relist_limit(first_page_continue: str | None) -> int | None:
        clock = FakeClock()
        expiring = FakeWatch()
        expiring.fail(Gone("too old"))
        first = [page(pods(2), 10, continue_=first_page_continue)]
        if first_page_continue:
            first.append(page(pods(2, 2), 10))
        reader = ScriptedReader([*first, page(pods(4), 11)], [expiring], clock=clock)
        reflector, store = make(reader, clock)
        async with running(reflector.run()):
            await until(lambda: expiring.exited)
            await advance(clock, 1.0)
            await until(lambda: len(store.replaces) == 2)
        assert reader.list_rvs[-1] == "10"
        limit: int | None = reader.list_calls[-1]["limit"]
        return limit

    assert await relist_limit(None) is None, "served from the watch cache in one piece"
    assert await relist_limit("c1") == 500, "no watch cache: keep paging"


# -- errors that must not relist ---------------------------------------------------------------


async def test_no_relist_on_too_many_requests_and_retry_after_is_honoured() -> None:
    clock = FakeClock()
    throttled = TooManyRequests("storage is (re)initializing", retry_after=5)
    reader = ScriptedReader([page([], 10)], [throttled, (after := FakeWatch())], clock=clock)
    reflector, _ = make(reader, clock, backoff=FixedBackoff(1.0))
    async with running(reflector.run()):
        await until(lambda: len(reader.watch_calls) == 1)
        start = reader.watch_calls[0]["at"]
        await advance(clock, 4.9)
        assert len(reader.watch_calls) == 1, "Retry-After (5 s) beats the 1 s backoff"
        await advance(clock, 0.1)
        await until(lambda: after.opened)
    assert reader.watch_calls[1]["at"] - start >= 5.0
    assert reader.watch_rvs == ["10", "10"]
    assert len(reader.list_calls) == 1, "429 never forces a relist"


async def test_too_many_requests_mid_stream_backs_off_without_relist() -> None:
    clock = FakeClock()
    first = FakeWatch([("ADDED", pod("a", 11))])
    first.fail(TooManyRequests("slow down"))
    reader = ScriptedReader([page([], 10)], [first, (after := FakeWatch())], clock=clock)
    reflector, _ = make(reader, clock, backoff=(backoff := FixedBackoff(2.0)))
    async with running(reflector.run()):
        await until(lambda: first.exited)
        await advance(clock, 1.9)
        assert not after.opened
        await advance(clock, 0.1)
        await until(lambda: after.opened)
    assert backoff.calls == 1
    assert reader.watch_rvs == ["10", "11"]
    assert len(reader.list_calls) == 1


async def test_storage_initializing_429_on_list_backs_off_and_retries() -> None:
    clock = FakeClock()
    errors: list[Exception] = []
    reader = ScriptedReader(
        [TooManyRequests("storage is (re)initializing", retry_after=3), page([pod("a")], 10)],
        clock=clock,
    )
    reflector, store = make(reader, clock, errors=errors)
    async with running(reflector.run()):
        await until(lambda: len(reader.list_calls) == 1)
        await advance(clock, 2.9)
        assert len(reader.list_calls) == 1
        await advance(clock, 0.1)
        await until(lambda: len(store.replaces) == 1)
    assert reader.list_rvs == ["0", "0"]
    assert [type(e) for e in errors] == [TooManyRequests]


async def test_connection_errors_back_off_and_rewatch_from_last_rv() -> None:
    clock = FakeClock()
    broken = FakeWatch([("ADDED", pod("a", 11))])
    broken.fail(ApiConnectionError("connection reset"))
    reader = ScriptedReader(
        [page([], 10)],
        [ApiConnectionError("connection refused"), broken, (healthy := FakeWatch())],
        clock=clock,
    )
    reflector, _ = make(reader, clock, backoff=(backoff := FixedBackoff(1.0)))
    async with running(reflector.run()):
        await until(lambda: len(reader.watch_calls) == 1)
        await advance(clock, 1.0)
        await until(lambda: broken.exited)
        assert not healthy.opened, "backs off before re-watching"
        await advance(clock, 1.0)
        await until(lambda: healthy.opened)
    assert reader.watch_rvs == ["10", "10", "11"]
    assert backoff.calls == 2
    assert len(reader.list_calls) == 1


async def test_very_short_watch_relists_after_backoff() -> None:
    """client-go: a watch closed within a second without a single event is a
    ``VeryShortWatchError``; ``watch()`` returns, ListAndWatch ends, and the next cycle
    lists again after the backoff."""
    clock = FakeClock()
    reader = ScriptedReader(
        [page([pod("a", 5)], 10), page([pod("a", 5), pod("b", 12)], 12)],
        [FakeWatch(close=True), (after := FakeWatch())],
        clock=clock,
    )
    reflector, store = make(reader, clock, backoff=(backoff := FixedBackoff(1.0)))
    async with running(reflector.run()):
        await until(lambda: backoff.calls == 1)
        await settle()
        assert len(reader.list_calls) == 1, "no hot loop: the backoff comes first"
        assert len(reader.watch_calls) == 1
        await advance(clock, 1.0)
        await until(lambda: after.opened)
    assert reader.list_rvs == ["0", "10"], "relisted from the last synced version"
    assert reader.watch_rvs == ["10", "12"]
    assert [op[0] for op in store.ops] == ["replace", "replace"]


async def test_inactivity_watchdog_restarts_a_silent_watch() -> None:
    clock = FakeClock()
    silent = FakeWatch()
    reader = ScriptedReader([page([], 10)], [silent, (fresh := FakeWatch())], clock=clock)
    reflector, _ = make(reader, clock, watch_inactivity_timeout=70.0)
    async with running(reflector.run()):
        await until(lambda: silent.opened)
        await advance(clock, 69.0)
        assert not silent.exited
        silent.send("BOOKMARK", bookmark(15))  # activity pushes the deadline out
        await settle()
        await advance(clock, 69.0)
        assert not silent.exited, "kicked 69 s ago"
        await advance(clock, 1.5)
        await until(lambda: fresh.opened)
        assert silent.exited, "the dead watch was abandoned"
    assert reader.watch_rvs == ["10", "15"], "resumes from the last RV"
    assert len(reader.list_calls) == 1, "no relist"


async def test_inactivity_watchdog_also_covers_opening_the_watch() -> None:
    class HangingOpen(ScriptedReader):
        def watch(self, resource: Any, **params: Any) -> Any:
            if not self.watch_calls:
                self.watch_calls.append(params)
                return _HangOnEnter()
            return super().watch(resource, **params)

    clock = FakeClock()
    reader = HangingOpen([page([], 10)], clock=clock)
    reflector, _ = make(reader, clock, watch_inactivity_timeout=30.0)
    async with running(reflector.run()):
        await until(lambda: len(reader.watch_calls) == 1)
        await advance(clock, 30.0)
        await until(lambda: len(reader.watch_calls) == 2)


class _HangOnEnter:
    async def __aenter__(self) -> Any:
        await asyncio.Event().wait()

    async def __aexit__(self, *exc: object) -> None:
        return None


# -- everything else: back off, then relist ----------------------------------------------------


async def test_other_watch_errors_relist_after_backoff() -> None:
    """Internal errors included: client-go retries them only within
    ``MaxInternalErrorRetryDuration``, which is 0 unless set (only the apiserver's own watch
    cache sets it); so by default a 500 in the stream means a relist after the backoff."""
    clock = FakeClock()
    errors: list[Exception] = []
    failing = FakeWatch([("ADDED", pod("a", 11))])
    failing.fail(InternalError("etcd leader changed"))
    reader = ScriptedReader(
        [page([], 10), page([pod("a", 11)], 12)], [failing, FakeWatch()], clock=clock
    )
    reflector, store = make(reader, clock, errors=errors)
    async with running(reflector.run()):
        await until(lambda: failing.exited)
        await advance(clock, 1.0)
        await until(lambda: len(store.replaces) == 2)
    assert reader.list_rvs == ["0", "11"]
    assert [type(e) for e in errors] == [InternalError]


def internal_error_event() -> tuple[str, Object]:
    status = {"kind": "Status", "code": 500, "reason": "InternalError", "message": "no leader"}
    return ("ERROR", status)


async def test_internal_errors_in_the_stream_rewatch_within_the_retry_window() -> None:
    """``max_internal_error_retry_duration`` (client-go's MaxInternalErrorRetryDuration):
    an in-stream internal error re-watches at once from the last version, without relisting
    or backing off, while the errors come within that window of the first one; past it, the
    reflector relists after the backoff, as it does by default."""
    clock = FakeClock()
    errors: list[Exception] = []
    reader = ScriptedReader([page([], 10), page([pod("a", 11)], 12)], clock=clock)
    reflector, store = make(
        reader,
        clock,
        backoff=(backoff := FixedBackoff(1.0)),
        errors=errors,
        max_internal_error_retry_duration=30.0,
    )
    async with running(reflector.run()):
        await until(lambda: len(reader.opened) == 1)
        reader.opened[0].send("ADDED", pod("a", 11))
        reader.opened[0].send(*internal_error_event())
        await until(lambda: len(reader.opened) == 2)
        assert reader.watch_rvs == ["10", "11"], "re-watched from the last version"
        assert (backoff.calls, len(reader.list_calls)) == (0, 1), "no backoff, no relist"

        await advance(clock, 20.0)
        reader.opened[1].send(*internal_error_event())  # 20 s after the first: retried
        await until(lambda: len(reader.opened) == 3)
        assert (backoff.calls, len(reader.list_calls)) == (0, 1)

        await advance(clock, 15.0)
        reader.opened[2].send(*internal_error_event())  # 35 s after the first: relist
        await until(lambda: reader.opened[2].exited)
        await settle()
        assert (backoff.calls, len(reader.list_calls)) == (1, 1), "backoff before the relist"
        await advance(clock, 1.0)
        await until(lambda: len(store.replaces) == 2)
    assert reader.list_rvs == ["0", "11"]
    assert reader.watch_rvs == ["10", "11", "11", "12"]
    assert [type(e) for e in errors] == [InternalError] * 3


async def test_internal_error_retry_window_restarts_after_a_quiet_minute() -> None:
    clock = FakeClock()
    reader = ScriptedReader([page([], 10)], clock=clock)
    reflector, _ = make(reader, clock, max_internal_error_retry_duration=5.0)
    async with running(reflector.run()):
        await until(lambda: len(reader.opened) == 1)
        reader.opened[0].send(*internal_error_event())
        await until(lambda: len(reader.opened) == 2)
        await advance(clock, 61.0)  # a minute without internal errors: a new window
        reader.opened[1].send(*internal_error_event())
        await until(lambda: len(reader.opened) == 3)
    assert len(reader.list_calls) == 1


async def test_unexpected_exceptions_never_kill_the_loop() -> None:
    clock = FakeClock()
    reader = ScriptedReader(
        [RuntimeError("bug"), Forbidden("nope"), page([pod("a")], 10)], clock=clock
    )
    reflector, store = make(reader, clock)
    async with running(reflector.run()) as task:
        await until(lambda: len(reader.list_calls) == 1)
        await advance(clock, 1.0)
        await until(lambda: len(reader.list_calls) == 2)
        await advance(clock, 1.0)
        await until(lambda: len(store.replaces) == 1)
        assert not task.done()


async def test_backoff_is_exponential_and_capped() -> None:
    class NoJitter(random.Random):
        def random(self) -> float:
            return 0.0

    clock = FakeClock()
    reader = ScriptedReader(clock=clock, list_func=_always_fail)
    backoff = ExponentialBackoff(clock, rng=NoJitter())
    reflector, _ = make(reader, clock, backoff=backoff)
    async with running(reflector.run()):
        for n in range(1, 10):
            await until(_calls_reach(reader, n))
            deadline = clock.next_deadline()
            assert deadline is not None
            clock.set_time(deadline)
        await until(lambda: len(reader.list_calls) == 10)
    times = [call["at"] for call in reader.list_calls]
    gaps = [round(b - a, 6) for a, b in itertools.pairwise(times)]
    assert gaps == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0, 30.0]


def _calls_reach(reader: ScriptedReader, n: int) -> Any:
    return lambda: len(reader.list_calls) == n


def _always_fail(params: dict[str, Any]) -> Object:
    raise InternalError("down")


# -- streaming list ------------------------------------------------------------------------------


async def test_streaming_list_replaces_at_the_end_bookmark_and_keeps_watching() -> None:
    clock = FakeClock()
    stream = FakeWatch(
        [
            ("ADDED", pod("a", 5)),
            ("ADDED", pod("b", 6)),
            ("BOOKMARK", bookmark(15, initial_events_end=True)),
            ("MODIFIED", pod("a", 16)),
        ]
    )
    reader = ScriptedReader(watches=[stream], clock=clock)
    reflector, store = make(reader, clock, use_watch_list=True)
    async with running(reflector.run()):
        await until(lambda: reflector.last_sync_resource_version == "16")
    assert reader.list_calls == []
    assert stream.params["send_initial_events"] is True
    assert stream.params["resource_version_match"] == "NotOlderThan"
    assert stream.params["resource_version"] == ""
    assert store.ops == [
        ("replace", ["default/a", "default/b"], "15"),
        ("update", "default/a", "16"),
    ]


async def test_streaming_list_falls_back_to_list_on_error() -> None:
    clock = FakeClock()
    errors: list[Exception] = []
    unfinished = FakeWatch([("ADDED", pod("a", 5))], close=True)  # no end bookmark
    reader = ScriptedReader(
        [page([pod("a", 5)], 10), page([pod("a", 5)], 10)],
        [BadRequest("sendInitialEvents not supported"), FakeWatch(), unfinished, FakeWatch()],
        clock=clock,
    )
    reflector, store = make(reader, clock, use_watch_list=True, errors=errors)
    async with running(reflector.run()):
        await until(lambda: len(reader.watch_calls) == 2)
        assert reader.list_rvs == ["0"]
        assert reader.watch_calls[1].get("send_initial_events") is None, "plain watch now"
        # The next cycle tries streaming again; a stream that ends early falls back too.
        reader.opened[0].fail(Gone("too old"))
        await until(lambda: reader.opened[0].exited)
        await advance(clock, 1.0)
        await until(lambda: len(reader.watch_calls) == 4)
    assert reader.list_rvs == ["0", "10"]
    assert [type(e).__name__ for e in errors] == [
        "BadRequest",
        "Gone",
        "_InitialEventsIncompleteError",
    ]
    assert [op[0] for op in store.ops] == ["replace", "replace"]


async def test_an_error_event_in_the_stream_is_treated_like_the_mapped_error() -> None:
    clock = FakeClock()
    expiring = FakeWatch([("ERROR", {"kind": "Status", "code": 410, "reason": "Expired"})])
    reader = ScriptedReader(
        [page([], 10), page([], 11)], [expiring, (after := FakeWatch())], clock=clock
    )
    reflector, store = make(reader, clock)
    async with running(reflector.run()):
        await until(lambda: expiring.exited)
        await advance(clock, 1.0)
        await until(lambda: after.opened)
    assert reader.list_rvs == ["0", "10"], "410 in the stream: relist"
    assert len(store.replaces) == 2


# -- transform and GC pause ----------------------------------------------------------------------


class CountingTransform:
    """Marks each object it sees and counts calls per resourceVersion."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.calls: list[str] = []
        self.fail_on = fail_on

    def __call__(self, obj: Object) -> Object:
        rv = obj["metadata"]["resourceVersion"]
        self.calls.append(rv)
        if rv == self.fail_on:
            raise ValueError("cannot transform this one")
        obj["metadata"]["transformed"] = obj["metadata"].get("transformed", 0) + 1
        return obj


class GcWatchingStore(RecordingStore):
    """Records whether the cyclic GC was enabled while each replace ran."""

    def __init__(self) -> None:
        super().__init__()
        self.gc_enabled_in_replace: list[bool] = []

    async def replace(self, items: list[Object], resource_version: str) -> None:
        self.gc_enabled_in_replace.append(gc.isenabled())
        await super().replace(items, resource_version)


def transformed_counts(store: RecordingStore) -> dict[str, int]:
    return {o["metadata"]["name"]: o["metadata"]["transformed"] for o in store.store.list()}


async def test_transform_applies_once_to_list_items_and_watch_events() -> None:
    clock = FakeClock()
    watch = FakeWatch([("ADDED", pod("c", 11)), ("MODIFIED", pod("a", 12))])
    reader = ScriptedReader([page([pod("a", 5), pod("b", 6)], 10)], [watch], clock=clock)
    transform = CountingTransform()
    store = GcWatchingStore()
    options = ReflectorOptions(intern_strings=False)
    reflector = Reflector(reader, PODS, store, clock=clock, transform=transform, options=options)
    async with running(reflector.run()):
        await until(lambda: reflector.last_sync_resource_version == "12")
    assert transform.calls == ["5", "6", "11", "12"]
    assert transformed_counts(store) == {"a": 1, "b": 1, "c": 1}
    assert store.gc_enabled_in_replace == [False], "the GC is paused from LIST to replace"
    assert gc.isenabled(), "and back on afterwards"


def _fresh(text: str) -> str:
    """An equal string that is not the same object (as a JSON decoder would create)."""
    return "".join(list(text))


async def test_string_values_are_interned_after_the_transform_by_default() -> None:
    clock = FakeClock()
    listed = [pod(name, 5 + i, labels={"app": _fresh("web")}) for i, name in enumerate("ab")]
    watched = pod("c", 11, labels={"app": _fresh("web")})
    reader = ScriptedReader([page(listed, 10)], [FakeWatch([("ADDED", watched)])], clock=clock)
    seen_before_interning: list[str] = []

    def transform(obj: Object) -> Object:
        value = obj["metadata"]["labels"]["app"]
        seen_before_interning.append(value)
        obj["metadata"]["labels"]["app"] = _fresh(value)  # interning must come after this
        return obj

    store = RecordingStore()
    reflector = Reflector(reader, PODS, store, clock=clock, transform=transform)
    async with running(reflector.run()):
        await until(lambda: reflector.last_sync_resource_version == "11")
    values = [o["metadata"]["labels"]["app"] for o in store.store.list()]
    assert sorted(values) == ["web", "web", "web"]
    assert all(v is values[0] for v in values), "one shared copy after interning"
    assert len({id(v) for v in seen_before_interning}) == 3, "the transform saw the originals"


async def test_interning_can_be_turned_off() -> None:
    clock = FakeClock()
    listed = [pod(name, 5 + i, labels={"app": _fresh("web")}) for i, name in enumerate("ab")]
    reader = ScriptedReader([page(listed, 10)], [FakeWatch([])], clock=clock)
    store = RecordingStore()
    options = ReflectorOptions(intern_strings=False)
    reflector = Reflector(reader, PODS, store, clock=clock, options=options)
    async with running(reflector.run()):
        await until(lambda: reflector.last_sync_resource_version == "10")
    a, b = (o["metadata"]["labels"]["app"] for o in store.store.list())
    assert a == b and a is not b


async def test_transform_failure_on_a_watch_event_drops_it_and_keeps_watching() -> None:
    clock = FakeClock()
    watch = FakeWatch([("ADDED", pod("c", 11)), ("ADDED", pod("d", 12))])
    reader = ScriptedReader([page([], 10)], [watch], clock=clock)
    store = RecordingStore()
    reflector = Reflector(reader, PODS, store, clock=clock, transform=CountingTransform("11"))
    async with running(reflector.run()):
        await until(lambda: reflector.last_sync_resource_version == "12")
    assert store.ops == [("replace", [], "10"), ("add", "default/d", "12")]
    assert len(reader.watch_calls) == 1, "a bad object is not a reason to re-watch"


async def test_streaming_list_transforms_each_initial_event_and_pauses_gc() -> None:
    clock = FakeClock()
    stream = FakeWatch(
        [
            ("ADDED", pod("a", 5)),
            ("ADDED", pod("b", 6)),
            ("BOOKMARK", bookmark(15, initial_events_end=True)),
            ("MODIFIED", pod("a", 16)),
        ]
    )
    reader = ScriptedReader(watches=[stream], clock=clock)
    transform = CountingTransform()
    store = GcWatchingStore()
    reflector = Reflector(
        reader,
        PODS,
        store,
        clock=clock,
        transform=transform,
        options=ReflectorOptions(use_watch_list=True),
    )
    async with running(reflector.run()):
        await until(lambda: reflector.last_sync_resource_version == "16")
        assert gc.isenabled(), "the pause ends with the initial state, not with the stream"
    assert transform.calls == ["5", "6", "16"], "bookmarks are not transformed"
    assert transformed_counts(store) == {"a": 1, "b": 1}
    assert store.gc_enabled_in_replace == [False]
    assert gc.isenabled()


async def test_failed_list_restores_gc() -> None:
    clock = FakeClock()
    reader = ScriptedReader([InternalError("boom"), page([pod("a", 5)], 10)], clock=clock)
    reflector, _ = make(reader, clock)
    async with running(reflector.run()):
        await settle()
        assert gc.isenabled(), "a failed LIST does not leave the GC off during the backoff"
        await advance(clock, 1.0)
        await until(lambda: reflector.last_sync_resource_version == "10")
    assert gc.isenabled()


async def test_backoff_settings_come_from_the_options() -> None:
    clock = FakeClock()
    reader = ScriptedReader([InternalError("boom"), page([pod("a", 5)], 10)], clock=clock)
    store = RecordingStore()
    options = ReflectorOptions(backoff_initial=0.1, backoff_cap=1.0)
    reflector = Reflector(reader, PODS, store, clock=clock, options=options)
    async with running(reflector.run()):
        await settle()
        await advance(clock, 0.05)
        assert len(reader.list_calls) == 1, "waits at least the initial backoff"
        await advance(clock, 0.16)  # initial 0.1 s plus at most 100 % jitter
        await until(lambda: reflector.last_sync_resource_version == "10")
    assert len(reader.list_calls) == 2


class HangingListReader(ScriptedReader):
    """Every LIST hangs until ``answer`` is set (a server that never sends the body)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.answer = asyncio.Event()

    async def list(self, resource: Any, **params: Any) -> Object:
        self.list_calls.append(params)
        await self.answer.wait()
        self.list_calls.pop()
        return await super().list(resource, **params)


async def test_a_hanging_list_leaves_the_gc_enabled() -> None:
    clock = FakeClock()
    reader = HangingListReader([page([pod("a", 5)], 10)], clock=clock)
    store = GcWatchingStore()
    reflector = Reflector(reader, PODS, store, clock=clock)
    async with running(reflector.run()):
        await until(lambda: len(reader.list_calls) == 1)
        await settle()
        assert gc.isenabled(), "nothing is being decoded while the LIST waits for the server"
        reader.answer.set()
        await until(lambda: reflector.last_sync_resource_version == "10")
    assert store.gc_enabled_in_replace == [False], "paused from decoding to the store update"
    assert gc.isenabled()


async def test_a_paged_list_gives_the_gc_back_while_waiting_for_each_page() -> None:
    clock = FakeClock()
    gc_enabled_at_request: list[bool] = []
    gc_enabled_in_transform: list[bool] = []
    pages = [page(pods(2), 10, "c1"), page(pods(2, 2), 10, "c2"), page(pods(2, 4), 10)]

    def answer(params: dict[str, Any]) -> Object:
        gc_enabled_at_request.append(gc.isenabled())
        return pages.pop(0)

    def transform(obj: Object) -> Object:
        gc_enabled_in_transform.append(gc.isenabled())
        return obj

    reader = ScriptedReader(clock=clock, list_func=answer)
    store = GcWatchingStore()
    reflector = Reflector(reader, PODS, store, clock=clock, transform=transform)
    async with running(reflector.run()):
        await until(lambda: reflector.last_sync_resource_version == "10")
    assert gc_enabled_at_request == [True, True, True]
    assert gc_enabled_in_transform == [False] * 6, "paused while items are decoded"
    assert store.gc_enabled_in_replace == [False]
    assert gc.isenabled()


async def test_a_stalled_streaming_list_gives_the_gc_back() -> None:
    """A streaming list keeps the GC off while its initial events arrive, not while the
    stream waits: after a second without an event the pause lapses until the next one."""
    clock = FakeClock()
    stream = FakeWatch([("ADDED", pod("a", 5))])
    reader = ScriptedReader(watches=[stream], clock=clock)
    store = GcWatchingStore()
    options = ReflectorOptions(use_watch_list=True)
    reflector = Reflector(reader, PODS, store, clock=clock, options=options)
    async with running(reflector.run()):
        await until(lambda: stream.opened)
        await settle()
        assert not gc.isenabled(), "paused while the initial events arrive"
        await advance(clock, 1.0)
        assert gc.isenabled(), "the stream stalled: the pause lapsed"
        stream.send("ADDED", pod("b", 6))
        await settle()
        assert not gc.isenabled(), "data again: paused again"
        stream.send("BOOKMARK", bookmark(15, initial_events_end=True))
        await until(lambda: reflector.last_sync_resource_version == "15")
        assert gc.isenabled()
    assert store.gc_enabled_in_replace == [False]
    assert sorted(store.store.list_keys()) == ["default/a", "default/b"]


async def test_overlapping_streaming_lists_cannot_keep_the_gc_off_past_the_limit() -> None:
    """Two informers' streaming lists overlap: the first streams from 0 to 8 s, the second
    from 6 to 14 s. Neither holds the pause 10 s, together they would keep the GC off for
    14; the process-wide limit turns it back on at 10 s, for as long as the overlap lasts."""
    clock = FakeClock()
    first, second = FakeWatch(), FakeWatch()
    readers = [ScriptedReader(watches=[w], clock=clock) for w in (first, second)]
    options = ReflectorOptions(use_watch_list=True)
    reflectors = [
        Reflector(reader, PODS, RecordingStore(), clock=clock, options=options)
        for reader in readers
    ]
    enabled: dict[float, bool] = {}
    async with running(reflectors[0].run()), running(reflectors[1].run()):
        await until(lambda: first.opened and second.opened)
        for tick in range(29):  # every half second from 0 to 14 s
            now = tick / 2
            if now < 8:
                first.send("ADDED", pod(f"a{tick}", tick + 1))
            elif now == 8:
                first.send("BOOKMARK", bookmark(100, initial_events_end=True))
            if 6 <= now < 14:
                second.send("ADDED", pod(f"b{tick}", tick + 1))
            elif now == 14:
                second.send("BOOKMARK", bookmark(100, initial_events_end=True))
            await settle()
            enabled[now] = gc.isenabled()
            await advance(clock, 0.5)
        await until(lambda: all(r.last_sync_resource_version == "100" for r in reflectors))
    assert not any(enabled[t / 2] for t in range(20)), "paused from 0 to 9.5 s"
    assert all(enabled[t / 2] for t in range(21, 29)), "on again from 10 s, overlap or not"
    assert gc.isenabled()


@pytest.fixture
def gc_passes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Records the settling passes instead of running them; freeze mode on."""
    passes: list[str] = []

    def collect(*_: object) -> int:
        passes.append("collect")
        return 0

    monkeypatch.setattr(gc, "freeze", lambda: passes.append("freeze"))
    monkeypatch.setattr(gc, "collect", collect)
    monkeypatch.setattr(gc, "get_count", lambda: (SETTLE_OBJECTS, 0, 0))
    previous = set_gc_freeze_after_sync(True)
    try:
        yield passes
    finally:
        set_gc_freeze_after_sync(previous)


SETTLE_OBJECTS = 1_000_000  # as if each sync had created this many new objects


async def test_only_the_first_sync_may_freeze_the_gc(gc_passes: list[str]) -> None:
    """With set_gc_freeze_after_sync(True) the first sync is settled with gc.freeze();
    relists settle with a collection instead, so they never pin the cyclic garbage that
    happens to be alive."""
    clock = FakeClock()
    expiring = FakeWatch()
    reader = ScriptedReader(
        [page(pods(3), 10), page(pods(3), 20)], [expiring, FakeWatch()], clock=clock
    )
    reflector, store = make(reader, clock)
    async with running(reflector.run()):
        await until(lambda: len(store.replaces) == 1)
        await settle()
        assert gc_passes == ["freeze"]
        expiring.fail(Gone("too old"))
        await until(lambda: expiring.exited)
        await advance(clock, 1.0)
        await until(lambda: len(store.replaces) == 2)
        await settle()
    assert gc_passes == ["freeze", "collect"]
