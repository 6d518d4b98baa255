"""The ReplicaSet sync, fixture style (upstream replica_set_test.go): fill the caches, sync a
key, assert the API actions sent, the events recorded and the expectations left behind."""

from __future__ import annotations

import pytest
from replicaset_fixtures import (
    NS,
    RS_UID,
    TEMPLATE_LABELS,
    Fixture,
    ago,
    controller_ref,
    new_pod,
    new_replica_set,
)

from kcontrol.client import PODS, REPLICASETS
from kcontrol.controller import ClaimError, ConsistencyStore, Result
from kcontrol.errors import Conflict, Forbidden, InternalError, NotFound, StaleCache
from kcontrol.testing import Action
from tests.controllers.worker_helpers import sync_as_worker

KEY = f"{NS}/foobar"


class FailAfter:
    """A reactor letting ``successes`` requests through, then raising ``error`` (until
    ``enabled`` is set false)."""

    def __init__(self, successes: int, error: Exception) -> None:
        self.successes = successes
        self.error = error
        self.calls = 0
        self.enabled = True

    def __call__(self, action: Action) -> None:
        if not self.enabled:
            return
        self.calls += 1
        if self.calls > self.successes:
            raise self.error


def forbidden_after(successes: int, message: str = "exceeded quota") -> FailAfter:
    return FailAfter(successes, Forbidden(message))


# -- doing nothing -------------------------------------------------------------------------------


async def test_replicas_already_right_creates_and_deletes_nothing() -> None:
    f = Fixture()
    rs = f.add_rs(new_replica_set(2))
    f.add_pod(new_pod("pod0", rs))
    f.add_pod(new_pod("pod1", rs))

    assert await f.rsc.sync(KEY) is None

    assert f.pod_creates() == [] and f.pod_deletes() == [] and f.pod_patches() == []
    assert f.recorder.events == []


async def test_status_in_sync_is_not_written() -> None:
    f = Fixture()
    rs = new_replica_set(2, generation=3)
    rs["status"] = {
        "replicas": 2,
        "fullyLabeledReplicas": 0,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "terminatingReplicas": 0,
        "observedGeneration": 3,
    }
    rs = f.add_rs(rs)
    f.add_pod(new_pod("pod0", rs))
    f.add_pod(new_pod("pod1", rs))

    await f.rsc.sync(KEY)

    assert f.writes() == []


async def test_missing_terminating_count_is_written_once_as_zero() -> None:
    """A status without terminatingReplicas differs from one with 0 (upstream compares the
    pointers), so the first sync writes it even when the counts are right."""
    f = Fixture()
    rs = new_replica_set(1)
    rs["status"] = {
        "replicas": 1,
        "readyReplicas": 1,
        "availableReplicas": 1,
        "observedGeneration": 1,
    }
    rs = f.add_rs(rs)
    f.add_pod(new_pod("pod0", rs))

    await f.rsc.sync(KEY)

    assert f.last_status()["terminatingReplicas"] == 0
    f.client.clear_actions()
    f.refresh_rs_cache()
    await f.rsc.sync(KEY)
    assert f.writes() == []


async def test_deleted_replica_set_forgets_its_expectations() -> None:
    f = Fixture()
    f.rsc.expectations.expect_creations(KEY, 3)
    f.rsc.consistency.wrote_at(KEY, RS_UID, PODS, "7")

    assert await f.rsc.sync(KEY) is None

    assert f.rsc.expectations.get_expectations(KEY) is None
    assert f.rsc.consistency.pending(KEY) == {}
    assert f.client.actions == []


# -- scaling up ----------------------------------------------------------------------------------


async def test_creates_missing_pods_from_the_template_and_expects_them() -> None:
    f = Fixture()
    rs = f.add_rs(new_replica_set(3))

    assert await f.rsc.sync(KEY) is None

    creates = f.pod_creates()
    assert len(creates) == 3
    for create in creates:
        assert create.namespace == NS
        body = create.object
        assert body is not None
        assert body["metadata"] == {
            "generateName": "foobar-",
            "labels": TEMPLATE_LABELS,
            "annotations": {"note": "from-template"},
            "ownerReferences": [controller_ref(rs)],
        }
        assert body["spec"] == rs["spec"]["template"]["spec"]
    created = [p["metadata"]["name"] for p in f.client.tracker.list(PODS, namespace=NS)["items"]]
    assert sorted(f.recorder.events) == sorted(
        f"Normal SuccessfulCreate Created pod: {name}" for name in created
    )
    expectations = f.rsc.expectations.get_expectations(KEY)
    assert expectations is not None and (expectations.add, expectations.delete) == (3, 0)
    # No status yet: it would count the pods seen in the cache (none), and the sync that
    # the new pods' events trigger supersedes it at once.
    assert f.status_updates() == []

    f.refresh_rs_cache()
    f.observe_new_pods()
    f.client.clear_actions()
    assert await f.rsc.sync(KEY) is None
    assert f.pod_creates() == []
    assert f.last_status()["replicas"] == 3
    assert f.server_rs()["status"]["observedGeneration"] == rs["metadata"]["generation"]


async def test_status_is_written_when_scaling_down() -> None:
    """Only creations leave the status to the next sync: the pods a scale-down deletes
    turn terminating, which the status reports."""
    f = Fixture()
    rs = f.add_rs(new_replica_set(1))
    for name in ("a", "b"):
        f.add_pod(new_pod(name, rs))

    assert await f.rsc.sync(KEY) is None

    assert len(f.pod_deletes()) == 1
    assert f.last_status()["replicas"] == 2


async def test_a_status_the_next_sync_supersedes_is_left_out_never_twice_in_a_row() -> None:
    """A sync whose ReplicaSet was queued again while it ran leaves its status to the sync
    that follows at once, but never twice in a row; the syncs run as the runner's workers
    run them (kcontrol.controller.superseded)."""
    f = Fixture()
    rs = f.add_rs(new_replica_set(1))
    for name in ("a", "b", "c"):
        f.add_pod(new_pod(name, rs))
    controller = f.rsc.controller

    await sync_as_worker(controller, KEY, event_during=True)
    assert len(f.pod_deletes()) == 2
    assert f.status_updates() == [], "the status is left to the sync that follows"

    await sync_as_worker(controller, KEY, event_during=True)  # the round that follows
    assert len(f.status_updates()) == 1, "not left out twice in a row"

    f.refresh_rs_cache()
    f.client.clear_actions()
    await sync_as_worker(controller, KEY)
    assert f.status_updates() == [], "the status written is current"


async def test_pod_events_are_about_the_replica_set() -> None:
    rs_events = "involvedObject{kind=ReplicaSet,apiVersion=apps/v1}"
    f = Fixture(events_name_objects=True)
    f.add_rs(new_replica_set(1))
    await f.rsc.sync(KEY)
    (pod,) = f.client.tracker.list(PODS, namespace=NS)["items"]
    assert f.recorder.events == [
        f"Normal SuccessfulCreate Created pod: {pod['metadata']['name']} {rs_events}"
    ]

    f = Fixture(events_name_objects=True)
    rs = f.add_rs(new_replica_set(1))
    f.add_pod(new_pod("extra", rs, "Pending"))
    f.add_pod(new_pod("kept", rs))
    await f.rsc.sync(KEY)
    assert f.recorder.events == [f"Normal SuccessfulDelete Deleted pod: extra {rs_events}"]


async def test_no_action_while_expectations_are_unsatisfied() -> None:
    """Upstream TestSyncReplicaSetDormancy: expectations hold creation back until the pods
    are observed; a failed creation is not expected, so the next sync tries it again."""
    f = Fixture()
    f.add_rs(new_replica_set(2))
    f.add_pod(new_pod("pod0", f.server_rs()))

    await f.rsc.sync(KEY)
    assert len(f.pod_creates()) == 1

    f.client.clear_actions()
    await f.rsc.sync(KEY)  # the new pod is not in the cache yet
    assert f.pod_creates() == []

    # Observed, but the pod vanished meanwhile; the next creation fails.
    f.rsc.expectations.creation_observed(KEY)
    quota = forbidden_after(0)
    f.client.prepend_reactor("create", PODS, quota)
    f.client.clear_actions()
    with pytest.raises(Forbidden):
        await f.rsc.sync(KEY)
    assert len(f.pod_creates()) == 1
    assert f.rsc.expectations.satisfied_expectations(KEY)

    quota.enabled = False
    f.client.clear_actions()
    await f.rsc.sync(KEY)
    assert len(f.pod_creates()) == 1


async def test_creations_are_capped_by_the_burst() -> None:
    f = Fixture(burst_replicas=3)
    f.add_rs(new_replica_set(5))

    await f.rsc.sync(KEY)

    assert len(f.pod_creates()) == 3
    expectations = f.rsc.expectations.get_expectations(KEY)
    assert expectations is not None and expectations.add == 3


async def test_slow_start_stops_at_the_first_failing_batch() -> None:
    """Upstream TestSyncReplicaSetCreateFailures: 10 wanted, the quota allows 5. Batches of
    1, 2 and 4 are tried (the third fails twice), the last 3 never."""
    f = Fixture()
    f.add_rs(new_replica_set(10))
    reactor = forbidden_after(5)
    f.client.prepend_reactor("create", PODS, reactor)

    with pytest.raises(Forbidden, match="exceeded quota"):
        await f.rsc.sync(KEY)

    assert reactor.calls == 7
    assert len(f.client.tracker.list(PODS, namespace=NS)["items"]) == 5
    failed = [e for e in f.recorder.events if "FailedCreate" in e]
    assert failed == ["Warning FailedCreate Error creating: exceeded quota"] * 2
    assert sum("SuccessfulCreate" in e for e in f.recorder.events) == 5
    expectations = f.rsc.expectations.get_expectations(KEY)
    assert expectations is not None and expectations.add == 5  # skipped ones not expected
    (condition,) = f.last_status()["conditions"]
    assert condition["type"] == "ReplicaFailure"
    assert condition["status"] == "True"
    assert condition["reason"] == "FailedCreate"
    assert condition["message"] == "exceeded quota"
    assert condition["lastTransitionTime"] == "2026-01-01T12:00:00Z"


async def test_replica_failure_is_cleared_once_managing_succeeds() -> None:
    f = Fixture()
    f.add_rs(new_replica_set(3))
    quota = forbidden_after(1)
    f.client.prepend_reactor("create", PODS, quota)
    with pytest.raises(Forbidden):
        await f.rsc.sync(KEY)
    assert [c["type"] for c in f.last_status()["conditions"]] == ["ReplicaFailure"]

    quota.enabled = False
    f.refresh_rs_cache()
    f.observe_new_pods()
    f.client.clear_actions()
    assert await f.rsc.sync(KEY) is None

    assert len(f.pod_creates()) == 2
    assert f.status_updates() == []  # left to the sync the new pods trigger
    f.refresh_rs_cache()
    f.observe_new_pods()
    assert await f.rsc.sync(KEY) is None
    assert "conditions" not in f.last_status()
    assert "conditions" not in f.server_rs()["status"]


async def test_failing_creations_keep_the_first_condition() -> None:
    """An existing ReplicaFailure is left as it is while failures go on (same message)."""
    f = Fixture()
    f.add_rs(new_replica_set(3))
    quota = forbidden_after(0, "first")
    f.client.prepend_reactor("create", PODS, quota)
    with pytest.raises(Forbidden):
        await f.rsc.sync(KEY)
    f.refresh_rs_cache()
    quota.error = Forbidden("second")
    f.client.clear_actions()

    with pytest.raises(Forbidden, match="second"):
        await f.rsc.sync(KEY)

    assert f.status_updates() == []
    (condition,) = f.server_rs()["status"]["conditions"]
    assert condition["message"] == "first"


async def test_creation_refused_in_terminating_namespace_is_not_reported() -> None:
    f = Fixture()
    f.add_rs(new_replica_set(2))

    def terminating(action: Action) -> None:
        raise Forbidden(
            "unable to create new content in namespace default because it is being terminated",
            details={"causes": [{"reason": "NamespaceTerminating"}]},
        )

    f.client.prepend_reactor("create", PODS, terminating)

    assert await f.rsc.sync(KEY) is None

    assert len(f.pod_creates()) == 2  # counted as successes: the slow start goes on
    assert f.recorder.events == []
    assert f.status_updates() == []  # no ReplicaFailure (nor any status: the pods are awaited)


async def test_template_without_labels_creates_nothing() -> None:
    f = Fixture()
    f.add_rs(new_replica_set(1, selector={}, template_labels={}))

    with pytest.raises(ValueError, match="no labels"):
        await f.rsc.sync(KEY)

    assert f.pod_creates() == []
    assert f.recorder.events == []
    assert f.last_status()["conditions"][0]["message"] == "unable to create pods, no labels"


# -- scaling down --------------------------------------------------------------------------------


async def test_deletes_the_extra_pods_that_rank_first() -> None:
    f = Fixture()
    rs = f.add_rs(new_replica_set(1))
    f.add_pod(new_pod("unscheduled", rs, "Pending"))
    f.add_pod(new_pod("scheduled-pending", rs, "Pending", node="n1"))
    f.add_pod(new_pod("running-ready", rs, node="n1", ready_since=ago(60)))

    assert await f.rsc.sync(KEY) is None

    assert f.pod_deletes() == ["scheduled-pending", "unscheduled"]
    assert sorted(f.recorder.events) == [
        "Normal SuccessfulDelete Deleted pod: scheduled-pending",
        "Normal SuccessfulDelete Deleted pod: unscheduled",
    ]
    assert f.rsc.expectations.get_uids(KEY) == {f"{NS}/unscheduled", f"{NS}/scheduled-pending"}
    expectations = f.rsc.expectations.get_expectations(KEY)
    assert expectations is not None and expectations.delete == 2


async def test_deletions_are_capped_by_the_burst() -> None:
    f = Fixture(burst_replicas=2)
    rs = f.add_rs(new_replica_set(0))
    for i in range(5):
        f.add_pod(new_pod(f"pod{i}", rs))

    await f.rsc.sync(KEY)

    assert len(f.pod_deletes()) == 2


async def test_pod_already_gone_is_not_an_error() -> None:
    f = Fixture()
    rs = f.add_rs(new_replica_set(0))
    f.add_pod(new_pod("gone", rs))
    f.add_pod(new_pod("there", rs))

    def not_found(action: Action) -> None:
        if action.name == "gone":
            raise NotFound('pods "gone" not found')

    f.client.prepend_reactor("delete", PODS, not_found)

    assert await f.rsc.sync(KEY) is None

    assert f.pod_deletes() == ["gone", "there"]
    assert f.recorder.events == ["Normal SuccessfulDelete Deleted pod: there"]
    assert f.rsc.expectations.get_uids(KEY) == {f"{NS}/there"}  # the NotFound is not awaited
    expectations = f.rsc.expectations.get_expectations(KEY)
    assert expectations is not None and expectations.delete == 1


async def test_failed_deletion_is_reported_and_retried() -> None:
    f = Fixture()
    rs = f.add_rs(new_replica_set(1))
    f.add_pod(new_pod("pod0", rs, "Pending"))
    f.add_pod(new_pod("pod1", rs, node="n1"))
    f.client.prepend_reactor("delete", PODS, FailAfter(0, InternalError("boom")))

    with pytest.raises(InternalError):
        await f.rsc.sync(KEY)

    assert f.pod_deletes() == ["pod0"]
    assert f.recorder.events == ["Warning FailedDelete Error deleting: boom"]
    assert f.rsc.expectations.satisfied_expectations(KEY)  # lowered: nothing to wait for
    (condition,) = f.last_status()["conditions"]
    assert (condition["reason"], condition["message"]) == (
        "FailedDelete",
        "unable to delete pods: boom",
    )


async def test_related_pods_on_the_same_node_are_thinned_first() -> None:
    """Co-location counts the pods of sibling ReplicaSets (same controller): the pod sharing
    its node with a sibling's pod goes first."""
    f = Fixture()
    rs = f.add_rs(new_replica_set(1))
    sibling = f.add_rs(new_replica_set(1, {"foo": "baz"}, name="sibling", uid="sibling-uid"))
    f.add_pod(new_pod("alone", rs, node="n1", ready_since=ago(100)))
    f.add_pod(new_pod("doubled", rs, node="n2", ready_since=ago(100)))
    f.add_pod(new_pod("sibling-pod", sibling, node="n2", ready_since=ago(100)))

    await f.rsc.sync(KEY)

    assert f.pod_deletes() == ["doubled"]


async def test_no_pod_is_managed_while_the_replica_set_is_being_deleted() -> None:
    """Upstream TestDoNotAdoptOrCreateIfBeingDeleted."""
    f = Fixture()
    f.add_rs(new_replica_set(2, deletionTimestamp=ago(1), finalizers=["foregroundDeletion"]))
    f.add_pod(new_pod("orphan", owned=False))

    await f.rsc.sync(KEY)

    assert f.pod_creates() == [] and f.pod_patches() == [] and f.pod_deletes() == []


# -- claiming ------------------------------------------------------------------------------------


async def test_matching_orphans_are_adopted_after_a_live_check() -> None:
    f = Fixture()
    rs = f.add_rs(new_replica_set(2))
    orphan = f.add_pod(new_pod("orphan", owned=False))

    await f.rsc.sync(KEY)

    reads = [str(a) for a in f.client.actions if a.verb == "get"]
    assert reads == [f"get replicasets {KEY}"]
    (patch,) = f.pod_patches()
    assert patch.name == "orphan"
    assert patch.patch == {
        "metadata": {"ownerReferences": [controller_ref(rs)], "uid": orphan["metadata"]["uid"]}
    }
    assert len(f.pod_creates()) == 1  # the adopted pod counts
    assert f.status_updates() == []  # left to the sync the new pod triggers


async def test_adoption_is_a_write_the_informer_must_see() -> None:
    f = Fixture()
    f.add_rs(new_replica_set(1))
    f.add_pod(new_pod("orphan", owned=False))

    await f.rsc.sync(KEY)

    adopted = f.client.tracker.get(PODS, "orphan", namespace=NS)
    assert adopted["metadata"]["ownerReferences"][0]["uid"] == RS_UID
    assert f.rsc.consistency.pending(KEY)[PODS] == adopted["metadata"]["resourceVersion"]


async def test_owned_pods_that_stop_matching_are_released() -> None:
    f = Fixture()
    rs = f.add_rs(new_replica_set(1))
    f.add_pod(new_pod("kept", rs))
    f.add_pod(new_pod("relabelled", rs, labels={"foo": "other"}))

    await f.rsc.sync(KEY)

    (patch,) = f.pod_patches()
    assert patch.name == "relabelled"
    assert patch.patch["metadata"]["ownerReferences"] == [{"$patch": "delete", "uid": RS_UID}]
    assert f.pod_creates() == []  # only "kept" is counted, and it is enough
    assert f.last_status()["replicas"] == 1


async def test_pods_of_another_controller_are_left_alone() -> None:
    """Upstream TestDoNotPatchPodWithOtherControlRef: a matching pod controlled by another
    ReplicaSet is not ours, so both replicas are created."""
    f = Fixture()
    f.add_rs(new_replica_set(2))
    other = new_replica_set(1, name="other", uid="other-uid")
    f.add_pod(new_pod("theirs", other))

    await f.rsc.sync(KEY)

    assert f.pod_patches() == []
    assert len(f.pod_creates()) == 2


async def test_failed_adoptions_fail_the_sync_before_any_creation() -> None:
    """Upstream TestPatchPodFails."""
    f = Fixture()
    f.add_rs(new_replica_set(2))
    f.add_pod(new_pod("pod1", owned=False))
    f.add_pod(new_pod("pod2", owned=False))
    f.client.prepend_reactor("patch", PODS, FailAfter(0, InternalError("fake")))

    with pytest.raises(ClaimError, match="fake"):
        await f.rsc.sync(KEY)

    assert len(f.pod_patches()) == 2
    assert f.pod_creates() == [] and f.status_updates() == []


async def test_no_adoption_when_the_live_replica_set_is_being_deleted() -> None:
    """Upstream TestDoNotAdoptOrCreateIfBeingDeletedRace: the cache says alive, the server
    says deleting; the live check stops both adoption and creation."""
    f = Fixture()
    live = f.add_rs(new_replica_set(2, deletionTimestamp=ago(1), finalizers=["x"]))
    cached = dict(
        live, metadata={k: v for k, v in live["metadata"].items() if k != "deletionTimestamp"}
    )
    f.rs_informer.indexer.update(cached)
    f.add_pod(new_pod("orphan", owned=False))

    with pytest.raises(ClaimError, match="has just been deleted"):
        await f.rsc.sync(KEY)

    assert f.pod_patches() == [] and f.pod_creates() == []


async def test_terminating_replicas_counts_claimed_terminating_pods_only() -> None:
    f = Fixture()
    rs = f.add_rs(new_replica_set(1))
    f.add_pod(new_pod("active", rs))
    f.add_pod(new_pod("terminating", rs, deletionTimestamp=ago(1), finalizers=["x"]))
    f.add_pod(new_pod("terminated", rs, "Failed", deletionTimestamp=ago(1), finalizers=["x"]))
    f.add_pod(
        new_pod("orphan-terminating", owned=False, deletionTimestamp=ago(1), finalizers=["x"])
    )
    f.add_pod(
        new_pod(
            "other-terminating",
            new_replica_set(name="o", uid="o"),
            deletionTimestamp=ago(1),
            finalizers=["x"],
        )
    )

    await f.rsc.sync(KEY)

    status = f.last_status()
    assert (status["replicas"], status["terminatingReplicas"]) == (1, 1)


async def test_terminating_replicas_can_be_turned_off() -> None:
    f = Fixture(terminating_replicas=False)
    rs = f.add_rs(new_replica_set(1))
    f.add_pod(new_pod("active", rs))
    f.add_pod(new_pod("terminating", rs, deletionTimestamp=ago(1), finalizers=["x"]))

    await f.rsc.sync(KEY)

    assert "terminatingReplicas" not in f.last_status()


# -- status --------------------------------------------------------------------------------------


async def test_status_records_the_observed_generation() -> None:
    f = Fixture()
    rs = new_replica_set(1)
    rs["status"] = {
        "replicas": 1,
        "readyReplicas": 1,
        "availableReplicas": 1,
        "terminatingReplicas": 0,
        "observedGeneration": 1,
    }
    rs = f.add_rs(rs)
    rs["metadata"]["generation"] = 4  # a spec change the controller has not observed yet
    f.client.tracker.add(rs)
    f.refresh_rs_cache()
    f.add_pod(new_pod("pod0", rs))

    await f.rsc.sync(KEY)

    (update,) = f.status_updates()
    assert update.object is not None
    assert update.object["status"]["observedGeneration"] == 4
    assert (
        update.object["metadata"]["resourceVersion"]
        == f.rs_informer.indexer.get_by_key(KEY)["metadata"]["resourceVersion"]
    )
    assert f.server_rs()["status"]["observedGeneration"] == 4


async def test_status_write_is_retried_once_on_a_fresh_copy() -> None:
    f = Fixture()
    f.add_rs(new_replica_set(0))
    newer = f.server_rs()
    newer["metadata"]["labels"] = {"changed": "by-someone"}
    f.client.tracker.add(newer)  # the cache is behind: the first write conflicts

    await f.rsc.sync(KEY)

    assert [str(a) for a in f.client.actions] == [
        f"update replicasets {KEY}/status",
        f"get replicasets {KEY}",
        f"update replicasets {KEY}/status",
    ]
    assert f.server_rs()["status"]["replicas"] == 0
    assert f.server_rs()["metadata"]["labels"] == {"changed": "by-someone"}


async def test_status_write_gives_up_after_one_retry() -> None:
    """Upstream TestControllerUpdateStatusWithFailure: 2 writes and 1 read, then the error."""
    f = Fixture()
    f.add_rs(new_replica_set(0))

    def refuse(action: Action) -> None:
        if action.subresource == "status":
            raise Conflict("try again")

    f.client.prepend_reactor("update", REPLICASETS, refuse)

    with pytest.raises(Conflict):
        await f.rsc.sync(KEY)

    assert [a.verb for a in f.client.actions] == ["update", "get", "update"]
    for update in f.status_updates():
        assert update.object is not None and update.object["status"]["replicas"] == 0


async def test_requeued_when_the_next_pod_becomes_available() -> None:
    """Upstream TestReplicaSetAvailabilityCheck: minReadySeconds 5, pods ready for 0, 2 and
    4.5 s: nothing available yet, the next one in 0.5 s."""
    f = Fixture()
    rs = f.add_rs(new_replica_set(4, min_ready_seconds=5))
    f.clock.step(0.5)  # wall 12:00:00.5
    f.add_pod(new_pod("pending", rs, "Pending"))
    f.add_pod(new_pod("ready-now", rs, ready_since=ago(0)))
    f.add_pod(new_pod("ready-2s", rs, ready_since=ago(2)))
    f.add_pod(new_pod("ready-4s", rs, ready_since=ago(4)))

    result = await f.rsc.sync(KEY)

    status = f.last_status()
    assert (status["readyReplicas"], status["availableReplicas"]) == (3, 0)
    assert result == Result(requeue_after=pytest.approx(0.5))


async def test_not_requeued_when_every_ready_pod_is_available() -> None:
    f = Fixture()
    rs = f.add_rs(new_replica_set(1, min_ready_seconds=5))
    f.add_pod(new_pod("old", rs, ready_since=ago(10)))

    assert await f.rsc.sync(KEY) is None
    assert f.last_status()["availableReplicas"] == 1


async def test_ready_pod_without_transition_time_requeues_after_min_ready_seconds() -> None:
    f = Fixture()
    rs = f.add_rs(new_replica_set(1, min_ready_seconds=7))
    f.add_pod(new_pod("no-time", rs))

    assert await f.rsc.sync(KEY) == Result(requeue_after=7.0)


# -- consistency with the controller's own writes -----------------------------------------------


async def test_sync_waits_for_the_informers_to_see_its_writes() -> None:
    seen = {PODS: "", REPLICASETS: ""}
    store = ConsistencyStore({resource: (lambda r=resource: seen[r]) for resource in seen})
    f = Fixture(consistency=store)
    f.add_rs(new_replica_set(1))

    await f.rsc.sync(KEY)

    (pod,) = f.client.tracker.list(PODS, namespace=NS)["items"]
    written = store.pending(KEY)
    assert written == {PODS: pod["metadata"]["resourceVersion"]}  # no status write yet
    seen[PODS] = str(int(written[PODS]) - 1)  # the pod informer is behind
    f.client.clear_actions()
    with pytest.raises(StaleCache):  # the runner retries it rate-limited, quietly
        await f.rsc.sync(KEY)
    assert f.client.actions == []
    skips = f.registry.get_sample_value(
        "replicaset_controller_stale_sync_skips_total", {"group": "", "resource": "pods"}
    )
    assert skips == 1.0

    seen[PODS] = written[PODS]
    f.observe_new_pods()
    await f.rsc.sync(KEY)  # caught up: the sync runs and writes the status
    status_version = f.server_rs()["metadata"]["resourceVersion"]
    assert store.pending(KEY) == {REPLICASETS: status_version}
    seen[REPLICASETS] = str(int(status_version) - 1)  # the ReplicaSet informer is behind
    with pytest.raises(StaleCache):
        await f.rsc.sync(KEY)
    seen[REPLICASETS] = status_version
    f.refresh_rs_cache()
    f.client.clear_actions()
    assert await f.rsc.sync(KEY) is None  # caught up: the sync runs, nothing left to write
    assert f.writes() == []


# -- a full scale-up and scale-down with a small burst -------------------------------------------


@pytest.mark.parametrize(("burst", "replicas"), [(5, 30), (5, 12), (3, 2)])
async def test_burst_replicas_round_trip(burst: int, replicas: int) -> None:
    """Upstream TestControllerBurstReplicas: each sync acts on at most ``burst`` pods and
    the next one waits until every one of them was observed."""
    f = Fixture(burst_replicas=burst)
    f.add_rs(new_replica_set(replicas))

    while len(f.pod_informer.indexer.list()) < replicas:
        f.client.clear_actions()
        await f.rsc.sync(KEY)
        expected = min(burst, replicas - len(f.pod_informer.indexer.list()))
        assert len(f.pod_creates()) == expected
        f.client.clear_actions()
        await f.rsc.sync(KEY)  # nothing observed yet: no action
        assert f.pod_creates() == []
        f.observe_new_pods()
        f.refresh_rs_cache()

    scaled = f.server_rs()
    scaled["spec"]["replicas"] = 0
    f.client.tracker.add(scaled)
    f.refresh_rs_cache()
    while f.pod_informer.indexer.list():
        f.client.clear_actions()
        await f.rsc.sync(KEY)
        deleted = f.pod_deletes()
        assert len(deleted) == min(burst, len(f.pod_informer.indexer.list()))
        for name in deleted[1:]:
            pod = f.pod_informer.indexer.get_by_key(f"{NS}/{name}")
            f.pod_informer.indexer.delete(pod)
            f.rsc.delete_pod(pod)
        f.client.clear_actions()
        await f.rsc.sync(KEY)  # the last deletion is not observed yet
        assert f.pod_deletes() == []
        expectations = f.rsc.expectations.get_expectations(KEY)
        assert expectations is not None and expectations.delete == 1
        last = f.pod_informer.indexer.get_by_key(f"{NS}/{deleted[0]}")
        f.pod_informer.indexer.delete(last)
        f.rsc.delete_pod(last)
        f.refresh_rs_cache()
    assert f.client.tracker.list(PODS, namespace=NS)["items"] == []
