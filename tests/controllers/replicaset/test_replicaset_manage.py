"""Slow-start batches (upstream TestSlowStartBatch) and the consistency store
(upstream pkg/controller/util/consistency tests)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from kcontrol.client import PODS, REPLICASETS
from kcontrol_controllers.consistency import (
    ConsistencyStore,
    StaleCache,
    compare_resource_versions,
)
from kcontrol_controllers.replicaset._manage import slow_start_batch

# -- slow start ----------------------------------------------------------------------------------


@dataclass
class BatchCase:
    name: str
    count: int
    limit: int  # calls beyond this fail
    successes: int
    calls: int
    batches: list[int]


BATCH_CASES = [
    BatchCase("all fail: one call", 10, 0, 0, 1, [1]),
    BatchCase("all succeed: 1+2+4+3", 10, 10, 10, 10, [1, 2, 4, 3]),
    BatchCase("some succeed: stops after the failing batch", 10, 5, 5, 7, [1, 2, 4]),
    BatchCase("nothing to do", 0, 0, 0, 0, []),
]


@pytest.mark.parametrize("case", BATCH_CASES, ids=lambda c: c.name)
async def test_slow_start_batch(case: BatchCase) -> None:
    calls = 0
    in_flight = 0
    batches: list[int] = []
    error = RuntimeError("fake error")

    async def call() -> None:
        nonlocal calls, in_flight
        calls += 1
        index = calls
        in_flight += 1
        if in_flight == 1:
            batches.append(0)
        batches[-1] += 1
        await asyncio.sleep(0)  # every call of a batch is started before any finishes
        in_flight -= 1
        if index > case.limit:
            raise error

    successes, failure = await slow_start_batch(case.count, 1, call)

    assert (successes, calls, batches) == (case.successes, case.calls, case.batches)
    assert failure is (error if case.successes < case.count else None)


async def test_slow_start_batch_propagates_cancellation() -> None:
    started = asyncio.Event()

    async def call() -> None:
        started.set()
        await asyncio.Event().wait()

    task = asyncio.create_task(slow_start_batch(4, 1, call))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# -- consistency ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [("1", "1", 0), ("9", "10", -1), ("10", "9", 1), ("123", "124", -1), ("20", "19", 1)],
)
def test_compare_resource_versions(a: str, b: str, expected: int) -> None:
    assert compare_resource_versions(a, b) == expected


@pytest.mark.parametrize("bad", ["", "0", "01", "1a", "-1", "\u0661"])
def test_compare_resource_versions_rejects_malformed(bad: str) -> None:
    with pytest.raises(ValueError, match="not well formed"):
        compare_resource_versions(bad, "1")


class Informers:
    def __init__(self) -> None:
        self.seen = {PODS: "", REPLICASETS: ""}

    def store(self) -> ConsistencyStore:
        return ConsistencyStore({r: (lambda r=r: self.seen[r]) for r in self.seen})


def test_no_record_is_ready() -> None:
    informers = Informers()
    informers.seen[PODS] = "5"
    store = informers.store()
    store.wrote_at("ns/other", "uid", PODS, "10")  # another owner, ahead of the informer

    store.ensure_ready("ns/rs")  # nothing written for this owner: nothing to wait for

    assert store.pending("ns/rs") == {}
    assert store.pending("ns/other") == {PODS: "10"}  # untouched, and still holding back:
    with pytest.raises(StaleCache):
        store.ensure_ready("ns/other")


def test_behind_informer_holds_the_owner_back_until_it_catches_up() -> None:
    informers = Informers()
    store = informers.store()
    store.wrote_at("ns/rs", "uid", PODS, "10")
    store.wrote_at("ns/rs", "uid", PODS, "9")  # older: the newest write is kept
    informers.seen[PODS] = "9"

    with pytest.raises(StaleCache, match="read version: 9 is not as new as written version: 10"):
        store.ensure_ready("ns/rs")
    store.ensure_ready("ns/other")  # other owners are not held back

    informers.seen[PODS] = "10"
    store.ensure_ready("ns/rs")
    assert store.pending("ns/rs") == {}


def test_unknown_or_unparseable_versions_never_block() -> None:
    informers = Informers()
    store = informers.store()
    store.wrote_at("ns/rs", "uid", PODS, "not-a-number")
    informers.seen[PODS] = "5"
    store.ensure_ready("ns/rs")  # a data problem must not block syncing

    store.wrote_at("ns/rs", "uid", PODS, "50")
    informers.seen[PODS] = ""  # the informer has not listed yet
    store.ensure_ready("ns/rs")


def test_untracked_resources_never_block() -> None:
    # Only pods are tracked here: a ReplicaSet write the store has no informer for is
    # remembered but never waited for, while the tracked pods still are.
    seen = {PODS: "5"}
    store = ConsistencyStore({PODS: lambda: seen[PODS]})
    store.wrote_at("ns/rs", "uid", REPLICASETS, "50")
    store.wrote_at("ns/rs", "uid", PODS, "6")
    assert store.pending("ns/rs") == {REPLICASETS: "50", PODS: "6"}

    with pytest.raises(StaleCache) as raised:
        store.ensure_ready("ns/rs")
    assert raised.value.resource == PODS

    seen[PODS] = "6"
    store.ensure_ready("ns/rs")  # the untracked ReplicaSet version does not hold it back
    assert store.pending("ns/rs") == {}  # and the passing check cleared the record


def test_a_new_uid_replaces_the_record_and_clear_checks_the_uid() -> None:
    informers = Informers()
    store = informers.store()
    store.wrote_at("ns/rs", "old", PODS, "10")
    store.wrote_at("ns/rs", "new", REPLICASETS, "3")
    assert store.pending("ns/rs") == {REPLICASETS: "3"}

    store.clear("ns/rs", "old")
    assert store.pending("ns/rs") == {REPLICASETS: "3"}
    store.clear("ns/rs", "new")
    assert store.pending("ns/rs") == {}

    store.wrote_at("ns/rs", "any", PODS, "4")
    store.clear("ns/rs")
    assert store.pending("ns/rs") == {}
