"""Cache lookups (upstream TestPodControllerLookup, TestGetReplicaSetsWithSameController,
TestRelatedPodsLookup)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from replicaset_fixtures import Fixture, ago, controller_ref, new_pod, new_replica_set

from kcontrol.client import Object

SOME = new_replica_set(1, {"foo": "bar"}, name="rs1", uid="uid-1")
RELATED = new_replica_set(1, {"foo": "baz"}, name="rs2", uid="uid-2")
UNRELATED = new_replica_set(1, {"foo": "quux"}, name="rs3", uid="uid-3", owner_uid="456")
DELETING = new_replica_set(
    1, {"foo": "xyzzy"}, name="rs4", uid="uid-4", owner_uid="789", deletionTimestamp=ago(1)
)
STANDALONE = new_replica_set(1, {"foo": "solo"}, name="rs5", uid="uid-5", owner_uid=None)


def names(objects: list[Object]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objects)


@dataclass
class SiblingCase:
    name: str
    cached: list[Object]
    rs: Object
    siblings: list[str]
    related_pods: list[str]


SIBLING_CASES = [
    SiblingCase(
        "a ReplicaSet pending deletion still finds itself and its pods",
        [DELETING, UNRELATED],
        DELETING,
        ["rs4"],
        ["pod-rs4"],
    ),
    SiblingCase(
        "no sibling: only its own pods",
        [SOME, UNRELATED],
        SOME,
        ["rs1"],
        ["pod1", "pod2"],
    ),
    SiblingCase(
        "siblings under the same controller, not the unrelated one",
        [SOME, RELATED, UNRELATED],
        SOME,
        ["rs1", "rs2"],
        ["pod1", "pod2", "pod3"],
    ),
    SiblingCase("no controller: nothing is related", [STANDALONE, SOME], STANDALONE, [], []),
]


@pytest.mark.parametrize("case", SIBLING_CASES, ids=lambda c: c.name)
def test_siblings_and_their_pods(case: SiblingCase) -> None:
    f = Fixture()
    for rs in case.cached:
        f.cache_rs(rs)
    for pod in (
        new_pod("pod1", SOME),
        new_pod("pod2", SOME),
        new_pod("pod3", RELATED),
        new_pod("pod4", UNRELATED),
        new_pod("pod-rs4", DELETING),
        new_pod("pod-rs5", STANDALONE),
    ):
        f.cache_pod(pod)
    lookup = f.rsc._lookup

    assert names(lookup.replica_sets_with_same_controller(case.rs)) == case.siblings
    assert names(lookup.indirectly_related_pods(case.rs)) == case.related_pods


def test_a_pod_selected_by_two_siblings_is_related_once() -> None:
    f = Fixture()
    f.cache_rs(SOME)
    f.cache_rs(new_replica_set(1, {"foo": "bar"}, name="twin", uid="uid-twin"))
    f.cache_pod(new_pod("shared", SOME))
    assert names(f.rsc._lookup.indirectly_related_pods(SOME)) == ["shared"]


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (new_pod("no-labels", SOME, labels={}, owned=False), []),
        (new_pod("other-namespace", SOME, owned=False, namespace="ns"), []),
        (new_pod("match", SOME, owned=False), ["rs1"]),
    ],
    ids=["without labels", "matching labels in another namespace", "matching labels"],
)
def test_replica_sets_selecting_a_pod(pod: Object, expected: list[str]) -> None:
    f = Fixture()
    f.cache_rs(SOME)
    assert names(f.rsc._lookup.pod_replica_sets(pod)) == expected


@pytest.mark.parametrize(
    ("ref_changes", "found"),
    [
        ({}, True),
        ({"kind": "Deployment"}, False),
        ({"uid": "stale"}, False),
        ({"name": "x"}, False),
    ],
    ids=["resolves", "wrong kind", "other uid", "unknown name"],
)
def test_resolve_controller_ref(ref_changes: dict[str, str], found: bool) -> None:
    f = Fixture()
    f.cache_rs(SOME)
    ref = {**controller_ref(SOME), **ref_changes}
    resolved = f.rsc._lookup.resolve_controller_ref("default", ref)
    assert (resolved is not None) is found
