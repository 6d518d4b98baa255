"""Sharded leader election: ``N`` shard Leases held by a fair share of the live replicas
(issue 24), each shard's work guarded by its own Lease exactly as a single leader's is.

Every replica runs :meth:`ShardedElection.run`:

- it holds a member Lease of its own, ``<name>-member-<hash of its identity>`` (labelled
  :data:`ELECTION_LABEL` = ``<name>``, :data:`ROLE_LABEL` = ``member``, :data:`SHARDS_LABEL`
  = ``N``), renewed as a leader's;
- every ``retry_period`` it lists the election's Leases and judges each live or not as a
  :class:`~kcontrol.leaderelection.LeaderElector` judges its own: on its local clock, from
  when it last saw the Lease change - never by comparing the Lease's timestamps with its own
  clock;
- it plans with :func:`~kcontrol.leaderelection._sharding.plan` (fair shares among the live
  members with the same ``N``, surplus given back, free shards taken) and runs one
  :class:`LeaderElector` per shard it goes for, on ``<name>-shard-<k>-of-<N>`` (labelled
  ``shard``); while that elector leads, ``work(k, elector)`` runs under it - cancelled, and
  awaited, before the shard's Lease is given up or lost, so a shard is never worked on by
  two replicas at once;
- a shard it must give back is cancelled: its work ends, its Lease is released, and a
  replica with room takes it on its next round; a shard lost (renewal failed) is planned for
  again like any free one;
- cancelled (SIGTERM), it ends every shard's work and releases every Lease, its member Lease
  last, so the others take its shards at once;
- member Leases left by replicas that are gone, and unheld shard Leases of another number of
  shards (a ``--shards`` value since changed), unchanged for :data:`MEMBER_GC_LEASES` lease
  durations, are deleted, preconditioned on their resourceVersion.

Replicas configured differently may overlap during a restart (a rolling update from
``--shards=3`` to ``--shards=6``, or to a single leader): their ranges differ, so they must
never work at the same time. **The fewer shards win**: a replica takes no shard, and gives
back every shard it holds, while a live non-sharded leader holds
:attr:`ShardedElectionConfig.exclusive_with` (one shard) or live replicas with fewer shards
hold shard Leases; and once a shard's Lease is its own, it starts the work only after
checking that again and after waiting for replicas with more shards to give theirs back.
The non-sharded leader's side is :func:`wait_for_no_shards`. Each side writes its own Lease
and then reads the others', so of two that start together at least one sees the other.

A member Lease that cannot be renewed ends :meth:`ShardedElection.run` with
:class:`LeadershipLost` after every shard's work was cancelled, as a lost single Lease ends
kube-controller-manager.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import LEASES, Client, ListOptions
from kcontrol.clock import Clock, RealClock
from kcontrol.errors import Conflict, Forbidden, KcontrolError, LeadershipLost, NotFound
from kcontrol.leaderelection._config import LeaderElectionConfig, validate_timings
from kcontrol.leaderelection._elector import LeaderElector
from kcontrol.leaderelection._lock import LeaseLock
from kcontrol.leaderelection._sharding import plan
from kcontrol.logging import get_logger

__all__ = [
    "ELECTION_LABEL",
    "MEMBER_GC_LEASES",
    "ROLE_LABEL",
    "SHARDS_LABEL",
    "ShardWork",
    "ShardedElection",
    "ShardedElectionConfig",
    "shard_lease_name",
    "wait_for_no_shards",
]

_log = get_logger(__name__)

ELECTION_LABEL = "kcontrol.io/sharded-election"
"""The label naming the election a Lease belongs to."""

ROLE_LABEL = "kcontrol.io/sharded-election-role"
"""``member`` or ``shard``."""

SHARDS_LABEL = "kcontrol.io/sharded-election-shards"
"""How many shards the replica that wrote the Lease cuts the work into: replicas of the
election configured with another number do not count each other as members, and the fewer
shards win (module docstring)."""

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
    exclusive_with: str | None = None
    """The single Lease (in ``namespace``) of a non-sharded leader doing the same work:
    while it has a live holder, no shard runs (module docstring; :func:`wait_for_no_shards`
    is its side)."""

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


class _Liveness:
    """Judges Leases live as a :class:`LeaderElector` judges its own: held, and seen to change
    less than its duration ago on the local clock (never comparing the Lease's timestamps
    with this clock)."""

    def __init__(self, clock: Clock, default_duration: float) -> None:
        self._clock = clock
        self._default = default_duration
        self._seen: dict[str, _Seen] = {}

    def holder(self, name: str, lease: Mapping[str, Any] | None) -> str | None:
        """The live holder of ``lease`` (named ``name``; ``None``: it does not exist), or
        ``None``."""
        if lease is None:
            self._seen.pop(name, None)
            return None
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or None
        duration = float(spec.get("leaseDurationSeconds") or self._default)
        marker = (holder, spec.get("renewTime"), spec.get("leaseDurationSeconds"))
        now = self._clock.now()
        seen = self._seen.get(name)
        if seen is None or seen.marker != marker:
            seen = self._seen[name] = _Seen(marker, now)
        return holder if holder is not None and now < seen.since + duration else None

    def unchanged_for(self, name: str) -> float:
        seen = self._seen.get(name)
        return 0.0 if seen is None else self._clock.now() - seen.since

    def forget_all_but(self, names: set[str]) -> None:
        for gone in set(self._seen) - names:
            del self._seen[gone]


class ShardedElection:
    """See the module docstring. :meth:`run` blocks until cancelled; :attr:`held` is the set
    of shards whose work runs now."""

    def __init__(self, config: ShardedElectionConfig) -> None:
        self._config = config
        self._liveness = _Liveness(config.clock, config.lease_duration)
        self._excluded = False
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._electors: dict[int, LeaderElector] = {}
        self._member: LeaderElector | None = None
        # True from a Forbidden reading exclusive_with, said once, to the next successful read.
        self._forbidden = False
        self._log = _log.bind(election=config.name, identity=config.identity)

    @property
    def held(self) -> frozenset[int]:
        return frozenset(k for k, e in self._electors.items() if e.is_leader())

    def check(self, max_tolerable_expired_lease: float) -> bool:
        """The liveness check (:class:`~kcontrol.leaderelection.HealthzAdaptor`): false when
        the member Lease or a shard's Lease is led but has not been renewed for its lease
        duration plus ``max_tolerable_expired_lease`` - a renew loop that is stuck."""
        electors = [*self._electors.values()]
        if self._member is not None:
            electors.append(self._member)
        return all(elector.check(max_tolerable_expired_lease) for elector in electors)

    def shard_lease_name(self, index: int) -> str:
        return shard_lease_name(self._config.name, index, self._config.shards)

    def member_lease_name(self) -> str:
        digest = hashlib.sha256(self._config.identity.encode()).hexdigest()[:16]
        return f"{self._config.name}-member-{digest}"

    async def run(self, work: ShardWork) -> None:
        """Take part in the election until cancelled (module docstring)."""
        member = self._member = self._elector(self.member_lease_name(), "member")
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
            self._member = None

    # -- one round ---------------------------------------------------------------------------

    async def _round(self, work: ShardWork, group: asyncio.TaskGroup) -> None:
        config = self._config
        try:
            members, holders, others = await self._observe()
        except KcontrolError as error:
            self._log.warning("cannot list the election's Leases", error=str(error))
            return
        # A shard counts as this replica's only while its elector leads (fresher than the
        # list). A Lease naming us with no elector leading it - a renewal that timed out here
        # but landed on the server, a release that was lost - is free to plan for: its
        # elector renews a Lease naming itself at once, as client-go's does, instead of
        # leaving it idle for a lease duration and counting it against our share.
        for index, holder in holders.items():
            if holder == config.identity:
                holders[index] = None
        for index, elector in self._electors.items():
            if elector.is_leader():
                holders[index] = config.identity
        winner = await self._winner(others)
        if winner is not None:
            if not self._excluded:
                self._log.warning(
                    "a single leader or replicas with fewer shards hold Leases of this "
                    "election: giving every shard back, taking none until they let go",
                    holders=winner,
                )
            self._excluded = True
            await self._stop(tuple(self._tasks))
            return
        self._excluded = False
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

    async def _observe(self) -> tuple[set[str], dict[int, str | None], dict[int, set[str]]]:
        """From one LIST: the live members, each shard's live holder, and the live holders of
        shard Leases of replicas configured with another number of shards (by that number)."""
        config = self._config
        page = await config.client.list(
            LEASES,
            namespace=config.namespace,
            options=ListOptions(label_selector=f"{ELECTION_LABEL}={config.name}"),
        )
        members: set[str] = {config.identity}
        holders: dict[int, str | None] = {}
        others: dict[int, set[str]] = {}
        names = set()
        for lease in page.get("items") or []:
            metadata = lease.get("metadata") or {}
            labels = metadata.get("labels") or {}
            name = str(metadata.get("name") or "")
            names.add(name)
            holder = self._liveness.holder(name, lease)
            shards = _count(labels.get(SHARDS_LABEL))
            role = labels.get(ROLE_LABEL)
            if role == "member":
                if holder is not None and shards == config.shards:
                    members.add(holder)
                elif self._stale(name, lease):
                    await self._delete(lease, "the member Lease of a replica gone")
            elif role == "shard" and shards == config.shards:
                index = _shard_index(name, config.name, config.shards)
                if index is not None and index < config.shards:
                    holders[index] = holder
            elif role == "shard" and shards is not None and holder is not None:
                others.setdefault(shards, set()).add(holder)
            elif role == "shard" and self._stale(name, lease):
                await self._delete(lease, "a shard Lease of another --shards value, unheld")
        if config.exclusive_with is not None:
            names.add(config.exclusive_with)
        self._liveness.forget_all_but(names)
        return members, holders, others

    def _stale(self, name: str, lease: Mapping[str, Any]) -> bool:
        """Whether ``lease`` has stayed unchanged, as this replica watched it, for
        :data:`MEMBER_GC_LEASES` lease durations (its own or this election's, the longer: a
        released Lease says 1 s)."""
        spec = lease.get("spec") or {}
        duration = max(float(spec.get("leaseDurationSeconds") or 0), self._config.lease_duration)
        return self._liveness.unchanged_for(name) >= MEMBER_GC_LEASES * duration

    async def _winner(self, others: Mapping[int, set[str]]) -> str | None:
        """Who, if anyone, keeps this replica from holding shards: a live non-sharded leader
        on ``exclusive_with`` (one shard: the fewest), else the live holders of shard Leases
        of replicas configured with fewer shards than this one. On an error reading the
        single Lease, this replica's own identity stands for "unknown": nothing may start."""
        config = self._config
        if config.exclusive_with is not None:
            try:
                lease = await config.client.get(
                    LEASES, config.exclusive_with, namespace=config.namespace
                )
            except NotFound:
                lease = None
            except Forbidden as error:
                if not self._forbidden:
                    self._log.error(
                        "forbidden to read the single leader's Lease: this replica takes no "
                        "shard until it may, because it cannot tell whether a non-sharded "
                        "leader (--shards=1) is at work; grant 'get' on Leases in the "
                        "election's namespace (deploy/sharded/)",
                        lease=f"{config.namespace}/{config.exclusive_with}",
                        error=str(error),
                    )
                    self._forbidden = True
                return config.identity
            except KcontrolError as error:
                self._log.warning("cannot read the single leader's Lease", error=str(error))
                return config.identity
            if self._forbidden:
                self._log.info("may read the single leader's Lease now")
                self._forbidden = False
            single = self._liveness.holder(config.exclusive_with, lease)
            if single is not None:
                return single
        fewer = sorted(h for n, holders in others.items() if n < config.shards for h in holders)
        return ",".join(fewer) or None

    async def _may_work(self) -> bool:
        """Checked once a shard's Lease is ours, before its work starts (as the single leader
        checks the shard Leases after acquiring its own: of two such writers, one sees the
        other): false when replicas with fewer shards hold Leases; waits while replicas
        with more shards still do (they give them back on seeing ours)."""
        said = False
        while True:
            try:
                _, _, others = await self._observe()
            except KcontrolError as error:
                self._log.warning("cannot list the election's Leases", error=str(error))
                return False
            if await self._winner(others) is not None:
                return False
            more = sorted(h for n, hs in others.items() if n > self._config.shards for h in hs)
            if not more:
                return True
            if not said:
                self._log.warning(
                    "replicas with more shards still hold Leases of this election: waiting "
                    "for them to give them back",
                    holders=",".join(more),
                )
                said = True
            await self._config.clock.sleep(self._config.retry_period)

    async def _delete(self, lease: dict[str, Any], what: str) -> None:
        """Delete a Lease left behind (``what`` it is, for the log), unless it changed or went
        meanwhile (preconditioned on its resourceVersion). A failure is logged and the
        Lease tried again next round."""
        metadata = lease.get("metadata") or {}
        try:
            await self._config.client.delete(
                LEASES,
                str(metadata.get("name")),
                namespace=self._config.namespace,
                preconditions={"resourceVersion": str(metadata.get("resourceVersion") or "")},
            )
        except (NotFound, Conflict):  # renewed or deleted meanwhile
            return
        except KcontrolError as error:
            self._log.warning(f"cannot delete {what}", lease=metadata.get("name"), error=str(error))
            return
        self._log.info(f"deleted {what}", lease=metadata.get("name"))

    # -- shard tasks -------------------------------------------------------------------------

    def _start(self, index: int, work: ShardWork, group: asyncio.TaskGroup) -> None:
        elector = self._elector(self.shard_lease_name(index), "shard")
        self._electors[index] = elector
        self._tasks[index] = group.create_task(
            self._shard(index, elector, work), name=f"shard {index}"
        )

    async def _shard(self, index: int, elector: LeaderElector, work: ShardWork) -> None:
        async def when_alone() -> None:
            if await self._may_work():
                await work(index, elector)

        try:
            await elector.run(when_alone)
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
            labels={
                ELECTION_LABEL: config.name,
                ROLE_LABEL: role,
                SHARDS_LABEL: str(config.shards),
            },
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


async def wait_for_no_shards(
    client: Client,
    namespace: str,
    name: str,
    *,
    lease_duration: float,
    retry_period: float,
    clock: Clock | None = None,
) -> None:
    """Return once no shard Lease of the sharded election ``name`` in ``namespace`` has a
    live holder: what a non-sharded leader of the same name waits for after acquiring its
    Lease and before it runs anything, so that a restart from sharded replicas to a single
    leader (or back, see :attr:`ShardedElectionConfig.exclusive_with`) never has both at
    work. Leases are judged live on the local clock, as a standby judges. A client that may
    not list Leases returns at once: no sharded election can run with its permissions."""
    clock = clock or RealClock()
    liveness = _Liveness(clock, lease_duration)
    selector = f"{ELECTION_LABEL}={name},{ROLE_LABEL}=shard"
    said = False
    while True:
        try:
            page = await client.list(
                LEASES, namespace=namespace, options=ListOptions(label_selector=selector)
            )
        except Forbidden:
            return
        except KcontrolError as error:
            _log.warning("cannot list the shard Leases", election=name, error=str(error))
        else:
            live = {}
            for lease in page.get("items") or []:
                lease_name = str((lease.get("metadata") or {}).get("name") or "")
                holder = liveness.holder(lease_name, lease)
                if holder is not None:
                    live[lease_name] = holder
            if not live:
                if said:
                    _log.info("the sharded replicas have given every shard back", election=name)
                return
            if not said:
                _log.warning(
                    "sharded replicas still hold shards of this Lease's name: waiting for "
                    "them to give them back before running anything",
                    election=name,
                    holders=",".join(sorted(set(live.values()))),
                )
                said = True
        await clock.sleep(retry_period)


def _count(label: object) -> int | None:
    return int(label) if isinstance(label, str) and label.isdigit() else None


def shard_lease_name(election: str, index: int, shards: int) -> str:
    """The Lease of shard ``index`` of ``shards`` in the election ``election``."""
    return f"{election}-shard-{index}-of-{shards}"


def _shard_index(lease: str, election: str, shards: int) -> int | None:
    prefix, suffix = f"{election}-shard-", f"-of-{shards}"
    if not lease.startswith(prefix) or not lease.endswith(suffix):
        return None
    index = lease[len(prefix) : len(lease) - len(suffix)]
    return int(index) if index.isdigit() else None
