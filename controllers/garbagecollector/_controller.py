"""The garbage collector: kube-controller-manager's ``pkg/controller/garbagecollector``
(Kubernetes 1.36) - wiring and the run loop.

Pieces, each with its own module: the graph (:mod:`._graph`), its single writer
(:mod:`._graph_builder`), the monitors that feed it (:mod:`._monitors`), the workers that act on
it (:mod:`._collector`) through the API calls of :mod:`._operations`. :meth:`run` owns them all
in one task group: the monitors and the graph builder start at once; the workers
(``--concurrent-gc-syncs`` of each kind) once every monitor has synced, or after
``sync_timeout`` (upstream waits for the caches the same way and then starts anyway, so that
one resource that never lists cannot stop collection everywhere).
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection

from prometheus_client import CollectorRegistry

from kcontrol.client import Client
from kcontrol.clock import Clock, RealClock
from kcontrol.discovery import RESTMapper
from kcontrol.events import EventRecorder
from kcontrol.logging import get_logger

from ._collector import GarbageCollector
from ._graph_builder import GraphBuilder
from ._metrics import metrics_for
from ._monitors import Discover, Monitors
from ._names import (
    DEFAULT_CONCURRENT_GC_SYNCS,
    DEFAULT_IGNORED_RESOURCES,
    NAME,
    RESOURCES_RESYNC_PERIOD,
)
from ._operations import Operations

__all__ = ["GarbageCollectorController"]

_log = get_logger(__name__, controller=NAME)


class GarbageCollectorController:
    """Deletes objects whose owners are gone, orphans and deletes dependents as their owners'
    deletions ask; see the package docstring.

    ``client`` reads (GET, LIST, WATCH of metadata) and writes (patch, delete) every
    deletable resource; ``mapper`` maps owner references' kinds to resources; ``discover``
    returns the deletable resources (re-read every ``resync_period``); ``recorder`` takes the
    ``OwnerRefInvalidNamespace`` events; ``workers`` is ``--concurrent-gc-syncs``.
    :attr:`builder`, :attr:`collector` and :attr:`monitors` are public for tests.
    """

    def __init__(
        self,
        *,
        client: Client,
        mapper: RESTMapper,
        discover: Discover,
        recorder: EventRecorder,
        workers: int = DEFAULT_CONCURRENT_GC_SYNCS,
        ignored: Collection[tuple[str, str]] = DEFAULT_IGNORED_RESOURCES,
        resync_period: float = RESOURCES_RESYNC_PERIOD,
        sync_timeout: float = 30.0,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self._clock: Clock = clock or RealClock()
        self._workers = workers
        self._sync_timeout = sync_timeout
        self.builder = GraphBuilder(recorder=recorder, clock=self._clock, registry=registry)
        self.collector = GarbageCollector(self.builder, Operations(client, mapper))
        self.monitors = Monitors(
            client=client,
            builder=self.builder,
            discover=discover,
            metrics=metrics_for(registry),
            ignored=ignored,
            resync_period=resync_period,
            clock=self._clock,
        )

    async def run(self) -> None:
        """Run the monitors, the graph builder and the workers until cancelled."""
        _log.info("Starting controller", workers=self._workers)
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self.monitors.run(), name="gc monitors")
                group.create_task(self.builder.run(), name="gc graph builder")
                await self._wait_for_sync()
                for i in range(self._workers):
                    group.create_task(self.collector.run_delete_worker(), name=f"gc delete {i}")
                    group.create_task(self.collector.run_orphan_worker(), name=f"gc orphan {i}")
        finally:
            self.builder.shutdown()
            _log.info("Shutting down controller")

    async def _wait_for_sync(self) -> None:
        deadline = self._clock.now() + self._sync_timeout
        while not self.monitors.has_synced():
            if self._clock.now() >= deadline:
                _log.warning("timed out waiting for the monitors to sync; starting workers")
                return
            await self._clock.sleep(0.1)
        _log.info("all monitors synced", resources=len(self.monitors.resources()))
