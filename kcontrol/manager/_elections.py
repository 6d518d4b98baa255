"""What decides whether a manager's controllers may run: no election, one Lease, or shards.

The manager runs "an election of some kind" (:class:`Election`) without branching on which.
Each kind gives the write gate its controllers' clients pass (``None`` without one) and runs
the controllers through :class:`ControllerSets`, the manager's side: building a set of
controllers over some shards (their informers, event queues and runnables) and running them
guarded.

- :class:`Unelected` (``--leader-elect=false``): one set over everything, run until
  cancelled.
- :class:`SingleLeader`: one set, built before the election so that its caches warm up on a
  standby; its controllers run while the Lease is held, guarded by the elector's local view
  of it, after any sharded replicas of the same name have given their shards back.
- :class:`ShardedLeaders` (``--shards=N``): a set per membership of held shards (a
  *generation*), built once shards are held and anew when the held set changes; each set's
  informers select the held shards and list first with a consistent read, and its
  controllers sync only the keys of those shards.

:meth:`Election.run` returns only when leadership is lost (``LeadershipLost`` is the
manager's to raise), after every controller has stopped; cancelled, it drains the controllers
(bounded by ``--graceful-shutdown-timeout``) and gives every Lease back.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kcontrol.client import Client, ShardSelector, WriteGate
from kcontrol.events import EventBroadcaster
from kcontrol.informers import SharedInformerFactory, split_meta_namespace_key
from kcontrol.leaderelection import (
    ELECTION_LABEL,
    LeaderElectionOptions,
    LeaderElector,
    LeadershipLost,
    ShardedElection,
    ShardSet,
    server_filters_shards,
    wait_for_no_shards,
)
from kcontrol.logging import get_logger
from kcontrol.manager._registry import Runnable

__all__ = [
    "SHARD_REBUILD_QUIET",
    "ControllerSet",
    "ControllerSets",
    "Election",
    "ShardedLeaders",
    "SingleLeader",
    "Unelected",
]

_log = get_logger("kcontrol.manager._manager")

SHARD_REBUILD_QUIET = 1.0
"""Sharded: how long the held shards must stay unchanged before the controllers are built
anew over them (the shards won in one election round come together)."""

Gate = tuple[WriteGate, str]
"""A write gate and the name its refusals give."""


@dataclass(frozen=True, slots=True)
class ControllerSet:
    """Controllers built over one selection of shards: their shared informers, the event
    broadcasters of their recorders, and the runnables."""

    informers: SharedInformerFactory
    broadcasters: Sequence[EventBroadcaster]
    runnables: Sequence[tuple[str, Runnable]]

    async def run_caches(self) -> None:
        """Run the informers and the event queues until cancelled."""
        async with asyncio.TaskGroup() as group:
            for broadcaster in self.broadcasters:
                group.create_task(broadcaster.run(), name=f"events {broadcaster.component}")
            group.create_task(self.informers.run(), name="informers")


class ControllerSets(Protocol):
    """The manager's side of an election."""

    def build(self, shard: ShardSelector | None) -> ControllerSet:
        """Build every enabled controller, over ``shard`` (``None``: every object)."""
        ...

    def retire(self, built: ControllerSet) -> None:
        """``built`` has stopped for good (its caches are dropped)."""
        ...

    async def run_controllers(
        self,
        built: ControllerSet,
        guard: Callable[[], bool] | None,
        owns: Callable[[str], bool] | None = None,
    ) -> None:
        """Run ``built``'s controllers until cancelled, syncing while ``guard()`` holds and
        only the keys ``owns`` accepts (:func:`~kcontrol.controller.guarded_by`)."""
        ...


class Election(Protocol):
    """One kind of election (module docstring)."""

    @property
    def gate(self) -> Gate | None:
        """The write gate of the controllers' clients, ``None`` when writes are not gated."""
        ...

    async def run(self, sets: ControllerSets) -> None:
        """Run the controllers as this kind of election allows; return once leadership is
        lost, after every controller has stopped (module docstring)."""
        ...


class Unelected:
    """No leader election: the controllers run from the start, until cancelled."""

    gate: Gate | None = None

    async def run(self, sets: ControllerSets) -> None:
        built = sets.build(None)
        async with _caches_of(built, sets):
            await sets.run_controllers(built, guard=None)


class SingleLeader:
    """One Lease, kube-controller-manager's election (module docstring)."""

    def __init__(
        self, elector: LeaderElector, client: Client, options: LeaderElectionOptions
    ) -> None:
        self._elector = elector
        self._client = client
        self._options = options
        self.gate: Gate | None = (
            lambda _namespace: elector.holds_lease(),
            f"leader election lease {elector.config.lock.describe()}",
        )

    async def run(self, sets: ControllerSets) -> None:
        elector, options = self._elector, self._options
        built = sets.build(None)  # before the election: caches warm up on standbys too

        async def lead() -> None:
            # Sharded replicas of the same name (a restart from --shards=N) give their
            # shards back on seeing this Lease held; nothing runs before they have.
            await wait_for_no_shards(
                self._client,
                options.resource_namespace,
                options.resource_name,
                lease_duration=options.lease_duration,
                retry_period=options.retry_period,
            )
            # holds_lease: leading, and the last renewal younger than the renew deadline on
            # the local clock - false at once after a pause (SIGSTOP) past the lease, and
            # the moment leadership is lost.
            await sets.run_controllers(built, guard=elector.holds_lease)

        async with _caches_of(built, sets):
            _log.info("attempting to acquire leader lease", lock=elector.config.lock.describe())
            with contextlib.suppress(LeadershipLost):
                await elector.run(lead)
            _log.error(
                "leader election lost; every controller has stopped", identity=elector.identity
            )


class ShardedLeaders:
    """Shards of the namespaces held through a Lease each (module docstring;
    :class:`~kcontrol.leaderelection.ShardedElection`, :class:`~kcontrol.leaderelection.ShardSet`).
    """

    def __init__(
        self,
        election: ShardedElection,
        shards: ShardSet,
        client: Client,
        options: LeaderElectionOptions,
    ) -> None:
        self._election = election
        self._shards = shards
        self._client = client
        self._options = options
        self.gate: Gate | None = (
            shards.allows,
            f"shard Leases {options.resource_namespace}/"
            f"{options.resource_name}-shard-*-of-{options.shards}",
        )

    async def run(self, sets: ControllerSets) -> None:
        shards, options = self._shards, self._options

        async def generations() -> None:
            # One controller set at a time, over the shards held when it was built; a
            # shard given back waits in ShardSet.work until the set covering it stopped.
            async with asyncio.TaskGroup() as group:
                running: asyncio.Task[None] | None = None
                try:
                    while True:
                        held = await shards.changes(SHARD_REBUILD_QUIET)
                        if running is not None and held == shards.running:
                            continue
                        if running is not None:
                            await _cancel_and_wait(running)
                            running = None
                            await shards.set_running(())
                        if held:
                            await self._check_filtering()
                            running = group.create_task(
                                self._generation(sets, held), name="controllers over shards"
                            )
                            await shards.set_running(held)
                finally:
                    if running is not None:
                        await _cancel_and_wait(running)
                    await shards.set_running(())

        _log.info(
            "taking part in the sharded election",
            shards=shards.count,
            leases=f"{options.resource_namespace}/"
            f"{options.resource_name}-shard-*-of-{options.shards}",
        )
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(generations(), name="shard generations")
                await self._election.run(shards.work)
        except* LeadershipLost:
            _log.error("the member Lease was lost; every controller has stopped")

    async def _generation(self, sets: ControllerSets, held: frozenset[int]) -> None:
        """Build the controllers over the shards ``held`` and run them until cancelled: the
        controllers stop first (their syncs drained), then the informers and event queues."""
        shards = self._shards
        built = sets.build(shards.selector(held))
        _log.info(
            "running the controllers over shards",
            shards=",".join(str(k) for k in sorted(held)),
            of=shards.count,
            filtering=shards.filtering,
        )
        async with _caches_of(built, sets):
            await sets.run_controllers(built, guard=shards.leading, owns=_keys_in(shards, held))

    async def _check_filtering(self) -> None:
        """Once: find out whether the API server filters by shard, log it and say so in
        ``kcontrol_manager_shard_filtering`` (the informers are correct either way)."""
        shards, options = self._shards, self._options
        if shards.filtering is not None:
            return
        filters = await server_filters_shards(
            self._client,
            options.resource_namespace,
            f"{ELECTION_LABEL}={options.resource_name}",
        )
        shards.set_filtering("server" if filters else "client")
        if filters:
            _log.info("the API server filters lists and watches by shard", shards=shards.count)
        else:
            _log.warning(
                "the API server does not filter by shard (feature gate ShardedListAndWatch off, "
                "or older than v1.36): every replica receives every object and keeps its "
                "shards' here",
                shards=shards.count,
            )


@contextlib.asynccontextmanager
async def _caches_of(built: ControllerSet, sets: ControllerSets) -> AsyncIterator[None]:
    """Run ``built``'s informers and event queues around the body (the controllers), stop
    them once it has ended - so the controllers' last syncs still read and record - and then
    retire the set."""
    try:
        async with asyncio.TaskGroup() as group:
            caches = group.create_task(built.run_caches(), name="caches")
            try:
                yield
            finally:
                caches.cancel()
    finally:
        sets.retire(built)


def _keys_in(shards: ShardSet, held: frozenset[int]) -> Callable[[str], bool]:
    """Whether a queue key (``namespace/name``, or ``name`` cluster-scoped) belongs to one of
    the shards ``held``: its namespace's, the cluster-scoped objects' that ``""`` hashes into
    (docs/manager/sharding.md)."""

    def owns(key: str) -> bool:
        namespace, _ = split_meta_namespace_key(key)
        return shards.index_of(namespace) in held

    return owns


async def _cancel_and_wait(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.wait((task,))
