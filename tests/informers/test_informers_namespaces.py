"""An informer of several namespaces: one reflector each (a Role in those namespaces can
list and watch nothing wider), one cache, one set of handlers. It has synced once every
namespace has; a namespace's relist replaces that namespace's objects only; its last synced
resourceVersion is the oldest namespace's, and each namespace's is at hand."""

from __future__ import annotations

from typing import Any

import pytest
from informers_fakes import ScriptedReader, page, pod, running, until

from kcontrol.client import PODS, Object
from kcontrol.errors import OutsideCacheScope
from kcontrol.informers import ResourceEventHandlerFuncs, SharedIndexInformer
from kcontrol.informers._deltas import DeltaProcessor
from kcontrol.informers._processor import SharedProcessor
from kcontrol.informers._store import IndexedStore


def names(objects: list[Object]) -> list[str]:
    return sorted(f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in objects)


async def test_one_reflector_per_namespace_into_one_cache() -> None:
    def list_func(params: dict[str, Any]) -> Object:
        namespace = params["namespace"]
        items = {"a": [pod("x", 10, namespace="a")], "b": [pod("y", 20, namespace="b")]}
        return page(items[namespace], 10 if namespace == "a" else 20)

    reader = ScriptedReader(list_func=list_func)
    informer = SharedIndexInformer(reader, PODS, namespaces=("a", "b"))
    added: list[str] = []
    informer.add_event_handler(
        ResourceEventHandlerFuncs(add_func=lambda obj: added.append(obj["metadata"]["name"]))
    )
    async with running(informer.run()):
        assert await informer.wait_for_cache_sync()
        await until(lambda: len(added) == 2)
    assert sorted(call["namespace"] for call in reader.list_calls) == ["a", "b"]
    assert sorted(call["namespace"] for call in reader.watch_calls) == ["a", "b"]
    assert names(informer.lister().list()) == ["a/x", "b/y"]
    assert informer.last_sync_resource_version == "10", "the oldest namespace's"
    assert informer.last_sync_resource_version_in("b") == "20"
    with pytest.raises(OutsideCacheScope):
        informer.lister().get("c", "z")


async def test_synced_only_once_every_namespace_has_and_a_relist_replaces_its_own() -> None:
    indexer, processor = IndexedStore(), SharedProcessor()
    synced: list[bool] = []
    deltas = DeltaProcessor(
        indexer, processor, on_synced=lambda: synced.append(True), namespaces=("a", "b")
    )
    await deltas.replace_namespace("a", [pod("x", 1, namespace="a")], "1")
    assert not deltas.has_synced and synced == []
    await deltas.for_namespace("b").replace([pod("y", 2, namespace="b")], "2")
    assert deltas.has_synced and synced == [True]
    # a relists with x gone and w new: b's y stays.
    await deltas.replace_namespace("a", [pod("w", 3, namespace="a")], "3")
    assert names(indexer.list()) == ["a/w", "b/y"]


def test_namespace_or_namespaces() -> None:
    with pytest.raises(ValueError, match="not both"):
        SharedIndexInformer(ScriptedReader(), PODS, namespace="a", namespaces=("b",))
    one = SharedIndexInformer(ScriptedReader(), PODS, namespaces=("a",))
    assert (one.namespace, one.namespaces) == ("a", ("a",)), "one namespace: the plain case"
    assert SharedIndexInformer(ScriptedReader(), PODS).namespaces == ()
