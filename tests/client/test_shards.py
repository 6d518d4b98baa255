"""Shard selectors (KEP-5866): the hash, the ranges and expressions the API server takes, the
client-side match, and the fake server and the informer factory honouring them."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcontrol.client import (
    HASH_SPACE,
    NODES,
    PODS,
    SHARD_BY_NAMESPACE,
    SHARD_BY_UID,
    ListOptions,
    ShardRange,
    ShardSelector,
    shard_hash,
    shard_of,
    shard_selector,
    shards_selector,
)
from kcontrol.client._shards import shard_of_hash
from kcontrol.errors import BadRequest
from kcontrol.informers import ResourceEventHandlerFuncs, SharedInformerFactory
from kcontrol.testing import FakeClient


def test_the_hash_is_64_bit_fnv_1a() -> None:
    # The FNV reference vectors (Fowler/Noll/Vo), as Go's hash/fnv New64a gives them.
    assert shard_hash("") == 0xCBF29CE484222325
    assert shard_hash("a") == 0xAF63DC4C8601EC8C
    assert shard_hash("foobar") == 0x85944171F73967E8


def test_two_shards_are_written_as_the_api_documents_them() -> None:
    # The examples of ShardSelector in k8s.io/apimachinery v0.36 (types.go), by uid.
    assert str(shard_selector(0, 2, key=SHARD_BY_UID)) == (
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
    )
    assert str(shard_selector(1, 2, key=SHARD_BY_UID)) == (
        "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
    )
    assert str(shard_selector(3, 4)) == (
        "shardRange(object.metadata.namespace, '0xc000000000000000', '0x10000000000000000')"
    )


@given(st.text(max_size=40), st.integers(1, 12))
def test_the_shards_of_a_split_select_each_object_exactly_once(value: str, count: int) -> None:
    obj = {"metadata": {"namespace": value, "uid": value}}
    for key in (SHARD_BY_NAMESPACE, SHARD_BY_UID):
        chosen = [k for k in range(count) if shard_selector(k, count, key=key).matches(obj)]
        assert len(chosen) == 1


@given(st.text(max_size=40), st.integers(1, 12))
def test_shard_of_names_the_shard_whose_selector_matches(value: str, count: int) -> None:
    obj = {"metadata": {"namespace": value}}
    assert shard_selector(shard_of(value, count), count).matches(obj)


@pytest.mark.parametrize("count", [2, 3, 5, 6, 7])
def test_shard_of_is_exact_at_the_range_boundaries(count: int) -> None:
    # A range starts at floor(k * 2^64 / count): for counts that do not divide 2^64, its
    # first hash times count is still below k * 2^64, so plain division would say k - 1.
    for index in range(1, count):
        first = shard_selector(index, count).ranges[0].start
        assert shard_of_hash(first, count) == index
        assert shard_of_hash(first - 1, count) == index - 1
    assert shard_of_hash(0, count) == 0
    assert shard_of_hash(HASH_SPACE - 1, count) == count - 1


@given(st.sets(st.integers(0, 7), min_size=1), st.text(max_size=20))
def test_several_shards_select_what_their_union_does(indexes: set[int], value: str) -> None:
    count = 8
    merged = shards_selector(indexes, count)
    assert len(merged.ranges) <= len(indexes)
    obj = {"metadata": {"namespace": value}}
    assert merged.matches(obj) == any(shard_selector(k, count).matches(obj) for k in indexes)
    assert ShardSelector.parse(str(merged)) == merged


def test_neighbouring_shards_become_one_range() -> None:
    assert shards_selector((0, 1, 3), 4) == ShardSelector(
        (
            ShardRange(SHARD_BY_NAMESPACE, 0, HASH_SPACE // 2),
            ShardRange(SHARD_BY_NAMESPACE, 3 * HASH_SPACE // 4, HASH_SPACE),
        )
    )
    with pytest.raises(ValueError, match="no shard"):
        shards_selector((), 4)
    with pytest.raises(ValueError, match="does not exist"):
        shards_selector((4,), 4)


def test_ranges_are_or_ed_and_parse_back() -> None:
    both = shard_selector(0, 4) | shard_selector(2, 4)
    assert " || " in str(both)
    assert ShardSelector.parse(str(both)) == both
    low = {"metadata": {"namespace": _namespace_in(0, 4)}}
    high = {"metadata": {"namespace": _namespace_in(1, 4)}}
    assert both.matches(low) and not both.matches(high)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')",
        "shardRange(object.metadata.uid, '0x0', '0x20000000000000000')",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || "
        "shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') && true",
    ],
)
def test_what_the_server_refuses_does_not_parse(text: str) -> None:
    with pytest.raises(ValueError):
        ShardSelector.parse(text)


def test_a_shard_that_does_not_exist_is_refused() -> None:
    with pytest.raises(ValueError):
        shard_selector(2, 2)
    with pytest.raises(ValueError):
        ShardRange(SHARD_BY_UID, 0, HASH_SPACE + 1)


def test_list_and_watch_carry_the_selector() -> None:
    selector = str(shard_selector(0, 3))
    options = ListOptions(shard_selector=selector)
    assert options.query()["shardSelector"] == selector
    assert options.query(watch=True)["shardSelector"] == selector
    assert "shardSelector" not in ListOptions().query()


def _namespace_in(index: int, count: int) -> str:
    """A namespace name in shard ``index`` of ``count``."""
    shard = shard_selector(index, count)
    n = 0
    while not shard.matches({"metadata": {"namespace": f"ns-{n}"}}):
        n += 1
    return f"ns-{n}"


def _pod(namespace: str, name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}}


async def test_the_fake_server_lists_a_shard() -> None:
    client = FakeClient()
    namespaces = [f"ns-{i}" for i in range(20)]
    for namespace in namespaces:
        client.tracker.add(_pod(namespace, "p"))
    seen = []
    for k in range(3):
        page = await client.list(
            PODS, options=ListOptions(shard_selector=str(shard_selector(k, 3)))
        )
        seen.append([p["metadata"]["namespace"] for p in page["items"]])
    # Each namespace in exactly one shard. (FNV-1a's top bits hardly depend on the last
    # bytes: ns-0 ... ns-9 share a shard, so no shard is promised a share here.)
    assert sorted(ns for part in seen for ns in part) == sorted(namespaces)
    assert len([part for part in seen if part]) >= 2
    with pytest.raises(BadRequest):
        await client.list(PODS, options=ListOptions(shard_selector="shardRange(x)"))


async def test_a_sharded_factory_caches_its_share_and_every_cluster_scoped_object() -> None:
    client = FakeClient()
    inside, outside = _namespace_in(0, 2), _namespace_in(1, 2)
    client.tracker.add(_pod(inside, "mine"))
    client.tracker.add(_pod(outside, "theirs"))
    client.tracker.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    factory = SharedInformerFactory(client, shard=shard_selector(0, 2))
    pods, nodes = factory.for_resource(PODS), factory.for_resource(NODES)
    async with asyncio.TaskGroup() as tasks:
        running = tasks.create_task(factory.run())
        await factory.wait_for_cache_sync()
        assert [p["metadata"]["name"] for p in pods.indexer.list()] == ["mine"]
        assert [n["metadata"]["name"] for n in nodes.indexer.list()] == ["n1"]
        added = asyncio.Event()
        pods.add_event_handler(ResourceEventHandlerFuncs(add_func=lambda _: added.set()))
        await added.wait()  # the replay of what is cached
        added.clear()
        client.tracker.add(_pod(outside, "theirs-2"))  # a watch event of the other shard
        client.tracker.add(_pod(inside, "mine-2"))
        await asyncio.wait_for(added.wait(), 10)
        assert sorted(p["metadata"]["name"] for p in pods.indexer.list()) == ["mine", "mine-2"]
        running.cancel()
