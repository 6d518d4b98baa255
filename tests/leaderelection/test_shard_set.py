"""ShardSet: the write gate per namespace, a shard's work outliving the controllers that cover
it, the coalescing of changes, the metrics, and the probe of the server's shard filtering."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from prometheus_client import CollectorRegistry

from kcontrol.client import LEASES, ShardSelector, shard_of
from kcontrol.leaderelection import LeaderElector, ShardSet, server_filters_shards
from kcontrol.testing import FakeClient


class Lease:
    """Stands in for a shard's LeaderElector: only holds_lease() is asked."""

    def __init__(self, trusted: bool = True) -> None:
        self.trusted = trusted

    def holds_lease(self) -> bool:
        return self.trusted


def elector(lease: Lease) -> LeaderElector:
    return cast(LeaderElector, lease)


def namespaces_by_shard(count: int) -> dict[int, str]:
    """One namespace name per shard of ``count``."""
    found: dict[int, str] = {}
    i = 0
    while len(found) < count:
        name = f"ns-{i}"
        found.setdefault(shard_of(name, count), name)
        i += 1
    return found


async def hold(shards: ShardSet, index: int, lease: Lease) -> asyncio.Task[None]:
    task = asyncio.create_task(shards.work(index, elector(lease)))
    await asyncio.sleep(0)
    return task


async def test_writes_pass_only_for_namespaces_of_held_and_trusted_shards() -> None:
    shards = ShardSet(3)
    names = namespaces_by_shard(3)
    lease = Lease()
    work = await hold(shards, 1, lease)
    assert shards.allows(names[1])
    assert not shards.allows(names[0])
    assert not shards.allows(names[2])
    # Cluster-scoped objects belong to the shard "" hashes into.
    assert shards.allows("") == (shard_of("", 3) == 1)
    lease.trusted = False  # the renew deadline passed on this process's clock
    assert not shards.allows(names[1])
    work.cancel()
    await asyncio.wait((work,))
    assert not shards.allows(names[1])


async def test_a_shards_work_ends_only_once_no_controller_covers_it() -> None:
    shards = ShardSet(2)
    work = await hold(shards, 0, Lease())
    await shards.set_running({0})
    name = namespaces_by_shard(2)[0]
    work.cancel()
    await asyncio.sleep(0.05)
    assert not work.done(), "the Lease must not be given up while controllers cover the shard"
    assert shards.held == set(), "the next controllers must not cover it"
    assert shards.allows(name), "the draining syncs may still write: the Lease is held"
    await shards.set_running(())
    await asyncio.wait_for(asyncio.wait((work,)), 1)
    assert work.cancelled()
    assert not shards.allows(name)


async def test_a_shard_given_back_is_a_change_at_once() -> None:
    shards = ShardSet(2)
    work = await hold(shards, 0, Lease())
    assert await shards.changes(quiet=0.01) == {0}
    await shards.set_running({0})
    work.cancel()
    # No quiet period: the shard's Lease waits for the controllers covering it.
    assert await asyncio.wait_for(shards.changes(quiet=60), 1) == set()
    await shards.set_running(())
    await asyncio.wait((work,))


async def test_changes_come_together_after_a_quiet_period() -> None:
    shards = ShardSet(4)
    works = [await hold(shards, 0, Lease())]

    async def more() -> None:
        for index in (1, 2):
            await asyncio.sleep(0.02)
            works.append(await hold(shards, index, Lease()))

    adding = asyncio.create_task(more())
    held = await shards.changes(quiet=0.1)
    await adding
    assert held == {0, 1, 2}
    for work in works:
        work.cancel()
    await shards.set_running(())
    await asyncio.wait(works)


async def test_metrics_say_which_shards_are_held_and_how_objects_are_split() -> None:
    registry = CollectorRegistry()
    shards = ShardSet(2, registry)

    def value(name: str, **labels: str) -> Any:
        return registry.get_sample_value(name, labels)

    assert value("kcontrol_manager_shards") == 2
    work = await hold(shards, 1, Lease())
    assert value("kcontrol_manager_shard_held", shard="1") == 1
    assert value("kcontrol_manager_shard_held", shard="0") == 0
    shards.set_filtering("client")
    assert value("kcontrol_manager_shard_filtering", mode="client") == 1
    assert value("kcontrol_manager_shard_filtering", mode="server") == 0
    await shards.set_running({1})
    assert value("kcontrol_manager_shard_rebuilds_total") == 1
    work.cancel()
    await shards.set_running(())
    await asyncio.wait((work,))
    assert value("kcontrol_manager_shard_held", shard="1") == 0


def test_at_least_one_shard() -> None:
    with pytest.raises(ValueError, match="at least one shard"):
        ShardSet(0)


async def test_the_probe_tells_a_filtering_server_from_one_that_ignores_the_selector() -> None:
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "m", "namespace": "kube-system", "labels": {"e": "x"}},
    }
    filtering = FakeClient([lease])  # the fake server honours shard selectors
    assert await server_filters_shards(filtering, "kube-system", "e=x")

    ignoring = FakeClient([lease])

    def whole_list(action: Any) -> Any:  # an API server without the feature gate
        return {"kind": "LeaseList", "metadata": {"resourceVersion": "1"}, "items": [lease]}

    ignoring.prepend_reactor("list", LEASES, whole_list)
    assert not await server_filters_shards(ignoring, "kube-system", "e=x")
    (listed,) = ignoring.actions_for("list", LEASES)
    # The probe asked for a range that leaves the Leases' own namespace out.
    selector = ShardSelector.parse(listed.options["shard_selector"])
    assert not selector.matches({"metadata": {"namespace": "kube-system"}})
