"""The event handlers, claiming pods and orphan pods: upstream's TestGetPodsForJob,
TestAddPod(Orphan), TestUpdatePod*, TestDeletePod(Orphan), TestUpdateJobRequeue,
TestSyncOrphanPod, TestFinalizersRemovedExpectations."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from job_fixtures import TRACKING, WALL, Fixture, ago, controller_ref, new_job, new_pod, ts

from kcontrol.client import Object
from kcontrol.informers import DeletedFinalStateUnknown

KEY = "default/foobar"


def finalizers(pod: Object) -> list[str]:
    return list(pod["metadata"].get("finalizers") or [])


# -- TestGetPodsForJob -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("deleting", "deleting_in_cache", "pods", "want", "want_finalizer"),
    [
        pytest.param(
            False,
            False,
            [
                ("pod1", "job", True),
                ("pod2", "other", False),
                ("pod3", None, False),
                ("pod4", "job", False),
            ],
            ["pod1", "pod4"],
            ["pod1"],
            id="only matching",
        ),
        pytest.param(
            False,
            False,
            [("pod1", "job", False), ("pod2", "orphan", False), ("pod3", "other", False)],
            ["pod1", "pod2"],
            ["pod2"],
            id="adopt",
        ),
        pytest.param(
            True,
            True,
            [("pod1", "job", False), ("pod2", "orphan", False)],
            ["pod1"],
            [],
            id="no adopt when deleting",
        ),
        pytest.param(
            True,
            False,
            [("pod1", "job", False), ("pod2", "orphan", False)],
            ["pod1"],
            [],
            id="no adopt when deleting race",
        ),
        pytest.param(
            False,
            False,
            [("pod1", "job", False), ("pod2", "unlabelled", False)],
            ["pod1"],
            [],
            id="release",
        ),
    ],
)
async def test_get_pods_for_job(
    deleting: bool,
    deleting_in_cache: bool,
    pods: list[tuple[str, str | None, bool]],
    want: list[str],
    want_finalizer: list[str],
) -> None:
    f = Fixture()
    job = new_job(name="test_job")
    other = new_job(name="other_job", uid="other-uid")
    server_job = copy.deepcopy(job)
    if deleting:
        server_job["metadata"]["deletionTimestamp"] = ts(WALL)
        server_job["metadata"]["finalizers"] = ["test/keep"]
    stored = f.client.tracker.add(server_job)
    cached = copy.deepcopy(stored)
    if not deleting_in_cache:
        cached["metadata"].pop("deletionTimestamp", None)
    f.job_informer.indexer.add(cached)
    f.add_job(other)
    for name, owner, finalizer in pods:
        if owner == "job":
            pod = new_pod(name, job, finalizer=finalizer)
        elif owner == "other":
            pod = new_pod(name, other, finalizer=finalizer)
        elif owner == "orphan":
            pod = new_pod(name, job, finalizer=finalizer, owned=False)
        elif owner == "unlabelled":
            pod = new_pod(name, job, finalizer=finalizer, labels={})
        else:
            pod = new_pod(name, job, finalizer=finalizer, owned=False, labels={})
        f.add_pod(pod)
    got = await f.jc._syncer._pods_for_job("default/test_job", copy.deepcopy(stored))
    assert sorted(p["metadata"]["name"] for p in got) == want
    assert sorted(p["metadata"]["name"] for p in got if TRACKING in finalizers(p)) == (
        want_finalizer
    )
    server = {p["metadata"]["name"]: p for p in f.server_pods()}
    if "pod2" in want and "pod2" in want_finalizer:  # adopted, finalizer added in the same patch
        assert finalizers(server["pod2"]) == [TRACKING]
        assert server["pod2"]["metadata"]["ownerReferences"] == [controller_ref(job)]


async def test_a_released_pod_loses_the_finalizer_with_the_reference() -> None:
    f = Fixture()
    job = f.add_job(new_job())
    f.add_pod(new_pod("gone", job, labels={"other": "x"}))
    await f.jc.sync(KEY)
    (patch,) = [a for a in f.client.actions_for("patch", "pods") if a.name == "gone"]
    assert patch.patch["metadata"]["$deleteFromPrimitiveList/finalizers"] == [TRACKING]
    pod = next(p for p in f.server_pods() if p["metadata"]["name"] == "gone")
    assert "ownerReferences" not in pod["metadata"] or pod["metadata"]["ownerReferences"] == []
    assert finalizers(pod) == []


# -- pod events -----------------------------------------------------------------------------------


async def test_add_pod_observes_the_creation_and_batches_the_sync() -> None:
    f = Fixture()
    job = f.add_job(new_job())
    f.jc.expectations.expect_creations(KEY, 1)
    f.jc.add_pod(new_pod("p", job))
    assert f.jc.expectations.satisfied_expectations(KEY)
    assert await f.drain() == []
    assert f.waiting() == 1
    f.clock.step(1.0)
    assert await f.drain() == [KEY]


async def test_add_pod_orphan() -> None:
    f = Fixture()
    job1 = f.add_job(new_job(name="foobar"))
    f.add_job(new_job(name="other", uid="u2", selector={"matchLabels": {"x": "y"}}))
    f.jc.expectations.expect_creations(KEY, 1)
    f.jc.add_pod(new_pod("p", job1, owned=False))
    assert not f.jc.expectations.satisfied_expectations(KEY), "no creation observed for orphans"
    assert await f.drain(orphans=True) == ["pod:default/p"]
    f.clock.step(1.0)
    assert await f.drain() == [KEY]


async def test_add_pod_being_deleted_is_a_deletion() -> None:
    f = Fixture()
    job = f.add_job(new_job())
    f.jc.expectations.expect_deletions(KEY, 1)
    f.jc.add_pod(new_pod("p", job, deleted_at=ago(0)))
    assert f.jc.expectations.satisfied_expectations(KEY)


async def test_update_pod() -> None:
    f = Fixture()
    job = f.add_job(new_job())
    old = new_pod("p", job, resourceVersion="1")
    cur = new_pod("p", job, resourceVersion="2", finalizer=False)
    f.jc.finalizer_expectations.expect_finalizers_removed(KEY, ["p"])
    f.jc.update_pod(old, cur)
    assert f.jc.finalizer_expectations.expected_uids(KEY) == frozenset()
    f.clock.step(1.0)
    assert await f.drain() == [KEY]


async def test_update_pod_resync_is_ignored() -> None:
    f = Fixture()
    job = f.add_job(new_job())
    pod = new_pod("p", job, resourceVersion="1")
    f.jc.update_pod(pod, copy.deepcopy(pod))
    assert f.waiting() == 0


async def test_update_pod_orphan_with_new_labels() -> None:
    f = Fixture()
    f.add_job(new_job())
    f.add_job(new_job(name="bar", uid="u2", selector={"matchLabels": {"a": "b"}}))
    old = new_pod("p", owned=False, finalizer=False, labels={"a": "b"}, resourceVersion="1")
    cur = new_pod("p", owned=False, finalizer=False, resourceVersion="2")
    f.jc.update_pod(old, cur)
    f.clock.step(1.0)
    assert await f.drain() == [KEY]


async def test_update_pod_change_controller_ref() -> None:
    f = Fixture()
    job1 = f.add_job(new_job())
    job2 = f.add_job(new_job(name="bar", uid="u2"))
    old = new_pod("p", job1, resourceVersion="1", finalizer=False)
    cur = new_pod("p", job2, resourceVersion="2", finalizer=False)
    f.jc.finalizer_expectations.expect_finalizers_removed(KEY, ["p"])
    f.jc.update_pod(old, cur)
    assert f.jc.finalizer_expectations.expected_uids(KEY) == frozenset()
    f.clock.step(1.0)
    assert sorted(await f.drain()) == ["default/bar", KEY]


async def test_update_pod_release() -> None:
    f = Fixture()
    job = f.add_job(new_job())
    old = new_pod("p", job, resourceVersion="1")
    cur = new_pod("p", job, resourceVersion="2", owned=False)
    f.jc.update_pod(old, cur)
    assert await f.drain(orphans=True) == ["pod:default/p"]
    f.clock.step(1.0)
    assert await f.drain() == [KEY]


async def test_update_pod_starting_to_terminate_is_a_deletion() -> None:
    f = Fixture()
    job = f.add_job(new_job())
    f.jc.expectations.expect_deletions(KEY, 1)
    f.jc.finalizer_expectations.expect_finalizers_removed(KEY, ["p"])
    old = new_pod("p", job, resourceVersion="1")
    cur = new_pod("p", job, resourceVersion="2", deleted_at=ago(0))
    f.jc.update_pod(old, cur)
    assert f.jc.expectations.satisfied_expectations(KEY)
    assert f.jc.finalizer_expectations.expected_uids(KEY) == {"p"}, "the finalizer is still there"


@pytest.mark.parametrize("tombstone", [False, True], ids=["pod", "tombstone"])
async def test_delete_pod(tombstone: bool) -> None:
    f = Fixture()
    job = f.add_job(new_job())
    f.jc.expectations.expect_deletions(KEY, 1)
    f.jc.finalizer_expectations.expect_finalizers_removed(KEY, ["p"])
    pod = new_pod("p", job)
    f.jc.delete_pod(DeletedFinalStateUnknown(KEY, pod) if tombstone else pod, final=True)
    assert f.jc.expectations.satisfied_expectations(KEY)
    assert f.jc.finalizer_expectations.expected_uids(KEY) == frozenset()
    f.clock.step(1.0)
    assert await f.drain() == [KEY]


@pytest.mark.parametrize(
    ("owner", "want_orphan"),
    [
        pytest.param("none", True, id="orphan with finalizer"),
        pytest.param("gone", True, id="owner not found"),
        pytest.param("finished", True, id="owner finished"),
    ],
)
async def test_delete_pod_orphan(owner: str, want_orphan: bool) -> None:
    f = Fixture()
    job = new_job()
    if owner == "finished":
        job["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    if owner != "gone":
        f.add_job(job)
    pod = new_pod("p", job, owned=owner != "none")
    f.jc.delete_pod(pod, final=True)
    assert (await f.drain(orphans=True) == ["pod:default/p"]) is want_orphan
    f.clock.step(1.0)
    assert await f.drain() == []


# -- Job events -----------------------------------------------------------------------------------


async def test_add_job_queues_at_once_and_counts_external_managers() -> None:
    f = Fixture()
    f.jc.add_job(new_job(managedBy="example.com/mine"))
    assert await f.drain() == [KEY]
    value = f.registry.get_sample_value(
        "job_controller_jobs_by_external_controller_total", {"controller_name": "example.com/mine"}
    )
    assert value == 1.0


@pytest.mark.parametrize(
    ("old_spec", "new_spec", "started", "now", "later"),
    [
        pytest.param({}, {}, None, [], 1.0, id="same generation: batched"),
        pytest.param({"generation": 1}, {"generation": 2}, None, [KEY], None, id="spec change"),
        pytest.param(
            {"activeDeadlineSeconds": 10},
            {"activeDeadlineSeconds": 20},
            ago(5),
            [],
            1.0,
            id="new deadline: batched sync first",
        ),
    ],
)
async def test_update_job_requeue(
    old_spec: dict[str, Any],
    new_spec: dict[str, Any],
    started: str | None,
    now: list[str],
    later: float | None,
) -> None:
    f = Fixture()
    old = new_job()
    cur = new_job()
    for job, changes in ((old, old_spec), (cur, new_spec)):
        if "generation" in changes:
            job["metadata"]["generation"] = changes["generation"]
        if "activeDeadlineSeconds" in changes:
            job["spec"]["activeDeadlineSeconds"] = changes["activeDeadlineSeconds"]
        if started:
            job["status"] = {"startTime": started}
    f.jc.update_job(old, cur)
    assert await f.drain() == now
    if later is not None:
        f.clock.step(later)
        assert await f.drain() == [KEY]


async def test_a_new_deadline_schedules_a_sync_for_it() -> None:
    f = Fixture()
    old, cur = new_job(activeDeadlineSeconds=10), new_job(activeDeadlineSeconds=20)
    cur["metadata"]["generation"] = 2
    old["status"] = cur["status"] = {"startTime": ago(5)}
    f.jc.update_job(old, cur)
    assert await f.drain() == [KEY]
    f.clock.step(14.9)
    assert await f.drain() == []
    f.clock.step(0.1)
    assert await f.drain() == [KEY]


async def test_a_finished_job_update_checks_its_pods_for_finalizers() -> None:
    f = Fixture()
    old = new_job()
    cur = new_job()
    cur["status"] = {"conditions": [{"type": "Failed", "status": "True"}]}
    f.jc.update_job(old, cur)
    assert await f.drain() == []
    assert await f.drain(orphans=True) == ["selector:default/foo=bar"]


async def test_delete_job_forgets_it_and_checks_its_pods() -> None:
    f = Fixture()
    job = new_job()
    f.jc.backoff_store.update(f.jc.backoff_store.new_record(KEY, [], []))
    f.jc.finished_jobs.add("job-uid")
    f.jc.delete_job(DeletedFinalStateUnknown(KEY, job))
    assert await f.drain() == [KEY]
    assert await f.drain(orphans=True) == ["selector:default/foo=bar"]
    assert f.jc.backoff_store.get(KEY) is None
    assert f.jc.finished_jobs == set()


# -- TestSyncOrphanPod ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("owner", "want_removed"),
    [
        pytest.param("running", False, id="controlled_by_existing_running_job"),
        pytest.param("finished", True, id="controlled_by_existing_finished_job"),
        pytest.param("missing", True, id="controlled_by_non_existing_job"),
        pytest.param("cronjob", False, id="controlled_by_cronjob"),
        pytest.param("none", True, id="not_controlled"),
        pytest.param("crd", False, id="controlled_by_custom_crd"),
        pytest.param("owner-not-controller", True, id="owned_by_existing_running_job"),
        pytest.param("external", False, id="controlled_by_job_managed_by_another_controller"),
    ],
)
async def test_sync_orphan_pod(owner: str, want_removed: bool) -> None:
    f = Fixture()
    job = new_job()
    if owner == "finished":
        job["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    if owner == "external":
        job["spec"]["managedBy"] = "example.com/other"
    if owner in ("running", "finished", "owner-not-controller", "external"):
        f.add_job(job)
    pod = new_pod("p", job, owned=owner != "none")
    ref = pod["metadata"].get("ownerReferences", [{}])[0]
    if owner == "cronjob":
        ref.update(kind="CronJob")
    elif owner == "crd":
        ref.update(apiVersion="example.com/v1", kind="Job")
    elif owner == "owner-not-controller":
        ref.pop("controller")
    f.add_pod(pod)
    await f.jc.sync_orphan_pod("pod:default/p")
    (server,) = f.server_pods()
    assert (finalizers(server) == []) is want_removed


async def test_sync_orphan_pods_by_label_selector() -> None:
    f = Fixture()
    f.add_pod(new_pod("a", owned=False, labels={"app": "test"}))
    f.add_pod(new_pod("b", owned=False, labels={"app": "other"}))
    await f.jc.sync_orphan_pod("selector:default/app=test")
    server = {p["metadata"]["name"]: finalizers(p) for p in f.server_pods()}
    assert server == {"a": [], "b": [TRACKING]}


async def test_sync_orphan_pod_already_gone() -> None:
    f = Fixture()
    assert await f.jc.sync_orphan_pod("pod:default/nope") is None
    assert f.client.actions == []


# -- TestFinalizersRemovedExpectations ------------------------------------------------------------


async def test_finalizers_removed_expectations() -> None:
    """Pods whose finalizer removal is still expected are not counted again, even though the
    cache still shows the finalizer; once the updates arrive they are counted once."""
    f = Fixture()
    job = f.add_job(new_job(2, 2, 6))
    f.add_pods([new_pod("a", job, "Succeeded"), new_pod("b", job, "Failed")])
    await f.jc.sync(KEY)
    status = f.server_job()["status"]
    assert (status["succeeded"], status["failed"]) == (1, 1)
    assert f.jc.finalizer_expectations.expected_uids(KEY) == {"a", "b"}
    # The cache still shows the finalizers and the old status: nothing is counted twice.
    f.client.clear_actions()
    f.refresh_job_cache()
    f.jc.expectations.set_expectations(KEY, 0, 0)
    await f.jc.sync(KEY)
    assert f.client.actions_for("patch", "pods") == []
    status = f.server_job()["status"]
    assert (status["succeeded"], status["failed"]) == (1, 1)
    # The updates arrive.
    cached = {p["metadata"]["name"]: p for p in f.pod_informer.indexer.list()}
    for pod in f.server_pods():
        old = cached.get(pod["metadata"]["name"])
        if old is not None:
            f.pod_informer.indexer.update(pod)
            f.jc.update_pod(old, pod)
    assert f.jc.finalizer_expectations.expected_uids(KEY) == frozenset()
