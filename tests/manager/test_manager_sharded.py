"""kcontrol-manager sharded (``--shards``), in this process against real API servers: two
managers split the namespaces' shards fairly, each writes only the namespaces of the shards it
holds and caches only those, and one stopping hands its shards to the other - with the API
server filtering by shard (the ShardedListAndWatch feature gate on) and without it (the
informers filter)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
from manager_helpers import admin_client, create_configmap, eventually, lease_spec
from prometheus_client import CollectorRegistry

from examples.configmap_annotator import ANNOTATION, SPEC
from kcontrol.client import CONFIGMAPS, ApiClient, PatchType, shard_of
from kcontrol.controller import Controller, ControllerOptions
from kcontrol.envtest import ControlPlane
from kcontrol.leaderelection import LeaderElectionOptions, shard_lease_name
from kcontrol.manager import (
    ClientOptions,
    ControllerContext,
    ControllerRegistry,
    ControllerSpec,
    Manager,
    ManagerOptions,
)
from kcontrol.serving import ServingOptions
from tests.integration.helpers import namespaces

pytestmark = pytest.mark.integration

SHARDS = 3


def options(plane: ControlPlane, lease_namespace: str, lease: str, identity: str) -> ManagerOptions:
    return ManagerOptions(
        client=ClientOptions(kubeconfig=str(plane.kubeconfig_path)),
        election=LeaderElectionOptions(
            lease_duration=4.0,
            renew_deadline=3.0,
            retry_period=0.5,
            resource_namespace=lease_namespace,
            resource_name=lease,
            identity=identity,
            shards=SHARDS,
        ),
        serving=ServingOptions(),
    )


@contextlib.asynccontextmanager
async def running(manager: Manager) -> AsyncIterator[Manager]:
    task = asyncio.create_task(manager.run())
    try:
        yield manager
    finally:
        manager.shutdown()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def holders(client: ApiClient, namespace: str, lease: str) -> dict[int, str]:
    """Shard index -> the identity holding its Lease ("" when released or missing)."""
    held = {}
    for index in range(SHARDS):
        spec = await lease_spec(client, namespace, shard_lease_name(lease, index, SHARDS)) or {}
        held[index] = spec.get("holderIdentity") or ""
    return held


async def annotated_by(client: ApiClient, names: list[str]) -> dict[str, str | None]:
    """Namespace -> the identity annotated on its ConfigMap ``cm``."""
    result = {}
    for name in names:
        cm = await client.get(CONFIGMAPS, "cm", namespace=name)
        result[name] = (cm["metadata"].get("annotations") or {}).get(ANNOTATION)
    return result


async def reset(client: ApiClient, names: list[str]) -> None:
    """Overwrite the annotation, so that the holder of each namespace's shard writes it again."""
    patch = {"metadata": {"annotations": {ANNOTATION: "reset"}}}
    for name in names:
        await client.patch(CONFIGMAPS, "cm", patch, namespace=name, patch_type=PatchType.MERGE)


def cached_namespaces(manager: Manager) -> set[str]:
    return {
        obj["metadata"]["namespace"]
        for informer in manager.informers.informers()
        for obj in informer.indexer.list()
    }


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


@pytest.fixture(params=["sharding_plane", "control_plane"])
def plane(request: pytest.FixtureRequest) -> ControlPlane:
    """The API server with the ShardedListAndWatch gate, and the session's without it."""
    found: ControlPlane = request.getfixturevalue(request.param)
    return found


async def test_two_managers_split_the_shards_write_their_own_and_hand_over(
    plane: ControlPlane, request: pytest.FixtureRequest
) -> None:
    gated = request.node.callspec.params["plane"] == "sharding_plane"
    mode = "server" if gated else "client"
    lease = f"sharded-{uuid.uuid4().hex[:8]}"
    async with await admin_client(plane) as client, namespaces(client, 13) as created:
        lease_namespace, names = created[0], created[1:]
        expected_split = {shard_of(name, SHARDS) for name in names}
        if len(expected_split) < 2:
            pytest.skip("12 random namespaces all fell in one shard")
        for name in names:
            await create_configmap(client, name, "cm")
        registry_a, registry_b = CollectorRegistry(), CollectorRegistry()
        a = Manager(
            options(plane, lease_namespace, lease, "a"),
            ControllerRegistry([SPEC]),
            registry=registry_a,
            freeze_gc_after_sync=False,
        )
        b = Manager(
            options(plane, lease_namespace, lease, "b"),
            ControllerRegistry([SPEC]),
            registry=registry_b,
            freeze_gc_after_sync=False,
        )
        async with running(a):
            # Alone, "a" takes every shard and writes every namespace.
            await eventually(
                lambda: _all(annotated_by(client, names), "a"), within=30, message="a writes all"
            )
            assert sample(registry_a, "kcontrol_manager_shards") == SHARDS
            assert sample(registry_a, "kcontrol_manager_shard_filtering", mode=mode) == 1
            for index in range(SHARDS):
                assert sample(registry_a, "kcontrol_manager_shard_held", shard=str(index)) == 1

            async with running(b):
                # Two replicas, three shards: "a" (first in order) keeps two, "b" takes one.
                def fair(held: dict[int, str]) -> bool:
                    values = sorted(held.values())
                    return values == ["a", "a", "b"]

                await eventually(
                    lambda: _check(holders(client, lease_namespace, lease), fair),
                    within=30,
                    message="the shards split 2:1",
                )
                held = await holders(client, lease_namespace, lease)
                mine = {k for k, who in held.items() if who == "a"}
                await eventually(
                    lambda: _true(a._shards is not None and a._shards.running == mine),
                    within=30,
                    message="a runs over its two shards",
                )
                await eventually(
                    lambda: _true(b._shards is not None and b._shards.running == set(held) - mine),
                    within=30,
                    message="b runs over its shard",
                )
                await reset(client, names)
                want = {name: held[shard_of(name, SHARDS)] for name in names}
                await eventually(
                    lambda: _check(annotated_by(client, names), lambda got: got == want),
                    within=30,
                    message="each namespace written by its shard's holder",
                )
                # Each cache holds its own shards' namespaces only.
                await eventually(
                    lambda: _true(
                        cached_namespaces(a) & set(names) == {n for n in names if want[n] == "a"}
                        and cached_namespaces(b) & set(names)
                        == {n for n in names if want[n] == "b"}
                    ),
                    within=30,
                    message="each cache holds its shards",
                )
                assert sample(registry_b, "kcontrol_manager_shard_filtering", mode=mode) == 1
            # "b" stopped and released its shard: "a" takes it back at once.
            await eventually(
                lambda: _check(
                    holders(client, lease_namespace, lease),
                    lambda held: set(held.values()) == {"a"},
                ),
                within=30,
                message="a holds every shard again",
            )
            await reset(client, names)
            await eventually(
                lambda: _all(annotated_by(client, names), "a"), within=30, message="a writes all"
            )


async def _all(probe: Any, identity: str) -> bool:
    got = await probe
    return all(value == identity for value in got.values())


async def _check(probe: Any, predicate: Any) -> bool:
    return bool(predicate(await probe))


async def _true(value: bool) -> bool:
    return value


async def test_a_hung_sync_does_not_keep_a_shard_from_being_given_back(
    control_plane: ControlPlane,
) -> None:
    """A replica must give a shard back while one of its syncs never returns: its
    controllers drain for graceful_shutdown_timeout, then the hung sync is cancelled, the
    shard's Lease released, and the new replica takes its share (issue 35, 2)."""
    lease = f"sharded-{uuid.uuid4().hex[:8]}"
    syncs_hung = asyncio.Event()

    async def hang(key: str) -> None:
        syncs_hung.set()
        await asyncio.Event().wait()

    def factory(ctx: ControllerContext) -> Controller:
        controller = Controller(ControllerOptions(name="hangs", sync=hang, registry=ctx.registry))
        controller.enqueue("somewhere/forever")
        return controller

    async with await admin_client(control_plane) as client, namespaces(client, 1) as created:
        (lease_namespace,) = created

        def held() -> Any:
            return holders(client, lease_namespace, lease)

        a = Manager(
            replace(
                options(control_plane, lease_namespace, lease, "a"), graceful_shutdown_timeout=1
            ),
            ControllerRegistry([ControllerSpec("hangs", factory)]),
            registry=CollectorRegistry(),
            freeze_gc_after_sync=False,
        )
        b = Manager(
            options(control_plane, lease_namespace, lease, "b"),
            ControllerRegistry([SPEC]),
            registry=CollectorRegistry(),
            freeze_gc_after_sync=False,
        )
        async with running(a):
            await eventually(
                lambda: _check(
                    holders(client, lease_namespace, lease), lambda h: set(h.values()) == {"a"}
                ),
                within=30,
                message="a holds every shard",
            )
            await asyncio.wait_for(syncs_hung.wait(), 30)
            async with running(b):
                await eventually(
                    lambda: _check(
                        holders(client, lease_namespace, lease), lambda h: "b" in h.values()
                    ),
                    within=30,
                    message="a kept every shard while its sync hung",
                )


async def test_each_key_is_synced_only_by_the_holder_of_its_shard(
    control_plane: ControlPlane,
) -> None:
    """Ownership is decided before a sync (issue 35, 3): both replicas queue every key - a
    cluster-scoped one and one in each of many namespaces, as a ``watches`` map function or
    a cluster-scoped informer would - and each syncs only those of the shards it runs over;
    the cluster-scoped key only on the holder of the shard ``""`` hashes into."""
    lease = f"sharded-{uuid.uuid4().hex[:8]}"
    keys = ["cluster-thing", *(f"ns-{i}/x" for i in range(30))]
    synced: list[tuple[str, str, frozenset[int]]] = []
    managers: dict[str, Manager] = {}

    def factory(ctx: ControllerContext) -> Controller:
        async def sync(key: str) -> None:
            shards = managers[ctx.identity]._shards
            assert shards is not None
            synced.append((ctx.identity, key, shards.running))

        controller = Controller(
            ControllerOptions(name="everywhere", sync=sync, registry=ctx.registry)
        )
        for key in keys:
            controller.enqueue(key)
        return controller

    def namespace_of(key: str) -> str:
        return key.partition("/")[0] if "/" in key else ""

    async with await admin_client(control_plane) as client, namespaces(client, 1) as created:
        (lease_namespace,) = created
        for identity in ("a", "b"):
            managers[identity] = Manager(
                options(control_plane, lease_namespace, lease, identity),
                ControllerRegistry([ControllerSpec("everywhere", factory)]),
                registry=CollectorRegistry(),
                freeze_gc_after_sync=False,
            )
        a, b = managers["a"], managers["b"]
        async with running(a), running(b):

            def split() -> Any:
                return _check(
                    holders(client, lease_namespace, lease),
                    lambda h: sorted(h.values()) == ["a", "a", "b"],
                )

            await eventually(split, within=30, message="the shards split 2:1")
            held = await holders(client, lease_namespace, lease)
            for identity, manager in managers.items():
                mine = {k for k, who in held.items() if who == identity}
                await eventually(
                    lambda m=manager, mine=mine: _true(
                        m._shards is not None and m._shards.running == mine
                    ),
                    within=30,
                    message=f"{identity} runs over its shards",
                )

            def final(identity: str) -> set[str]:
                shards = managers[identity]._shards
                assert shards is not None
                return {
                    k for who, k, running in synced if who == identity and running == shards.running
                }

            def all_synced() -> Any:
                return _true(final("a") | final("b") == set(keys))

            await eventually(all_synced, within=30, message="every key synced by a replica")

    assert synced, "nothing synced: nothing was checked"
    strays = [
        (who, key, sorted(running))
        for who, key, running in synced
        if shard_of(namespace_of(key), SHARDS) not in running
    ]
    assert strays == [], strays
    cluster_scoped = {
        who for who, key, running in synced if key == "cluster-thing" and len(running) < SHARDS
    }
    assert cluster_scoped == {held[shard_of("", SHARDS)]}, cluster_scoped
