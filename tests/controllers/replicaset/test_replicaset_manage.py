"""Slow-start batches (upstream TestSlowStartBatch); the consistency store the ReplicaSet
controller uses is the library's, tested in tests/controller/test_consistency.py."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

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
