"""Shared sync steps (upstream sync_test.go: TestScale, cleanupDeployment(+Order); and the
new-ReplicaSet paths of getNewReplicaSet, paused conditions, scaling events, status)."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from deployment_fixtures import Fixture, new_deployment, new_replica_set, timestamp

from kcontrol.client import REPLICASETS
from kcontrol.errors import AlreadyExists, Forbidden
from kcontrol.testing import Action
from kcontrol_controllers.conditions import get_condition
from kcontrol_controllers.deployment._annotations import set_replicas_annotations
from kcontrol_controllers.deployment._conditions import PROGRESSING
from kcontrol_controllers.deployment._replicas import max_surge
from kcontrol_controllers.deployment._scale import scale
from kcontrol_controllers.deployment._status import calculate_status
from kcontrol_controllers.deployment._sync import (
    check_paused_conditions,
    cleanup_deployment,
    get_all_replica_sets_and_sync_revision,
    is_scaling_event,
    replica_set_name,
)

DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")

NEW, OLD, OLDER = 30, 20, 10  # creation-time ordering


def rs(name: str, replicas: int, created: int) -> dict[str, Any]:
    """upstream sync_test.go ``rs``: a bare ReplicaSet with an empty template."""
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": timestamp(created)},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {}}, "template": {}},
    }


def dep(replicas: int, surge: int | None = None, unavailable: int | None = None) -> dict[str, Any]:
    return new_deployment(
        "foo",
        replicas,
        max_surge=0 if surge is None else surge,
        max_unavailable=0 if unavailable is None else unavailable,
    )


def updated_template(replicas: int) -> dict[str, Any]:
    d = dep(replicas)
    d["spec"]["template"]["metadata"]["labels"]["another"] = "label"
    return d


def broken_new() -> dict[str, Any]:
    new = rs("foo-v2", 2, NEW)
    new["status"] = {"availableReplicas": 0}
    return new


SCALE_CASES = [
    pytest.param(
        dep(12),
        dep(10),
        rs("foo-v1", 10, NEW),
        [],
        12,
        [],
        set(),
        {},
        id="normal scaling event: 10 -> 12",
    ),
    pytest.param(
        dep(5),
        dep(10),
        rs("foo-v1", 10, NEW),
        [],
        5,
        [],
        set(),
        {},
        id="normal scaling event: 10 -> 5",
    ),
    pytest.param(
        dep(10),
        dep(5),
        rs("foo-v2", 2, NEW),
        [rs("foo-v1", 3, OLD)],
        4,
        [6],
        set(),
        {},
        id="proportional scaling: 5 -> 10",
    ),
    pytest.param(
        dep(3),
        dep(5),
        rs("foo-v2", 2, NEW),
        [rs("foo-v1", 3, OLD)],
        1,
        [2],
        set(),
        {},
        id="proportional scaling: 5 -> 3",
    ),
    pytest.param(
        dep(4),
        dep(9),
        rs("foo-v2", 8, NEW),
        [rs("foo-v1", 1, OLD)],
        4,
        [0],
        set(),
        {},
        id="proportional scaling: 9 -> 4",
    ),
    pytest.param(
        dep(10),
        dep(7),
        rs("foo-v3", 2, NEW),
        [rs("foo-v2", 3, OLD), rs("foo-v1", 2, OLDER)],
        3,
        [4, 3],
        set(),
        {},
        id="proportional scaling: 7 -> 10",
    ),
    pytest.param(
        dep(8),
        dep(13),
        rs("foo-v3", 2, NEW),
        [rs("foo-v2", 8, OLD), rs("foo-v1", 3, OLDER)],
        1,
        [5, 2],
        set(),
        {},
        id="proportional scaling: 13 -> 8",
    ),
    pytest.param(
        dep(4),
        dep(3),
        rs("foo-v3", 1, NEW),
        [rs("foo-v2", 1, OLD), rs("foo-v1", 1, OLDER)],
        2,
        [1, 1],
        set(),
        {},
        id="leftover distribution: 3 -> 4 (newest grows)",
    ),
    pytest.param(
        dep(2),
        dep(3),
        rs("foo-v3", 1, NEW),
        [rs("foo-v2", 1, OLD), rs("foo-v1", 1, OLDER)],
        1,
        [1, 0],
        set(),
        {},
        id="leftover distribution: 3 -> 2 (oldest shrinks)",
    ),
    pytest.param(
        dep(5),
        dep(4),
        None,
        [rs("foo-v2", 2, OLD), rs("foo-v1", 2, OLDER)],
        None,
        [3, 2],
        set(),
        {},
        id="proportional scaling (no new rs): 4 -> 5",
    ),
    pytest.param(
        dep(0),
        dep(6),
        rs("foo-v3", 3, NEW),
        [rs("foo-v2", 2, OLD), rs("foo-v1", 1, OLDER)],
        0,
        [0, 0],
        set(),
        {},
        id="proportional scaling: 6 -> 0",
    ),
    pytest.param(
        dep(6),
        dep(6),
        rs("foo-v3", 0, NEW),
        [rs("foo-v2", 0, OLD), rs("foo-v1", 0, OLDER)],
        6,
        [0, 0],
        {"foo-v2", "foo-v1"},
        {},
        id="proportional scaling: 0 -> 6",
    ),
    pytest.param(
        dep(5),
        dep(5),
        rs("foo-v3", 2, NEW),
        [rs("foo-v2", 1, OLD), rs("foo-v1", 1, OLDER)],
        2,
        [2, 1],
        {"foo-v3", "foo-v1"},
        {"foo-v2": 3},
        id="failed rs update",
    ),
    pytest.param(
        dep(20, surge=2),
        dep(10, surge=2),
        rs("foo-v2", 6, NEW),
        [rs("foo-v1", 6, OLD)],
        11,
        [11],
        set(),
        {},
        id="deployment with surge pods",
    ),
    pytest.param(
        dep(50, surge=6),
        dep(10, surge=3),
        rs("foo-v2", 5, NEW),
        [rs("foo-v1", 8, OLD)],
        22,
        [34],
        set(),
        {},
        id="change both surge and size",
    ),
    pytest.param(
        updated_template(14),
        dep(10),
        None,
        [rs("foo-v2", 7, NEW), rs("foo-v1", 3, OLD)],
        None,
        [10, 4],
        set(),
        {},
        id="change both size and template",
    ),
    pytest.param(
        dep(2, 1, 1),
        dep(2, 1, 1),
        broken_new(),
        [rs("foo-v1", 1, OLD)],
        2,
        [1],
        {"foo-v2", "foo-v1"},
        {},
        id="saturated but broken new replica set does not affect old pods",
    ),
]


@pytest.mark.parametrize(
    (
        "deployment",
        "old_deployment",
        "new_rs",
        "old_rss",
        "expected_new",
        "expected_old",
        "not_updated",
        "desired_annotations",
    ),
    SCALE_CASES,
)
async def test_scale(
    deployment: dict[str, Any],
    old_deployment: dict[str, Any],
    new_rs: dict[str, Any] | None,
    old_rss: list[dict[str, Any]],
    expected_new: int | None,
    expected_old: list[int],
    not_updated: set[str],
    desired_annotations: dict[str, int],
) -> None:
    f = Fixture()
    for replica_set in [new_rs, *old_rss]:
        if replica_set is None:
            continue
        desired = desired_annotations.get(
            replica_set["metadata"]["name"], old_deployment["spec"]["replicas"]
        )
        set_replicas_annotations(replica_set, desired, desired + max_surge(old_deployment))
    stored = f.seed(*[r for r in [new_rs, *old_rss] if r is not None])
    stored_new = stored[0] if new_rs is not None else None
    stored_old = stored[1:] if new_rs is not None else stored

    await scale(f.ctx, deployment, stored_new, stored_old)

    sizes = {r["metadata"]["name"]: r["spec"]["replicas"] for r in stored}
    patched: set[str] = set()
    for action in f.client.actions_for("patch", REPLICASETS):
        patched.add(action.name)
        if "replicas" in action.patch.get("spec", {}):
            sizes[action.name] = action.patch["spec"]["replicas"]
    if new_rs is not None:
        assert sizes[new_rs["metadata"]["name"]] == expected_new
    assert [sizes[r["metadata"]["name"]] for r in old_rss] == expected_old
    assert not (patched & not_updated), f"unexpected writes to {patched & not_updated}"


async def test_scale_records_events_and_annotations() -> None:
    f = Fixture()
    old_d = dep(5)
    new, old = rs("foo-v2", 2, NEW), rs("foo-v1", 3, OLD)
    for r in (new, old):
        set_replicas_annotations(r, 5, 5)
    new, old = f.seed(new, old)

    await scale(f.ctx, dep(10), new, [old])

    patches = {a.name: a.patch for a in f.client.actions_for("patch", REPLICASETS)}
    assert patches["foo-v1"] == {
        "metadata": {
            "resourceVersion": old["metadata"]["resourceVersion"],
            "annotations": {
                "deployment.kubernetes.io/desired-replicas": "10",
                "deployment.kubernetes.io/max-replicas": "10",
            },
        },
        "spec": {"replicas": 6},
    }
    assert f.recorder.events == [
        "Normal ScalingReplicaSet Scaled up replica set foo-v1 from 3 to 6",
        "Normal ScalingReplicaSet Scaled up replica set foo-v2 from 2 to 4",
    ]
    assert old_d  # the old size lives only in the annotations


async def test_proportional_scaling_says_up_or_down_per_replica_set() -> None:
    # The Deployment grows (6 -> 10), but foo-v2's max-replicas annotation (20, from an
    # earlier size) makes its share negative: it shrinks, and its event must say so.
    f = Fixture()
    new, old = rs("foo-v2", 2, NEW), rs("foo-v1", 4, OLD)
    set_replicas_annotations(new, 10, 20)
    set_replicas_annotations(old, 8, 8)
    new, old = f.seed(new, old)

    await scale(f.ctx, dep(10), new, [old])

    assert f.recorder.events == [
        "Normal ScalingReplicaSet Scaled up replica set foo-v1 from 4 to 9",
        "Normal ScalingReplicaSet Scaled down replica set foo-v2 from 2 to 1",
    ]


def rs_with_status(name: str, spec: int, status: int, created: int = 0) -> dict[str, Any]:
    r = rs(name, spec, created)
    r["status"] = {"replicas": status, "observedGeneration": 1}  # the server sets generation 1
    return r


@pytest.mark.parametrize(
    ("old_rss", "limit", "expected_deletions"),
    [
        pytest.param(
            [
                rs_with_status("foo-1", 0, 0),
                rs_with_status("foo-2", 0, 0),
                rs_with_status("foo-3", 0, 0),
            ],
            1,
            2,
            id="keep one",
        ),
        pytest.param(
            [
                rs_with_status("foo-1", 0, 0),
                rs_with_status("foo-2", 0, 1),
                rs_with_status("foo-3", 1, 0),
                rs_with_status("foo-4", 1, 1),
            ],
            0,
            1,
            id="only replica sets with spec and status replicas 0",
        ),
        pytest.param(
            [rs_with_status("foo-1", 0, 0), rs_with_status("foo-2", 0, 0)], 0, 2, id="keep none"
        ),
        pytest.param(
            [rs_with_status("foo-1", 1, 1), rs_with_status("foo-2", 1, 1)], 0, 0, id="all busy"
        ),
        pytest.param("already-deleted", 0, 0, id="already being deleted"),
        pytest.param(
            [
                rs_with_status("foo-1", 0, 0),
                rs_with_status("foo-2", 0, 0),
                rs_with_status("foo-3", 0, 0),
            ],
            2**31 - 1,
            0,
            id="unlimited revisionHistoryLimit",
        ),
        pytest.param("unobserved", 0, 0, id="generation not observed yet"),
    ],
)
async def test_cleanup_deployment(
    old_rss: list[dict[str, Any]] | str, limit: int, expected_deletions: int
) -> None:
    f = Fixture()
    if old_rss == "already-deleted":
        old_rss = [rs_with_status("foo-1", 0, 0)]
        old_rss[0]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        old_rss[0]["metadata"]["finalizers"] = ["example.com/hold"]
    elif old_rss == "unobserved":
        old_rss = [rs_with_status("foo-1", 0, 0)]
        old_rss[0]["metadata"]["generation"] = 2
        old_rss[0]["status"]["observedGeneration"] = 1
    assert isinstance(old_rss, list)
    stored = f.seed(*old_rss)
    d = dep(1)
    d["spec"]["revisionHistoryLimit"] = limit

    await cleanup_deployment(f.ctx, stored, d)

    deletes = f.client.actions_for("delete", REPLICASETS)
    assert len(deletes) == expected_deletions
    for action in deletes:
        victim = next(r for r in stored if r["metadata"]["name"] == action.name)
        assert action.options["preconditions"] == {
            "uid": victim["metadata"]["uid"],
            "resourceVersion": victim["metadata"]["resourceVersion"],
        }


def rs_rev(name: str, created: int, revision: str, replicas: int = 0) -> dict[str, Any]:
    r = rs_with_status(name, replicas, replicas, created)
    if revision:
        r["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": revision}
    return r


# upstream TestDeploymentController_cleanupDeploymentOrder, creation order foo-1 < ... < foo-4;
# then kcontrol's own cases.
@pytest.mark.parametrize(
    ("old_rss", "limit", "expected"),
    [
        pytest.param(
            [rs_rev("foo-1", 9, "1"), rs_rev("foo-2", 10, "2")],
            1,
            {"foo-1"},
            id="revision order: rs1 < rs2, delete rs1",
        ),
        pytest.param(
            [rs_rev("foo-1", 9, "2"), rs_rev("foo-2", 10, "1")],
            1,
            {"foo-2"},
            id="revision order: rs2 < rs1, delete rs2",
        ),
        pytest.param(
            [rs_rev("foo-1", 9, "1"), rs_rev("foo-2", 10, "")],
            1,
            {"foo-2"},
            id="rs1 has revision 1, rs2 has none: delete rs2",
        ),
        pytest.param(
            [rs_rev("foo-1", 9, ""), rs_rev("foo-2", 10, "2")],
            1,
            {"foo-1"},
            id="rs1 has no revision, rs2 has revision 2: delete rs1",
        ),
        pytest.param(
            [rs_rev("foo-1", 9, "1", 1), rs_rev("foo-2", 10, "2"), rs_rev("foo-3", 11, "3")],
            1,
            {"foo-2"},
            id="rs1 < rs2 < rs3, rs1 has replicas: delete rs2",
        ),
        pytest.param(
            [rs_rev("foo-1", 9, "1", 1), rs_rev("foo-2", 10, "2", 1), rs_rev("foo-3", 11, "3")],
            1,
            set(),
            id="rs1 < rs2 < rs3, rs1 and rs2 have replicas: delete none",
        ),
        pytest.param(
            [
                rs_rev("foo-1", 9, "3"),
                rs_rev("foo-2", 10, "1"),
                rs_rev("foo-3", 11, "4"),
                rs_rev("foo-4", 12, "2"),
            ],
            2,
            {"foo-2", "foo-4"},
            id="revision order: rs2 < rs4 < rs1 < rs3, delete rs2 and rs4",
        ),
        pytest.param(
            [
                rs_rev("foo-1", 9, "1"),
                rs_rev("foo-2", 11, "2"),
                rs_rev("foo-3", 12, "3"),
                rs_rev("foo-4", 10, "1"),
            ],
            2,
            {"foo-1", "foo-4"},
            id="equal revisions by creation",
        ),
        pytest.param(
            [
                rs_rev("foo-1", 9, ""),
                rs_rev("foo-2", 11, "2"),
                rs_rev("foo-3", 12, ""),
                rs_rev("foo-4", 10, "1"),
            ],
            2,
            {"foo-1", "foo-3"},
            id="missing revisions are revision 0, then by creation",
        ),
        pytest.param(
            [
                rs_rev("foo-1", 9, "2"),
                rs_rev("foo-2", 10, "x"),
                rs_rev("foo-3", 11, "1" * 5000),
            ],
            1,
            {"foo-1", "foo-2"},
            id="unparseable revisions (however long) by creation",
        ),
    ],
)
async def test_cleanup_deployment_order(
    old_rss: list[dict[str, Any]], limit: int, expected: set[str]
) -> None:
    f = Fixture()
    stored = f.seed(*old_rss)
    d = dep(1)
    d["spec"]["revisionHistoryLimit"] = limit
    await cleanup_deployment(f.ctx, stored, d)
    assert {a.name for a in f.client.actions_for("delete", REPLICASETS)} == expected


# -- status ------------------------------------------------------------------------------------


def test_calculate_status() -> None:
    f = Fixture()
    d = new_deployment("foo", 5, max_surge=1, max_unavailable=1)
    d["metadata"]["generation"] = 4
    d["status"] = {
        "collisionCount": 2,
        "conditions": [{"type": "Progressing", "status": "True", "reason": "R"}],
    }
    new = new_replica_set(d, "new", 3)
    new["status"] = {
        "replicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 2,
        "terminatingReplicas": 1,
        "observedGeneration": 1,
    }
    old = new_replica_set(d, "old", 2)
    old["status"] = {
        "replicas": 3,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "terminatingReplicas": 0,
        "observedGeneration": 1,
    }

    status = calculate_status([old, new], new, d, f.ctx)

    assert status == {
        "observedGeneration": 4,
        "replicas": 6,
        "updatedReplicas": 3,
        "readyReplicas": 5,
        "availableReplicas": 4,
        "unavailableReplicas": 1,
        "terminatingReplicas": 1,
        "collisionCount": 2,
        "conditions": [
            {"type": "Progressing", "status": "True", "reason": "R"},
            {
                "type": "Available",
                "status": "True",
                "lastUpdateTime": "2026-01-01T00:00:00Z",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "reason": "MinimumReplicasAvailable",
                "message": "Deployment has minimum availability.",
            },
        ],
    }
    assert d["status"]["conditions"] == [{"type": "Progressing", "status": "True", "reason": "R"}]

    # below minimum availability; an unknown terminating count is left out
    old["status"] = {"replicas": 2, "availableReplicas": 0, "observedGeneration": 1}
    status = calculate_status([old, new], new, d, f.ctx)
    assert status["unavailableReplicas"] == 3
    assert "terminatingReplicas" not in status
    assert get_condition(status, "Available") == {
        "type": "Available",
        "status": "False",
        "lastUpdateTime": "2026-01-01T00:00:00Z",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "reason": "MinimumReplicasUnavailable",
        "message": "Deployment does not have minimum availability.",
    }


# -- the new ReplicaSet ------------------------------------------------------------------------


async def test_existing_new_replica_set_gets_annotations_then_revision_syncs() -> None:
    f = Fixture()
    d = new_deployment("foo", 2, progress_deadline_seconds=600)
    d["metadata"]["annotations"] = {"team": "a"}
    d["spec"]["minReadySeconds"] = 5
    old = new_replica_set(d, "foo-old", 0, revision=3)
    old["spec"]["template"]["spec"]["containers"][0]["image"] = "foo/old"
    new = new_replica_set(d, "foo-new", 2, revision=1)
    d, old, new = f.seed(d, old, new)

    new_rs, olds = await get_all_replica_sets_and_sync_revision(f.ctx, d, [old, new], False)

    assert [r["metadata"]["name"] for r in olds] == ["foo-old"]
    (action,) = f.writes()
    assert (action.verb, action.name) == ("patch", "foo-new")
    assert action.patch == {
        "metadata": {
            "resourceVersion": new["metadata"]["resourceVersion"],
            "annotations": {
                "team": "a",
                "deployment.kubernetes.io/revision": "4",
                "deployment.kubernetes.io/revision-history": "1",
            },
        },
        "spec": {"minReadySeconds": 5},
    }
    assert (
        new_rs is not None
        and new_rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "4"
    )

    # next sync, the RS is up to date: the Deployment takes its revision and a
    # FoundNewReplicaSet condition (progress is tracked, no condition yet)
    f.client.clear_actions()
    await get_all_replica_sets_and_sync_revision(f.ctx, d, [old, new_rs], False)
    (action,) = f.writes()
    assert str(action) == "update deployments default/foo/status"
    assert action.object is not None
    assert action.object["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "4"
    condition = get_condition(action.object["status"], PROGRESSING)
    assert condition is not None
    assert (condition["reason"], condition["message"]) == (
        "FoundNewReplicaSet",
        'Found new replica set "foo-new"',
    )


async def test_new_replica_set_is_not_created_unless_asked() -> None:
    f = Fixture()
    (d,) = f.seed(new_deployment("foo", 1))
    assert await get_all_replica_sets_and_sync_revision(f.ctx, d, [], False) == (None, [])
    assert f.summary() == []


async def test_created_replica_set_records_progress_condition() -> None:
    f = Fixture()
    (d,) = f.seed(new_deployment("foo", 3, max_surge=1, progress_deadline_seconds=600))
    old = new_replica_set(d, "old", 3, revision=5)
    old["spec"]["template"]["spec"]["containers"][0]["image"] = "foo/old"
    (old,) = f.seed(old)

    new_rs, _ = await get_all_replica_sets_and_sync_revision(f.ctx, d, [old], True)

    assert new_rs is not None
    assert new_rs["spec"]["replicas"] == 1  # 3 + surge 1 - 3 existing
    assert new_rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "6"
    status_write = f.writes()[-1]
    assert status_write.object is not None
    condition = get_condition(status_write.object["status"], PROGRESSING)
    assert condition is not None
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "True",
        "NewReplicaSetCreated",
        f'Created new replica set "{new_rs["metadata"]["name"]}"',
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("web", "web-5d4f8c9b7", id="short"),
        pytest.param("a" * 243, "a" * 243 + "-5d4f8c9b7", id="exactly 253 with the hash"),
        pytest.param("a" * 253, "a" * 243 + "-5d4f8c9b7", id="cut to fit"),
        pytest.param("a" * 242 + ".b" + "c" * 9, "a" * 242 + "-5d4f8c9b7", id="a cut on a dot"),
        pytest.param("a" * 242 + "-b" + "c" * 9, "a" * 242 + "--5d4f8c9b7", id="a cut on a dash"),
    ],
)
def test_replica_set_name(name: str, expected: str) -> None:
    assert replica_set_name(name, "5d4f8c9b7") == expected
    assert len(expected) <= 253 and DNS_SUBDOMAIN.fullmatch(expected)


async def test_a_deployment_with_the_longest_name_gets_a_replica_set() -> None:
    f = Fixture()
    (d,) = f.seed(new_deployment("d" * 253, 2))

    new_rs, _ = await get_all_replica_sets_and_sync_revision(f.ctx, d, [], True)

    assert new_rs is not None
    name = new_rs["metadata"]["name"]
    template_hash = new_rs["metadata"]["labels"]["pod-template-hash"]
    assert name == "d" * (252 - len(template_hash)) + "-" + template_hash
    assert f.summary()[0] == "create replicasets"


async def test_already_exists_with_our_template_is_the_new_replica_set() -> None:
    f = Fixture()
    (d,) = f.seed(new_deployment("foo", 1))
    # Our own earlier creation, not yet seen by the cache the new/old split used.
    await get_all_replica_sets_and_sync_revision(f.ctx, d, [], True)
    created = f.writes()[0].object
    assert created is not None
    (cached,) = f.client.tracker.list(REPLICASETS)["items"]
    f.informers.for_resource(REPLICASETS).indexer.add(cached)
    f.client.clear_actions()
    d["status"] = {}

    new_rs, _ = await get_all_replica_sets_and_sync_revision(f.ctx, d, [], True)

    assert new_rs is not None and new_rs["metadata"]["uid"] == cached["metadata"]["uid"]
    assert f.summary() == ["create replicasets"]  # no collision counted, no event
    assert f.recorder.events == [
        "Normal ScalingReplicaSet Scaled up replica set "
        + created["metadata"]["name"]
        + " from 0 to 1"
    ]


async def test_hash_collision_bumps_collision_count() -> None:
    f = Fixture()
    (d,) = f.seed(new_deployment("foo", 1))
    # Someone else's ReplicaSet already has the name the template hashes to.
    await get_all_replica_sets_and_sync_revision(f.ctx, d, [], True)
    (squatter,) = f.client.tracker.list(REPLICASETS)["items"]
    squatter = copy.deepcopy(squatter)
    squatter["spec"]["template"]["spec"]["containers"][0]["image"] = "someone/else"
    squatter["metadata"]["ownerReferences"] = []
    (squatter,) = f.seed(squatter)
    f.client.clear_actions()
    d["status"] = {}

    with pytest.raises(AlreadyExists):
        await get_all_replica_sets_and_sync_revision(f.ctx, d, [], True)

    assert f.summary() == ["create replicasets", "update deployments/status"]
    bumped = f.writes()[1].object
    assert bumped is not None and bumped["status"]["collisionCount"] == 1

    # the next attempt hashes with the collision count: another name
    f.client.clear_actions()
    new_rs, _ = await get_all_replica_sets_and_sync_revision(f.ctx, d, [], True)
    assert new_rs is not None
    assert new_rs["metadata"]["name"] != squatter["metadata"]["name"]
    assert new_rs["metadata"]["labels"]["pod-template-hash"] == new_rs["metadata"][
        "name"
    ].removeprefix("foo-")


async def test_create_error_is_reported() -> None:
    f = Fixture()
    (d,) = f.seed(new_deployment("foo", 1, progress_deadline_seconds=600))

    def quota(action: Action) -> None:
        raise Forbidden('replicasets "x" is forbidden: exceeded quota')

    f.client.prepend_reactor("create", REPLICASETS, quota)
    with pytest.raises(Forbidden):
        await get_all_replica_sets_and_sync_revision(f.ctx, d, [], True)

    name = f.client.actions[0].object["metadata"]["name"]  # type: ignore[index]
    message = (
        f'Failed to create new replica set "{name}": replicasets "x" is forbidden: exceeded quota'
    )
    assert f.recorder.events == [f"Warning ReplicaSetCreateError {message}"]
    status_write = f.writes()[1].object
    assert status_write is not None
    condition = get_condition(status_write["status"], PROGRESSING)
    assert condition is not None
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False",
        "ReplicaSetCreateError",
        message,
    )


# -- paused conditions and scaling events ------------------------------------------------------


@pytest.mark.parametrize(
    ("paused", "current_reason", "deadline", "expected"),
    [
        pytest.param(
            True, None, 600, ("Unknown", "DeploymentPaused", "Deployment is paused"), id="paused"
        ),
        pytest.param(
            False,
            "DeploymentPaused",
            600,
            ("Unknown", "DeploymentResumed", "Deployment is resumed"),
            id="resumed",
        ),
        pytest.param(True, "DeploymentPaused", 600, None, id="already paused"),
        pytest.param(False, "ReplicaSetUpdated", 600, None, id="running"),
        pytest.param(True, "ProgressDeadlineExceeded", 600, None, id="timed out stays"),
        pytest.param(True, None, None, None, id="no progress deadline"),
    ],
)
async def test_check_paused_conditions(
    paused: bool,
    current_reason: str | None,
    deadline: int | None,
    expected: tuple[str, str, str] | None,
) -> None:
    f = Fixture()
    d = new_deployment("foo", 1, progress_deadline_seconds=deadline)
    d["spec"]["paused"] = paused
    if current_reason is not None:
        d["status"]["conditions"] = [
            {"type": PROGRESSING, "status": "True", "reason": current_reason}
        ]
    (d,) = f.seed(d)

    await check_paused_conditions(f.ctx, d)

    if expected is None:
        assert f.summary() == []
        return
    assert f.summary() == ["update deployments/status"]
    condition = get_condition(d["status"], PROGRESSING)
    assert condition is not None
    assert (condition["status"], condition["reason"], condition["message"]) == expected


async def test_is_scaling_event() -> None:
    f = Fixture()
    d = new_deployment("foo", 5)
    new = new_replica_set(d, "new", 3)
    old = new_replica_set(d, "old", 0)
    old["spec"]["template"]["spec"]["containers"][0]["image"] = "old"
    for r in (new, old):
        set_replicas_annotations(r, 4, 4)
    new["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "1"
    d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "1"
    d, new, old = f.seed(d, new, old)

    assert await is_scaling_event(f.ctx, d, [new, old]) is True
    set_replicas_annotations(new, 5, 5)
    assert await is_scaling_event(f.ctx, d, [new, old]) is False  # the inactive old RS is ignored
    del new["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"]
    assert await is_scaling_event(f.ctx, d, [new, old]) is False  # no annotation: not an event
