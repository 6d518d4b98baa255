"""The informers' GC pause (kcontrol._gc.GcPause): the hard time limit, leases, settling.

Driven by a FakeClock; ``gc`` itself is real except where a test records the settling
passes instead of running them.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator

import pytest

from kcontrol._gc import MAX_PAUSE, GcPause, gc_paused, set_gc_freeze_after_sync
from kcontrol.clock import FakeClock, TimerHandle


@pytest.fixture(autouse=True)
def _gc_enabled_around_each_test() -> Iterator[None]:
    assert gc.isenabled()
    try:
        yield
    finally:
        if not gc.isenabled():
            gc.enable()
            pytest.fail("the test left the GC disabled")


@pytest.fixture
def passes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Records the settling passes instead of running them, with freeze mode on; every
    pause looks as if it had created a million objects."""
    recorded: list[str] = []

    def collect(*_: object) -> int:
        recorded.append("collect")
        return 0

    monkeypatch.setattr(gc, "freeze", lambda: recorded.append("freeze"))
    monkeypatch.setattr(gc, "collect", collect)
    monkeypatch.setattr(gc, "get_count", lambda: (1_000_000, 0, 0))
    previous = set_gc_freeze_after_sync(True)
    try:
        yield recorded
    finally:
        set_gc_freeze_after_sync(previous)


def test_a_pause_ends_at_the_hard_limit() -> None:
    clock = FakeClock()
    with GcPause(clock=clock) as pause:
        pause.hold(lease=False)
        clock.step(MAX_PAUSE - 0.1)
        assert not gc.isenabled()
        clock.step(0.1)
        assert gc.isenabled(), "a holder stuck on an await cannot keep the GC off"
        assert pause.held, "its share is still counted"
    assert gc.isenabled()
    with GcPause(clock=clock) as fresh:
        fresh.hold()
        assert not gc.isenabled(), "once everyone left, a new pause can begin"


def test_overlapping_users_cannot_keep_the_gc_off_past_the_limit() -> None:
    """Relists of several informers that keep overlapping: each holds only a few seconds,
    but the process-wide pause they share still ends at the limit, and stays ended until
    they have all left."""
    clock = FakeClock()
    first, second, third = (GcPause(clock=clock) for _ in range(3))
    first.hold()
    clock.step(6.0)
    second.hold()
    clock.step(2.0)
    first.release()
    assert not gc.isenabled()
    clock.step(2.0)  # 10 s since the pause began
    assert gc.isenabled()
    third.hold()
    assert gc.isenabled(), "joining an expired pause does not disable the GC again"
    second.release()
    assert gc.isenabled()
    third.release()
    first.hold()
    assert not gc.isenabled()
    first.release()
    assert gc.isenabled()


class TimerlessClock(FakeClock):
    """A clock with no event loop to run timers on."""

    def call_at(self, when: float, callback: Callable[[], object]) -> TimerHandle:
        raise RuntimeError("no running event loop")


def test_the_limit_is_also_checked_when_a_user_joins() -> None:
    clock = TimerlessClock()
    first, second = GcPause(clock=clock), GcPause(clock=clock)
    first.hold()
    clock.step(MAX_PAUSE + 1)
    assert not gc.isenabled(), "no timer could fire"
    second.hold()
    assert gc.isenabled()
    first.release()
    second.release()
    assert gc.isenabled()


def test_a_lease_lapses_when_no_hold_comes_in_time() -> None:
    clock = FakeClock()
    with GcPause(lease=1.0, clock=clock) as pause:
        pause.hold()
        clock.step(0.5)
        pause.hold()
        clock.step(0.9)
        assert not gc.isenabled(), "held 0.9 s ago"
        clock.step(0.1)
        assert gc.isenabled(), "a second without data: a network wait"
        assert not pause.held
        pause.hold()
        assert not gc.isenabled()
        pause.hold(lease=False)
        clock.step(5.0)
        assert not gc.isenabled(), "held without a lease: kept until released"
    assert gc.isenabled()


def test_a_lease_lapsing_does_not_end_another_users_pause() -> None:
    clock = FakeClock()
    with GcPause(lease=1.0, clock=clock) as leased, GcPause(clock=clock) as other:
        leased.hold()
        other.hold()
        clock.step(1.0)
        assert not leased.held
        assert not gc.isenabled()
    assert gc.isenabled()


def test_finish_settles_once_and_only_a_first_sync_may_freeze(passes: list[str]) -> None:
    clock = FakeClock()
    relist, first_sync = GcPause(clock=clock), GcPause(clock=clock)
    relist.hold()
    first_sync.hold()
    relist.finish(freeze=False)
    assert passes == [], "nothing happens while another user holds the pause"
    first_sync.finish(freeze=True)
    assert passes == ["freeze"]
    relist.hold()
    relist.finish(freeze=False)
    assert passes == ["freeze", "collect"]
    assert gc.isenabled()


def test_finish_settles_even_after_the_lease_lapsed(passes: list[str]) -> None:
    clock = FakeClock()
    pause = GcPause(lease=1.0, clock=clock)
    pause.hold()
    clock.step(2.0)
    assert gc.isenabled()
    pause.finish(freeze=True)
    assert passes == ["freeze"]
    assert gc.isenabled()


def test_leaving_the_block_releases_without_settling(passes: list[str]) -> None:
    clock = FakeClock()
    with pytest.raises(RuntimeError), GcPause(clock=clock) as pause:
        pause.hold()
        raise RuntimeError("the list failed")
    assert passes == []
    assert gc.isenabled()


def test_gc_paused_blocks_nest_in_a_held_pause(passes: list[str]) -> None:
    """A decode (``gc_paused``) inside a sync's pause: leaving the decode keeps the GC off,
    and the settling pass is the sync's."""
    clock = FakeClock()
    with GcPause(clock=clock) as pause:
        with gc_paused():
            pause.hold()
        assert not gc.isenabled()
        pause.finish(freeze=False)
    assert passes == ["collect"]
    assert gc.isenabled()


def test_a_gc_disabled_by_someone_else_stays_disabled() -> None:
    clock = FakeClock()
    gc.disable()
    try:
        with GcPause(clock=clock) as pause:
            pause.hold()
            clock.step(MAX_PAUSE)
            assert not gc.isenabled(), "the limit does not enable a GC it did not disable"
            pause.finish(freeze=False)
        assert not gc.isenabled()
    finally:
        gc.enable()
