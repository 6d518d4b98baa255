"""The event handlers: which requests an object's events enqueue (controller-runtime's
enqueue_owner_test.go cases), predicates applied before mapping, tombstones unwrapped."""

from __future__ import annotations

from typing import Any

from kcontrol.builder import (
    EnqueueHandler,
    Request,
    enqueue_for_object,
    enqueue_for_owner,
    generation_changed,
)
from kcontrol.client import DEPLOYMENTS, NAMESPACES, Resource
from kcontrol.informers import DeletedFinalStateUnknown

WEBSITES = Resource("demo.example.com", "v1", "websites", "Website")


def ref(
    kind: str, name: str, *, api_version: str = "demo.example.com/v1", controller: bool = True
) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": f"uid-{name}",
        "controller": controller,
    }


def owned(
    *refs: dict[str, Any], namespace: str = "ns", name: str = "child", **meta: Any
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "ownerReferences": list(refs), **meta}
    }


def test_enqueue_for_object() -> None:
    assert enqueue_for_object(owned()) == [Request("ns", "child")]
    assert enqueue_for_object({"metadata": {"name": "node-1"}}) == [Request("", "node-1")]


def test_owner_maps_to_controller_in_objects_namespace() -> None:
    owners = enqueue_for_owner(WEBSITES)
    assert owners(owned(ref("Website", "web"))) == [Request("ns", "web")]


def test_owner_ignores_other_kinds_groups_and_non_controllers() -> None:
    owners = enqueue_for_owner(WEBSITES)
    assert owners(owned(ref("Deployment", "web", api_version="apps/v1"))) == []
    assert owners(owned(ref("Website", "web", api_version="other.example.com/v1"))) == []
    assert owners(owned(ref("Website", "web", controller=False))) == []
    assert owners(owned()) == []
    assert owners({"metadata": {"name": "x", "namespace": "ns"}}) == []


def test_owner_matches_any_version_of_the_group() -> None:
    owners = enqueue_for_owner(WEBSITES)
    assert owners(owned(ref("Website", "web", api_version="demo.example.com/v1beta1"))) == [
        Request("ns", "web")
    ]


def test_all_owners_when_not_only_controller() -> None:
    owners = enqueue_for_owner(WEBSITES, only_controller=False)
    found = owners(owned(ref("Website", "a", controller=False), ref("Website", "b")))
    assert found == [Request("ns", "a"), Request("ns", "b")]


def test_cluster_scoped_owner_has_no_namespace() -> None:
    owners = enqueue_for_owner(NAMESPACES)
    child = owned(ref("Namespace", "team-a", api_version="v1"), namespace="team-a")
    assert owners(child) == [Request("", "team-a")]
    deployments = enqueue_for_owner(DEPLOYMENTS)
    assert deployments(owned(ref("Deployment", "d", api_version="apps/v1"))) == [Request("ns", "d")]


class Sink:
    def __init__(self) -> None:
        self.keys: list[str] = []

    def add(self, key: str) -> None:
        self.keys.append(key)


def test_update_enqueues_old_and_new_owner() -> None:
    sink = Sink()
    handler = EnqueueHandler(enqueue_for_owner(WEBSITES), sink.add)
    handler.on_update(owned(ref("Website", "old")), owned(ref("Website", "new")))
    assert sorted(sink.keys) == ["ns/new", "ns/old"]


def test_update_with_same_owner_enqueues_it_once() -> None:
    sink = Sink()
    handler = EnqueueHandler(enqueue_for_owner(WEBSITES), sink.add)
    handler.on_update(owned(ref("Website", "web")), owned(ref("Website", "web")))
    assert sink.keys == ["ns/web"]


def test_delete_unwraps_tombstones() -> None:
    sink = Sink()
    handler = EnqueueHandler(enqueue_for_owner(WEBSITES), sink.add)
    handler.on_delete(DeletedFinalStateUnknown("ns/child", owned(ref("Website", "gone"))))
    handler.on_delete(owned(ref("Website", "web")))
    assert sink.keys == ["ns/gone", "ns/web"]


def test_predicates_filter_before_mapping() -> None:
    sink = Sink()
    mapped: list[Any] = []

    def map_func(obj: Any) -> list[Request]:
        mapped.append(obj)
        return enqueue_for_object(obj)

    handler = EnqueueHandler(map_func, sink.add, [generation_changed()])
    handler.on_update(owned(generation=1), owned(generation=1))
    assert sink.keys == [] and mapped == []
    handler.on_update(owned(generation=1), owned(generation=2))
    assert sink.keys == ["ns/child"]
    handler.on_add(owned(generation=3), True)
    assert sink.keys == ["ns/child", "ns/child"]
