"""CacheReader: Reader-shaped reads answered from the shared informers, on the fake client.

A read of a resource nobody watched yet starts its informer and waits for its first sync;
reads then cost no request."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kcontrol.client import CONFIGMAPS, NAMESPACES, ListOptions
from kcontrol.errors import NotFound
from kcontrol.informers import CacheReader, SharedInformerFactory
from kcontrol.testing import FakeClient


def configmap(name: str, namespace: str = "ns", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
    }


async def test_reads_come_from_the_informers() -> None:
    fake = FakeClient(
        [
            configmap("a", app="web"),
            configmap("b", app="db"),
            configmap("c", namespace="other", app="web"),
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}},
        ],
        resources=[CONFIGMAPS, NAMESPACES],
    )
    factory = SharedInformerFactory(fake)
    cache = CacheReader(lambda: factory)
    async with asyncio.TaskGroup() as tasks:
        run = tasks.create_task(factory.run())
        got = await cache.get(CONFIGMAPS, "a", namespace="ns")
        assert got["metadata"]["labels"] == {"app": "web"}
        assert (await cache.get(NAMESPACES, "ns"))["metadata"]["name"] == "ns"
        with pytest.raises(NotFound):
            await cache.get(CONFIGMAPS, "missing", namespace="ns")
        listed = await cache.list(CONFIGMAPS, options=ListOptions(label_selector="app=web"))
        assert sorted(i["metadata"]["name"] for i in listed["items"]) == ["a", "c"]
        in_ns = await cache.list(CONFIGMAPS, namespace="ns")
        assert sorted(i["metadata"]["name"] for i in in_ns["items"]) == ["a", "b"]
        assert listed["kind"] == "ConfigMapList"
        reads_before = len(fake.actions)
        await cache.get(CONFIGMAPS, "b", namespace="ns")
        assert len(fake.actions) == reads_before  # answered from the cache
        # One informer per resource, shared with anyone asking the factory.
        assert len(factory.informers()) == 2
        run.cancel()


async def test_refuses_what_a_cache_cannot_answer() -> None:
    fake = FakeClient([configmap("a")], resources=[CONFIGMAPS])
    factory = SharedInformerFactory(fake)
    cache = CacheReader(factory)
    async with asyncio.TaskGroup() as tasks:
        run = tasks.create_task(factory.run())
        with pytest.raises(ValueError, match="subresources"):
            await cache.get(CONFIGMAPS, "a", namespace="ns", subresource="status")
        with pytest.raises(ValueError, match="label selectors only"):
            await cache.list(CONFIGMAPS, options=ListOptions(field_selector="metadata.name=a"))
        with pytest.raises(NotFound, match="needs a namespace"):
            await cache.get(CONFIGMAPS, "a")
        run.cancel()
