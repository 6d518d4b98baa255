"""Stopping bounds the drain: controllers stop taking work and finish their syncs in flight,
for at most ``graceful_shutdown_timeout`` seconds (controller-runtime's
``GracefulShutdownTimeout``); past it the syncs still running are cancelled. Without a bound
one hung sync would keep a process - or a sharded replica's shard Lease - forever."""

from __future__ import annotations

import asyncio
import time

from prometheus_client import CollectorRegistry

from kcontrol.controller import Controller, ControllerOptions
from kcontrol.leaderelection import LeaderElectionOptions
from kcontrol.manager import (
    ControllerContext,
    ControllerRegistry,
    ControllerSpec,
    Manager,
    ManagerOptions,
)
from kcontrol.serving import ServingOptions
from kcontrol.testing import FakeClient


class Hung:
    """A controller whose sync of ``ns/hung`` does not return until ``release`` is set, and
    one of ``ns/quick`` that takes a moment: what each sync ended with is recorded."""

    def __init__(self) -> None:
        self.started = {"ns/hung": asyncio.Event(), "ns/quick": asyncio.Event()}
        self.release = asyncio.Event()
        self.ended: dict[str, str] = {}

    async def sync(self, key: str) -> None:
        self.started[key].set()
        try:
            if key == "ns/hung":
                await self.release.wait()
            else:
                await asyncio.sleep(0.2)
            self.ended[key] = "finished"
        except asyncio.CancelledError:
            self.ended[key] = "cancelled"
            raise

    def factory(self, ctx: ControllerContext) -> Controller:
        controller = Controller(
            ControllerOptions(name="hung", sync=self.sync, workers=2, registry=ctx.registry)
        )
        controller.enqueue("ns/hung")
        controller.enqueue("ns/quick")
        return controller


def manager(hung: Hung, grace: float) -> Manager:
    options = ManagerOptions(
        election=LeaderElectionOptions(leader_elect=False),
        serving=ServingOptions(),
        graceful_shutdown_timeout=grace,
    )
    return Manager(
        options,
        ControllerRegistry([ControllerSpec("hung", hung.factory)]),
        registry=CollectorRegistry(),
        freeze_gc_after_sync=False,
    )


async def test_a_hung_sync_is_cancelled_after_the_graceful_shutdown_timeout() -> None:
    hung = Hung()
    mgr = manager(hung, grace=1.0)
    run = asyncio.create_task(mgr.run(client=FakeClient()))
    await asyncio.wait_for(hung.started["ns/hung"].wait(), 10)
    await asyncio.wait_for(hung.started["ns/quick"].wait(), 10)
    stopping = time.monotonic()
    mgr.shutdown()
    await asyncio.wait((run,), timeout=10)
    took = time.monotonic() - stopping
    assert run.done(), "a hung sync kept the manager from stopping"
    assert hung.ended == {"ns/quick": "finished", "ns/hung": "cancelled"}
    assert 0.9 <= took < 10, took  # the quick sync drained; the hung one waited out the grace


async def test_a_negative_timeout_waits_for_the_syncs() -> None:
    hung = Hung()
    mgr = manager(hung, grace=-1.0)
    run = asyncio.create_task(mgr.run(client=FakeClient()))
    await asyncio.wait_for(hung.started["ns/hung"].wait(), 10)
    mgr.shutdown()
    done, _ = await asyncio.wait((run,), timeout=2.0)
    assert not done, "stopped although a sync was still running and no limit was set"
    assert hung.ended == {"ns/quick": "finished"}
    hung.release.set()  # the sync returns at last: the drain ends, and the manager with it
    await asyncio.wait((run,), timeout=10)
    assert run.done() and hung.ended["ns/hung"] == "finished"
