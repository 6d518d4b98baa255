"""The graph builder's cases (upstream's graph_builder and ``TestProcessEvent`` /
``TestConflictingData`` tables, named): virtual nodes, observed identities, owner changes,
transitions, deletes and virtual deletes, cycles, invalid namespaces."""

from __future__ import annotations

from gc_fixtures import (
    NS,
    Harness,
    add,
    event,
    identity,
    obj,
    owner_ref,
    queued,
    rc,
)

from kcontrol_controllers.garbagecollector._graph import ObjectReference
from kcontrol_controllers.garbagecollector._graph_builder import (
    EventType,
    alternate_owner_identity,
    references_diffs,
)


def dependents(h: Harness, uid: str) -> list[str]:
    node = h.builder.uid_to_node.read(uid)
    assert node is not None
    return sorted(d.identity.name for d in node.dependents())


async def test_an_unseen_owner_becomes_a_virtual_node_queued_for_a_check() -> None:
    h = Harness()
    add(h.builder, obj("child", owners=[owner_ref("parent")]))
    parent = h.builder.uid_to_node.read("uid-parent")
    assert parent is not None
    assert parent.virtual and not parent.observed
    assert parent.identity == ObjectReference(
        "v1", "ReplicationController", "parent", "uid-parent", NS
    )
    assert dependents(h, "uid-parent") == ["child"]
    assert await queued(h.builder) == ["parent"]


async def test_an_owner_seen_first_gets_no_virtual_node_and_nothing_is_queued() -> None:
    h = Harness()
    add(h.builder, rc("parent"), obj("child", owners=[owner_ref("parent")]))
    parent = h.builder.uid_to_node.read("uid-parent")
    assert parent is not None and parent.observed and not parent.virtual
    assert dependents(h, "uid-parent") == ["child"]
    assert await queued(h.builder) == []


async def test_observing_a_virtual_node_takes_the_observed_identity() -> None:
    h = Harness()
    # The child names its owner as a ConfigMap; the object with that uid is a ReplicationController.
    add(h.builder, obj("child", owners=[owner_ref("parent", kind="ConfigMap")]))
    assert await queued(h.builder) == ["parent"]
    add(h.builder, rc("parent"))
    parent = h.builder.uid_to_node.read("uid-parent")
    assert parent is not None and parent.observed and not parent.virtual
    assert parent.identity.kind == "ReplicationController"
    # The child's reference disagrees with what was observed: it is checked.
    assert await queued(h.builder) == ["child"]
    assert h.recorder.events == []


async def test_an_owner_observed_in_another_namespace_is_reported_on_the_dependent() -> None:
    h = Harness()
    add(h.builder, obj("child", namespace="ns-a", owners=[owner_ref("parent")]))
    await queued(h.builder)
    add(h.builder, rc("parent", namespace="ns-b"))
    assert await queued(h.builder) == ["child"]
    assert len(h.recorder.events) == 1
    assert h.recorder.events[0].startswith("Warning OwnerRefInvalidNamespace ownerRef [v1/")
    assert "does not exist in namespace 'ns-a'" in h.recorder.events[0]


async def test_a_dependent_added_after_an_owner_of_another_namespace_is_reported() -> None:
    h = Harness()
    add(h.builder, rc("parent", namespace="ns-b"))
    add(h.builder, obj("child", namespace="ns-a", owners=[owner_ref("parent")]))
    assert await queued(h.builder) == ["child"]
    assert [e.split()[1] for e in h.recorder.events] == ["OwnerRefInvalidNamespace"]


async def test_a_cluster_scoped_owner_of_a_namespaced_dependent_is_valid() -> None:
    h = Harness()
    node_owner = obj("n1", kind="Node", namespace=None)
    add(h.builder, node_owner, obj("child", owners=[owner_ref("n1", kind="Node")]))
    assert await queued(h.builder) == []
    assert h.recorder.events == []
    assert dependents(h, "uid-n1") == ["child"]


async def test_changed_owner_references_move_the_dependent() -> None:
    h = Harness()
    old_owner, new_owner = rc("old"), rc("new")
    child = obj("child", owners=[owner_ref("old")])
    add(h.builder, old_owner, new_owner, child)
    moved = obj("child", owners=[owner_ref("new")])
    h.builder.process_event(event(EventType.UPDATE, moved, old=child))
    assert dependents(h, "uid-old") == []
    assert dependents(h, "uid-new") == ["child"]
    assert await queued(h.builder) == []  # the removed reference did not block


async def test_an_owner_a_blocking_reference_is_removed_from_is_queued() -> None:
    h = Harness()
    child = obj("child", owners=[owner_ref("parent", block=True)])
    add(h.builder, rc("parent"), child)
    unblocked = obj("child", owners=[owner_ref("parent", block=False)])
    h.builder.process_event(event(EventType.UPDATE, unblocked, old=child))
    assert await queued(h.builder) == ["parent"]
    released = obj("child")
    h.builder.process_event(event(EventType.UPDATE, released, old=unblocked))
    assert await queued(h.builder) == []  # no longer blocking: nothing to wake
    assert dependents(h, "uid-parent") == []


async def test_deletion_with_the_orphan_finalizer_queues_an_orphan_attempt() -> None:
    h = Harness()
    parent = rc("parent", finalizers=["orphan"])
    add(h.builder, parent, obj("child", owners=[owner_ref("parent")]))
    deleting = rc("parent", finalizers=["orphan"], deleting=True)
    h.builder.process_event(event(EventType.UPDATE, deleting, old=parent))
    assert await queued(h.builder, "orphan") == ["parent"]
    assert await queued(h.builder) == []
    # The same state seen again (a resync) is no new transition.
    h.builder.process_event(event(EventType.UPDATE, deleting, old=deleting))
    assert await queued(h.builder, "orphan") == []


async def test_foreground_deletion_queues_the_owner_and_its_dependents() -> None:
    h = Harness()
    parent = rc("parent", finalizers=["foregroundDeletion"])
    add(h.builder, parent, obj("a", owners=[owner_ref("parent")]))
    add(h.builder, obj("b", owners=[owner_ref("parent")]))
    deleting = rc("parent", finalizers=["foregroundDeletion"], deleting=True)
    h.builder.process_event(event(EventType.UPDATE, deleting, old=parent))
    node = h.builder.uid_to_node.read("uid-parent")
    assert node is not None and node.deleting_dependents and node.being_deleted
    assert sorted(await queued(h.builder)) == ["a", "b", "parent"]


async def test_an_object_first_seen_deleting_in_the_foreground_is_marked() -> None:
    h = Harness()
    add(h.builder, rc("parent", finalizers=["foregroundDeletion"], deleting=True))
    node = h.builder.uid_to_node.read("uid-parent")
    assert node is not None and node.deleting_dependents
    assert await queued(h.builder) == ["parent"]


async def test_deleting_an_owner_queues_its_dependents_and_remembers_it_absent() -> None:
    h = Harness()
    parent = rc("parent")
    add(h.builder, parent, obj("a", owners=[owner_ref("parent")]))
    h.builder.process_event(event(EventType.DELETE, parent))
    assert h.builder.uid_to_node.read("uid-parent") is None
    assert await queued(h.builder) == ["a"]
    assert h.builder.absent_owner_cache.has(identity(parent))


async def test_deleting_a_dependent_wakes_an_owner_deleting_its_dependents() -> None:
    h = Harness()
    child = obj("a", owners=[owner_ref("parent", block=True)])
    add(h.builder, rc("parent", finalizers=["foregroundDeletion"], deleting=True), child)
    await queued(h.builder)
    h.builder.process_event(event(EventType.DELETE, child))
    assert await queued(h.builder) == ["parent"]
    assert dependents(h, "uid-parent") == []


async def test_a_virtual_delete_removes_a_virtual_node() -> None:
    h = Harness()
    add(h.builder, obj("child", owners=[owner_ref("parent")]))
    await queued(h.builder)
    virtual = h.builder.uid_to_node.read("uid-parent")
    assert virtual is not None
    h.builder.enqueue_virtual_delete(virtual.identity)
    h.builder.process_event(await h.builder.graph_changes.get())
    assert h.builder.uid_to_node.read("uid-parent") is None
    assert await queued(h.builder) == ["child"]


async def test_a_virtual_delete_of_other_coordinates_keeps_an_observed_node() -> None:
    h = Harness()
    add(h.builder, rc("parent"), obj("child", owners=[owner_ref("parent", kind="ConfigMap")]))
    await queued(h.builder)
    wrong = ObjectReference("v1", "ConfigMap", "parent", "uid-parent", NS)
    h.builder.enqueue_virtual_delete(wrong)
    h.builder.process_event(await h.builder.graph_changes.get())
    assert h.builder.uid_to_node.read("uid-parent") is not None
    assert await queued(h.builder) == ["child"]
    assert h.builder.absent_owner_cache.has(wrong)


async def test_a_virtual_node_named_two_ways_is_replaced_not_removed() -> None:
    h = Harness()
    add(
        h.builder,
        obj("good", owners=[owner_ref("parent")]),
        obj("bad", owners=[owner_ref("parent", kind="ConfigMap")]),
    )
    await queued(h.builder)
    virtual = h.builder.uid_to_node.read("uid-parent")
    assert virtual is not None and virtual.identity.kind == "ReplicationController"
    h.builder.enqueue_virtual_delete(virtual.identity)
    h.builder.process_event(await h.builder.graph_changes.get())
    replaced = h.builder.uid_to_node.read("uid-parent")
    assert replaced is not None and replaced.virtual
    assert replaced.identity.kind == "ConfigMap"
    assert await queued(h.builder) == ["good"]


async def test_a_cycle_links_each_node_to_the_other() -> None:
    h = Harness()
    add(
        h.builder,
        obj("a", owners=[owner_ref("b", kind="ConfigMap", block=True)]),
        obj("b", owners=[owner_ref("a", kind="ConfigMap", block=True)]),
    )
    assert dependents(h, "uid-a") == ["b"]
    assert dependents(h, "uid-b") == ["a"]
    a = h.builder.uid_to_node.read("uid-a")
    assert a is not None and a.observed  # the virtual node made for a was observed
    assert [d.identity.name for d in a.blocking_dependents()] == ["b"]


def test_references_diffs() -> None:
    kept, changed_old = owner_ref("kept"), owner_ref("changed", block=True)
    added, removed, changed = references_diffs(
        [kept, changed_old, owner_ref("gone")],
        [kept, owner_ref("changed", block=False), owner_ref("new")],
    )
    assert [r["name"] for r in added] == ["new"]
    assert [r["name"] for r in removed] == ["gone"]
    assert [(o["blockOwnerDeletion"], n["blockOwnerDeletion"]) for o, n in changed] == [
        (True, False)
    ]


def test_alternate_owner_identity_prefers_the_next_coordinates() -> None:
    h = Harness()
    add(h.builder, obj("a", owners=[owner_ref("p", kind="ConfigMap")]))
    node = h.builder.uid_to_node.read("uid-a")
    assert node is not None
    absent = ObjectReference("v1", "ConfigMap", "p", "uid-p", NS)
    found = alternate_owner_identity([node], absent)
    assert found == ObjectReference("v1", "ConfigMap", "p", "uid-p", "")
    assert alternate_owner_identity([node], ObjectReference("v1", "Other", "p", "uid-x")) is None
