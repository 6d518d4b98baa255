"""ControllerExpectations and UIDTrackingControllerExpectations, table-driven with a FakeClock
(upstream: TestControllerExpectations, TestUIDExpectations in controller_utils_test.go)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from kcontrol.clock import FakeClock
from kcontrol.controller._expectations import (
    EXPECTATIONS_TIMEOUT,
    ControlleeExpectations,
    ControllerExpectations,
    UIDTrackingControllerExpectations,
)

KEY = "default/rs"

Step = Callable[[ControllerExpectations, FakeClock], None]


@dataclass
class Case:
    name: str
    steps: list[Step]
    satisfied: bool
    counts: tuple[int, int] | None


def expect_creations(n: int) -> Step:
    return lambda e, _: e.expect_creations(KEY, n)


def expect_deletions(n: int) -> Step:
    return lambda e, _: e.expect_deletions(KEY, n)


def set_expectations(add: int, delete: int) -> Step:
    return lambda e, _: e.set_expectations(KEY, add, delete)


def raise_(add: int, delete: int) -> Step:
    return lambda e, _: e.raise_expectations(KEY, add, delete)


def lower(add: int, delete: int) -> Step:
    return lambda e, _: e.lower_expectations(KEY, add, delete)


def created(times: int = 1) -> Step:
    def step(e: ControllerExpectations, _: FakeClock) -> None:
        for _ in range(times):
            e.creation_observed(KEY)

    return step


def deleted(times: int = 1) -> Step:
    def step(e: ControllerExpectations, _: FakeClock) -> None:
        for _ in range(times):
            e.deletion_observed(KEY)

    return step


def wait(seconds: float) -> Step:
    return lambda _, clock: clock.step(seconds)


def forget() -> Step:
    return lambda e, _: e.delete_expectations(KEY)


CASES = [
    Case("no record is satisfied", [], True, None),
    Case("pending creations", [expect_creations(3)], False, (3, 0)),
    Case("some creations observed", [expect_creations(3), created(2)], False, (1, 0)),
    Case("all creations observed", [expect_creations(3), created(3)], True, (0, 0)),
    Case("more observed than expected", [expect_creations(1), created(3)], True, (-2, 0)),
    Case("pending deletions", [expect_deletions(2), deleted(1)], False, (0, 1)),
    Case("all deletions observed", [expect_deletions(2), deleted(2)], True, (0, 0)),
    Case("zero expected", [expect_creations(0)], True, (0, 0)),
    Case("both pending, creations done", [set_expectations(1, 1), created()], False, (0, 1)),
    Case("both done", [set_expectations(1, 1), created(), deleted()], True, (0, 0)),
    Case("expect_creations replaces", [expect_deletions(5), expect_creations(1)], False, (1, 0)),
    Case("raise adds to pending", [expect_creations(1), raise_(2, 1)], False, (3, 1)),
    Case("raise without record is a no-op", [raise_(2, 1)], True, None),
    Case("lower takes back skipped creations", [expect_creations(5), lower(5, 0)], True, (0, 0)),
    Case("lower without record is a no-op", [lower(1, 1)], True, None),
    Case("observed without record is a no-op", [created(), deleted()], True, None),
    Case("not yet expired at exactly 5m", [expect_creations(1), wait(300)], False, (1, 0)),
    Case("expired after 5m", [expect_creations(1), wait(300.001)], True, (1, 0)),
    Case(
        "raising does not refresh the timestamp",
        [expect_creations(1), wait(200), raise_(1, 0), wait(101)],
        True,
        (2, 0),
    ),
    Case(
        "setting again refreshes the timestamp",
        [expect_creations(1), wait(200), expect_creations(1), wait(101)],
        False,
        (1, 0),
    ),
    Case("deleted record is satisfied", [expect_creations(3), forget()], True, None),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_controller_expectations(case: Case) -> None:
    clock = FakeClock()
    expectations = ControllerExpectations(clock=clock)
    for step in case.steps:
        step(expectations, clock)
    assert expectations.satisfied_expectations(KEY) is case.satisfied
    record = expectations.get_expectations(KEY)
    assert (None if record is None else (record.add, record.delete)) == case.counts


def test_keys_are_independent() -> None:
    expectations = ControllerExpectations(clock=FakeClock())
    expectations.expect_creations("ns/a", 1)
    expectations.expect_deletions("ns/b", 1)
    expectations.creation_observed("ns/a")
    assert expectations.satisfied_expectations("ns/a")
    assert not expectations.satisfied_expectations("ns/b")


def test_snapshot_records_timestamp_and_is_detached() -> None:
    clock = FakeClock(start=50.0)
    expectations = ControllerExpectations(clock=clock)
    expectations.expect_creations(KEY, 2)
    snapshot = expectations.get_expectations(KEY)
    assert snapshot == ControlleeExpectations(add=2, delete=0, timestamp=50.0)
    assert snapshot is not None and not snapshot.fulfilled()
    expectations.creation_observed(KEY)
    assert snapshot.add == 2  # a snapshot, not a live view


def test_custom_timeout() -> None:
    clock = FakeClock()
    expectations = ControllerExpectations(clock=clock, timeout=10)
    expectations.expect_creations(KEY, 1)
    clock.step(10.5)
    assert expectations.satisfied_expectations(KEY)
    assert EXPECTATIONS_TIMEOUT == 300.0


# -- UID tracking ---------------------------------------------------------------------------

UStep = Callable[[UIDTrackingControllerExpectations, FakeClock], None]


@dataclass
class UCase:
    name: str
    steps: list[UStep]
    satisfied: bool
    pending_keys: frozenset[str] | None
    deletes: int | None


def u_expect(*keys: str) -> UStep:
    return lambda e, _: e.expect_deletions(KEY, list(keys))


def u_deleted(key: str) -> UStep:
    return lambda e, _: e.deletion_observed(KEY, key)


U_CASES = [
    UCase("nothing expected", [], True, None, None),
    UCase(
        "expected deletions pending",
        [u_expect("ns/p1", "ns/p2")],
        False,
        frozenset({"ns/p1", "ns/p2"}),
        2,
    ),
    UCase(
        "one expected deletion observed",
        [u_expect("ns/p1", "ns/p2"), u_deleted("ns/p1")],
        False,
        frozenset({"ns/p2"}),
        1,
    ),
    UCase(
        "all expected deletions observed",
        [u_expect("ns/p1", "ns/p2"), u_deleted("ns/p2"), u_deleted("ns/p1")],
        True,
        frozenset(),
        0,
    ),
    UCase(
        "an unexpected pod's deletion does not count",
        [u_expect("ns/p1"), u_deleted("ns/other")],
        False,
        frozenset({"ns/p1"}),
        1,
    ),
    UCase(
        "the same deletion observed twice counts once",
        [u_expect("ns/p1", "ns/p2"), u_deleted("ns/p1"), u_deleted("ns/p1")],
        False,
        frozenset({"ns/p2"}),
        1,
    ),
    UCase(
        "duplicate keys are expected once",
        [u_expect("ns/p1", "ns/p1")],
        False,
        frozenset({"ns/p1"}),
        1,
    ),
    UCase(
        "expecting again clobbers the previous keys",
        [u_expect("ns/p1"), u_expect("ns/p2"), u_deleted("ns/p1")],
        False,
        frozenset({"ns/p2"}),
        1,
    ),
    UCase(
        "expired",
        [u_expect("ns/p1"), lambda _, clock: clock.step(301)],
        True,
        frozenset({"ns/p1"}),
        1,
    ),
    UCase(
        "delete_expectations forgets keys and counts",
        [u_expect("ns/p1"), lambda e, _: e.delete_expectations(KEY), u_deleted("ns/p1")],
        True,
        None,
        None,
    ),
]


@pytest.mark.parametrize("case", U_CASES, ids=lambda c: c.name)
def test_uid_tracking_expectations(case: UCase) -> None:
    clock = FakeClock()
    expectations = UIDTrackingControllerExpectations(clock=clock)
    for step in case.steps:
        step(expectations, clock)
    assert expectations.satisfied_expectations(KEY) is case.satisfied
    assert expectations.get_uids(KEY) == case.pending_keys
    record = expectations.get_expectations(KEY)
    assert (None if record is None else record.delete) == case.deletes


def test_uid_tracking_creations_use_the_wrapped_expectations() -> None:
    shared = ControllerExpectations(clock=FakeClock())
    expectations = UIDTrackingControllerExpectations(shared)
    expectations.expect_creations(KEY, 2)
    expectations.creation_observed(KEY)
    assert not expectations.satisfied_expectations(KEY)
    assert shared.get_expectations(KEY) == expectations.get_expectations(KEY)
    expectations.lower_expectations(KEY, 1, 0)
    assert shared.satisfied_expectations(KEY)
    expectations.raise_expectations(KEY, 0, 1)
    assert not shared.satisfied_expectations(KEY)


def test_uid_tracking_scenario_like_replicaset_scale_down() -> None:
    """Scale down by two, a stranger's pod is deleted meanwhile, then both victims go."""
    clock = FakeClock()
    expectations = UIDTrackingControllerExpectations(clock=clock)
    expectations.expect_deletions(KEY, ["ns/victim-1", "ns/victim-2"])
    expectations.deletion_observed(KEY, "ns/stranger")
    expectations.deletion_observed(KEY, "ns/victim-1")
    assert not expectations.satisfied_expectations(KEY)
    expectations.deletion_observed(KEY, "ns/victim-2")
    assert expectations.satisfied_expectations(KEY)
    assert expectations.get_uids(KEY) == frozenset()
