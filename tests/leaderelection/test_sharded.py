"""Sharded leader election on the fake client and a fake clock: replicas share N shard Leases
fairly, a joining replica gets its share, a stopped one hands its shards over at once, a
failed one's shards are taken after a lease duration, and no shard's work ever runs on two
replicas at once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from kcontrol.client import LEASES
from kcontrol.clock import FakeClock
from kcontrol.errors import ApiConnectionError, Forbidden, LeadershipLost, ServiceUnavailable
from kcontrol.leaderelection import (
    HealthzAdaptor,
    LeaderElectionConfig,
    LeaderElector,
    LeaseLock,
)
from kcontrol.leaderelection._sharded import (
    ELECTION_LABEL,
    MEMBER_GC_LEASES,
    ROLE_LABEL,
    ShardedElection,
    ShardedElectionConfig,
    wait_for_no_shards,
)
from kcontrol.testing import Action, FakeClient, capture_logs

from .clock_helpers import advance, settle

NS = "kube-system"
NAME = "kcm-shards"
LEASE, RENEW, RETRY = 10.0, 5.0, 1.0


class World:
    """Replicas on one fake server; ``running`` maps each shard to the replicas whose work
    for it runs now (never more than one: checked on every start). Another world may share
    the server (``sharing``): replicas configured with another number of shards."""

    def __init__(
        self, shards: int, exclusive_with: str | None = None, sharing: World | None = None
    ) -> None:
        self.exclusive_with = exclusive_with
        self.clock = sharing.clock if sharing is not None else FakeClock()
        self.tracker = (
            sharing.tracker if sharing is not None else FakeClient(clock=self.clock).tracker
        )
        self.shards = shards
        self.running: dict[int, set[str]] = {k: set() for k in range(shards)}
        self.overlaps: list[tuple[int, set[str]]] = []
        self.clients: dict[str, FakeClient] = {}

    def election(self, identity: str) -> ShardedElection:
        client = FakeClient(clock=self.clock, tracker=self.tracker)
        self.clients[identity] = client
        return ShardedElection(
            ShardedElectionConfig(
                client=client,
                namespace=NS,
                name=NAME,
                identity=identity,
                shards=self.shards,
                lease_duration=LEASE,
                renew_deadline=RENEW,
                retry_period=RETRY,
                clock=self.clock,
                exclusive_with=self.exclusive_with,
            )
        )

    async def work(self, identity: str, index: int, elector: LeaderElector) -> None:
        assert elector.is_leader()
        holders = self.running[index]
        if holders:
            self.overlaps.append((index, {*holders, identity}))
        holders.add(identity)
        try:
            await asyncio.get_running_loop().create_future()
        finally:
            holders.discard(identity)

    def held(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for index, who in self.running.items():
            for identity in who:
                out.setdefault(identity, []).append(index)
        return {k: sorted(v) for k, v in sorted(out.items())}

    @contextlib.asynccontextmanager
    async def replica(self, identity: str) -> AsyncIterator[asyncio.Task[None]]:
        election = self.election(identity)
        task = asyncio.create_task(
            election.run(lambda index, elector: self.work(identity, index, elector))
        )
        try:
            yield task
        finally:
            if not task.done():
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError, LeadershipLost):
                await task
            await settle()


async def test_replicas_share_the_shards_and_hand_them_over() -> None:
    world = World(shards=3)
    async with world.replica("a"):
        await advance(world.clock, 3)
        assert world.held() == {"a": [0, 1, 2]}
        leases = world.tracker.list(LEASES, namespace=NS)["items"]
        roles = sorted(lease["metadata"]["labels"][ROLE_LABEL] for lease in leases)
        assert roles == ["member", "shard", "shard", "shard"]
        assert {lease["metadata"]["labels"][ELECTION_LABEL] for lease in leases} == {NAME}

        async with world.replica("b"):
            await advance(world.clock, 6)
            assert world.held() == {"a": [0, 1], "b": [2]}, "a gives b its share at once"

            async with world.replica("c"):
                await advance(world.clock, 6)
                assert world.held() == {"a": [0], "b": [2], "c": [1]}
            # c stopped and released its Leases: a, whose share grew back, takes c's shard at
            # once (well within a lease duration)
            await advance(world.clock, 3)
            assert world.held() == {"a": [0, 1], "b": [2]}
        await advance(world.clock, 3)
        assert world.held() == {"a": [0, 1, 2]}
    assert world.overlaps == [], "no shard ever worked on by two replicas at once"


async def test_the_shards_of_a_replica_that_fails_are_taken_after_a_lease_duration() -> None:
    world = World(shards=2)
    async with world.replica("a"), world.replica("b") as b_task:
        await advance(world.clock, 6)
        assert world.held() == {"a": [0], "b": [1]}

        async def down(action: Action) -> None:
            raise ServiceUnavailable("b cannot reach the API server")

        world.clients["b"].prepend_reactor("*", "*", down)
        await advance(world.clock, RENEW + 2)
        assert world.held() == {"a": [0]}, "b stopped its work once it could not renew"
        assert b_task.done() and isinstance(b_task.exception(), LeadershipLost)
        await advance(world.clock, LEASE + 3)
        assert world.held() == {"a": [0, 1]}, "a took b's shard once b's Lease expired"
    assert world.overlaps == []


async def test_a_shard_whose_lease_names_this_replica_is_renewed_not_left_idle() -> None:
    """Issue 35.4: a's renewals of shard 0 time out on the client but are applied on the
    server until a gives up leading it (its release is lost); the Lease, still naming a and
    fresh, must not count as held by a (no work runs for it): a renews it at once, as
    client-go's elector renews a Lease naming itself, rather than leave it idle for a lease
    duration."""
    world = World(shards=2)
    async with world.replica("a"), world.replica("b"):
        await advance(world.clock, 6)
        assert world.held() == {"a": [0], "b": [1]}
        shard = f"{NAME}-shard-0-of-2"

        async def applied_then_timed_out(action: Action) -> None:
            if action.name != shard:
                return
            assert action.object is not None
            if action.object["spec"].get("holderIdentity") == "a":  # renewals land
                world.tracker.update(LEASES, action.object, namespace=NS)
            raise ApiConnectionError("the response never came")  # the release is lost

        world.clients["a"].prepend_reactor("update", LEASES, applied_then_timed_out)
        await advance(world.clock, RENEW + 1)
        assert world.held() == {"b": [1]}, "a stopped shard 0 once it could not renew"
        holder = world.tracker.get(LEASES, shard, namespace=NS)["spec"]["holderIdentity"]
        assert holder == "a", "the server applied the renewals"
        world.clients["a"]._reactors.clear()  # the network heals
        await advance(world.clock, 3 * RETRY)
        assert world.held() == {"a": [0], "b": [1]}, "a renewed its own Lease within rounds"
    assert world.overlaps == []


async def test_liveness_fails_when_a_shard_lease_renewal_is_stuck() -> None:
    """Issue 35.5: /livez of a sharded replica (HealthzAdaptor over the election) fails once
    a Lease it leads - here a shard's - has gone unrenewed for its lease duration plus the
    tolerance: a renew loop stuck on a request that ignores cancellation."""
    world = World(shards=2)
    election = world.election("a")
    healthz = HealthzAdaptor(timeout=2.0)
    healthz.set_leader_election(election)
    unblock = asyncio.Event()

    async def stuck(action: Action) -> None:
        if action.name != f"{NAME}-shard-1-of-2":
            return
        while not unblock.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await unblock.wait()

    task = asyncio.create_task(election.run(lambda i, e: world.work("a", i, e)))
    try:
        await advance(world.clock, 3)
        assert world.held() == {"a": [0, 1]}
        assert healthz.check()
        world.clients["a"].prepend_reactor("update", LEASES, stuck)
        await advance(world.clock, LEASE)
        assert healthz.check(), "within the tolerance"
        await advance(world.clock, 3.0)
        assert not healthz.check(), "shard 1's renewals have been stuck too long"
    finally:
        unblock.set()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, LeadershipLost):
            await task
    assert healthz.check(), "an election that stopped leads nothing"


async def test_member_leases_of_replicas_long_gone_are_deleted() -> None:
    world = World(shards=1)
    async with world.replica("a"), world.replica("b") as b_task:
        await advance(world.clock, 4)

        async def down(action: Action) -> None:
            raise ServiceUnavailable("b is gone")

        world.clients["b"].prepend_reactor("*", "*", down)
        await advance(world.clock, 12 * LEASE)
        assert b_task.done()
        members = [
            lease
            for lease in world.tracker.list(LEASES, namespace=NS)["items"]
            if lease["metadata"]["labels"][ROLE_LABEL] == "member"
        ]
        assert [m["spec"]["holderIdentity"] for m in members] == ["a"]


SINGLE = NAME
"""The Lease of a non-sharded leader doing the same work (kcontrol-manager --shards=1)."""


class SingleLeader:
    """A non-sharded manager's election on ``SINGLE``: once leading, it waits for the shards
    to be given back (:func:`wait_for_no_shards`), then works (``working``)."""

    def __init__(self, world: World, identity: str) -> None:
        self.world = world
        client = FakeClient(clock=world.clock, tracker=world.tracker)
        self.elector = LeaderElector(
            LeaderElectionConfig(
                lock=LeaseLock(client, NS, SINGLE, identity),
                lease_duration=LEASE,
                renew_deadline=RENEW,
                retry_period=RETRY,
                clock=world.clock,
            )
        )
        self.client = client
        self.working = False
        self.saw_shards_at_work: list[dict[str, list[int]]] = []

    async def lead(self) -> None:
        await wait_for_no_shards(
            self.client, NS, NAME, lease_duration=LEASE, retry_period=RETRY, clock=self.world.clock
        )
        self.working = True
        try:
            while True:  # every tick of its work, no shard's work may run
                if self.world.held():
                    self.saw_shards_at_work.append(self.world.held())
                await self.world.clock.sleep(0.25)
        finally:
            self.working = False

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        task = asyncio.create_task(self.elector.run(self.lead))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await settle()


async def test_a_single_leader_and_sharded_replicas_never_work_at_once() -> None:
    """A restart from --shards=3 to one leader and back, replicas of both kinds overlapping:
    the single leader works only once every shard was given back, and the sharded replicas
    take their shards again only once it let its Lease go."""
    world = World(shards=3, exclusive_with=SINGLE)
    single = SingleLeader(world, "single")
    async with world.replica("a"):
        await advance(world.clock, 3)
        assert world.held() == {"a": [0, 1, 2]}
        async with single.running():
            await advance(world.clock, 6)
            assert world.held() == {}, "a gave every shard back"
            assert single.working
            await advance(world.clock, 10)
            assert world.held() == {}, "and takes none while the single leader holds its Lease"
        assert not single.working
        await advance(world.clock, 3)  # it released its Lease on stopping: a goes on at once
        assert world.held() == {"a": [0, 1, 2]}
    assert single.saw_shards_at_work == []
    assert world.overlaps == []


async def test_sharded_replicas_joining_a_single_leader_take_no_shard() -> None:
    world = World(shards=2, exclusive_with=SINGLE)
    single = SingleLeader(world, "single")
    async with single.running():
        await advance(world.clock, 2)
        assert single.working
        async with world.replica("a"), world.replica("b"):
            await advance(world.clock, 10)
            assert world.held() == {}
    assert single.saw_shards_at_work == []


async def test_replicas_configured_with_fewer_shards_win_and_never_overlap() -> None:
    """A rolling change from --shards=3 to --shards=2 and back: the replicas with fewer shards
    win; the others give every shard back first, and no work of the two kinds ever runs at
    the same time (their ranges overlap)."""
    three = World(shards=3)
    two = World(shards=2, sharing=three)
    mixed: list[tuple[dict[str, list[int]], dict[str, list[int]]]] = []

    async def watch() -> None:
        while True:
            if three.held() and two.held():
                mixed.append((three.held(), two.held()))
            await three.clock.sleep(0.25)

    watcher = asyncio.create_task(watch())
    try:
        async with three.replica("a"):
            await advance(three.clock, 3)
            assert three.held() == {"a": [0, 1, 2]}
            async with two.replica("b"):
                await advance(three.clock, 10)
                assert three.held() == {}, "a gave every shard back"
                assert two.held() == {"b": [0, 1]}
            await advance(three.clock, 4)
            assert three.held() == {"a": [0, 1, 2]}, "and took them again once b let go"
        async with two.replica("b"):
            await advance(three.clock, 3)
            async with three.replica("a"):
                await advance(three.clock, 10)
                assert three.held() == {}, "a takes nothing while b's Leases are live"
                assert two.held() == {"b": [0, 1]}
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    assert mixed == [], mixed[:3]
    assert three.overlaps == two.overlaps == []


async def test_shard_leases_of_an_earlier_shard_count_are_deleted_once_stale() -> None:
    """Issue 35.5: after a change from --shards=3 to --shards=2, the released shard Leases of
    3 stay unchanged; once they have for MEMBER_GC_LEASES lease durations a replica of 2
    deletes them. Its own shards' Leases stay."""
    three = World(shards=3)
    two = World(shards=2, sharing=three)
    async with three.replica("a"):
        await advance(three.clock, 3)
        assert three.held() == {"a": [0, 1, 2]}
    async with two.replica("b"):
        await advance(three.clock, 3)

        def shard_leases() -> list[str]:
            return sorted(
                lease["metadata"]["name"]
                for lease in three.tracker.list(LEASES, namespace=NS)["items"]
                if lease["metadata"]["labels"][ROLE_LABEL] == "shard"
            )

        old = [f"{NAME}-shard-{k}-of-3" for k in range(3)]
        new = [f"{NAME}-shard-{k}-of-2" for k in range(2)]
        assert shard_leases() == sorted(old + new)
        await advance(three.clock, (MEMBER_GC_LEASES - 1) * LEASE)
        assert shard_leases() == sorted(old + new), "not before they are stale"
        await advance(three.clock, 2 * LEASE)
        assert shard_leases() == new
        assert two.held() == {"b": [0, 1]}


async def test_a_replica_forbidden_to_read_the_single_lease_says_why_once() -> None:
    """Issue 35.5: without 'get' on the single leader's Lease a replica cannot rule out a
    non-sharded leader, so it takes no shard - and says so once, as an error naming the
    Lease and the permission, not as a warning every round."""
    world = World(shards=2, exclusive_with=SINGLE)

    async def forbidden(action: Action) -> None:
        if action.name == SINGLE:
            raise Forbidden(f'leases.coordination.k8s.io "{SINGLE}" is forbidden')

    with capture_logs() as logs:
        async with world.replica("a"):
            world.clients["a"].prepend_reactor("get", LEASES, forbidden)
            await advance(world.clock, 10 * RETRY)
            assert world.held() == {}
            world.clients["a"]._reactors.clear()
            await advance(world.clock, 3 * RETRY)
            assert world.held() == {"a": [0, 1]}, "it takes its shards once it may read"
    said = [entry for entry in logs if "forbidden to read" in entry["event"]]
    assert len(said) == 1, said
    assert said[0]["log_level"] == "error"
    assert said[0]["lease"] == f"{NS}/{SINGLE}"
    assert "grant 'get' on Leases" in said[0]["event"]
