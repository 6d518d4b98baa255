"""Driving electors on a fake clock: let tasks run, move time in ticks."""

from __future__ import annotations

import asyncio

from kcontrol.clock import FakeClock


async def settle(rounds: int = 60) -> None:
    """Let every runnable task run until all are waiting on the clock again."""
    for _ in range(rounds):
        await asyncio.sleep(0)


async def advance(clock: FakeClock, seconds: float, tick: float = 0.25) -> None:
    """Move the fake clock forward in ticks, letting tasks run after each."""
    end = clock.now() + seconds
    while clock.now() < end - 1e-9:
        clock.set_time(min(end, clock.now() + tick))
        await settle()
