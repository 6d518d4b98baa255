"""Owner references, mirroring controller-runtime's controllerutil_test.go (SetOwnerReference,
SetControllerReference, RemoveOwnerReference, RemoveControllerReference,
HasControllerReference, HasOwnerReference)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kcontrol.controllerutil import (
    AlreadyOwned,
    has_controller_reference,
    has_owner_reference,
    remove_controller_reference,
    remove_owner_reference,
    set_controller_reference,
    set_owner_reference,
)
from kcontrol.errors import KcontrolError


def deployment(name: str = "foo", uid: str = "foo-uid", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "extensions/v1beta1",
        "kind": "Deployment",
        "metadata": {"name": name, "uid": uid, **meta},
    }


def replicaset(*refs: dict[str, Any], **meta: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = dict(meta)
    if refs:
        metadata["ownerReferences"] = [dict(r) for r in refs]
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": metadata}


def ref(
    api_version: str = "extensions/v1beta1", uid: str = "foo-uid", **extra: Any
) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": "Deployment", "name": "foo", "uid": uid, **extra}


def refs_of(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return list(obj["metadata"].get("ownerReferences") or [])


# -- SetOwnerReference ----------------------------------------------------------------------------


def test_set_owner_reference_on_an_empty_list() -> None:
    rs = replicaset()
    set_owner_reference(deployment(), rs)
    assert refs_of(rs) == [ref()]


def test_set_owner_reference_sets_block_owner_deletion_when_asked() -> None:
    rs = replicaset()
    set_owner_reference(deployment(), rs, block_owner_deletion=True)
    assert refs_of(rs) == [ref(blockOwnerDeletion=True)]


def test_set_owner_reference_does_not_duplicate() -> None:
    rs = replicaset(ref())
    set_owner_reference(deployment(), rs)
    assert refs_of(rs) == [ref()]


def test_set_owner_reference_updates_the_reference_to_the_same_owner() -> None:
    # Same group, kind and name: the version and UID of the new owner win.
    rs = replicaset(ref("extensions/v1alpha1", uid="foo-uid-1"))
    set_owner_reference(deployment(uid="foo-uid-2"), rs)
    assert refs_of(rs) == [ref(uid="foo-uid-2")]


def test_set_owner_reference_keeps_other_owners_and_their_order() -> None:
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "foo", "uid": "cm-uid"}
    same_name_other_group = {
        "apiVersion": "demo.example.com/v1",
        "kind": "Deployment",
        "name": "foo",
        "uid": "crd-uid",
    }
    rs = replicaset(other, ref("extensions/v1alpha1", uid="old"), same_name_other_group)
    set_owner_reference(deployment(), rs)
    assert refs_of(rs) == [other, ref(), same_name_other_group]


def test_set_owner_reference_replaces_a_controller_reference_by_a_plain_one() -> None:
    rs = replicaset(ref(controller=True, blockOwnerDeletion=True))
    set_owner_reference(deployment(), rs)
    assert refs_of(rs) == [ref()]
    assert not has_controller_reference(rs)


# -- RemoveOwnerReference / RemoveControllerReference ------------------------------------------


def test_remove_owner_reference() -> None:
    rs = replicaset(ref("extensions/v1alpha1", uid="foo-uid-1"))
    dep = deployment(uid="foo-uid-2")
    set_owner_reference(dep, rs)
    assert remove_owner_reference(dep, rs) is True
    assert refs_of(rs) == []


def test_remove_owner_reference_set_by_set_controller_reference() -> None:
    rs = replicaset()
    dep = deployment()
    set_controller_reference(dep, rs)
    assert refs_of(rs) == [ref(controller=True, blockOwnerDeletion=True)]
    assert remove_owner_reference(dep, rs) is True
    assert refs_of(rs) == []


def test_remove_owner_reference_that_does_not_exist() -> None:
    rs = replicaset()
    assert remove_owner_reference(deployment(), rs) is False
    assert refs_of(rs) == []


def test_remove_owner_reference_of_another_owner_leaves_the_list() -> None:
    rs = replicaset()
    set_owner_reference(deployment(), rs)
    assert remove_owner_reference(deployment("bar", "bar-uid-3"), rs) is False
    assert len(refs_of(rs)) == 1


def test_remove_owner_reference_keeps_the_other_entries() -> None:
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "cm-uid"}
    rs = replicaset(other, ref())
    assert remove_owner_reference(deployment(), rs) is True
    assert refs_of(rs) == [other]


def test_has_controller_reference() -> None:
    with_controller, plain = replicaset(), replicaset()
    set_controller_reference(deployment(uid="foo-uid-2"), with_controller)
    set_owner_reference(deployment(uid="foo-uid-2"), plain)
    assert has_controller_reference(with_controller) is True
    assert has_controller_reference(plain) is False
    assert has_controller_reference(replicaset()) is False


def test_remove_controller_reference_refuses_a_plain_owner_reference() -> None:
    rs = replicaset()
    dep = deployment(uid="foo-uid-2")
    set_owner_reference(dep, rs)
    assert remove_controller_reference(dep, rs) is False
    assert len(refs_of(rs)) == 1


def test_remove_controller_reference_refuses_an_owner_that_is_not_the_controller() -> None:
    rs = replicaset()
    dep, dep2 = deployment(uid="foo-uid-2"), deployment("foo-2", "foo-uid-42")
    set_controller_reference(dep, rs)
    set_owner_reference(dep2, rs)
    assert remove_controller_reference(dep2, rs) is False
    assert len(refs_of(rs)) == 2


def test_remove_controller_reference() -> None:
    rs = replicaset()
    dep = deployment(uid="foo-uid-2")
    set_controller_reference(dep, rs)
    assert remove_controller_reference(dep, rs) is True
    assert refs_of(rs) == []


# -- SetControllerReference -----------------------------------------------------------------------


def test_set_controller_reference() -> None:
    rs = replicaset()
    set_controller_reference(deployment(), rs)
    assert refs_of(rs) == [ref(controller=True, blockOwnerDeletion=True)]


@pytest.mark.parametrize(
    "owner",
    [
        pytest.param(
            {"kind": "Deployment", "metadata": {"name": "foo", "uid": "u"}}, id="no-apiVersion"
        ),
        pytest.param(
            {"apiVersion": "apps/v1", "metadata": {"name": "foo", "uid": "u"}}, id="no-kind"
        ),
        pytest.param(
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"uid": "u"}}, id="no-name"
        ),
        pytest.param(
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "foo"}},
            id="no-uid",
        ),
    ],
)
def test_set_controller_reference_needs_a_complete_owner(owner: dict[str, Any]) -> None:
    rs = replicaset()
    with pytest.raises(ValueError, match="owner"):
        set_controller_reference(owner, rs)
    assert refs_of(rs) == []


def test_set_controller_reference_refuses_a_second_controller() -> None:
    theirs = ref(uid="bar-uid", controller=True, blockOwnerDeletion=True) | {"name": "bar"}
    rs = replicaset(theirs, name="foo", namespace="default")
    before = copy.deepcopy(rs)
    with pytest.raises(AlreadyOwned) as raised:
        set_controller_reference(deployment(namespace="default"), rs)
    assert isinstance(raised.value, KcontrolError)
    assert raised.value.owner == theirs
    assert "already owned by another Deployment controller bar" in str(raised.value)
    assert rs == before


def test_set_controller_reference_does_not_duplicate_an_existing_reference() -> None:
    rs = replicaset(ref(controller=False, blockOwnerDeletion=True), name="foo", namespace="default")
    set_controller_reference(deployment(namespace="default"), rs)
    assert refs_of(rs) == [ref(controller=True, blockOwnerDeletion=True)]


def test_set_controller_reference_replaces_the_reference_if_present() -> None:
    rs = replicaset(
        ref("extensions/v1alpha1", controller=True, blockOwnerDeletion=True),
        name="foo",
        namespace="default",
    )
    set_controller_reference(deployment(namespace="default"), rs)
    assert refs_of(rs) == [ref(controller=True, blockOwnerDeletion=True)]


def test_set_controller_reference_accepts_the_existing_controller_at_another_version() -> None:
    rs = replicaset(
        ref("extensions/v1alpha1", controller=False, blockOwnerDeletion=True),
        name="foo",
        namespace="default",
    )
    set_controller_reference(deployment(namespace="default"), rs)
    # apiVersion is the new owner's one.
    assert refs_of(rs) == [ref(controller=True, blockOwnerDeletion=True)]


def test_set_controller_reference_refuses_a_cross_namespace_owner() -> None:
    rs = replicaset(name="foo", namespace="namespace1")
    with pytest.raises(ValueError, match="cross-namespace"):
        set_controller_reference(deployment(namespace="namespace2"), rs)
    assert refs_of(rs) == []


def test_set_owner_reference_refuses_a_cross_namespace_owner_too() -> None:
    rs = replicaset(name="foo", namespace="namespace1")
    with pytest.raises(ValueError, match="cross-namespace"):
        set_owner_reference(deployment(namespace="namespace2"), rs)


def test_set_controller_reference_refuses_a_namespaced_owner_of_a_cluster_scoped_object() -> None:
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "foo"}}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "foo", "namespace": "default", "uid": "foo-uid"},
    }
    with pytest.raises(ValueError, match="cluster-scoped"):
        set_controller_reference(pod, pv)
    assert "ownerReferences" not in pv["metadata"]


def test_set_controller_reference_accepts_a_cluster_scoped_owner_of_anything() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "n1-uid"}}
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "n1", "namespace": "kube-node-lease"},
    }
    set_controller_reference(node, lease)
    assert refs_of(lease) == [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "name": "n1",
            "uid": "n1-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_set_controller_reference_with_block_owner_deletion_false() -> None:
    rs = replicaset()
    set_controller_reference(deployment(), rs, block_owner_deletion=False)
    assert refs_of(rs) == [ref(controller=True, blockOwnerDeletion=False)]


def test_set_controller_reference_does_not_share_the_list_it_was_given() -> None:
    shared = [ref("v1", uid="x") | {"kind": "ConfigMap"}]
    rs = replicaset()
    rs["metadata"]["ownerReferences"] = shared
    set_controller_reference(deployment(), rs)
    assert len(shared) == 1 and len(refs_of(rs)) == 2


# -- HasOwnerReference ----------------------------------------------------------------------------


def test_has_owner_reference() -> None:
    rs = replicaset(name="foo", uid="foo-uid")
    dep = deployment()
    assert has_owner_reference(rs, dep) is False
    set_owner_reference(dep, rs)
    assert has_owner_reference(rs, dep) is True
    # Group, kind and name decide; not the version, not the UID.
    assert has_owner_reference(rs, deployment(uid="other") | {"apiVersion": "extensions/v1"})
    assert not has_owner_reference(rs, deployment() | {"apiVersion": "apps/v1"})
    assert not has_owner_reference(rs, deployment("bar"))
