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
from kcontrol.errors import LeadershipLost, ServiceUnavailable
from kcontrol.leaderelection import LeaderElector
from kcontrol.leaderelection._sharded import (
    ELECTION_LABEL,
    ROLE_LABEL,
    ShardedElection,
    ShardedElectionConfig,
)
from kcontrol.testing import FakeClient
from kcontrol.testing._actions import Action

from .clock_helpers import advance, settle

NS = "kube-system"
NAME = "kcm-shards"
LEASE, RENEW, RETRY = 10.0, 5.0, 1.0


class World:
    """Replicas on one fake server; ``running`` maps each shard to the replicas whose work
    for it runs now (never more than one: checked on every start)."""

    def __init__(self, shards: int) -> None:
        self.clock = FakeClock()
        self.tracker = FakeClient(clock=self.clock).tracker
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
