"""Which shards a replica should take or give back: the planning half of sharded leader
election (issue 24), kept pure so that it can be checked exhaustively.

``N`` shards are ``N`` Leases; ``M`` live replicas share them. Each replica looks at who holds
each shard's Lease (``None``: nobody, or an expired holder) and who is alive, and plans on its
own - there is no coordinator:

- its fair share is ``N // M`` shards, one more for the first ``N % M`` replicas in the
  sorted order of identities (so the shares add up to ``N`` and every replica computes the
  same shares);
- it gives back what it holds beyond its share (the highest shard indexes first), so a
  replica that joins finds shards to take;
- it takes free shards up to its share (the lowest indexes first). A shard held by another
  live replica is never taken: the Lease decides, as today's single Lease does.

Every replica running :func:`plan` in rounds, with Leases granting a free shard to one of the
replicas that ask, converges to each shard held by exactly one live replica and each replica
holding its share (``tests/leaderelection/test_sharding.py`` checks it over random
memberships, holdings and orders).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

__all__ = ["ShardPlan", "fair_share", "plan"]


@dataclass(frozen=True, slots=True)
class ShardPlan:
    """What a replica does this round: give back ``release``, then try for ``acquire``."""

    acquire: tuple[int, ...]
    release: tuple[int, ...]


def fair_share(shards: int, me: str, members: Collection[str]) -> int:
    """How many of ``shards`` the live replica ``me`` should hold among ``members`` (which
    include ``me``)."""
    ordered = sorted({*members, me})
    base, extra = divmod(shards, len(ordered))
    return base + (1 if ordered.index(me) < extra else 0)


def plan(
    shards: int,
    me: str,
    members: Collection[str],
    holders: Mapping[int, str | None],
) -> ShardPlan:
    """The plan of replica ``me``: ``holders`` maps each shard index (``0 <= k < shards``;
    a missing one is free) to its current live holder or ``None``; ``members`` are the live
    replicas."""
    share = fair_share(shards, me, members)
    live = {*members, me}
    mine = sorted(k for k in range(shards) if holders.get(k) == me)
    release = tuple(sorted(mine[share:], reverse=True)) if len(mine) > share else ()
    room = share - (len(mine) - len(release))
    free = [k for k in range(shards) if holders.get(k) is None or holders.get(k) not in live]
    acquire = tuple(free[: max(0, room)])
    return ShardPlan(acquire=acquire, release=release)
