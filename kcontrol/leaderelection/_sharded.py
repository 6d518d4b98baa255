"""Sharded leader election: ``N`` shard Leases held by a fair share of the live replicas
(issue 24), each shard's work guarded by its own Lease exactly as a single leader's is.

Every replica runs :meth:`ShardedElection.run`:

- it holds a member Lease of its own, ``<name>-member-<hash of its identity>`` (labelled
  :data:`ELECTION_LABEL` = ``<name>``, :data:`ROLE_LABEL` = ``member``), renewed as a leader's;
- every ``retry_period`` it lists the election's Leases and judges each live or not as a
  :class:`~kcontrol.leaderelection.LeaderElector` judges its own: on its local clock, from
  when it last saw the Lease change - never by comparing the Lease's timestamps with its own
  clock;
- it plans with :func:`~kcontrol.leaderelection._sharding.plan` (fair shares, surplus given
  back, free shards taken) and runs one :class:`LeaderElector` per shard it goes for, on
  ``<name>-shard-<k>`` (labelled ``shard``); while that elector leads, ``work(k, elector)``
  runs under it - cancelled, and awaited, before the shard's Lease is given up or lost, so a
  shard is never worked on by two replicas at once;
- a shard it must give back is cancelled: its work ends, its Lease is released, and a
  replica with room takes it on its next round; a shard lost (renewal failed) is planned for
  again like any free one;
- cancelled (SIGTERM), it ends every shard's work and releases every Lease, its member Lease
  last, so the others take its shards at once;
- member Leases left by replicas that are gone (unchanged for :data:`MEMBER_GC_LEASES` lease
  durations) are deleted, preconditioned on their resourceVersion.

A member Lease that cannot be renewed ends :meth:`ShardedElection.run` with
:class:`LeadershipLost` after every shard's work was cancelled, as a lost single Lease ends
kube-controller-manager.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import LEASES, Client, ListOptions
from kcontrol.clock import Clock, RealClock
from kcontrol.errors import Conflict, KcontrolError, LeadershipLost, NotFound
from kcontrol.leaderelection._config import LeaderElectionConfig, validate_timings
from kcontrol.leaderelection._elector import LeaderElector
from kcontrol.leaderelection._lock import LeaseLock
from kcontrol.leaderelection._sharding import plan
from kcontrol.logging import get_logger

__all__ = [
    "ELECTION_LABEL",
    "MEMBER_GC_LEASES",
    "ROLE_LABEL",
    "ShardWork",
    "ShardedElection",
    "ShardedElectionConfig",
]

_log = get_logger(__name__)

ELECTION_LABEL = "kcontrol.io/sharded-election"
"""The label naming the election a Lease belongs to."""

ROLE_LABEL = "kcontrol.io/sharded-election-role"
"""``member`` or ``shard``."""

MEMBER_GC_LEASES = 10
"""Lease durations a member Lease must stay unchanged before another replica deletes it."""

ShardWork = Callable[[int, LeaderElector], Awaitable[None]]
"""The work of shard ``k``, given the elector whose Lease guards it (for a write gate)."""


@dataclass(frozen=True, slots=True)
class ShardedElectionConfig:
    """The election ``name`` over ``shards`` Leases in ``namespace``; ``identity`` is this
    replica's (unique among the replicas); the timings are each Lease's, as for
    :class:`~kcontrol.leaderelection.LeaderElectionConfig`."""

    client: Client
    namespace: str
    name: str
    identity: str
    shards: int
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    clock: Clock = field(default_factory=RealClock)
    registry: CollectorRegistry | None = None

    def __post_init__(self) -> None:
        validate_timings(self.lease_duration, self.renew_deadline, self.retry_period)
        if self.shards < 1:
            raise ValueError(f"shards must be at least 1, not {self.shards}")
        if not self.identity:
            raise ValueError("the identity is empty")


@dataclass(slots=True)
class _Seen:
    marker: tuple[Any, ...]
    since: float  # local clock: when the Lease was last seen to change


class ShardedElection:
    """See the module docstring. :meth:`run` blocks until cancelled; :attr:`held` is the set
    of shards whose work runs now."""

    def __init__(self, config: ShardedElectionConfig) -> None:
        self._config = config
        self._seen: dict[str, _Seen] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._electors: dict[int, LeaderElector] = {}
        self._log = _log.bind(election=config.name, identity=config.identity)

    @property
    def held(self) -> frozenset[int]:
        return frozenset(k for k, e in self._electors.items() if e.is_leader())

    def shard_lease_name(self, index: int) -> str:
        return f"{self._config.name}-shard-{index}"

    def member_lease_name(self) -> str:
        digest = hashlib.sha256(self._config.identity.encode()).hexdigest()[:16]
        return f"{self._config.name}-member-{digest}"

    async def run(self, work: ShardWork) -> None:
        """Take part in the election until cancelled (module docstring)."""
        member = self._elector(self.member_lease_name(), "member")
        try:
            async with asyncio.TaskGroup() as outer:
                membership = outer.create_task(member.run(), name="member lease")
                try:
                    await member.elected.wait()
                    async with asyncio.TaskGroup() as shards:
                        while True:
                            await self._round(work, shards)
                            await self._config.clock.sleep(self._config.retry_period)
                finally:  # every shard's work has ended: the member Lease goes last
                    membership.cancel()
        except BaseExceptionGroup as errors:
            lost = [e for e in errors.exceptions if isinstance(e, LeadershipLost)]
            if lost and len(lost) == len(errors.exceptions):
                raise lost[0] from None
            raise
        finally:
            self._tasks.clear()
            self._electors.clear()

    # -- one round ---------------------------------------------------------------------------

    async def _round(self, work: ShardWork, group: asyncio.TaskGroup) -> None:
        config = self._config
        try:
            members, holders = await self._observe()
        except KcontrolError as error:
            self._log.warning("cannot list the election's Leases", error=str(error))
            return
        for index, elector in self._electors.items():  # fresher than the list
            if elector.is_leader():
                holders[index] = config.identity
        step = plan(config.shards, config.identity, members, holders)
        for index in step.release:
            self._log.info("giving a shard back", shard=index)
        await self._stop(step.release)  # together: their work may end in one step
        for index, task in list(self._tasks.items()):
            if index not in step.acquire and not self._electors[index].is_leader():
                await self._stop((index,))  # another replica got it first
            elif task.done():
                del self._tasks[index], self._electors[index]
        for index in step.acquire:
            if index not in self._tasks:
                self._start(index, work, group)

    async def _observe(self) -> tuple[set[str], dict[int, str | None]]:
        """The live members and each shard's live holder, from one LIST."""
        config = self._config
        page = await config.client.list(
            LEASES,
            namespace=config.namespace,
            options=ListOptions(label_selector=f"{ELECTION_LABEL}={config.name}"),
        )
        now = config.clock.now()
        members: set[str] = {config.identity}
        holders: dict[int, str | None] = {}
        names = set()
        for lease in page.get("items") or []:
            metadata = lease.get("metadata") or {}
            spec = lease.get("spec") or {}
            name = str(metadata.get("name") or "")
            names.add(name)
            holder = spec.get("holderIdentity") or None
            duration = float(spec.get("leaseDurationSeconds") or config.lease_duration)
            marker = (holder, spec.get("renewTime"), spec.get("leaseDurationSeconds"))
            seen = self._seen.get(name)
            if seen is None or seen.marker != marker:
                seen = self._seen[name] = _Seen(marker, now)
            live = holder is not None and now < seen.since + duration
            role = (metadata.get("labels") or {}).get(ROLE_LABEL)
            if role == "member":
                if live and holder is not None:
                    members.add(holder)
                elif now >= seen.since + MEMBER_GC_LEASES * duration:
                    await self._delete_member(lease)
            elif role == "shard":
                index = _shard_index(name, config.name)
                if index is not None and index < config.shards:
                    holders[index] = holder if live else None
        for gone in set(self._seen) - names:
            del self._seen[gone]
        return members, holders

    async def _delete_member(self, lease: dict[str, Any]) -> None:
        metadata = lease.get("metadata") or {}
        with contextlib.suppress(NotFound, Conflict):  # renewed or deleted meanwhile
            await self._config.client.delete(
                LEASES,
                str(metadata.get("name")),
                namespace=self._config.namespace,
                preconditions={"resourceVersion": str(metadata.get("resourceVersion") or "")},
            )
            self._log.info("deleted the member Lease of a replica gone", lease=metadata.get("name"))

    # -- shard tasks -------------------------------------------------------------------------

    def _start(self, index: int, work: ShardWork, group: asyncio.TaskGroup) -> None:
        elector = self._elector(self.shard_lease_name(index), "shard")
        self._electors[index] = elector
        self._tasks[index] = group.create_task(
            self._shard(index, elector, work), name=f"shard {index}"
        )

    async def _shard(self, index: int, elector: LeaderElector, work: ShardWork) -> None:
        try:
            await elector.run(lambda: work(index, elector))
        except LeadershipLost as lost:  # planned again like any free shard
            self._log.warning("lost a shard", shard=index, error=str(lost))

    async def _stop(self, indexes: tuple[int, ...]) -> None:
        """Cancel the work of ``indexes`` at once and wait for all of it to end."""
        stopping = []
        for index in indexes:
            task = self._tasks.pop(index, None)
            self._electors.pop(index, None)
            if task is not None and not task.done():
                task.cancel()
                stopping.append(task)
        if stopping:
            await asyncio.wait(stopping)

    def _elector(self, lease: str, role: str) -> LeaderElector:
        config = self._config
        lock = LeaseLock(
            config.client,
            config.namespace,
            lease,
            config.identity,
            labels={ELECTION_LABEL: config.name, ROLE_LABEL: role},
        )
        return LeaderElector(
            LeaderElectionConfig(
                lock=lock,
                lease_duration=config.lease_duration,
                renew_deadline=config.renew_deadline,
                retry_period=config.retry_period,
                name=lease,
                clock=config.clock,
                registry=config.registry,
            )
        )


def _shard_index(lease: str, election: str) -> int | None:
    prefix = f"{election}-shard-"
    if not lease.startswith(prefix) or not lease[len(prefix) :].isdigit():
        return None
    return int(lease[len(prefix) :])
