"""Scaling a StatefulSet on the fake client (upstream stateful_set_control_test.go: ScaleUp,
ScaleDown, ReplacesPods, CreatePodFailure..., OrderedReady and Parallel, start ordinals):
sync, make pods run, sync again, and assert the actions sent at each step."""

from __future__ import annotations

from statefulset_controller_fixtures import KEY, NS, Fixture, new_set

from kcontrol.client import PERSISTENTVOLUMECLAIMS, PODS
from kcontrol.errors import Forbidden
from kcontrol.testing import Action

# -- OrderedReady: one pod at a time, in order ---------------------------------------------------


async def test_scale_up_creates_one_pod_at_a_time_in_ordinal_order() -> None:
    f = Fixture()
    f.add(new_set(3))

    await f.sync()
    assert f.created() == ["foo-0"]
    assert f.created(PERSISTENTVOLUMECLAIMS) == ["datadir-foo-0"]

    # foo-0 pending: nothing more until it runs and is ready
    f.client.clear_actions()
    await f.sync()
    assert f.created() == []
    f.set_status("foo-0", ready=False)
    await f.sync()
    assert f.created() == []

    f.set_status("foo-0")
    await f.sync()
    assert f.created() == ["foo-1"]
    f.client.clear_actions()
    f.set_status("foo-1")
    await f.sync()
    assert f.created() == ["foo-2"]

    await f.converge()
    status = f.server_set()["status"]
    assert status["replicas"] == 3
    assert status["readyReplicas"] == 3
    assert status["availableReplicas"] == 3
    assert status["currentReplicas"] == status["updatedReplicas"] == 3
    assert status["currentRevision"] == status["updateRevision"] != ""
    assert status["observedGeneration"] == 1
    assert status["collisionCount"] == 0


async def test_claims_are_created_before_the_pod_and_events_recorded() -> None:
    f = Fixture()
    f.add(new_set(1))

    await f.sync()

    creates = [
        (a.resource.plural, a.object["metadata"]["name"])
        for a in f.client.actions_for("create")
        if a.object is not None and a.resource in (PODS, PERSISTENTVOLUMECLAIMS)
    ]
    assert creates == [("persistentvolumeclaims", "datadir-foo-0"), ("pods", "foo-0")]
    assert f.recorder.events == [
        "Normal SuccessfulCreate create Claim datadir-foo-0 Pod foo-0 in StatefulSet foo success",
        "Normal SuccessfulCreate create Pod foo-0 in StatefulSet foo successful",
    ]
    pod = f.pods()["foo-0"]
    assert pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "foo-0"
    assert pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "0"
    assert pod["spec"]["hostname"] == "foo-0"
    assert pod["spec"]["subdomain"] == "governingsvc"
    claim_volume = pod["spec"]["volumes"][0]
    assert claim_volume == {
        "name": "datadir",
        "persistentVolumeClaim": {"claimName": "datadir-foo-0"},
    }
    (ref,) = pod["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["controller"]) == ("StatefulSet", "foo", True)


async def test_scale_down_deletes_the_highest_ordinal_first_one_at_a_time() -> None:
    f = Fixture()
    f.add(new_set(3))
    await f.converge()
    f.patch_set({"replicas": 1})
    f.client.clear_actions()

    await f.sync()
    assert f.deleted() == ["foo-2"]
    assert (
        f.recorder.events[-1]
        == "Normal SuccessfulDelete delete Pod foo-2 in StatefulSet foo successful"
    )

    f.client.clear_actions()
    await f.sync()
    assert f.deleted() == ["foo-1"]
    await f.converge()
    assert sorted(f.pods()) == ["foo-0"]
    assert f.server_set()["status"]["replicas"] == 1


async def test_scale_down_waits_for_a_terminating_pod() -> None:
    f = Fixture()
    f.add(new_set(3))
    await f.converge()
    f.terminate("foo-2")
    f.patch_set({"replicas": 1})
    f.client.clear_actions()

    await f.sync()

    assert f.deleted() == []  # foo-1 waits until foo-2 is gone


async def test_scale_down_waits_while_a_replica_is_unhealthy() -> None:
    f = Fixture()
    f.add(new_set(3))
    await f.converge()
    f.patch_set({"replicas": 2})
    f.set_status("foo-1", ready=False)
    f.client.clear_actions()

    await f.sync()

    assert f.deleted() == []


async def test_scale_down_deletes_an_unhealthy_pod_only_if_it_is_the_first_unavailable() -> None:
    f = Fixture()
    f.add(new_set(3))
    await f.converge()
    f.patch_set({"replicas": 1})
    f.set_status("foo-1", ready=False)
    f.set_status("foo-2", ready=False)
    f.client.clear_actions()

    await f.sync()
    assert f.deleted() == []  # foo-2 is unhealthy and foo-1 is the first unavailable: wait

    f.set_status("foo-1")
    await f.sync()
    assert f.deleted() == ["foo-2"]  # now foo-2 is the first unavailable pod: it may go


async def test_scale_down_deletes_a_healthy_pod_despite_an_unhealthy_condemned_one() -> None:
    f = Fixture()
    f.add(new_set(3))
    await f.converge()
    f.patch_set({"replicas": 1})
    f.set_status("foo-1", ready=False)
    f.client.clear_actions()

    await f.sync()

    assert f.deleted() == ["foo-2"]


async def test_creation_waits_for_a_terminating_predecessor() -> None:
    f = Fixture()
    f.add(new_set(3))
    await f.converge()
    f.terminate("foo-1")
    f.client.tracker.delete(PODS, "foo-2", namespace=NS)
    f.client.clear_actions()

    await f.sync()

    assert f.created() == []
    assert f.deleted() == []


async def test_failed_pod_is_deleted_then_created_again() -> None:
    f = Fixture()
    f.add(new_set(3))
    await f.converge()
    old_uid = f.pods()["foo-1"]["metadata"]["uid"]
    f.set_status("foo-1", "Failed")
    f.client.clear_actions()

    await f.sync()
    assert f.deleted() == ["foo-1"]
    assert f.created() == []  # made again once the old one is gone

    f.client.clear_actions()
    await f.sync()
    assert f.created() == ["foo-1"]
    assert f.pods()["foo-1"]["metadata"]["uid"] != old_uid


async def test_succeeded_pod_is_made_again_too() -> None:
    f = Fixture()
    f.add(new_set(1))
    await f.converge()
    f.set_status("foo-0", "Succeeded")
    f.client.clear_actions()

    await f.sync()

    assert f.deleted() == ["foo-0"]


async def test_terminating_failed_pod_is_not_deleted_again() -> None:
    f = Fixture()
    f.add(new_set(2))
    await f.converge()
    f.set_status("foo-1", "Failed")
    f.terminate("foo-1")
    f.client.clear_actions()

    await f.sync()

    assert f.deleted() == []


async def test_start_ordinal_names_the_pods() -> None:
    f = Fixture()
    f.add(new_set(2, ordinals={"start": 3}))

    await f.sync()
    assert f.created() == ["foo-3"]
    await f.converge()

    assert sorted(f.pods()) == ["foo-3", "foo-4"]
    f.patch_set({"ordinals": {"start": 4}})
    f.client.clear_actions()
    await f.sync()
    assert f.created() == ["foo-5"]  # in order: 4 exists, 5 is missing
    await f.converge()
    assert sorted(f.pods()) == ["foo-4", "foo-5"]


async def test_pods_without_an_ordinal_are_ignored() -> None:
    f = Fixture()
    set_ = f.add(new_set(1))
    await f.converge()
    stray = f.pods()["foo-0"]
    stray["metadata"] = {
        "name": "foo-bar",
        "namespace": NS,
        "labels": dict(stray["metadata"]["labels"]),
        "ownerReferences": stray["metadata"]["ownerReferences"],
    }
    stray["metadata"]["ownerReferences"][0]["uid"] = set_["metadata"]["uid"]
    f.add(stray)
    f.client.clear_actions()

    await f.sync()

    assert f.deleted() == [] and f.created() == []


async def test_create_failure_is_recorded_and_raised() -> None:
    f = Fixture()
    f.add(new_set(1))

    def refuse(action: Action) -> None:
        raise Forbidden("exceeded quota")

    f.client.prepend_reactor("create", PODS, refuse)

    try:
        await f.sync()
    except Forbidden:
        pass
    else:
        raise AssertionError("the failure was not raised")
    assert f.recorder.events[-1].startswith(
        "Warning FailedCreate create Pod foo-0 in StatefulSet foo failed error: "
    )
    # the status is still written
    assert f.status_updates()


# -- Parallel: all at once -----------------------------------------------------------------------


async def test_parallel_creates_every_pod_at_once() -> None:
    f = Fixture()
    f.add(new_set(5, podManagementPolicy="Parallel"))

    await f.sync()

    assert sorted(f.created()) == [f"foo-{i}" for i in range(5)]
    assert sorted(f.created(PERSISTENTVOLUMECLAIMS)) == [f"datadir-foo-{i}" for i in range(5)]


async def test_parallel_deletes_every_condemned_pod_at_once_even_if_unhealthy() -> None:
    f = Fixture()
    f.add(new_set(4, podManagementPolicy="Parallel"))
    await f.converge()
    f.set_status("foo-0", ready=False)
    f.terminate("foo-3")
    f.patch_set({"replicas": 1})
    f.client.clear_actions()

    await f.sync()

    assert sorted(f.deleted()) == ["foo-1", "foo-2"]  # foo-3 is terminating already


async def test_parallel_replaces_a_failed_pod_without_waiting_for_others() -> None:
    f = Fixture()
    f.add(new_set(3, podManagementPolicy="Parallel"))
    await f.converge()
    f.set_status("foo-0", ready=False)
    f.client.tracker.delete(PODS, "foo-2", namespace=NS)
    f.client.clear_actions()

    await f.sync()

    assert f.created() == ["foo-2"]


async def test_sync_of_a_deleted_set_does_nothing() -> None:
    f = Fixture()
    assert await f.ssc.sync(KEY) is None
    assert f.writes() == []


async def test_pod_with_a_wrong_identity_or_storage_is_updated() -> None:
    f = Fixture()
    f.add(new_set(1))
    await f.converge()
    pod = f.pods()["foo-0"]
    del pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"]
    pod["spec"]["volumes"] = [v for v in pod["spec"]["volumes"] if v["name"] != "datadir"]
    f.client.tracker.update(PODS, pod, namespace=NS)
    f.client.tracker.delete(PERSISTENTVOLUMECLAIMS, "datadir-foo-0", namespace=NS)
    f.client.clear_actions()
    f.recorder.events.clear()

    await f.sync()

    assert f.updated() == ["foo-0"]
    assert f.created(PERSISTENTVOLUMECLAIMS) == ["datadir-foo-0"]
    updated = f.pods()["foo-0"]
    assert updated["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "foo-0"
    assert {"name": "datadir", "persistentVolumeClaim": {"claimName": "datadir-foo-0"}} in (
        updated["spec"]["volumes"]
    )
    assert f.recorder.events[-1] == (
        "Normal SuccessfulUpdate update Pod foo-0 in StatefulSet foo successful"
    )
