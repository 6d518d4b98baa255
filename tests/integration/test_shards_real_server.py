"""Shard selectors against a real kube-apiserver v1.36 with the ShardedListAndWatch feature
gate (KEP-5866): the server splits a collection exactly as kcontrol's hash predicts, by
namespace and by uid, each shard's watch carries only its share, and a sharded informer
factory caches only its share."""

from __future__ import annotations

import logging

import pytest

from kcontrol.client import (
    CONFIGMAPS,
    SHARD_BY_UID,
    ListOptions,
    Object,
    ShardSelector,
    shard_selector,
)
from kcontrol.envtest import ControlPlane
from kcontrol.informers import SharedInformerFactory, _shard_filter
from kcontrol.testing import capture_logs

from .helpers import configmap, namespaces, new_client, poll, running

pytestmark = pytest.mark.integration


def split(names: list[str], shard: ShardSelector) -> tuple[list[str], list[str]]:
    """``names`` in ``shard`` and outside it; skips the test when either is empty."""
    mine = [n for n in names if shard.matches({"metadata": {"namespace": n}})]
    theirs = [n for n in names if n not in mine]
    if not mine or not theirs:
        pytest.skip("12 random namespaces all fell in one shard")  # about 1 in 2,000
    return mine, theirs


async def test_the_server_splits_a_collection_as_the_client_predicts(
    sharding_plane: ControlPlane,
) -> None:
    async with new_client(sharding_plane) as client, namespaces(client, 12) as names:
        for name in names:
            await client.create(CONFIGMAPS, configmap("c", name), namespace=name)
        everything = {
            (c["metadata"]["namespace"], c["metadata"]["uid"])
            for c in (await client.list(CONFIGMAPS))["items"]
            if c["metadata"]["namespace"] in names
        }
        for key in (None, SHARD_BY_UID):
            for count in (2, 3):
                union: set[tuple[str, str]] = set()
                for index in range(count):
                    shard = (
                        shard_selector(index, count)
                        if key is None
                        else shard_selector(index, count, key=key)
                    )
                    page = await client.list(
                        CONFIGMAPS, options=ListOptions(shard_selector=str(shard))
                    )
                    served = {
                        (c["metadata"]["namespace"], c["metadata"]["uid"])
                        for c in page["items"]
                        if c["metadata"]["namespace"] in names
                    }
                    predicted = {
                        (ns, uid)
                        for ns, uid in everything
                        if shard.matches({"metadata": {"namespace": ns, "uid": uid}})
                    }
                    assert served == predicted, (key, count, index)
                    assert not served & union
                    union |= served
                assert union == everything


async def test_a_sharded_factory_lists_and_watches_its_share_only(
    sharding_plane: ControlPlane,
) -> None:
    async with new_client(sharding_plane) as client, namespaces(client, 12) as names:
        shard = shard_selector(0, 2)
        mine, theirs = split(names, shard)
        await client.create(CONFIGMAPS, configmap("before", mine[0]), namespace=mine[0])
        await client.create(CONFIGMAPS, configmap("before", theirs[0]), namespace=theirs[0])
        factory = SharedInformerFactory(client, shard=shard)
        informer = factory.for_resource(CONFIGMAPS)
        async with running(informer):

            def cached() -> set[str]:
                return {
                    c["metadata"]["namespace"]
                    for c in informer.indexer.list()
                    if c["metadata"]["namespace"] in names
                }

            assert cached() == {mine[0]}
            await client.create(CONFIGMAPS, configmap("after", theirs[-1]), namespace=theirs[-1])
            await client.create(CONFIGMAPS, configmap("after", mine[-1]), namespace=mine[-1])
            await poll(lambda: mine[-1] in cached(), within=30)
            assert cached() == {mine[0], mine[-1]}, "the other shard's events never arrive"


async def test_without_the_gate_the_shard_is_applied_on_the_client(
    control_plane: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session's API server runs without the feature gate: it ignores the shard selector
    and sends everything; the informer drops what is outside its shard, says so once, and
    caches what a server with the gate would have sent."""
    monkeypatch.setattr(_shard_filter, "_warned", False)  # the first warning of the process
    async with new_client(control_plane) as client, namespaces(client, 12) as names:
        shard = shard_selector(0, 2)
        mine, _ = split(names, shard)
        for name in names:
            await client.create(CONFIGMAPS, configmap("before", name), namespace=name)
        informer = SharedInformerFactory(client, shard=shard).for_resource(CONFIGMAPS)

        def ours(items: list[Object]) -> list[Object]:
            return [c for c in items if c["metadata"]["namespace"] in names]

        with capture_logs(logging.WARNING) as logs:
            async with running(informer):

                def cached() -> set[str]:
                    return {
                        c["metadata"]["namespace"]
                        for c in informer.indexer.list()
                        if c["metadata"]["namespace"] in names
                    }

                assert cached() == set(mine)
                assert informer.filters_shard_locally
                for name in names:
                    await client.create(CONFIGMAPS, configmap("after", name), namespace=name)
                await poll(lambda: len(ours(informer.indexer.list())) == 2 * len(mine), within=30)
                assert cached() == set(mine)
        warnings = [e for e in logs if "does not filter by shard" in e["event"]]
        assert len(warnings) == 1, "said once"
