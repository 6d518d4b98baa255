"""The shard planner of sharded leader election: shares add up, and replicas planning on
their own, a Lease granting a free shard to one asker at a time, converge to every shard held
once, each replica holding its share - from any membership and any starting holdings."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from kcontrol.leaderelection._sharding import ShardPlan, fair_share, plan


@given(st.integers(1, 64), st.sets(st.text(min_size=1, max_size=6), min_size=1, max_size=9))
def test_fair_shares_add_up_and_differ_by_at_most_one(shards: int, members: set[str]) -> None:
    shares = [fair_share(shards, m, members) for m in members]
    assert sum(shares) == shards
    assert max(shares) - min(shares) <= 1


def test_a_replica_gives_back_its_surplus_and_takes_free_shards() -> None:
    # a alone held all four; b joined: a gives back its two highest, b takes the free ones
    assert plan(4, "a", {"a", "b"}, {0: "a", 1: "a", 2: "a", 3: "a"}) == ShardPlan((), (3, 2))
    assert plan(4, "b", {"a", "b"}, {0: "a", 1: "a", 2: None, 3: None}) == ShardPlan((2, 3), ())
    # a shard of a replica that is gone is free; one held by a live replica is not
    assert plan(3, "b", {"a", "b"}, {0: "a", 1: "gone", 2: "a"}) == ShardPlan((1,), ())
    assert plan(2, "b", {"a", "b"}, {0: "a", 1: "a"}) == ShardPlan((), ())


def _simulate(shards: int, members: list[str], holders: dict[int, str | None], seed: int) -> int:
    """Rounds of every member planning in a random order until nothing changes; returns the
    number of rounds."""
    rng = random.Random(seed)
    for rounds in range(1, 4 * len(members) + 8):
        changed = False
        order = members[:]
        rng.shuffle(order)
        for me in order:
            step = plan(shards, me, members, holders)
            for k in step.release:
                assert holders[k] == me
                holders[k] = None
                changed = True
            for k in step.acquire:
                if holders.get(k) is None or holders[k] not in members:  # the Lease grants it
                    holders[k] = me
                    changed = True
        if not changed:
            return rounds
    raise AssertionError(f"no convergence: {holders}")


@settings(max_examples=300, deadline=None)
@given(
    shards=st.integers(1, 16),
    members=st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=8, unique=True),
    start=st.lists(st.sampled_from([None, "a", "b", "c", "x", "y"]), max_size=16),
    seed=st.integers(0, 1000),
)
def test_replicas_converge_to_one_holder_per_shard_and_fair_shares(
    shards: int, members: list[str], start: list[str | None], seed: int
) -> None:
    holders: dict[int, str | None] = dict(enumerate(start[:shards]))
    _simulate(shards, members, holders, seed)
    assert all(holders.get(k) in members for k in range(shards)), holders
    for m in members:
        held = sum(1 for k in range(shards) if holders.get(k) == m)
        assert held == fair_share(shards, m, members)
    for m in members:  # and then it stays put
        assert plan(shards, m, members, holders) == ShardPlan((), ())
