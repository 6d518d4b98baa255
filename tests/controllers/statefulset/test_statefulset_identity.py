"""Ordinals, names, membership and identity (upstream TestGetParentNameAndOrdinal,
TestIsMemberOf, TestIdentityMatches, TestUpdateIdentity, TestAscendingOrdinal,
TestOverlappingStatefulSets, and the start-ordinal cases of the StatefulSetStartOrdinal
tests)."""

from __future__ import annotations

import random

import pytest
from statefulset_fixtures import new_stateful_set, obj

from kcontrol_controllers.statefulset import POD_INDEX_LABEL, POD_NAME_LABEL
from kcontrol_controllers.statefulset._identity import (
    ascending_ordinal,
    descending_ordinal,
    get_end_ordinal,
    get_ordinal,
    get_pod_name,
    get_start_ordinal,
    identity_matches,
    init_identity,
    is_member_of,
    overlapping_sets_order,
    parent_name_and_ordinal,
    pod_in_ordinal_range,
    update_identity,
)
from kcontrol_controllers.statefulset._pods import new_stateful_set_pod


@pytest.mark.parametrize(
    ("pod_name", "parent", "ordinal"),
    [
        ("foo-1", "foo", 1),
        ("foo-0", "foo", 0),
        ("my-set-12", "my-set", 12),  # the parent keeps its own dashes
        ("foo-2-3", "foo-2", 3),  # the last -<digits> is the ordinal
        ("foo-007", "foo", 7),  # leading zeros are read
        ("1-bar", "", -1),  # digits, but not at the end
        ("foo", "", -1),
        ("foo-", "", -1),
        ("foo-1a", "", -1),
        ("-5", "", 5),  # an empty parent, as the regex allows
        ("foo-2147483647", "foo", 2147483647),  # the largest int32
        ("foo-2147483648", "foo", -1),  # overflows an int32: the parent, but no ordinal
        ("", "", -1),
    ],
)
def test_parent_name_and_ordinal(pod_name: str, parent: str, ordinal: int) -> None:
    assert parent_name_and_ordinal(obj(pod_name)) == (parent, ordinal)
    assert get_ordinal(obj(pod_name)) == ordinal


def test_parent_name_and_ordinal_of_a_new_pod() -> None:
    set_ = new_stateful_set(3)
    assert parent_name_and_ordinal(new_stateful_set_pod(set_, 1)) == ("foo", 1)


@pytest.mark.parametrize(
    ("ordinals", "replicas", "start", "end", "in_range", "out_of_range"),
    [
        pytest.param(None, 3, 0, 2, [0, 1, 2], [-1, 3, 4], id="no ordinals"),
        pytest.param({}, 3, 0, 2, [0, 2], [3], id="ordinals without start"),
        pytest.param({"start": 2}, 3, 2, 4, [2, 3, 4], [0, 1, 5], id="start 2"),
        pytest.param({"start": 5}, 0, 5, 4, [], [4, 5], id="zero replicas"),
        pytest.param({"start": 0}, 1, 0, 0, [0], [1, -1], id="start 0, one replica"),
    ],
)
def test_ordinal_range(
    ordinals: dict[str, int] | None,
    replicas: int,
    start: int,
    end: int,
    in_range: list[int],
    out_of_range: list[int],
) -> None:
    set_ = new_stateful_set(replicas)
    if ordinals is not None:
        set_["spec"]["ordinals"] = ordinals
    assert (get_start_ordinal(set_), get_end_ordinal(set_)) == (start, end)
    for ordinal in in_range:
        assert pod_in_ordinal_range(obj(f"foo-{ordinal}"), set_)
    for ordinal in out_of_range:
        assert not pod_in_ordinal_range(obj(f"foo-{ordinal}" if ordinal >= 0 else "foo"), set_)


def test_replicas_default_to_one() -> None:
    set_ = new_stateful_set()
    del set_["spec"]["replicas"]
    assert get_end_ordinal(set_) == 0


def test_get_pod_name() -> None:
    assert get_pod_name(new_stateful_set(), 4) == "foo-4"


def test_is_member_of() -> None:
    set_ = new_stateful_set(3)
    other = new_stateful_set(3, name="foo2")
    pod = new_stateful_set_pod(set_, 1)
    assert is_member_of(set_, pod)
    assert not is_member_of(other, pod)
    # a longer set name sharing the prefix is another set
    assert not is_member_of(set_, new_stateful_set_pod(other, 1))


def test_identity_matches() -> None:
    set_ = new_stateful_set(3)
    assert identity_matches(set_, new_stateful_set_pod(set_, 1))

    cases = {
        "wrong name": lambda p: p["metadata"].update(name="foo"),
        "other parent": lambda p: p["metadata"].update(name="bar-1"),
        "leading zero": lambda p: p["metadata"].update(name="foo-01"),
        "wrong namespace": lambda p: p["metadata"].update(namespace=""),
        "no pod-name label": lambda p: p["metadata"]["labels"].pop(POD_NAME_LABEL),
        "stale pod-name label": lambda p: p["metadata"]["labels"].update({POD_NAME_LABEL: "x"}),
    }
    for case, spoil in cases.items():
        pod = new_stateful_set_pod(set_, 1)
        spoil(pod)
        assert not identity_matches(set_, pod), case


def test_identity_does_not_compare_hostname_or_subdomain() -> None:
    set_ = new_stateful_set(3)
    pod = new_stateful_set_pod(set_, 1)
    pod["spec"]["hostname"], pod["spec"]["subdomain"] = "other", "other"
    assert identity_matches(set_, pod)


def test_update_identity() -> None:
    set_ = new_stateful_set(3)
    pod = new_stateful_set_pod(set_, 1)
    pod["metadata"]["namespace"] = ""
    assert not identity_matches(set_, pod)
    update_identity(set_, pod)
    assert identity_matches(set_, pod)
    del pod["metadata"]["labels"][POD_NAME_LABEL]
    update_identity(set_, pod)
    assert identity_matches(set_, pod)


def test_update_identity_renames_and_labels() -> None:
    set_ = new_stateful_set(3)
    pod = obj("goo-2")  # another parent's name, no labels at all
    update_identity(set_, pod)
    assert pod["metadata"] == {
        "name": "foo-2",
        "namespace": "default",
        "labels": {POD_NAME_LABEL: "foo-2", POD_INDEX_LABEL: "2"},
    }


def test_update_identity_keeps_other_labels_and_leaves_spec_alone() -> None:
    set_ = new_stateful_set(3)
    pod = {"metadata": {"name": "foo-0", "labels": {"app": "x"}}, "spec": {"hostname": "h"}}
    update_identity(set_, pod)
    assert pod["metadata"]["labels"] == {"app": "x", POD_NAME_LABEL: "foo-0", POD_INDEX_LABEL: "0"}
    assert pod["spec"] == {"hostname": "h"}


def test_init_identity_sets_hostname_and_subdomain() -> None:
    set_ = new_stateful_set(3)
    pod = obj("foo-1")
    init_identity(set_, pod)
    assert pod["spec"] == {"hostname": "foo-1", "subdomain": "governingsvc"}
    assert pod["metadata"]["labels"][POD_INDEX_LABEL] == "1"


def test_init_identity_without_service_name_has_no_subdomain() -> None:
    set_ = new_stateful_set(3)
    del set_["spec"]["serviceName"]
    pod = obj("foo-1", subdomain="stale")
    init_identity(set_, pod)
    assert pod["spec"] == {"hostname": "foo-1"}


def test_ascending_and_descending_ordinal() -> None:
    set_ = new_stateful_set(10)
    perm = list(range(10))
    random.Random(7).shuffle(perm)
    pods = [new_stateful_set_pod(set_, v) for v in perm]
    pods.append(obj("not-a-member"))
    ascending = ascending_ordinal(pods)
    assert [get_ordinal(p) for p in ascending] == [-1, *range(10)]
    descending = descending_ordinal(pods)
    assert [get_ordinal(p) for p in descending] == [*range(9, -1, -1), -1]
    assert len(pods) == 11 and get_ordinal(pods[0]) == perm[0]  # the input is not sorted


def test_overlapping_sets_order() -> None:
    sets = []
    for name, created in [
        ("b", "2026-01-01T00:00:02Z"),
        ("a", "2026-01-01T00:00:02Z"),
        ("c", "2026-01-01T00:00:01Z"),
        ("d", None),
    ]:
        set_ = new_stateful_set(1, name=name)
        if created:
            set_["metadata"]["creationTimestamp"] = created
        sets.append(set_)
    ordered = sorted(sets, key=overlapping_sets_order)
    assert [s["metadata"]["name"] for s in ordered] == ["d", "c", "a", "b"]
