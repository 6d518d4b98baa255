"""Finalizers: controller-runtime's AddFinalizer / RemoveFinalizer / ContainsFinalizer cases,
and patch_finalizers on the fake client (the write it sends, and its optimistic lock)."""

from __future__ import annotations

from typing import Any

import pytest

from kcontrol.client import CONFIGMAPS, NAMESPACES, Object, PatchType
from kcontrol.controllerutil import (
    add_finalizer,
    contains_finalizer,
    patch_finalizers,
    remove_finalizer,
)
from kcontrol.errors import Conflict
from kcontrol.testing import FakeClient

FINALIZER = "foo.bar.baz"
OTHER = FINALIZER + "1"


def with_finalizers(*finalizers: str) -> dict[str, Any]:
    return {"metadata": {"name": "d", "finalizers": list(finalizers)}}


def test_add_finalizer_when_not_present() -> None:
    obj = with_finalizers()
    assert add_finalizer(obj, FINALIZER) is True
    assert obj["metadata"]["finalizers"] == [FINALIZER]


def test_add_finalizer_when_already_present() -> None:
    obj = with_finalizers(OTHER, FINALIZER)
    assert add_finalizer(obj, FINALIZER) is False
    assert obj["metadata"]["finalizers"] == [OTHER, FINALIZER]


def test_add_finalizer_appends_after_the_others() -> None:
    obj = with_finalizers(OTHER)
    assert add_finalizer(obj, FINALIZER) is True
    assert obj["metadata"]["finalizers"] == [OTHER, FINALIZER]


def test_add_finalizer_to_an_object_without_metadata_or_list() -> None:
    bare: dict[str, Any] = {}
    assert add_finalizer(bare, FINALIZER) is True
    assert bare == {"metadata": {"finalizers": [FINALIZER]}}


def test_add_finalizer_does_not_change_a_shared_list() -> None:
    shared = [OTHER]
    obj = {"metadata": {"finalizers": shared}}
    add_finalizer(obj, FINALIZER)
    assert shared == [OTHER]


def test_remove_finalizer_if_present() -> None:
    obj = with_finalizers(FINALIZER)
    assert remove_finalizer(obj, FINALIZER) is True
    assert obj["metadata"]["finalizers"] == []


def test_remove_finalizer_removes_every_occurrence_and_keeps_the_others() -> None:
    obj = with_finalizers(FINALIZER, OTHER, FINALIZER)
    assert remove_finalizer(obj, FINALIZER) is True
    assert obj["metadata"]["finalizers"] == [OTHER]


def test_remove_finalizer_when_absent_changes_nothing() -> None:
    obj = with_finalizers(FINALIZER)
    assert remove_finalizer(obj, OTHER) is False
    assert obj["metadata"]["finalizers"] == [FINALIZER]
    bare: dict[str, Any] = {"metadata": {}}
    assert remove_finalizer(bare, FINALIZER) is False
    assert bare == {"metadata": {}}


def test_contains_finalizer() -> None:
    obj = with_finalizers()
    add_finalizer(obj, FINALIZER)
    assert contains_finalizer(obj, FINALIZER) is True
    remove_finalizer(obj, FINALIZER)
    assert contains_finalizer(obj, FINALIZER) is False
    assert contains_finalizer({}, FINALIZER) is False


# -- patch_finalizers ------------------------------------------------------------------------------


def configmap(*finalizers: str) -> Object:
    metadata: dict[str, Any] = {"name": "cm", "namespace": "default"}
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"k": "v"}}


async def test_patch_finalizers_sends_only_the_list_and_the_resource_version() -> None:
    client = FakeClient([configmap()])
    obj = await client.get(CONFIGMAPS, "cm", namespace="default")
    add_finalizer(obj, FINALIZER)
    obj["data"]["k"] = "changed locally, never written"
    client.clear_actions()

    answer = await patch_finalizers(client, CONFIGMAPS, obj)

    [action] = client.actions
    assert (str(action), action.patch_type) == ("patch configmaps default/cm", PatchType.MERGE)
    assert action.patch == {
        "metadata": {
            "finalizers": [FINALIZER],
            "resourceVersion": obj["metadata"]["resourceVersion"],
        }
    }
    assert answer["metadata"]["finalizers"] == [FINALIZER]
    assert answer["data"] == {"k": "v"}


async def test_patch_finalizers_of_a_stale_copy_conflicts_and_keeps_the_other_writers() -> None:
    client = FakeClient([configmap(OTHER)])
    mine = await client.get(CONFIGMAPS, "cm", namespace="default")
    theirs = await client.get(CONFIGMAPS, "cm", namespace="default")
    add_finalizer(theirs, "their/finalizer")
    await patch_finalizers(client, CONFIGMAPS, theirs)

    remove_finalizer(mine, OTHER)
    with pytest.raises(Conflict):
        await patch_finalizers(client, CONFIGMAPS, mine)

    stored = await client.get(CONFIGMAPS, "cm", namespace="default")
    assert stored["metadata"]["finalizers"] == [OTHER, "their/finalizer"]


async def test_patch_finalizers_removing_the_last_one() -> None:
    client = FakeClient([configmap(FINALIZER)])
    obj = await client.get(CONFIGMAPS, "cm", namespace="default")
    remove_finalizer(obj, FINALIZER)
    answer = await patch_finalizers(client, CONFIGMAPS, obj)
    assert not answer["metadata"].get("finalizers")


async def test_patch_finalizers_of_a_cluster_scoped_object() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    client = FakeClient([ns])
    obj = await client.get(NAMESPACES, "team")
    add_finalizer(obj, FINALIZER)
    answer = await patch_finalizers(client, NAMESPACES, obj)
    assert answer["metadata"]["finalizers"] == [FINALIZER]
    assert str(client.actions[-1]) == "patch namespaces team"


async def test_patch_finalizers_needs_a_resource_version() -> None:
    client = FakeClient([configmap()])
    with pytest.raises(ValueError, match="resourceVersion"):
        await patch_finalizers(client, CONFIGMAPS, configmap(FINALIZER))
    assert client.actions == []
