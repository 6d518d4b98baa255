"""FakeClient.metadata_only: the PartialObjectMetadata a real server sends, from the fake."""

from __future__ import annotations

from typing import Any

import pytest

from kcontrol.client import PODS, ListOptions, Object, Reader, WatchEvent
from kcontrol.clock import FakeClock
from kcontrol.errors import NotFound
from kcontrol.testing import Action, FakeClient
from kcontrol.testing.fake import FakeMetadataClient

PARTIAL = {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata"}


def pod(name: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


@pytest.fixture
def client() -> FakeClient:
    return FakeClient([pod("a"), pod("b"), pod("c")], clock=FakeClock())


def test_the_view_is_a_reader() -> None:
    def check(view: FakeMetadataClient) -> Reader:
        return view  # mypy verifies the structural match

    assert isinstance(FakeClient().metadata_only(), FakeMetadataClient)


async def test_get_reduces_the_object_and_records_the_action(client: FakeClient) -> None:
    stored = client.tracker.get(PODS, "a", namespace="ns")
    obj = await client.metadata_only().get(PODS, "a", namespace="ns")
    assert obj == {**PARTIAL, "metadata": stored["metadata"]}
    assert client.actions == [Action(verb="get", resource=PODS, namespace="ns", name="a")]
    with pytest.raises(NotFound):
        await client.metadata_only().get(PODS, "missing", namespace="ns")


async def test_list_pages_are_partial_object_metadata_lists(client: FakeClient) -> None:
    seen: list[Object] = []

    def transform(item: Object) -> Object:
        seen.append(item)
        return item

    view = client.metadata_only()
    first = await view.list(PODS, namespace="ns", options=ListOptions(limit=2), transform=transform)
    token = first["metadata"]["continue"]
    rest = await view.list(PODS, namespace="ns", options=ListOptions(limit=2, continue_=token))
    assert (first["apiVersion"], first["kind"]) == ("meta.k8s.io/v1", "PartialObjectMetadataList")
    items = first["items"] + rest["items"]
    stored = client.tracker.objects(PODS, "ns")
    assert items == [{**PARTIAL, "metadata": obj["metadata"]} for obj in stored]
    assert seen == first["items"], "the transform gets each reduced item"
    assert "continue" not in rest["metadata"]
    assert [a.verb for a in client.actions] == ["list", "list"]


async def test_reactor_answers_are_reduced_too(client: FakeClient) -> None:
    def answer(action: Action) -> Any:
        return {"kind": "PodList", "metadata": {"resourceVersion": "9"}, "items": [pod("z")]}

    client.prepend_reactor("list", PODS, answer)
    page = await client.metadata_only().list(PODS, namespace="ns")
    assert page["items"] == [{**PARTIAL, "metadata": pod("z")["metadata"]}]
    assert page["metadata"] == {"resourceVersion": "9"}


async def test_watch_events_carry_partial_object_metadata(client: FakeClient) -> None:
    view = client.metadata_only()
    since = (await view.list(PODS, namespace="ns"))["metadata"]["resourceVersion"]
    options = ListOptions(resource_version=since)
    async with view.watch(PODS, namespace="ns", options=options) as events:
        created = await client.create(PODS, pod("d"))
        await client.delete(PODS, "a", namespace="ns")
        received = [await anext(events), await anext(events)]
    assert [e.type for e in received] == ["ADDED", "DELETED"]
    assert received[0] == WatchEvent("ADDED", {**PARTIAL, "metadata": created["metadata"]})
    assert all(set(e.object) == {"apiVersion", "kind", "metadata"} for e in received)
    assert [a.verb for a in client.actions_for(resource=PODS)] == [
        "list",
        "watch",
        "create",
        "delete",
    ]
