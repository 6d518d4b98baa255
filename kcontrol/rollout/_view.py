"""RolloutView: a Deployment's rollout, live in the terminal, from kcontrol's own informers.

Three kinds of informers, all in the Deployment's namespace: the Deployment (field selector
``metadata.name``), the namespace's ReplicaSets (the Deployment's selector may change, so the
ones it controls are picked by owner reference), and core/v1 Events about the Deployment and
about ReplicaSets (field selectors on ``involvedObject``) - what ``kubectl describe`` shows.

Every informer notification marks the frame dirty; a redraw task renders a fresh
:class:`~kcontrol.rollout.Snapshot` at most ``max_redraws_per_second`` times a second, and once
a second regardless so that event ages move. Nothing polls the API server.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.live import Live

from kcontrol.client import DEPLOYMENTS, EVENTS, REPLICASETS, Reader
from kcontrol.clock import Clock, RealClock, timeout
from kcontrol.informers import (
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
    SharedInformerFactory,
)
from kcontrol.rollout._render import render
from kcontrol.rollout._snapshot import Snapshot, take_snapshot

__all__ = ["RolloutView"]

AGE_TICK = 1.0
"""Seconds between redraws when nothing changes (event and condition ages)."""


class RolloutView:
    """Watches Deployment ``namespace/name`` and draws it; see the module docstring.

    ``header`` lines are shown above the Deployment; :attr:`notice` is a line below it that
    the caller may change at any time. :meth:`run` blocks until cancelled (or, with
    ``once=True``, prints one frame once the caches have synced and returns).
    :meth:`wait_for` lets a caller wait for a state of the rollout, as drawn.
    """

    def __init__(
        self,
        client: Reader,
        namespace: str,
        name: str,
        *,
        console: Console | None = None,
        header: tuple[str, ...] = (),
        max_events: int = 8,
        max_redraws_per_second: float = 10.0,
        clock: Clock | None = None,
    ) -> None:
        self.namespace = namespace
        self.name = name
        self.header = header
        self._console = console or Console()
        self._max_events = max_events
        self._min_interval = 1.0 / max_redraws_per_second
        self._clock = clock or RealClock()
        self._notice = ""
        self._factory = SharedInformerFactory(client, namespace=namespace)
        self._deployments = self._factory.for_resource(
            DEPLOYMENTS, field_selector=f"metadata.name={name}"
        )
        self._replicasets = self._factory.for_resource(REPLICASETS)
        self._events = (
            self._factory.for_resource(
                EVENTS, field_selector=f"involvedObject.kind=Deployment,involvedObject.name={name}"
            ),
            self._factory.for_resource(EVENTS, field_selector="involvedObject.kind=ReplicaSet"),
        )
        # Set by every informer notification and notice change; cleared by the redraw task.
        self._dirty = asyncio.Event()
        self._synced = False
        self._last = self.snapshot()
        # Notified after each redraw, with _last updated: what wait_for waits on.
        self._drawn = asyncio.Condition()
        handler = ResourceEventHandlerFuncs(
            add_func=self._on_change,
            update_func=self._on_change,
            delete_func=self._on_change,
        )
        for informer in self._informers():
            informer.add_event_handler(handler)

    @property
    def notice(self) -> str:
        """The line under the Deployment (setting it redraws)."""
        return self._notice

    @notice.setter
    def notice(self, text: str) -> None:
        self._notice = text
        self._dirty.set()

    @property
    def last_snapshot(self) -> Snapshot:
        """The snapshot drawn last."""
        return self._last

    def snapshot(self) -> Snapshot:
        """A snapshot of the caches now."""
        return take_snapshot(
            self.namespace,
            self.name,
            deployments=self._deployments.lister().list(),
            replicasets=self._replicasets.lister().list(),
            events=[e for informer in self._events for e in informer.lister().list()],
            now=self._clock.wall(),
            max_events=self._max_events,
            synced=self._synced,
            header=self.header,
            notice=self._notice,
        )

    async def wait_for(self, predicate: Callable[[Snapshot], bool]) -> Snapshot:
        """Wait until a drawn snapshot satisfies ``predicate``; that snapshot."""
        async with self._drawn:
            await self._drawn.wait_for(lambda: predicate(self._last))
            return self._last

    async def run(self, *, once: bool = False) -> None:
        """Run the informers and draw until cancelled; ``once``: print a single frame after
        the caches have synced and return."""
        async with asyncio.TaskGroup() as tasks:
            informers = tasks.create_task(self._factory.run(), name="rollout view informers")
            try:
                if once:
                    await self._factory.wait_for_cache_sync()
                    self._synced = True
                    self._console.print(render(self.snapshot()))
                    return
                with Live(
                    render(self._last),
                    console=self._console,
                    auto_refresh=False,
                    redirect_stdout=False,
                    redirect_stderr=False,
                ) as live:
                    tasks.create_task(self._mark_synced(), name="rollout view sync")
                    await self._redraw(live)
            finally:
                informers.cancel()

    async def _mark_synced(self) -> None:
        await self._factory.wait_for_cache_sync()
        self._synced = True
        self._dirty.set()

    async def _redraw(self, live: Live) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with timeout(self._clock, AGE_TICK):
                    await self._dirty.wait()
            self._dirty.clear()
            self._last = self.snapshot()
            live.update(render(self._last), refresh=True)
            async with self._drawn:
                self._drawn.notify_all()
            await self._clock.sleep(self._min_interval)

    def _on_change(self, *_: Any) -> None:
        self._dirty.set()

    def _informers(self) -> list[SharedIndexInformer]:
        return [self._deployments, self._replicasets, *self._events]
