"""A set's revisions: the patch, new revisions, restoring a set (upstream
TestCreateApplyRevision, TestRollingUpdateApplyRevision, and the revision of
stateful_set_compatibility_test, whose name kube-controller-manager 1.33 computed)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from statefulset_fixtures import COMPAT_DATA_1_33, COMPAT_NAME_1_33, compat_set, new_stateful_set

from kcontrol.client import Object, deep_copy
from kcontrol_controllers import history
from kcontrol_controllers.statefulset._revisions import (
    RevisionDataError,
    apply_revision,
    get_patch,
    new_revision,
    revision_data,
)


def test_get_patch_replaces_the_template() -> None:
    set_ = new_stateful_set(1)
    patch = get_patch(set_)
    assert list(patch) == ["spec"] and list(patch["spec"]) == ["template"]
    expected = {**set_["spec"]["template"], "$patch": "replace"}
    assert patch["spec"]["template"] == expected
    patch["spec"]["template"]["spec"]["containers"][0]["image"] = "changed"
    assert set_["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx"
    assert "$patch" not in set_["spec"]["template"]


def test_new_revision_matches_kube_controller_manager_1_33() -> None:
    set_ = compat_set(creation_timestamp_null=True)
    revision = new_revision(set_, 1, 0)
    assert revision["metadata"]["name"] == COMPAT_NAME_1_33
    assert revision["metadata"]["labels"] == {
        "app": "foo",
        history.CONTROLLER_REVISION_HASH_LABEL: "c77f6d978",
    }
    assert revision["data"] == json.loads(COMPAT_DATA_1_33)
    assert revision["revision"] == 1
    assert revision["metadata"]["namespace"] == "test"
    (ref,) = revision["metadata"]["ownerReferences"]
    assert (ref["apiVersion"], ref["kind"], ref["uid"], ref["controller"]) == (
        "apps/v1",
        "StatefulSet",
        "ssuid",
        True,
    )


def test_new_revision_name_depends_on_the_collision_count() -> None:
    set_ = new_stateful_set(1)
    names = {new_revision(set_, 1, count)["metadata"]["name"] for count in (None, 0, 1)}
    assert len(names) == 3


def test_new_revision_copies_the_set_annotations() -> None:
    set_ = new_stateful_set(1)
    assert "annotations" not in new_revision(set_, 1, 0)["metadata"]
    set_["metadata"]["annotations"] = {"foo": "bar"}
    revision = new_revision(set_, 1, 0)
    assert revision["metadata"]["annotations"] == {"foo": "bar"}
    revision["metadata"]["annotations"]["foo"] = "changed"
    assert set_["metadata"]["annotations"] == {"foo": "bar"}


def test_create_apply_revision() -> None:
    set_ = new_stateful_set(1)
    set_["status"] = {"collisionCount": 0}
    revision = new_revision(set_, 1, set_["status"]["collisionCount"])
    set_["spec"]["template"]["spec"]["containers"][0]["name"] = "foo"
    set_["metadata"]["annotations"] = {"foo": "bar"}
    restored = apply_revision(set_, revision)
    restored_revision = new_revision(restored, 2, restored["status"]["collisionCount"])
    assert history.equal_revision(revision, restored_revision)
    assert restored_revision["metadata"]["name"] == revision["metadata"]["name"]
    assert restored_revision["metadata"]["annotations"]["foo"] == "bar"
    # the rest of the set is the set's own, not the revision's
    assert restored["metadata"]["annotations"] == {"foo": "bar"}
    assert set_["spec"]["template"]["spec"]["containers"][0]["name"] == "foo"


def test_rolling_update_apply_revision() -> None:
    set_ = new_stateful_set(1)
    current_set = deep_copy(set_)
    current_revision = new_revision(set_, 1, 0)
    set_["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "foo", "value": "bar"}]
    update_set = deep_copy(set_)
    update_revision = new_revision(set_, 2, 0)

    assert (
        apply_revision(set_, current_revision)["spec"]["template"]
        == current_set["spec"]["template"]
    )
    assert (
        apply_revision(set_, update_revision)["spec"]["template"] == update_set["spec"]["template"]
    )
    assert not history.equal_revision(current_revision, update_revision)


def test_apply_revision_replaces_rather_than_merges() -> None:
    set_ = new_stateful_set(1)
    old_revision = new_revision(set_, 1, 0)
    set_["spec"]["template"]["metadata"]["annotations"] = {"added": "later"}
    set_["spec"]["template"]["spec"]["nodeSelector"] = {"disk": "ssd"}
    restored = apply_revision(set_, old_revision)
    assert "annotations" not in restored["spec"]["template"]["metadata"]
    assert "nodeSelector" not in restored["spec"]["template"]["spec"]
    assert "$patch" not in restored["spec"]["template"]
    assert restored["spec"]["replicas"] == 1 and restored["spec"]["serviceName"] == "governingsvc"


def _containers(value: Any) -> list[Any]:
    """Every dict and list in ``value``, ``value`` included."""
    if isinstance(value, dict):
        return [value, *(c for v in value.values() for c in _containers(v))]
    if isinstance(value, list):
        return [value, *(c for v in value for c in _containers(v))]
    return []


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(None, id="the revision's"),
        pytest.param({"spec": {"replicas": 4, "extra": {"a": [1]}}}, id="merged"),
    ],
)
def test_apply_revision_shares_nothing(data: Any) -> None:
    # The result is the caller's to change: no dict or list of it is one of the set's or the
    # revision's, whichever parts the patch names and whichever it leaves alone.
    set_ = new_stateful_set(1)
    set_["metadata"]["annotations"] = {"foo": "bar"}
    set_["status"] = {"conditions": [{"type": "x"}]}
    revision = new_revision(set_, 1, 0) if data is None else {"data": data}
    restored = apply_revision(set_, revision)
    theirs = {id(c) for c in _containers(set_) + _containers(revision)}
    assert not [c for c in _containers(restored) if id(c) in theirs]


@pytest.mark.parametrize(
    ("data", "expected_spec"),
    [
        pytest.param({"spec": {"replicas": 4}}, {"replicas": 4, "serviceName": "s"}, id="merge"),
        pytest.param({"spec": {"serviceName": None}}, {"replicas": 1}, id="null deletes"),
        pytest.param({"spec": {"$patch": "replace", "x": 1}}, {"x": 1}, id="replace"),
        pytest.param({"spec": {"$patch": "delete"}}, None, id="delete"),
        pytest.param(None, {"replicas": 1, "serviceName": "s"}, id="no data: the set"),
        pytest.param(
            '{"spec": {"replicas": 2}}', {"replicas": 2, "serviceName": "s"}, id="JSON text"
        ),
    ],
)
def test_apply_revision_patch_semantics(data: Any, expected_spec: dict[str, Any] | None) -> None:
    set_: Object = {"metadata": {"name": "s"}, "spec": {"replicas": 1, "serviceName": "s"}}
    restored = apply_revision(set_, {"data": data})
    assert restored.get("spec") == expected_spec
    assert set_["spec"] == {"replicas": 1, "serviceName": "s"}


@pytest.mark.parametrize(
    "data",
    [
        pytest.param([1, 2], id="not an object"),
        pytest.param("not json", id="not JSON"),
        pytest.param({"spec": {"$retainKeys": ["a"]}}, id="unsupported directive"),
        pytest.param({"spec": {"$patch": "bogus"}}, id="unknown $patch"),
        pytest.param({"$patch": "delete"}, id="deletes everything"),
    ],
)
def test_apply_revision_rejects(data: Any) -> None:
    with pytest.raises(RevisionDataError):
        apply_revision(new_stateful_set(1), {"data": data})


def test_revision_data() -> None:
    assert revision_data({"data": {"a": 1}}) == {"a": 1}
    assert revision_data({"data": b'{"a": 1}'}) == {"a": 1}
    assert revision_data({}) is None
