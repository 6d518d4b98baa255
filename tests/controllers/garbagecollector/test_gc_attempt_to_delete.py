"""``attemptToDeleteItem`` and ``attemptToOrphan`` decisions on the fake client (upstream's
``TestAttemptToDeleteItem``, ``TestGarbageCollectorSync`` decisions, ``TestOrphan...``),
named cases asserting the writes sent."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from gc_fixtures import NS, Harness, add, obj, owner_ref, queued, rc

from kcontrol.client import CONFIGMAPS
from kcontrol.errors import Conflict
from kcontrol_controllers.garbagecollector._collector import (
    NamespacedOwnerOfClusterScopedObject,
    VirtualDeleteEnqueued,
)
from kcontrol_controllers.garbagecollector._graph import Node


async def attempt(h: Harness, name: str, uid: str | None = None) -> None:
    node = h.builder.uid_to_node.read(uid or f"uid-{name}")
    assert node is not None
    await h.collector.attempt_to_delete_item(node)


def node_of(h: Harness, name: str) -> Node:
    node = h.builder.uid_to_node.read(f"uid-{name}")
    assert node is not None
    return node


@pytest.mark.parametrize(
    ("name", "owners_in_api", "child_finalizers", "writes"),
    [
        ("dangling owner: background", [], None, ["delete configmaps child Background"]),
        (
            "owner of another uid is dangling",
            [rc("parent", uid="uid-other")],
            None,
            ["delete configmaps child Background"],
        ),
        ("solid owner: nothing", [rc("parent")], None, []),
        (
            "orphan finalizer honoured",
            [],
            ["orphan"],
            ["delete configmaps child Orphan"],
        ),
        (
            "foreground finalizer honoured",
            [],
            ["foregroundDeletion"],
            ["delete configmaps child Foreground"],
        ),
        (
            "owner waiting, no dependents: background",
            [rc("parent", finalizers=["foregroundDeletion"], deleting=True)],
            None,
            ["delete configmaps child Background"],
        ),
    ],
    ids=lambda v: v if isinstance(v, str) and " " in v else "",
)
async def test_one_owner(
    name: str,
    owners_in_api: list[dict[str, Any]],
    child_finalizers: list[str] | None,
    writes: list[str],
) -> None:
    child = obj("child", owners=[owner_ref("parent")], finalizers=child_finalizers)
    h = Harness(child, *owners_in_api)
    add(h.builder, child)
    await attempt(h, "child")
    assert h.writes() == writes
    for delete in h.client.actions_for("delete"):
        assert delete.options["preconditions"]["uid"] == "uid-child"
        assert delete.options["preconditions"]["resourceVersion"]


async def test_solid_and_dangling_owners_remove_only_the_dangling_reference() -> None:
    refs = [owner_ref("alive"), owner_ref("gone"), owner_ref("cm", kind="ConfigMap")]
    child = obj("child", owners=refs)
    waiting = rc("alive")
    h = Harness(child, waiting, obj("cm", uid="uid-cm"))
    add(h.builder, child)
    await attempt(h, "child")
    assert h.client.actions_for("delete") == []
    stored = await h.client.get(CONFIGMAPS, "child", namespace=NS)
    assert [r["name"] for r in stored["metadata"]["ownerReferences"]] == ["alive", "cm"]
    (patch,) = h.client.actions_for("patch")
    assert patch.patch["metadata"]["uid"] == "uid-child"
    assert patch.patch["metadata"]["resourceVersion"]


async def test_a_waiting_owner_reference_beside_a_solid_one_is_removed() -> None:
    child = obj("child", owners=[owner_ref("alive"), owner_ref("going")])
    going = rc("going", finalizers=["foregroundDeletion"], deleting=True)
    h = Harness(child, rc("alive"), going)
    add(h.builder, child)
    await attempt(h, "child")
    stored = await h.client.get(CONFIGMAPS, "child", namespace=NS)
    assert [r["name"] for r in stored["metadata"]["ownerReferences"]] == ["alive"]


async def test_an_owner_waiting_and_dependents_to_delete_mean_foreground() -> None:
    middle = rc("middle", owners=[owner_ref("top", block=True)])
    h = Harness(middle, rc("top", finalizers=["foregroundDeletion"], deleting=True))
    add(h.builder, middle, obj("leaf", owners=[owner_ref("middle", block=True)]))
    await attempt(h, "middle")
    assert h.writes() == ["delete replicationcontrollers middle Foreground"]


async def test_a_cycle_is_unblocked_before_the_foreground_delete() -> None:
    a = rc("a", owners=[owner_ref("b", block=True)])
    b_deleting = rc(
        "b", owners=[owner_ref("a", block=True)], finalizers=["foregroundDeletion"], deleting=True
    )
    h = Harness(a, b_deleting)
    add(h.builder, a, b_deleting)
    assert node_of(h, "b").deleting_dependents
    await attempt(h, "a")
    writes = h.writes()
    assert writes[-1] == "delete replicationcontrollers a Foreground"
    assert writes[0].startswith("patch replicationcontrollers a")
    (unblock,) = h.client.actions_for("patch")
    assert unblock.patch["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] is False
    (delete,) = h.client.actions_for("delete")
    assert delete.options["preconditions"] == {"uid": "uid-a"}


async def test_a_missing_item_becomes_a_virtual_delete() -> None:
    h = Harness()
    add(h.builder, obj("child", owners=[owner_ref("parent")]))
    await queued(h.builder)
    with pytest.raises(VirtualDeleteEnqueued):
        await attempt(h, "parent")
    event = await h.builder.graph_changes.get()
    assert event.virtual and event.obj["metadata"]["uid"] == "uid-parent"
    assert h.writes() == []


async def test_an_item_of_another_uid_becomes_a_virtual_delete() -> None:
    h = Harness(rc("parent", uid="uid-new"))
    add(h.builder, obj("child", owners=[owner_ref("parent")]))
    with pytest.raises(VirtualDeleteEnqueued):
        await attempt(h, "parent")
    assert h.writes() == []


async def test_an_item_being_deleted_in_the_background_is_left_alone() -> None:
    child = obj("child", owners=[owner_ref("parent")], deleting=True, finalizers=["x"])
    h = Harness(child)
    add(h.builder, child)
    await attempt(h, "child")
    assert h.client.actions == []


async def test_a_cluster_scoped_item_naming_a_namespaced_owner_is_never_retried() -> None:
    node = obj("n1", kind="Node", namespace=None, owners=[owner_ref("parent")])
    h = Harness(node)
    add(h.builder, node)
    with pytest.raises(NamespacedOwnerOfClusterScopedObject):
        await attempt(h, "n1")
    assert await h.collector.process_attempt_to_delete(node_of(h, "n1")) is False
    assert h.writes() == []


async def test_absent_owners_are_read_once() -> None:
    a = obj("a", owners=[owner_ref("parent")])
    b = obj("b", owners=[owner_ref("parent")])
    h = Harness(a, b)
    add(h.builder, a, b)
    await attempt(h, "a")
    await attempt(h, "b")
    owner_gets = [x for x in h.client.actions_for("get") if x.name == "parent"]
    assert len(owner_gets) == 1
    assert sorted(h.writes()) == [
        "delete configmaps a Background",
        "delete configmaps b Background",
    ]


async def test_foreground_owner_without_blocking_dependents_loses_its_finalizer() -> None:
    parent = rc("parent", finalizers=["foregroundDeletion", "other"], deleting=True)
    h = Harness(parent, obj("loose", owners=[owner_ref("parent", block=False)]))
    add(h.builder, parent, obj("loose", owners=[owner_ref("parent", block=False)]))
    await attempt(h, "parent")
    stored = await h.client.get(h.client.actions[0].resource, "parent", namespace=NS)
    assert stored["metadata"]["finalizers"] == ["other"]


async def test_foreground_owner_with_blocking_dependents_queues_them() -> None:
    parent = rc("parent", finalizers=["foregroundDeletion"], deleting=True)
    leaf = obj("leaf", owners=[owner_ref("parent", block=True)])
    h = Harness(parent, leaf)
    add(h.builder, parent, leaf)
    await queued(h.builder)
    await attempt(h, "parent")
    assert h.writes() == []
    assert await queued(h.builder) == ["leaf"]


async def test_a_conflicting_delete_is_sent_again_without_the_resource_version() -> None:
    child = obj("child", owners=[owner_ref("parent")])
    h = Harness(child)
    add(h.builder, child)
    calls = []

    def conflict_once(action: Any) -> tuple[bool, Any]:
        calls.append(action)
        if len(calls) == 1:
            raise Conflict("the object has been modified")
        return None

    h.client.prepend_reactor("delete", "configmaps", conflict_once)
    await attempt(h, "child")
    deletes = h.client.actions_for("delete")
    assert [sorted(d.options["preconditions"]) for d in deletes] == [
        ["resourceVersion", "uid"],
        ["uid"],
    ]


async def test_orphaning_removes_the_owner_from_dependents_then_the_finalizer() -> None:
    parent = rc("parent", finalizers=["orphan"], deleting=True)
    a = obj("a", owners=[owner_ref("parent"), owner_ref("other")])
    b = obj("b", owners=[owner_ref("parent")])
    h = Harness(parent, a, b, rc("other"))
    add(h.builder, parent, a, b)
    await h.collector.attempt_to_orphan(node_of(h, "parent"))
    stored_a = await h.client.get(CONFIGMAPS, "a", namespace=NS)
    stored_b = await h.client.get(CONFIGMAPS, "b", namespace=NS)
    assert [r["name"] for r in stored_a["metadata"]["ownerReferences"]] == ["other"]
    assert "ownerReferences" not in stored_b["metadata"]
    patches = [f"{p.resource.plural} {p.name}" for p in h.client.actions_for("patch")]
    assert patches[-1] == "replicationcontrollers parent"
    assert sorted(patches[:-1]) == ["configmaps a", "configmaps b"]


async def test_orphaning_keeps_the_finalizer_while_a_dependent_fails() -> None:
    parent = rc("parent", finalizers=["orphan"], deleting=True)
    a = obj("a", owners=[owner_ref("parent")])
    h = Harness(parent, a)
    add(h.builder, parent, a)

    def refuse(action: Any) -> None:
        raise Conflict("busy")

    h.client.prepend_reactor("patch", "configmaps", refuse)
    with pytest.raises(Exception, match="orphaning dependents"):
        await h.collector.attempt_to_orphan(node_of(h, "parent"))
    assert h.client.actions_for("patch", "replicationcontrollers") == []


async def test_a_virtual_node_is_retried_until_observed() -> None:
    h = Harness(rc("parent"))
    add(h.builder, obj("child", owners=[owner_ref("parent")]))
    (virtual,) = [n for n in await _nodes(h) if n.identity.name == "parent"]
    assert await h.collector.process_attempt_to_delete(virtual) is True
    add(h.builder, rc("parent"))
    assert await h.collector.process_attempt_to_delete(virtual) is False


async def _nodes(h: Harness) -> list[Node]:
    from gc_fixtures import queued_nodes  # noqa: PLC0415

    return await queued_nodes(h.builder)


async def test_an_attempt_that_hangs_times_out_and_is_retried() -> None:
    child = obj("child", owners=[owner_ref("parent")])
    h = Harness(child, attempt_timeout=0.05)
    add(h.builder, child)

    async def hang(action: Any) -> None:
        await asyncio.sleep(3600)

    h.client.prepend_reactor("get", "configmaps", hang)
    assert await h.collector.process_attempt_to_delete(node_of(h, "child")) is True
