"""The replication controller is the ReplicaSet controller on ReplicationControllers
(upstream replication_controller_test.go, fixture style): pods get RC controller references,
the map selector adopts orphans, status and events name the RC, and nothing of the
ReplicaSet kind leaks through (no terminatingReplicas, no ReplicaSet references)."""

from __future__ import annotations

import pytest
from replicationcontroller_fixtures import (
    KEY,
    NS,
    RC_UID,
    SELECTOR,
    TEMPLATE_LABELS,
    Fixture,
    new_pod,
    new_rc,
    rc_ref,
)

from kcontrol.client import PODS, REPLICASETS
from kcontrol.errors import Forbidden
from kcontrol.informers import DeletedFinalStateUnknown
from kcontrol.testing import Action

RC_OBJECT = "involvedObject{kind=ReplicationController,apiVersion=v1}"
RS_REF = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "name": "web",
    "uid": "rs-uid",
    "controller": True,
    "blockOwnerDeletion": True,
}
"""A ReplicaSet of the same name as the RC: its pods are not the RC's."""


# -- scaling -------------------------------------------------------------------------------------


async def test_scale_up_creates_pods_controlled_by_the_rc() -> None:
    f = Fixture()
    rc = f.add_rc(new_rc(3))

    assert await f.rm.sync(KEY) is None

    creates = f.pod_creates()
    assert len(creates) == 3  # slow start: 1, then 2
    for create in creates:
        assert create.object is not None
        meta = create.object["metadata"]
        assert meta["ownerReferences"] == [rc_ref(rc)]
        assert meta["labels"] == TEMPLATE_LABELS
        assert meta["generateName"] == "web-"
    names = sorted(
        p["metadata"]["name"] for p in f.client.tracker.list(PODS, namespace=NS)["items"]
    )
    assert sorted(f.recorder.events) == [
        f"Normal SuccessfulCreate Created pod: {name} {RC_OBJECT}" for name in names
    ]
    expectations = f.rm.expectations.get_expectations(KEY)
    assert expectations is not None and expectations.add == 3

    # Once the informer has seen them, the status counts them (on the RC's status).
    f.observe_new_pods()
    assert f.rm.expectations.satisfied_expectations(KEY)
    f.client.clear_actions()
    await f.rm.sync(KEY)
    assert f.pod_creates() == []
    assert f.last_status()["replicas"] == 3
    assert f.client.actions_for("*", REPLICASETS) == []


async def test_scale_down_deletes_the_extra_pods_not_ready_first() -> None:
    f = Fixture()
    rc = f.add_rc(new_rc(1))
    f.add_pod(new_pod("ready-a", rc_ref(rc)))
    f.add_pod(new_pod("ready-b", rc_ref(rc)))
    f.add_pod(new_pod("unready", rc_ref(rc), ready=False))

    await f.rm.sync(KEY)

    deleted = f.pod_deletes()
    assert len(deleted) == 2 and "unready" in deleted
    assert sorted(f.recorder.events) == sorted(
        f"Normal SuccessfulDelete Deleted pod: {name} {RC_OBJECT}" for name in deleted
    )
    assert f.pod_creates() == []
    # The deletions are expected until the informer reports them.
    assert not f.rm.expectations.satisfied_expectations(KEY)


# -- adoption ------------------------------------------------------------------------------------


async def test_orphans_matching_the_map_selector_are_adopted() -> None:
    f = Fixture()
    rc = f.add_rc(new_rc(2))
    orphan = f.add_pod(new_pod("orphan", labels=dict(SELECTOR)))
    f.add_pod(new_pod("stranger", labels={"app": "other"}))
    f.add_pod(new_pod("replicaset-pod", RS_REF))

    await f.rm.sync(KEY)

    reads = [str(a) for a in f.client.actions if a.verb == "get"]
    assert reads == [f"get replicationcontrollers {KEY}"]  # the pre-adoption live check
    (patch,) = f.pod_patches()
    assert patch.name == "orphan"
    assert patch.patch == {
        "metadata": {"ownerReferences": [rc_ref(rc)], "uid": orphan["metadata"]["uid"]}
    }
    assert len(f.pod_creates()) == 1  # the adopted pod counts; the other two are not the RC's
    adopted = f.client.tracker.get(PODS, "orphan", namespace=NS)
    assert adopted["metadata"]["ownerReferences"][0]["kind"] == "ReplicationController"


async def test_owned_pods_that_stop_matching_are_released() -> None:
    f = Fixture()
    rc = f.add_rc(new_rc(1))
    f.add_pod(new_pod("kept", rc_ref(rc)))
    f.add_pod(new_pod("relabelled", rc_ref(rc), labels={"app": "other"}))

    await f.rm.sync(KEY)

    (patch,) = f.pod_patches()
    assert patch.name == "relabelled"
    assert patch.patch["metadata"]["ownerReferences"] == [{"$patch": "delete", "uid": RC_UID}]
    assert f.pod_creates() == []
    assert f.last_status()["replicas"] == 1


# -- status --------------------------------------------------------------------------------------


async def test_status_counts_on_the_rc_without_terminating_replicas() -> None:
    f = Fixture()
    rc = f.add_rc(new_rc(3, generation=4))
    f.add_pod(new_pod("full-ready", rc_ref(rc)))
    f.add_pod(new_pod("partly-labelled-ready", rc_ref(rc), labels=dict(SELECTOR)))
    f.add_pod(new_pod("full-unready", rc_ref(rc), ready=False))
    f.add_pod(new_pod("terminating", rc_ref(rc), deletionTimestamp="2026-01-01T11:59:00Z"))

    await f.rm.sync(KEY)

    assert f.writes() == f.status_updates()  # three active pods: nothing to create or delete
    (update,) = f.status_updates()
    assert str(update) == f"update replicationcontrollers {KEY}/status"
    assert f.last_status() == {
        "replicas": 3,
        "fullyLabeledReplicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "observedGeneration": 4,
    }
    # The status as stored is in sync: the next sync writes nothing.
    f.refresh_rc_cache()
    f.client.clear_actions()
    await f.rm.sync(KEY)
    assert f.writes() == []


async def test_failed_creations_set_replica_failure_and_warn_on_the_rc() -> None:
    f = Fixture()
    f.add_rc(new_rc(2))

    def quota(action: Action) -> None:
        raise Forbidden("exceeded quota")

    f.client.prepend_reactor("create", PODS, quota)

    with pytest.raises(Forbidden, match="exceeded quota"):
        await f.rm.sync(KEY)

    assert f.recorder.events == [f"Warning FailedCreate Error creating: exceeded quota {RC_OBJECT}"]
    status = f.last_status()
    (condition,) = status["conditions"]
    assert (condition["type"], condition["status"], condition["reason"], condition["message"]) == (
        "ReplicaFailure",
        "True",
        "FailedCreate",
        "exceeded quota",
    )
    assert status["replicas"] == 0
    assert "terminatingReplicas" not in status
    assert f.server_rc()["status"]["conditions"][0]["type"] == "ReplicaFailure"


# -- handlers ------------------------------------------------------------------------------------


async def test_a_pod_of_the_rc_is_a_creation_observed_for_it() -> None:
    f = Fixture()
    rc = f.add_rc(new_rc(1))
    f.rm.expectations.expect_creations(KEY, 1)

    f.rm.add_pod(new_pod("pod", rc_ref(rc)))

    assert f.rm.expectations.satisfied_expectations(KEY)
    assert await f.drain_queue() == [KEY]


async def test_a_pod_of_a_replicaset_of_the_same_name_is_not_the_rcs() -> None:
    f = Fixture()
    f.add_rc(new_rc(1))
    f.rm.expectations.expect_creations(KEY, 1)

    f.rm.add_pod(new_pod("pod", RS_REF))

    assert not f.rm.expectations.satisfied_expectations(KEY)
    assert await f.drain_queue() == []


async def test_an_orphan_queues_the_rcs_whose_map_selector_matches() -> None:
    f = Fixture()
    f.add_rc(new_rc(1))
    f.add_rc(new_rc(1, {"app": "other"}, name="other", uid="other-uid"))

    f.rm.add_pod(new_pod("orphan", labels={"app": "web", "extra": "yes"}))

    assert await f.drain_queue() == [KEY]


async def test_a_deleted_rc_from_a_tombstone_forgets_its_expectations() -> None:
    f = Fixture()
    rc = f.add_rc(new_rc(1))
    f.rm.expectations.expect_creations(KEY, 2)

    f.rm.delete_replica_set(DeletedFinalStateUnknown(KEY, rc))

    assert f.rm.expectations.get_expectations(KEY) is None
    assert await f.drain_queue() == [KEY]
