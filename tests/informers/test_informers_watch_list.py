"""The streaming list's first part (kcontrol.informers._watch_list.InitialEvents): folding
the initial events into a state until the end bookmark, and the GC pause it owns."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from informers_fakes import advance, bookmark, pod

from kcontrol.client import Object, WatchEvent
from kcontrol.clock import FakeClock
from kcontrol.informers._watch_list import GC_PAUSE_LEASE, REQUEST_OPTIONS, InitialEvents


@pytest.fixture(autouse=True)
def _gc_enabled_around_each_test() -> Iterator[None]:
    assert gc.isenabled()
    try:
        yield
    finally:
        if not gc.isenabled():
            gc.enable()
            pytest.fail("the test left the GC disabled")


def keep(kind: str, obj: Object) -> Object | None:
    return obj


def test_request_options_ask_for_a_streaming_list() -> None:
    assert REQUEST_OPTIONS == {
        "send_initial_events": True,
        "resource_version_match": "NotOlderThan",
    }


async def test_events_fold_into_a_state_until_the_end_bookmark() -> None:
    def drop_b(kind: str, obj: Object) -> Object | None:
        return None if obj["metadata"]["name"] == "b" else {**obj, "seen": kind}

    events: list[WatchEvent] = [
        WatchEvent("ADDED", pod("a", 5)),
        WatchEvent("ADDED", pod("b", 6)),  # the transform drops it
        WatchEvent("ADDED", pod("c", 7)),
        WatchEvent("BOOKMARK", bookmark(8)),  # an ordinary bookmark: not the end
        WatchEvent("DELETED", pod("c", 9)),
        WatchEvent("MODIFIED", pod("a", 10)),
    ]
    stored: list[tuple[list[str], str]] = []

    async def replace(items: list[Object], resource_version: str) -> None:
        stored.append(
            (
                [f"{o['metadata']['name']}@{o['metadata']['resourceVersion']}" for o in items],
                resource_version,
            )
        )

    with InitialEvents(drop_b, clock=FakeClock()) as initial:
        assert [initial.add(event) for event in events] == [False] * len(events)
        assert not gc.isenabled(), "paused while the initial events decode"
        assert len(initial) == 1
        with pytest.raises(RuntimeError, match="not ended"):
            await initial.replace(replace, freeze=False)
        assert initial.add(WatchEvent("BOOKMARK", bookmark(11, initial_events_end=True)))
        assert await initial.replace(replace, freeze=False) == (1, "11")
        assert gc.isenabled(), "given back once stored"
    assert stored == [(["a@10"], "11")]


async def test_the_pause_lapses_when_the_stream_stalls_and_ends_with_the_block() -> None:
    clock = FakeClock()
    with InitialEvents(keep, clock=clock) as initial:
        initial.add(WatchEvent("ADDED", pod("a", 5)))
        assert not gc.isenabled()
        await advance(clock, GC_PAUSE_LEASE)
        assert gc.isenabled(), "a stalled stream is a network wait, not decoding"
        initial.add(WatchEvent("ADDED", pod("b", 6)))
        assert not gc.isenabled()
    assert gc.isenabled(), "a stream that failed before its end gives the pause back"
