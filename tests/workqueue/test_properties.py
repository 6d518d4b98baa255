"""Property tests of the queue invariants, over random interleavings of adds and workers.

Each example runs a small scenario on a fresh event loop: workers hold the items they get
until the scenario releases them, so processing overlaps with adds and with other workers.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from kcontrol.clock import FakeClock
from kcontrol.workqueue import DelayingQueue, Queue, ShutDown

KEYS = st.integers(min_value=0, max_value=4)
WORKERS = 4

Op = tuple[str, int]
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), KEYS),
        st.tuples(st.just("finish"), st.integers(min_value=0, max_value=WORKERS - 1)),
        st.tuples(st.just("tick"), st.just(0)),
    ),
    max_size=60,
)


@dataclass
class Observed:
    # Worker -> the item it is processing.
    in_flight: dict[int, int] = field(default_factory=dict)
    # Items added since they were last handed out: each must be handed out again.
    owed: set[int] = field(default_factory=set)
    handed_out: list[int] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)


async def _scenario(workers: int, ops: list[Op], drain: bool) -> Observed:
    q: Queue[int] = Queue()
    seen = Observed()
    release = [asyncio.Event() for _ in range(workers)]
    finish_all = asyncio.Event()

    def check_len(when: str) -> None:
        # Collapse: the queue holds each owed item once, except those still being processed.
        expected = len(seen.owed - set(seen.in_flight.values()))
        if len(q) != expected:
            seen.violations.append(f"{when}: len {len(q)} != {expected}")

    async def worker(w: int) -> None:
        while True:
            try:
                item = await q.get()
            except ShutDown:
                return
            if item in seen.in_flight.values():
                seen.violations.append(f"{item} handed to two workers at once")
            seen.in_flight[w] = item
            seen.owed.discard(item)
            seen.handed_out.append(item)
            if not finish_all.is_set():
                release[w].clear()
                finish = asyncio.create_task(release[w].wait())
                everything = asyncio.create_task(finish_all.wait())
                await asyncio.wait([finish, everything], return_when=asyncio.FIRST_COMPLETED)
                finish.cancel()
                everything.cancel()
            del seen.in_flight[w]
            q.done(item)

    async with asyncio.timeout(5), asyncio.TaskGroup() as group:
        for w in range(workers):
            group.create_task(worker(w))
        for op, arg in ops:
            if op == "add":
                q.add(arg)
                seen.owed.add(arg)
            elif op == "finish" and arg < workers:
                release[arg].set()
            for _ in range(2):
                await asyncio.sleep(0)
            check_len(f"after {op} {arg}")
        finish_all.set()
        if drain:
            await q.shutdown_with_drain()
        else:
            q.shutdown()
    return seen


@settings(max_examples=150, deadline=None)
@given(workers=st.integers(min_value=1, max_value=WORKERS), ops=OPS, drain=st.booleans())
def test_no_item_is_processed_twice_at_once_and_no_add_is_lost(
    workers: int, ops: list[Op], drain: bool
) -> None:
    seen = asyncio.run(_scenario(workers, ops, drain))
    assert seen.violations == []
    assert seen.owed == set(), "added items were never handed out after their last add"
    assert seen.in_flight == {}
    added = {arg for op, arg in ops if op == "add"}
    assert set(seen.handed_out) == added


@settings(max_examples=100, deadline=None)
@given(adds=st.lists(KEYS, max_size=30))
def test_adds_of_a_waiting_item_collapse(adds: list[int]) -> None:
    async def run() -> list[int]:
        q: Queue[int] = Queue()
        for item in adds:
            q.add(item)
        assert len(q) == len(set(adds))
        got = []
        while len(q):
            got.append(await q.get())
        return got

    first_adds = list(dict.fromkeys(adds))
    assert asyncio.run(run()) == first_adds


Delayed = tuple[int, float]


@settings(max_examples=100, deadline=None)
@given(
    adds=st.lists(
        st.tuples(KEYS, st.floats(min_value=-1, max_value=10, allow_nan=False)), max_size=20
    ),
    probes=st.lists(st.floats(min_value=0, max_value=11, allow_nan=False), max_size=5),
)
def test_delayed_item_becomes_ready_at_its_earliest_ready_time(
    adds: list[Delayed], probes: list[float]
) -> None:
    async def run() -> None:
        clock = FakeClock(start=0.0)
        q: DelayingQueue[int] = DelayingQueue(clock=clock)
        ready_at: dict[int, float] = {}
        for item, delay in adds:
            q.add_after(item, delay)
            ready_at[item] = min(ready_at.get(item, max(delay, 0.0)), max(delay, 0.0))
        for t in [*sorted(probes), 11.0]:
            clock.set_time(t)
            expected = {item for item, at in ready_at.items() if at <= t}
            assert len(q) == len(expected)
        got = [await q.get() for _ in range(len(q))]
        assert sorted(got) == sorted(ready_at)
        assert [ready_at[i] for i in got] == sorted(ready_at[i] for i in got)
        assert not clock.has_waiters()

    asyncio.run(run())
