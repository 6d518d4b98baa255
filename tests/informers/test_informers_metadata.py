"""Metadata-only informers on FakeClient: what they cache, announce and share.

The same behaviours on a real apiserver: tests/integration/test_informer_metadata.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from informers_fakes import ScriptedReader, advance, running, settle, until

from kcontrol.client import CONFIGMAPS, PODS, ListOptions, Object, Reader, Resource, WatchEvent
from kcontrol.clock import FakeClock
from kcontrol.errors import Gone, NotFound
from kcontrol.informers import DeletedFinalStateUnknown, SharedInformerFactory
from kcontrol.informers._metadata import RestoredKindReader
from kcontrol.testing import FakeClient

OWNER = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d-1"}


def configmap(name: str, **data: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "labels": {"app": "web"},
            "annotations": {"note": "kept"},
            "finalizers": ["example.com/keep"],
            "ownerReferences": [{**OWNER, "controller": True}],
        },
        "data": data,
    }


class Recorder:
    """Records each notification with the object it carried."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def on_add(self, obj: Object, is_in_initial_list: bool) -> None:
        self.events.append(("add", obj))

    def on_update(self, old: Object, new: Object) -> None:
        self.events.append(("update", new))

    def on_delete(self, obj: Any) -> None:
        self.events.append(("delete", obj))

    def names(self) -> list[tuple[str, str]]:
        return [(kind, _name(obj)) for kind, obj in self.events]


def _name(obj: Any) -> str:
    if isinstance(obj, DeletedFinalStateUnknown):
        return f"tombstone:{obj.key}"
    return str(obj["metadata"]["name"])


def metadata_only(obj: Object, resource: Resource = CONFIGMAPS) -> Object:
    """What a metadata-only cache holds for ``obj``."""
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": obj["metadata"],
    }


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def client(clock: FakeClock) -> FakeClient:
    return FakeClient([configmap("a", big="x" * 1000), configmap("b", big="y")], clock=clock)


async def test_the_cache_holds_metadata_only_with_the_resources_kind(
    client: FakeClient, clock: FakeClock
) -> None:
    factory = SharedInformerFactory(client, clock=clock)
    informer = factory.for_resource(CONFIGMAPS, metadata_only=True)
    async with running(factory.run()):
        assert await factory.wait_for_cache_sync() == {CONFIGMAPS: True}
        stored = {obj["metadata"]["name"]: obj for obj in client.tracker.objects(CONFIGMAPS)}
        cached = {obj["metadata"]["name"]: obj for obj in informer.indexer.list()}
        assert cached == {name: metadata_only(obj) for name, obj in stored.items()}
        a = cached["a"]["metadata"]
        assert a["labels"] == {"app": "web"}
        assert a["finalizers"] == ["example.com/keep"]
        assert a["ownerReferences"] == [{**OWNER, "controller": True}]
        assert a["resourceVersion"] == stored["a"]["metadata"]["resourceVersion"]
    [listed] = client.actions_for("list", CONFIGMAPS)
    assert listed.resource_version == "0"


async def test_adds_updates_and_deletes_arrive_as_metadata(
    client: FakeClient, clock: FakeClock
) -> None:
    factory = SharedInformerFactory(client, namespace="ns", clock=clock)
    informer = factory.for_resource(CONFIGMAPS, metadata_only=True)
    recorder = Recorder()
    informer.add_event_handler(recorder)
    async with running(factory.run()):
        await factory.wait_for_cache_sync()
        await until(lambda: len(recorder.events) == 2)
        await client.create(CONFIGMAPS, configmap("c", v="1"))
        await client.patch(CONFIGMAPS, "a", {"metadata": {"labels": {"app": "db"}}}, namespace="ns")
        await client.patch(CONFIGMAPS, "b", {"data": {"big": "z"}}, namespace="ns")
        await client.patch(CONFIGMAPS, "b", {"metadata": {"finalizers": None}}, namespace="ns")
        await client.delete(CONFIGMAPS, "b", namespace="ns")
        await until(lambda: len(recorder.events) == 7)
        with pytest.raises(NotFound):
            informer.lister().get("ns", "b")
    assert recorder.names() == [
        ("add", "a"),
        ("add", "b"),
        ("add", "c"),
        ("update", "a"),
        ("update", "b"),  # only data changed: a new resourceVersion all the same
        ("update", "b"),
        ("delete", "b"),
    ]
    for _, obj in recorder.events:
        assert set(obj) == {"apiVersion", "kind", "metadata"}, obj
        assert (obj["apiVersion"], obj["kind"]) == ("v1", "ConfigMap")
    assert recorder.events[3][1]["metadata"]["labels"] == {"app": "db"}
    assert "finalizers" not in recorder.events[5][1]["metadata"]


async def test_a_410_on_the_watch_relists_as_the_full_informer_does(
    client: FakeClient, clock: FakeClock
) -> None:
    factory = SharedInformerFactory(client, clock=clock)
    informer = factory.for_resource(CONFIGMAPS, metadata_only=True)
    recorder = Recorder()
    informer.add_event_handler(recorder)
    async with running(factory.run()):
        await factory.wait_for_cache_sync()
        await until(lambda: client.open_watches(CONFIGMAPS) == 1)
        synced_rv = informer.last_sync_resource_version
        assert client.fail_watches(Gone("too old resource version"), CONFIGMAPS) == 1
        await settle()
        # Changed while nothing watches: only a relist can find out.
        await client.patch(CONFIGMAPS, "a", {"metadata": {"finalizers": None}}, namespace="ns")
        await client.delete(CONFIGMAPS, "a", namespace="ns")
        await client.create(CONFIGMAPS, configmap("d", v="1"))
        await advance(clock, 2.0)  # past the reflector's backoff (0.8 s, jittered up to 1.6 s)
        await until(lambda: len(client.actions_for("list", CONFIGMAPS)) == 2)
        await until(lambda: len(recorder.events) == 4)
        cached = sorted(informer.indexer.list(), key=_name)
        assert cached == sorted(map(metadata_only, client.tracker.objects(CONFIGMAPS)), key=_name)
    first, relist = client.actions_for("list", CONFIGMAPS)
    assert (first.resource_version, relist.resource_version) == ("0", synced_rv)
    assert recorder.names() == [
        ("add", "a"),
        ("add", "b"),
        ("delete", "tombstone:ns/a"),
        ("add", "d"),
    ]


async def test_the_factory_shares_one_informer_per_collection_and_content(
    client: FakeClient, clock: FakeClock
) -> None:
    factory = SharedInformerFactory(client, clock=clock)
    metadata = factory.for_resource(CONFIGMAPS, metadata_only=True)
    assert factory.for_resource(CONFIGMAPS, metadata_only=True) is metadata
    assert factory.for_resource(CONFIGMAPS, namespace="ns", metadata_only=True) is not metadata
    full = factory.for_resource(CONFIGMAPS)
    assert full is not metadata
    assert factory.lister(CONFIGMAPS, metadata_only=True).resource == CONFIGMAPS
    async with running(factory.run()):
        assert await factory.wait_for_cache_sync() == {CONFIGMAPS: True}
        lister = factory.lister(CONFIGMAPS, metadata_only=True)
        stored = client.tracker.get(CONFIGMAPS, "a", namespace="ns")
        assert lister.get("ns", "a") == metadata_only(stored)
        assert factory.lister(CONFIGMAPS).get("ns", "a") == stored, "the full one keeps data"
    assert len(client.actions_for("list", CONFIGMAPS)) == 3  # one per informer
    assert len(client.actions_for("watch", CONFIGMAPS)) == 3


async def test_the_transform_sees_the_resources_kind_and_metadata_only(
    client: FakeClient, clock: FakeClock
) -> None:
    seen: list[tuple[str, list[str]]] = []

    def transform(obj: Object) -> Object:
        seen.append((obj["kind"], sorted(obj)))
        obj["metadata"].pop("managedFields", None)
        return obj

    factory = SharedInformerFactory(client, clock=clock, transform=transform)
    factory.for_resource(CONFIGMAPS, metadata_only=True)
    async with running(factory.run()):
        await factory.wait_for_cache_sync()
        await client.create(CONFIGMAPS, configmap("c"))
        await until(lambda: len(seen) == 3)
    assert seen == [("ConfigMap", ["apiVersion", "kind", "metadata"])] * 3


def test_a_client_without_a_metadata_view_is_refused() -> None:
    factory = SharedInformerFactory(ScriptedReader())
    factory.for_resource(PODS)
    with pytest.raises(TypeError, match="metadata_only"):
        factory.for_resource(PODS, metadata_only=True)
    assert len(factory.informers()) == 1


async def test_the_informers_reader_restores_the_kind_on_get_list_and_watch(
    client: FakeClient,
) -> None:
    view = client.metadata_only()
    reader: Reader = RestoredKindReader(view)
    stored = client.tracker.get(CONFIGMAPS, "a", namespace="ns")
    assert (await view.get(CONFIGMAPS, "a", namespace="ns"))["kind"] == "PartialObjectMetadata"
    assert await reader.get(CONFIGMAPS, "a", namespace="ns") == metadata_only(stored)

    kinds: list[str] = []

    def transform(item: Object) -> Object:
        kinds.append(item["kind"])
        return item

    listed = await reader.list(CONFIGMAPS, namespace="ns", transform=transform)
    assert kinds == ["ConfigMap", "ConfigMap"], "restored before the transform"
    assert listed["kind"] == "PartialObjectMetadataList", "the list itself is the server's"
    assert listed["items"][0] == metadata_only(stored)

    since = ListOptions(resource_version=listed["metadata"]["resourceVersion"])
    async with reader.watch(CONFIGMAPS, namespace="ns", options=since) as events:
        created = await client.create(CONFIGMAPS, configmap("c", v="1"))
        event = await anext(events)
    assert event == WatchEvent("ADDED", metadata_only(created))
